"""Full compaction as a table service: schedule, run (one task per slice), show.

Scheduling plans the latest slices with log files (``hudisql.table.services.compaction``), leaving
out file groups in a pending compaction or clustering, and writes
``<ts>.compaction.requested`` under the table lock. Running moves it inflight, writes one
new base file per planned slice, and under the table lock leaves out the file groups a
write touched since the plan (``late_writes``: their new base file would hide it), then
completes the instant as a ``commit`` (operation ``COMPACT``) after the commit
participants. A failed run is reverted to requested (its base files deleted) and can be
run again, as Hudi does; so is one whose process died, by the next run. The plan /
execute / commit path is the one all such services share (``hudisql.txn.table_service``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from hudisql.services.plans import (
    ServiceResult,
    require_merge_on_read,
    run_planned_service,
    service_guard,
)
from hudisql.services.protocol import StepHook, no_step
from hudisql.services.runner import LocalRunner, SliceRunner, Task, TaskAttempt
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.filenames import BaseFileName
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.service_plans import CompactionOperation, CompactionPlan
from hudisql.table.services.compaction import (
    CompactionSettings,
    build_plan,
    compaction_due,
    compaction_metadata,
    execute_slice,
    late_writes,
    plan_slice,
    restart_compaction,
    revert_compaction,
)
from hudisql.table.table import HudiTable
from hudisql.table.write.files import MARKER_DIR, parquet_codec
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.table_service import ServiceSteps, schedule_plan

__all__ = ["compaction_steps", "run_compaction", "schedule_compaction"]


def _plan_task(
    path: str, file_slice: FileSlice, attempt: TaskAttempt
) -> CompactionOperation | None:
    table = HudiTable.open(path)
    return plan_slice(table.storage, table.timeline, file_slice)


def _execute_task(path: str, operation: CompactionOperation, instant_time: str,
                  avro_schema: str, compression: str, attempt: TaskAttempt) -> WriteStat:
    table = HudiTable.open(path)
    return execute_slice(table.storage, table.properties, table.timeline, operation,
                         instant_time, attempt.write_token, avro_schema, compression)


def _remove_unkept_base_files(table: HudiTable, plan: CompactionPlan, instant_time: str,
                              stats: Sequence[WriteStat]) -> None:
    """Delete this compaction's base files no kept write stat names (left out file groups,
    failed or duplicate task attempts), so no reader can pick one."""
    kept = {s.path for s in stats if s.path}
    for partition in sorted({op.partition_path for op in plan.operations}):
        for status in table.storage.list_dir(partition):
            parsed = BaseFileName.parse(status.name)
            if parsed is not None and parsed.instant == instant_time and status.path not in kept:
                table.storage.delete(status.path)


def compaction_steps(table: HudiTable, options: Mapping[str, str],
                     schema: str = "") -> ServiceSteps:
    """Full compaction's pieces of the shared service path (``schema``: the table's Avro
    schema the new base files are written in; needed to execute, not to plan)."""
    codec = parquet_codec(options, table.properties)

    def execute_tasks(t: HudiTable, plan: CompactionPlan, instant_time: str) -> list[Task]:
        return [functools.partial(_execute_task, t.base_path, op, instant_time, schema, codec)
                for op in plan.operations]

    def commit(fresh: HudiTable, plan: CompactionPlan, instant_time: str,
               stats: list[WriteStat]) -> tuple[list[WriteStat], CommitMetadata]:
        late = late_writes(fresh.timeline, plan, instant_time)
        stats = [s for s in stats if s.file_id not in late]
        _remove_unkept_base_files(fresh, plan, instant_time, stats)
        return stats, compaction_metadata(stats, schema)

    def restart(t: HudiTable, instant: Instant) -> Instant:
        return restart_compaction(t.storage, t.timeline, instant)

    def undo(t: HudiTable, instant: Instant,
             participants: Sequence[CommitParticipant]) -> None:
        for participant in participants:
            participant.on_rollback(t, instant)
        revert_compaction(t.storage, t.timeline, instant.timestamp)

    def tidy(t: HudiTable, instant_time: str, metadata: CommitMetadata) -> None:
        t.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")

    return ServiceSteps(
        action=Action.COMPACTION,
        excluded=(Action.COMPACTION, Action.CLUSTERING, Action.REPLACECOMMIT),
        plan_task=lambda t, s: functools.partial(_plan_task, t.base_path, s),
        build_plan=build_plan,
        execute_tasks=execute_tasks,
        commit=commit,
        restart=restart,
        undo=undo,
        tidy=tidy,
    )


def schedule_compaction(
    table: HudiTable,
    options: Mapping[str, str] | None = None,
    *,
    runner: SliceRunner | None = None,
    only_when_due: bool = False,
) -> str | None:
    """Plan a compaction; returns its instant time (None: no slice has logs, or not due).

    Args:
        only_when_due: plan only once ``hoodie.compact.inline.max.delta.commits``
            deltacommits completed since the last compaction (inline compaction).

    Raises:
        TableServiceError: a copy-on-write table, or bad settings.
    """
    options = dict(options or {})
    require_merge_on_read(table, "SCHEDULE COMPACTION")
    settings = CompactionSettings.parse(options)
    table = table.reload()
    if only_when_due and not compaction_due(table.timeline, settings):
        return None
    guard = service_guard(table, options, runner or LocalRunner())
    return schedule_plan(compaction_steps(table, options), table, table.file_slices(), guard)


def run_compaction(
    table: HudiTable,
    instant_time: str | None = None,
    options: Mapping[str, str] | None = None,
    *,
    runner: SliceRunner | None = None,
    participants: Sequence[CommitParticipant] = (),
    on_step: StepHook = no_step,
) -> ServiceResult | None:
    """Run the compaction planned at ``instant_time`` (default: the oldest pending one, else
    a new plan).

    Returns:
        What it did, or None when there was nothing to compact.

    Raises:
        TableServiceError: a copy-on-write table; ``instant_time`` is not a pending
            compaction plan (or another process runs it).
        HudiSqlError: a task failed (the compaction is reverted to requested first).
    """
    return run_planned_service(
        table, instant_time, options or {}, action=Action.COMPACTION,
        statement="RUN COMPACTION", steps_for=compaction_steps,
        schedule=lambda t, o, r: schedule_compaction(t, o, runner=r),
        runner=runner, participants=participants, on_step=on_step)
