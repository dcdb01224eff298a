"""The metadata table's own table services: compaction, log compaction and clean.

The metadata table is a merge-on-read table that gets log files with every data commit.
As in Apache Hudi (``HoodieBackedTableMetadataWriter.performTableServices``), writers keep
it compact themselves: :func:`run_metadata_services` runs under the data table's lock in
each data commit, before that commit's metadata deltacommit (Hudi runs them at the start
of each write), with the writer's options:

1. A service a dead process left pending is finished: a compaction is reverted and run
   again, a log compaction rolled back (its plan deleted), a clean carried out.
2. With ``L`` the latest completed metadata deltacommit, nothing more is done while any
   data instant at or before ``L`` is pending: a metadata base file at ``L001`` must
   hold everything up to ``L`` and nothing that may yet be rolled back.
3. Clean (``L002``), once three instants followed the last compaction: KEEP_LATEST_COMMITS
   with ``min(hoodie.cleaner.commits.retained, 20)``.
4. Compaction (``L001``) once ``hoodie.metadata.compact.max.delta.commits`` (default 10)
   deltacommits completed since the last one; else, with
   ``hoodie.metadata.log.compaction.enable`` (or ``hoodie.log.compaction.enable``), log
   compaction (``L005``) of slices with
   ``hoodie.metadata.log.compaction.blocks.threshold`` (default 5) valid blocks.

Instant names are Hudi's (``HoodieTableMetadataUtil.OperationSuffix``). Both services use
the shared plan / execute / commit path (``hudisql.txn.table_service``) with the metadata
table's own merge (``HoodieMetadataPayload`` rules): compaction writes each planned slice's
live records as a new base file (HFile); log compaction merges the planned blocks into one
delete block (keys deleted before their newest record, if any) and one data block, whose
``COMPACTED_BLOCK_TIMES`` header names the instants replaced. Only built partitions are
compacted (a partition being indexed is the indexer's), and a file group whose logs hold a
block not yet visible is left for a later compaction.

A data instant whose metadata deltacommit a service already merged cannot be undone by
deleting its log files: :func:`rebuild_without` rebuilds the built partitions from the
data table without that instant (Hudi deletes and re-bootstraps its metadata table when a
restore goes behind a metadata compaction).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hudisql.metadata import schema as S
from hudisql.metadata.builders import build_partition_records
from hudisql.metadata.config import completed_partitions
from hudisql.metadata.formats import HFILE, PARQUET, data_block_records, encode_data_block
from hudisql.metadata.reader import KeyFilter, merge_slice
from hudisql.metadata.records import Record, compose_records, is_live
from hudisql.metadata.table import (
    BASE_FORMAT_KEY,
    BUILD_TOKEN,
    LEGACY_FORMAT_KEY,
    MetadataTable,
    Slice,
)
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.filenames import LogFileName
from hudisql.table.format.fsview import BaseFile, FileSlice, LogFile
from hudisql.table.format.instant import Action, Instant, new_instant_time
from hudisql.table.format.log.format import BlockType, DeleteRecord, HeaderKey
from hudisql.table.format.log.reader import decode_delete_block, scan_blocks
from hudisql.table.format.log.writer import encode_delete_block
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.service_plans import (
    CompactionOperation,
    CompactionPlan,
    compaction_plan,
    int_setting,
)
from hudisql.table.format.timeline import Timeline
from hudisql.table.read.merge import plan_log_blocks
from hudisql.table.services.clean import CleanSettings
from hudisql.table.services.compaction import (
    build_plan as build_compaction_plan,
)
from hudisql.table.services.compaction import (
    compaction_metadata,
    restart_compaction,
    revert_compaction,
)
from hudisql.table.services.compaction import (
    plan_slice as plan_compaction,
)
from hudisql.table.services.log_compaction import (
    LogCompactionSettings,
    log_compaction_metadata,
    planned_instants,
)
from hudisql.table.services.log_compaction import (
    build_plan as build_log_compaction_plan,
)
from hudisql.table.services.log_compaction import (
    plan_slice as plan_log_compaction,
)
from hudisql.table.table import HudiTable
from hudisql.table.write.files import MARKER_DIR, create_log_files
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.table_service import (
    ServiceGuard,
    ServiceSteps,
    StepHook,
    clean_locked,
    execute_plan,
    no_step,
    schedule_plan,
)
from hudisql.txn.tasks import Task, TaskAttempt

__all__ = [
    "CLEAN_SUFFIX",
    "COMPACTION_SUFFIX",
    "LOG_COMPACTION_SUFFIX",
    "MetadataServiceSettings",
    "compose_records",
    "covered_by_service",
    "rebuild_without",
    "run_metadata_services",
]

#: Hudi's suffixes of metadata-table service instants (after the latest deltacommit).
COMPACTION_SUFFIX = "001"
CLEAN_SUFFIX = "002"
LOG_COMPACTION_SUFFIX = "005"

MAX_DELTA_COMMITS = "hoodie.metadata.compact.max.delta.commits"
LOG_COMPACTION_ENABLE = "hoodie.metadata.log.compaction.enable"
LOG_COMPACTION_BLOCKS = "hoodie.metadata.log.compaction.blocks.threshold"
#: Hudi: enabling log compaction (``hoodie.log.compaction.enable``) enables it on the
#: metadata table too.
DATA_LOG_COMPACTION_ENABLE = "hoodie.log.compaction.enable"
CLEANER_COMMITS_RETAINED = "hoodie.cleaner.commits.retained"
#: Hudi's cap on the commits the metadata table's cleaner retains.
MAX_CLEANER_COMMITS_RETAINED = 20
#: Completed instants after the last compaction before a clean may remove old slices
#: (readers that listed the old slice get time to finish, as in Hudi).
_CLEAN_DELAY = 3


@dataclass(frozen=True)
class MetadataServiceSettings:
    """When the metadata table compacts, log-compacts and cleans itself."""

    max_delta_commits: int = 10
    log_compaction: bool = False
    blocks_threshold: int = 5
    commits_retained: int = 10

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> MetadataServiceSettings:
        """The settings from Hudi's option names.

        Raises:
            TableServiceError: a value that is not an integer of the least it may be.
        """
        d = cls()
        enable = any(str(options.get(key, "false")).strip().lower() == "true"
                     for key in (LOG_COMPACTION_ENABLE, DATA_LOG_COMPACTION_ENABLE))
        retained = int_setting(options, CLEANER_COMMITS_RETAINED, d.commits_retained, 1)
        return cls(
            int_setting(options, MAX_DELTA_COMMITS, d.max_delta_commits, 1),
            enable,
            int_setting(options, LOG_COMPACTION_BLOCKS, d.blocks_threshold, 2),
            min(retained, MAX_CLEANER_COMMITS_RETAINED),
        )


# -- the driver ----------------------------------------------------------------------------


def run_metadata_services(
    data: HudiTable, options: Mapping[str, str], on_step: StepHook = no_step
) -> list[str]:
    """Finish, then schedule and run, the metadata table's services (see module notes).

    Call under the data table's lock, before writing a metadata deltacommit.

    Returns:
        The metadata instants completed (pending ones finished first, then new ones).
    """
    if not MetadataTable.exists_for(data):
        return []
    settings = MetadataServiceSettings.parse(options)
    mdt = MetadataTable(data)
    done = _finish_pending(mdt, on_step)
    mdt.reload()
    latest = mdt.timeline.last_completed([Action.DELTACOMMIT])
    if latest is None or _pending_data_instants(data.timeline, latest.timestamp):
        return done
    base = latest.timestamp
    cleaned = _clean_if_due(mdt, base, settings, on_step)
    if cleaned:
        done.append(cleaned)
        mdt.reload()
    converted = _convert_if_parquet(mdt, base, on_step)
    if converted:
        done.append(converted)
        return done
    compacted = _compact_if_due(mdt, base, settings, on_step)
    if compacted is not None:
        done.append(compacted)
    elif settings.log_compaction:
        log_compacted = _log_compact(mdt, base, settings, on_step)
        if log_compacted is not None:
            done.append(log_compacted)
    return done


def _pending_data_instants(timeline: Timeline, latest: str) -> list[Instant]:
    """Data instants at or before the metadata table's latest deltacommit still pending."""
    return [i for i in timeline.reload().pending() if i.timestamp <= latest]


