"""The indexer's side of the metadata table: initialize, build (as Spark jobs), catch up, drop.

:class:`IndexBackend` is what :class:`~hudisql.services.indexer.Indexer` asks of the
metadata table (``hudisql.metadata``): file groups initialized at the plan's
initialization instant (``<base instant>010``, the next free suffix when a partition
already used it), partitions built from the data table as Spark jobs, coverage of a data
instant by a metadata deltacommit, and dropping partitions.

A build is two stages of Spark jobs, each a ``mapInArrow`` over task numbers: no metadata
row crosses into the JVM. Stage 1 has one task per unit of work calling the metadata
builders on executors: a latest file slice (record and secondary indexes, rows built
column-wise in the metadata base-file shape) or a data partition (files, column stats,
partition stats: records per committed file). Each task routes its rows to their file
groups and stages one parquet piece per file group under
``.hoodie/.temp/<init instant>/index``; units run in batches (one job each) so progress is
reported as they finish. Stage 2 has one task per file group: it reads the group's pieces,
merges the records of one key by Hudi's payload rules and writes the group's base file.
The driver only plans and completes the metadata instant.
"""

from __future__ import annotations

import io
import math
import posixpath
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudisql.errors import IndexingError, MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.builders import (
    bloom_filter_records,
    column_stats_records,
    committed_files,
    expression_index_records,
    file_group_count,
    files_records,
    index_spec,
    partition_stats_records,
    record_index_slice_rows,
    secondary_index_slice_rows,
)
from hudisql.metadata.commit_update import commit_updates
from hudisql.metadata.config import (
    IndexDefinition,
    load_index_definitions,
    save_index_definitions,
)
from hudisql.metadata.expressions import IndexExpression
from hudisql.metadata.partitions import (
    EXPR_INDEX_PREFIX,
    SECONDARY_INDEX_PREFIX,
    MetadataPartitionType,
    partition_spec,
)
from hudisql.metadata.records import Record, merge_records
from hudisql.metadata.table import METADATA_PATH, MetadataTable, drop_index
from hudisql.table.commit_metadata import WriteStat
from hudisql.table.filenames import BaseFileName
from hudisql.table.fsview import FileSlice, FileSystemView
from hudisql.table.instant import Action, Instant, State, instant_file_name
from hudisql.table.table import HudiTable
from hudisql.table.timeline import Timeline
from hudisql.table.write_files import MARKER_DIR

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "EXPR_INDEX_PREFIX",
    "SECONDARY_INDEX_PREFIX",
    "IndexBackend",
    "PartitionRequest",
    "new_definition",
]

#: Units of work per Spark job of stage 1 (at least; more when there are many units).
MIN_BATCH_UNITS = 8
MAX_BATCHES = 10
_STATS = "path string, file_id string, partition string, rows long, bytes long"
#: Per data partition: these partition types build from the committed files.
_PER_DATA_PARTITION = (MetadataPartitionType.FILES, MetadataPartitionType.COLUMN_STATS,
                       MetadataPartitionType.PARTITION_STATS,
                       MetadataPartitionType.BLOOM_FILTERS,
                       MetadataPartitionType.EXPRESSION_INDEX)

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class PartitionRequest:
    """A metadata partition to build, with its index definition (named indexes only)."""

    partition: str
    definition: IndexDefinition | None = None


def new_definition(partition: str, index_type: str, columns: Sequence[str],
                   options: Mapping[str, str]) -> IndexDefinition:
    """The index.json definition of a named index, as Hudi 1.x writes it: ``expr`` (default
    ``identity``) is the index function, and the options are kept whole."""
    function = next((v for k, v in options.items() if k.lower() == "expr"), "identity")
    return IndexDefinition(partition, index_type, tuple(columns), function.lower(),
                           dict(options))


def check_buildable(request: PartitionRequest, label: str | None = None) -> None:
    """Refuse, before anything is written, an index hudisql cannot build.

    Raises:
        IndexingError: an expression index on a function (or with options) hudisql does not
            compute exactly (the message starts with ``label``, default the partition's name).
    """
    definition = request.definition
    kind = partition_spec(request.partition).kind
    if kind != MetadataPartitionType.EXPRESSION_INDEX or definition is None:
        return
    where = label or f"index {request.partition}"
    if definition.index_type not in ("column_stats", "bloom_filters"):
        raise IndexingError(
            f"{where}: an expression index is USING column_stats or bloom_filters, not "
            f"{definition.index_type}")
    try:
        IndexExpression.of(definition.index_function, definition.index_options)
    except MetadataTableError as exc:
        raise IndexingError(f"{where}: {exc}") from None


