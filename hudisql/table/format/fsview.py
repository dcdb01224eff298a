"""The file-system view: a table's file groups and file slices as of an instant.

A *file group* is every file with one file id in one partition; a *file slice* is one base
file (or none) plus the log files written on it. The view lists storage once per partition
and keeps only what a reader as of an instant may see: files of completed instants no later
than ``as_of`` that no rollback names, in file groups no completed replacecommit replaced.

Log files attach to slices by the instant in their name. In version 6 that instant is the
slice's base instant; a log whose base instant is not visible (a pending compaction's new
slice) joins the latest visible slice before it, as Hudi's readers merge it. In version 8+
the name carries the writing deltacommit's *requested* instant, and the log belongs to the
latest visible base file whose instant is no later than that deltacommit's *completion*
time (Hudi 1.x's ``HoodieFileGroup.getBaseInstantTime``): a deltacommit that started before
a compaction was planned but finished after it wrote logs the plan does not hold, so they
belong on the compaction's new slice.

Every statement builds several views (a write's tagging, its commit, the clean after it),
and a merge-on-read table that is not compacted gathers a log file per deltacommit, so the
views' work per file grew with the table's age. Two caches keep it down, neither ever
stale: a file's parsed name is kept per name and size (a name never changes meaning), and a
partition's file groups are kept per view inputs: the partition's listing (paths and
sizes), the timeline's state (:meth:`Timeline.state`: its instant file names, so a new
instant, a state change, a rollback, a completed compaction or an archived instant is a new
key), the LSM history's listing on versions 8 and 9 (archived completion times), the
table version, ``as_of`` and the hidden instants. The views of one table state share the
groups; a new state builds them again.
"""

from __future__ import annotations

import bisect
import posixpath
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from hudisql.table.format.filenames import BaseFileName, LogFileName
from hudisql.table.format.instant import Action
from hudisql.table.format.lsm_timeline import ArchivedCompletionTimes
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import FileStatus, Storage

__all__ = [
    "PARTITION_METAFILE",
    "BaseFile",
    "FileGroup",
    "FileSlice",
    "FileSystemView",
    "LogFile",
    "VisibleInstants",
    "base_files_only",
]

#: Every partition directory holds this file (or ``<name>.<ext>`` when written in base format).
PARTITION_METAFILE = ".hoodie_partition_metadata"

# Actions whose completed instants replace file groups (clustering, insert overwrite).
_REPLACE_ACTIONS = (Action.REPLACECOMMIT, Action.CLUSTERING)

#: The most listed files whose partitions' groups the process keeps (module notes).
_KEPT_FILES = 200_000
#: (view inputs) -> the partition's file groups, least recently used first.
_GROUPS: OrderedDict[tuple[object, ...], tuple[FileGroup, ...]] = OrderedDict()
_GROUPS_FILES = [0]
#: (path, size) -> the parsed data file (None: not a base or log file), for every view.
_PARSED: dict[tuple[str, int], BaseFile | LogFile | None] = {}
_KEPT_NAMES = 200_000
_CACHE_LOCK = threading.Lock()


@dataclass(frozen=True)
class BaseFile:
    """A base (parquet) file: its path relative to the table, file id, instant, token, size."""

    path: str
    file_id: str
    instant: str
    write_token: str
    size: int

    @property
    def name(self) -> str:
        """The file name without its partition directory."""
        return posixpath.basename(self.path)


@dataclass(frozen=True)
class LogFile:
    """A log file: its relative path, file id, the instant in its name, version, token, size.

    ``base_instant`` is the instant in the file name: the base instant of the slice it was
    written on (v6), or the deltacommit that wrote it (v8+).
    """

    path: str
    file_id: str
    base_instant: str
    version: int
    write_token: str
    size: int

    @property
    def name(self) -> str:
        """The file name without its partition directory."""
        return posixpath.basename(self.path)

    @property
    def log_order(self) -> tuple[str, int, str]:
        """The sort key that puts log files in log order (instant, version, write token)."""
        return (self.base_instant, self.version, self.write_token)


@dataclass(frozen=True)
class FileSlice:
    """One base file (or none) and the log files written on it, in log order."""

    partition_path: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None
    log_files: tuple[LogFile, ...] = ()

    @property
    def has_log_files(self) -> bool:
        """True when the slice has log files (its read needs a merge)."""
        return bool(self.log_files)

    @property
    def paths(self) -> list[str]:
        """Relative paths of every file of the slice, base file first, then logs in order."""
        out = [self.base_file.path] if self.base_file is not None else []
        return out + [log.path for log in self.log_files]

    @property
    def total_size(self) -> int:
        """Bytes of the base file and all log files."""
        base = self.base_file.size if self.base_file is not None else 0
        return base + sum(log.size for log in self.log_files)