def _as_table(mdt: MetadataTable) -> HudiTable:
    return HudiTable(mdt.storage, mdt.properties, mdt.reload().timeline)


def _guard(on_step: StepHook) -> ServiceGuard:
    # The data table's lock is held by the commit that runs the services.
    return ServiceGuard(on_step=on_step)


def _finish_pending(mdt: MetadataTable, on_step: StepHook) -> list[str]:
    """Run again a pending compaction, roll back a pending log compaction, finish a clean."""
    done: list[str] = []
    timeline = mdt.timeline
    for pending in timeline.pending([Action.LOGCOMPACTION]):
        mdt.rollback(pending.timestamp)  # its blocks and its plan go, as Hudi does
    for pending in timeline.pending([Action.COMPACTION]):
        table = _as_table(mdt)
        plan = compaction_plan(table.timeline, pending.timestamp)
        execute_plan(compaction_steps(mdt), table, pending.timestamp, plan, _guard(on_step))
        done.append(pending.timestamp)
    if mdt.reload().timeline.pending([Action.CLEAN]):
        # clean_locked finishes it first; with nothing more to delete it plans no new one.
        clean_locked(_as_table(mdt), CleanSettings(commits_retained=1 << 30))
    return done


def _clean_if_due(mdt: MetadataTable, base: str, settings: MetadataServiceSettings,
                  on_step: StepHook) -> str | None:
    timeline = mdt.timeline
    last = timeline.last_completed([Action.COMMIT])
    if last is None:
        return None  # no compaction yet: every slice is the latest
    after = [i for i in timeline.completed() if i.timestamp > last.timestamp]
    instant_time = _service_instant(mdt, base, CLEAN_SUFFIX)
    if len(after) < _CLEAN_DELAY or timeline.get(instant_time) is not None:
        return None
    table = _as_table(mdt)
    metadata = clean_locked(table, CleanSettings(commits_retained=settings.commits_retained),
                            instant_time, on_step=on_step)
    return instant_time if metadata is not None else None


