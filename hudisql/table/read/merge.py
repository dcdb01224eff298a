"""Merged read of one file slice: its base file plus the valid blocks of its log files.

The rules (``docs/FORMAT.md``): a data or delete block counts only when its
``INSTANT_TIME`` is a visible instant (completed, not rolled back, no later than ``as_of``);
a rollback command block voids every block of its target instant wherever it sits in the
slice's logs; a log-compacted block stands in for the blocks it names; corrupt blocks are
skipped and reported, never merged. Per record key the record with the greatest ordering
(precombine) value wins and ties go to the later record in log order; a delete removes the
key unless a record with a greater ordering value follows. A delete without an ordering
value (Spark writes int 0) is "natural order": it removes what came before it and loses to
whatever follows. An expression block (``expressions.py``) is applied to the merged state at
its position in the log, for the keys it touches.

The merge streams (:func:`stream_file_slice`): the (small) log blocks are decoded and
reduced first to one outcome per record key (the winning log record or delete, and whether
a natural-order delete removes the base row); then the base file is read batch by batch and
only rows whose key the logs touch (a hash lookup) are compared with their key's outcome.
A batch no log touches passes through without a copy; merged batches are emitted as they
are ready, and the log records no base row took (inserts) come last. As in Hudi's merged
reader, a key's log outcome is merged into the first base row holding that key. Slices
with expression blocks are merged whole (``expressions.py``).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudisql.errors import CorruptTableError, HudiSqlError, UnsupportedFormatError
from hudisql.table.format.fsview import FileSlice, VisibleInstants
from hudisql.table.format.log.format import BlockType, DeleteRecord, LogBlockInfo
from hudisql.table.format.log.reader import (
    decode_data_block,
    decode_delete_block,
    scan_blocks,
    scan_log_file,
)
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.schema import META_COLUMNS, avro_to_arrow, with_meta_fields
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.compacted import merge_order
from hudisql.table.read.expressions import apply_expressions, block_expressions, merge_in_log_order
from hudisql.table.read.reconcile import BlockVerdict, ReconcileMode, Verdict, judge_log_blocks
from hudisql.table.read.vanished_files import read_log_bytes, read_log_file, vanished_file_error

__all__ = [
    "RECORD_KEY_COLUMN",
    "CorruptLogBlockWarning",
    "MergedLog",
    "SliceReadReport",
    "conform_table",
    "log_touched_keys",
    "merge_file_slice",
    "merge_log_blocks",
    "plan_log_blocks",
    "read_file_slice",
    "stream_file_slice",
]

RECORD_KEY_COLUMN = "_hoodie_record_key"
#: Log files up to this size are read whole at once; larger ones are scanned header by
#: header and read only when they hold a block to merge.
EAGER_READ_BYTES = 1 << 20
#: Rows per base-file batch of a streamed merge.
STREAM_BATCH_ROWS = 65536

_DATA_BLOCKS = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA)
_MERGED_BLOCKS = (*_DATA_BLOCKS, BlockType.DELETE)
# Errors a damaged block's content can raise while it is decoded.
_DECODE_ERRORS = (CorruptTableError, ValueError, EOFError, IndexError, KeyError, OSError)


class CorruptLogBlockWarning(UserWarning):
    """A log block was skipped because it is corrupt; the read went on without it."""


@dataclass
class SliceReadReport:
    """What a merged read did with each log block of the slice."""

    merged: list[LogBlockInfo] = field(default_factory=list)
    corrupt: list[LogBlockInfo] = field(default_factory=list)
    rolled_back: list[LogBlockInfo] = field(default_factory=list)
    invisible: list[LogBlockInfo] = field(default_factory=list)
    replaced: list[LogBlockInfo] = field(default_factory=list)
    commands: list[LogBlockInfo] = field(default_factory=list)
    #: Blocks left by failed or duplicate task attempts (never merged).
    spurious: list[LogBlockInfo] = field(default_factory=list)
    #: Every block's verdict and its reason, in log order (decided from headers only).
    verdicts: list[BlockVerdict] = field(default_factory=list)


_REPORT_LISTS = {
    Verdict.CORRUPT: "corrupt",
    Verdict.ROLLED_BACK: "rolled_back",
    Verdict.NOT_VISIBLE: "invisible",
    Verdict.REPLACED: "replaced",
    Verdict.SPURIOUS: "spurious",
}


def plan_log_blocks(
    blocks: Sequence[LogBlockInfo],
    visible: VisibleInstants,
    *,
    reconcile: ReconcileMode | str = ReconcileMode.FULL,
) -> SliceReadReport:
    """Sort a slice's log blocks (in log order) into merged, corrupt, voided and skipped.

    Each block's verdict comes from :func:`hudisql.table.read.reconcile.judge_log_blocks`
    (header-only): blocks left by failed or duplicate task attempts are ``spurious``.

    Args:
        reconcile: ``full`` (the commit's record of committed log files, else block
            sequences), ``sequence`` (block sequences only) or ``off``.

    Returns:
        A report whose ``merged`` list holds the data and delete blocks a reader as of
        ``visible`` merges, in merge order (log order, a log-compacted block in the slot of
        the newest block it replaced: ``hudisql.table.read.compacted``); nothing is decoded here.
    """
    report = SliceReadReport()
    report.verdicts = judge_log_blocks(blocks, visible, reconcile)
    for verdict in report.verdicts:
        block = verdict.block
        if block.block_type == BlockType.COMMAND:
            report.commands.append(block)
        elif verdict.verdict == Verdict.VALID:
            continue  # merged, in merge order below
        elif verdict.verdict == Verdict.NOT_VISIBLE and block.block_type not in _MERGED_BLOCKS:
            continue  # CDC blocks are neither merged nor reported
        else:
            getattr(report, _REPORT_LISTS[verdict.verdict]).append(block)
    # A compacted block is merged in the slot of the newest block it replaced.
    report.merged = merge_order(report.verdicts)
    return report


def read_file_slice(
    storage: Storage,
    props: TableProperties,
    timeline: Timeline,
    file_slice: FileSlice,
    as_of: str | None = None,
    columns: Sequence[str] | None = None,
    *,
    schema: pa.Schema | None = None,
    visible: VisibleInstants | None = None,
    reconcile: ReconcileMode | str = ReconcileMode.FULL,
) -> pa.Table:
    """The merged rows of ``file_slice`` as of ``as_of``, meta columns first.

    Args:
        columns: the columns to return, in that order (default: all of ``schema``).
        schema: the Arrow schema (meta columns included) to return rows in; by default the
            union of the slice's own file schemas. Missing columns come back as nulls.
        visible: the instants a reader sees, when the caller already built them.
        reconcile: how blocks of failed or duplicate task attempts are found (see
            :func:`plan_log_blocks`); ``full`` by default.

    Returns:
        A ``pyarrow.Table``. Corrupt log blocks are skipped with a ``CorruptLogBlockWarning``.

    Raises:
        HudiSqlError: a requested column is not in the schema, or a column cannot be read
            as the schema's type.
        UnsupportedFormatError: a non-parquet base file or an HFile data block.
    """
    table, _ = merge_file_slice(
        storage, props, timeline, file_slice, as_of, columns, schema=schema, visible=visible,
        reconcile=reconcile,
    )
    return table


def merge_file_slice(
    storage: Storage,
    props: TableProperties,
    timeline: Timeline,
    file_slice: FileSlice,
    as_of: str | None = None,
    columns: Sequence[str] | None = None,
    *,
    schema: pa.Schema | None = None,
    visible: VisibleInstants | None = None,
    reconcile: ReconcileMode | str = ReconcileMode.FULL,
) -> tuple[pa.Table, SliceReadReport]:
    """Like :func:`read_file_slice`, also returning what was done with each log block.

    Returns:
        ``(table, report)``.
    """
    chunks, report, out_schema = _open_slice(
        storage, props, timeline, file_slice, as_of, columns, schema=schema, visible=visible,
        reconcile=reconcile, use_threads=True,
    )
    tables = list(chunks)
    if not tables:
        return out_schema.empty_table(), report
    return (tables[0] if len(tables) == 1 else pa.concat_tables(tables)), report


def stream_file_slice(
    storage: Storage,
    props: TableProperties,
    timeline: Timeline,
    file_slice: FileSlice,
    as_of: str | None = None,
    columns: Sequence[str] | None = None,
    *,
    schema: pa.Schema | None = None,
    visible: VisibleInstants | None = None,
    reconcile: ReconcileMode | str = ReconcileMode.FULL,
    batch_rows: int = STREAM_BATCH_ROWS,
) -> tuple[Iterator[pa.Table], SliceReadReport]:
    """The merged rows of ``file_slice`` as a stream of tables (see :func:`read_file_slice`).

    The log blocks are read, judged and decoded at once (errors are raised by this call);
    the base file is then read ``batch_rows`` rows at a time as the iterator is consumed,
    each chunk holding the merged rows of one base batch (single-threaded, for executors).
    The chunks together hold exactly the rows :func:`read_file_slice` returns.

    Returns:
        ``(chunks, report)``: an iterator of ``pyarrow.Table`` chunks in ``columns`` order
        (empty chunks are skipped) and the report of the log blocks.

    Raises:
        HudiSqlError: a requested column is not in the schema.
        UnsupportedFormatError: a non-parquet base file or an HFile data block.
    """
    chunks, report, _ = _open_slice(
        storage, props, timeline, file_slice, as_of, columns, schema=schema, visible=visible,
        reconcile=reconcile, use_threads=False, batch_rows=batch_rows,
    )
    return chunks, report


def log_touched_keys(
    storage: Storage,
    props: TableProperties,
    timeline: Timeline,
    file_slice: FileSlice,
    as_of: str | None = None,
    *,
    reconcile: ReconcileMode | str = ReconcileMode.FULL,
) -> pa.Array | None:
    """The distinct record keys the visible log blocks of ``file_slice`` update, insert or
    delete as of ``as_of``: the only keys whose base rows the merge may change.

    Returns:
        A string array (empty when no visible block holds records), or None when the slice
        has expression blocks, which are applied to the whole slice.

    Raises:
        UnsupportedFormatError: an HFile data block, or a table without the record key
            meta column.
    """
    logs = _record_logs(storage, timeline, file_slice, as_of, reconcile)
    if logs is None:
        return None
    if not logs.ordered:
        return pa.array([], pa.string())
    tables = [item for item in logs.ordered if isinstance(item, pa.Table)]
    work = _slice_schema(None, tables, timeline) if tables else pa.schema(
        [pa.field(RECORD_KEY_COLUMN, pa.string())])
    merger = _Merger(props, work, [RECORD_KEY_COLUMN])
    return merger.reduce_log(logs.ordered).keys.cast(pa.string())


@dataclass
class MergedLog:
    """The outcome of a run of log blocks merged among themselves (a log compaction's input).

    ``records`` holds each key's winning record (meta columns kept), in log order;
    ``deletes`` the deletes that keep the same effect on what comes before and after them,
    in the order they must be written (before the records): a natural-order delete for a
    key whose merge removed everything before it (followed by its record, or its ordered
    delete), and each key's winning delete.
    """

    records: pa.Table
    deletes: list[DeleteRecord]
    #: The blocks merged, in merge order.
    blocks: list[LogBlockInfo]


def merge_log_blocks(
    log_bytes: Mapping[str, bytes],
    blocks: Sequence[LogBlockInfo],
    props: TableProperties,
    schema: pa.Schema,
    partition_path: str,
) -> MergedLog:
    """Merge ``blocks`` (data and delete blocks, in merge order) into one outcome per key.

    Merging the result in the blocks' place gives every reader the rows the blocks gave:
    the winners keep their ordering values, meta columns and relative log order, and a
    natural-order delete that wiped a key's earlier items is kept in front of it.

    Args:
        log_bytes: the content of each log file the blocks are in, by ``block.log_file``.
        schema: the Arrow schema (meta columns included) of the records returned.

    Raises:
        HudiSqlError: an expression block among ``blocks`` (applied only with a base row),
            or a block whose content does not decode.
        UnsupportedFormatError: an HFile data block.
    """
    ordered: list[pa.Table | _Deletes] = []
    for block in blocks:
        if block_expressions(block) is not None:
            raise HudiSqlError(
                f"log block of instant {block.instant_time} in {block.log_file} is an "
                "expression block: it is applied to base rows and cannot be log-compacted"
            )
        decoded = _decode(log_bytes[block.log_file], block)
        if decoded is None:
            raise HudiSqlError(
                f"log block of instant {block.instant_time} in {block.log_file} does not "
                "decode: roll back that instant before compacting its log"
            )
        ordered.append(decoded)
    merger = _Merger(props, schema, schema.names)
    if not ordered:
        return MergedLog(schema.empty_table(), [], list(blocks))
    outcome = merger.reduce_log(ordered)
    winners = outcome.record[outcome.record >= 0]
    records = outcome.records.take(pa.array(np.sort(winners), pa.int64()))
    deletes: list[DeleteRecord] = []
    keys = outcome.keys.to_pylist()
    values = outcome.ordering.to_pylist() if outcome.ordering is not None else None
    for k, key in enumerate(keys):
        is_delete = outcome.record[k] < 0
        natural = outcome.tier is None or int(outcome.tier[k]) == 0
        if outcome.wiped[k] and not (is_delete and natural):
            deletes.append(DeleteRecord(key, partition_path, 0))
        if is_delete:
            value = 0 if natural or values is None else values[k]
            deletes.append(DeleteRecord(key, partition_path, value))
    return MergedLog(conform_table(records, schema), deletes, list(blocks))


@dataclass
class _DecodedLogs:
    """A slice's judged log blocks, decoded in log order."""

    report: SliceReadReport
    ordered: list[pa.Table | _Deletes]
    #: Expression blocks: index in ``ordered`` -> column ops, applied at their log position.
    expressions: dict[int, dict[str, str]]


def _record_logs(
    storage: Storage,
    timeline: Timeline,
    file_slice: FileSlice,
    as_of: str | None,
    reconcile: ReconcileMode | str,
) -> _DecodedLogs | None:
    """The slice's log blocks visible as of ``as_of``, decoded; None when some are expression
    blocks, which apply to the whole slice (so no per-key reading of the logs is exact)."""
    logs = _decode_logs(storage, timeline, file_slice, VisibleInstants(timeline, as_of),
                        reconcile)
    return None if logs.expressions else logs


def _decode_logs(
    storage: Storage,
    timeline: Timeline,
    file_slice: FileSlice,
    visible: VisibleInstants,
    reconcile: ReconcileMode | str,
) -> _DecodedLogs:
    """Read, judge and decode the slice's log blocks (corrupt ones warned about, skipped)."""
    blocks: list[LogBlockInfo] = []
    log_bytes: dict[str, bytes] = {}
    for log in file_slice.log_files:
        if log.size <= EAGER_READ_BYTES:  # one request: read it whole, scan the bytes
            data = read_log_bytes(storage, timeline, visible, file_slice, log)
            if data is None:
                continue  # a failed write's file, removed by its rollback after the listing
            log_bytes[log.path] = data
            blocks.extend(scan_blocks(data, log_file=log.path))
        else:  # headers only: a large file a log compaction replaced is never read
            scanned = read_log_file(partial(scan_log_file, storage, log.path), timeline,
                                    visible, file_slice, log)
            if scanned is None:
                continue  # as above
            blocks.extend(scanned)
    report = plan_log_blocks(blocks, visible, reconcile=reconcile)
    for path in dict.fromkeys(b.log_file for b in report.merged):
        if path not in log_bytes:
            log_bytes[path] = storage.read_bytes(path)
    for block in report.corrupt:
        _warn_corrupt(block)
    ordered: list[pa.Table | _Deletes] = []
    merged: list[LogBlockInfo] = []
    expressions: dict[int, dict[str, str]] = {}
    for block in report.merged:
        decoded = _decode(log_bytes[block.log_file], block)
        if decoded is None:
            report.corrupt.append(block)
            continue
        ops = block_expressions(block)
        if ops is not None:
            expressions[len(ordered)] = ops
        ordered.append(decoded)
        merged.append(block)
    report.merged = merged
    return _DecodedLogs(report, ordered, expressions)


def _open_slice(
    storage: Storage,
    props: TableProperties,
    timeline: Timeline,
    file_slice: FileSlice,
    as_of: str | None,
    columns: Sequence[str] | None,
    *,
    schema: pa.Schema | None,
    visible: VisibleInstants | None,
    reconcile: ReconcileMode | str,
    use_threads: bool,
    batch_rows: int = STREAM_BATCH_ROWS,
) -> tuple[Iterator[pa.Table], SliceReadReport, pa.Schema]:
    """Decode the slice's logs; returns the chunk iterator, the report and the out schema."""
    visible = visible if visible is not None else VisibleInstants(timeline, as_of)
    logs = _decode_logs(storage, timeline, file_slice, visible, reconcile)
    ordered, expressions = logs.ordered, logs.expressions
    data_tables = [item for item in ordered if isinstance(item, pa.Table)]

    base_schema = _base_schema(storage, file_slice)
    target = schema or _slice_schema(base_schema, data_tables, timeline)
    out_columns = list(columns) if columns is not None else target.names
    missing = [c for c in out_columns if c not in target.names]
    if missing:
        raise HudiSqlError(
            f"column(s) {missing} are not in the table (file group {file_slice.file_id} of "
            f"partition {file_slice.partition_path!r}); its columns are {target.names}"
        )
    merger = _Merger(props, target, out_columns)
    out_schema = pa.schema([target.field(c) for c in out_columns])
    base = _iter_base(storage, file_slice, base_schema, merger.work_schema, use_threads,
                      batch_rows)
    if not ordered:
        chunks: Iterator[pa.Table] = base
    elif expressions:
        chunks = _whole(merger, base, ordered, expressions)
    else:
        chunks = merger.stream(base, merger.reduce_log(ordered))
    return _select(chunks, out_columns), logs.report, out_schema


def _select(chunks: Iterator[pa.Table], out_columns: list[str]) -> Iterator[pa.Table]:
    for chunk in chunks:
        if chunk.num_rows:
            yield chunk.select(out_columns)


def _whole(
    merger: _Merger,
    base: Iterator[pa.Table],
    ordered: list[pa.Table | _Deletes],
    expressions: Mapping[int, Mapping[str, str]],
) -> Iterator[pa.Table]:
    """Expression blocks apply to the whole merged state: merge the slice in one piece."""
    tables = list(base)
    rows = pa.concat_tables(tables) if tables else merger.work_schema.empty_table()
    yield merge_in_log_order(merger.merge, rows, ordered, expressions, merger.apply)


# -- schemas ---------------------------------------------------------------------------


def conform_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: cast where types differ, nulls where absent.

    Raises:
        HudiSqlError: a column cannot be cast to the schema's type.
    """
    arrays = []
    for target in schema:
        if target.name not in table.column_names:
            arrays.append(pa.nulls(table.num_rows, target.type))
            continue
        column = table.column(target.name)
        if not column.type.equals(target.type, check_metadata=False):
            try:
                column = column.cast(target.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise HudiSqlError(
                    f"column {target.name!r} of type {column.type} cannot be read as "
                    f"{target.type}: {exc}"
                ) from exc
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=schema)


def _base_schema(storage: Storage, file_slice: FileSlice) -> pa.Schema | None:
    base = file_slice.base_file
    if base is None:
        return None
    if not base.path.endswith(".parquet"):
        raise UnsupportedFormatError(
            f"base file {base.path} is not parquet; hudisql reads parquet base files only"
        )
    try:
        with storage.open_input_file(base.path) as f:
            return pq.read_schema(f)
    except FileNotFoundError:
        raise vanished_file_error(base.path, file_slice, base.instant) from None


def _slice_schema(
    base_schema: pa.Schema | None, block_tables: list[pa.Table], timeline: Timeline
) -> pa.Schema:
    schemas = ([base_schema] if base_schema is not None else []) + [t.schema for t in block_tables]
    if schemas:
        unified = pa.unify_schemas(
            [s.remove_metadata() for s in schemas], promote_options="permissive"
        )
        return _meta_first(unified)
    avro = timeline.latest_schema()
    if avro is None:
        raise CorruptTableError(
            "a file slice has neither base file nor data blocks and the timeline has no "
            "schema: no commit records the table's columns"
        )
    return avro_to_arrow(with_meta_fields(json.loads(avro)))


def _meta_first(schema: pa.Schema) -> pa.Schema:
    meta = [schema.field(n) for n in META_COLUMNS if n in schema.names]
    rest = [f for f in schema if f.name not in META_COLUMNS]
    return pa.schema(meta + rest)


def _iter_base(
    storage: Storage,
    file_slice: FileSlice,
    base_schema: pa.Schema | None,
    work: pa.Schema,
    use_threads: bool,
    batch_rows: int,
) -> Iterator[pa.Table]:
    """The base file's rows in ``work``'s columns, ``batch_rows`` at a time (single-threaded),
    or all at once with ``use_threads``."""
    base = file_slice.base_file
    if base is None or base_schema is None:
        return
    wanted = [n for n in work.names if n in base_schema.names]
    with storage.open_input_file(base.path) as f:
        parquet = pq.ParquetFile(f)
        if use_threads:  # a whole-slice read: one multi-threaded read is fastest
            # (ParquetFile, not pq.read_table: no pyarrow.dataset import in fresh workers)
            yield conform_table(parquet.read(columns=wanted, use_threads=True), work)
            return
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=wanted,
                                          use_threads=use_threads):
            yield conform_table(pa.Table.from_batches([batch]), work)


# -- merging ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Deletes:
    keys: pa.Array
    ordering: list[Any]


def _decode(data: bytes, block: LogBlockInfo) -> pa.Table | _Deletes | None:
    """The content of a data or delete block; None (with a warning) when it does not decode."""
    if block.block_type == BlockType.HFILE_DATA:
        raise UnsupportedFormatError(
            f"log file {block.log_file} holds an HFile data block (instant "
            f"{block.instant_time}); hudisql reads Avro and parquet data blocks only"
        )
    try:
        if block.block_type == BlockType.DELETE:
            records = decode_delete_block(data, block)
            keys = pa.array([r.record_key for r in records], pa.string())
            return _Deletes(keys, [r.ordering_value for r in records])
        return decode_data_block(data, block)
    except _DECODE_ERRORS as exc:
        _warn_corrupt(block, f"content does not decode: {exc}")
        return None


@dataclass
class _LogItems:
    """A slice's log records and deletes in log order, in the merger's work schema."""

    records: pa.Table
    #: Log position of each record (block by block, record by record within a block).
    record_pos: np.ndarray
    deleted_keys: pa.Array
    del_ord: list[Any]
    del_pos: np.ndarray


@dataclass
class _Ranking:
    """Items (records then deletes) grouped by key, and each key's winning item."""

    keys: pa.Array  # the distinct keys, one per group id
    winner: np.ndarray  # winning item per group id
    tier: np.ndarray | None  # per item: 0 natural-order delete, 1 no ordering value, 2 one
    ordering: pa.Array | None  # per item: its ordering value
    wiped: np.ndarray  # per group id: a natural-order delete removes every earlier item


@dataclass
class _LogOutcome:
    """What the logs decide per distinct record key, before any base row is seen."""

    records: pa.Table
    keys: pa.Array
    #: Per key: the winning log record's row in ``records``, -1 when a delete wins.
    record: np.ndarray
    #: Per key: a natural-order delete removes the base row whatever its ordering value.
    wiped: np.ndarray
    #: Per key: the winner's tier and ordering value (None without an ordering field).
    tier: np.ndarray | None
    ordering: pa.Array | None
    #: Per key: a base row already took this key's outcome.
    consumed: np.ndarray


class _Merger:
    """Merges base rows with log records per record key (vectorised)."""

    def __init__(self, props: TableProperties, target: pa.Schema, out_columns: list[str]) -> None:
        self.key = RECORD_KEY_COLUMN
        self.table_name = props.table_name
        self.has_key = self.key in target.names
        merge_mode = props.merge_mode
        ordering = props.precombine_field
        if merge_mode == "COMMIT_TIME_ORDERING" or ordering not in target.names:
            ordering = None
        self.ordering = ordering
        needed = set(out_columns) | {self.key, ordering}
        self.work_schema = pa.schema([f for f in target if f.name in needed])

    def _check_key(self) -> None:
        if not self.has_key:
            raise UnsupportedFormatError(
                f"table {self.table_name} has no {RECORD_KEY_COLUMN} column to merge its "
                "log files by: tables without meta fields (virtual keys) are not supported"
            )

    def _log_items(self, blocks: list[pa.Table | _Deletes]) -> _LogItems:
        log_tables = [conform_table(b, self.work_schema) for b in blocks if isinstance(b, pa.Table)]
        log_data = pa.concat_tables(log_tables) if log_tables else self.work_schema.empty_table()
        # Positions in log order: block by block, and record by record within a block.
        data_pos: list[np.ndarray] = [np.zeros(0, np.int64)]
        del_keys: list[pa.Array] = []
        del_ord: list[Any] = []
        del_pos: list[np.ndarray] = [np.zeros(0, np.int64)]
        cursor = 0
        for block in blocks:
            n = block.num_rows if isinstance(block, pa.Table) else len(block.keys)
            positions = np.arange(cursor, cursor + n, dtype=np.int64)
            cursor += n
            if isinstance(block, pa.Table):
                data_pos.append(positions)
            else:
                del_keys.append(block.keys)
                del_ord.extend(block.ordering)
                del_pos.append(positions)
        deleted_keys = pa.concat_arrays(del_keys) if del_keys else pa.array([], pa.string())
        return _LogItems(log_data, np.concatenate(data_pos), deleted_keys, del_ord,
                         np.concatenate(del_pos))

    def merge(self, base: pa.Table, blocks: list[pa.Table | _Deletes]) -> pa.Table:
        """The base rows merged with the log blocks (in log order), one row per key.

        Used whole (for slices with expression blocks); :meth:`stream` is its streaming form.

        Raises:
            UnsupportedFormatError: the table has no record key column to merge by.
        """
        self._check_key()
        log = self._log_items(blocks)
        log_data = log.records
        log_keys = pa.concat_arrays(
            [c.cast(pa.string()) for c in log_data.column(self.key).chunks] + [log.deleted_keys]
        )
        # Only base rows a log touches take part in the merge; the rest pass through.
        touched = pc.is_in(base.column(self.key), value_set=pc.unique(log_keys))
        touched = pc.fill_null(touched, False)
        if pc.any(touched).as_py():
            untouched = base.filter(pc.invert(touched))
            candidates = pa.concat_tables([base.filter(touched), log_data])
        else:
            untouched, candidates = base, log_data  # inserts only: the base passes as is
        n_base = candidates.num_rows - log_data.num_rows
        # Base rows come before every log record.
        positions = np.concatenate([np.arange(-n_base, 0, dtype=np.int64), log.record_pos])
        ranking = self._rank(candidates, positions, log.deleted_keys, log.del_ord, log.del_pos)
        winners = ranking.winner[ranking.winner < candidates.num_rows]
        return pa.concat_tables([untouched, candidates.take(pa.array(np.sort(winners)))])

    def reduce_log(self, blocks: list[pa.Table | _Deletes]) -> _LogOutcome:
        """Each log key's outcome: its winning log record or delete (see the module notes).

        Raises:
            UnsupportedFormatError: the table has no record key column to merge by.
        """
        self._check_key()
        log = self._log_items(blocks)
        ranking = self._rank(log.records, log.record_pos, log.deleted_keys, log.del_ord,
                             log.del_pos)
        n_rows, winner = log.records.num_rows, ranking.winner
        record = np.where(winner < n_rows, winner, -1)
        tier = ranking.tier[winner] if ranking.tier is not None else None
        ordering = ranking.ordering.take(pa.array(winner)) if ranking.ordering is not None else None
        return _LogOutcome(log.records, ranking.keys, record, ranking.wiped, tier, ordering,
                           np.zeros(len(ranking.keys), bool))

    def stream(self, base: Iterator[pa.Table], outcome: _LogOutcome) -> Iterator[pa.Table]:
        """Base batches merged with the logs' ``outcome``, then the log-only records."""
        for batch in base:
            yield self._resolve(batch, outcome)
        left = np.flatnonzero(~outcome.consumed & (outcome.record >= 0))
        if len(left):
            yield outcome.records.take(pa.array(np.sort(outcome.record[left])))

    def _resolve(self, batch: pa.Table, outcome: _LogOutcome) -> pa.Table:
        """One base batch with the outcomes of the keys it holds applied."""
        lost, emit = self.decide(batch, outcome)
        if not len(lost) and not len(emit):
            return batch  # no log touches this batch, or its base rows win: no copy
        keep = np.ones(batch.num_rows, bool)
        keep[lost] = False
        kept = batch.filter(pa.array(keep))
        if not len(emit):
            return kept
        return pa.concat_tables([kept, outcome.records.take(pa.array(emit))])

    def decide(self, batch: pa.Table, outcome: _LogOutcome) -> tuple[np.ndarray, np.ndarray]:
        """Per base batch (in base order, after every earlier batch of the slice): the rows
        that lose to their key's log outcome, and the rows of ``outcome.records`` that take
        their place (sorted); the keys found are marked consumed.

        ``batch`` needs only the key and ordering columns.
        """
        none = np.zeros(0, np.int64)
        found = pc.index_in(batch.column(self.key), value_set=outcome.keys)
        if found.null_count == len(found):
            return none, none
        index = np.asarray(pc.fill_null(found, -1)).astype(np.int64, copy=False)
        rows = np.flatnonzero(index >= 0)
        keys = index[rows]
        fresh = ~outcome.consumed[keys]
        rows, keys = rows[fresh], keys[fresh]
        # A key's outcome merges into the first base row holding it; later ones pass.
        keys, first = np.unique(keys, return_index=True)
        rows = rows[first]
        if not len(rows):
            return none, none
        outcome.consumed[keys] = True
        base_wins = self._base_wins(batch, rows, keys, outcome)
        emit = outcome.record[keys[~base_wins]]
        return rows[~base_wins], np.sort(emit[emit >= 0])

    def _base_wins(
        self, batch: pa.Table, rows: np.ndarray, keys: np.ndarray, outcome: _LogOutcome
    ) -> np.ndarray:
        """Per touched base row: does it beat its key's log winner?

        The full ranking is (tier, ordering value, is delete, log position), greatest
        first, and a base row precedes every log item: it wins only on a greater tier, or
        on a greater ordering value within tier 2; a natural-order delete wipes it.
        """
        if self.ordering is None or outcome.tier is None or outcome.ordering is None:
            return np.zeros(len(rows), bool)  # the latest item always wins
        base_ord = batch.column(self.ordering).take(pa.array(rows))
        base_tier = np.where(np.asarray(base_ord.is_valid()), 2, 1).astype(np.int8)
        log_tier = outcome.tier[keys]
        log_ord = outcome.ordering.take(pa.array(keys))
        greater = np.asarray(pc.fill_null(pc.greater(base_ord, log_ord), False))
        wins = (base_tier > log_tier) | ((base_tier == 2) & (log_tier == 2) & greater)
        result: np.ndarray = wins & ~outcome.wiped[keys]
        return result

    def apply(self, state: pa.Table, block: pa.Table | _Deletes, ops: Mapping[str, str]) -> (
        pa.Table
    ):
        """``state`` with the expression data ``block`` applied (see ``expressions.py``)."""
        assert isinstance(block, pa.Table), "expression blocks are data blocks"
        return apply_expressions(state, conform_table(block, self.work_schema), ops, self.key)

    def _rank(
        self,
        candidates: pa.Table,
        positions: np.ndarray,
        deleted_keys: pa.Array,
        del_ord: list[Any],
        del_pos: np.ndarray,
    ) -> _Ranking:
        """Group the items (records, then deletes) by key and pick each key's winner."""
        n_rows, n_del = candidates.num_rows, len(deleted_keys)
        keys = pa.concat_arrays(
            [c.cast(pa.string()) for c in candidates.column(self.key).chunks] + [deleted_keys]
        )
        keys = pc.fill_null(keys, "")
        encoded = pc.dictionary_encode(keys)
        gid = np.asarray(encoded.indices, dtype=np.int64)
        n_groups = len(encoded.dictionary)
        pos = np.concatenate([positions, del_pos])
        is_delete = np.concatenate([np.zeros(n_rows, np.int8), np.ones(n_del, np.int8)])
        item = np.arange(n_rows + n_del, dtype=np.int64)
        columns: dict[str, Any] = {"gid": gid, "pos": pos, "is_delete": is_delete, "item": item}
        sort_keys = [("gid", "ascending")]
        tier: np.ndarray | None = None
        ordering: pa.Array | None = None
        if self.ordering is not None:
            ord_type = self.work_schema.field(self.ordering).type
            record_ord = candidates.column(self.ordering).combine_chunks()
            delete_ord, natural = _delete_ordering(del_ord, ord_type)
            ordering = pa.concat_arrays([record_ord, delete_ord])
            tier = np.where(np.asarray(ordering.is_valid()), 2, 1).astype(np.int8)
            nat = np.concatenate([np.zeros(n_rows, bool), natural])
            tier[nat] = 0
            columns.update(tier=tier, ord=ordering)
            sort_keys += [("tier", "descending"), ("ord", "descending")]
            sort_keys += [("is_delete", "descending")]
        else:
            nat = is_delete.astype(bool)
        # A natural-order delete wipes every earlier item of its key.
        last_natural = np.full(n_groups, np.iinfo(np.int64).min)
        np.maximum.at(last_natural, gid[nat], pos[nat])
        keep = pos >= last_natural[gid]
        items = pa.table(columns).filter(pa.array(keep))
        order = pc.sort_indices(items, sort_keys=[*sort_keys, ("pos", "descending")])
        ranked_gid = np.asarray(items.column("gid").take(order))
        ranked_item = np.asarray(items.column("item").take(order))
        first = np.ones(len(ranked_gid), bool)
        first[1:] = ranked_gid[1:] != ranked_gid[:-1]
        # Sorted by group id and every group keeps an item: winner[g] is group g's.
        wiped = last_natural > np.iinfo(np.int64).min
        return _Ranking(encoded.dictionary, ranked_item[first], tier, ordering, wiped)


def _delete_ordering(values: list[Any], ord_type: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """Delete ordering values as ``ord_type`` and a mask of natural-order deletes."""
    natural = np.array([_is_natural(v) for v in values], dtype=bool)
    if not values:
        return pa.nulls(0, ord_type), natural
    cleaned = [None if n else v for v, n in zip(values, natural, strict=True)]
    try:
        raw = pa.array(cleaned)
        if _comparable(raw.type, ord_type):
            return raw.cast(ord_type), natural
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        pass
    # Hudi compares a delete's ordering value only with one of the same class; otherwise
    # the delete takes effect in log order.
    return pa.nulls(len(values), ord_type), np.ones(len(values), dtype=bool)


def _is_natural(value: Any) -> bool:
    return value is None or (type(value) is int and value == 0)


def _comparable(source: pa.DataType, target: pa.DataType) -> bool:
    types = pa.types
    if types.is_null(source):
        return True
    numeric = (types.is_integer, types.is_floating, types.is_decimal)
    if any(f(source) for f in numeric):
        to_time = bool(types.is_integer(source) and types.is_temporal(target))
        return to_time or any(f(target) for f in numeric)
    if types.is_string(source) or types.is_large_string(source):
        return bool(types.is_string(target) or types.is_large_string(target))
    return bool(source.equals(target))


def _warn_corrupt(block: LogBlockInfo, reason: str | None = None) -> None:
    warnings.warn(
        f"skipped a corrupt log block at byte {block.position} of {block.log_file}: "
        f"{reason or block.corrupt_reason or 'corrupt'}",
        CorruptLogBlockWarning,
        stacklevel=3,
    )
