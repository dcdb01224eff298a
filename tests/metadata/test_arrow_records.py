"""Column-wise record and secondary index rows equal the dict builders' rows."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from hudisql.metadata import schema as S
from hudisql.metadata.arrow_records import (
    escape_secondary,
    record_index_rows,
    secondary_index_rows,
)
from hudisql.metadata.keys import RecordLocation, secondary_index_key
from hudisql.metadata.records import record_index_record, secondary_index_record, secondary_value
from hudisql.metadata.table import MetadataTable
from hudisql.table.table import HudiTable

LOC = RecordLocation("city=sf", "0a1b2c3d-0000-4000-8000-00000000000f-0", "20240101000000000")


def test_record_index_rows_equal_dict_records() -> None:
    keys = pa.array(["k1", "k2", "€"])
    expected = S.to_parquet_rows([record_index_record(k, LOC) for k in ("k1", "k2", "€")])
    assert record_index_rows(keys, LOC).equals(expected)


@given(st.lists(st.tuples(st.one_of(st.none(), st.text()), st.text(min_size=1)), max_size=15))
def test_secondary_rows_escape_as_the_scalar_keys_do(pairs: list[tuple[str | None, str]]) -> None:
    values = pa.array([v for v, _ in pairs], pa.string())
    keys = pa.array([k for _, k in pairs], pa.string())
    got = secondary_index_rows(values, keys, deleted=True)
    expected = S.to_parquet_rows([secondary_index_record(v, k, deleted=True) for v, k in pairs])
    assert got.equals(expected)
    assert escape_secondary(pa.array([None], pa.string())).to_pylist() == ["\0"]


def test_secondary_rows_of_typed_columns() -> None:
    cases = [pa.array([1, None, -5]), pa.array([True, False, None]), pa.array([1.5, 2.0, None]),
             pa.array([dt.date(2024, 1, 2), None, dt.date(1999, 12, 31)])]
    keys = pa.array(["a", "b", "c"])
    for values in cases:
        got = secondary_index_rows(values, keys).column("key").to_pylist()
        assert got == [secondary_index_key(secondary_value(v), k)
                       for v, k in zip(values.to_pylist(), keys.to_pylist(), strict=True)]


def test_arrow_rows_build_a_partition(mor_table: HudiTable) -> None:
    mdt = MetadataTable(mor_table)
    ts = mdt.new_init_instant(mor_table.timeline.last_completed().timestamp)
    mdt.initialize_partition("record_index", 3, ts)
    keys = pa.array([f"key{i}" for i in range(100)])
    stats = mdt.write_base_files("record_index", record_index_rows(keys, LOC), ts)
    mdt.complete_instant(ts, stats)
    assert sum(s.num_writes for s in stats) == 100
    got = mdt.reload().read_partition("record_index", keys=["key7", "key99"])
    assert {k: RecordLocation.from_avro(r["recordIndexMetadata"]) for k, r in got.items()} == {
        "key7": LOC, "key99": LOC}


def test_slice_rows_equal_the_dict_builders(mor_table: HudiTable) -> None:
    from hudisql.metadata.builders import (
        record_index_records,
        record_index_slice_rows,
        secondary_index_records,
        secondary_index_slice_rows,
    )

    for file_slice in mor_table.file_slices():
        assert record_index_slice_rows(mor_table, file_slice).equals(
            S.to_parquet_rows(record_index_records(mor_table, file_slice)))
        for column in ("rider", "day", "fare"):
            assert secondary_index_slice_rows(mor_table, file_slice, column).equals(
                S.to_parquet_rows(secondary_index_records(mor_table, file_slice, column)))