@dataclass(frozen=True)
class FileGroup:
    """All visible slices of one file id in one partition, oldest first."""

    partition_path: str
    file_id: str
    slices: tuple[FileSlice, ...] = field(default_factory=tuple)

    @property
    def latest_slice(self) -> FileSlice:
        """The newest slice: the one a snapshot read uses."""
        return self.slices[-1]


class VisibleInstants:
    """The instants whose writes a reader as of ``as_of`` sees.

    An instant is visible when it is completed on the timeline (archived instants count),
    no rollback names it, it is no later than ``as_of`` (when given) and not ``hidden``.
    ``hidden`` lets a version 8/9 reader see the table as of a *completion* time: the
    instants requested before ``as_of`` that completed after that time are hidden
    (:func:`hudisql.table.read.incremental.completion_snapshot`).
    """

    def __init__(self, timeline: Timeline, as_of: str | None = None,
                 hidden: frozenset[str] = frozenset()) -> None:
        self.timeline = timeline
        self.as_of = as_of
        self.hidden = hidden
        self._rolled_back = frozenset(timeline.rolled_back_instants()) | hidden
        self._cache: dict[str, bool] = {}

    def __contains__(self, timestamp: object) -> bool:
        if not isinstance(timestamp, str) or not timestamp:
            return False
        known = self._cache.get(timestamp)
        if known is None:
            known = (
                (self.as_of is None or timestamp <= self.as_of)
                and timestamp not in self._rolled_back
                and self.timeline.is_completed(timestamp)
            )
            self._cache[timestamp] = known
        return known


