"""Clustering as a table service: schedule, execute (one Spark task per group), show.

Scheduling plans the latest slices with Hudi's size-based strategy
(``hudisql.table.services.clustering``; one task per slice checks that its log files hold only
committed blocks), leaving out file groups a pending compaction, log compaction or
clustering holds, and writes ``<ts>.replacecommit.requested`` under the table lock.
Executing moves it inflight, rewrites each group in a task of its own (slices merged, rows
ordered linearly or along a Z-order or Hilbert curve in Arrow, new base files of the target
size), and under the table lock completes it as a ``replacecommit`` after the commit
participants (the metadata table). The commit refuses when a write landed on a planned file
group since the plan (clustering it would lose that write: ``hoodie.clustering.updates.
strategy`` lets writers win); the plan is dropped then. Any other failure reverts the run to
requested (its files deleted) so it can run again; a run whose process died is finished by
the next run. The plan / execute / commit path is the one all such services share
(``hudisql.txn.table_service``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from hudisql.errors import TableServiceError
from hudisql.services.plans import ServiceResult, service_guard
from hudisql.services.protocol import StepHook, is_abandoned_instant, no_step
from hudisql.services.runner import LocalRunner, SliceRunner, Task, TaskAttempt
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.filenames import BaseFileName
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.service_plans import int_setting
from hudisql.table.services.clustering import (
    FILTER_MODE,
    PARTITION_SELECTED,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringSettings,
    SliceInfo,
    build_groups,
    check_sort_columns,
    clustering_metadata,
    clustering_plan,
    execute_group,
    is_clustering,
    pending_clusterings,
    stale_slices,
)
from hudisql.table.services.clustering_plan import LAYOUT_STRATEGY, SORT_COLUMNS
from hudisql.table.services.compaction import plan_slice
from hudisql.table.services.log_compaction import file_groups_in_pending_services
from hudisql.table.table import HudiTable, avro_schema_to_arrow
from hudisql.table.write.files import MARKER_DIR, parquet_codec
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.table_service import ServiceSteps, execute_plan, schedule_plan

__all__ = [
    "SHOW_CLUSTERING_SCHEMA",
    "clustering_due",
    "clustering_steps",
    "execute_clustering",
    "partitions_matching",
    "run_clustering",
    "schedule_clustering",
    "show_clustering",
    "with_sort",
]

#: The rows of SHOW CLUSTERING: Hudi's ``show_clustering`` columns.
SHOW_CLUSTERING_SCHEMA = pa.schema([
    ("timestamp", pa.string()), ("input_group_size", pa.int32()), ("state", pa.string()),
    ("involved_partitions", pa.string()),
])
INLINE_MAX_COMMITS = "hoodie.clustering.inline.max.commits"
#: Pending actions whose file groups a clustering plan leaves out.
_EXCLUDED = (Action.COMPACTION, Action.LOGCOMPACTION, Action.CLUSTERING, Action.REPLACECOMMIT)


def _plan_task(path: str, file_slice: FileSlice, attempt: TaskAttempt) -> SliceInfo | None:
    """The plan entry of a slice with log files (a slice without is planned on the driver);
    None when one of them holds a block of a write still pending (its rows are not settled
    yet)."""
    table = HudiTable.open(path)
    op = plan_slice(table.storage, table.timeline, file_slice)
    if op is None or len(op.delta_file_paths) != len(file_slice.log_files):
        return None
    return SliceInfo.of_slice(file_slice)


def _execute_task(path: str, group: ClusteringGroup, index: int, columns: tuple[str, ...],
                  layout: str, instant_time: str, avro_schema: str, compression: str,
                  attempt: TaskAttempt) -> list[WriteStat]:
    table = HudiTable.open(path)
    return execute_group(table.storage, table.properties, table.timeline, group, index,
                         columns, layout, instant_time, attempt.write_token, avro_schema,
                         compression)


def _remove_unwritten(table: HudiTable, plan: ClusteringPlan, instant_time: str,
                      keep: set[str]) -> None:
    """Delete the base files named by ``instant_time`` in the planned partitions that no
    kept write stat names (failed or duplicate task attempts, a dead run)."""
    for partition in sorted({g.partition_path for g in plan.groups}):
        for status in table.storage.list_dir(partition):
            parsed = BaseFileName.parse(status.name)
            if parsed is not None and parsed.instant == instant_time and status.path not in keep:
                table.storage.delete(status.path)
    table.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")


def _stale(table: HudiTable, plan: ClusteringPlan) -> list[tuple[str, str]]:
    partitions = sorted({g.partition_path for g in plan.groups})
    return stale_slices(table.file_slices(partitions=partitions), plan)


def clustering_steps(table: HudiTable, options: Mapping[str, str], schema: str = "",
                     settings: ClusteringSettings | None = None) -> ServiceSteps:
    """Clustering's pieces of the shared service path (``schema``: the table's Avro schema
    the new base files are written in; needed to execute, not to plan)."""
    settings = settings or ClusteringSettings.parse(options)
    codec = parquet_codec(options, table.properties)

    def build(found: list[Any]) -> ClusteringPlan | None:
        groups = build_groups(found, settings)
        if not groups:
            return None
        return ClusteringPlan(groups, settings.strategy_params(), storage=table.storage)

    def execute_tasks(t: HudiTable, plan: ClusteringPlan, instant_time: str) -> list[Task]:
        return [functools.partial(_execute_task, t.base_path, group, i, plan.sort_columns,
                                  plan.layout, instant_time, schema, codec)
                for i, group in enumerate(plan.groups)]

    def commit(fresh: HudiTable, plan: ClusteringPlan, instant_time: str,
               results: list[Any]) -> tuple[list[WriteStat], CommitMetadata]:
        stale = _stale(fresh, plan)
        if stale:
            groups = ", ".join(f"{p or '<root>'}/{f}" for p, f in stale[:10])
            raise TableServiceError(
                f"clustering {instant_time} of table {fresh.name}: writes landed on file "
                f"groups {groups} since it was planned; the clustering is rolled back so "
                "they are not lost: run it again")
        stats = [s for found in results for s in found]
        _remove_unwritten(fresh, plan, instant_time, {s.path for s in stats if s.path})
        return stats, clustering_metadata(stats, plan, schema)

    def restart(t: HudiTable, instant: Instant) -> Instant:
        if instant.is_inflight:  # a dead or failed run's files: never read, never kept
            _remove_unwritten(t, clustering_plan(t.timeline, instant.timestamp),
                              instant.timestamp, set())
            t.timeline.delete_pending(instant, keep_requested=True)
            t = t.reload()
        found = t.timeline.get(instant.timestamp)
        assert found is not None and found.is_requested
        return t.timeline.transition_to_inflight(found)

    def undo(t: HudiTable, instant: Instant,
             participants: Sequence[CommitParticipant]) -> None:
        for participant in participants:
            participant.on_rollback(t, instant)
        plan = clustering_plan(t.timeline, instant.timestamp)
        _remove_unwritten(t, plan, instant.timestamp, set())
        # A plan that writes overtook can never complete: drop it; else it can run again.
        t.timeline.delete_pending(instant, keep_requested=not _stale(t, plan))

    def tidy(t: HudiTable, instant_time: str, metadata: CommitMetadata) -> None:
        t.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")

    return ServiceSteps(
        # Layout 2 (versions 8 and 9) requests a clustering as its own action.
        action=Action.CLUSTERING if table.properties.timeline_layout >= 2
        else Action.REPLACECOMMIT,
        excluded=_EXCLUDED,
        plan_task=lambda t, s: functools.partial(_plan_task, t.base_path, s),
        build_plan=build,
        execute_tasks=execute_tasks,
        commit=commit,
        restart=restart,
        undo=undo,
        tidy=tidy,
        eligible=lambda s: True,
        plan_here=lambda s: None if s.has_log_files else SliceInfo.of_slice(s),
    )


def _busy_error(table: HudiTable, settings: ClusteringSettings) -> TableServiceError | None:
    """The error when the slices a plan would take are all held by pending clusterings."""
    pending = pending_clusterings(table.timeline)
    if not pending:
        return None
    held = file_groups_in_pending_services(table.timeline, (Action.REPLACECOMMIT,
                                                             Action.CLUSTERING))
    free = [s for s in table.file_slices()
            if (s.partition_path, s.file_id) not in held and settings.selects(s.partition_path)]
    if free:
        return None
    names = ", ".join(f"{i.timestamp} ({i.state.value})" for i in pending)
    return TableServiceError(
        f"clustering of table {table.name}: its file groups are in pending clustering "
        f"{names}; run it first (CALL run_clustering(table => '{table.name}', op => "
        "'execute')) or wait for the process running it")


def schedule_clustering(
    table: HudiTable,
    options: Mapping[str, str] | None = None,
    *,
    runner: SliceRunner | None = None,
) -> str | None:
    """Plan a clustering; returns its instant time (None: no group qualifies).

    Raises:
        TableServiceError: bad settings, an unknown sort column or layout strategy, or
            every file group is in a pending clustering (names it). Nothing is written then.
    """
    options = dict(options or {})
    settings = ClusteringSettings.parse(options)
    table = table.reload()
    check_sort_columns(settings.sort_columns, avro_schema_to_arrow(table.avro_schema),
                       table.name)
    busy = _busy_error(table, settings)
    if busy is not None:
        raise busy
    guard = service_guard(table, options, runner or LocalRunner())
    steps = clustering_steps(table, options, settings=settings)
    return schedule_plan(steps, table, table.file_slices(), guard)


def _finish_abandoned(table: HudiTable, options: Mapping[str, str]) -> list[str]:
    return [i.timestamp for i in pending_clusterings(table.timeline)
            if i.is_inflight and is_abandoned_instant(table, i.timestamp, options)]


def execute_clustering(
    table: HudiTable,
    instant_time: str | None = None,
    options: Mapping[str, str] | None = None,
    *,
    runner: SliceRunner | None = None,
    participants: Sequence[CommitParticipant] = (),
    on_step: StepHook = no_step,
) -> list[ServiceResult]:
    """Run the clustering planned at ``instant_time`` (default: every pending plan not
    being run by a live process, oldest first) and complete it.

    Raises:
        TableServiceError: ``instant_time`` is not a pending clustering, or another process
            runs it; a write landed on its file groups (the plan is dropped).
        HudiSqlError: a task failed (the run is reverted to requested first).
    """
    options = dict(options or {})
    table = table.reload()
    if instant_time is None:
        todo = [i.timestamp for i in pending_clusterings(table.timeline)
                if i.is_requested or is_abandoned_instant(table, i.timestamp, options)]
    else:
        _require_pending(table, instant_time, options)
        todo = [instant_time]
    guard = service_guard(table, options, runner or LocalRunner(), participants, on_step)
    results = []
    for ts in todo:
        table = table.reload()
        plan = clustering_plan(table.timeline, ts)
        steps = clustering_steps(table, options, table.avro_schema)
        stats = execute_plan(steps, table, ts, plan, guard)
        results.append(ServiceResult(ts, len(plan.file_groups()), tuple(stats)))
    return results


def _require_pending(table: HudiTable, instant_time: str, options: Mapping[str, str]) -> None:
    found = [i for i in pending_clusterings(table.timeline) if i.timestamp == instant_time]
    if not found:
        instant = table.timeline.get(instant_time)
        state = "not on the timeline" if instant is None else (
            f"a {instant.state.value.lower()} {instant.action}")
        raise TableServiceError(
            f"run_clustering: {instant_time} is {state} of table {table.name}, not a pending "
            "clustering plan; SHOW CLUSTERING lists the plans")
    if found[0].is_inflight and not is_abandoned_instant(table, instant_time, options):
        raise TableServiceError(
            f"run_clustering: clustering {instant_time} of table {table.name} is being run "
            "by another process (its heartbeat is live); wait for it to finish")


def run_clustering(
    table: HudiTable,
    options: Mapping[str, str] | None = None,
    *,
    runner: SliceRunner | None = None,
    participants: Sequence[CommitParticipant] = (),
    on_step: StepHook = no_step,
) -> list[ServiceResult]:
    """Finish clusterings whose process died, then plan a new one and run it.

    Returns:
        What each completed clustering did (empty: nothing qualified).

    Raises:
        TableServiceError: see :func:`schedule_clustering` and :func:`execute_clustering`.
    """
    options = dict(options or {})
    table = table.reload()
    ClusteringSettings.parse(options)
    results = []
    for ts in _finish_abandoned(table, options):
        results += execute_clustering(table, ts, options, runner=runner,
                                      participants=participants, on_step=on_step)
    instant = schedule_clustering(table, options, runner=runner)
    if instant is not None:
        results += execute_clustering(table, instant, options, runner=runner,
                                      participants=participants, on_step=on_step)
    return results


def clustering_due(table: HudiTable, options: Mapping[str, str]) -> bool:
    """True when ``hoodie.clustering.inline.max.commits`` (default 4) writes completed since
    the last clustering (or ever), as Hudi's inline clustering counts them.

    Raises:
        TableServiceError: the setting is not a positive integer.
    """
    limit = int_setting(options, INLINE_MAX_COMMITS, 4, 1)
    timeline = table.timeline
    done = [i.timestamp for i in timeline.completed([Action.REPLACECOMMIT])
            if is_clustering(timeline, i.timestamp)]
    last = max(done, default="")
    writes = [i for i in timeline.completed([Action.COMMIT, Action.DELTACOMMIT,
                                             Action.REPLACECOMMIT])
              if i.timestamp > last and i.timestamp not in done]
    return len(writes) >= limit


def partitions_matching(table: HudiTable, predicate: str) -> dict[str, str]:
    """The options that select the partitions ``predicate`` (Hudi's ``run_clustering``
    predicate: on partition columns) matches.

    Raises:
        TableServiceError: the predicate names a column that is not a partition column.
        HudiSqlError: it is not a SQL predicate.
    """
    from hudisql.parser.predicates import parse_predicates
    from hudisql.read.pruning import select_slices

    fields = set(table.properties.partition_fields)
    for found in parse_predicates(predicate):
        if found.column not in fields:
            raise TableServiceError(
                f"run_clustering predicate {predicate!r}: {found.column!r} is not a partition "
                f"column of table {table.name} (its partition columns: "
                f"{', '.join(sorted(fields)) or 'none'}); the predicate selects partitions")
    kept = select_slices(table, table.file_slices(), predicate, data_skipping=False).kept
    return {FILTER_MODE: "SELECTED_PARTITIONS",
            PARTITION_SELECTED: ",".join(sorted({s.partition_path for s in kept}))}


def show_clustering(table: HudiTable, limit: int = 20) -> pa.Table:
    """The clustering instants, newest first (Hudi's ``show_clustering`` columns)."""
    rows: dict[str, list[Any]] = {n: [] for n in SHOW_CLUSTERING_SCHEMA.names}
    timeline = table.timeline
    for instant in reversed(timeline.instants):
        if instant.action not in (Action.REPLACECOMMIT, Action.CLUSTERING):
            continue
        if not is_clustering(timeline, instant.timestamp):
            continue
        if len(rows["timestamp"]) >= limit:
            break
        plan = clustering_plan(timeline, instant.timestamp)
        rows["timestamp"].append(instant.timestamp)
        rows["input_group_size"].append(len(plan.groups))
        rows["state"].append(instant.state.value)
        rows["involved_partitions"].append(
            ",".join(sorted({g.partition_path for g in plan.groups})))
    return pa.table(rows, schema=SHOW_CLUSTERING_SCHEMA)


def with_sort(options: Mapping[str, str], order: Sequence[str] | None,
              layout: str | None) -> dict[str, str]:
    """``options`` with the statement's sort columns and layout strategy, when it gives them."""
    merged = dict(options)
    if order:
        merged[SORT_COLUMNS] = ",".join(order)
    if layout:
        merged[LAYOUT_STRATEGY] = layout
    return merged