# ----------------------------------------------------------------------------- executors


@dataclass(frozen=True)
class _Unit:
    """One piece of stage 1: a metadata partition over a data partition or a file slice."""

    partition: str
    data_partition: str
    file_slice: FileSlice | None = None


def _unit_rows(table: HudiTable, unit: _Unit, definitions: Mapping[str, IndexDefinition]
               ) -> pa.Table:
    """The metadata rows (base-file shape) of one unit (runs on an executor).

    Record and secondary index rows are built column-wise from the slice's keys and values;
    the file-based partitions' few records per data partition come from the dict builders.
    """
    spec = index_spec(table, unit.partition, definitions)
    kind = spec.kind
    if unit.file_slice is not None:
        if kind == MetadataPartitionType.RECORD_INDEX:
            return record_index_slice_rows(table, unit.file_slice)
        return secondary_index_slice_rows(table, unit.file_slice, spec.source_fields[0])
    files = committed_files(table, [unit.data_partition])
    if kind == MetadataPartitionType.FILES:
        records = files_records(files, [unit.data_partition])
    elif kind == MetadataPartitionType.BLOOM_FILTERS:
        records = bloom_filter_records(table, files, spec)
    elif kind == MetadataPartitionType.EXPRESSION_INDEX:
        records = expression_index_records(table, files, spec)
    elif kind == MetadataPartitionType.PARTITION_STATS:
        records = partition_stats_records(table, files, spec.source_fields)
    else:
        records = column_stats_records(table, files, spec.source_fields)
    return S.to_parquet_rows(records)


def _piece_path(staging: str, partition: str, fg: int, unit: int) -> str:
    return f"{staging}/{partition}/{fg:05d}/{unit:07d}.parquet"


