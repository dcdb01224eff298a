"""Metadata records as Arrow tables (the base-file shape), built column-wise for many keys.

The record and secondary indexes hold a record per data record; building them one Python
dict at a time does not scale. These builders make the same rows as
:func:`hudisql.metadata.schema.to_parquet_rows` of the dict builders, from Arrow arrays, so
the indexer's Spark tasks (``mapInArrow``) can return them and
:meth:`hudisql.metadata.table.MetadataTable.write_base_file` can write them.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.metadata import schema as S
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.partitions import MetadataPartitionType
from hudisql.metadata.records import secondary_value

__all__ = ["escape_secondary", "record_index_rows", "secondary_index_rows", "secondary_strings"]

_PAYLOADS = ("filesystemMetadata", "BloomFilterMetadata", "ColumnStatsMetadata",
             "recordIndexMetadata", "SecondaryIndexMetadata")


def _rows(keys: pa.Array, record_type: int, payload: str, values: pa.StructArray) -> pa.Table:
    schema = S.arrow_schema()
    n = len(keys)
    columns = [keys.cast(pa.string()), pa.array([record_type] * n, pa.int32())]
    for name in _PAYLOADS:
        dtype = schema.field(name).type
        # pa.array of Nones (not pa.nulls): non-nullable children get values parquet accepts.
        columns.append(values.cast(dtype) if name == payload else pa.array([None] * n, dtype))
    return pa.Table.from_arrays(columns, schema=schema)


def _plain(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    return array


def record_index_rows(keys: pa.Array | pa.ChunkedArray, location: RecordLocation) -> pa.Table:
    """Record-index rows of ``keys``, all in one file group (``location``)."""
    keys = _plain(keys)
    info = location.to_avro()
    n = len(keys)
    fields = S.arrow_schema().field("recordIndexMetadata").type
    arrays = [pa.array([info[f.name]] * n, f.type) for f in fields]
    return _rows(keys, MetadataPartitionType.RECORD_INDEX.record_type, "recordIndexMetadata",
                 pa.StructArray.from_arrays(arrays, fields=list(fields)))


def secondary_strings(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Column values as the secondary index stores them (see ``secondary_value``)."""
    values = _plain(values)
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return values.cast(pa.string())
    if (pa.types.is_integer(values.type) or pa.types.is_boolean(values.type)
            or pa.types.is_date32(values.type)):
        return values.cast(pa.string())  # the same text as Python's str (bools: true/false)
    return pa.array([secondary_value(v) for v in values.to_pylist()], pa.string())


def escape_secondary(text: pa.Array) -> pa.Array:
    """Hudi's escaping of secondary keys: ``\\``, ``$`` and NUL get a ``\\``; null is NUL."""
    escaped = pc.replace_substring(text, "\\", "\\\\")
    escaped = pc.replace_substring(escaped, "$", "\\$")
    escaped = pc.replace_substring(escaped, "\0", "\\\0")
    return pc.fill_null(escaped, "\0")


def secondary_index_rows(
    values: pa.Array | pa.ChunkedArray, keys: pa.Array | pa.ChunkedArray, deleted: bool = False
) -> pa.Table:
    """Secondary-index rows for (value, record key) pairs."""
    keys = _plain(keys).cast(pa.string())
    text = secondary_strings(values)
    joined = pc.binary_join_element_wise(escape_secondary(text), escape_secondary(keys), "$")
    n = len(keys)
    info = pa.StructArray.from_arrays([pa.array([deleted] * n, pa.bool_())], ["isDeleted"])
    return _rows(joined, MetadataPartitionType.SECONDARY_INDEX.record_type,
                 "SecondaryIndexMetadata", info)
