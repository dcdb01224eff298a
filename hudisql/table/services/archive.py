"""Timeline archival: move the oldest completed instants out of the active timeline.

Once more than ``hoodie.keep.max.commits`` (default 30) completed commits (commit,
deltacommit, replacecommit) are active, the oldest move to the archived timeline
(``archive_format``) until ``hoodie.keep.min.commits`` (default 20) remain, as Apache Hudi
0.x's ``HoodieTimelineArchiver`` does, never at or past:

- the completed commit before the earliest pending write (a pending compaction, log
  compaction or clustering included), or that pending write itself;
- the deltacommits a merge-on-read table's next compaction counts
  (``hoodie.compact.inline.max.delta.commits``, counted from the latest compaction);
- a replacecommit whose replaced file groups the last clean has not deleted yet;
- the earliest commit to retain of the latest clean;
- the first savepoint;
- for a table with a metadata table, the metadata table's latest compaction (nothing is
  archived before its first one); for the metadata table itself, the data table's earliest
  active commit and earliest pending instant.

Completed cleans and rollbacks older than the newest commit archived go with them. Every
state file of an archived instant becomes one record.

**Steps**, each safe to be killed after: (1) finish an interrupted run: state files listed
in the newest archive file that are still active are deleted; (2) write one new archive
file holding every state file of the chosen instants (created whole, at the next version);
(3) delete their markers; (4) delete their requested and inflight files, then their
completed files oldest first (Hudi's order, so no reader ever sees a completed instant's
earlier state alone, nor a hole in the commits); (5) merge small archive files
(``archive_merge``), so that their number stays bounded. A reader that loads the archived
timeline while a run was cut short sees an instant once: the active copy wins.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hudisql.errors import CorruptTableError, TableServiceError
from hudisql.table.format.archive_format import (
    ArchivedEntry,
    archive_file_name,
    archive_files,
    encode_archive_block,
    entry_record,
    read_archive_file,
)
from hudisql.table.format.commit_metadata import AVRO_MAGIC, read_avro_container
from hudisql.table.format.instant import WRITE_ACTIONS, Action, Instant, State
from hudisql.table.format.lsm_timeline import history_rows
from hudisql.table.format.service_plans import CleanMetadata, int_setting
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.services.archive_merge import (
    MERGE_BATCH,
    MERGE_ENABLE,
    MERGE_SMALL_LIMIT,
    MergeSettings,
    finish_interrupted_merge,
    merge_small_archive_files,
)
from hudisql.table.services.compaction import MAX_DELTA_COMMITS

__all__ = [
    "ArchivalBounds",
    "ArchivalSettings",
    "ArchivedTimeline",
    "archive_timeline",
    "instants_to_archive",
]

MIN_COMMITS = "hoodie.keep.min.commits"
MAX_COMMITS = "hoodie.keep.max.commits"
#: Hudi's ``hoodie.timeline.compaction.batch.size`` (the LSM history of version 8/9 tables).
HISTORY_BATCH = "hoodie.timeline.compaction.batch.size"
#: The completed actions Hudi's archiver counts ("the completed commits timeline").
_COMMITS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT)

StepHook = Callable[[str, str], None]


def _no_step(event: str, detail: str) -> None:
    return None


@dataclass(frozen=True)
class ArchivalSettings:
    """How many completed commits the active timeline keeps."""

    min_commits: int = 20
    max_commits: int = 30
    max_delta_commits: int = 5
    merge: MergeSettings = field(default_factory=MergeSettings)
    #: ``hoodie.timeline.compaction.batch.size``: files of one LSM history layer (version
    #: 8/9 tables) compacted into one of the next.
    history_batch: int = 10

    @classmethod
    def parse(cls, options: Mapping[str, str], table: str = "") -> ArchivalSettings:
        """The settings from Hudi's option names.

        Raises:
            TableServiceError: a value that is not a positive integer, or
                ``hoodie.keep.max.commits`` not above ``hoodie.keep.min.commits``.
        """
        d = cls()
        low = int_setting(options, MIN_COMMITS, d.min_commits, 1)
        high = int_setting(options, MAX_COMMITS, d.max_commits, 1)
        if high <= low:
            raise TableServiceError(
                f"{MAX_COMMITS}={high} must be greater than {MIN_COMMITS}={low} (table "
                f"{table}): archival trims the active timeline from the first down to the second"
            )
        merge = MergeSettings(
            _bool_setting(options, MERGE_ENABLE, d.merge.enabled),
            int_setting(options, MERGE_BATCH, d.merge.batch_size, 2),
            int_setting(options, MERGE_SMALL_LIMIT, d.merge.small_file_limit, 1))
        return cls(low, high, int_setting(options, MAX_DELTA_COMMITS, d.max_delta_commits, 1),
                   merge, int_setting(options, HISTORY_BATCH, d.history_batch, 2))


def _bool_setting(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = str(options.get(key, default)).strip().lower()
    if raw not in ("true", "false"):
        raise TableServiceError(f"{key}={options.get(key)!r} is not a boolean: set it to "
                                "true or false")
    return raw == "true"


@dataclass(frozen=True)
class ArchivalBounds:
    """What other timelines hold archival back (from the metadata table or its data table).

    ``metadata_compaction``: the metadata table's latest compaction instant, when the table
    has a metadata table (``has_metadata``); ``data_earliest``: for a metadata table, the
    earliest instant its data table still needs on the metadata table's timeline.
    """

    has_metadata: bool = False
    metadata_compaction: str | None = None
    data_earliest: str | None = None


def _latest_clean(timeline: Timeline) -> CleanMetadata | None:
    last = timeline.last_completed([Action.CLEAN])
    if last is None:
        return None
    return CleanMetadata.parse(timeline.read_content(last), last.file_name)


def _compaction_bound(timeline: Timeline, max_delta_commits: int) -> str | None:
    """Hudi's ``getOldestInstantToRetainForCompaction``: keep the deltacommits the next
    compaction counts (and the latest compaction itself)."""
    last = timeline.last_completed([Action.COMMIT])
    deltas = [i for i in timeline.completed([Action.DELTACOMMIT])
              if last is None or i.timestamp > last.timestamp]
    if last is None and not deltas:
        return None
    if len(deltas) < max_delta_commits:
        return last.timestamp if last is not None else deltas[0].timestamp
    return deltas[len(deltas) - max_delta_commits].timestamp


def _replace_bound(timeline: Timeline, clean: CleanMetadata | None) -> str | None:
    """The first replacecommit whose replaced file groups may still be on disk."""
    cleaned_up_to = clean.earliest_commit_to_retain if clean is not None else ""
    for instant in timeline.completed([Action.REPLACECOMMIT]):
        if not cleaned_up_to or instant.timestamp > cleaned_up_to:
            return instant.timestamp
    return None


def _pending_bound(timeline: Timeline, commits: Sequence[Instant]) -> str | None:
    pending = timeline.pending(WRITE_ACTIONS)
    if not pending:
        return None
    first = pending[0].timestamp
    before = [c.timestamp for c in commits if c.timestamp < first]
    return before[-1] if before else first


def instants_to_archive(timeline: Timeline, settings: ArchivalSettings, is_mor: bool,
                        bounds: ArchivalBounds = ArchivalBounds()) -> list[Instant]:
    """The completed instants archival moves out now, oldest first (none: nothing due)."""
    commits = timeline.completed(_COMMITS)
    if len(commits) <= settings.max_commits:
        return []
    if bounds.has_metadata and bounds.metadata_compaction is None:
        return []  # the metadata table has not compacted yet: it still needs every instant
    clean = _latest_clean(timeline)
    limits = [
        _pending_bound(timeline, commits),
        _compaction_bound(timeline, settings.max_delta_commits) if is_mor else None,
        _replace_bound(timeline, clean),
        clean.earliest_commit_to_retain if clean is not None else None,
        bounds.metadata_compaction,
        bounds.data_earliest,
    ]
    savepoints = timeline.completed([Action.SAVEPOINT])
    if savepoints:
        limits.append(savepoints[0].timestamp)
    bound = min((b for b in limits if b), default=None)
    chosen = [c for c in commits if bound is None or c.timestamp < bound]
    chosen = chosen[:max(0, len(commits) - settings.min_commits)]
    if not chosen:
        return []
    newest = chosen[-1].timestamp
    others = [i for i in timeline.completed([Action.CLEAN, Action.ROLLBACK])
              if i.timestamp < newest]
    return sorted(chosen + others)


def _state_files(timeline: Timeline, instants: Sequence[Instant]) -> list[Instant]:
    files: list[Instant] = []
    for instant in instants:
        files.extend(timeline.instant_files(instant.timestamp))
    return files


def _delete_in_order(storage: Storage, timeline: Timeline, files: Sequence[Instant],
                     on_step: StepHook) -> None:
    """Requested and inflight files first, then completed ones oldest first (Hudi's order)."""
    pending = [f for f in files if not f.is_completed]
    for f in pending:
        storage.delete(posixpath.join(timeline.timeline_dir, f.file_name))
    if pending:
        on_step("pending_deleted", pending[-1].timestamp)
    for f in sorted(f for f in files if f.is_completed):
        storage.delete(posixpath.join(timeline.timeline_dir, f.file_name))
        on_step("completed_deleted", f.timestamp)


def _finish_interrupted(storage: Storage, timeline: Timeline, newest: str | None,
                        on_step: StepHook) -> bool:
    """Delete the active state files the newest archive file already holds (a run that
    died after writing it); returns True when there were some."""
    if newest is None:
        return False
    archived = {(e.timestamp, e.action, e.state) for e in read_archive_file(storage, newest)}
    leftover = [f for ts in sorted({t for t, _, _ in archived})
                for f in timeline.instant_files(ts)
                if (f.timestamp, f.action, f.state) in archived]
    if leftover:
        _delete_in_order(storage, timeline, leftover, on_step)
    return bool(leftover)


def archive_timeline(storage: Storage, timeline: Timeline, settings: ArchivalSettings,
                     is_mor: bool, bounds: ArchivalBounds = ArchivalBounds(),
                     on_step: StepHook = _no_step) -> list[Instant]:
    """Archive what is due, under the table lock the caller holds.

    Returns:
        The instants archived by this run (an interrupted run's leftovers not included).

    Raises:
        CorruptTableError: an instant file to archive, or the newest archive file, is
            malformed (nothing is deleted then).
    """
    archive_dir = timeline.props.archive_dir
    finish_interrupted_merge(storage, archive_dir, on_step)
    files = archive_files(storage, archive_dir)
    if _finish_interrupted(storage, timeline, files[-1][1] if files else None, on_step):
        timeline = timeline.reload()
    chosen = instants_to_archive(timeline, settings, is_mor, bounds)
    if not chosen:
        return []
    state_files = _state_files(timeline, chosen)
    records = []
    requested_schema: str | None = None
    for f in state_files:
        label = f"{f.file_name} of table {storage.base_uri}"
        content = storage.read_bytes(posixpath.join(timeline.timeline_dir, f.file_name))
        record, schema = entry_record(f, content, label)
        records.append(record)
        requested_schema = requested_schema or schema
    version = files[-1][0] + 1 if files else 1
    storage.makedirs(archive_dir)
    storage.create_if_absent(posixpath.join(archive_dir, archive_file_name(version)),
                             encode_archive_block(records, requested_schema))
    on_step("written", chosen[-1].timestamp)
    for instant in chosen:
        storage.delete_dir(posixpath.join(".hoodie/.temp", instant.timestamp))
    _delete_in_order(storage, timeline, state_files, on_step)
    merge_small_archive_files(storage, archive_dir, settings.merge, on_step)
    return chosen


class ArchivedTimeline:
    """The archived instants of a table, loaded on demand (every archive file is read).

    ``instants`` holds each archived instant once, in its latest archived state, leaving
    out instants still on ``active`` (a run cut short between writing its archive file and
    deleting the active files lists them in both places; the active copy wins).
    """

    def __init__(self, storage: Storage, active: Timeline) -> None:
        self.storage = storage
        self.active = active
        entries: dict[tuple[str, str], ArchivedEntry] = {}
        if active.props.timeline_layout >= 2:
            self.entries = [e for e in _history_entries(storage, active)
                            if active.get(e.timestamp) is None]
            return
        for _, rel in archive_files(storage, active.props.archive_dir):
            for entry in read_archive_file(storage, rel):
                if active.get(entry.timestamp) is not None:
                    continue
                key = (entry.timestamp, _base_action(entry.action))
                known = entries.get(key)
                if known is None or entry.state.rank >= known.state.rank:
                    entries[key] = entry
        self.entries = sorted(entries.values(), key=lambda e: (e.timestamp, e.state.rank))

    @property
    def instants(self) -> list[Instant]:
        """The archived instants, oldest first, each in its latest archived state."""
        return [e.instant for e in self.entries]

    def get(self, timestamp: str) -> ArchivedEntry | None:
        """The archived entry at ``timestamp`` (its latest state), or None."""
        for entry in self.entries:
            if entry.timestamp == timestamp:
                return entry
        return None

    def completed(self, actions: Sequence[str] | None = None) -> list[ArchivedEntry]:
        """The completed archived entries (of ``actions``, if given), oldest first."""
        return [e for e in self.entries
                if e.state == State.COMPLETED and (actions is None or e.action in actions)]


def _history_entries(storage: Storage, active: Timeline) -> list[ArchivedEntry]:
    """A version 8/9 table's archived instants (its LSM history), as completed entries
    whose records hold what version 6's archive holds for them (the commit metadata)."""
    entries = []
    for row in history_rows(storage, active.props.archive_dir):
        ts, action = str(row["instantTime"]), str(row["action"])
        record: dict[str, Any] = {"commitTime": ts, "actionType": action,
                                  "actionState": State.COMPLETED.value,
                                  "completionTime": row.get("completionTime")}
        metadata = row.get("metadata")
        if isinstance(metadata, bytes) and metadata.startswith(AVRO_MAGIC) and action in (
                Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT):
            key = ("hoodieReplaceCommitMetadata" if action == Action.REPLACECOMMIT
                   else "hoodieCommitMetadata")
            try:
                record[key] = dict(read_avro_container(metadata)[1])
            except ValueError as exc:
                raise CorruptTableError(
                    f"archived instant {ts}.{action} of table {storage.base_uri}: its metadata "
                    f"in the history is malformed ({exc})") from exc
        entries.append(ArchivedEntry(ts, action, State.COMPLETED, record))
    return entries


def _base_action(action: str) -> str:
    """Group a compaction's states (``compaction`` requested, ``commit`` completed)."""
    return {"compaction": "commit", "logcompaction": "deltacommit",
            "clustering": "replacecommit"}.get(action, action)
