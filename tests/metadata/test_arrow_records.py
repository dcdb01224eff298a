"""Column-wise record and secondary index rows equal the dict builders' rows."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hudisql.metadata import schema as S
from hudisql.metadata.arrow_records import (
    escape_secondary,
    record_index_rows,
    record_index_rows_at,
    secondary_index_keys,
    secondary_index_rows,
    secondary_key_order,
    with_payloads,
)
from hudisql.metadata.keys import RecordLocation, secondary_index_key
from hudisql.metadata.records import record_index_record, secondary_index_record, secondary_value
from hudisql.metadata.table import MetadataTable
from hudisql.table.table import HudiTable

LOC = RecordLocation("city=sf", "0a1b2c3d-0000-4000-8000-00000000000f-0", "20240101000000000")


def test_record_index_rows_equal_dict_records() -> None:
    keys = pa.array(["k1", "k2", "€"])
    expected = S.to_parquet_rows([record_index_record(k, LOC) for k in ("k1", "k2", "€")])
    got = record_index_rows(keys, LOC)
    assert got.column_names == ["key", "type", "recordIndexMetadata"]  # what a file stores
    assert with_payloads(got).equals(expected)


@given(st.lists(st.tuples(st.one_of(st.none(), st.text()), st.text(min_size=1)), max_size=15))
def test_secondary_rows_escape_as_the_scalar_keys_do(pairs: list[tuple[str | None, str]]) -> None:
    values = pa.array([v for v, _ in pairs], pa.string())
    keys = pa.array([k for _, k in pairs], pa.string())
    got = secondary_index_rows(values, keys, deleted=True)
    expected = S.to_parquet_rows([secondary_index_record(v, k, deleted=True) for v, k in pairs])
    assert with_payloads(got).equals(expected)
    assert escape_secondary(pa.array([None], pa.string())).to_pylist() == ["\0"]


#: Text that makes prefixes and escapes interesting: ``$``, ``\\``, NUL and bytes below ``$``.
_TRICKY = st.text(alphabet=["a", "b", "$", "\\", "\0", " ", "!", "#", "é"], max_size=4)


@pytest.mark.parametrize("keys_per_value", [1, 4, 256])
@given(pieces=st.lists(st.lists(st.tuples(st.one_of(st.none(), _TRICKY), _TRICKY), max_size=40),
                       min_size=1, max_size=4))
def test_secondary_keys_ordered_by_value_part_sort_as_strings(
    pieces: list[list[tuple[str | None, str]]], keys_per_value: int
) -> None:
    """Ordering by value part, then within each value, is the plain sort of the keys (an
    index build's writer relies on it), whether it groups by value or sorts whole."""
    import hudisql.metadata.arrow_records as arrow_records

    made = [secondary_index_keys(pa.array([v for v, _ in p], pa.string()),
                                 pa.array([k for _, k in p], pa.string())) for p in pieces]
    keys = pa.concat_arrays([k for k, _ in made])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(arrow_records, "_KEYS_PER_VALUE", keys_per_value)
        got = keys.take(secondary_key_order(keys, [r for _, r in made]))
    assert got.to_pylist() == keys.take(pc.sort_indices(keys)).to_pylist()


def test_secondary_keys_of_floats_sorted_whole() -> None:
    keys, routes = secondary_index_keys(pa.array([2.5, -0.0, 1.0]), pa.array(["b", "c", "a"]))
    assert keys.take(secondary_key_order(keys, [routes])).to_pylist() == sorted(keys.to_pylist())


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
        assert with_payloads(record_index_slice_rows(mor_table, file_slice)).equals(
            S.to_parquet_rows(record_index_records(mor_table, file_slice)))
        for column in ("rider", "day", "fare"):
            assert with_payloads(secondary_index_slice_rows(mor_table, file_slice, column)).equals(
                S.to_parquet_rows(secondary_index_records(mor_table, file_slice, column)))


def test_base_files_are_sorted_hfiles_whose_values_are_the_records_without_keys(
        mor_table_v6: HudiTable) -> None:
    """A metadata base file is an HFile of its records in key order, in blocks a lookup
    reads one of, GZ-compressed, with Hudi's file info (schema, min and max record key);
    each value is the record's Avro encoding with its key blanked, the same bytes whether
    made once per distinct payload (as here) or record by record."""
    from hudisql.metadata.avro import encode_record
    from hudisql.metadata.formats import RecordEncoder, hfile_values
    from hudisql.table.format.hfile import Codec, HFileReader

    mdt = MetadataTable(mor_table_v6)
    ts = mdt.new_init_instant(mor_table_v6.timeline.last_completed().timestamp)
    mdt.initialize_partition("record_index", 1, ts)
    keys = pa.array([f"key{i:06d}" for i in range(100_000)][::-1])
    other = RecordLocation("city=nyc", "0a1b2c3d-0000-4000-8000-00000000000e-0",
                           "20240101000000001")
    which = pa.array([i % 3 // 2 for i in range(len(keys))], pa.int32())
    rows = record_index_rows_at(keys, [LOC, other], which)
    (stat,) = mdt.write_base_files("record_index", rows, ts)
    assert stat.path.endswith(f"_{ts}.hfile")
    hfile = HFileReader(mdt.storage.read_bytes(stat.path), stat.path)
    assert hfile.codec == Codec.GZ and len(hfile.index) > 1 and len(hfile) == len(keys)
    info = hfile.file_info
    assert info["schema"].decode() == S.schema_text()
    assert (info["minRecordKey"], info["maxRecordKey"]) == (b"key000000", b"key099999")
    pairs = list(hfile.items())
    assert [k for k, _ in pairs] == sorted(keys.to_pylist())
    location = {k: w for k, w in zip(keys.to_pylist(), which.to_pylist(), strict=True)}
    for key, value in pairs[:50] + pairs[-50:]:
        blank = record_index_record("", (LOC, other)[location[key]])
        assert value == encode_record(blank)
    ordered = rows.sort_by("key")
    one_by_one = [RecordEncoder(S.schema_text()).encode({**r, "key": ""})
                  for r in S.from_parquet_rows(ordered.slice(1000, 1000))]
    assert hfile_values(ordered.slice(1000, 1000), RecordEncoder(S.schema_text())).to_pylist() \
        == one_by_one
    mdt.complete_instant(ts, [stat])
    got = mdt.reload().read_partition("record_index", keys=["key000007", "key000002", "nope"])
    assert got == {k: record_index_record(k, (LOC, other)[location[k]])
                   for k in ("key000007", "key000002")}


def test_base_file_rows_of_another_shape_are_refused(mor_table: HudiTable) -> None:
    """Rows with a column the base-file shape lacks, or of another type, or without a
    type column, are refused before anything is written."""
    from hudisql.errors import MetadataTableError

    mdt = MetadataTable(mor_table)
    ts = mdt.new_init_instant(mor_table.timeline.last_completed().timestamp)
    mdt.initialize_partition("record_index", 1, ts)
    (file_id,) = mdt.file_group_ids("record_index")
    good = record_index_rows(pa.array(["k1"]), LOC)
    for bad, named in ((good.append_column("extra", pa.array([1])), "column extra"),
                       (good.set_column(1, "type", pa.array([5], pa.int64())), "column type"),
                       (good.drop_columns(["type"]), "need a key and a type")):
        with pytest.raises(MetadataTableError, match=named):
            mdt.write_base_file("record_index", file_id, bad, ts)
    assert not mdt.storage.list_dir("record_index") or all(
        not s.name.endswith(".hfile") for s in mdt.storage.list_dir("record_index"))
