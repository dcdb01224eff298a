"""The ``hudi`` data source on every real fixture table; hudisql and hudi-rs as oracles."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, DataFrameReader

import hudisql
from hudisql.session import HudiSession
from hudisql.table import HudiTable
from tests.fixtures import table_path

pytestmark = pytest.mark.spark

TRIPS = "v6_trips_8i1u"
#: The load option that reads through the data source alone.
ONLY_SOURCE = "hudisql.read.direct.parquet"
TRIPS_FIRST_COMMIT = "20250331030642808"


def _normalize(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows of ``table`` as comparable tuples (columns by name, sorted by record key)."""
    names = sorted(table.column_names)
    out = [tuple(_normalize(r[n]) for n in names) for r in table.select(names).to_pylist()]
    return sorted(out, key=lambda r: str(r[names.index("_hoodie_record_key")]))


def spark_rows(df: DataFrame) -> list[tuple[Any, ...]]:
    return rows(df.toArrow())


def test_every_fixture_reads_as_hudisql_and_hudi_rs_read_it(
    hudi_session: HudiSession, fixture_table: Path
) -> None:
    df = hudi_session.spark.read.format("hudi").load(str(fixture_table))
    got = spark_rows(df)
    assert got == rows(hudisql.read_table(str(fixture_table)))
    oracle = pa.Table.from_batches(hudi.HudiTable(str(fixture_table)).read())
    user_columns = [c for c in oracle.column_names if not c.startswith("_hoodie_")]
    key_and_data = ["_hoodie_record_key", *user_columns]
    assert rows(df.toArrow().select(key_and_data)) == rows(oracle.select(key_and_data))


def test_one_input_partition_per_file_slice(hudi_session: HudiSession,
                                            fixture_table: Path) -> None:
    # The data source itself (a plain load is planned as t.read(): hudisql.read.frame).
    df = hudi_session.spark.read.format("hudi").option(ONLY_SOURCE, "false").load(
        str(fixture_table))
    assert df.rdd.getNumPartitions() == len(HudiTable.open(str(fixture_table)).file_slices())


def test_a_snapshot_load_is_read_by_spark_parquet_with_the_data_sources_rows(
        hudi_session: HudiSession) -> None:
    path = str(table_path(TRIPS))
    spark = hudi_session.spark
    routed = spark.read.format("hudi").load(path)
    alone = spark.read.format("hudi").option(ONLY_SOURCE, "false").load(path)
    assert "FileScan parquet" in _plan(routed)
    assert "FileScan parquet" not in _plan(alone)
    assert routed.schema == alone.schema
    assert spark_rows(routed) == spark_rows(alone)
    # Time travel (read-optimized loads: test_query_types.py, against the table core).
    before = spark.read.format("hudi").option("as.of.instant", TRIPS_FIRST_COMMIT)
    assert spark_rows(before.load(path)) == spark_rows(
        before.option(ONLY_SOURCE, "false").load(path))


def test_schema_is_the_tables_with_the_path_in_metadata(hudi_session: HudiSession) -> None:
    path = str(table_path(TRIPS))
    schema = hudi_session.spark.read.format("hudi").load(path).schema
    assert schema.fieldNames() == HudiTable.open(path).schema.names
    assert schema.fields[0].metadata["hudi.path"] == path


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def _where(session: HudiSession, predicate: str) -> DataFrameReader:
    # Pruning only from a predicate fixed for the relation (see test_reuse.py).
    return session.spark.read.format("hudi").option("hudisql.read.where", predicate)


def test_the_where_option_prunes_partitions_and_spark_applies_the_filter(
        hudi_session: HudiSession) -> None:
    path = str(table_path(TRIPS))
    df = _where(hudi_session, "city = 'chennai'").load(path)
    assert df.rdd.getNumPartitions() == 1
    chennai = df.where("city = 'chennai'")
    assert sorted(r.rider for r in chennai.collect()) == ["rider-I", "rider-J"]
    assert "Filter (" in _plan(chennai)
    both = _where(hudi_session, "city IN ('chennai', 'sao_paulo') AND city LIKE 's%'").load(path)
    assert both.rdd.getNumPartitions() == 1
    assert sorted(r.rider for r in both.where("city LIKE 's%'").collect()) == [
        "rider-F", "rider-G"]


def test_predicates_that_decide_no_partition_prune_nothing(hudi_session: HudiSession) -> None:
    path = str(table_path(TRIPS))
    for predicate in ("fare < 20 AND city <> 'chennai'", "fare < 20 OR city = 'x'"):
        df = _where(hudi_session, predicate).option(
            "hoodie.enable.data.skipping", "false").load(path)
        assert df.rdd.getNumPartitions() == 3
        assert df.count() == 8  # the kept slices' rows come back whole
    cheap = _where(hudi_session, "fare < 20").load(path).where("fare < 20 OR city = 'x'")
    assert sorted(r.rider for r in cheap.collect()) == ["rider-A", "rider-J"]


