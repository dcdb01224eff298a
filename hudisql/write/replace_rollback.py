"""Rolling back a failed write of any kind the Spark pipeline opens, replacecommits included.

The core's :func:`~hudisql.table.write_rollback.rollback_instant` rolls back pending commits
and deltacommits only (a pending ``replacecommit`` may be a clustering plan, which belongs
to a table service). An ``insert_overwrite`` is a write that completes as a replacecommit:
when it fails, its new base files must go exactly as a failed commit's do. This module runs
the core's rollback steps (plan from markers, rollback instant, pending files removed) for
such an instant, and hands every other instant to the core unchanged.
"""

from __future__ import annotations

import time

from hudisql.errors import CorruptTableError
from hudisql.table.instant import Action, Instant
from hudisql.table.table import HudiTable
from hudisql.table.timeline import Timeline
from hudisql.table.write_files import MARKER_DIR
from hudisql.table.write_rollback import (
    StepHook,
    _execute,
    _plan,
    _rollbacks_of,
    rollback_instant,
)

__all__ = ["OVERWRITE_OPERATIONS", "is_overwrite_write", "rollback_write"]

#: ``operationType`` of the writes that complete as a replacecommit.
OVERWRITE_OPERATIONS = frozenset({"INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE"})


def _no_step(event: str, detail: str) -> None:
    return None


def is_overwrite_write(timeline: Timeline, instant: Instant) -> bool:
    """True when the pending ``instant`` is an insert overwrite (not a clustering plan).

    A writer's replacecommit is requested empty and goes inflight with the planned commit
    metadata naming an overwrite operation; a clustering plan is an Avro document.
    """
    if instant.action != Action.REPLACECOMMIT or instant.is_completed:
        return False
    try:
        content = timeline.read_content(instant)
    except CorruptTableError:
        return False
    if not content.strip():
        return True
    try:
        operation = timeline.commit_metadata(instant).operation_type
    except CorruptTableError:
        return False
    return operation in OVERWRITE_OPERATIONS


def rollback_write(table: HudiTable, instant_time: str, on_step: StepHook | None = None) -> str:
    """Roll back the pending write ``instant_time``; returns the rollback's instant time.

    Insert-overwrite replacecommits get the same rollback as commits (their base files
    removed, a rollback instant written, then their pending files removed); everything else
    goes to :func:`rollback_instant`, which also states its errors.

    Raises:
        WriteError: see :func:`rollback_instant`.
    """
    timeline = table.timeline
    target = timeline.get(instant_time)
    if target is None or not is_overwrite_write(timeline, target):
        return rollback_instant(table, instant_time, on_step)
    step = on_step or _no_step
    done, pending = _rollbacks_of(timeline, instant_time)
    if done is None:
        if pending is None:
            plan = _plan(table, target)
            pending = timeline.create_requested(Action.ROLLBACK, content=plan.to_avro())
            step("rollback_requested", pending.timestamp)
        else:
            plan = timeline.rollback_plan(pending.timestamp)
        if pending.is_requested:
            pending = timeline.transition_to_inflight(pending)
            step("rollback_inflight", pending.timestamp)
        started = time.monotonic()
        metadata = _execute(table.storage, plan, pending.timestamp, target, step)
        metadata.time_taken_in_millis = int((time.monotonic() - started) * 1000)
        done = timeline.complete(pending, metadata.to_avro())
        step("rollback_completed", done.timestamp)
    timeline.delete_pending(target)
    table.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")
    step("pending_removed", instant_time)
    return done.timestamp