class FileSystemView:
    """File groups and file slices of a table as of an instant, listed from storage.

    Listing is lazy and cached per partition; build a new view to see new files.
    """

    def __init__(
        self,
        storage: Storage,
        props: TableProperties,
        timeline: Timeline,
        as_of: str | None = None,
        hidden: frozenset[str] = frozenset(),
    ) -> None:
        self.storage = storage
        self.props = props
        self.timeline = timeline
        self.as_of = as_of
        self.visible = VisibleInstants(timeline, as_of, hidden)
        # Groups are kept only for views that see what ``as_of`` and ``hidden`` say: a
        # caller may replace ``visible`` (the metadata writer's before/after views do).
        self._keyed_visible = self.visible
        # v6 names a log by its slice's base instant; v8+ by the deltacommit that wrote it,
        # and slices it by that deltacommit's completion time.
        self._log_names_writer = props.version >= 8
        self._completion_times: dict[str, str] | None = None
        self._archived = ArchivedCompletionTimes(storage, props)
        # The timeline's state when the view was made: groups are kept and taken only while
        # the timeline (which writes through it change) is still in that state.
        self._state = timeline.state()
        self._history: tuple[object, ...] | None = None
        self._listing: dict[str, list[FileStatus]] | None = None
        self._partition_listing: dict[str, list[FileStatus]] = {}
        self._replaced: set[tuple[str, str]] | None = None

    # -- listing -------------------------------------------------------------------------

    def partitions(self) -> list[str]:
        """Relative paths of every partition (``""`` for a non-partitioned table), sorted."""
        return sorted(self._list_all())

    def _list_all(self) -> dict[str, list[FileStatus]]:
        # One walk of the table (never into .hoodie) yields both the partitions and their
        # files, so a full-table read lists storage once.
        if self._listing is not None:
            return self._listing
        by_dir: dict[str, list[FileStatus]] = defaultdict(list)
        statuses: list[FileStatus] = []
        tops = self.storage.list_dir("")
        folders = sum(1 for t in tops if t.is_dir and not t.name.startswith("."))
        if not self.storage.is_local and folders > 1:
            # On an object store one flat listing of the table (a request per 1,000 keys,
            # .hoodie's included) costs far less than a listing per partition folder.
            statuses = [s for s in self.storage.list_recursive("")
                        if not (s.path.startswith(".") and "/" in s.path)]
            tops = []
        for top in tops:
            if top.name.startswith("."):
                if not top.is_dir:
                    statuses.append(top)  # root-level data files of a non-partitioned table
                continue
            if top.is_dir:
                statuses.extend(self.storage.list_recursive(top.path))
            else:
                statuses.append(top)
        for status in statuses:
            if not status.is_dir:
                by_dir[posixpath.dirname(status.path)].append(status)
        self._listing = {
            directory: files
            for directory, files in by_dir.items()
            if any(f.name.startswith(PARTITION_METAFILE) for f in files)
            and not _is_hidden_path(directory)
        }
        return self._listing

    def _partition_files(self, partition: str) -> list[FileStatus]:
        if self._listing is not None:
            return self._listing.get(partition, [])
        files = self._partition_listing.get(partition)
        if files is None:
            files = [s for s in self.storage.list_dir(partition) if not s.is_dir]
            self._partition_listing[partition] = files
        return files

    # -- replaced file groups ------------------------------------------------------------

    def replaced_file_groups(self) -> set[tuple[str, str]]:
        """``(partition, file_id)`` of file groups replaced by a visible replacecommit."""
        if self._replaced is None:
            replaced: set[tuple[str, str]] = set()
            for instant in self.timeline.completed(_REPLACE_ACTIONS):
                if instant.timestamp not in self.visible:
                    continue
                metadata = self.timeline.commit_metadata(instant)
                for partition, file_ids in metadata.partition_to_replace_file_ids.items():
                    replaced.update((partition, file_id) for file_id in file_ids)
            self._replaced = replaced
        return self._replaced

    # -- file groups and slices ----------------------------------------------------------

    def file_groups(self, partition: str | None = None) -> list[FileGroup]:
        """Visible, non-replaced file groups of one partition (or all), by partition and id."""
        partitions = self.partitions() if partition is None else [partition]
        replaced = self.replaced_file_groups()
        groups: list[FileGroup] = []
        for part in partitions:
            for group in self._groups_of(part):
                if (group.partition_path, group.file_id) not in replaced:
                    groups.append(group)
        return groups

    def latest_file_slices(self, partition: str | None = None) -> list[FileSlice]:
        """The newest visible slice of every visible, non-replaced file group."""
        return [group.latest_slice for group in self.file_groups(partition)]

    def _groups_of(self, partition: str) -> tuple[FileGroup, ...]:
        """The partition's file groups (replaced ones too), kept for views of the same
        inputs (module notes)."""
        files = self._partition_files(partition)
        if (self.timeline.state() is not self._state  # written through since: not kept
                or self.visible is not self._keyed_visible):  # a caller's own visibility
            return tuple(self._build_groups(partition, files))
        key = (self.storage.base_uri, partition, self.props.version, self.as_of,
               self.visible.hidden, self._state, self._history_state(),
               tuple([(f.path, f.size) for f in files]))
        with _CACHE_LOCK:
            found = _GROUPS.get(key)
            if found is not None:
                _GROUPS.move_to_end(key)
                return found
        groups = tuple(self._build_groups(partition, files))
        with _CACHE_LOCK:
            if key not in _GROUPS:
                _GROUPS[key] = groups
                _GROUPS_FILES[0] += len(files)
                while _GROUPS_FILES[0] > _KEPT_FILES and len(_GROUPS) > 1:
                    dropped, _ = _GROUPS.popitem(last=False)
                    _GROUPS_FILES[0] -= len(dropped[-1])  # type: ignore[arg-type]
        return groups

    def _history_state(self) -> tuple[object, ...]:
        # Versions 8 and 9 slice logs of archived deltacommits by completion times read from
        # the LSM history: its listing is part of a kept answer's inputs.
        if self._history is None:
            self._history = () if not self._log_names_writer else tuple(
                (s.name, s.size, s.mtime)
                for s in self.storage.list_dir(self.props.archive_dir) if not s.is_dir)
        return self._history

    def _build_groups(self, partition: str, files: Iterable[FileStatus]) -> list[FileGroup]:
        bases: dict[str, list[BaseFile]] = defaultdict(list)
        logs: dict[str, list[LogFile]] = defaultdict(list)
        for status in files:
            parsed = _parse(status)
            if parsed is None:
                continue
            if isinstance(parsed, BaseFile):
                if parsed.instant in self.visible:
                    bases[parsed.file_id].append(parsed)
            elif not self._log_names_writer or parsed.base_instant in self.visible:
                logs[parsed.file_id].append(parsed)
        groups = []
        for file_id in sorted(set(bases) | set(logs)):
            slices = self._build_slices(partition, file_id, bases[file_id], logs[file_id])
            if slices:
                groups.append(FileGroup(partition, file_id, tuple(slices)))
        return groups

    def _build_slices(
        self, partition: str, file_id: str, bases: list[BaseFile], logs: list[LogFile]
    ) -> list[FileSlice]:
        by_instant: dict[str, list[BaseFile]] = defaultdict(list)
        for base in bases:
            by_instant[base.instant].append(base)
        base_by_instant = {ts: self._committed_base(found) for ts, found in by_instant.items()}
        keys = set(base_by_instant)
        if not self._log_names_writer:
            # v6: a log names its slice; a visible name makes a slice even without a base file.
            keys.update(log.base_instant for log in logs if log.base_instant in self.visible)
        ordered = sorted(keys)
        slice_logs: dict[str, list[LogFile]] = defaultdict(list)
        orphans: list[LogFile] = []
        for log in logs:
            key = self._slice_for_log(log, keys, ordered)
            if key is None:
                orphans.append(log)
            else:
                slice_logs[key].append(log)
        if orphans and self._log_names_writer:
            # v8+: logs before any base file form a log-only slice of their first instant.
            first = min(log.base_instant for log in orphans)
            ordered.insert(0, first)
            slice_logs[first].extend(orphans)
        # v6 orphans name a base instant that is not visible and has nothing before it:
        # writes of a failed or later instant, which a reader as of this view never sees.
        return [
            FileSlice(
                partition_path=partition,
                file_id=file_id,
                base_instant=key,
                base_file=base_by_instant.get(key),
                log_files=tuple(sorted(slice_logs[key], key=lambda lf: lf.log_order)),
            )
            for key in ordered
        ]

    def _committed_base(self, candidates: list[BaseFile]) -> BaseFile:
        if len(candidates) == 1:
            return candidates[0]
        # Two base files of one file group and instant: a retried task left a duplicate
        # behind. The commit metadata names the one that was committed.
        instant = self.timeline.get(candidates[0].instant)
        if instant is not None:
            stats = self.timeline.commit_metadata(instant).write_stats()
            written = {posixpath.basename(stat.path or "") for stat in stats}
            for base in candidates:
                if base.name in written:
                    return base
        return max(candidates, key=lambda b: b.write_token)

    def _slice_for_log(self, log: LogFile, keys: set[str], ordered: list[str]) -> str | None:
        instant = log.base_instant
        if self._log_names_writer:
            # v8+: the latest visible base no later than the deltacommit's completion. A
            # pending compaction's base is not visible, so a log that completed after it was
            # planned joins the slice before it, as Hudi's merged reader view does.
            index = bisect.bisect_right(ordered, self.completion_time(instant))
            return ordered[index - 1] if index else None
        if instant in keys:
            return instant
        # v6: the name's slice is not visible (a pending or later compaction), so the log
        # joins the latest slice before it.
        index = bisect.bisect_left(ordered, instant)
        return ordered[index - 1] if index else None

    def completion_time(self, timestamp: str) -> str:
        """When the visible instant requested at ``timestamp`` completed.

        Read from its completed file's name (timeline layout 2). An instant not on the active
        timeline was archived: its completion time comes from the LSM history, read only
        then (Hudi 1.x's ``CompletionTimeQueryViewV2``). An archived instant the
        history does not hold has its requested time stand in for its completion, as Hudi's
        version-6 completion-time view and hudi-rs do.

        Raises:
            CorruptTableError: the LSM history is malformed (names the file).
        """
        if self._completion_times is None:
            self._completion_times = {
                i.timestamp: i.completion_time
                for i in self.timeline.completed()
                if i.completion_time
            }
        found = self._completion_times.get(timestamp)
        if found is None:
            if self.timeline.get(timestamp) is None:
                found = self._archived.get(timestamp)
            found = self._completion_times[timestamp] = found or timestamp
        return found


