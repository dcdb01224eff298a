"""Tiny reads on the driver (``hudisql.read.local``): exact row tests, row groups ruled out
by statistics only when no row can match, and the same rows as Spark's parquet reader and
the data source on every fixture table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame

import hudisql
from hudisql.errors import ReadOptionError
from hudisql.parser.predicates import parse_predicates
from hudisql.read.local import (
    LOCAL_MAX_BYTES,
    MAX_FILES,
    RowTest,
    max_bytes,
    row_groups,
    row_tests,
)
from hudisql.read.options import DIRECT_PARQUET
from hudisql.session import HudiSession
from tests.read.test_datasource import rows

SCHEMA = pa.schema([("uuid", pa.string()), ("Seq", pa.int32()), ("fare", pa.float64()),
                    ("ts", pa.timestamp("us", tz="UTC"))])


def _tests(where: str) -> list[tuple[str, str, tuple[object, ...]]]:
    return [(t.column, t.op, t.values) for t in row_tests(parse_predicates(where), SCHEMA)]


@pytest.mark.parametrize(("where", "expected"), [
    ("uuid = 'k1'", [("uuid", "=", ("k1",))]),
    ("UUID IN ('k1', 'k2') AND seq >= 3", [("uuid", "in", ("k1", "k2")), ("Seq", ">=", (3,))]),
    ("seq < 7 AND uuid LIKE 'k1%'", [("Seq", "<", (7,)), ("uuid", "starts_with", ("k1",))]),
    ("3 < seq", [("Seq", ">", (3,))]),
    # No exact test: doubles and timestamps (Spark's NaN order, zones), a string literal
    # against an integer column and a number against a string column, an unknown column,
    # a literal beyond the column's type, null tests, ORs.
    ("fare = 1.5 AND ts > '2024-01-01'", []),
    ("seq = '3' AND uuid = 3 AND nope = 1", []),
    ("seq = 3000000000", []),
    ("uuid IS NULL AND seq IS NOT NULL", []),
    ("uuid = 'k1' OR seq = 2", []),
])
def test_row_tests_are_the_exact_conjuncts(where: str, expected: list[object]) -> None:
    assert _tests(where) == expected


def test_a_row_test_keeps_every_row_the_predicate_may_hold() -> None:
    column = pa.chunked_array([["k1", "k10", "k2", None, "é", "K1"]])
    assert RowTest("c", "=", ("k1",)).mask(column).to_pylist() == [
        True, False, False, None, False, False]
    assert RowTest("c", "starts_with", ("k1",)).mask(column).to_pylist() == [
        True, True, False, None, False, False]
    assert RowTest("c", "<", ("k2",)).mask(column).to_pylist() == [
        True, True, False, None, False, True]  # bytes order, as Spark compares strings
    assert RowTest("c", "in", ("é", "k2")).mask(column).to_pylist() == [
        False, False, True, False, True, False]
    ints = pa.chunked_array([[1, 5, None]], pa.int32())
    assert RowTest("c", ">=", (5,)).mask(ints).to_pylist() == [False, True, None]


@pytest.mark.parametrize(("test", "may"), [
    (RowTest("c", "=", ("k5",)), True), (RowTest("c", "=", ("k9",)), False),
    (RowTest("c", "in", ("a", "k3")), True), (RowTest("c", "in", ("a", "z")), False),
    (RowTest("c", "<", ("k3",)), True), (RowTest("c", "<", ("k3",)), True),
    (RowTest("c", "<", ("k2",)), False), (RowTest("c", "<=", ("k2",)), True),
    (RowTest("c", ">", ("k7",)), False), (RowTest("c", ">=", ("k7",)), True),
    (RowTest("c", "starts_with", ("k",)), True), (RowTest("c", "starts_with", ("k7",)), True),
    (RowTest("c", "starts_with", ("k8",)), False), (RowTest("c", "starts_with", ("a",)), False),
])
def test_statistics_rule_a_row_group_out_only_when_nothing_can_match(
        test: RowTest, may: bool) -> None:
    assert test.may_match("k2", "k7") is may


def test_row_groups_by_statistics(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    table = pa.table({"uuid": [f"k{i:03d}" for i in range(300)],
                      "Seq": pa.array(range(300), pa.int32())})
    pq.write_table(table, path, row_group_size=100)
    parquet = pq.ParquetFile(path)
    assert row_groups(parquet, row_tests(parse_predicates("uuid = 'k150'"), SCHEMA)) == [1]
    assert row_groups(parquet, row_tests(parse_predicates("seq >= 250"), SCHEMA)) == [2]
    assert row_groups(parquet, row_tests(parse_predicates("uuid = 'zz'"), SCHEMA)) == []
    # A column the file lacks (schema evolution) reads as nulls: the rows decide.
    assert row_groups(parquet, [RowTest("gone", "=", ("x",))]) == [0, 1, 2]
    assert row_groups(parquet, []) == [0, 1, 2]


def test_the_budget_option() -> None:
    assert max_bytes({}) > 0
    assert max_bytes({LOCAL_MAX_BYTES.upper(): " 0 "}) == 0
    for bad in ("-1", "4MB"):
        with pytest.raises(ReadOptionError, match=LOCAL_MAX_BYTES):
            max_bytes({LOCAL_MAX_BYTES: bad})


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().optimizedPlan().toString())  # type: ignore[operator]


@pytest.mark.spark
def test_every_fixture_reads_a_key_on_the_driver_exactly(hudi_session: HudiSession,
                                                         fixture_table: Path) -> None:
    handle = hudi_session.table_at(fixture_table)
    snapshot = hudisql.read_table(str(fixture_table))
    keys = sorted(snapshot.column("_hoodie_record_key").to_pylist())
    some = ", ".join(f"'{k}'" for k in keys[:2])
    key = "_hoodie_record_key"
    for where in (f"{key} = '{keys[0]}'", f"{key} IN ({some})", f"{key} >= '{keys[-1]}'",
                  f"{key} LIKE '{keys[0][:1]}%'"):
        local = handle.read(where=where)
        through_spark = handle.read(where=where, **{LOCAL_MAX_BYTES: "0"})
        alone = rows(handle.read(where=where, **{DIRECT_PARQUET: "false"}).toArrow())
        assert rows(local.toArrow()) == rows(through_spark.toArrow()) == alone, where
        # Spark reads the files (its parquet reader, or the hudi source), not the driver.
        assert re.search(r"\] parquet$|RelationV2\[.*\] hudi", _plan(through_spark), re.M)
        slices = handle.core().file_slices()
        if len(slices) <= MAX_FILES and not any(s.log_files for s in slices):
            assert "LocalRelation" in _plan(local), where  # base files only: read here
        keys_only = {"columns": ["_hoodie_record_key", "_hoodie_commit_time"]}
        assert rows(handle.read(where=where, **keys_only).toArrow()) == rows(handle.read(
            where=where, **keys_only, **{DIRECT_PARQUET: "false"}).toArrow())


@pytest.mark.spark
def test_over_the_budget_spark_reads_the_files(hudi_session: HudiSession) -> None:
    from tests.fixtures import table_path

    handle = hudi_session.table_at(table_path("v6_nonpartitioned"))
    where = "_hoodie_record_key IS NOT NULL"
    assert "LocalRelation" in _plan(handle.read(where=where))
    assert "LocalRelation" not in _plan(handle.read(where=where, **{LOCAL_MAX_BYTES: "10"}))
    with pytest.raises(ReadOptionError, match=LOCAL_MAX_BYTES):
        handle.read(where=where, **{LOCAL_MAX_BYTES: "lots"})


@pytest.mark.spark
def test_a_key_in_the_last_of_three_slices_is_found(hudi_session: HudiSession) -> None:
    """Two kept slices without a match before the one with it (PySpark 4.3 dropped the
    rows of an Arrow table whose first batches were empty)."""
    hudi_session.sql("CREATE TABLE local_three (id INT, city STRING) USING hudi "
                     "PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id')")
    hudi_session.sql("INSERT INTO local_three VALUES (1, 'la'), (2, 'nyc'), (3, 'sf')")
    handle = hudi_session.table("local_three")
    assert [r["id"] for r in handle.read(where="id = 3").collect()] == [3]
    assert hudi_session.sql("SELECT id FROM local_three WHERE id = 3").collect()[0]["id"] == 3
    hudi_session.sql("DROP TABLE local_three")
