"""Merged read of one file slice: its base file plus the valid blocks of its log files.

The rules (``shared/design/FORMAT.md``): a data or delete block counts only when its
``INSTANT_TIME`` is a visible instant (completed, not rolled back, no later than ``as_of``);
a rollback command block voids every block of its target instant wherever it sits in the
slice's logs; a log-compacted block stands in for the blocks it names; corrupt blocks are
skipped and reported, never merged. Per record key the record with the greatest ordering
(precombine) value wins and ties go to the later record in log order; a delete removes the
key unless a record with a greater ordering value follows. A delete without an ordering
value (Spark writes int 0) is "natural order": it removes what came before it and loses to
whatever follows. An expression block (``expressions.py``) is applied to the merged state at
its position in the log, for the keys it touches.

The merge is vectorised: only base rows whose key appears in a log are merged (found with
a hash lookup); the winners come from one sort of those candidates by key and ordering.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudisql.errors import CorruptTableError, HudiSqlError, UnsupportedFormatError
from hudisql.table.expressions import apply_expressions, block_expressions, merge_in_log_order
from hudisql.table.fsview import FileSlice, VisibleInstants
from hudisql.table.log.format import BlockType, LogBlockInfo
from hudisql.table.log.reader import decode_data_block, decode_delete_block, scan_blocks
from hudisql.table.properties import TableProperties
from hudisql.table.reconcile import BlockVerdict, ReconcileMode, Verdict, judge_log_blocks
from hudisql.table.schema import META_COLUMNS, avro_to_arrow, with_meta_fields
from hudisql.table.storage import Storage
from hudisql.table.timeline import Timeline

__all__ = [
    "RECORD_KEY_COLUMN",
    "CorruptLogBlockWarning",
    "SliceReadReport",
    "conform_table",
    "merge_file_slice",
    "plan_log_blocks",
    "read_file_slice",
]

RECORD_KEY_COLUMN = "_hoodie_record_key"

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

    Each block's verdict comes from :func:`hudisql.table.reconcile.judge_log_blocks`
    (header-only): blocks left by failed or duplicate task attempts are ``spurious``.

    Args:
        reconcile: ``full`` (the commit's record of committed log files, else block
            sequences), ``sequence`` (block sequences only) or ``off``.

    Returns:
        A report whose ``merged`` list holds, in log order, the data and delete blocks a
        reader as of ``visible`` merges; nothing is decoded here.
    """
    report = SliceReadReport()
    report.verdicts = judge_log_blocks(blocks, visible, reconcile)
    for verdict in report.verdicts:
        block = verdict.block
        if block.block_type == BlockType.COMMAND:
            report.commands.append(block)
        elif verdict.verdict == Verdict.VALID:
            report.merged.append(block)
        elif verdict.verdict == Verdict.NOT_VISIBLE and block.block_type not in _MERGED_BLOCKS:
            continue  # CDC blocks are neither merged nor reported
        else:
            getattr(report, _REPORT_LISTS[verdict.verdict]).append(block)
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
    visible = visible if visible is not None else VisibleInstants(timeline, as_of)
    log_bytes: dict[str, bytes] = {}
    blocks: list[LogBlockInfo] = []
    for log in file_slice.log_files:
        data = storage.read_bytes(log.path)
        log_bytes[log.path] = data
        blocks.extend(scan_blocks(data, log_file=log.path))
    report = plan_log_blocks(blocks, visible, reconcile=reconcile)
    for block in report.corrupt:
        _warn_corrupt(block)

    ordered: list[pa.Table | _Deletes] = []
    merged: list[LogBlockInfo] = []
    # Expression blocks (index in ``ordered`` -> column ops) apply at their log position.
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
    base = _read_base(storage, file_slice, base_schema, merger.work_schema)
    if not ordered:
        return base.select(out_columns), report
    if expressions:
        rows = merge_in_log_order(merger.merge, base, ordered, expressions, merger.apply)
        return rows.select(out_columns), report
    return merger.merge(base, ordered).select(out_columns), report


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
    with storage.open_input_file(base.path) as f:
        return pq.read_schema(f)


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