def _compact_if_due(mdt: MetadataTable, base: str, settings: MetadataServiceSettings,
                    on_step: StepHook) -> str | None:
    timeline = mdt.timeline
    last = timeline.last_completed([Action.COMMIT])
    since = [i for i in timeline.completed([Action.DELTACOMMIT])
             if last is None or i.timestamp > last.timestamp]
    instant_time = _service_instant(mdt, base, COMPACTION_SUFFIX)
    if len(since) < settings.max_delta_commits or timeline.get(instant_time) is not None:
        return None
    return _schedule_and_run(mdt, compaction_steps(mdt), instant_time, on_step)


def _convert_if_parquet(mdt: MetadataTable, base: str, on_step: StepHook) -> str | None:
    """Convert a metadata table earlier hudisql wrote (parquet base files, Avro data
    blocks) to HFile: a compaction at ``L001`` of every built file group, the slices
    without logs too, writes HFile base files; then its hoodie.properties say ``HFILE``
    and later deltacommits write HFILE_DATA blocks. Waits (returns None) while an index
    is being built (its builder writes the format the properties name) or when a slice
    cannot be compacted whole yet; a crash before the properties change leaves a
    metadata table that reads the same, converted by a later write.

    Returns:
        The compaction's instant time ("" when only the properties changed), or None.
    """
    if mdt.base_format != PARQUET or mdt.data.properties.metadata_partitions_inflight:
        return None
    slices = _built_slices(mdt)
    done = ""
    if any(s.base_file is None or not s.base_file.path.endswith(".hfile") for s in slices):
        instant_time = _service_instant(mdt, base, COMPACTION_SUFFIX)
        if mdt.timeline.get(instant_time) is not None:
            return None
        done = _schedule_and_run(mdt, compaction_steps(mdt, whole=True), instant_time,
                                 on_step, slices) or ""
        slices = _built_slices(mdt.reload())
        if any(s.base_file is None or not s.base_file.path.endswith(".hfile")
               for s in slices):
            return done or None
    values = dict(mdt.properties)
    values[BASE_FORMAT_KEY] = HFILE
    values.pop(LEGACY_FORMAT_KEY, None)
    TableProperties(values).save(mdt.storage)
    mdt.reload()
    return done


