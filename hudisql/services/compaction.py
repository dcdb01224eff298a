"""Full compaction as a table service: schedule, run (one task per slice), show.

Scheduling plans the latest slices with log files (``hudisql.table.compaction``), leaving
out file groups in a pending compaction or clustering, and writes
``<ts>.compaction.requested`` under the table lock. Running moves it inflight, writes one
new base file per planned slice, and under the table lock leaves out the file groups a
write touched since the plan (``late_writes``: their new base file would hide it), then
completes the instant as a ``commit`` (operation ``COMPACT``) after the commit
participants. A failed run is reverted to requested (its base files deleted) and can be
run again, as Hudi does; so is one whose process died, by the next run.
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
from hudisql.table.compaction import (
    CompactionSettings,
    build_plan,
    compaction_due,
    compaction_metadata,
    execute_slice,
    late_writes,
    plan_slice,
    revert_compaction,
)
from hudisql.table.filenames import BaseFileName
from hudisql.table.fsview import FileSlice
from hudisql.table.instant import Action
from hudisql.table.log_compaction import file_groups_in_pending_services
from hudisql.table.service_plans import CompactionOperation, CompactionPlan
from hudisql.table.table import HudiTable
from hudisql.table.write_files import MARKER_DIR, parquet_codec
from hudisql.txn.participant import CommitParticipant

__all__ = ["run_compaction", "schedule_compaction"]


def _plan_task(
    path: str, file_slice: FileSlice, attempt: TaskAttempt
) -> CompactionOperation | None:
    table = HudiTable.open(path)
    return plan_slice(table.storage, table.timeline, file_slice)


def _revert_abandoned(table: HudiTable, options: Mapping[str, str],
                      participants: Sequence[CommitParticipant]) -> None:
    for pending in table.timeline.pending([Action.COMPACTION]):
        if pending.is_inflight and is_abandoned_instant(table, pending.timestamp, options):
            with table_lock(table, options):
                fresh = table.reload()
                for participant in participants:
                    participant.on_rollback(fresh, pending)
                revert_compaction(fresh.storage, fresh.timeline, pending.timestamp)


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
    busy = file_groups_in_pending_services(
        table.timeline, [Action.COMPACTION, Action.CLUSTERING, Action.REPLACECOMMIT])
    slices = [s for s in table.file_slices() if s.has_log_files
              and (s.partition_path, s.file_id) not in busy]
    tasks = [functools.partial(_plan_task, table.base_path, s) for s in slices]
    ops = [op for op in (runner or LocalRunner()).run(tasks, "plan compaction") if op]
    with table_lock(table, options):
        fresh = table.reload()
        busy = file_groups_in_pending_services(
            fresh.timeline, [Action.COMPACTION, Action.CLUSTERING, Action.REPLACECOMMIT])
        plan = build_plan(op for op in ops if (op.partition_path, op.file_id) not in busy)
        if plan is None:
            return None
        instant = fresh.timeline.create_requested(Action.COMPACTION, content=plan.to_avro())
    return instant.timestamp


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
    options = dict(options or {})
    require_merge_on_read(table, "RUN COMPACTION")
    runner = runner or LocalRunner()
    table = table.reload()
    _revert_abandoned(table, options, participants)
    table = table.reload()
    if instant_time is None:
        waiting = [i for i in table.timeline.pending([Action.COMPACTION]) if i.is_requested]
        instant_time = waiting[0].timestamp if waiting else schedule_compaction(
            table, options, runner=runner)
        if instant_time is None:
            return None
        table = table.reload()
    plan = pending_plan(table, instant_time, Action.COMPACTION, "RUN COMPACTION", options)
    instant = table.timeline.get(instant_time)
    assert instant is not None
    schema = table.avro_schema
    codec = parquet_codec(options, table.properties)
    try:
        with heartbeat(table, instant_time, options):
            if instant.is_inflight:
                revert_compaction(table.storage, table.timeline, instant_time)
                table = table.reload()
                instant = table.timeline.get(instant_time)
                assert instant is not None
            instant = table.timeline.transition_to_inflight(instant)
            on_step("inflight", instant_time)
            tasks = [functools.partial(_execute_task, table.base_path, op, instant_time,
                                       schema, codec) for op in plan.operations]
            stats: list[WriteStat] = list(runner.run(tasks, f"compaction {instant_time}"))
            on_step("written", instant_time)
            with table_lock(table, options):
                fresh = table.reload()
                late = late_writes(fresh.timeline, plan, instant_time)
                stats = [s for s in stats if s.file_id not in late]
                _remove_unkept_base_files(fresh, plan, instant_time, stats)
                metadata = compaction_metadata(stats, schema)
                on_step("completing", instant_time)
                complete(fresh, instant, metadata, metadata.to_json(), participants)
    except BaseException:
        with table_lock(table, options):
            fresh = table.reload()
            if instant is not None:
                for participant in participants:
                    participant.on_rollback(fresh, instant)
            revert_compaction(fresh.storage, fresh.timeline, instant_time)
        raise
    table.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")
    on_step("completed", instant_time)
    return ServiceResult(instant_time, len(stats), tuple(stats))
