"""Incremental queries: the records that changed in a range of instants, without Spark.

The range is ``(begin, end]``, ``begin`` exclusive (``earliest`` or ``000``: from the
table's start), ``end`` inclusive. What it bounds depends on the table version:

* Version 6 (Apache Hudi 0.x): instant (requested) times. The default end is the last
  completed write with no pending write before it, so that a range read now never misses
  an instant that completes later.
* Versions 8 and 9 (Apache Hudi 1.x's ``IncrementalQueryAnalyzer``, hudi-rs): *completion*
  times. The range holds the writes that completed in it, whatever their requested times
  (a write requested before ``begin`` that completed after it is in; one requested in the
  range that completed after ``end`` is not); ``begin`` and ``end`` are compared with
  completion times even when they name a requested time, as Hudi 1.x and hudi-rs do. Rows
  are those whose ``_hoodie_commit_time`` is one of those writes (Hudi's exact-match
  instant range), read from the table as of ``end`` by completion: the writes that
  completed by then (:func:`completion_snapshot`). The default end is the latest
  completion time: completion times are taken under the table lock after every time on
  the timeline, so a write pending now completes after it and no hole can open behind it.

The
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
too; on versions 8/9 the archived instants of the range come from the LSM history's time
columns, their metadata unread), as Hudi does. Apache Hudi 0.x reads only the active
instants of such a range when the fallback is off; hudisql reads the archived ones too
rather than miss their changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import HudiSqlError, ReadOptionError
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.fsview import FileSlice, FileSystemView, VisibleInstants
from hudisql.table.format.instant import WRITE_ACTIONS, Action
from hudisql.table.format.lsm_timeline import ArchivedCompletionTimes
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable, normalize_as_of

__all__ = [
    "COMMIT_TIME_COLUMN",
    "EARLIEST",
    "FULL_SCAN_FALLBACK",
    "IncrementalRange",
    "check_on_timeline",
    "check_time_travel",
    "completion_snapshot",
    "completion_times",
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
    range is empty). ``instants``: the completed, not rolled-back writes in the range (their
    instant times; on versions 8/9 in completion order). ``file_groups``: ``(partition, file
    id)`` of every file group they wrote, or None when every file group is read (a range
    from the start, or a full-scan fallback).
    """

    begin: str | None
    end: str | None
    instants: tuple[str, ...]
    file_groups: frozenset[tuple[str, str]] | None
    #: The commit metadata of the archived instants among ``instants``.
    archived: Mapping[str, CommitMetadata] = field(default_factory=dict)
    #: Versions 8/9: ``begin`` and ``end`` are completion times (module notes).
    by_completion: bool = False
    #: Versions 8/9: the instant time the rows are read as of, and the instants requested
    #: before it that completed after ``end`` (hidden): the table as of ``end``'s completion.
    snapshot: str | None = None
    hidden: frozenset[str] = frozenset()

    @property
    def as_of(self) -> str | None:
        """The instant time the range's rows are read as of (with :attr:`hidden` unseen)."""
        return self.snapshot if self.by_completion else self.end

    def commit_metadata(self, table: HudiTable, instant: str) -> CommitMetadata:
        """The commit metadata of ``instant`` (archived or active)."""
        found = self.archived.get(instant)
        return found if found is not None else table.timeline.commit_metadata(instant)

    @property
    def is_empty(self) -> bool:
        """True when no completed write lies in the range."""
        return self.end is None or not self.instants

    def file_system_view(self, table: HudiTable) -> FileSystemView:
        """The file-system view the range's rows are read from (as of its end)."""
        return FileSystemView(table.storage, table.properties, table.timeline, self.as_of,
                              self.hidden)

    def visible(self, table: HudiTable) -> VisibleInstants:
        """The instants a read of the range sees (those completed by its end)."""
        return VisibleInstants(table.timeline, self.as_of, self.hidden)

    def for_rows(self) -> IncrementalRange:
        """This range cut to what :meth:`row_filter` and :meth:`visible` need (what each
        input partition of a Spark read carries): no file groups, no archived metadata, and
        the instants only where rows are matched against them."""
        exact = self.by_completion and self.begin is not None
        return replace(self, instants=self.instants if exact else (), file_groups=None,
                       archived={})

    def row_filter(self, column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
        """The boolean mask of the commit times in ``column`` that lie in the range."""
        column = column.cast(pa.string())
        if self.by_completion:
            # Hudi 1.x: from the start, everything the snapshot as of the end holds;
            # otherwise exactly the writes that completed in the range.
            if self.begin is None:
                mask = pc.less_equal(column, self.as_of or "")
            else:
                mask = pc.is_in(column, value_set=pa.array(self.instants, pa.string()))
            return pc.fill_null(mask, False)
        mask = pc.less_equal(column, self.end or "")
        if self.begin is not None:
            mask = pc.and_(mask, pc.greater(column, self.begin))
        return pc.fill_null(mask, False)


def completion_times(table: HudiTable) -> dict[str, str]:
    """Instant time -> completion time of every completed instant on the active timeline
    (an instant without one, of layout 1, stands for itself)."""
    return {i.timestamp: i.completion_time or i.timestamp for i in table.timeline.completed()}


def completion_snapshot(table: HudiTable, end: str) -> tuple[str, frozenset[str]]:
    """The table as of completion time ``end`` (versions 8/9), as a file-system view takes
    it: an instant time ``as_of`` and the instants to hide.

    ``as_of`` is the latest instant time among the instants completed by ``end``; hidden are
    the instants requested before it that completed after ``end`` (out of order). An end
    before every active completion (among archived instants) is its own ``as_of``, with the
    active instants requested before it hidden.
    """
    times = completion_times(table)
    as_of = max((ts for ts, completed in times.items() if completed <= end), default=end)
    return as_of, frozenset(ts for ts, completed in times.items()
                            if ts <= as_of and completed > end)


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
    match any point; an instant time before the first active instant may be archived. On
    versions 8/9 a completion time of an instant counts as on the timeline (ranges are by
    completion time there), and so does any time before the first active completion.

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
    if table.properties.timeline_layout >= 2:
        completed = sorted(completion_times(table).values())
        if instant in completed or (completed and instant < completed[0]):
            return
        times += completed
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
    """The range ``(begin, end]`` of ``table``'s timeline, checked: by instant time on
    version 6, by completion time on versions 8/9 (module notes).

    Args:
        begin: exclusive start: an instant time, a time string, or ``earliest``/``000``.
        end: inclusive end; default: on version 6 the last completed write with no pending
            write before it, on 8/9 the latest completion time (no later than the writes
            up to instant ``latest`` when given: a pinned snapshot).
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
    by_completion = table.properties.timeline_layout >= 2
    start = _bound(table, begin, begin_option, earliest=True)
    if end is not None and str(end).strip():
        stop = _bound(table, end, end_option, earliest=False)
        assert stop is not None
        _refuse_pending(table, start, stop, end_option, end, by_completion)
    elif by_completion:
        stop = _latest_completion(table, latest)
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

    def wanted(ts: str, completed: str) -> bool:
        key = completed if by_completion else ts
        return (ts not in rolled_back and stop is not None and key <= stop
                and (start is None or key > start))

    archived: dict[str, CommitMetadata] = {}
    scanned: tuple[str, ...] = ()
    if _reaches_archive(table, start) and not (start is not None and full_scan_fallback):
        archived = _archived_writes(table, wanted)
    elif by_completion and start is not None and _reaches_archive(table, start):
        # A full scan still matches rows by instant: the archived instants completed in
        # the range, from the history's time columns (not their metadata).
        history = ArchivedCompletionTimes(table.storage, table.properties).all()
        scanned = tuple(ts for _, ts in sorted(
            (completed, ts) for ts, completed in history.items()
            if timeline.get(ts) is None and wanted(ts, completed)))
    times = completion_times(table)
    active = [(times[i.timestamp], i.timestamp) for i in timeline.completed(WRITE_ACTIONS)
              if wanted(i.timestamp, times[i.timestamp])]
    if by_completion:
        active.sort()
    instants = tuple(archived) + scanned + tuple(ts for _, ts in active)
    groups: frozenset[tuple[str, str]] | None = None
    if start is not None and not (full_scan_fallback and _reaches_archive(table, start)):
        groups = frozenset(_written_file_groups(table, instants, archived))
    if not by_completion:
        return IncrementalRange(start, stop, instants, groups, archived)
    as_of, hidden = (None, frozenset[str]()) if stop is None else completion_snapshot(table, stop)
    return IncrementalRange(start, stop, instants, groups, archived, True, as_of, hidden)


def _refuse_pending(table: HudiTable, start: str | None, stop: str, option: str, end: str,
                    by_completion: bool) -> None:
    """Refuse an explicit end that a pending write may still complete at or before.

    Version 6: a pending write requested in the range. Versions 8/9: any pending write
    when the end lies after the latest completion (it completes after that one).
    """
    pending = table.timeline.pending(_DATA_ACTIONS)
    if by_completion:
        done = completion_times(table).values()
        holes = pending if pending and stop > max(done, default="") else []
    else:
        holes = [i for i in pending if (start is None or i.timestamp > start)
                 and i.timestamp <= stop]
    if holes:
        where = ("after the latest completion time" if by_completion else "in the range")
        raise ReadOptionError(
            f"{option}={end}: write {holes[0].timestamp} of table {table.name} is still "
            f"{holes[0].state} and may complete {where}; end the range before it, or wait "
            "for it to complete (or roll it back)")


def _latest_completion(table: HudiTable, latest: str | None) -> str | None:
    """Versions 8/9: the default end, the latest completion time of a write (of the writes
    requested up to ``latest`` when given: a pinned snapshot)."""
    times = completion_times(table)
    done = [times[i.timestamp] for i in table.timeline.completed(WRITE_ACTIONS)
            if latest is None or i.timestamp <= latest]
    return max(done, default=None)


def _reaches_archive(table: HudiTable, begin: str | None) -> bool:
    """True when the range starts before the active timeline and instants were archived."""
    boundary = table.timeline.archive_boundary
    if boundary is None or (begin is not None and begin >= boundary):
        return False
    archive = table.properties.archive_dir
    return table.storage.exists(archive) and any(
        not f.is_dir for f in table.storage.list_dir(archive))


def _archived_writes(table: HudiTable, wanted: Callable[[str, str], bool]
                     ) -> dict[str, CommitMetadata]:
    """The archived completed writes ``wanted`` keeps (given instant and completion time),
    with their commit metadata, oldest first (versions 8/9: by completion time): a range
    that starts among archived instants reads them (loading the archived timeline)."""
    from hudisql.table.services.archive import ArchivedTimeline

    found: list[tuple[str, str, CommitMetadata]] = []
    for entry in ArchivedTimeline(table.storage, table.timeline).completed():
        metadata = entry.commit_metadata()
        completed = str(entry.record.get("completionTime") or entry.timestamp)
        if metadata is not None and wanted(entry.timestamp, completed):
            found.append((completed, entry.timestamp, metadata))
    if table.properties.timeline_layout < 2:
        found.sort(key=lambda f: f[1])
    else:
        found.sort()
    return {ts: metadata for _, ts, metadata in found}


def _written_file_groups(table: HudiTable, instants: Iterable[str],
                         archived: Mapping[str, CommitMetadata]) -> set[tuple[str, str]]:
    groups: set[tuple[str, str]] = set()
    for timestamp in instants:
        metadata = archived.get(timestamp) or table.timeline.commit_metadata(timestamp)
        for partition, stats in metadata.partition_to_write_stats.items():
            groups.update((stat.partition_path or partition, stat.file_id) for stat in stats)
    return groups


def incremental_slices(table: HudiTable, rng: IncrementalRange,
                       view: FileSystemView | None = None) -> list[FileSlice]:
    """The file slices as of ``rng``'s end that may hold rows written in the range."""
    if rng.is_empty:
        return []
    slices = (view or rng.file_system_view(table)).latest_file_slices()
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
    schema = table.schema_as_of(rng.as_of) if rng.as_of is not None else table.schema
    view = rng.file_system_view(table)
    parts = []
    for file_slice in incremental_slices(table, rng, view):
        rows = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                               rng.as_of, schema=schema, visible=view.visible)
        parts.append(rows.filter(rng.row_filter(rows.column(COMMIT_TIME_COLUMN))))
    return pa.concat_tables(parts) if parts else schema.empty_table()
