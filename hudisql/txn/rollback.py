"""Rollback orchestration: failed, abandoned and user-named write instants, under the lock.

The format steps (the rollback instant, files deleted or voided) are
:func:`hudisql.table.write.rollback.rollback_instant`; this module adds the protocol around
them: the table lock, and the commit participants' ``on_rollback``. Participants are told
before the data files go, so a crash in between leaves a pending data instant whose next
rollback tells them again (``on_rollback`` is idempotent); a rollback the format refuses
(e.g. a completed write that later writes build on) tells nobody.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from hudisql.table.write.rollback import (
    StepHook,
    is_overwrite_write,
    rollback_instant,
    rollback_target,
)
from hudisql.txn.heartbeat import heartbeat_settings, is_abandoned
from hudisql.txn.lock import lock_provider_for, lock_timeout
from hudisql.txn.participant import CommitParticipant

__all__ = ["rollback_abandoned", "rollback_locked", "rollback_write"]


def rollback_locked(
    table: HudiTable,
    instant_time: str,
    participants: Sequence[CommitParticipant] = (),
    on_step: StepHook | None = None,
) -> str:
    """Roll back the write ``instant_time``; the caller holds the table lock.

    Returns:
        The rollback's instant time (an earlier rollback's when it was already done).

    Raises:
        WriteError: no such write instant, or a completed one later writes build on.
    """
    table = table.reload()
    target = rollback_target(table, instant_time)
    if target is not None:
        for participant in participants:
            participant.on_rollback(table, target)
    return rollback_instant(table.reload(), instant_time, on_step)


def rollback_write(
    table: HudiTable,
    instant_time: str,
    options: Mapping[str, str],
    participants: Sequence[CommitParticipant] = (),
    on_step: StepHook | None = None,
) -> str:
    """Roll back the write ``instant_time`` under the table lock of ``options``' provider.

    Returns:
        The rollback's instant time.

    Raises:
        LockError: the lock was not granted in time.
        WriteError: see :func:`rollback_locked`.
    """
    with lock_provider_for(options).lock(table.base_path, lock_timeout(options)):
        return rollback_locked(table, instant_time, participants, on_step)


def rollback_abandoned(
    table: HudiTable,
    options: Mapping[str, str],
    participants: Sequence[CommitParticipant] = (),
) -> list[str]:
    """Roll back every pending write whose heartbeat expired; the caller holds the table lock.

    A pending replacecommit that is a clustering plan belongs to its table service and is
    left alone; so is a requested log compaction (a plan waiting to run). An inflight log
    compaction whose run died is rolled back (its plan with it, as Hudi does).

    Returns:
        The instant times rolled back.
    """
    interval, misses = heartbeat_settings(options)
    rolled_back = []
    table = table.reload()
    for pending in table.timeline.pending(
            [Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT, Action.LOGCOMPACTION]):
        if pending.action == Action.REPLACECOMMIT and not is_overwrite_write(
                table.timeline, pending):
            continue
        if pending.action == Action.LOGCOMPACTION and not pending.is_inflight:
            continue  # a plan waiting to run, not a run that died
        if not is_abandoned(table.storage, pending.timestamp, interval, misses):
            continue
        # It may have completed since the listing (its heartbeat is gone then too): only a
        # writer whose lock does not exclude ours can do that, but never undo a commit.
        current = table.reload().timeline.get(pending.timestamp)
        if current is not None and not current.is_completed:
            rollback_locked(table, pending.timestamp, participants)
            rolled_back.append(pending.timestamp)
    return rolled_back
