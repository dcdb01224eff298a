"""Reused relations read the right rows: DataFrames, temp views, spark.table, catalog SQL.

Spark 4.3 keeps one plan per relation and re-plans in Python only for queries that push a
filter (see ``hudisql.read.datasource``); each test runs a filtered query first, then a
filter-less one on the same relation, and checks that no row is lost.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.datasource import EqualTo, GreaterThan

from hudisql.read.datasource import HudiReader, SliceInput
from hudisql.read.options import ReadOptions
from hudisql.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.fixtures import copy_table, table_path

pytestmark = pytest.mark.spark

TRIPS = "v6_trips_8i1u"  # 8 rows: chennai 2, san_francisco 4, sao_paulo 2


def _reader(prune: bool) -> HudiReader:
    path = str(table_path(TRIPS))
    return HudiReader(ReadOptions(path=path, prune=prune), schema=None)  # type: ignore[arg-type]


def _cities(parts: list[SliceInput]) -> list[str]:
    return sorted(p.file_slice.partition_path for p in parts if p.file_slice is not None)


def test_a_second_push_replaces_the_first_ones_filters() -> None:
    reader = _reader(prune=True)
    assert list(reader.pushFilters([EqualTo(("city",), "chennai")])) == []
    assert _cities(list(reader.partitions())) == ["city=chennai"]  # type: ignore[arg-type]
    back = list(reader.pushFilters([GreaterThan(("fare",), 1.0)]))
    assert back == [GreaterThan(("fare",), 1.0)]
    assert _cities(list(reader.partitions())) == [  # type: ignore[arg-type]
        "city=chennai", "city=san_francisco", "city=sao_paulo"]


def test_without_the_option_every_filter_goes_back_and_nothing_is_pruned() -> None:
    reader = _reader(prune=False)
    pushed = [EqualTo(("city",), "chennai")]
    assert list(reader.pushFilters(pushed)) == pushed
    assert len(_cities(list(reader.partitions()))) == 3  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def trips(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A private copy of the trips table (the commit test adds a row to it last)."""
    return str(copy_table(TRIPS, tmp_path_factory.mktemp("reuse")))


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


def test_opt_in_pruning_leaks_into_a_reused_dataframe(spark: SparkSession, trips: str) -> None:
    # Why pruning is off by default: Spark runs the pruned plan again for the next
    # filter-less query on the same DataFrame. If Spark stops doing that, this fails and
    # pruning can become the default again.
    df = spark.read.format("hudi").option("hudisql.read.partition.pruning", "true").load(trips)
    assert df.where("city = 'chennai'").count() == 2
    assert df.count() == 2


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
