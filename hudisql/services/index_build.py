"""The indexer's side of the metadata table: initialize, build (as Spark jobs), catch up, drop.

:class:`IndexBackend` is what :class:`~hudisql.services.indexer.Indexer` asks of the
metadata table (``hudisql.metadata``): file groups initialized at the plan's
initialization instant (``<base instant>010``, the next free suffix when a partition
already used it), partitions built from the data table as Spark jobs, coverage of a data
instant by a metadata deltacommit, and dropping partitions.

A build runs on executors as ``mapInArrow`` tasks: no metadata row crosses into the JVM
as a row, and nothing goes through Spark's shuffle. Its work comes in two steps. First, each
unit of work calls the metadata builders: a latest file slice (record and secondary indexes:
the slice's record keys, or its secondary keys, are all it sends) or a data partition
(files, column stats, bloom filters, partition stats, expression indexes: records per
committed file). A unit's output, routed to its file groups, is staged as one file in the
build's staging folder (``.hoodie/.temp/<instant>/index``): one Arrow IPC stream per file
group, then where each stream is. Second, each file group's writer reads the group's
pieces, sorts its keys, builds the rows column-wise, merges the records of one key by
Hudi's payload rules and writes the group's base file (an empty one when no row went to
the group). The driver plans, completes the metadata instant, removes the staging folder,
and reports progress by counting the staged units.

A build of at most :data:`ONE_JOB_MAX_UNITS` units is one Spark job: one task per slot,
each staging the units no other task has claimed (a claim is a file created in the staging
folder), waiting until every unit is staged, then writing the file groups no other task has
claimed. A task running alone does all of it; one that waits in vain (a claimer died)
gives up, and the driver finishes as for a larger build: two Spark jobs, the first staging
the units (the ones not staged yet), the second writing the file groups (the ones not
written yet).

On a small table (:data:`DRIVER_BUILD_MAX_SLICES`), the file listing, column stats and
partition stats are built on the driver instead: they read listings, parquet footers and
log files only, which takes less time than scheduling the two jobs. Secondary keys are
sorted value by value (:func:`~hudisql.metadata.arrow_records.secondary_key_order`).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from hudisql.errors import IndexingError, MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.builders import (
    file_group_count,
    index_spec,
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
from hudisql.metadata.table import METADATA_PATH, MetadataTable, drop_index
from hudisql.services.index_tasks import (
    PIECES_SCHEMA,
    STATS_SCHEMA,
    Piece,
    Unit,
    build_together,
    merged_rows,
    stage_rows,
    staged_pieces,
    staged_units,
    unit_rows,
    write_groups,
)
from hudisql.table.format.commit_metadata import WriteStat
from hudisql.table.format.filenames import BaseFileName
from hudisql.table.format.fsview import FileSlice, FileSystemView
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.timeline import Timeline
from hudisql.table.table import HudiTable
from hudisql.table.write.files import MARKER_DIR

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

__all__ = [
    "EXPR_INDEX_PREFIX",
    "SECONDARY_INDEX_PREFIX",
    "IndexBackend",
    "PartitionRequest",
    "new_definition",
]

#: At most this many tasks per stage of the build job.
MAX_TASKS = 200
#: Data a first-stage task reads at most before the build uses more tasks than slots
#: (Spark's ``spark.sql.files.maxPartitionBytes`` default).
BYTES_PER_TASK = 128 << 20
#: Task slots assumed when the session does not say (a cluster master, no parallelism set).
DEFAULT_SLOTS = 8
#: How often (seconds) the driver counts the units done while the build job runs.
PROGRESS_INTERVAL = 0.5
#: A build of at most this many units, reading at most :data:`BYTES_PER_TASK` per slot,
#: runs as one Spark job (:func:`build_together`): its tasks stage the units, then write
#: the file groups, taking each by a claim file in the staging folder. That saves the
#: second job's scheduling (about 0.1 s, and as much JVM CPU). Larger builds, and whatever
#: a one-job build leaves, run as two jobs.
ONE_JOB_MAX_UNITS = 64
#: How long (seconds) a one-job task waits for other tasks' units with none finishing.
ONE_JOB_PATIENCE = 10.0
#: These partition types read file listings and parquet footers (and log files, for their
#: statistics): on a small table they are built on the driver, where two Spark jobs'
#: scheduling would cost more than the work (see :data:`DRIVER_BUILD_MAX_SLICES`).
_FOOTER_ONLY = (MetadataPartitionType.FILES, MetadataPartitionType.COLUMN_STATS,
                MetadataPartitionType.PARTITION_STATS)
#: A table with at most this many latest file slices, holding at most
#: :data:`DRIVER_BUILD_MAX_LOG_BYTES` of log files, gets its footer-only partitions built
#: on the driver (16 base files: about 20 ms, against 0.2-0.3 s for the Spark jobs).
DRIVER_BUILD_MAX_SLICES = 64
DRIVER_BUILD_MAX_LOG_BYTES = 16 << 20
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


def _run_together(spark: SparkSession, table: HudiTable, staging: str, units: list[Unit],
                  targets: Mapping[tuple[str, int], int], counts: Mapping[str, int],
                  definitions: Mapping[str, IndexDefinition],
                  groups: list[tuple[str, int, str]], instant_time: str, tasks: int
                  ) -> list[Row]:
    """Run the one-job build (:func:`build_together`) with ``tasks`` tasks: the stats rows
    of the file groups it wrote."""
    from pyspark.sql.pandas.types import from_arrow_schema
    return spark.range(tasks, numPartitions=tasks).mapInArrow(
        build_together(table.base_path, staging, units, targets, counts, definitions,
                       groups, instant_time, tasks, ONE_JOB_PATIENCE),
        from_arrow_schema(STATS_SCHEMA)).collect()


def task_slots(spark: SparkSession) -> int:
    """How many tasks the session runs at once, from its configuration (no Spark internals:
    ``spark.default.parallelism``, a ``local[N]`` master, or executors times cores)."""
    def conf(key: str) -> str | None:
        with contextlib.suppress(Exception):
            return spark.conf.get(key, None)
        return None

    for value in (conf("spark.default.parallelism"),):
        if value and value.isdigit():
            return max(1, int(value))
    master = (conf("spark.master") or "").strip()
    if master.startswith("local"):
        inner = master[master.find("[") + 1:master.find("]")] if "[" in master else "1"
        count = inner.split(",")[0].strip()
        if count == "*":
            return os.cpu_count() or 1
        return max(1, int(count)) if count.isdigit() else 1
    executors, cores = conf("spark.executor.instances"), conf("spark.executor.cores")
    if executors and cores and executors.isdigit() and cores.isdigit():
        return max(1, int(executors) * int(cores))
    return DEFAULT_SLOTS


def _unit_bytes(unit: Unit) -> int:
    """About how much a unit reads: its slice's files (a data partition's unit: little)."""
    return unit.file_slice.total_size if unit.file_slice is not None else 0


@contextlib.contextmanager
def _progress(table: HudiTable, staging: str, total: int,
              on_progress: ProgressCallback | None) -> Iterator[None]:
    """Report (units done, total) while the build job runs, from the markers its tasks leave
    in ``staging`` (counted every :data:`PROGRESS_INTERVAL` seconds), and at the end."""
    if on_progress is None:
        yield
        return
    stop = threading.Event()

    def poll() -> None:
        reported = -1
        while not stop.wait(PROGRESS_INTERVAL):
            with contextlib.suppress(OSError):
                done = len(staged_units(table.storage, staging))
                if done != reported and done < total:
                    reported = done
                    on_progress(done, total)

    watcher = threading.Thread(target=poll, name="index-build-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
    on_progress(total, total)


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
        # The completed file by its own name: on layout 2 (versions 8/9) that name holds the
        # completion time (``<init>_<completion>.deltacommit``); requested and inflight stay,
        # so the build completes the same instant again, at a new completion time.
        for instant in mdt.timeline.instant_files(init):
            if instant.is_completed:
                mdt.storage.delete(posixpath.join(mdt.timeline.timeline_dir, instant.file_name))

    def build(self, spark: SparkSession | None, table: HudiTable, partitions: Sequence[str],
              init: str, on_progress: ProgressCallback | None) -> None:
        """Build ``partitions`` from the data table's committed files as Spark jobs (the
        footer-only partitions of a small table on the driver), as base files at ``init``;
        then complete the metadata instant ``init``.

        Raises:
            IndexingError: no Spark session to run the build in.
        """
        if spark is None:
            raise IndexingError(
                f"building indexes of table {table.name} needs a Spark session: use "
                "hudisql.connect() and its table handles or SQL")
        # Task schemas as Spark types (a DDL string is parsed by a JVM call per job).
        from pyspark.sql.pandas.types import from_arrow_schema
        mdt = MetadataTable(table)
        definitions = self.definitions(table)
        view = FileSystemView(table.storage, table.properties, table.timeline)
        slices = view.latest_file_slices()
        small = (len(slices) <= DRIVER_BUILD_MAX_SLICES and sum(
            log.size for s in slices for log in s.log_files) <= DRIVER_BUILD_MAX_LOG_BYTES)
        on_driver = [p for p in partitions
                     if small and index_spec(table, p, definitions).kind in _FOOTER_ONLY]
        data_partitions = view.partitions()
        stats = [stat for p in on_driver
                 for stat in self._build_on_driver(table, mdt, p, data_partitions, init,
                                                   definitions, on_progress)]
        partitions = [p for p in partitions if p not in on_driver]
        if not partitions:
            mdt.reload().complete_instant(init, stats)
            return
        units = self._units(table, partitions, definitions, data_partitions, slices)
        ids = {p: mdt.file_group_ids(p) for p in partitions}
        groups = [(p, fg, file_id) for p, file_ids in ids.items()
                  for fg, file_id in enumerate(file_ids)]
        targets = {(p, fg): i for i, (p, fg, _) in enumerate(groups)}
        staging = f"{MARKER_DIR}/{init}/index"
        table.storage.delete_dir(staging)
        table.storage.makedirs(staging)
        slots = task_slots(spark)
        counts = {p: len(v) for p, v in ids.items()}
        written: dict[int, Row] = {}  # by target file group
        # One job for a small build: few units, and no more data than one task per slot
        # would read in the first of two jobs (a task waits ONE_JOB_PATIENCE at most for
        # another unit to be staged: units must be quick).
        size = sum(_unit_bytes(u) for u in units)
        if len(units) <= ONE_JOB_MAX_UNITS and size <= slots * BYTES_PER_TASK:
            tasks = max(1, min(slots, MAX_TASKS, max(len(units), len(groups))))
            with _progress(table, staging, len(units), on_progress):
                found = _run_together(spark, table, staging, units, targets, counts,
                                      definitions, groups, init, tasks)
            where = {(p, file_id): i for i, (p, _, file_id) in enumerate(groups)}
            written = {where[(row["partition"], row["file_id"])]: row for row in found}
        left = [i for i in range(len(groups)) if i not in written]
        if left:  # two jobs: the units not staged yet, then the file groups not written
            staged = staged_units(table.storage, staging)
            pieces = staged_pieces(table.storage, staging, sorted(staged))
            todo = [i for i in range(len(units)) if i not in staged]
            if todo:
                size = sum(_unit_bytes(units[i]) for i in todo)
                readers = min(len(todo), MAX_TASKS, max(slots, -(-size // BYTES_PER_TASK)))
                job = spark.range(len(todo), numPartitions=max(1, readers)).mapInArrow(
                    stage_rows(table.base_path, staging, units, todo, targets, counts,
                               definitions), from_arrow_schema(PIECES_SCHEMA))
                with _progress(table, staging, len(units), on_progress):
                    located = job.collect()
                for row in located:
                    pieces.setdefault(int(row["target"]), []).append(Piece(
                        int(row["unit"]), row["file"], int(row["offset"]), int(row["length"])))
            writers = max(1, min(len(left), MAX_TASKS, slots))
            written.update(zip(left, spark.range(len(left), numPartitions=writers).mapInArrow(
                write_groups(table.base_path, groups, left, units, pieces, init),
                from_arrow_schema(STATS_SCHEMA)).collect(), strict=False))
        stats += [WriteStat(file_id=row["file_id"], path=row["path"], num_writes=row["rows"],
                            num_inserts=row["rows"], partition_path=row["partition"],
                            total_write_bytes=row["bytes"], file_size_in_bytes=row["bytes"])
                  for row in written.values()]
        table.storage.delete_dir(staging)
        mdt.reload().complete_instant(init, stats)

    @staticmethod
    def _build_on_driver(table: HudiTable, mdt: MetadataTable, partition: str,
                         data_partitions: Sequence[str], init: str,
                         definitions: Mapping[str, IndexDefinition],
                         on_progress: ProgressCallback | None) -> list[WriteStat]:
        """Build a footer-only partition of a small table here: its records per data
        partition (the Spark tasks' own units), then one base file per file group."""
        pieces = []
        for done, data_partition in enumerate(data_partitions, 1):
            pieces.append(unit_rows(table, Unit(partition, data_partition), definitions))
            if on_progress is not None:
                on_progress(done, len(data_partitions))
        rows = (pa.concat_tables(pieces).cast(S.arrow_schema()) if pieces
                else S.to_parquet_rows([]))
        return mdt.write_base_files(partition, merged_rows(rows), init)

    @staticmethod
    def _units(table: HudiTable, partitions: Sequence[str],
               definitions: Mapping[str, IndexDefinition], data_partitions: Sequence[str],
               slices: Sequence[FileSlice]) -> list[Unit]:
        """The build's units: per data partition, or per latest file slice (record and
        secondary indexes)."""
        units: list[Unit] = []
        for partition in partitions:
            kind = index_spec(table, partition, definitions).kind
            if kind in _PER_DATA_PARTITION:
                units += [Unit(partition, p) for p in data_partitions]
            else:
                units += [Unit(partition, s.partition_path, s) for s in slices]
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
