"""What one commit did to one file group's rows, as the record and secondary indexes see it.

:meth:`RowChanges.of` compares a file group's rows before and after a commit (record key and
the secondary index columns) in Arrow: keys that appeared, keys that vanished, and per
secondary column the ``(value, key)`` pairs that went and came. A write that knows which
rows it replaced, removed and added compares only those (:func:`replaced_rows`: a
copy-on-write merge, a log file's records). The Spark write computes them on its executors
and hands them to the metadata participant as Arrow IPC (:meth:`RowChanges.to_ipc`; no
Python object per row on either side); otherwise the participant reads the slices itself.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.metadata.arrow_records import secondary_strings
from hudisql.table.format.fsview import FileSlice, LogFile, VisibleInstants
from hudisql.table.format.schema import META_COLUMNS
from hudisql.table.format.timeline import Timeline
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable
from hudisql.table.write.slices import event_time_field

__all__ = ["PAIRS", "AsOf", "Pair", "RowChanges", "log_write_changes", "replaced_rows"]

RECORD_KEY = META_COLUMNS[2]
#: A secondary index entry: (value as the index stores it, record key).
Pair = tuple[str | None, str]
#: Secondary index entries as an Arrow table: the value as the index stores it, the key.
PAIRS = pa.schema([("value", pa.string()), ("key", pa.string())])
#: The wire form of :class:`RowChanges` (:meth:`RowChanges.to_ipc`): one row per key or
#: pair, ``kind`` saying which list it is in (inserted, removed, gone, added), ``column``
#: the secondary column of a pair.
_WIRE = pa.schema([("kind", pa.int8()), ("column", pa.string()), ("value", pa.string()),
                   ("key", pa.string())])
_INSERTED, _REMOVED, _GONE, _ADDED = range(4)
_COLUMNS_META = b"hudisql.secondary.columns"


def _column(rows: pa.Table, name: str) -> pa.Array:
    column = rows.column(name)
    return column.combine_chunks() if column.num_chunks else pa.array([], column.type)


def _no_keys() -> pa.Array:
    return pa.array([], pa.string())


def _pairs(values: Sequence[pa.Array], keys: Sequence[pa.Array]) -> pa.Table:
    """One pairs table (:data:`PAIRS`) of aligned value and key arrays."""
    if not values:
        return PAIRS.empty_table()
    return pa.Table.from_arrays([pa.concat_arrays(list(values)), pa.concat_arrays(list(keys))],
                                schema=PAIRS)


@dataclass
class RowChanges:
    """Keys new to and gone from one file group, and the secondary pairs that changed,
    as Arrow arrays (a write can change millions of rows: no Python object per row)."""

    #: Keys the file group holds after the commit and did not before (strings).
    inserted: pa.Array = field(default_factory=_no_keys)
    #: Keys the file group held before and does not after.
    removed: pa.Array = field(default_factory=_no_keys)
    #: Per secondary index column: (pairs gone, pairs added), tables of :data:`PAIRS`.
    secondary: dict[str, tuple[pa.Table, pa.Table]] = field(default_factory=dict)

    def pairs(self, column: str) -> tuple[list[Pair], list[Pair]]:
        """The (value, key) pairs gone and added in ``column``, as Python tuples."""
        return tuple(  # type: ignore[return-value]
            list(zip(t.column("value").to_pylist(), t.column("key").to_pylist(), strict=True))
            for t in self.secondary[column])

    def to_ipc(self) -> bytes:
        """The changes as Arrow IPC stream bytes (a Spark task hands them to the driver)."""
        parts: list[tuple[int, str | None, pa.Array | None, pa.Array]] = [
            (_INSERTED, None, None, self.inserted), (_REMOVED, None, None, self.removed)]
        for name, (gone, added) in self.secondary.items():
            parts += [(_GONE, name, _column(gone, "value"), _column(gone, "key")),
                      (_ADDED, name, _column(added, "value"), _column(added, "key"))]
        arrays: list[list[pa.Array]] = [[], [], [], []]
        for kind, column, values, keys in parts:
            n = len(keys)
            arrays[0].append(pa.repeat(pa.scalar(kind, pa.int8()), n))
            arrays[1].append(pa.repeat(pa.scalar(column, pa.string()), n))
            arrays[2].append(values if values is not None else pa.nulls(n, pa.string()))
            arrays[3].append(keys.cast(pa.string()))
        schema = _WIRE.with_metadata({_COLUMNS_META: json.dumps(list(self.secondary))})
        wire = pa.Table.from_arrays([pa.concat_arrays(a) for a in arrays], schema=schema)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as writer:
            writer.write_table(wire)
        return bytes(sink.getvalue().to_pybytes())

    @classmethod
    def from_ipc(cls, data: bytes) -> RowChanges:
        """The inverse of :meth:`to_ipc`."""
        wire = pa.ipc.open_stream(data).read_all()
        columns = json.loads((wire.schema.metadata or {})[_COLUMNS_META])
        kinds = np.asarray(_column(wire, "kind"))
        keys = _column(wire, "key")

        def rows(kind: int, column: str | None = None) -> pa.Array:
            mask = kinds == kind
            if column is not None:
                mask &= np.asarray(pc.equal(_column(wire, "column"), column)
                                   .to_numpy(zero_copy_only=False), dtype=bool)
            return pa.array(mask)

        out = cls(keys.filter(rows(_INSERTED)), keys.filter(rows(_REMOVED)))
        for column in columns:
            gone, added = rows(_GONE, column), rows(_ADDED, column)
            out.secondary[column] = (wire.filter(gone).select(["value", "key"]).cast(PAIRS),
                                     wire.filter(added).select(["value", "key"]).cast(PAIRS))
        return out

    @classmethod
    def of(
        cls, before: pa.Table | None, after: pa.Table | None, columns: Sequence[str]
    ) -> RowChanges:
        """The changes between a file group's rows before and after (None: no rows).

        Both tables hold ``_hoodie_record_key`` and ``columns``.
        """
        if before is None or after is None:
            return replaced_rows(before, np.zeros(0, np.int64), None,
                                 None if before is None else np.ones(before.num_rows, bool),
                                 after, columns)
        old_keys = _column(before, RECORD_KEY).cast(pa.string())
        new_keys = _column(after, RECORD_KEY).cast(pa.string())
        # Each row after -> its key's row before (null: a new key); one hash of the keys
        # before, no join.
        position = pc.index_in(new_keys, value_set=old_keys)
        came = pc.is_null(position)
        stays = pc.invert(came)
        spots = np.asarray(position.filter(stays).to_numpy(zero_copy_only=False), np.int64)
        kept = np.zeros(len(old_keys), dtype=bool)
        kept[spots] = True
        return replaced_rows(before, spots, after.filter(stays), ~kept, after.filter(came),
                             columns)


def replaced_rows(
    before: pa.Table | None, spots: np.ndarray, winners: pa.Table | None,
    removed: np.ndarray | None, inserts: pa.Table | None, columns: Sequence[str],
) -> RowChanges:
    """The changes of a merge that replaced the rows of ``before`` at ``spots`` with
    ``winners`` (the same keys, in that order), dropped the rows ``removed`` marks and added
    ``inserts`` (keys ``before`` lacks); every table holds ``_hoodie_record_key`` and
    ``columns``. Only those rows are compared: the others did not change.
    """
    old_keys = _column(before, RECORD_KEY).cast(pa.string()) if before is not None else None
    out = RowChanges()
    gone_mask = pa.array(removed) if removed is not None and removed.any() else None
    if old_keys is not None and gone_mask is not None:
        out.removed = old_keys.filter(gone_mask)
    if inserts is not None and inserts.num_rows:
        out.inserted = _column(inserts, RECORD_KEY).cast(pa.string())
    replaced = (before is not None and old_keys is not None and winners is not None
                and len(spots) > 0)
    where = pa.array(spots) if replaced else None
    for column in columns:
        gone: tuple[list[pa.Array], list[pa.Array]] = ([], [])
        added: tuple[list[pa.Array], list[pa.Array]] = ([], [])
        old_values = _column(before, column) if before is not None else None
        if old_values is not None and gone_mask is not None:
            gone[0].append(secondary_strings(old_values.filter(gone_mask)))
            gone[1].append(out.removed)
        if len(out.inserted):
            assert inserts is not None
            added[0].append(secondary_strings(_column(inserts, column)))
            added[1].append(out.inserted)
        if replaced:
            assert old_values is not None and winners is not None and old_keys is not None
            new_values = _column(winners, column)
            if not (new_values.type.equals(old_values.type)
                    or pa.types.is_null(old_values.type)):  # the stored type's text
                new_values = new_values.cast(old_values.type)
            v, w = secondary_strings(old_values.take(where)), secondary_strings(new_values)
            same = pc.or_(pc.fill_null(pc.equal(v, w), False),
                          pc.and_(pc.is_null(v), pc.is_null(w)))
            changed = pc.invert(same)
            if pc.any(changed).as_py():
                keys = old_keys.take(where).filter(changed)
                gone[0].append(v.filter(changed))
                gone[1].append(keys)
                added[0].append(w.filter(changed))
                added[1].append(keys)
        out.secondary[column] = (_pairs(*gone), _pairs(*added))
    return out


class AsOf(VisibleInstants):
    """The data table as of one instant, with that instant counted in or out.

    Counting it in whatever its state lets a commit about to complete (pending) and a
    completed one the indexer's catch-up missed be handled alike; instants after it stay
    out, so the difference is that instant's own.
    """

    def __init__(self, timeline: Timeline, instant_time: str, include: bool) -> None:
        super().__init__(timeline, instant_time)
        self.instant_time = instant_time
        self.include = include

    def __contains__(self, timestamp: object) -> bool:
        if timestamp == self.instant_time:
            return self.include
        return super().__contains__(timestamp)


def _ordering(table: HudiTable) -> str | None:
    """The field the merged reader orders records of one key by (None: the later wins)."""
    field_name = event_time_field(table.properties)
    return field_name if field_name in table.schema.names else None


def log_write_changes(
    table: HudiTable, file_slice: FileSlice, instant_time: str, columns: Sequence[str],
    records: pa.Table | None, deleted_keys: Sequence[str], new_logs: Sequence[LogFile],
    expressions: bool = False,
) -> RowChanges:
    """What a log file of ``instant_time`` on ``file_slice`` does to the group's rows.

    ``records`` (record key and the table's columns, one per key) and ``deleted_keys``
    (natural-order deletes) are what the log holds, ``new_logs`` the files written. Run by
    the write task right after it wrote them (the instant is pending; the group's earlier
    state is ``file_slice``, the one the write was tagged against).

    The reader's rules decide without decoding the log: a natural-order delete removes its
    key; a record of a key the group holds replaces the current row unless that row's
    ordering value is greater (ties: the later write). Expression blocks and records of
    keys the group does not hold (a stored ordered delete could outrank them) are merged
    by the reader itself, the new log included.
    """
    ordering = _ordering(table)
    wanted = [RECORD_KEY, *columns]
    if ordering is not None and ordering not in wanted:
        wanted.append(ordering)
    before = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                             columns=wanted, schema=table.schema)
    old_keys = _column(before, RECORD_KEY)
    incoming = records if records is not None and records.num_rows else None
    position = None
    if incoming is not None:
        position = pc.index_in(_column(incoming, RECORD_KEY).cast(pa.string()),
                               value_set=old_keys)
    if expressions or (position is not None and position.null_count):
        merged = dataclasses.replace(file_slice, log_files=(*file_slice.log_files, *new_logs))
        after = read_file_slice(table.storage, table.properties, table.timeline, merged,
                                columns=[RECORD_KEY, *columns], schema=table.schema,
                                visible=AsOf(table.timeline, instant_time, include=True))
        return RowChanges.of(before.select([RECORD_KEY, *columns]), after, columns)
    # Only the records' rows and the deleted keys change: compare those, not the group.
    spots = np.zeros(0, dtype=np.int64)  # rows before that a record replaces ...
    winners = None  # ... and the records replacing them
    if incoming is not None and position is not None:
        wins = pc.is_valid(position)
        if ordering is not None:
            old = pc.take(_column(before, ordering), position)
            newer = pc.greater_equal(_column(incoming, ordering), old.cast(
                incoming.schema.field(ordering).type))
            wins = pc.and_(wins, pc.fill_null(newer, True))
        spots = np.asarray(pc.filter(position, wins).cast(pa.int64()))
        winners = incoming.filter(wins)
    gone_mask = pc.is_in(old_keys, value_set=pa.array(list(deleted_keys), pa.string()))
    gone_rows = np.asarray(gone_mask.to_numpy(zero_copy_only=False), dtype=bool)
    if winners is not None:
        alive = ~gone_rows[spots]  # a key deleted in the same log stays deleted
        spots, winners = spots[alive], winners.filter(pa.array(alive))
    return replaced_rows(before, spots, winners, gone_rows, None, columns)
