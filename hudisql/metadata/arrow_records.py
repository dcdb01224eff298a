"""Metadata records as Arrow tables (the base-file shape), built column-wise for many keys.

The record and secondary indexes hold a record per data record; building them one Python
dict at a time does not scale. These builders make the same rows as
:func:`hudisql.metadata.schema.to_parquet_rows` of the dict builders, from Arrow arrays, so
the indexer's Spark tasks (``mapInArrow``) can return them and
:meth:`hudisql.metadata.table.MetadataTable.write_base_file` can write them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.partitions import MetadataPartitionType
from hudisql.metadata.records import secondary_value
from hudisql.metadata.strings import key_order

__all__ = [
    "escape_secondary",
    "record_index_rows",
    "record_index_rows_at",
    "secondary_index_keys",
    "secondary_index_rows",
    "secondary_key_order",
    "secondary_key_rows",
    "secondary_strings",
    "stored_columns",
    "with_payloads",
]

_PAYLOADS = ("filesystemMetadata", "BloomFilterMetadata", "ColumnStatsMetadata",
             "recordIndexMetadata", "SecondaryIndexMetadata")


def _repeat(value: object, n: int, dtype: pa.DataType) -> pa.Array:
    """``n`` copies of ``value``."""
    return pa.repeat(pa.scalar(value, dtype), n)


def _rows(keys: pa.Array, record_type: int, payload: str, values: pa.StructArray) -> pa.Table:
    """Base-file rows holding one payload: ``key``, ``type`` and ``payload`` (the other
    payloads are null in every row: a base file leaves them out, see
    :func:`stored_columns`)."""
    schema = S.arrow_schema()
    n = len(keys)
    fields = [schema.field("key"), schema.field("type"), schema.field(payload)]
    columns = [keys.cast(pa.string()), _repeat(record_type, n, pa.int32()),
               values.cast(fields[2].type)]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def stored_columns(rows: pa.Table) -> pa.Table:
    """The columns of base-file rows a base file stores: ``key``, ``type`` and the payloads
    that hold a value in some row, in the schema's order. A partition's records use one
    payload; the others are null in every record, and writing their fifty-odd null leaf
    columns was more than half of an index build's parquet time. :func:`with_payloads`
    restores them on read.

    Raises:
        MetadataTableError: ``rows`` lack ``key`` or ``type``, or hold a column that is not
            in the base-file shape (:func:`hudisql.metadata.schema.arrow_schema`) or has
            another type.
    """
    schema = S.arrow_schema()
    for field in rows.schema:
        if field.name not in schema.names or not field.type.equals(
                schema.field(field.name).type):
            raise MetadataTableError(
                f"column {field.name} ({field.type}) is not a column of the metadata base "
                "file shape (hudisql.metadata.schema.arrow_schema)")
    if "key" not in rows.column_names or "type" not in rows.column_names:
        raise MetadataTableError("metadata base file rows need a key and a type column")
    n = rows.num_rows
    kept = [f.name for f in schema if f.name in rows.column_names and (
        f.name not in _PAYLOADS or rows.column(f.name).null_count < n)]
    return rows.select(kept)


def with_payloads(rows: pa.Table) -> pa.Table:
    """Base-file rows that may leave payload columns out (as :func:`stored_columns` writes
    them) in the full base-file shape: the missing payloads are null (the Avro default of
    these optional fields)."""
    schema = S.arrow_schema()
    if rows.schema.names == schema.names:
        return rows
    n = rows.num_rows
    return pa.Table.from_arrays(
        [rows.column(f.name) if f.name in rows.column_names else pa.nulls(n, f.type)
         for f in schema], schema=schema)


def _plain(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    return array


def record_index_rows(keys: pa.Array | pa.ChunkedArray, location: RecordLocation) -> pa.Table:
    """Record-index rows of ``keys``, all in one file group (``location``)."""
    keys = _plain(keys)
    return record_index_rows_at(keys, [location], pa.array(np.zeros(len(keys), np.int32)))


def record_index_rows_at(keys: pa.Array | pa.ChunkedArray,
                         locations: Sequence[RecordLocation], which: pa.Array) -> pa.Table:
    """Record-index rows of ``keys``: key ``i`` is in file group ``locations[which[i]]``."""
    keys = _plain(keys)
    fields = S.arrow_schema().field("recordIndexMetadata").type
    infos = [location.to_avro() for location in locations]
    arrays = [pa.array([info[f.name] for info in infos], f.type).take(which) for f in fields]
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


#: The bytes secondary keys escape: ``\\``, ``$`` and NUL.
_ESCAPED_BYTES = (ord("\\"), ord("$"), 0)


def _needs_escaping(text: pa.Array) -> bool:
    """Whether any value of a string array holds a byte :func:`escape_secondary` escapes
    (one pass over the values' bytes: UTF-8 never uses ASCII bytes inside a multi-byte
    character, so a byte test is exact)."""
    if not len(text) or text.null_count == len(text):
        return False
    offset_type = np.int64 if pa.types.is_large_string(text.type) else np.int32
    offsets = np.frombuffer(text.buffers()[1], dtype=offset_type)
    start, end = int(offsets[text.offset]), int(offsets[text.offset + len(text)])
    data = text.buffers()[2]
    if data is None or end <= start:
        return False
    values = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
    found = values == _ESCAPED_BYTES[0]
    for byte in _ESCAPED_BYTES[1:]:  # comparisons: several times faster than a table lookup
        found |= values == byte
    return bool(found.any())


def escape_secondary(text: pa.Array) -> pa.Array:
    """Hudi's escaping of secondary keys: ``\\``, ``$`` and NUL get a ``\\``; null is NUL."""
    text = _plain(text)
    if not _needs_escaping(text):  # the common case: only the nulls change
        return pc.fill_null(text, "\0") if text.null_count else text
    escaped = pc.replace_substring(text, "\\", "\\\\")
    escaped = pc.replace_substring(escaped, "$", "\\$")
    escaped = pc.replace_substring(escaped, "\0", "\\\0")
    return pc.fill_null(escaped, "\0")


