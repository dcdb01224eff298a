"""Incremental queries: the records that changed in a range of instants, without Spark.

Apache Hudi 0.x semantics, by instant time (the tables hudisql writes are version 6): the
range is ``(begin, end]``, ``begin`` exclusive (``earliest`` or ``000``: from the table's
start), ``end`` inclusive (default: the last completed write with no pending write before
it, so that a range read now never misses an instant that completes later). The
*latest state* query returns, for every record whose latest state as of ``end`` was
written in the range, that state: exactly the snapshot as of ``end`` cut to the rows whose
``_hoodie_commit_time`` is in the range. Deleted records do not appear (use CDC for them),
rolled-back instants never count (a snapshot never sees them), and only the file groups
that completed instants of the range wrote are read.

A range that starts before the active timeline (or at ``earliest``) on a table with
archived instants loads the archived timeline and reads their commit metadata, so it names
the file groups they wrote and CDC reads their changes; with
``hoodie.datasource.read.incr.fallback.fulltablescan.enable=true`` a latest-state range
scans every file group instead (the snapshot as of ``end`` filtered by commit time, exact
too), as Hudi does. Apache Hudi 0.x reads only the active instants of such a range when the
fallback is off; hudisql reads the archived ones too rather than miss their changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import HudiSqlError, ReadOptionError
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.instant import WRITE_ACTIONS, Action
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable, normalize_as_of

__all__ = [
    "COMMIT_TIME_COLUMN",
    "EARLIEST",
    "FULL_SCAN_FALLBACK",
    "IncrementalRange",
    "check_on_timeline",
    "check_time_travel",
    "incremental_slices",
    "read_incremental",
    "resolve_range",
]

#: The begin of a range that starts with the table (also any all-zero instant, e.g. ``000``).
EARLIEST = "earliest"
#: The meta column the range is decided by.
COMMIT_TIME_COLUMN = "_hoodie_commit_time"
#: Hudi's option that turns a range starting among archived instants into a full scan.
FULL_SCAN_FALLBACK = "hoodie.datasource.read.incr.fallback.fulltablescan.enable"
_META_FIELDS = "hoodie.populate.meta.fields"
#: Pending actions that may change rows when they complete (a scheduled compaction or
#: log compaction keeps every record and its commit time, so it never moves a range).
_DATA_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT, Action.CLUSTERING)


@dataclass(frozen=True)
class IncrementalRange:
    """A resolved range ``(begin, end]`` of a table's timeline.

    ``begin`` None: from the start. ``end`` None: the table has no completed write yet (the
    range is empty). ``instants``: the completed, not rolled-back writes in the range.
    ``file_groups``: ``(partition, file id)`` of every file group they wrote, or None when
    every file group is read (a range from the start, or a full-scan fallback).
    """

    begin: str | None
    end: str | None
    instants: tuple[str, ...]
    file_groups: frozenset[tuple[str, str]] | None
    #: The commit metadata of the archived instants among ``instants``.
    archived: Mapping[str, CommitMetadata] = field(default_factory=dict)

    def commit_metadata(self, table: HudiTable, instant: str) -> CommitMetadata:
        """The commit metadata of ``instant`` (archived or active)."""
        found = self.archived.get(instant)
        return found if found is not None else table.timeline.commit_metadata(instant)

    @property
    def is_empty(self) -> bool:
        """True when no completed write lies in the range."""
        return self.end is None or not self.instants

    def row_filter(self, column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
        """The boolean mask of the commit times in ``column`` that lie in the range."""
        column = column.cast(pa.string())
        mask = pc.less_equal(column, self.end or "")
        if self.begin is not None:
            mask = pc.and_(mask, pc.greater(column, self.begin))
        return pc.fill_null(mask, False)


def _is_zero(text: str) -> bool:
    return text.isdigit() and set(text) == {"0"}


def _bound(table: HudiTable, value: str, option: str, earliest: bool) -> str | None:
    """A range bound as a 17-digit instant time (None: the table's start).

    Raises:
        ReadOptionError: malformed, or an instant time (17 digits) not on the timeline.
    """
    text = str(value).strip()
    if text.lower() == EARLIEST or _is_zero(text):
        if not earliest:
            raise ReadOptionError(
                f"{option}={value!r} must be an instant or a time of table {table.name}, not "
                "its start (an end of a range may be left out: the latest commit)")
        return None
    try:
        instant = normalize_as_of(text)
    except HudiSqlError as exc:
        raise ReadOptionError(
            f"{option}={value!r} is not an instant time: give yyyyMMddHHmmssSSS (as SHOW "
            f"TIMELINE {table.name} prints it), 'yyyy-MM-dd HH:mm:ss[.SSS]' or "
            f"'{EARLIEST}'") from exc
    assert instant is not None
    check_on_timeline(table, text, instant, option)
    return instant


def check_on_timeline(table: HudiTable, text: str, instant: str, option: str) -> None:
    """Refuse an instant given as an instant time (17 digits) that the timeline lacks.

    Times written as ``yyyy-MM-dd HH:mm:ss`` (or to the second) are wall-clock times and
    match any point; an instant time before the first active instant may be archived.

    Raises:
        ReadOptionError: the instant is not on the timeline (names its neighbours).
    """
    timeline = table.timeline
    start = timeline.archive_boundary
    if not (text.isdigit() and len(text) == 17) or timeline.get(instant) is not None:
        return
    if start is not None and instant < start:
        return
    times = [i.timestamp for i in timeline.instants]
    before = max((t for t in times if t < instant), default=None)
    after = min((t for t in times if t > instant), default=None)
    raise ReadOptionError(
        f"{option}={text}: no instant {text} on the timeline of table {table.name} (the "
        f"nearest are {before or 'none'} before and {after or 'none'} after); give an instant "
        "SHOW TIMELINE lists, or a time as 'yyyy-MM-dd HH:mm:ss.SSS'")


def check_time_travel(table: HudiTable, as_of: str, option: str = "as.of.instant") -> str:
    """Validate a time-travel instant; returns it as a 17-digit instant time.

    As Hudi, the instant must be earlier than the first pending write (a later read as of
    it could see a write complete under it); an instant time (17 digits) must be on the
    timeline (see :func:`check_on_timeline`).

    Raises:
        ReadOptionError: malformed, not on the timeline, at or after a pending write, or
            cleaned (:meth:`HudiTable.check_readable_as_of`).
    """
    instant = _bound(table, as_of, option, earliest=False)
    assert instant is not None
    pending = table.timeline.pending(_DATA_ACTIONS)
    if pending and instant >= pending[0].timestamp:
        raise ReadOptionError(
            f"{option}={as_of}: time travel to table {table.name} must stay before its "
            f"first pending write {pending[0].timestamp} ({pending[0].action}, "
            f"{pending[0].state}); wait for it to complete, roll it back, or travel to an "
            "earlier instant")
    table.check_readable_as_of(instant)
    return instant


def resolve_range(table: HudiTable, begin: str | None, end: str | None = None, *,
                  full_scan_fallback: bool = False, latest: str | None = None
                  ) -> IncrementalRange:
    """The range ``(begin, end]`` of ``table``'s timeline, checked.

    Args:
        begin: exclusive start: an instant time, a time string, or ``earliest``/``000``.
        end: inclusive end; default: the last completed write with no pending write
            before it (no later than ``latest`` when given: a pinned snapshot).
        full_scan_fallback: read every file group when ``begin`` lies before the active
            timeline and older instants were archived, instead of refusing.

    Raises:
        ReadOptionError: no begin, malformed bounds, an instant time not on the timeline,
            begin after end, an explicit end past a pending write, archived instants in
            the range without ``full_scan_fallback``, or a table without meta fields.
    """
    begin_option = "hoodie.datasource.read.begin.instanttime"
    end_option = "hoodie.datasource.read.end.instanttime"
    if begin is None or not str(begin).strip():
        raise ReadOptionError(
            f"an incremental query of table {table.name} needs {begin_option}: the instant "
            f"after which changes are read (exclusive), or '{EARLIEST}'")
    if table.properties.get(_META_FIELDS, "true").strip().lower() != "true":
        raise ReadOptionError(
            f"table {table.name} has {_META_FIELDS}=false: its rows carry no commit time, "
            "so changes cannot be read incrementally; query a snapshot instead")
    timeline = table.timeline
    start = _bound(table, begin, begin_option, earliest=True)
    if end is not None and str(end).strip():
        stop = _bound(table, end, end_option, earliest=False)
        holes = [i for i in timeline.pending(_DATA_ACTIONS)
                 if (start is None or i.timestamp > start) and stop is not None
                 and i.timestamp <= stop]
        if holes:
            raise ReadOptionError(
                f"{end_option}={end}: write {holes[0].timestamp} of table {table.name} in "
                f"the range is still {holes[0].state}; end the range before it, or wait for "
                "it to complete (or roll it back)")
    else:
        head = timeline.last_completed_without_holes(_DATA_ACTIONS)
        stop = None if head is None else head.timestamp
        if stop is not None and latest is not None:
            stop = min(stop, latest)
    if start is not None and stop is not None and start > stop:
        raise ReadOptionError(
            f"{begin_option}={begin} is after {end_option}={end or stop} on table "
            f"{table.name}: the range (begin, end] is empty the wrong way round; swap them")
    rolled_back = timeline.rolled_back_instants()

    def wanted(ts: str) -> bool:
        return (ts not in rolled_back and stop is not None and ts <= stop
                and (start is None or ts > start))

    archived: dict[str, CommitMetadata] = {}
    if _reaches_archive(table, start) and not (start is not None and full_scan_fallback):
        archived = _archived_writes(table, wanted)
    instants = tuple(sorted(archived)) + tuple(
        i.timestamp for i in timeline.completed(WRITE_ACTIONS) if wanted(i.timestamp))
    groups: frozenset[tuple[str, str]] | None = None
    if start is not None and not (full_scan_fallback and _reaches_archive(table, start)):
        groups = frozenset(_written_file_groups(table, instants, archived))
    return IncrementalRange(start, stop, instants, groups, archived)


def _reaches_archive(table: HudiTable, begin: str | None) -> bool:
    """True when the range starts before the active timeline and instants were archived."""
    boundary = table.timeline.archive_boundary
    if boundary is None or (begin is not None and begin >= boundary):
        return False
    archive = table.properties.archive_dir
    return table.storage.exists(archive) and any(
        not f.is_dir for f in table.storage.list_dir(archive))


def _archived_writes(table: HudiTable, wanted: Callable[[str], bool]
                     ) -> dict[str, CommitMetadata]:
    """The archived completed writes ``wanted`` keeps, with their commit metadata: a range
    that starts among archived instants reads them (loading the archived timeline)."""
    from hudisql.table.services.archive import ArchivedTimeline

    found: dict[str, CommitMetadata] = {}
    for entry in ArchivedTimeline(table.storage, table.timeline).completed():
        metadata = entry.commit_metadata()
        if metadata is not None and wanted(entry.timestamp):
            found[entry.timestamp] = metadata
    return found


def _written_file_groups(table: HudiTable, instants: Iterable[str],
                         archived: Mapping[str, CommitMetadata]) -> set[tuple[str, str]]:
    groups: set[tuple[str, str]] = set()
    for timestamp in instants:
        metadata = archived.get(timestamp) or table.timeline.commit_metadata(timestamp)
        for partition, stats in metadata.partition_to_write_stats.items():
            groups.update((stat.partition_path or partition, stat.file_id) for stat in stats)
    return groups


def incremental_slices(table: HudiTable, rng: IncrementalRange) -> list[FileSlice]:
    """The file slices as of ``rng.end`` that may hold rows written in the range."""
    if rng.is_empty:
        return []
    slices = table.file_slices(as_of=rng.end)
    if rng.file_groups is None:
        return slices
    return [s for s in slices if (s.partition_path, s.file_id) in rng.file_groups]


def read_incremental(table: HudiTable, begin: str | None, end: str | None = None, *,
                     full_scan_fallback: bool = False) -> pa.Table:
    """The latest state of every record written in ``(begin, end]`` (module notes).

    Returns:
        A ``pyarrow.Table`` in the table's schema as of ``end`` (meta columns first).

    Raises:
        ReadOptionError: see :func:`resolve_range`.
    """
    rng = resolve_range(table, begin, end, full_scan_fallback=full_scan_fallback)
    schema = table.schema_as_of(rng.end) if rng.end is not None else table.schema
    view = table.file_system_view(rng.end)
    parts = []
    for file_slice in incremental_slices(table, rng):
        rows = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                               rng.end, schema=schema, visible=view.visible)
        parts.append(rows.filter(rng.row_filter(rows.column(COMMIT_TIME_COLUMN))))
    return pa.concat_tables(parts) if parts else schema.empty_table()
