"""What the table services share: their results, refusals and pending plans, and SHOW.

``ServiceResult`` is what a run did; :func:`service_guard` how a data-table service
holds the lock and its heartbeat; :func:`require_merge_on_read` refuses log compaction
and compaction on copy-on-write tables; :func:`pending_plan` finds the pending plan a
``RUN ... AT`` names (or refuses it); :func:`show_service_plans` lists a service's
instants as Hudi's ``show_compaction`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudisql.errors import TableServiceError
from hudisql.services.protocol import heartbeat, is_abandoned_instant, table_lock
from hudisql.table.format.commit_metadata import WriteStat
from hudisql.table.format.service_plans import CompactionPlan, compaction_plan
from hudisql.table.table import HudiTable
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.table_service import (
    ServiceGuard,
    ServiceSteps,
    StepHook,
    execute_plan,
    no_step,
    undo_abandoned,
)
from hudisql.txn.tasks import LocalRunner, SliceRunner

__all__ = [
    "SERVICE_SHOW_SCHEMA",
    "ServiceResult",
    "pending_plan",
    "require_merge_on_read",
    "run_planned_service",
    "service_guard",
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


def service_guard(
    table: HudiTable,
    options: Mapping[str, str],
    runner: SliceRunner,
    participants: Sequence[CommitParticipant] = (),
    on_step: StepHook = no_step,
) -> ServiceGuard:
    """How a data-table service runs: it takes the table lock (``hoodie.write.lock.*``)
    and keeps its instant's heartbeat itself; its tasks run on ``runner``."""
    return ServiceGuard(
        lock=lambda: table_lock(table, options),
        heartbeat=lambda instant_time: heartbeat(table, instant_time, options),
        participants=participants,
        on_step=on_step,
        runner=runner,
    )


def run_planned_service(
    table: HudiTable,
    instant_time: str | None,
    options: Mapping[str, str],
    *,
    action: str,
    statement: str,
    steps_for: Callable[[HudiTable, Mapping[str, str], str], ServiceSteps],
    schedule: Callable[[HudiTable, dict[str, str], SliceRunner], str | None],
    runner: SliceRunner | None,
    participants: Sequence[CommitParticipant],
    on_step: StepHook,
) -> ServiceResult | None:
    """Run the ``action`` plan at ``instant_time`` (default: undo runs whose process died,
    then take the oldest requested plan, else ``schedule`` a new one) and complete it.

    Returns:
        What it did, or None when there was nothing to plan.

    Raises:
        TableServiceError: a copy-on-write table; ``instant_time`` is not a pending plan
            of ``action`` (or another process runs it).
        HudiSqlError: a task failed (the run is undone first).
    """
    options = dict(options)
    require_merge_on_read(table, statement)
    runner = runner or LocalRunner()
    table = table.reload()
    guard = service_guard(table, options, runner, participants, on_step)
    if instant_time is None:
        undo_abandoned(steps_for(table, options, ""), table, guard,
                       lambda t, ts: is_abandoned_instant(t, ts, options))
        table = table.reload()
        waiting = [i for i in table.timeline.pending([action]) if i.is_requested]
        instant_time = waiting[0].timestamp if waiting else schedule(table, options, runner)
        if instant_time is None:
            return None
        table = table.reload()
    plan = pending_plan(table, instant_time, action, statement, options)
    steps = steps_for(table, options, table.avro_schema)
    stats = execute_plan(steps, table, instant_time, plan, guard)
    return ServiceResult(instant_time, len(stats), tuple(stats))


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