def _exact_text(dtype: pa.DataType) -> bool:
    """Whether equal values of ``dtype`` always have equal index text (so the text can be
    made once per distinct value): strings, integers, booleans and dates (not floats:
    ``0.0`` and ``-0.0`` are equal but print differently)."""
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
                or pa.types.is_integer(dtype) or pa.types.is_boolean(dtype)
                or pa.types.is_date32(dtype))


def secondary_index_keys(values: pa.Array | pa.ChunkedArray,
                         keys: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    """Secondary-index keys (``escape(value)$escape(record key)``) of (value, key) pairs,
    and their value parts ``escape(value)$`` (what they route by).

    Values of the usual types are dictionary-encoded first: each distinct value is turned
    into its value part once, and the value parts come back as a dictionary array, which
    :func:`~hudisql.metadata.partitions.file_group_indexes` hashes once per distinct value.
    """
    keys = escape_secondary(_plain(keys).cast(pa.string()))
    values = _plain(values)
    if _exact_text(values.type):
        encoded = pc.dictionary_encode(values, null_encoding="encode")
        parts = pc.binary_join_element_wise(
            escape_secondary(secondary_strings(encoded.dictionary)), "", "$")
        routes = pa.DictionaryArray.from_arrays(encoded.indices, parts)
        return pc.binary_join_element_wise(parts.take(encoded.indices), keys, ""), routes
    value_part = pc.binary_join_element_wise(escape_secondary(secondary_strings(values)), "", "$")
    return pc.binary_join_element_wise(value_part, keys, ""), value_part


#: Secondary keys are ordered value by value (:func:`secondary_key_order`) only when the
#: values hold this many keys on average; fewer, and one sort of the whole keys is cheaper.
_KEYS_PER_VALUE = 256


def secondary_key_order(keys: pa.Array, routes: Sequence[pa.Array]) -> pa.Array:
    """The indices that sort secondary ``keys`` (``pc.sort_indices(keys)``), given their
    value parts ``routes`` (arrays in the keys' order, dictionary-encoded as
    :func:`secondary_index_keys` makes them for the usual types; others are sorted whole).

    Keys of different value parts are in the order of their value parts: ``escape(v)$``
    holds no unescaped ``$`` before its last byte, so neither of two different value parts
    is a prefix of the other's key and the first byte they differ at decides. So the keys
    are ordered by the rank of their value part (an integer sort), then each value's keys
    among themselves: small sorts of keys that share a prefix, far cheaper than one sort of
    all. Many values with few keys each are sorted whole instead.
    """
    n = len(keys)
    types = {r.type for r in routes}
    if len(types) != 1 or not pa.types.is_dictionary(types.pop()):
        return key_order(keys)
    unified = pa.chunked_array(routes).unify_dictionaries()
    dictionary = unified.chunk(0).dictionary
    if n < 2 or len(dictionary) * _KEYS_PER_VALUE > n or unified.null_count:
        return key_order(keys)
    rank = np.empty(len(dictionary), dtype=np.int32)
    rank[pc.sort_indices(dictionary).to_numpy()] = np.arange(len(dictionary), dtype=np.int32)
    by_value = rank[np.concatenate([c.indices.to_numpy() for c in unified.chunks])]
    # int16 ranks get numpy's radix sort.
    small = len(dictionary) <= np.iinfo(np.int16).max
    order = np.argsort(by_value.astype(np.int16) if small else by_value, kind="stable")
    grouped = keys.take(pa.array(order))
    ranks = by_value[order]
    starts = np.flatnonzero(np.diff(ranks)) + 1
    bounds = zip(np.r_[0, starts].tolist(), np.r_[starts, n].tolist(), strict=True)
    within = [key_order(grouped.slice(start, end - start)).to_numpy() + start
              for start, end in bounds]
    return pa.array(order[np.concatenate(within)])


def secondary_key_rows(joined: pa.Array | pa.ChunkedArray, deleted: bool = False) -> pa.Table:
    """Secondary-index rows of secondary keys (see :func:`secondary_index_keys`)."""
    joined = _plain(joined)
    n = len(joined)
    info = pa.StructArray.from_arrays([_repeat(deleted, n, pa.bool_())], ["isDeleted"])
    return _rows(joined, MetadataPartitionType.SECONDARY_INDEX.record_type,
                 "SecondaryIndexMetadata", info)


def secondary_index_rows(
    values: pa.Array | pa.ChunkedArray, keys: pa.Array | pa.ChunkedArray, deleted: bool = False
) -> pa.Table:
    """Secondary-index rows for (value, record key) pairs."""
    return secondary_key_rows(secondary_index_keys(values, keys)[0], deleted)
