"""Staging in the JVM gives exactly the keys and partition paths the table core forms."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from hudisql.errors import WriteError
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.write.records import PARTITION_PATH, RECORD_KEY, partition_paths, record_keys
from hudisql.write.staging import stage_in_jvm

pytestmark = pytest.mark.spark

ROWS = [
    ("a", 1, -7, True, dt.date(2024, 1, 2), "x"),
    ("b", 2, 9_000_000_000, False, dt.date(1999, 12, 31), None),
    ("c", 3, 0, None, None, ""),
]
COLUMNS = "s string, i int, l long, b boolean, d date, p string"


@pytest.mark.parametrize(("keys", "parts", "hive", "labelled"), [
    (["s"], ["p"], True, False),
    (["l"], ["d", "b"], False, False),
    (["i", "s"], ["b"], True, True),
    (["s"], ["i"], False, True),
    (["s"], [], True, False),
])
def test_jvm_staging_matches_the_core(hudi_session: HudiSession, keys: list[str],
                                      parts: list[str], hive: bool, labelled: bool) -> None:
    df = hudi_session.spark.createDataFrame(ROWS, COLUMNS)
    staged = stage_in_jvm(df, keys, parts, hive, labelled, with_partition=True)
    assert staged is not None
    got = staged.select(RECORD_KEY, PARTITION_PATH).collect()
    table = pa.Table.from_pylist([dict(zip(df.columns, r, strict=True)) for r in ROWS],
                                 schema=to_arrow_schema(df.schema))
    want_keys = record_keys(table, keys, "t", labelled).to_pylist()
    want_paths = partition_paths(table, parts, hive, "t").to_pylist()
    assert [(r[0], r[1]) for r in got] == list(zip(want_keys, want_paths, strict=True))


def test_inexact_types_fall_back_to_arrow_staging(hudi_session: HudiSession) -> None:
    df = hudi_session.spark.createDataFrame([("a", 1.5)], "s string, f double")
    assert stage_in_jvm(df, ["f"], [], True, False, with_partition=True) is None
    assert stage_in_jvm(df, ["s"], ["f"], True, False, with_partition=True) is None


def test_partition_value_with_slash_is_refused_before_any_instant(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table()
    before = sorted(str(p) for p in Path(handle.path).rglob("*"))
    df = hudi_session.spark.createDataFrame(
        [("u1", 1, "r", 1.0, "san/francisco")],
        "uuid string, ts long, rider string, fare double, city string")
    with pytest.raises(WriteError, match="partition path 'city=san/francisco' has a value with"):
        handle.upsert(df)
    with pytest.raises(WriteError, match=r"null or empty record key field \(uuid\)"):
        handle.upsert(hudi_session.spark.createDataFrame(
            [("", 1, "r", 1.0, "sf")], "uuid string, ts long, rider string, fare double, "
                                       "city string"))
    assert sorted(str(p) for p in Path(handle.path).rglob("*")) == before