def base_files_only(slices: Iterable[FileSlice]) -> list[FileSlice]:
    """Hudi's read-optimized view of ``slices``: each base file alone, log files ignored
    (a slice of log files only holds no base rows and is left out)."""
    return [replace(s, log_files=()) for s in slices if s.base_file is not None]


def _is_hidden_path(directory: str) -> bool:
    return any(part.startswith(".") for part in directory.split("/") if part)


def _parse(status: FileStatus) -> BaseFile | LogFile | None:
    """The base or log file ``status`` is (None: neither), parsed once per path and size."""
    key = (status.path, status.size)
    try:
        return _PARSED[key]
    except KeyError:
        pass
    parsed = _parse_base(status) or _parse_log(status)
    if len(_PARSED) >= _KEPT_NAMES:
        _PARSED.clear()  # a bound on memory; views parse again
    _PARSED[key] = parsed
    return parsed


def _parse_base(status: FileStatus) -> BaseFile | None:
    parsed = BaseFileName.parse(status.name)
    if parsed is None:
        return None
    return BaseFile(status.path, parsed.file_id, parsed.instant, parsed.write_token, status.size)


def _parse_log(status: FileStatus) -> LogFile | None:
    parsed = LogFileName.parse(status.name)
    if parsed is None or parsed.extension != "log" or parsed.cdc:
        return None
    return LogFile(
        status.path,
        parsed.file_id,
        parsed.base_instant,
        int(parsed.version),
        parsed.write_token or "",
        status.size,
    )
