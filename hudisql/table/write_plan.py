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

from hudisql.table.commit_metadata import NULL_COMMIT, WriteStat
from hudisql.table.filenames import new_file_id
from hudisql.table.fsview import FileSlice, FileSystemView
from hudisql.table.log.format import DeleteRecord
from hudisql.table.merge import read_file_slice
from hudisql.table.properties import TableProperties
from hudisql.table.storage import Storage
from hudisql.table.timeline import Timeline
from hudisql.table.write_records import PARTITION_PATH, RECORD_KEY

__all__ = [
    "ORDERING_COLUMN",
    "ORDERING_TYPES_BY_ARROW",
    "ExistingKeys",
    "SliceWrite",
    "composite_keys",
    "ordering_type",
    "plan_deletes",
    "plan_inserts",
    "plan_upserts",
]

_FILE_ID = "__file_id"
_ORDER = "__ordering"
#: The column of :attr:`ExistingKeys.table` holding stored ordering values.
ORDERING_COLUMN = _ORDER


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


#: The branch of a delete block's ``orderingVal`` union for each precombine column type.
ORDERING_TYPES_BY_ARROW: tuple[tuple[Any, str], ...] = (
    (pa.types.is_int64, "long"),
    (pa.types.is_integer, "int"),
    (pa.types.is_float32, "float"),
    (pa.types.is_floating, "double"),
    (pa.types.is_string, "string"),
    (pa.types.is_large_string, "string"),
    (pa.types.is_binary, "bytes"),
    (pa.types.is_decimal, "decimal"),
    (pa.types.is_date32, "date"),
)


def ordering_type(dtype: pa.DataType) -> str | None:
    """The ``orderingVal`` union branch for values of ``dtype``, or None when there is none."""
    if pa.types.is_timestamp(dtype):
        return "timestamp-millis" if dtype.unit in ("s", "ms") else "timestamp-micros"
    for test, name in ORDERING_TYPES_BY_ARROW:
        if test(dtype):
            return name
    return None


@dataclass
class ExistingKeys:
    """The keys stored in the latest slices of some partitions: partition, key, file id,
    and the stored ordering value (when the table has a precombine field)."""

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
        """Read the record keys (and ordering values) of every latest slice of ``partitions``."""
        ordering = props.precombine_field
        parts: list[pa.Table] = []
        slices: dict[tuple[str, str], FileSlice] = {}
        for partition in partitions:
            for file_slice in view.latest_file_slices(partition):
                slices[(partition, file_slice.file_id)] = file_slice
                columns = [RECORD_KEY] + ([ordering] if ordering else [])
                keys = read_file_slice(
                    storage, props, timeline, file_slice, columns=columns, visible=view.visible
                )
                n = keys.num_rows
                cols: dict[str, Any] = {
                    PARTITION_PATH: pa.repeat(pa.scalar(partition, pa.string()), n),
                    RECORD_KEY: keys.column(RECORD_KEY).cast(pa.string()),
                    _FILE_ID: pa.repeat(pa.scalar(file_slice.file_id, pa.string()), n),
                }
                if ordering:
                    cols[_ORDER] = keys.column(ordering)
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
    ordering_dtype: pa.DataType | None,
) -> list[SliceWrite]:
    """Deletes of the stored records with ``keys`` (in ``partitions`` when given, row by row).

    Each delete carries the stored record's ordering value, so that it wins the merge
    against that record (a tie goes to the delete) but loses to a later, greater one.
    """
    stored = existing.table
    if partitions is None:
        hit = pc.is_in(stored.column(RECORD_KEY), value_set=pc.unique(keys))
    else:
        wanted = pc.binary_join_element_wise(partitions, keys, "\x00")
        hit = pc.is_in(existing.composite(), value_set=pc.unique(wanted))
    targets = stored.filter(hit)
    branch = ordering_type(ordering_dtype) if ordering_dtype is not None else None
    out: dict[tuple[str, str], SliceWrite] = {}
    columns = [PARTITION_PATH, RECORD_KEY, _FILE_ID]
    if _ORDER in targets.column_names:
        columns.append(_ORDER)
    for row in targets.select(columns).to_pylist():
        partition, file_id = row[PARTITION_PATH], row[_FILE_ID]
        value = row.get(_ORDER)
        if branch is None or value is None:
            record = DeleteRecord(row[RECORD_KEY], partition, 0, "int")
        else:
            record = DeleteRecord(row[RECORD_KEY], partition, value, branch)
        work = out.get((partition, file_id))
        if work is None:
            work = SliceWrite(partition, file_id, existing.slices[(partition, file_id)])
            out[(partition, file_id)] = work
        work.deletes.append(record)
    return list(out.values())
