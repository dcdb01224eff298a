"""SHOW TIMELINE and CALL show_commits: one row per instant of a table's timeline
(``SHOW TIMELINE t ARCHIVED`` and CALL show_archived_commits add the archived timeline).

The first eight columns are Hudi's ``show_timeline`` procedure's; the rest are what a user
asks next, read from each completed write's commit metadata. Rows are newest first.
Times: ``requested_time`` is the instant time itself (an instant is named when it is
requested); ``inflight_time`` is the inflight file's modification time;
``completed_time`` is the completion time in a layout-2 file name, else the completed
file's modification time. Nothing here needs Spark.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields
from datetime import datetime

from hudisql.errors import CorruptTableError
from hudisql.table.format.index_plan import index_commit_metadata, index_plan
from hudisql.table.format.instant import COMPLETED_AS, Action, Instant, State, parse_instant_time
from hudisql.table.format.timeline import Timeline
from hudisql.table.services.clustering import CLUSTER_OPERATION, is_clustering
from hudisql.table.table import HudiTable

#: Column names and Spark SQL types, in order.
TIMELINE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("instant_time", "STRING"),
    ("action", "STRING"),
    ("state", "STRING"),
    ("requested_time", "TIMESTAMP"),
    ("inflight_time", "TIMESTAMP"),
    ("completed_time", "TIMESTAMP"),
    ("timeline_type", "STRING"),
    ("rollback_info", "STRING"),
    ("operation", "STRING"),
    ("records_written", "BIGINT"),
    ("records_deleted", "BIGINT"),
    ("files_written", "BIGINT"),
    ("bytes_written", "BIGINT"),
    ("duration_ms", "BIGINT"),
)

#: The columns of CALL show_commits (Hudi's names for the commit statistics).
COMMITS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("commit_time", "STRING"),
    ("action", "STRING"),
    ("operation", "STRING"),
    ("total_records_written", "BIGINT"),
    ("total_records_deleted", "BIGINT"),
    ("total_files_written", "BIGINT"),
    ("total_bytes_written", "BIGINT"),
    ("completed_time", "TIMESTAMP"),
)


def ddl_schema(columns: tuple[tuple[str, str], ...]) -> str:
    """The columns as a Spark DDL schema string."""
    return ", ".join(f"{name} {kind}" for name, kind in columns)


@dataclass(frozen=True)
class TimelineRow:
    """One instant as SHOW TIMELINE shows it (fields in :data:`TIMELINE_COLUMNS` order)."""

    instant_time: str
    action: str
    state: str
    requested_time: datetime | None
    inflight_time: datetime | None
    completed_time: datetime | None
    timeline_type: str
    rollback_info: str | None
    operation: str | None
    records_written: int | None
    records_deleted: int | None
    files_written: int | None
    bytes_written: int | None
    duration_ms: int | None

    def as_tuple(self) -> tuple[object, ...]:
        """The row's values in column order."""
        return astuple(self)


assert [f.name for f in fields(TimelineRow)] == [c for c, _ in TIMELINE_COLUMNS]


def _requested(instant: Instant) -> datetime | None:
    try:
        return parse_instant_time(instant.timestamp)
    except ValueError:
        return None


def _file_time(files: list[Instant], state: State) -> datetime | None:
    return next((f.modification_time for f in files if f.state == state), None)


def rollback_targets(timeline: Timeline, rollback: Instant) -> dict[str, str | None]:
    """What rollback ``rollback`` undoes: instant time -> its action (None when not named),
    from the rollback's metadata when completed, else from its plan; empty when unreadable."""
    try:
        if rollback.is_completed:
            metadata = timeline.rollback_metadata(rollback)
            actions = {i.commit_time: i.action for i in metadata.instants_rollback}
            return {t: actions.get(t) for t in sorted(metadata.commits_rollback)}
        target = timeline.rollback_plan(rollback.timestamp).instant_to_rollback
    except (CorruptTableError, FileNotFoundError):
        return {}
    return {} if target is None else {target.commit_time: target.action}