def _log_compact(mdt: MetadataTable, base: str, settings: MetadataServiceSettings,
                 on_step: StepHook) -> str | None:
    instant_time = _service_instant(mdt, base, LOG_COMPACTION_SUFFIX)
    if mdt.timeline.get(instant_time) is not None:
        return None
    lc = LogCompactionSettings(blocks_threshold=settings.blocks_threshold)
    return _schedule_and_run(mdt, log_compaction_steps(mdt, lc), instant_time, on_step)


def _service_instant(mdt: MetadataTable, base: str, suffix: str) -> str:
    """The instant of a metadata service: ``<base><suffix>`` on version 6 (Hudi 0.x's), a
    fresh instant time after everything on the metadata timeline on layout 2 (Hudi 1.x's:
    its files are sliced by completion time, and readers know it as the table's own)."""
    timeline = mdt.timeline
    if timeline.layout < 2:
        return base + suffix
    latest = max([base, *(t for i in timeline.instants
                          for t in (i.timestamp, i.completion_time or ""))])
    return new_instant_time(after=latest)


def _schedule_and_run(mdt: MetadataTable, steps: ServiceSteps, instant_time: str,
                      on_step: StepHook, slices: Sequence[FileSlice] | None = None
                      ) -> str | None:
    table = _as_table(mdt)
    guard = _guard(on_step)
    if slices is None:
        slices = _built_slices(mdt)
    if schedule_plan(steps, table, slices, guard, instant_time) is None:
        return None
    table = table.reload()
    plan = compaction_plan(table.timeline, instant_time, steps.action)
    execute_plan(steps, table, instant_time, plan, guard)
    return instant_time


# -- slices --------------------------------------------------------------------------------


def _built_slices(mdt: MetadataTable) -> list[FileSlice]:
    """The latest slice of every file group of every built partition."""
    out: list[FileSlice] = []
    storage = mdt.storage
    for partition in completed_partitions(mdt.data.properties):
        ids = mdt.file_group_ids(partition)
        if not ids:
            continue
        for found in mdt.latest_slices(partition, ids).values():
            base = None
            if found.base_file is not None:
                rel = f"{partition}/{found.base_file}"
                base = BaseFile(rel, found.file_id, found.base_instant, BUILD_TOKEN,
                                storage.size(rel))
            logs = []
            for name in found.log_files:
                rel = f"{partition}/{name}"
                parsed = LogFileName.parse(name)
                assert parsed is not None
                logs.append(LogFile(rel, parsed.file_id, parsed.base_instant,
                                    int(parsed.version), parsed.write_token or "",
                                    storage.size(rel)))
            out.append(FileSlice(partition, found.file_id, found.base_instant, base,
                                 tuple(logs)))
    return out


def _slice_of(operation: CompactionOperation) -> Slice:
    return Slice(operation.file_id, operation.base_instant_time, operation.data_file_path,
                 list(operation.delta_file_paths))


# -- compaction ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Whole:
    """A planned compaction of a whole slice (every log file: nothing is left behind)."""

    operation: CompactionOperation

    @property
    def file_group(self) -> tuple[str, str]:
        return self.operation.file_group


def compaction_steps(mdt: MetadataTable, whole: bool = False) -> ServiceSteps:
    """The metadata table's compaction in the shared service path (``whole``: slices
    without logs too, to rewrite their base files as HFile)."""

    def plan_task(table: HudiTable, file_slice: FileSlice) -> Task:
        def plan(attempt: TaskAttempt) -> _Whole | None:
            op = plan_compaction(table.storage, table.timeline, file_slice,
                                 mdt.visible_instants(), reconcile="off")
            if op is None and whole and not file_slice.log_files:
                size = (file_slice.base_file.size if file_slice.base_file else 0) / (1 << 20)
                op = CompactionOperation.of_slice(file_slice, [], size, size)
            # Logs after a block not yet visible would be left in the old slice: wait.
            if op is None or len(op.delta_file_paths) != len(file_slice.log_files):
                return None
            return _Whole(op)
        return plan

    def execute_tasks(table: HudiTable, plan: CompactionPlan, instant_time: str) -> list[Task]:
        return [_bind(_compact_slice, mdt, op, instant_time) for op in plan.operations]

    def commit(table: HudiTable, plan: CompactionPlan, instant_time: str,
               stats: list[WriteStat]) -> tuple[list[WriteStat], CommitMetadata]:
        return stats, compaction_metadata(stats, mdt.record_schema)

    def restart(table: HudiTable, instant: Instant) -> Instant:
        return restart_compaction(table.storage, table.timeline, instant)

    def undo(table: HudiTable, instant: Instant,
             participants: Sequence[CommitParticipant]) -> None:
        revert_compaction(table.storage, table.timeline, instant.timestamp)

    return ServiceSteps(
        action=Action.COMPACTION,
        excluded=(Action.COMPACTION, Action.LOGCOMPACTION),
        plan_task=plan_task,
        build_plan=lambda found: build_compaction_plan(w.operation for w in found),
        execute_tasks=execute_tasks,
        commit=commit,
        restart=restart,
        undo=undo,
        tidy=_tidy,
    )


