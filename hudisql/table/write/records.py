"""Preparing records for a write: conform to the table schema, key them, combine duplicates.

Hudi's key generators turn record fields into the record key (``_hoodie_record_key``) and
the partition path (``_hoodie_partition_path``). This module does that the way Hudi's
``SimpleKeyGenerator`` / ``ComplexKeyGenerator`` / ``NonpartitionedKeyGenerator`` do for
the column types whose string form is unambiguous, and precombines a batch: per key, the
record with the greatest precombine value wins (ties: the later one in the batch).
Everything here is vectorized with ``pyarrow.compute``: it runs on Spark executors too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import WriteError

#: Hudi's partition value for a null or empty partition field.
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

#: Names of the record-key and partition-path meta columns.
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"

_META_PREFIX = "_hoodie_"

#: What writes accept as records: an Arrow table or batch, or a list of dicts.
Records: TypeAlias = pa.Table | pa.RecordBatch | Sequence[Mapping[str, Any]]


def is_key_type(dtype: pa.DataType) -> bool:
    """True when values of ``dtype`` have one unambiguous string form (usable in keys/paths)."""
    return bool(
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_integer(dtype)
        or pa.types.is_boolean(dtype)
        or pa.types.is_date32(dtype)
        or pa.types.is_decimal(dtype)
    )


def conform_records(records: Records, schema: pa.Schema, table_name: str) -> pa.Table:
    """The records as an Arrow table with exactly the columns of ``schema``, in its order.

    Meta columns (``_hoodie_*``) in the input are dropped: they are recomputed on write.

    Raises:
        WriteError: a column is missing or unknown, or a value cannot be cast to the
            column's type. Nothing has been written when it is raised.
    """
    table = _as_table(records, schema, table_name)
    names = [n for n in table.column_names if not n.startswith(_META_PREFIX)]
    missing = [f.name for f in schema if f.name not in names]
    unknown = [n for n in names if schema.get_field_index(n) < 0]
    if unknown:
        raise WriteError(
            f"table {table_name}: the records have columns {unknown} that the table does not "
            f"have (its columns: {schema.names}); remove them (schema evolution is not "
            "supported by this writer)"
        )
    if missing:
        raise WriteError(
            f"table {table_name}: the records lack the columns {missing}; give every column "
            "of the table (use nulls for unknown values)"
        )
    columns = []
    for field in schema:
        column = table.column(field.name)
        if not column.type.equals(field.type):
            try:
                column = column.cast(field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise WriteError(
                    f"table {table_name}: column {field.name!r} has values of type "
                    f"{column.type} that do not fit the table's type {field.type}: {exc}"
                ) from exc
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def _as_table(records: Records, schema: pa.Schema, table_name: str) -> pa.Table:
    if isinstance(records, pa.Table):
        return records
    if isinstance(records, pa.RecordBatch):
        return pa.Table.from_batches([records])
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        raise WriteError(
            f"table {table_name}: records must be a pyarrow Table, a RecordBatch or a list "
            f"of dicts, not {type(records).__name__}"
        )
    rows = list(records)
    names = set(schema.names)
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise WriteError(f"table {table_name}: record {index} is not a dict: {row!r}")
        keys = {k for k in row if not str(k).startswith(_META_PREFIX)}
        if keys != names:
            # from_pylist would drop unknown keys and fill missing ones with nulls silently.
            raise WriteError(
                f"table {table_name}: record {index} has the columns {sorted(keys)}, which are "
                f"not the table's {schema.names}: unknown {sorted(keys - names)}, lack the "
                f"columns {sorted(names - keys)}; give every column (nulls for unknown values)"
            )
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, KeyError) as exc:
        raise WriteError(f"table {table_name}: records do not fit the table schema: {exc}") from exc


def _as_strings(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    return pc.cast(column, pa.string())


def record_keys(
    table: pa.Table, key_fields: Sequence[str], table_name: str, labelled: bool | None = None
) -> pa.ChunkedArray | pa.Array:
    """The record key of every row: the field's value, or ``f1:v1,f2:v2``.

    Args:
        labelled: write ``field:value`` pairs (Hudi's ComplexKeyGenerator does, also for a
            single field); by default only for several fields.

    Raises:
        WriteError: a key field is null or empty in some row (named by its index).
    """
    parts = []
    for field in key_fields:
        values = _as_strings(table.column(field))
        bad = pc.or_kleene(pc.is_null(values), pc.equal(values, ""))
        if pc.any(bad).as_py():
            row = pc.index(bad, True).as_py()
            raise WriteError(
                f"table {table_name}: record key field {field!r} is null or empty in row "
                f"{row}; every record needs a key"
            )
        parts.append(values)
    if labelled is None:
        labelled = len(key_fields) > 1
    if not labelled:
        return parts[0]
    pairs = [
        pc.binary_join_element_wise(pa.scalar(f"{field}:"), values, "")
        for field, values in zip(key_fields, parts, strict=True)
    ]
    return pairs[0] if len(pairs) == 1 else pc.binary_join_element_wise(*pairs, ",")


def partition_paths(
    table: pa.Table, partition_fields: Sequence[str], hive_style: bool, table_name: str
) -> pa.ChunkedArray | pa.Array:
    """The partition path of every row (``""`` for a non-partitioned table).

    Null or empty values become ``__HIVE_DEFAULT_PARTITION__``; hive style gives
    ``field=value``; several fields are joined with ``/``.

    Raises:
        WriteError: a partition value contains ``/`` (it would nest directories).
    """
    if not partition_fields:
        return pa.array([""] * table.num_rows, pa.string())
    parts = []
    for field in partition_fields:
        values = _as_strings(table.column(field))
        values = pc.if_else(
            pc.or_kleene(pc.is_null(values), pc.equal(values, "")), DEFAULT_PARTITION, values
        )
        slash = pc.match_substring(values, "/")
        if pc.any(slash).as_py():
            row = pc.index(slash, True).as_py()
            raise WriteError(
                f"table {table_name}: partition field {field!r} holds a value with '/' in row "
                f"{row}; partition values cannot contain '/'"
            )
        if hive_style:
            values = pc.binary_join_element_wise(pa.scalar(f"{field}="), values, "")
        parts.append(values)
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "/")


def precombine(
    table: pa.Table, precombine_field: str | None, table_name: str
) -> pa.Table:
    """One row per (partition path, record key): the greatest precombine value wins.

    ``table`` carries the ``_hoodie_record_key`` and ``_hoodie_partition_path`` columns.
    Ties, and tables without a precombine field, keep the later row of the batch. The
    surviving rows keep their batch order.

    Raises:
        WriteError: the precombine field is null in some row.
    """
    n = table.num_rows
    if n <= 1:
        return table
    ordering = None if precombine_field is None else table.column(precombine_field)
    if ordering is not None and ordering.null_count:
        row = pc.index(pc.is_null(ordering), True).as_py()
        raise WriteError(
            f"table {table_name}: precombine field {precombine_field!r} is null in row "
            f"{row}; give every record an ordering value"
        )
    if pc.count_distinct(table.column(RECORD_KEY)).as_py() == n:
        return table  # unique keys (the usual batch): one hash pass instead of a sort
    position = pa.array(range(n), pa.int64())
    composite = pc.binary_join_element_wise(
        table.column(PARTITION_PATH), table.column(RECORD_KEY), "\x00"
    )
    columns: dict[str, Any] = {"k": composite, "i": position}
    sort_keys = [("k", "ascending")]
    if ordering is not None:
        columns["o"] = ordering
        sort_keys.append(("o", "ascending"))
    sort_keys.append(("i", "ascending"))
    frame = pa.table(columns)
    order = pc.sort_indices(frame, sort_keys=sort_keys)
    keys = pc.take(composite, order)
    # The last row of each run of equal keys is the winner.
    last = pc.not_equal(keys.slice(0, n - 1), keys.slice(1))
    last = pa.concat_arrays([_combine(last), pa.array([True])])
    winners = pc.filter(pc.take(position, order), last)
    if len(winners) == n:
        return table
    return table.take(pc.take(winners, pc.sort_indices(winners)))


def _combine(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values
