"""Column statistics of data files: base files from parquet footers, log files from records.

Pure functions of one file (Spark executors of the indexer call them per file slice):
:func:`base_file_ranges` combines the row groups' footer statistics (reading a column only
where a row group has no min/max, e.g. all nulls); :func:`log_file_ranges` computes them
from the records of the log file's data blocks (sizes 0, as Hudi records for logs; the
operand columns of an expression block get none).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudisql.metadata.records import ColumnRange, value_kind
from hudisql.table.format.log.format import BlockType
from hudisql.table.format.log.reader import decode_data_block, scan_blocks
from hudisql.table.format.schema import META_COLUMNS
from hudisql.table.io.storage import Storage
from hudisql.table.read.expressions import block_expressions

__all__ = [
    "MAX_DEFAULT_COLUMNS",
    "base_file_ranges",
    "default_stats_columns",
    "log_file_ranges",
    "log_file_rows",
    "table_ranges",
]

#: Hudi indexes the first 32 columns when no column list is configured.
MAX_DEFAULT_COLUMNS = 32


def default_stats_columns(schema: pa.Schema) -> list[str]:
    """The data columns (no meta columns) whose statistics are indexed by default."""
    names = [f.name for f in schema if f.name not in META_COLUMNS
             and value_kind(f.type) is not None]
    return names[:MAX_DEFAULT_COLUMNS]


def _range_of(column: str, array: pa.ChunkedArray | pa.Array) -> ColumnRange | None:
    kind = value_kind(array.type)
    if kind is None:
        return None
    n = len(array)
    nulls = array.null_count
    lo = hi = None
    if n > nulls:
        bounds = pc.min_max(array)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    return ColumnRange(column, kind, lo, hi, nulls, n)


def table_ranges(table: pa.Table, columns: Sequence[str]) -> list[ColumnRange]:
    """Statistics of ``columns`` over the rows of ``table`` (absent columns are skipped)."""
    out = []
    for column in columns:
        if column in table.column_names:
            found = _range_of(column, table.column(column))
            if found is not None:
                out.append(found)
    return out


def _bounded(values: list[Any], pick: Any) -> Any:
    present = [v for v in values if v is not None]
    return pick(present) if present else None


def base_file_ranges(storage: Storage, rel: str, columns: Sequence[str]) -> list[ColumnRange]:
    """Statistics of ``columns`` of a base parquet file, from its footer."""
    parquet = pq.ParquetFile(storage.open_input_file(rel))
    meta = parquet.metadata
    arrow = parquet.schema_arrow
    by_path = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    out = []
    for column in columns:
        if column not in by_path or arrow.get_field_index(column) < 0:
            continue
        kind = value_kind(arrow.field(column).type)
        if kind is None:
            continue
        i = by_path[column]
        mins, maxs, nulls, values, size, raw = [], [], 0, 0, 0, 0
        exact = True
        for g in range(meta.num_row_groups):
            chunk = meta.row_group(g).column(i)
            rows = meta.row_group(g).num_rows
            stats = chunk.statistics
            size += chunk.total_compressed_size
            raw += chunk.total_uncompressed_size
            values += rows
            if stats is None or not stats.has_null_count:
                exact = False
                continue
            nulls += stats.null_count
            if stats.has_min_max:
                mins.append(stats.min)
                maxs.append(stats.max)
            elif stats.null_count != rows:
                exact = False
        if not exact or (kind in ("decimal", "timestamp", "time", "date") and mins):
            # Footers without statistics, or logical types whose footer values pyarrow gives
            # in physical form: read the column itself.
            found = _range_of(column, parquet.read(columns=[column]).column(column))
            if found is None:
                continue
            out.append(ColumnRange(column, kind, found.min_value, found.max_value,
                                   found.null_count, found.value_count, size, raw))
            continue
        out.append(ColumnRange(column, kind, _bounded(mins, min), _bounded(maxs, max), nulls,
                               values, size, raw))
    return out


def log_file_rows(
    storage: Storage, rel: str, instant_time: str | None = None
) -> tuple[pa.Table | None, set[str]]:
    """The records of a log file's data blocks, and the operand columns of its expression
    blocks (``SET c = c + x``: those columns hold operands, not values).

    Args:
        instant_time: only blocks of this instant (a log file holds one write's blocks).

    Returns:
        (the records, or None when the file has no data block; the operand columns).
    """
    data = storage.read_bytes(rel)
    tables = []
    operands: set[str] = set()
    for block in scan_blocks(data, posixpath.basename(rel)):
        if block.is_corrupt or block.block_type not in (BlockType.AVRO_DATA,
                                                        BlockType.PARQUET_DATA):
            continue
        if instant_time is not None and block.instant_time != instant_time:
            continue
        operands.update(block_expressions(block) or {})
        tables.append(decode_data_block(data, block))
    if not tables:
        return None, operands
    return pa.concat_tables(tables, promote_options="default"), operands


def log_file_ranges(
    storage: Storage, rel: str, columns: Sequence[str], instant_time: str | None = None
) -> list[ColumnRange]:
    """Statistics of ``columns`` over the records of a log file's data blocks.

    Args:
        instant_time: only blocks of this instant (a log file holds one write's blocks).
    """
    merged, operands = log_file_rows(storage, rel, instant_time)
    if merged is None:
        return []
    # An expression block's columns get no statistics (a reader then cannot prune on them).
    return table_ranges(merged, [c for c in columns if c not in operands])
