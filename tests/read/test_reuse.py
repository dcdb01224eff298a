"""Reused relations read the right rows: DataFrames, temp views, spark.table, catalog SQL.

Spark 4.3 keeps one plan per relation and re-plans in Python only for queries that push a
filter (see ``hudisql.read.datasource``); each test runs a filtered query first, then a
filter-less one on the same relation (or both in one query: self-join, union), and checks
that no row is lost. Data skipping is on (the default) throughout.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.datasource import EqualTo, GreaterThan

from hudisql.read.datasource import MAX_PARTITION_BYTES, HudiReader, pack_slices
from hudisql.read.options import ReadOptions
from hudisql.session import HudiSession
from hudisql.table import HudiTable
from hudisql.table.format.fsview import BaseFile, FileSlice
from hudisql.txn.writer import WriteClient
from tests.fixtures import copy_table, table_path

pytestmark = pytest.mark.spark

TRIPS = "v6_trips_8i1u"  # 8 rows: chennai 2, san_francisco 4, sao_paulo 2


def test_pushed_filters_never_prune() -> None:
    reader = HudiReader(ReadOptions(path=str(table_path(TRIPS))), schema=None)  # type: ignore[arg-type]
    pushed = [EqualTo(("city",), "chennai"), GreaterThan(("fare",), 1.0)]
    assert list(reader.pushFilters(pushed)) == pushed
    parts = list(reader.partitions())
    assert sorted(s.partition_path for p in parts  # type: ignore[attr-defined]
                  for s in p.file_slices) == [  # type: ignore[attr-defined]
        "city=chennai", "city=san_francisco", "city=sao_paulo"]


def test_small_slices_share_input_partitions() -> None:
    def piece(i: int, size: int) -> FileSlice:
        return FileSlice("p", f"f{i}", "1", BaseFile(f"p/f{i}.parquet", f"f{i}", "1", "0-0-0",
                                                     size))

    small = [piece(i, 265_000) for i in range(100)]
    big = piece(100, 2 * MAX_PARTITION_BYTES)
    groups = pack_slices([*small, big], parallelism=2)
    assert sorted(s.file_id for g in groups for s in g) == sorted(
        s.file_id for s in [*small, big])  # every slice read once
    assert [big] in groups and 2 <= len(groups) <= 6
    assert pack_slices([]) == [] and pack_slices(small[:1]) == [small[:1]]


@pytest.fixture(scope="module")
def trips(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A private copy of the trips table (the commit test adds a row to it last)."""
    return str(copy_table(TRIPS, tmp_path_factory.mktemp("reuse")))


_NAMES: dict[str, str] = {}


def trips_name(session: HudiSession, path: str) -> str:
    """The copy registered in the hudisql session's catalog (once)."""
    if path not in _NAMES:
        session.sql(f"CREATE TABLE reuse_hudi_trips USING hudi LOCATION '{path}'")
        _NAMES[path] = "reuse_hudi_trips"
    return _NAMES[path]


@pytest.fixture(scope="module")
def catalog_trips(spark: SparkSession, trips: str) -> Iterator[str]:
    """The copy registered in Spark's session catalog as ``reuse_trips``."""
    spark.sql(f"CREATE TABLE reuse_trips USING hudi LOCATION '{trips}'")
    yield "reuse_trips"
    spark.sql("DROP TABLE reuse_trips")


def test_a_dataframe_reused_after_a_filtered_query(spark: SparkSession, trips: str) -> None:
    df = spark.read.format("hudi").load(trips)
    assert df.where("city <> 'chennai'").count() == 6
    assert df.count() == 8
    assert df.where("city = 'chennai'").count() == 2
    assert df.cache().count() == 8  # a cached relation is built from the full plan
    assert df.where("city = 'sao_paulo'").count() == 2
    df.unpersist()


def test_a_temp_view_queried_with_and_without_where(spark: SparkSession, trips: str) -> None:
    spark.read.format("hudi").load(trips).createOrReplaceTempView("reuse_view")
    try:
        assert spark.sql("SELECT * FROM reuse_view WHERE city = 'chennai'").count() == 2
        assert spark.sql("SELECT * FROM reuse_view").count() == 8
    finally:
        spark.catalog.dropTempView("reuse_view")


def test_a_catalog_table_by_sql_and_by_spark_table(spark: SparkSession,
                                                   catalog_trips: str) -> None:
    assert spark.sql(f"SELECT * FROM {catalog_trips} WHERE city = 'chennai'").count() == 2
    assert spark.sql(f"SELECT * FROM {catalog_trips}").count() == 8
    table = spark.table(catalog_trips)
    assert table.where("city = 'chennai'").count() == 2
    assert table.count() == 8


def test_a_relation_pruned_up_front_reads_the_same_slices_for_every_query(
        spark: SparkSession, trips: str, hudi_session: HudiSession) -> None:
    # The predicate is the relation's, not a query's: reuse cannot widen or narrow it.
    df = spark.read.format("hudi").option("hudisql.read.where", "city = 'chennai'").load(trips)
    assert df.where("city = 'chennai'").count() == 2
    assert df.count() == 2
    assert df.where("fare > 0").union(df).count() == 4
    # t.read(where=...) also filters the rows: every query on it sees the same rows.
    table = hudi_session.table(trips_name(hudi_session, trips))
    for where in ("city = 'chennai'", "fare > 30", "rider IN ('rider-A', 'rider-J')"):
        read = table.read(where=where)
        expected = sorted(r.uuid for r in spark.read.format("hudi").load(trips)
                          .where(where).collect())
        assert sorted(r.uuid for r in read.where("ts > 0").collect()) == expected
        assert sorted(r.uuid for r in read.collect()) == expected
        assert read.count() == len(expected)