def rollback_links(timeline: Timeline) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Rollback instant -> the instants it rolls back; rolled-back instant -> its rollback."""
    rolls: dict[str, list[str]] = {}
    rolled_by: dict[str, str] = {}
    for instant in timeline.instants:
        if instant.action != Action.ROLLBACK:
            continue
        targets = list(rollback_targets(timeline, instant))
        rolls[instant.timestamp] = targets
        if instant.is_completed:
            for target_time in targets:
                rolled_by[target_time] = instant.timestamp
    return rolls, rolled_by


def _rollback_info(instant: Instant, rolls: dict[str, list[str]], rolled_by: dict[str, str]) -> (
    str | None
):
    if instant.timestamp in rolls:
        targets = rolls[instant.timestamp]
        return "rolls back " + ", ".join(targets) if targets else "rolls back (unknown)"
    if instant.timestamp in rolled_by:
        return f"rolled back by {rolled_by[instant.timestamp]}"
    return None


def timeline_rows(table: HudiTable, limit: int | None = None,
                  archived: bool = False) -> list[TimelineRow]:
    """The table's active timeline, newest first, at most ``limit`` rows (None: all);
    ``archived`` adds the archived instants after the active ones (``timeline_type``
    ARCHIVED), read only when the active ones leave room under ``limit``.

    Raises:
        CorruptTableError: a completed write's commit metadata, or an archive file, is
            malformed.
    """
    rows = _active_rows(table, limit)
    if archived and (limit is None or len(rows) < limit):
        more = archived_rows(table)
        rows += more if limit is None else more[:limit - len(rows)]
    return rows


def archived_rows(table: HudiTable) -> list[TimelineRow]:
    """The archived instants, newest first, each in its latest archived state. The archive
    keeps no file times, so only ``requested_time`` (the instant time) is known."""
    from hudisql.table.services.archive import ArchivedTimeline

    rows = []
    for entry in reversed(ArchivedTimeline(table.storage, table.timeline).entries):
        metadata = entry.commit_metadata()
        stats = metadata.write_stats() if metadata is not None else []
        rows.append(TimelineRow(
            instant_time=entry.timestamp, action=entry.action, state=str(entry.state),
            requested_time=_requested(entry.instant), inflight_time=None, completed_time=None,
            timeline_type="ARCHIVED", rollback_info=None,
            operation=metadata.operation_type if metadata is not None else None,
            records_written=sum(s.num_writes for s in stats) if metadata else None,
            records_deleted=sum(s.num_deletes for s in stats) if metadata else None,
            files_written=len({s.path for s in stats if s.path}) if metadata else None,
            bytes_written=sum(s.total_write_bytes for s in stats) if metadata else None,
            duration_ms=None,
        ))
    return rows


def _active_rows(table: HudiTable, limit: int | None) -> list[TimelineRow]:
    timeline = table.timeline
    instants = sorted(timeline.instants, reverse=True)
    if limit is not None:
        instants = instants[:limit]
    rolls, rolled_by = rollback_links(timeline)
    rows = []
    for instant in instants:
        files = timeline.instant_files(instant.timestamp)
        requested = _requested(instant)
        completed = None
        if instant.is_completed:
            completed = (parse_instant_time(instant.completion_time) if instant.completion_time
                         else _file_time(files, State.COMPLETED))
        operation = written = deleted = files_written = size = None
        if instant.is_completed and instant.is_write:
            metadata = timeline.commit_metadata(instant)
            stats = metadata.write_stats()
            operation = metadata.operation_type
            written = sum(s.num_writes for s in stats)
            deleted = sum(s.num_deletes for s in stats)
            files_written = len({s.path for s in stats if s.path})
            size = sum(s.total_write_bytes for s in stats)
        if instant.action == Action.INDEXING:
            operation = _indexing_operation(timeline, instant)
        duration = None
        if requested is not None and completed is not None:
            duration = max(0, int((completed - requested).total_seconds() * 1000))
        # A compaction, log compaction or clustering completes under another action's name
        # (commit, deltacommit, replacecommit): show the action it was planned as.
        action = next((f.action for f in files if f.action in COMPLETED_AS), instant.action)
        if action == Action.REPLACECOMMIT and is_clustering(timeline, instant.timestamp):
            # Version 6 plans a clustering as a replacecommit: show what it is, as 1.x does.
            action, operation = Action.CLUSTERING, operation or CLUSTER_OPERATION
        rows.append(TimelineRow(
            instant_time=instant.timestamp,
            action=action,
            state=str(instant.state),
            requested_time=requested,
            inflight_time=_file_time(files, State.INFLIGHT),
            completed_time=completed,
            timeline_type="ACTIVE",
            rollback_info=_rollback_info(instant, rolls, rolled_by),
            operation=operation,
            records_written=written,
            records_deleted=deleted,
            files_written=files_written,
            bytes_written=size,
            duration_ms=duration,
        ))
    return rows


def _indexing_operation(timeline: Timeline, instant: Instant) -> str | None:
    """``index <partitions>`` of an indexing instant, from its plan or commit metadata."""
    try:
        if instant.is_completed:
            partitions = index_commit_metadata(timeline, instant).partitions
        else:
            partitions = index_plan(timeline, instant.timestamp).partitions
    except CorruptTableError:
        return None
    return "index " + ",".join(partitions)


def commit_rows(table: HudiTable, limit: int, archived: bool = False,
                start_ts: str | None = None, end_ts: str | None = None) -> list[tuple[object, ...]]:
    """CALL show_commits: the newest ``limit`` completed writes, newest first;
    ``archived``: CALL show_archived_commits, the archived ones (from ``start_ts`` to
    ``end_ts``, both included, when given)."""
    rows: list[tuple[object, ...]] = []
    source = archived_rows(table) if archived else timeline_rows(table)
    for row in source:
        if len(rows) >= limit:
            break
        if (start_ts and row.instant_time < start_ts) or (
                end_ts and row.instant_time > end_ts):
            continue
        if row.records_written is not None:  # a completed write
            rows.append((row.instant_time, row.action, row.operation, row.records_written,
                         row.records_deleted, row.files_written, row.bytes_written,
                         row.completed_time))
    return rows
