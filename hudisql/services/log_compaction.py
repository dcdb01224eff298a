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
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudisql.errors import TableServiceError
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
from hudisql.table.service_plans import CompactionOperation, CompactionPlan, compaction_plan
from hudisql.table.spurious_files import remove_spurious_log_files
from hudisql.table.table import HudiTable
from hudisql.table.write_files import MARKER_DIR
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.rollback import rollback_locked

__all__ = [
    "SERVICE_SHOW_SCHEMA",
    "ServiceResult",
    "require_merge_on_read",
    "rollback_abandoned",
    "run_log_compaction",
    "schedule_log_compaction",
    "show_service_plans",
]

#: The rows of SHOW (LOG) COMPACTION: Hudi's ``show_compaction`` columns.
SERVICE_SHOW_SCHEMA = pa.schema(
    [("timestamp", pa.string()), ("operation_size", pa.int32()), ("state", pa.string())]
)


@dataclass(frozen=True)
class ServiceResult:
    """What one run of a table service did."""

    instant: str
    file_groups: int
    write_stats: tuple[WriteStat, ...] = ()

    @property
    def bytes_written(self) -> int:
        """Bytes of the files the run wrote."""
        return sum(s.total_write_bytes or 0 for s in self.write_stats)


def require_merge_on_read(table: HudiTable, statement: str) -> None:
    """Refuse a merge-on-read service on a copy-on-write table.

    Raises:
        TableServiceError: the table is copy-on-write (names it and the statement).
    """
    if not table.properties.is_mor:
        raise TableServiceError(
            f"{statement} needs a merge-on-read table; table {table.name} at "
            f"{table.base_path} is copy-on-write (its files have no logs to compact)"
        )


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
) -> str | None:
    """Plan a log compaction of the table; returns its instant time (None: nothing qualifies).

    Raises:
        TableServiceError: a copy-on-write table, or bad settings.
    """
    options = dict(options or {})
    require_merge_on_read(table, "SCHEDULE LOG COMPACTION")
    settings = LogCompactionSettings.parse(options)
    table = table.reload()
    rollback_abandoned(table, options, Action.LOGCOMPACTION)
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


def pending_plan(table: HudiTable, instant_time: str, action: str, statement: str,
                 options: Mapping[str, str]) -> CompactionPlan:
    """The plan of the pending ``action`` at ``instant_time``, ready to (re-)run.

    Raises:
        TableServiceError: no such pending plan, or another process is running it.
    """
    instant = table.timeline.get(instant_time)
    if instant is None or instant.is_completed or instant.action != action:
        state = "not on the timeline" if instant is None else (
            f"a {'completed' if instant.is_completed else 'pending'} {instant.action}")
        raise TableServiceError(
            f"{statement} AT {instant_time}: {instant_time} is {state} of table {table.name}, "
            f"not a pending {action} plan; SHOW {action.upper().replace('LOGC', 'LOG C')} "
            "lists the pending plans"
        )
    if instant.is_inflight and not is_abandoned_instant(table, instant_time, options):
        raise TableServiceError(
            f"{statement} AT {instant_time}: another process is running it (its heartbeat "
            f"is live) on table {table.name}; wait for it to finish"
        )
    return compaction_plan(table.timeline, instant_time, action)


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
        rollback_abandoned(table, options, Action.LOGCOMPACTION)
        waiting = [i for i in table.reload().timeline.pending([Action.LOGCOMPACTION])
                   if i.is_requested]
        instant_time = waiting[0].timestamp if waiting else schedule_log_compaction(
            table, options, runner=runner)
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


def show_service_plans(table: HudiTable, action: str, limit: int = 20) -> pa.Table:
    """The ``action`` (``compaction`` or ``logcompaction``) instants, newest first.

    Returns:
        Rows of :data:`SERVICE_SHOW_SCHEMA`: instant time, operations in the plan, state.
    """
    rows: dict[str, list[Any]] = {n: [] for n in SERVICE_SHOW_SCHEMA.names}
    timeline = table.timeline
    for instant in reversed(timeline.instants):
        files = timeline.instant_files(instant.timestamp)
        if not any(f.action == action for f in files):
            continue
        if len(rows["timestamp"]) >= limit:
            break
        plan = compaction_plan(timeline, instant.timestamp, action)
        rows["timestamp"].append(instant.timestamp)
        rows["operation_size"].append(len(plan.operations))
        rows["state"].append(instant.state.value)
    return pa.table(rows, schema=SERVICE_SHOW_SCHEMA)