def _read_base(
    storage: Storage, file_slice: FileSlice, base_schema: pa.Schema | None, work: pa.Schema
) -> pa.Table:
    base = file_slice.base_file
    if base is None or base_schema is None:
        return work.empty_table()
    wanted = [n for n in work.names if n in base_schema.names]
    with storage.open_input_file(base.path) as f:
        table = pq.read_table(f, columns=wanted)
    return conform_table(table, work)


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

    def merge(self, base: pa.Table, blocks: list[pa.Table | _Deletes]) -> pa.Table:
        """The base rows merged with the log blocks (in log order), one row per key.

        Raises:
            UnsupportedFormatError: the table has no record key column to merge by.
        """
        if not self.has_key:
            raise UnsupportedFormatError(
                f"table {self.table_name} has no {RECORD_KEY_COLUMN} column to merge its "
                "log files by: tables without meta fields (virtual keys) are not supported"
            )
        log_tables = [conform_table(b, self.work_schema) for b in blocks if isinstance(b, pa.Table)]
        log_data = pa.concat_tables(log_tables) if log_tables else self.work_schema.empty_table()
        # Positions in log order: block by block, and record by record within a block.
        data_pos: list[np.ndarray] = []
        del_keys: list[pa.Array] = []
        del_ord: list[Any] = []
        del_pos: list[np.ndarray] = []
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
        log_keys = pa.concat_arrays(
            [c.cast(pa.string()) for c in log_data.column(self.key).chunks] + [deleted_keys]
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
        positions = np.concatenate([np.arange(-n_base, 0, dtype=np.int64), *data_pos])
        winners = self._winners(candidates, positions, deleted_keys, del_ord, del_pos)
        return pa.concat_tables([untouched, candidates.take(winners)])

    def apply(self, state: pa.Table, block: pa.Table | _Deletes, ops: Mapping[str, str]) -> (
        pa.Table
    ):
        """``state`` with the expression data ``block`` applied (see ``expressions.py``)."""
        assert isinstance(block, pa.Table), "expression blocks are data blocks"
        return apply_expressions(state, conform_table(block, self.work_schema), ops, self.key)

    def _winners(
        self,
        candidates: pa.Table,
        positions: np.ndarray,
        deleted_keys: pa.Array,
        del_ord: list[Any],
        del_pos: list[np.ndarray],
    ) -> pa.Array:
        n_rows, n_del = candidates.num_rows, len(deleted_keys)
        keys = pa.concat_arrays(
            [c.cast(pa.string()) for c in candidates.column(self.key).chunks] + [deleted_keys]
        )
        keys = pc.fill_null(keys, "")
        gid = np.asarray(pc.dictionary_encode(keys).indices, dtype=np.int64)
        pos = np.concatenate([positions, *del_pos]) if del_pos else positions
        is_delete = np.concatenate([np.zeros(n_rows, np.int8), np.ones(n_del, np.int8)])
        row = np.concatenate([np.arange(n_rows, dtype=np.int64), np.full(n_del, -1, np.int64)])
        columns: dict[str, Any] = {"gid": gid, "pos": pos, "is_delete": is_delete, "row": row}
        sort_keys = [("gid", "ascending")]
        if self.ordering is not None:
            ord_type = self.work_schema.field(self.ordering).type
            record_ord = candidates.column(self.ordering).combine_chunks()
            delete_ord, natural = _delete_ordering(del_ord, ord_type)
            ordering = pa.concat_arrays([record_ord, delete_ord])
            # tier: 0 a natural-order delete, 1 no ordering value, 2 an ordering value.
            tier = np.where(np.asarray(ordering.is_valid()), 2, 1).astype(np.int8)
            nat = np.concatenate([np.zeros(n_rows, bool), natural])
            tier[nat] = 0
            columns.update(tier=tier, ord=ordering)
            sort_keys += [("tier", "descending"), ("ord", "descending")]
            sort_keys += [("is_delete", "descending")]
        else:
            nat = is_delete.astype(bool)
        # A natural-order delete wipes every earlier item of its key.
        last_natural = np.full(int(gid.max()) + 1 if len(gid) else 0, np.iinfo(np.int64).min)
        np.maximum.at(last_natural, gid[nat], pos[nat])
        keep = pos >= last_natural[gid]
        items = pa.table(columns).filter(pa.array(keep))
        order = pc.sort_indices(items, sort_keys=[*sort_keys, ("pos", "descending")])
        ranked_gid = np.asarray(items.column("gid").take(order))
        ranked_row = np.asarray(items.column("row").take(order))
        first = np.ones(len(ranked_gid), bool)
        first[1:] = ranked_gid[1:] != ranked_gid[:-1]
        winners = ranked_row[first]
        return pa.array(np.sort(winners[winners >= 0]))


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