def _bind(fn: object, *args: object) -> Task:
    def task(attempt: TaskAttempt) -> object:
        return fn(*args, attempt)  # type: ignore[operator]
    return task


def _tidy(table: HudiTable, instant_time: str, metadata: CommitMetadata) -> None:
    table.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")


def _compact_slice(mdt: MetadataTable, operation: CompactionOperation, instant_time: str,
                   attempt: TaskAttempt) -> WriteStat:
    """The planned slice's live records as a new base file at ``instant_time``."""
    merged: dict[str, Record] = {}
    merge_slice(mdt, operation.partition_path, _slice_of(operation), mdt.visible_instants(),
                KeyFilter(None, None), merged)
    # Deletion markers have done their work: nothing older than this base file is read.
    live = [r for r in merged.values() if is_live(r)]
    # Always HFile: a compaction of a parquet metadata table converts it (a re-run of a
    # conversion's compaction a crash left pending too).
    stat = mdt.write_base_file(operation.partition_path, operation.file_id,
                               S.to_parquet_rows(live), instant_time, base_format=HFILE)
    stat.prev_commit = operation.base_instant_time
    stat.extra["totalLogFilesCompacted"] = len(operation.delta_file_paths)
    return stat


# -- log compaction ------------------------------------------------------------------------


def log_compaction_steps(mdt: MetadataTable, settings: LogCompactionSettings) -> ServiceSteps:
    """The metadata table's log compaction in the shared service path."""

    def plan_task(table: HudiTable, file_slice: FileSlice) -> Task:
        def plan(attempt: TaskAttempt) -> object:
            return plan_log_compaction(table.storage, table.timeline, file_slice, settings,
                                       mdt.visible_instants(), reconcile="off")
        return plan

    def execute_tasks(table: HudiTable, plan: CompactionPlan, instant_time: str) -> list[Task]:
        return [_bind(_log_compact_slice, mdt, op, planned_instants(plan, op), instant_time)
                for op in plan.operations]

    def commit(table: HudiTable, plan: CompactionPlan, instant_time: str,
               stats: list[WriteStat]) -> tuple[list[WriteStat], CommitMetadata]:
        return stats, log_compaction_metadata(stats, mdt.record_schema)

    def restart(table: HudiTable, instant: Instant) -> Instant:
        return table.timeline.transition_to_inflight(instant)

    def undo(table: HudiTable, instant: Instant,
             participants: Sequence[CommitParticipant]) -> None:
        mdt.reload().rollback(instant.timestamp)

    return ServiceSteps(
        action=Action.LOGCOMPACTION,
        excluded=(Action.COMPACTION, Action.LOGCOMPACTION),
        plan_task=plan_task,
        build_plan=build_log_compaction_plan,
        execute_tasks=execute_tasks,
        commit=commit,
        restart=restart,
        undo=undo,
        tidy=_tidy,
    )