def test_the_old_pruning_option_is_refused_with_what_to_use(hudi_session: HudiSession) -> None:
    reader = hudi_session.spark.read.format("hudi").option(
        "hudisql.read.partition.pruning", "true")
    with pytest.raises(AnalysisException, match=r"hudisql\.read\.where"):
        reader.load(str(table_path(TRIPS))).collect()


def test_pruning_is_off_by_default_and_spark_applies_the_filter(
        hudi_session: HudiSession) -> None:
    df = hudi_session.spark.read.format("hudi").load(str(table_path(TRIPS)))
    not_chennai = df.where("city <> 'chennai'")
    assert not_chennai.rdd.getNumPartitions() == 3
    assert "Filter (" in _plan(not_chennai)
    assert not_chennai.count() == 6
    assert df.count() == 8  # the same DataFrame, no filter: nothing was pruned away


def test_integer_partition_column_of_a_non_hive_style_table(hudi_session: HudiSession) -> None:
    path = str(table_path("v6_simplekeygen_nonhivestyle"))
    expected = hudisql.read_table(path).to_pylist()
    values = sorted({r["byteField"] for r in expected})
    predicate = f"byteField = {values[0]}"
    wanted = sorted(r["id"] for r in expected if r["byteField"] == values[0])
    source = _where(hudi_session, predicate).option(ONLY_SOURCE, "false").load(path)
    assert source.where(predicate).rdd.getNumPartitions() == 1
    assert sorted(r.id for r in source.where(predicate).collect()) == wanted
    picked = _where(hudi_session, predicate).load(path).where(predicate)
    assert sorted(r.id for r in picked.collect()) == wanted


def test_as_of_instant_reads_the_table_before_the_update(hudi_session: HudiSession) -> None:
    path = str(table_path(TRIPS))
    spark = hudi_session.spark
    before = spark.read.format("hudi").option("as.of.instant", TRIPS_FIRST_COMMIT).load(path)
    fares = {r.rider: r.fare for r in before.collect()}
    assert fares["rider-D"] == pytest.approx(33.9)
    assert spark_rows(before) == rows(hudisql.read_table(path, as_of=TRIPS_FIRST_COMMIT))
    after = {r.rider: r.fare for r in spark.read.format("hudi").load(path).collect()}
    assert after["rider-D"] == pytest.approx(25.0)
    dashed = spark.read.format("hudi").option("as.of.instant", "2025-03-31 03:06:42.808")
    assert {r.rider: r.fare for r in dashed.load(path).collect()} == fares
    empty = spark.read.format("hudi").option("as.of.instant", "20000101000000")
    assert empty.load(path).count() == 0


def test_catalog_table_using_hudi(hudi_session: HudiSession) -> None:
    spark = hudi_session.spark
    path = str(table_path(TRIPS))
    spark.sql(f"CREATE TABLE trips_catalog USING hudi LOCATION '{path}'")
    try:
        got = spark.sql("SELECT rider, fare FROM trips_catalog WHERE city = 'san_francisco'")
        assert sorted((r.rider, r.fare) for r in got.collect()) == [
            ("rider-A", 19.1), ("rider-C", 27.7), ("rider-D", 25.0), ("rider-E", 93.5)]
        old = spark.sql(
            f"SELECT fare FROM trips_catalog WITH ('as.of.instant' = '{TRIPS_FIRST_COMMIT}') "
            "WHERE rider = 'rider-D'")
        assert [r.fare for r in old.collect()] == [pytest.approx(33.9)]
    finally:
        spark.sql("DROP TABLE trips_catalog")


def _error(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    return str(excinfo.value)


def test_not_a_table_names_the_path(hudi_session: HudiSession, tmp_path: Path) -> None:
    with pytest.raises(AnalysisException) as excinfo:
        hudi_session.spark.read.format("hudi").load(str(tmp_path)).collect()
    assert f"{tmp_path} is not a Hudi table" in _error(excinfo)
    assert "TableNotFoundError" in _error(excinfo)


def test_no_path_says_how_to_give_one(hudi_session: HudiSession) -> None:
    with pytest.raises(AnalysisException, match="was given no table path"):
        hudi_session.spark.read.format("hudi").load().collect()


def test_bad_as_of_instant_says_what_is_accepted(hudi_session: HudiSession) -> None:
    reader = hudi_session.spark.read.format("hudi").option("as.of.instant", "yesterday")
    with pytest.raises(AnalysisException, match=r"as.of.instant='yesterday' is not an instant"):
        reader.load(str(table_path(TRIPS))).collect()

