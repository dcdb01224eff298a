"""Nested columns cast to the types Spark declares: Avro unions as the metadata table's
column stats read (``member<i>`` structs with non-nullable values, all but one null)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from hudisql.read.datasource import conform
from hudisql.read.nested_cast import cast_nested


def _wrapper(values: pa.Array, valid: list[bool]) -> pa.StructArray:
    return pa.StructArray.from_arrays(
        [values], fields=[pa.field("value", values.type, nullable=False)],
        mask=pa.array([not v for v in valid]))


def _union(time_unit: str) -> pa.StructArray:
    """Three rows: an int member, a time member, a null union; the null members' values
    are nulls (Arrow's own struct cast refuses those under a non-nullable field)."""
    ints = _wrapper(pa.array([3, None, None], pa.int32()), [True, False, False])
    times = _wrapper(pa.array([None, 5, None], pa.int64()).cast(pa.time64(time_unit)),
                     [False, True, False])
    return pa.StructArray.from_arrays([ints, times], names=["member1", "member9"],
                                      mask=pa.array([False, False, True]))


def test_a_union_of_wrappers_casts_leaf_by_leaf_keeping_its_nulls() -> None:
    source, target = _union("us"), _union("ns").type
    with pytest.raises(pa.ArrowInvalid, match="non-nullable"):
        source.cast(target)  # why cast_nested exists
    rows = pa.table({"minValue": source, "wrapped": pa.ListArray.from_arrays(
        pa.array([0, 2, 3, 3], pa.int32()), source, mask=pa.array([False, False, True]))})
    declared = pa.schema([("minValue", target), ("wrapped", pa.list_(target))])
    for table in (rows, rows.slice(1)):  # sliced: offsets not from 0
        out = conform(table, declared)
        out.validate(full=True)
        assert out.schema == declared
        assert out.to_pylist() == table.to_pylist()  # 5 us is 5,000 ns: the same times
    assert cast_nested(rows.column("minValue"), target).to_pylist()[1] == {
        "member1": None, "member9": {"value": pa.scalar(5, pa.time64("us")).as_py()}}
    maps = pa.array([[("a", 1)], None, [("b", 2)]], pa.map_(pa.string(), pa.int32()))
    assert cast_nested(maps.slice(1), pa.map_(pa.string(), pa.int64())).to_pylist() == [
        None, [("b", 2)]]