def _log_compact_slice(mdt: MetadataTable, operation: CompactionOperation,
                       instants: list[str] | None, instant_time: str,
                       attempt: TaskAttempt) -> WriteStat | None:
    """Merge the planned blocks of one slice into a delete block and a data block."""
    partition = operation.partition_path
    contents: dict[str, bytes] = {}
    blocks = []
    for name in operation.delta_file_paths:
        rel = f"{partition}/{name}"
        contents[rel] = mdt.storage.read_bytes(rel)
        blocks.extend(scan_blocks(contents[rel], rel))
    wanted = set(instants) if instants is not None else None
    ordered = [b for b in plan_log_blocks(blocks, mdt.visible_instants(), reconcile="off").merged
               if wanted is None or b.instant_time in wanted]
    if not ordered:
        return None
    # Per key: whether a delete comes before its newest record, and that record.
    deleted: set[str] = set()
    records: dict[str, Record] = {}
    for block in ordered:
        data = contents[block.log_file]
        if block.block_type == BlockType.DELETE:
            for gone in decode_delete_block(data, block):
                if gone.record_key is not None:
                    deleted.add(gone.record_key)
                    records.pop(gone.record_key, None)
            continue
        for record in data_block_records(data, block):
            key = record["key"]
            older = records.get(key)
            records[key] = record if older is None else compose_records(older, record)
    replaced: list[str] = []
    for block in reversed(ordered):  # newest first, as Hudi lists them
        if block.instant_time not in replaced:
            replaced.append(str(block.instant_time))
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: mdt.record_schema,
              HeaderKey.COMPACTED_BLOCK_TIMES: ",".join(replaced)}
    encoded = []
    if deleted:
        encoded.append(encode_delete_block([DeleteRecord(k, "", 0) for k in sorted(deleted)],
                                           header))
    rows = [records[k] for k in sorted(records)]
    if rows or not encoded:
        encoded.append(encode_data_block(mdt.base_format, header, rows,
                                         value_types=mdt.value_types))
    # Layout 2 names the log file after the log compaction that writes it.
    named = instant_time if mdt.timeline.layout >= 2 else operation.base_instant_time
    written = create_log_files(mdt.storage, partition, operation.file_id, named,
                               instant_time, attempt.write_token, encoded, 1 << 30)
    total = sum(size for _, size in written)
    return WriteStat(
        file_id=operation.file_id, path=written[0][0], prev_commit=operation.base_instant_time,
        num_writes=len(rows), num_deletes=len(deleted), num_update_writes=len(rows),
        partition_path=partition, total_write_bytes=total, file_size_in_bytes=total,
        log_files=[rel.rsplit("/", 1)[-1] for rel, _ in written],
        extra={"totalLogBlocks": len(encoded)},
    )


# -- rollback of a data instant a service already merged -----------------------------------


def covered_by_service(mdt: MetadataTable, instant_time: str) -> bool:
    """Whether the metadata deltacommit ``instant_time`` may be merged into a metadata
    compaction's base files or a log compaction's blocks (a completed one after it)."""
    timeline = mdt.timeline
    own = timeline.get(instant_time)
    if own is None or not own.is_completed:
        return False
    for instant in timeline.completed([Action.COMMIT, Action.DELTACOMMIT]):
        if instant.timestamp <= instant_time:
            continue
        if instant.action == Action.COMMIT or any(
                f.action == Action.LOGCOMPACTION for f in timeline.instant_files(
                    instant.timestamp)):
            return True
    return False


def rebuild_without(data: HudiTable, instant_time: str) -> list[str]:
    """Rebuild every built metadata partition from ``data`` without ``instant_time``, and
    remove that instant's metadata deltacommit (call under the table lock, before the
    data instant is rolled back).

    Returns:
        The partitions rebuilt.
    """
    mdt = MetadataTable(data)
    files = [f for ts in (i.timestamp for i in data.timeline.instants) if ts != instant_time
             for f in data.timeline.instant_files(ts)]
    without = HudiTable(data.storage, data.properties,
                        Timeline(data.storage, data.properties, files))
    latest = without.timeline.last_completed()
    rebuilt: list[str] = []
    for partition in completed_partitions(data.properties):
        count = len(mdt.file_group_ids(partition))
        if not count:
            continue
        records = build_partition_records(without, partition)
        mdt.drop_partition(partition)
        mdt.reload().build_partition(partition, records,
                                     latest.timestamp if latest else None, count)
        rebuilt.append(partition)
    mdt.reload().rollback(instant_time)
    return rebuilt
