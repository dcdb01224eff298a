"""Full compaction in the table core: the plan strategy and the work on one slice.

**Plan.** Compaction is due once ``hoodie.compact.inline.max.delta.commits`` (default 5)
deltacommits completed since the last compaction (Hudi's NUM_COMMITS trigger). It plans
every latest file slice with log files, except file groups in a pending compaction or
clustering (a pending log compaction does not exclude: RFC-48 scenario 4). A slice's
planned log files stop before the first log file holding a block of a pending instant: the
compaction merges what was committed when it was planned. The plan is Hudi's
``HoodieCompactionPlan`` (version 2) in ``<ts>.compaction.requested``.

**Execution.** :func:`execute_slice` reads the planned slice (base file and planned log
files, merged as a reader sees them) and writes it as a new base file at the compaction's
instant (a pure function Spark executors run, one task per slice); records keep their
``_hoodie_commit_time`` and ``_hoodie_commit_seqno``. The instant completes as a ``commit``
with operation ``COMPACT``.

**Writes while a compaction is pending.** As in Hudi, a writer that finds a file group in
a pending compaction (:func:`pending_compaction_bases`) writes its log files on the new
slice, named by the compaction's instant (:func:`on_new_slice`): readers merge them into
the latest visible slice until the compaction completes, and into its new base file after;
the compaction neither hides them nor conflicts with them, so it can run while a stream
keeps writing. A write that named its log files by the old slice (it tagged before the
plan existed) would be hidden by the new base file: the compaction's commit leaves such
file groups out (:func:`late_writes`), and a writer that completes after the compaction
conflicts with it (optimistic concurrency) and is rolled back. Versions 8 and 9 name a log
by the deltacommit that wrote it and slice it by that deltacommit's completion time (Hudi
1.x): every log whose writer completed after the plan was requested is on the new slice,
whenever the writer started; only logs that completed before it and that the plan lacks
are late. A writer that started before the plan and completes after the compaction still
conflicts with it, as in Hudi's conflict resolution.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pyarrow as pa

from hudisql.errors import TableServiceError
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.filenames import BaseFileName, LogFileName
from hudisql.table.format.fsview import BaseFile, FileSlice, LogFile, VisibleInstants
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.log.format import BlockType
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.schema import avro_to_arrow
from hudisql.table.format.service_plans import (
    CompactionOperation,
    CompactionPlan,
    compaction_plan,
    int_setting,
)
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.merge import read_file_slice
from hudisql.table.read.reconcile import Verdict, judge_log_blocks
from hudisql.table.write.files import MARKER_DIR, write_base_file

__all__ = [
    "COMPACT_OPERATION",
    "CompactionSettings",
    "build_plan",
    "compaction_due",
    "compaction_metadata",
    "execute_slice",
    "late_writes",
    "on_new_slice",
    "pending_compaction_bases",
    "plan_slice",
    "restart_compaction",
    "revert_compaction",
]

MAX_DELTA_COMMITS = "hoodie.compact.inline.max.delta.commits"
#: ``operationType`` of a completed compaction.
COMPACT_OPERATION = "COMPACT"
_MB = 1024 * 1024
_MERGED = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA, BlockType.DELETE)


@dataclass(frozen=True)
class CompactionSettings:
    """When a compaction is due."""

    max_delta_commits: int = 5

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> CompactionSettings:
        """The settings from Hudi's option names.

        Raises:
            TableServiceError: a value that is not a positive integer.
        """
        return cls(int_setting(options, MAX_DELTA_COMMITS, cls.max_delta_commits, 1))


def compaction_due(timeline: Timeline, settings: CompactionSettings) -> bool:
    """True when enough deltacommits completed since the last compaction (or ever)."""
    last = timeline.last_completed([Action.COMMIT])
    since = [
        i for i in timeline.completed([Action.DELTACOMMIT])
        if last is None or i.timestamp > last.timestamp
    ]
    return len(since) >= settings.max_delta_commits


def plan_slice(
    storage: Storage, timeline: Timeline, file_slice: FileSlice,
    visible: VisibleInstants | None = None, reconcile: str = "full",
) -> CompactionOperation | None:
    """The compaction of one slice: its base file and the log files before the first that
    holds a pending instant's block; None for a slice without (such) log files.

    ``reconcile`` is the block reconciliation of ``hudisql.table.read.reconcile`` (``off`` for
    the metadata table, whose readers do not reconcile)."""
    visible = visible or VisibleInstants(timeline)
    logs: list[LogFile] = []
    for log in file_slice.log_files:
        blocks = scan_log_file(storage, log.path)
        verdicts = judge_log_blocks(blocks, visible, reconcile)
        if any(v.verdict == Verdict.NOT_VISIBLE and v.block.block_type in _MERGED
               for v in verdicts):
            break
        logs.append(log)
    if not logs:
        return None
    size = sum(log.size for log in logs) / _MB
    base = file_slice.base_file
    base_mb = (base.size if base is not None else 0) / _MB
    return CompactionOperation.of_slice(file_slice, logs, base_mb + size, base_mb)


def build_plan(operations: Iterable[CompactionOperation]) -> CompactionPlan | None:
    """The compaction plan of ``operations`` (None when there are none)."""
    ops = sorted(operations, key=lambda op: (op.partition_path, op.file_id))
    return CompactionPlan(operations=ops) if ops else None


def _join(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


def planned_slice(storage: Storage, operation: CompactionOperation) -> FileSlice:
    """The file slice ``operation`` names, from storage.

    Raises:
        TableServiceError: a planned file is gone (cleaned or rolled back since).
    """
    partition = operation.partition_path
    try:
        base = None
        if operation.data_file_path:
            rel = _join(partition, operation.data_file_path)
            base = BaseFile(rel, operation.file_id, operation.base_instant_time, "",
                            storage.size(rel))
        logs = []
        for name in operation.delta_file_paths:
            parsed = LogFileName.parse(name)
            if parsed is None:
                raise TableServiceError(f"{name!r} in a compaction plan is not a log file name")
            rel = _join(partition, name)
            logs.append(LogFile(rel, parsed.file_id, parsed.base_instant, int(parsed.version),
                                parsed.write_token or "", storage.size(rel)))
    except FileNotFoundError as exc:
        raise TableServiceError(
            f"a file of the planned slice of file group {operation.file_id} is gone ({exc}); "
            "roll the plan back and schedule a new one"
        ) from None
    return FileSlice(partition, operation.file_id, operation.base_instant_time, base,
                     tuple(sorted(logs, key=lambda lf: lf.log_order)))


def execute_slice(
    storage: Storage,
    props: TableProperties,
    timeline: Timeline,
    operation: CompactionOperation,
    instant_time: str,
    write_token: str,
    avro_schema: str,
    compression: str,
) -> WriteStat:
    """Write the merged rows of the planned slice as a new base file at ``instant_time``.

    Returns:
        The base file's write stat.

    Raises:
        TableServiceError: a planned file is gone.
    """
    file_slice = planned_slice(storage, operation)
    rows = read_file_slice(storage, props, timeline, file_slice, as_of=instant_time)
    # Columns added since the slice was written (ALTER TABLE ADD COLUMNS, schema evolution on
    # write) are null in its rows: the new base file has the table's schema.
    for field in avro_to_arrow(avro_schema):
        if field.name not in rows.column_names:
            rows = rows.append_column(field, pa.nulls(rows.num_rows, field.type))
    stat = write_base_file(
        storage, operation.partition_path, operation.file_id, instant_time, write_token,
        rows, avro_schema, prev_commit=operation.base_instant_time,
        num_updates=rows.num_rows, compression=compression,
    )
    stat.extra["totalLogFilesCompacted"] = len(operation.delta_file_paths)
    return stat


def late_writes(timeline: Timeline, plan: CompactionPlan, instant_time: str) -> set[str]:
    """File ids of ``plan`` that a write other than a log compaction touched with log files
    the plan does not hold (completed or pending): compacting them would hide that write.
    Log files on the compaction's new slice (:func:`on_new_slice`) hide nothing."""
    planned = {op.file_id: set(op.delta_file_paths) for op in plan.operations}
    by_completion = timeline.props.version >= 8
    hit: set[str] = set()
    for instant in timeline.instants:
        if instant.timestamp == instant_time or instant.action not in (
                Action.DELTACOMMIT, Action.COMMIT, Action.REPLACECOMMIT):
            continue
        if any(f.action == Action.LOGCOMPACTION for f in timeline.instant_files(instant.timestamp)):
            continue
        if not instant.is_completed:
            continue  # it will conflict with this compaction when it commits
        stats = timeline.commit_metadata(instant).write_stats()
        # Version 8/9: a log belongs to the slice its writer's completion time falls in.
        completed_at = (instant.completion_time or instant.timestamp) if by_completion else None
        for stat in stats:
            names = {posixpath.basename(n) for n in (stat.path, *stat.log_files)
                     if n and not on_new_slice(n, instant_time, completed_at)}
            files = planned.get(stat.file_id)
            if files is not None and not names <= files and instant.timestamp > min(
                    (op.base_instant_time for op in plan.operations
                     if op.file_id == stat.file_id), default=""):
                hit.add(stat.file_id)
    return hit


