"""Log compaction (RFC-48) as a table service: schedule, run, show, roll back.

Scheduling plans every latest file slice (one task per slice, header-only) with the
strategy of ``hudisql.table.log_compaction`` and writes ``<ts>.logcompaction.requested``
under the table lock; file groups in a pending log compaction or clustering are left out
(a pending compaction does not exclude, as the seed allows). Running moves the plan
inflight, merges each planned slice in a task of its own, and completes the instant as a
``deltacommit`` (operation ``LOG_COMPACT``) under the table lock, after the commit
participants. A failed run is rolled back at once (its blocks and its plan removed, as
Hudi does for log compaction); one whose process died is rolled back by the next run.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from hudisql.services.plans import ServiceResult, pending_plan, require_merge_on_read
from hudisql.services.protocol import (
    StepHook,
    complete,
    heartbeat,
    is_abandoned_instant,
    no_step,
    table_lock,
)
from hudisql.services.runner import LocalRunner, SliceRunner, TaskAttempt
from hudisql.table.commit_metadata import WriteStat
from hudisql.table.fsview import FileSlice
from hudisql.table.instant import Action
from hudisql.table.log_compaction import (
    LogCompactionSettings,
    SliceRun,
    build_plan,
    execute_slice,
    file_groups_in_pending_services,
    log_compaction_metadata,
    plan_slice,
    planned_instants,
)
from hudisql.table.service_plans import CompactionOperation
from hudisql.table.spurious_files import remove_spurious_log_files
from hudisql.table.table import HudiTable
from hudisql.table.write_files import MARKER_DIR
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.rollback import rollback_locked

__all__ = [
    "rollback_abandoned",
    "run_log_compaction",
    "schedule_log_compaction",
]

def rollback_abandoned(table: HudiTable, options: Mapping[str, str], action: str,
                       participants: Sequence[CommitParticipant] = ()) -> list[str]:
    """Roll back the inflight ``action`` instants whose process died (no live heartbeat).

    Returns:
        The instant times rolled back.
    """
    done: list[str] = []
    for pending in table.timeline.pending([action]):
        if pending.is_inflight and is_abandoned_instant(table, pending.timestamp, options):
            with table_lock(table, options):
                rollback_locked(table, pending.timestamp, participants)
            done.append(pending.timestamp)
    return done


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
    settings = LogCompactionSettings.parse(options)
    table = table.reload()
    rollback_abandoned(table, options, Action.LOGCOMPACTION, participants)
    table = table.reload()
    busy = file_groups_in_pending_services(
        table.timeline, [Action.LOGCOMPACTION, Action.CLUSTERING, Action.REPLACECOMMIT])
    slices = [s for s in table.file_slices() if s.has_log_files
              and (s.partition_path, s.file_id) not in busy]
    tasks = [functools.partial(_plan_task, table.base_path, settings, s) for s in slices]
    runs = [r for r in (runner or LocalRunner()).run(tasks, "plan log compaction") if r]
    with table_lock(table, options):
        fresh = table.reload()
        busy = file_groups_in_pending_services(
            fresh.timeline, [Action.LOGCOMPACTION, Action.CLUSTERING, Action.REPLACECOMMIT])
        runs = [r for r in runs
                if (r.operation.partition_path, r.operation.file_id) not in busy]
        plan = build_plan(runs)
        if plan is None:
            return None
        instant = fresh.timeline.create_requested(Action.LOGCOMPACTION, content=plan.to_avro())
    return instant.timestamp


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
    options = dict(options or {})
    require_merge_on_read(table, "RUN LOG COMPACTION")
    settings = LogCompactionSettings.parse(options)
    runner = runner or LocalRunner()
    if instant_time is None:
        table = table.reload()
        rollback_abandoned(table, options, Action.LOGCOMPACTION, participants)
        waiting = [i for i in table.reload().timeline.pending([Action.LOGCOMPACTION])
                   if i.is_requested]
        instant_time = waiting[0].timestamp if waiting else schedule_log_compaction(
            table, options, runner=runner, participants=participants)
        if instant_time is None:
            return None
    table = table.reload()
    plan = pending_plan(table, instant_time, Action.LOGCOMPACTION, "RUN LOG COMPACTION", options)
    instant = table.timeline.get(instant_time)
    assert instant is not None
    schema = table.avro_schema
    try:
        with heartbeat(table, instant_time, options):
            if instant.is_inflight:  # a dead run's blocks: never read, never kept
                _discard_attempt(table, instant_time)
            else:
                instant = table.timeline.transition_to_inflight(instant)
            on_step("inflight", instant_time)
            tasks = [
                functools.partial(_execute_task, table.base_path, op,
                                  planned_instants(plan, op), instant_time, schema, settings)
                for op in plan.operations
            ]
            stats = [s for s in runner.run(tasks, f"log compaction {instant_time}") if s]
            on_step("written", instant_time)
            metadata = log_compaction_metadata(stats, schema)
            with table_lock(table, options):
                fresh = table.reload()
                on_step("completing", instant_time)
                complete(fresh, instant, metadata, metadata.to_json(), participants)
    except BaseException:
        with table_lock(table, options):
            rollback_locked(table, instant_time, participants)
        raise
    # Tidiness only: readers skip them already (the commit names its log files).
    remove_spurious_log_files(table.storage, instant_time, metadata)
    table.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")
    on_step("completed", instant_time)
    return ServiceResult(instant_time, len(stats), tuple(stats))


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
