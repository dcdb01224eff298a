"""The metadata records one data-table action adds: what a commit's deltacommit writes.

:func:`commit_updates` turns a data commit (its ``CommitMetadata`` and the files it wrote)
into records per metadata partition:

- files: the files the commit wrote, per data partition, and the partitions it touched;
- column stats: the statistics of each new file; partition stats: each touched partition's
  ranges over all its files, recomputed;
- record index and secondary indexes: per touched file group, the rows before the commit
  against the rows with it (the instant counted as visible, as it completes next): new keys
  get a location, vanished keys a delete, changed secondary values an ``isDeleted`` entry
  for the old value and a live one for the new.

:func:`deleted_files_updates` does the same for files an action removes (clean).
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import MetadataTableError
from hudisql.metadata.arrow_records import secondary_index_keys
from hudisql.metadata.builders import (
    RECORD_KEY,
    DataFile,
    IndexSpec,
    bloom_filter_records,
    committed_files,
    expression_index_records,
    file_ranges,
    index_spec,
)
from hudisql.metadata.config import IndexDefinition, completed_partitions, load_index_definitions
from hudisql.metadata.keys import (
    RecordLocation,
    column_index_id,
    partition_index_id,
)
from hudisql.metadata.partitions import MetadataPartitionType
from hudisql.metadata.records import (
    ColumnRange,
    PartitionUpdate,
    Record,
    SharedRecords,
    all_partitions_record,
    bloom_filter_record,
    column_range,
    column_stats_delete,
    column_stats_record,
    files_record,
    is_live,
    partition_stats_record,
    record_index_record,
    secondary_index_record,
)
from hudisql.metadata.row_changes import AsOf as _AsOf
from hudisql.metadata.row_changes import RowChanges
from hudisql.metadata.table import MetadataTable
from hudisql.metadata.value_types import secondary_texts
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.filenames import BaseFileName
from hudisql.table.format.fsview import FileSlice, FileSystemView
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable

__all__ = [
    "commit_updates",
    "deleted_files_updates",
    "row_changes",
    "stats_columns",
    "written_files",
]

_T = MetadataPartitionType


def written_files(table: HudiTable, instant_time: str, metadata: CommitMetadata) -> list[DataFile]:
    """The data files a commit wrote (sizes from storage when the file is there)."""
    out: dict[str, DataFile] = {}
    for stat in metadata.write_stats():
        partition = stat.partition_path or ""
        names = list(stat.log_files or ())
        if stat.path and not names:
            names = [posixpath.basename(stat.path)]
        for name in names:
            rel = posixpath.join(partition, name) if partition else name
            size = table.storage.size(rel) if table.storage.exists(rel) else stat.file_size_in_bytes
            is_log = BaseFileName.parse(name) is None
            out[rel] = DataFile(partition, name, int(size or 0), is_log, instant_time)
    return list(out.values())


def commit_updates(
    table: HudiTable,
    instant_time: str,
    metadata: CommitMetadata,
    partitions: Sequence[str],
    definitions: Mapping[str, IndexDefinition] | None = None,
    changes: Mapping[tuple[str, str], RowChanges] | None = None,
    file_stats: Mapping[str, Sequence[ColumnRange]] | None = None,
) -> dict[str, PartitionUpdate]:
    """The records the commit ``instant_time`` adds to each of ``partitions``.

    Args:
        table: the data table, as of just before the commit completes (under the lock).
        metadata: the commit's metadata (write stats, replaced file groups).
        partitions: the metadata partitions to update (built and being built).
        changes: per touched ``(partition, file id)``, the rows before and after, when the
            writer computed them (else they are read from the table).
        file_stats: per written file (path relative to the table), the ranges of the
            columns of :func:`stats_columns`, when the writer computed them (else the file
            is read: a log file decoded).
    """
    defs = load_index_definitions(table) if definitions is None else definitions
    files = written_files(table, instant_time, metadata)
    specs = [index_spec(table, p, defs) for p in partitions]
    out = {p: PartitionUpdate() for p in partitions}
    ranges: dict[str, list[ColumnRange]] = {p: list(r) for p, r in (file_stats or {}).items()}

    def ranges_of(f: DataFile, columns: Sequence[str]) -> list[ColumnRange]:
        if f.path not in ranges:
            ranges[f.path] = file_ranges(table, f, columns)
        return [r for r in ranges[f.path] if r.column in columns]

    stats_columns = _stats_columns(specs)
    for spec in specs:
        update = out[spec.partition]
        if spec.kind == _T.FILES:
            update.extend(_files_update(files, metadata))
        elif spec.kind == _T.COLUMN_STATS:
            update.records.extend(column_stats_record(f.partition_path, f.name, r)
                                  for f in files for r in ranges_of(f, stats_columns)
                                  if r.column in spec.source_fields)
        elif spec.kind == _T.BLOOM_FILTERS:
            update.records.extend(bloom_filter_records(table, files, spec))
        elif spec.kind == _T.EXPRESSION_INDEX:
            _check_kept(table, spec, instant_time)
            update.records.extend(expression_index_records(table, files, spec))
        elif spec.kind == _T.PARTITION_STATS:
            new = {f: ranges_of(f, stats_columns) for f in files}
            touched = sorted({f.partition_path for f in files})
            update.extend(_partition_stats(table, spec, touched, new))
        elif spec.kind not in (_T.RECORD_INDEX, _T.SECONDARY_INDEX):
            # Left alone it would go stale, and readers would trust it.
            raise MetadataTableError(
                f"table {table.name}: hudisql does not keep metadata partition "
                f"{spec.partition} ({spec.kind.name.lower()}); instant {instant_time} is not "
                "committed. Drop that index (DROP INDEX) or write with Apache Hudi"
            )
    row_specs = [s for s in specs if s.kind in (_T.RECORD_INDEX, _T.SECONDARY_INDEX)]
    if row_specs:
        found = _row_updates(table, instant_time, metadata, row_specs, changes)
        for partition, update in found.items():
            out[partition].extend(update)
    return out


def _stats_columns(specs: Sequence[IndexSpec]) -> list[str]:
    return sorted({c for s in specs if s.kind in (_T.COLUMN_STATS, _T.PARTITION_STATS)
                   for c in s.source_fields})


def stats_columns(table: HudiTable, partitions: Sequence[str]) -> list[str]:
    """The columns whose ranges a commit to ``partitions`` records per written file (column
    and partition stats); a writer that computes them passes them as ``file_stats``."""
    defs = load_index_definitions(table)
    return _stats_columns([index_spec(table, p, defs) for p in partitions])


def _check_kept(table: HudiTable, spec: IndexSpec, instant_time: str) -> None:
    """Refuse to commit past an expression index hudisql cannot keep (one Apache Hudi made
    on a function hudisql does not compute): left alone it would go stale.

    Raises:
        MetadataTableError: the index's function or options are not ones hudisql computes.
    """
    try:
        spec.expression()
    except MetadataTableError as exc:
        raise MetadataTableError(
            f"table {table.name}: hudisql does not keep metadata partition {spec.partition} "
            f"({exc}); instant {instant_time} is not committed. Drop that index (DROP INDEX) "
            "or write with Apache Hudi") from None


def _files_update(files: Sequence[DataFile], metadata: CommitMetadata) -> PartitionUpdate:
    by_partition: dict[str, dict[str, int]] = {}
    for f in files:
        by_partition.setdefault(f.partition_path, {})[f.name] = f.size
    for partition in metadata.partition_to_write_stats:
        by_partition.setdefault(partition, {})
    records = [files_record(p, added) for p, added in sorted(by_partition.items())]
    if by_partition:
        records.append(all_partitions_record(sorted(by_partition)))
    return PartitionUpdate(records)


def _partition_stats(
    table: HudiTable, spec: IndexSpec, touched: Sequence[str],
    new: Mapping[DataFile, list[ColumnRange]],
    removed: Mapping[str, Sequence[str]] | None = None,
) -> PartitionUpdate:
    """Partition stats of the touched partitions over all their files, this commit's too.

    ``removed``: files (by partition) this action deletes, left out of the ranges.
    """
    update = PartitionUpdate()
    # The built column_stats partition holds every file's ranges, when it covers the columns.
    use_mdt = "column_stats" in completed_partitions(table.properties) and set(
        spec.source_fields) <= set(index_spec(table, "column_stats").source_fields)
    mdt = MetadataTable(table) if use_mdt else None
    for partition in touched:
        per_file: dict[str, list[ColumnRange]] = {}
        if mdt is not None:
            prefixes = [column_index_id(c) + partition_index_id(partition)
                        for c in spec.source_fields]
            for record in mdt.read_partition("column_stats", prefixes=prefixes).values():
                if is_live(record):
                    name = record["ColumnStatsMetadata"]["fileName"]
                    per_file.setdefault(name, []).append(column_range(record))
        else:
            for f in committed_files(table, [partition]):
                per_file[f.name] = file_ranges(table, f, spec.source_fields)
        for f, found in new.items():
            if f.partition_path == partition:
                per_file[f.name] = found
        for name in (removed or {}).get(partition, ()):
            per_file.pop(name, None)
        merged: dict[str, ColumnRange] = {}
        for found in per_file.values():
            for r in found:
                if r.column in spec.source_fields:
                    merged[r.column] = r if r.column not in merged else merged[r.column].merged(r)
        update.records.extend(partition_stats_record(partition, r)
                              for _, r in sorted(merged.items()))
    return update


def _touched_groups(metadata: CommitMetadata) -> list[tuple[str, str]]:
    groups = {(s.partition_path or "", s.file_id) for s in metadata.write_stats() if s.file_id}
    for partition, file_ids in metadata.partition_to_replace_file_ids.items():
        groups.update((partition, f) for f in file_ids)
    return sorted(groups)


def _rows(table: HudiTable, view: FileSystemView, group: tuple[str, str],
          columns: Sequence[str]) -> pa.Table | None:
    partition, file_id = group
    if partition and not table.storage.exists(partition):
        return None
    slices = view.latest_file_slices(partition)
    found: FileSlice | None = next((s for s in slices if s.file_id == file_id), None)
    if found is None:
        return None
    return read_file_slice(table.storage, table.properties, table.timeline, found,
                           columns=[RECORD_KEY, *columns], schema=table.schema,
                           visible=view.visible)


def row_changes(
    table: HudiTable, instant_time: str, metadata: CommitMetadata, columns: Sequence[str],
    skip: Collection[tuple[str, str]] = (),
) -> dict[tuple[str, str], RowChanges]:
    """Each touched file group's rows without the commit and with it, read from the table.

    Works for a pending commit (about to complete) and for a completed one (catch-up).
    ``skip``: file groups whose changes the caller has (the writer computed them).
    """
    before_view = FileSystemView(table.storage, table.properties, table.timeline, instant_time)
    before_view.visible = _AsOf(table.timeline, instant_time, include=False)
    after_view = FileSystemView(table.storage, table.properties, table.timeline, instant_time)
    after_view.visible = _AsOf(table.timeline, instant_time, include=True)
    replaced = {(p, f) for p, ids in metadata.partition_to_replace_file_ids.items() for f in ids}
    out = {}
    for group in _touched_groups(metadata):
        if group in skip:
            continue
        before = _rows(table, before_view, group, columns)
        # The commit replaces these file groups: none of their rows remain.
        after = None if group in replaced else _rows(table, after_view, group, columns)
        out[group] = RowChanges.of(before, after, columns)
    return out


def _row_updates(
    table: HudiTable, instant_time: str, metadata: CommitMetadata, specs: Sequence[IndexSpec],
    changes: Mapping[tuple[str, str], RowChanges] | None,
) -> dict[str, PartitionUpdate]:
    """Record and secondary index records of the commit's file groups (before vs after)."""
    columns = sorted({s.source_fields[0] for s in specs if s.kind == _T.SECONDARY_INDEX})
    # File groups the writer computed no changes for (or all, without any) are read here.
    given = {g: c for g, c in (changes or {}).items() if set(columns) <= set(c.secondary)}
    changes = {**given, **row_changes(table, instant_time, metadata, columns, skip=given)}
    out = {s.partition: PartitionUpdate() for s in specs}
    inserted: list[pa.Array] = []
    removed: list[pa.Array] = []
    # Secondary pairs (value, key) gone and added over all file groups: a record moving
    # between file groups must not see its new entry voided by the old group's.
    pairs: dict[str, tuple[list[pa.Table], list[pa.Table]]] = {
        s.partition: ([], []) for s in specs if s.kind == _T.SECONDARY_INDEX}
    for group, change in sorted(changes.items()):
        location = RecordLocation(group[0], group[1], instant_time)
        for spec in specs:
            if spec.kind == _T.RECORD_INDEX:
                if len(change.inserted):  # one payload: the group's location
                    inserted.append(change.inserted)
                    out[spec.partition].shared.append(SharedRecords(
                        change.inserted, record_index_record("", location)))
                if len(change.removed):
                    removed.append(change.removed)
                continue
            column = spec.source_fields[0]
            if column not in change.secondary:
                raise MetadataTableError(
                    f"the row changes of file group {group[1]} lack column {column!r} of "
                    f"secondary index {spec.partition} (instant {instant_time})"
                )
            went, came = change.secondary[column]
            if spec.version == "V2" and column in table.schema.names:
                dtype = table.schema.field(column).type
                went, came = secondary_texts(went, dtype), secondary_texts(came, dtype)
            pairs[spec.partition][0].append(went)
            pairs[spec.partition][1].append(came)
    for spec in specs:
        if spec.kind == _T.RECORD_INDEX:
            # A key that left one file group for another in this commit keeps its new entry.
            out[spec.partition].deletes.extend(_minus(removed, inserted).to_pylist())
        else:
            gone = _secondary_keys(pairs[spec.partition][0])
            added = _secondary_keys(pairs[spec.partition][1])
            for entries, voided in ((_minus([gone], [added]), True),
                                    (_minus([added], [gone]), False)):
                if len(entries):  # one payload: isDeleted
                    out[spec.partition].shared.append(SharedRecords(
                        entries, secondary_index_record(None, "", deleted=voided)))
    return out


