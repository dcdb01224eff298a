"""Planning a write: which file slice each record goes to, and what each slice write does.

An upsert tags every incoming record with the file group already holding its key (found by
reading the keys of the latest file slices of the partitions it touches, Hudi's simple
index); untagged records are inserts and go to new file groups. A delete finds the file
groups holding its keys the same way. The plan is a list of :class:`SliceWrite`, one per
file group written: a new base file, a log file on an existing slice (merge-on-read) or a
rewritten base file (copy-on-write).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.table.format.commit_metadata import NULL_COMMIT, WriteStat
from hudisql.table.format.filenames import new_file_id
from hudisql.table.format.fsview import FileSlice, FileSystemView
from hudisql.table.format.log.format import ORDERING_TYPES, DeleteRecord
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.merge import read_file_slice
from hudisql.table.write.records import PARTITION_PATH, RECORD_KEY

__all__ = [
    "NATURAL_ORDER_BRANCH",
    "ExistingKeys",
    "SliceWrite",
    "composite_keys",
    "plan_deletes",
    "plan_inserts",
    "plan_upserts",
]

_FILE_ID = "__file_id"


@dataclass
class SliceWrite:
    """One file group's part of a write.

    ``file_slice`` is None for a new file group. ``records`` are the rows to write (meta
    columns first, commit time null), ``updates`` how many of them replace a stored record;
    ``deletes`` the stored keys to remove.
    """

    partition_path: str
    file_id: str
    file_slice: FileSlice | None
    records: pa.Table | None = None
    updates: int = 0
    deletes: list[DeleteRecord] = field(default_factory=list)

    @property
    def num_records(self) -> int:
        """How many records are written (inserts and updates)."""
        return 0 if self.records is None else self.records.num_rows

    def planned_stat(self) -> WriteStat:
        """The stat Hudi's inflight file records for this file group (its workload)."""
        base = self.file_slice.base_instant if self.file_slice is not None else NULL_COMMIT
        return WriteStat(
            file_id=self.file_id,
            prev_commit=base,
            num_inserts=self.num_records - self.updates,
            num_update_writes=self.updates,
            num_deletes=len(self.deletes),
        )


#: The ``orderingVal`` branch of a delete: what Spark writes, "int 0" (the bytes ``04 00``:
#: union branch 2, which Hudi's schema calls IntWrapper). Hudi and the hudi reader take it
#: as a natural-order delete: it removes what came before it and loses to what follows.
NATURAL_ORDER_BRANCH = ORDERING_TYPES[2]


@dataclass
class ExistingKeys:
    """The keys stored in the latest slices of some partitions, with their file ids."""

    table: pa.Table
    slices: dict[tuple[str, str], FileSlice]

    @classmethod
    def read(
        cls,
        storage: Storage,
        props: TableProperties,
        timeline: Timeline,
        view: FileSystemView,
        partitions: Sequence[str],
    ) -> ExistingKeys:
        """Read the record keys of every latest slice of ``partitions`` (merged: deleted keys
        are not there)."""
        parts: list[pa.Table] = []
        slices: dict[tuple[str, str], FileSlice] = {}
        for partition in partitions:
            for file_slice in view.latest_file_slices(partition):
                slices[(partition, file_slice.file_id)] = file_slice
                keys = read_file_slice(
                    storage, props, timeline, file_slice, columns=[RECORD_KEY],
                    visible=view.visible,
                )
                n = keys.num_rows
                cols: dict[str, Any] = {
                    PARTITION_PATH: pa.repeat(pa.scalar(partition, pa.string()), n),
                    RECORD_KEY: keys.column(RECORD_KEY).cast(pa.string()),
                    _FILE_ID: pa.repeat(pa.scalar(file_slice.file_id, pa.string()), n),
                }
                parts.append(pa.table(cols))
        if not parts:
            empty: dict[str, Any] = {
                PARTITION_PATH: pa.array([], pa.string()),
                RECORD_KEY: pa.array([], pa.string()),
                _FILE_ID: pa.array([], pa.string()),
            }
            return cls(pa.table(empty), slices)
        return cls(pa.concat_tables(parts, promote_options="permissive"), slices)

    def composite(self) -> pa.ChunkedArray | pa.Array:
        """``partition \\0 key`` of every stored row."""
        return composite_keys(self.table)


def composite_keys(table: pa.Table) -> pa.ChunkedArray | pa.Array:
    """``partition \\0 key`` of every row of a table with both meta columns."""
    return pc.binary_join_element_wise(
        table.column(PARTITION_PATH), table.column(RECORD_KEY), "\x00"
    )


def _split(rows: pa.Table, size: int) -> list[pa.Table]:
    return [rows.slice(i, size) for i in range(0, rows.num_rows, size)] or []


def plan_inserts(staged: pa.Table, max_records_per_file: int) -> list[SliceWrite]:
    """New file groups for ``staged`` rows: per partition, chunks of at most the limit."""
    out: list[SliceWrite] = []
    for partition in pc.unique(staged.column(PARTITION_PATH)).to_pylist():
        rows = staged.filter(pc.equal(staged.column(PARTITION_PATH), partition))
        for chunk in _split(rows, max_records_per_file):
            out.append(SliceWrite(str(partition), new_file_id(), None, records=chunk))
    return out


def plan_upserts(
    staged: pa.Table, existing: ExistingKeys, max_records_per_file: int
) -> list[SliceWrite]:
    """Updates to the file groups holding their keys, inserts to new file groups."""
    index = pc.index_in(composite_keys(staged), value_set=existing.composite())
    found = pc.is_valid(index)
    out: list[SliceWrite] = []
    if pc.any(found).as_py():
        updates = staged.filter(found)
        file_ids = pc.take(existing.table.column(_FILE_ID), pc.drop_null(index))
        partitions = updates.column(PARTITION_PATH)
        groups = pc.binary_join_element_wise(partitions, file_ids, "\x00")
        for group in pc.unique(groups).to_pylist():
            partition, file_id = str(group).split("\x00", 1)
            rows = updates.filter(pc.equal(groups, group))
            file_slice = existing.slices[(partition, file_id)]
            out.append(
                SliceWrite(partition, file_id, file_slice, records=rows, updates=rows.num_rows)
            )
    inserts = staged.filter(pc.invert(found))
    return out + plan_inserts(inserts, max_records_per_file)


def plan_deletes(
    keys: pa.Array | pa.ChunkedArray,
    partitions: pa.Array | pa.ChunkedArray | None,
    existing: ExistingKeys,
) -> list[SliceWrite]:
    """Deletes of the stored records with ``keys`` (in ``partitions`` when given, row by row)."""
    stored = existing.table
    if partitions is None:
        hit = pc.is_in(stored.column(RECORD_KEY), value_set=pc.unique(keys))
    else:
        wanted = pc.binary_join_element_wise(partitions, keys, "\x00")
        hit = pc.is_in(existing.composite(), value_set=pc.unique(wanted))
    targets = stored.filter(hit)
    out: dict[tuple[str, str], SliceWrite] = {}
    for row in targets.select([PARTITION_PATH, RECORD_KEY, _FILE_ID]).to_pylist():
        partition, file_id = row[PARTITION_PATH], row[_FILE_ID]
        work = out.get((partition, file_id))
        if work is None:
            work = SliceWrite(partition, file_id, existing.slices[(partition, file_id)])
            out[(partition, file_id)] = work
        work.deletes.append(DeleteRecord(row[RECORD_KEY], partition, 0, NATURAL_ORDER_BRANCH))
    return list(out.values())