def pending_compaction_bases(timeline: Timeline) -> dict[tuple[str, str], str]:
    """``(partition, file_id)`` of each file group in a pending compaction, mapped to the
    compaction's instant: the base instant a writer names its log files by (the new slice)."""
    bases: dict[tuple[str, str], str] = {}
    for instant in timeline.pending([Action.COMPACTION]):
        plan = compaction_plan(timeline, instant.timestamp, Action.COMPACTION)
        for group in plan.file_groups():
            bases[group] = instant.timestamp
    return bases


def on_new_slice(name: str, compaction_instant: str, completed_at: str | None = None) -> bool:
    """True when ``name`` is a log file of the slice the compaction at
    ``compaction_instant`` starts, or a later one (written while it was pending, or after).

    Version 6 names a log by its slice's base instant: on the new slice when that is the
    compaction's instant. Version 8/9 name a log by the deltacommit that wrote it, and slice
    it by that deltacommit's completion time ``completed_at`` (given for those versions):
    on the new slice when the writer completed after the compaction was requested.
    """
    parsed = LogFileName.parse(posixpath.basename(name))
    if parsed is None:
        return False
    if completed_at is None:
        return parsed.base_instant == compaction_instant
    return completed_at > compaction_instant


def revert_compaction(storage: Storage, timeline: Timeline, instant_time: str) -> None:
    """Undo a failed compaction's work and make it requested again, so it can be re-run.

    Its base files (named by its instant, invisible while it is pending) are deleted, then
    its inflight file; the plan stays. No rollback instant is written: the instant is not
    undone, only its attempt (as Hudi reverts an inflight compaction to requested).

    Raises:
        TableServiceError: ``instant_time`` is not a pending compaction.
    """
    instant = timeline.get(instant_time)
    if instant is None or instant.is_completed or instant.action != Action.COMPACTION:
        raise TableServiceError(
            f"{instant_time} is not a pending compaction of table {storage.base_uri}; "
            "SHOW COMPACTION lists them"
        )
    plan = compaction_plan(timeline, instant_time)
    for partition in sorted({op.partition_path for op in plan.operations}):
        for status in storage.list_dir(partition):
            parsed = BaseFileName.parse(status.name)
            if parsed is not None and parsed.instant == instant_time:
                storage.delete(status.path)
    storage.delete_dir(f"{MARKER_DIR}/{instant_time}")
    if instant.is_inflight:
        timeline.delete_pending(instant, keep_requested=True)


def restart_compaction(storage: Storage, timeline: Timeline, instant: Instant) -> Instant:
    """Make the pending compaction ``instant`` inflight for a new run: a dead or failed
    run's base files go first (:func:`revert_compaction`), the plan stays.

    Returns:
        The inflight instant.
    """
    if instant.is_inflight:
        revert_compaction(storage, timeline, instant.timestamp)
    timeline = timeline.reload()
    found = timeline.get(instant.timestamp)
    assert found is not None and found.is_requested
    return timeline.transition_to_inflight(found)


def compaction_metadata(stats: Iterable[WriteStat], avro_schema: str) -> CommitMetadata:
    """The completed commit's metadata (operation ``COMPACT``, ``compacted`` true)."""
    by_partition: dict[str, list[WriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    return CommitMetadata(
        partition_to_write_stats=by_partition,
        compacted=True,
        extra_metadata={"schema": avro_schema},
        operation_type=COMPACT_OPERATION,
    )