def _minus(these: Sequence[pa.Array], those: Sequence[pa.Array]) -> pa.Array:
    """The distinct strings of ``these`` not in ``those``, in the order they first come
    (file groups in order: deterministic; a log block needs no sorted keys)."""
    if not these:
        return pa.array([], pa.string())
    found = pc.unique(pa.chunked_array(these, pa.string()).combine_chunks())
    if those:
        found = found.filter(pc.invert(pc.is_in(found, value_set=pa.chunked_array(
            those, pa.string()).combine_chunks())))
    return found


def _secondary_keys(pairs: Sequence[pa.Table]) -> pa.Array:
    """The secondary index keys of (value, record key) pairs (tables of ``PAIRS``)."""
    if not pairs:
        return pa.array([], pa.string())
    both = pa.concat_tables(pairs)
    joined, _ = secondary_index_keys(both.column("value"), both.column("key"))
    return joined


def deleted_files_updates(
    table: HudiTable,
    deleted: Mapping[str, Sequence[str]],
    partitions: Sequence[str],
    definitions: Mapping[str, IndexDefinition] | None = None,
) -> dict[str, PartitionUpdate]:
    """The records saying data files were deleted (a clean): files, column stats, partition stats.

    Args:
        deleted: data partition -> names of the files removed.
        partitions: the metadata partitions to update.
    """
    defs = load_index_definitions(table) if definitions is None else definitions
    out = {p: PartitionUpdate() for p in partitions}
    for partition in partitions:
        spec = index_spec(table, partition, defs)
        update = out[partition]
        if spec.kind == _T.FILES:
            update.records.extend(files_record(p, {}, names) for p, names in
                                  sorted(deleted.items()) if names)
        elif spec.kind == _T.COLUMN_STATS:
            update.records.extend(column_stats_delete(p, name, c) for p, names in
                                  sorted(deleted.items()) for name in names
                                  for c in spec.source_fields)
        elif spec.kind == _T.BLOOM_FILTERS:
            update.records.extend(
                bloom_filter_record(p, name, "", spec.bloom_filter().filter_type, b"",
                                    deleted=True)
                for p, names in sorted(deleted.items()) for name in names
                if BaseFileName.parse(name) is not None)
        elif spec.kind == _T.EXPRESSION_INDEX:
            update.records.extend(_expression_deletes(spec, deleted))
        elif spec.kind == _T.PARTITION_STATS:
            touched = sorted(p for p, names in deleted.items() if names)
            update.extend(_partition_stats(table, spec, touched, {}, deleted))
    return out


def _expression_deletes(spec: IndexSpec, deleted: Mapping[str, Sequence[str]]) -> list[Record]:
    """An expression index's records saying data files (base and log) were deleted."""
    if spec.index_type == "bloom_filters":
        filter_type = spec.bloom_filter().filter_type
        return [bloom_filter_record(p, name, "", filter_type, b"", deleted=True)
                for p, names in sorted(deleted.items()) for name in names]
    return [column_stats_delete(p, name, spec.source_fields[0])
            for p, names in sorted(deleted.items()) for name in names]