def test_self_join_and_union_of_one_relation(spark: SparkSession, trips: str,
                                             hudi_session: HudiSession) -> None:
    for df in (spark.read.format("hudi").load(trips),
               hudi_session.table(trips_name(hudi_session, trips)).read()):
        chennai, rest = df.where("city = 'chennai'"), df.where("city <> 'chennai'")
        assert chennai.union(rest).count() == 8
        assert chennai.union(df).count() == 10
        joined = df.alias("a").join(df.alias("b"), "uuid").where("a.city = 'chennai'")
        assert joined.count() == 2
    name = trips_name(hudi_session, trips)
    assert hudi_session.sql(f"SELECT * FROM {name} WHERE city = 'chennai' UNION ALL "
                            f"SELECT * FROM {name} WHERE city <> 'chennai'").count() == 8
    assert hudi_session.sql(f"SELECT * FROM {name} WHERE city = 'chennai' UNION ALL "
                            f"SELECT * FROM {name}").count() == 10
    assert hudi_session.sql(f"SELECT a.uuid FROM {name} a JOIN {name} b ON a.uuid = b.uuid "
                            "WHERE a.city = 'chennai' AND b.fare > 0").count() == 2
    assert hudi_session.sql(f"SELECT a.uuid FROM {name} a LEFT JOIN {name} b "
                            "ON a.uuid = b.uuid AND b.city = 'chennai' "
                            "WHERE b.uuid IS NULL").count() == 6
    assert not [t.name for t in spark.catalog.listTables() if t.isTemporary]  # none left


def test_snapshots_after_a_new_commit(spark: SparkSession, trips: str,
                                      catalog_trips: str) -> None:
    loaded = spark.read.format("hudi").load(trips)
    table = spark.table(catalog_trips)
    assert loaded.count() == 8 and table.count() == 8
    WriteClient(HudiTable.open(trips)).insert([{"ts": 1, "uuid": "new-1", "rider": "rider-N",
                                               "driver": "driver-N", "fare": 1.0,
                                               "city": "chennai"}])
    # A load(path) DataFrame stays on the snapshot of its load(), planned again or not.
    assert loaded.count() == 8
    assert loaded.where("city = 'chennai'").count() == 2
    assert loaded.count() == 8
    # New relations see the commit.
    assert spark.read.format("hudi").load(trips).count() == 9
    assert spark.sql(f"SELECT * FROM {catalog_trips}").count() == 9
    # A reused spark.table() DataFrame moves to the latest snapshot when a query re-plans it,
    # and one plan never mixes snapshots: its rows are exactly one snapshot's.
    riders = {r.rider for r in table.where("city = 'chennai'").collect()}
    assert riders == {"rider-I", "rider-J", "rider-N"}
    assert table.count() == 9


def test_a_query_error_is_spark_error_on_the_statement_as_written(
        trips: str, hudi_session: HudiSession) -> None:
    name = trips_name(hudi_session, trips)
    with pytest.raises(AnalysisException) as caught:
        hudi_session.sql(f"SELECT * FROM {name} WHERE ridr = 'rider-A'")
    message = str(caught.value)
    assert "ridr" in message and "hudi_frame_" not in message and "_pyspark_" not in message
    assert caught.value.getQueryContext()[0].fragment() == "ridr"


def test_statements_bind_dataframes_not_views(spark: SparkSession, trips: str,
                                              hudi_session: HudiSession) -> None:
    name = trips_name(hudi_session, trips)
    before = {t.name for t in spark.catalog.listTables() if t.isTemporary}
    # The statement's own braces survive PySpark's formatting of DataFrame parameters.
    got = hudi_session.sql(f"SELECT '{{x}}' AS s, uuid FROM {name} WHERE city = 'chennai' "
                           "AND rider <> '}'").collect()
    chennai = spark.read.format("hudi").load(trips).where("city = 'chennai'").count()
    assert len(got) == chennai and {r.s for r in got} == {"{x}"}
    first = HudiTable.open(trips).timeline.completed()[0].timestamp
    old = hudi_session.sql(f"SELECT * FROM {name} TIMESTAMP AS OF '{first}' a JOIN {name} b "
                           "ON a.uuid = b.uuid WHERE b.city = 'chennai'")
    assert old.count() == 2
    assert hudi_session.sql(f"SELECT * FROM hudi_table_changes('{name}', 'latest_state', "
                            "'earliest')").count() >= 8
    # No view is left behind (time travel's were kept for the session before).
    assert {t.name for t in spark.catalog.listTables() if t.isTemporary} == before


def test_a_temp_view_shadows_the_catalog_table(spark: SparkSession, trips: str,
                                               hudi_session: HudiSession) -> None:
    name = trips_name(hudi_session, trips)
    chennai = spark.read.format("hudi").load(trips).where("city = 'chennai'").count()
    spark.range(3).createOrReplaceTempView(name)
    try:
        assert hudi_session.sql(f"SELECT * FROM {name}").columns == ["id"]
        assert hudi_session.sql(f"SELECT * FROM default.{name} WHERE city = 'chennai'"
                                ).count() == chennai
    finally:
        spark.catalog.dropTempView(name)
    assert hudi_session.sql(f"SELECT * FROM {name} WHERE city = 'chennai'").count() == chennai