def _stage_rows(path: str, staging: str, units: list[_Unit], first: int,
                groups: Mapping[str, int], definitions: Mapping[str, IndexDefinition]
                ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The stage-1 task: the rows of the units it is given, one staged parquet piece per
    file group they route to (Arrow all the way: no row crosses into the JVM)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = HudiTable.open(path)
        for batch in batches:
            for index in batch.column(0).to_pylist():
                unit = units[int(index)]
                rows = _unit_rows(table, unit, definitions)
                if rows.num_rows:
                    # The partition's own routing (secondary keys by their value part).
                    fgs = pa.array(partition_spec(unit.partition).route(
                        rows.column("key"), groups[unit.partition]))
                    for fg in pc.unique(fgs).to_pylist():
                        sink = io.BytesIO()
                        pq.write_table(rows.filter(pc.equal(fgs, fg)), sink)
                        table.storage.write_bytes(
                            _piece_path(staging, unit.partition, fg, first + int(index)),
                            sink.getvalue())
                yield pa.RecordBatch.from_pylist([{"rows": rows.num_rows}])
    return run


def _merged_rows(rows: pa.Table) -> pa.Table:
    """Rows of one file group with each key once: records of one key merged (Hudi's rules)."""
    if pc.count_distinct(rows.column("key")).as_py() == rows.num_rows:
        return rows
    merged: dict[str, Record] = {}
    for record in S.from_parquet_rows(rows):
        older = merged.get(record["key"])
        merged[record["key"]] = record if older is None else merge_records(older, record)
    return S.to_parquet_rows(list(merged.values()))


def _write_groups(path: str, staging: str, groups: list[tuple[str, int, str]],
                  instant_time: str
                  ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The stage-2 task: the base file of each file group it is given, from its pieces."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = HudiTable.open(path)
        mdt = MetadataTable(table)
        for batch in batches:
            for index in batch.column(0).to_pylist():
                partition, fg, file_id = groups[int(index)]
                folder = f"{staging}/{partition}/{fg:05d}"
                pieces = [pq.read_table(io.BytesIO(table.storage.read_bytes(f.path)))
                          for f in (table.storage.list_dir(folder)
                                    if table.storage.exists(folder) else [])
                          if f.name.endswith(".parquet")]
                rows = (pa.concat_tables(pieces).cast(S.arrow_schema()) if pieces
                        else S.to_parquet_rows([]))
                stat = mdt.write_base_file(partition, file_id, _merged_rows(rows),
                                           instant_time)
                yield pa.RecordBatch.from_pylist([{
                    "path": stat.path, "file_id": stat.file_id, "partition": partition,
                    "rows": stat.num_writes, "bytes": stat.file_size_in_bytes}])
    return run


# ----------------------------------------------------------------------------- the backend


class IndexBackend:
    """The metadata-table operations of the RFC-45 indexer (see the module docstring)."""

    def partitions(self, table: HudiTable) -> list[str]:
        """The partition folders the metadata table has (built, being built or left over)."""
        return MetadataTable(table).partitions() if MetadataTable.exists_for(table) else []

    def definitions(self, table: HudiTable) -> dict[str, IndexDefinition]:
        """The table's index definitions by metadata partition."""
        return load_index_definitions(table)

    @staticmethod
    def _record_estimate(table: HudiTable) -> int:
        """About how many records the table holds (from commit statistics, no data read)."""
        total = 0
        for instant in table.timeline.completed([Action.COMMIT, Action.DELTACOMMIT,
                                                 Action.REPLACECOMMIT]):
            for stat in table.timeline.commit_metadata(instant).write_stats():
                total += stat.num_inserts - stat.num_deletes
        return max(total, 0)

    def init_instant(self, table: HudiTable, base: str) -> str:
        """The metadata instant new partitions built up to ``base`` are initialized at:
        ``<base>010``, or the next free offset when another build used it."""
        return MetadataTable(table).new_init_instant(base)

    def initialize(self, table: HudiTable, requests: Sequence[PartitionRequest],
                   init: str) -> None:
        """Initialize the partitions' file groups at ``init`` (under the table lock) and save
        the named indexes' definitions.

        Raises:
            IndexingError: an index hudisql cannot build (nothing is written).
        """
        for request in requests:
            check_buildable(request)
        mdt = MetadataTable(table).create_if_absent()
        named = {r.partition: r.definition for r in requests if r.definition is not None}
        if named:
            save_index_definitions(table, {**load_index_definitions(table), **named})
        records = self._record_estimate(table)
        for request in requests:
            kind = partition_spec(request.partition).kind
            mdt.initialize_partition(request.partition, file_group_count(kind, records), init)

    def reset_build(self, table: HudiTable, partitions: Sequence[str], init: str) -> None:
        """Undo what a build that died wrote (base files at ``init``; its instant pending)."""
        mdt = MetadataTable(table)
        for partition in partitions:
            if not mdt.storage.exists(partition):
                continue
            for status in mdt.storage.list_dir(partition):
                parsed = BaseFileName.parse(status.name)
                if parsed is not None and parsed.instant == init:
                    mdt.storage.delete(status.path)
        instant = mdt.timeline.get(init)
        if instant is not None and instant.is_completed:
            mdt.storage.delete(posixpath.join(
                mdt.timeline.timeline_dir,
                instant_file_name(init, Action.DELTACOMMIT, State.COMPLETED)))

    def build(self, spark: SparkSession | None, table: HudiTable, partitions: Sequence[str],
              init: str, on_progress: ProgressCallback | None) -> None:
        """Build ``partitions`` from the data table's committed files as Spark jobs, as base
        files at ``init``; then complete the metadata instant ``init``.

        Raises:
            IndexingError: no Spark session to run the build in.
        """
        if spark is None:
            raise IndexingError(
                f"building indexes of table {table.name} needs a Spark session: use "
                "hudisql.connect() and its table handles or SQL")
        mdt = MetadataTable(table)
        definitions = self.definitions(table)
        units = self._units(table, partitions, definitions)
        ids = {p: mdt.file_group_ids(p) for p in partitions}
        staging = f"{MARKER_DIR}/{init}/index"
        table.storage.delete_dir(staging)
        size = max(MIN_BATCH_UNITS, math.ceil(len(units) / MAX_BATCHES))
        groups = {p: len(v) for p, v in ids.items()}
        for start in range(0, len(units), size):
            batch = units[start:start + size]
            spark.range(len(batch), numPartitions=len(batch)).mapInArrow(
                _stage_rows(table.base_path, staging, batch, start, groups, definitions),
                "rows long").collect()
            if on_progress is not None:
                on_progress(min(start + size, len(units)), len(units))
        targets = [(p, fg, file_id) for p, file_ids in ids.items()
                   for fg, file_id in enumerate(file_ids)]
        rows = spark.range(len(targets), numPartitions=max(1, min(len(targets), 64))).mapInArrow(
            _write_groups(table.base_path, staging, targets, init), _STATS).collect()
        stats = [WriteStat(file_id=row["file_id"], path=row["path"], num_writes=row["rows"],
                           num_inserts=row["rows"], partition_path=row["partition"],
                           total_write_bytes=row["bytes"], file_size_in_bytes=row["bytes"])
                 for row in rows]
        table.storage.delete_dir(staging)
        mdt.reload().complete_instant(init, stats)

    @staticmethod
    def _units(table: HudiTable, partitions: Sequence[str],
               definitions: Mapping[str, IndexDefinition]) -> list[_Unit]:
        view = FileSystemView(table.storage, table.properties, table.timeline)
        data_partitions = view.partitions()
        slices: list[FileSlice] | None = None
        units: list[_Unit] = []
        for partition in partitions:
            kind = index_spec(table, partition, definitions).kind
            if kind in _PER_DATA_PARTITION:
                units += [_Unit(partition, p) for p in data_partitions]
                continue
            if slices is None:
                slices = view.latest_file_slices()
            units += [_Unit(partition, s.partition_path, s) for s in slices]
        return units

    def covered(self, table: HudiTable, instant: Instant, partitions: Sequence[str]) -> bool:
        """Whether the metadata table has ``instant``'s updates of every one of ``partitions``."""
        mdt = MetadataTable(table)
        found = mdt.timeline.get(instant.timestamp)
        if found is None or not found.is_completed:
            return False
        written = mdt.timeline.commit_metadata(found).partition_to_write_stats
        return all(p in written for p in partitions)

    def catch_up(self, table: HudiTable, instant: Instant, partitions: Sequence[str]) -> None:
        """Bring ``partitions`` up to a completed data instant that did not update them (its
        writer ran without the metadata participant): write its metadata deltacommit.

        Raises:
            IndexingError: the metadata table has a deltacommit at that instant already
                (without these partitions): the index cannot be caught up; it is rolled back.
        """
        mdt = MetadataTable(table)
        if mdt.timeline.get(instant.timestamp) is not None:
            raise IndexingError(
                f"table {table.name}: {instant.action} {instant.timestamp} completed without "
                f"updating metadata partitions {', '.join(partitions)} being built; the index "
                "is rolled back: create it again")
        metadata = table.timeline.commit_metadata(instant)
        updates = commit_updates(_just_before(table, instant.timestamp), instant.timestamp,
                                 metadata, list(partitions))
        mdt.write_deltacommit(instant.timestamp, updates)

    def drop(self, table: HudiTable, partitions: Sequence[str], init: str | None) -> None:
        """Remove ``partitions``: from hoodie.properties and index.json, then their files
        (h/metadata's ``drop_index``); with ``init``, roll back that initialization instant.
        Callers hold the table lock."""
        for partition in partitions:
            table = drop_index(table, partition)
        if init is not None and MetadataTable.exists_for(table):
            MetadataTable(table).rollback(init)

    @staticmethod
    def remove_if_unused(table: HudiTable) -> None:
        """Delete ``.hoodie/metadata`` when hoodie.properties lists no partition of it."""
        props = HudiTable.open(table.base_path).properties
        if not props.metadata_partitions and not props.metadata_partitions_inflight:
            table.storage.delete_dir(METADATA_PATH)


def _just_before(table: HudiTable, instant_time: str) -> HudiTable:
    """The table as it was just before ``instant_time`` completed: the instants before it,
    and it still inflight (what the metadata participant sees under the lock)."""
    timeline = table.timeline
    files = [f for i in timeline.instants if i.timestamp <= instant_time
             for f in timeline.instant_files(i.timestamp)
             if i.timestamp < instant_time or not f.is_completed]
    return HudiTable(table.storage, table.properties,
                     Timeline(table.storage, table.properties, files))
