"""What one commit did to one file group's rows, as the record and secondary indexes see it.

:meth:`RowChanges.of` compares a file group's rows before and after a commit (record key and
the secondary index columns) in Arrow: keys that appeared, keys that vanished, and per
secondary column the ``(value, key)`` pairs that went and came. The Spark write can compute
it on its executors while it merges a file group (a pure function of two tables) and hand it
to the metadata participant; otherwise the participant reads the slices itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.metadata.arrow_records import secondary_strings
from hudisql.table.fsview import FileSlice, LogFile, VisibleInstants
from hudisql.table.merge import read_file_slice
from hudisql.table.schema import META_COLUMNS
from hudisql.table.table import HudiTable
from hudisql.table.timeline import Timeline
from hudisql.table.write_slices import event_time_field

__all__ = ["AsOf", "Pair", "RowChanges", "log_write_changes"]

RECORD_KEY = META_COLUMNS[2]
#: A secondary index entry: (value as the index stores it, record key).
Pair = tuple[str | None, str]


def _column(rows: pa.Table, name: str) -> pa.Array:
    column = rows.column(name)
    return column.combine_chunks() if column.num_chunks else pa.array([], column.type)


@dataclass
class RowChanges:
    """Keys new to and gone from one file group, and the secondary pairs that changed."""

    inserted: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: Per secondary index column: (pairs gone, pairs added).
    secondary: dict[str, tuple[list[Pair], list[Pair]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (a Spark task hands it to the driver)."""
        # Pairs are tuples: JSON writes them as arrays.
        return {"inserted": self.inserted, "removed": self.removed,
                "secondary": {c: [gone, added] for c, (gone, added) in self.secondary.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RowChanges:
        """The inverse of :meth:`to_dict`."""
        return cls(list(data["inserted"]), list(data["removed"]),
                   {c: (list(map(tuple, gone)), list(map(tuple, added)))
                    for c, (gone, added) in data["secondary"].items()})

    @classmethod
    def of(
        cls, before: pa.Table | None, after: pa.Table | None, columns: Sequence[str]
    ) -> RowChanges:
        """The changes between a file group's rows before and after (None: no rows).

        Both tables hold ``_hoodie_record_key`` and ``columns``.
        """
        out = cls(secondary={c: ([], []) for c in columns})
        if before is None and after is None:
            return out
        empty_keys = pa.array([], pa.string())
        old_keys = (_column(before, RECORD_KEY).cast(pa.string()) if before is not None
                    else empty_keys)
        new_keys = (_column(after, RECORD_KEY).cast(pa.string()) if after is not None
                    else empty_keys)
        # Each row after -> its key's row before (null: a new key); one hash of the keys
        # before, no join.
        position = pc.index_in(new_keys, value_set=old_keys)
        came = pc.is_null(position)
        stays = pc.invert(came)
        matched = position.filter(stays)
        kept = np.zeros(len(old_keys), dtype=bool)
        kept[np.asarray(matched.to_numpy(zero_copy_only=False), dtype=np.int64)] = True
        went = pa.array(~kept)
        out.inserted = new_keys.filter(came).to_pylist()
        out.removed = old_keys.filter(went).to_pylist()
        for column in columns:
            gone, added = out.secondary[column]
            old_values = secondary_strings(_column(before, column)) if before is not None else None
            new_values = secondary_strings(_column(after, column)) if after is not None else None
            if old_values is not None:
                gone.extend(zip(old_values.filter(went).to_pylist(), out.removed, strict=True))
            if new_values is not None:
                added.extend(zip(new_values.filter(came).to_pylist(), out.inserted, strict=True))
            if old_values is None or new_values is None:
                continue
            v, w = old_values.take(matched), new_values.filter(stays)
            same = pc.or_(pc.fill_null(pc.equal(v, w), False),
                          pc.and_(pc.is_null(v), pc.is_null(w)))
            changed = pc.invert(same)
            keys = new_keys.filter(stays).filter(changed).to_pylist()
            gone.extend(zip(v.filter(changed).to_pylist(), keys, strict=True))
            added.extend(zip(w.filter(changed).to_pylist(), keys, strict=True))
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
    winners = np.zeros(0, dtype=np.int64)  # ... and the records replacing them
    if incoming is not None and position is not None:
        wins = pc.is_valid(position)
        if ordering is not None:
            old = pc.take(_column(before, ordering), position)
            newer = pc.greater_equal(_column(incoming, ordering), old.cast(
                incoming.schema.field(ordering).type))
            wins = pc.and_(wins, pc.fill_null(newer, True))
        spots = np.asarray(pc.filter(position, wins).cast(pa.int64()))
        winners = np.flatnonzero(np.asarray(wins.to_numpy(zero_copy_only=False)))
    gone_mask = pc.is_in(old_keys, value_set=pa.array(list(deleted_keys), pa.string()))
    gone_rows = np.asarray(gone_mask.to_numpy(zero_copy_only=False), dtype=bool)
    alive = ~gone_rows[spots]  # a key deleted in the same log stays deleted
    spots, winners = spots[alive], winners[alive]
    out = RowChanges(removed=old_keys.filter(gone_mask).to_pylist(),
                     secondary={c: ([], []) for c in columns})
    kept_keys = old_keys.take(pa.array(spots))
    for column in columns:
        gone, added = out.secondary[column]
        old_values = _column(before, column)
        gone.extend(zip(secondary_strings(old_values.filter(gone_mask)).to_pylist(),
                        out.removed, strict=True))
        if incoming is None or not len(spots):
            continue
        v = secondary_strings(old_values.take(pa.array(spots)))
        w = secondary_strings(_column(incoming, column).cast(old_values.type)
                              .take(pa.array(winners)))
        same = pc.or_(pc.fill_null(pc.equal(v, w), False),
                      pc.and_(pc.is_null(v), pc.is_null(w)))
        changed = pc.invert(same)
        keys = kept_keys.filter(changed).to_pylist()
        gone.extend(zip(v.filter(changed).to_pylist(), keys, strict=True))
        added.extend(zip(w.filter(changed).to_pylist(), keys, strict=True))
    return out
