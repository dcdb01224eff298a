"""Casting nested Arrow columns to the types Spark declares, one leaf at a time.

Spark's Arrow types and the ones hudisql reads differ in leaves only (a ``time64[us]``
column comes back from Spark's schema as ``time64[ns]``), but Arrow's own cast of a struct
refuses a struct whose null entries hold nulls in a non-nullable child ("nulls in input
cannot be viewed as non-nullable"), which is how Avro unions read: the metadata table's
column stats wrap each value in ``member<i>`` structs, all but one null, each with a
non-nullable ``value``. Rebuilding structs, lists and maps around their cast children, with
the parent's validity, casts the leaves and keeps every null where it was.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["cast_nested"]


def cast_nested(column: pa.ChunkedArray | pa.Array, target: pa.DataType
                ) -> pa.ChunkedArray | pa.Array:
    """``column`` as ``target``: structs, lists and maps rebuilt, leaves cast by Arrow.

    Raises:
        pyarrow.ArrowInvalid, pyarrow.ArrowNotImplementedError: a leaf does not cast.
    """
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([_cast(c, target) for c in column.chunks], type=target)
    return _cast(column, target)


def _cast(array: pa.Array, target: pa.DataType) -> pa.Array:
    source = array.type
    if source.equals(target):
        return array
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(source) and pa.types.is_struct(target) and {
            source.field(i).name for i in range(source.num_fields)} == {
            target.field(i).name for i in range(target.num_fields)}:
        fields = [target.field(i) for i in range(target.num_fields)]
        children = [_cast(array.field(f.name), f.type) for f in fields]
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if pa.types.is_map(source) and pa.types.is_map(target):
        offsets, entries = _entries(array)
        keys = _cast(entries.field(0), target.key_type)
        items = _cast(entries.field(1), target.item_type)
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    for kind, build in ((pa.types.is_list, pa.ListArray), (pa.types.is_large_list,
                                                           pa.LargeListArray)):
        if kind(source) and kind(target):
            offsets, values = _entries(array)
            return build.from_arrays(offsets, _cast(values, target.value_type), type=target,
                                     mask=mask)
    return array.cast(target)


def _entries(array: pa.Array) -> tuple[pa.Array, pa.Array]:
    """A list (or map) array's offsets from 0 and the values they span: Arrow rebuilds a
    list with nulls only from offsets that are not a slice."""
    offsets = array.offsets
    start = offsets[0].as_py()
    end = offsets[-1].as_py()
    return pc.subtract(offsets, start), array.values.slice(start, end - start)
