"""One plan / execute / commit path for the table services that rewrite file slices.

Compaction and log compaction, of a data table (``hudisql.services``) and of its metadata
table (``hudisql.metadata.services``), differ only in how they plan one slice, how they
merge one planned slice, what their completed instant records and how a failed run is
undone. Those pieces are a :class:`ServiceSteps`; everything around them is here, once:

- :func:`schedule_plan`: plan each eligible slice in a task of its own, then under the
  table lock leave out file groups a pending service took meanwhile and write
  ``<ts>.<action>.requested`` (the plan: Hudi's Avro ``HoodieCompactionPlan``, or a
  clustering plan);
- :func:`execute_plan`: keep a heartbeat, move the plan inflight (discarding a dead run's
  output), run one task per planned slice, then under the table lock complete the instant
  after the commit participants; any failure undoes the run under the lock and re-raises;
- :func:`undo_abandoned`: undo inflight runs whose process died (no live heartbeat);
- :func:`clean_locked`: finish a clean that died, plan a new one and carry it out
  (:func:`finish_clean` completes one plan).

How the lock, the heartbeat and step hooks are had is the caller's :class:`ServiceGuard`:
a data-table service takes the table lock itself; the metadata table's services run while
a data commit holds it.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.service_plans import CleanMetadata, clean_plan
from hudisql.table.services.clean import CleanSettings, execute_clean, plan_clean
from hudisql.table.services.log_compaction import file_groups_in_pending_services
from hudisql.table.table import HudiTable
from hudisql.txn.participant import CleanParticipant, CommitParticipant
from hudisql.txn.tasks import LocalRunner, SliceRunner, Task

__all__ = [
    "ServiceGuard",
    "ServicePlan",
    "ServiceSteps",
    "StepHook",
    "clean_locked",
    "complete",
    "execute_plan",
    "finish_clean",
    "no_step",
    "schedule_plan",
    "undo_abandoned",
]

#: Called with (event, instant) at each step of a service; tests inject failures here.
StepHook = Callable[[str, str], None]


def no_step(event: str, instant: str) -> None:
    """The default step hook: does nothing."""
    return None


class ServicePlan(Protocol):
    """What the shared path needs of a plan: its Avro document and its file groups
    (a ``CompactionPlan``, a ``ClusteringPlan``)."""

    def to_avro(self) -> bytes:
        """The plan as the requested instant holds it."""

    def file_groups(self) -> set[tuple[str, str]]:
        """``(partition, file id)`` of every planned slice."""


def _has_log_files(file_slice: FileSlice) -> bool:
    return file_slice.has_log_files


@contextlib.contextmanager
def _held() -> Iterator[None]:
    yield


@dataclass
class ServiceGuard:
    """How a service run holds the table lock and its heartbeat, whom it tells, and its
    step hook. The defaults suit a caller that already holds the lock (nothing to take)."""

    lock: Callable[[], contextlib.AbstractContextManager[Any]] = _held
    heartbeat: Callable[[str], contextlib.AbstractContextManager[Any]] = (
        lambda instant_time: _held())
    participants: Sequence[CommitParticipant] = ()
    on_step: StepHook = no_step
    runner: SliceRunner = field(default_factory=LocalRunner)


@dataclass(frozen=True)
class ServiceSteps:
    """What one table service does in the shared path (each piece a plain function).

    Attributes:
        action: the plan's action (``compaction``, ``logcompaction``).
        excluded: pending actions whose file groups a new plan leaves out.
        plan_task: the task that plans one slice (its result: something with a
            ``file_group`` or None when the slice does not qualify).
        build_plan: the plan of the planned slices (None when there are none).
        execute_tasks: the tasks that carry out ``plan`` at an instant, one per slice.
        commit: under the lock, the kept write stats and the completed instant's metadata.
        restart: make the pending instant inflight, discarding a dead run's output.
        undo: under the lock, undo a failed run of the instant (participants told).
        tidy: after completion, remove what the run no longer needs (markers, strays).
        eligible: which latest slices are planned at all (default: those with log files).
        plan_here: the plan entry of a slice that needs no task (its files' names and
            sizes say all), or None to plan it in a task; default: every slice in a task.
    """

    action: str
    excluded: tuple[str, ...]
    plan_task: Callable[[HudiTable, FileSlice], Task]
    build_plan: Callable[[list[Any]], ServicePlan | None]
    execute_tasks: Callable[[HudiTable, Any, str], list[Task]]
    commit: Callable[[HudiTable, Any, str, list[Any]],
                     tuple[list[WriteStat], CommitMetadata]]
    restart: Callable[[HudiTable, Instant], Instant]
    undo: Callable[[HudiTable, Instant, Sequence[CommitParticipant]], None]
    tidy: Callable[[HudiTable, str, CommitMetadata], None]
    eligible: Callable[[FileSlice], bool] = _has_log_files
    plan_here: Callable[[FileSlice], Any] = lambda file_slice: None


def complete(
    table: HudiTable,
    instant: Instant,
    metadata: CommitMetadata | None,
    content: bytes,
    participants: Sequence[CommitParticipant] = (),
) -> Instant:
    """Complete the inflight ``instant`` with ``content``; call under the table lock.

    The participants see the commit metadata first (a clean has none: they are not called).
    """
    if metadata is not None:
        for participant in participants:
            participant.on_commit(table, instant, metadata)
    return table.timeline.complete(instant, content)


def schedule_plan(
    steps: ServiceSteps,
    table: HudiTable,
    slices: Sequence[FileSlice],
    guard: ServiceGuard,
    instant_time: str | None = None,
) -> str | None:
    """Plan ``slices`` (``steps.eligible`` ones, outside pending ``steps.excluded`` services) and
    write the plan as a requested instant (at ``instant_time``, default a new time).

    Returns:
        The plan's instant time, or None when no slice qualified.

    Raises:
        UnsupportedTableVersionError: hudisql does not write the table (even when nothing
            would be planned).
    """
    table.timeline.require_writable()
    busy = file_groups_in_pending_services(table.timeline, steps.excluded)
    tasks, planned = [], []
    for s in slices:
        if not steps.eligible(s) or (s.partition_path, s.file_id) in busy:
            continue
        here = steps.plan_here(s)
        if here is not None:
            planned.append(here)
        else:
            tasks.append(steps.plan_task(table, s))
    planned += [r for r in guard.runner.run(tasks, f"plan {steps.action}") if r is not None]
    with guard.lock():
        fresh = table.reload()
        busy = file_groups_in_pending_services(fresh.timeline, steps.excluded)
        plan = steps.build_plan([r for r in planned if r.file_group not in busy])
        if plan is None:
            return None
        instant = fresh.timeline.create_requested(steps.action, instant_time,
                                                  content=plan.to_avro())
    return instant.timestamp


def execute_plan(
    steps: ServiceSteps,
    table: HudiTable,
    instant_time: str,
    plan: ServicePlan,
    guard: ServiceGuard,
) -> list[WriteStat]:
    """Run the pending plan at ``instant_time`` and complete it (see the module notes).

    Returns:
        The write stats the completed instant records.

    Raises:
        HudiSqlError: a task failed; the run is undone (under the lock) first.
    """
    instant = table.timeline.get(instant_time)
    assert instant is not None and not instant.is_completed
    on_step = guard.on_step
    try:
        with guard.heartbeat(instant_time):
            instant = steps.restart(table, instant)
            table = table.reload()
            on_step("inflight", instant_time)
            tasks = steps.execute_tasks(table, plan, instant_time)
            stats = [s for s in guard.runner.run(tasks, f"{steps.action} {instant_time}") if s]
            on_step("written", instant_time)
            with guard.lock():
                fresh = table.reload()
                stats, metadata = steps.commit(fresh, plan, instant_time, stats)
                on_step("completing", instant_time)
                complete(fresh, instant, metadata, metadata.to_json(), guard.participants)
    except BaseException:
        with guard.lock():
            steps.undo(table.reload(), instant, guard.participants)
        raise
    steps.tidy(table, instant_time, metadata)
    on_step("completed", instant_time)
    return stats


def undo_abandoned(
    steps: ServiceSteps,
    table: HudiTable,
    guard: ServiceGuard,
    abandoned: Callable[[HudiTable, str], bool],
) -> list[str]:
    """Undo every inflight ``steps.action`` run whose process died (``abandoned``).

    Returns:
        The instant times undone.
    """
    done: list[str] = []
    for pending in table.timeline.pending([steps.action]):
        if pending.is_inflight and abandoned(table, pending.timestamp):
            with guard.lock():
                steps.undo(table.reload(), pending, guard.participants)
            done.append(pending.timestamp)
    return done


def finish_clean(table: HudiTable, instant: Instant, on_step: StepHook = no_step,
                 participants: Sequence[CommitParticipant] = ()) -> CleanMetadata:
    """Carry out the pending clean ``instant``'s plan and complete it; call under the lock.

    Files already gone count as deleted (a clean that died is finished by the next one).
    Participants that are :class:`CleanParticipant` record the deleted files first.

    Returns:
        The completed clean's metadata.
    """
    timeline = table.timeline
    plan = clean_plan(timeline, instant.timestamp)
    if instant.is_requested:
        instant = timeline.transition_to_inflight(instant, plan.to_avro())
    on_step("inflight", instant.timestamp)
    metadata = execute_clean(table.storage, timeline, instant.timestamp, plan)
    on_step("deleted", instant.timestamp)
    deleted = {partition: [posixpath.basename(f) for f in found.success_delete_files]
               for partition, found in metadata.partition_metadata.items()}
    for participant in participants:
        if isinstance(participant, CleanParticipant):
            participant.on_clean(table, instant, deleted)
    on_step("participants", instant.timestamp)
    timeline.complete(instant, metadata.to_avro())
    return metadata


def clean_locked(
    table: HudiTable,
    settings: CleanSettings,
    instant_time: str | None = None,
    *,
    on_step: StepHook = no_step,
    participants: Sequence[CommitParticipant] = (),
) -> CleanMetadata | None:
    """Clean ``table`` under the lock the caller holds: finish a clean that died, then plan
    one (at ``instant_time``, default a new time) and carry it out.

    Returns:
        The new clean's metadata, or None when nothing was to be deleted.

    Raises:
        UnsupportedTableVersionError: hudisql does not write the table.
    """
    table.timeline.require_writable()
    for pending in table.timeline.pending([Action.CLEAN]):
        finish_clean(table, pending, on_step, participants)  # a clean that died: finish it
        table = table.reload()
    plan = plan_clean(table.storage, table.file_system_view(), settings)
    if plan is None:
        return None
    requested = table.timeline.create_requested(Action.CLEAN, instant_time,
                                                content=plan.to_avro())
    on_step("requested", requested.timestamp)
    return finish_clean(table, requested, on_step, participants)
