"""Log compaction (RFC-48) as a table service: schedule, run, show, roll back.

Scheduling plans every latest file slice (one task per slice, header-only) with the
strategy of ``hudisql.table.services.log_compaction`` and writes ``<ts>.logcompaction.requested``
under the table lock; file groups in a pending log compaction or clustering are left out
(a pending compaction does not exclude, as the seed allows). Running moves the plan
inflight, merges each planned slice in a task of its own, and completes the instant as a
``deltacommit`` (operation ``LOG_COMPACT``) under the table lock, after the commit
participants. A failed run is rolled back at once (its blocks and its plan removed, as
Hudi does for log compaction); one whose process died is rolled back by the next run.
The plan / execute / commit path is the one all such services share
(``hudisql.txn.table_service``).
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
from hudisql.services.protocol import StepHook, is_abandoned_instant, no_step
from hudisql.services.runner import LocalRunner, SliceRunner, Task, TaskAttempt
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.service_plans import CompactionOperation, CompactionPlan
from hudisql.table.services.log_compaction import (
    LogCompactionSettings,
    SliceRun,
    build_plan,
    execute_slice,
    log_compaction_metadata,
    plan_slice,
    planned_instants,
)
from hudisql.table.table import HudiTable
from hudisql.table.write.files import MARKER_DIR
from hudisql.table.write.spurious_files import remove_spurious_log_files
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.rollback import rollback_locked
from hudisql.txn.table_service import ServiceSteps, schedule_plan, undo_abandoned

__all__ = [
    "log_compaction_steps",
    "rollback_abandoned",
    "run_log_compaction",
    "schedule_log_compaction",
]

def _rollback(table: HudiTable, instant: Instant,
              participants: Sequence[CommitParticipant]) -> None:
    rollback_locked(table, instant.timestamp, participants)


def log_compaction_steps(table: HudiTable, options: Mapping[str, str],
                         schema: str = "") -> ServiceSteps:
    """Log compaction's pieces of the shared service path (``schema``: the table's Avro
    schema the compacted blocks are written in; needed to execute, not to plan)."""
    settings = LogCompactionSettings.parse(options)

    def execute_tasks(t: HudiTable, plan: CompactionPlan, instant_time: str) -> list[Task]:
        return [functools.partial(_execute_task, t.base_path, op, planned_instants(plan, op),
                                  instant_time, schema, settings)
                for op in plan.operations]

    def commit(fresh: HudiTable, plan: CompactionPlan, instant_time: str,
               stats: list[WriteStat]) -> tuple[list[WriteStat], CommitMetadata]:
        return stats, log_compaction_metadata(stats, schema)

    def restart(t: HudiTable, instant: Instant) -> Instant:
        if instant.is_inflight:  # a dead run's blocks: never read, never kept
            _discard_attempt(t, instant.timestamp)
            return instant
        return t.timeline.transition_to_inflight(instant)

    def tidy(t: HudiTable, instant_time: str, metadata: CommitMetadata) -> None:
        # Tidiness only: readers skip them already (the commit names its log files).
        remove_spurious_log_files(t.storage, instant_time, metadata)
        t.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")

    return ServiceSteps(
        action=Action.LOGCOMPACTION,
        excluded=(Action.LOGCOMPACTION, Action.CLUSTERING, Action.REPLACECOMMIT),
        plan_task=lambda t, s: functools.partial(_plan_task, t.base_path, settings, s),
        build_plan=build_plan,
        execute_tasks=execute_tasks,
        commit=commit,
        restart=restart,
        undo=_rollback,
        tidy=tidy,
    )


def rollback_abandoned(table: HudiTable, options: Mapping[str, str],
                       participants: Sequence[CommitParticipant] = ()) -> list[str]:
    """Roll back the inflight log compactions whose process died (no live heartbeat).

    Returns:
        The instant times rolled back.
    """
    guard = service_guard(table, options, LocalRunner(), participants)
    return undo_abandoned(log_compaction_steps(table, options), table, guard,
                          lambda t, ts: is_abandoned_instant(t, ts, options))


def _plan_task(path: str, settings: LogCompactionSettings, file_slice: FileSlice,
               attempt: TaskAttempt) -> SliceRun | None:
    table = HudiTable.open(path)
    return plan_slice(table.storage, table.timeline, file_slice, settings)


def schedule_log_compaction(
    table: HudiTable,
    options: Mapping[str, str] | None = None,
    *,
    runner: SliceRunner | None = None,
    participants: Sequence[CommitParticipant] = (),
) -> str | None:
    """Plan a log compaction of the table; returns its instant time (None: nothing qualifies).

    A log compaction whose run died is rolled back first (``participants`` are told).

    Raises:
        TableServiceError: a copy-on-write table, or bad settings.
    """
    options = dict(options or {})
    require_merge_on_read(table, "SCHEDULE LOG COMPACTION")
    steps = log_compaction_steps(table, options)
    table = table.reload()
    rollback_abandoned(table, options, participants)
    table = table.reload()
    guard = service_guard(table, options, runner or LocalRunner(), participants)
    return schedule_plan(steps, table, table.file_slices(), guard)


def _execute_task(path: str, operation: CompactionOperation, instants: list[str] | None,
                  instant_time: str, avro_schema: str, settings: LogCompactionSettings,
                  attempt: TaskAttempt) -> WriteStat | None:
    table = HudiTable.open(path)
    return execute_slice(
        table.storage, table.properties, table.timeline, operation, instants, instant_time,
        attempt.write_token, avro_schema, settings, attempt.attempt_number,
    )


def run_log_compaction(
    table: HudiTable,
    instant_time: str | None = None,
    options: Mapping[str, str] | None = None,
    *,
    runner: SliceRunner | None = None,
    participants: Sequence[CommitParticipant] = (),
    on_step: StepHook = no_step,
) -> ServiceResult | None:
    """Run the log compaction planned at ``instant_time`` (default: the oldest requested
    plan, else a new one).

    Returns:
        What it did, or None when nothing qualified for log compaction.

    Raises:
        TableServiceError: a copy-on-write table; ``instant_time`` is not a pending log
            compaction plan; bad settings.
        HudiSqlError: a task failed (the log compaction is rolled back first).
    """
    LogCompactionSettings.parse(options or {})
    return run_planned_service(
        table, instant_time, options or {}, action=Action.LOGCOMPACTION,
        statement="RUN LOG COMPACTION", steps_for=log_compaction_steps,
        schedule=lambda t, o, r: schedule_log_compaction(t, o, runner=r,
                                                         participants=participants),
        runner=runner, participants=participants, on_step=on_step)


def _discard_attempt(table: HudiTable, instant_time: str) -> None:
    """Delete the log files a dead run of ``instant_time`` wrote (its markers name them)."""
    root = f"{MARKER_DIR}/{instant_time}"
    for status in table.storage.list_recursive(root):
        if status.is_dir or ".marker." not in status.name:
            continue
        rel = status.path[len(root) + 1:].rsplit(".marker.", 1)[0]
        if table.storage.exists(rel):
            table.storage.delete(rel)
    table.storage.delete_dir(root)
