"""The commit protocol on the driver: requested -> inflight -> write -> locked check -> completed.

A :class:`Transaction` opens an instant (rolling back abandoned instants first, under the
table lock), keeps its heartbeat alive while executors write, and finishes it under the
table lock: it checks the instants completed since it started for file groups it also
wrote (optimistic concurrency: the later writer fails with :class:`CommitConflictError`
naming both instants and the file groups), removes base files of failed or duplicate task
attempts, and completes the instant with its commit metadata; then it deletes log files of
failed or duplicate attempts (tidiness: reads are exact without it). Any failure rolls the
instant back (its files removed, a rollback instant written) before the error propagates.

An overwrite (``insert_overwrite``: the partitions it writes; ``insert_overwrite_table``:
every partition) completes as a ``replacecommit`` whose ``partitionToReplaceFileIds`` names
the file groups it replaces. They are listed under the table lock, from the timeline as it
is then, so every file group committed before the overwrite is replaced; the conflict check
counts replaced file groups as touched, on both sides.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from hudisql.errors import CommitConflictError
from hudisql.table.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.filenames import BaseFileName
from hudisql.table.fsview import FileSystemView
from hudisql.table.instant import Action, Instant
from hudisql.table.log_compaction import LOG_COMPACT_OPERATION
from hudisql.table.reconcile import record_committed_log_files
from hudisql.table.spurious_files import remove_spurious_log_files
from hudisql.table.table import HudiTable
from hudisql.table.write_files import MARKER_DIR
from hudisql.table.write_rollback import is_overwrite_write, rollback_instant
from hudisql.write.heartbeat import Heartbeat, heartbeat_settings, is_abandoned
from hudisql.write.lock import LockProvider, lock_provider_for, lock_timeout
from hudisql.write.schema_conflict import TableSchema, resolve_commit_schema

#: ``hoodie.write.concurrency.mode``: ``optimistic_concurrency_control`` checks conflicts.
CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
OPTIMISTIC = "optimistic_concurrency_control"

# Actions whose completed instants wrote data files (conflict candidates).
_WRITE_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT, Action.COMPACTION,
                  Action.LOGCOMPACTION, Action.CLUSTERING)

#: Delete log files of failed or duplicate task attempts after completing (default true).
REMOVE_SPURIOUS_LOG_FILES = "hudisql.write.remove.spurious.log.files"

#: Called with (event, instant) at each protocol step; tests inject failures here.
StepHook = Callable[[str, str], None]

#: What an overwrite replaces: the file groups of the partitions it writes, or of all.
OVERWRITE_PARTITIONS = "partitions"
OVERWRITE_TABLE = "table"


def _no_step(event: str, instant: str) -> None:
    return None


@dataclass
class Transaction:
    """One write's instant from start to completed (or rolled back)."""

    table: HudiTable
    options: Mapping[str, str]
    operation: str
    on_step: StepHook = _no_step
    instant: Instant | None = None
    started_with: frozenset[str] = field(default_factory=frozenset)
    heartbeat: Heartbeat | None = None
    lock: LockProvider | None = None
    #: The table schema when this write started (RFC-82); compared at validation.
    schema_at_start: TableSchema = field(default_factory=TableSchema)
    #: None, :data:`OVERWRITE_PARTITIONS` or :data:`OVERWRITE_TABLE` (a replacecommit).
    overwrite: str | None = None

    @property
    def instant_time(self) -> str:
        """The instant time of this write (after :meth:`start`)."""
        assert self.instant is not None, "Transaction.start() first"
        return self.instant.timestamp

    @property
    def table_key(self) -> str:
        """The lock key of the table: its base path."""
        return self.table.base_path

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        if self.lock is None:
            self.lock = lock_provider_for(self.options)
        return self.lock.lock(self.table_key, lock_timeout(self.options))

    def start(self) -> str:
        """Roll back abandoned instants, then open this write's instant (inflight).

        Returns:
            The instant time.
        """
        interval, misses = heartbeat_settings(self.options)
        # The schema the caller derived its writer schema from: the table as it opened it.
        self.schema_at_start = TableSchema.of(self.table.timeline)
        with self._locked():
            table = self.table.reload()
            for pending in table.timeline.pending(
                    [Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT]):
                if pending.action == Action.REPLACECOMMIT and not is_overwrite_write(
                        table.timeline, pending):
                    continue  # a clustering plan: the table service's, not a failed write
                if is_abandoned(table.storage, pending.timestamp, interval, misses):
                    rollback_instant(table.reload(), pending.timestamp)
            self.table = table.reload()
            timeline = self.table.timeline
            self.started_with = frozenset(i.timestamp for i in timeline.completed())
            action = Action.DELTACOMMIT if self.table.properties.is_mor else Action.COMMIT
            if self.overwrite is not None:
                action = Action.REPLACECOMMIT
            requested = timeline.create_requested(action)
            self.heartbeat = Heartbeat(self.table.storage, requested.timestamp, interval).start()
            planned = CommitMetadata(operation_type=self.operation)
            self.instant = timeline.transition_to_inflight(requested, planned.to_json())
        self.on_step("inflight", self.instant_time)
        return self.instant_time

    def commit(self, stats: Sequence[WriteStat], schema: str) -> Instant:
        """Complete the instant with ``stats`` under the table lock; returns the completed one.

        Raises:
            CommitConflictError: a write completed since this one started touched one of
                its file groups (this instant is rolled back first).
        """
        assert self.instant is not None
        metadata = CommitMetadata(extra_metadata={"schema": schema},
                                  operation_type=self.operation)
        for stat in stats:
            metadata.add_write_stat(stat)
        self.on_step("written", self.instant_time)
        with self._locked():
            table = self.table.reload()
            if self.overwrite is not None:
                metadata.partition_to_replace_file_ids = self._replaced(table, metadata)
            check_write_conflicts(table, self.instant_time, self.started_with, metadata,
                                  self.options)
            resolve_commit_schema(table, metadata, self.instant_time, schema or None,
                                  self.schema_at_start, self.options, self.instant.action)
            self._remove_stray_base_files(table, metadata)
            if table.properties.is_mor:
                record_committed_log_files(metadata)
            self.on_step("completing", self.instant_time)
            done = table.timeline.complete(
                self.instant, metadata.to_json(replace=self.overwrite is not None))
        self._finish()
        # Tidiness only: readers already skip these (the commit names its log files).
        self.on_step("completed", self.instant_time)
        if self.options.get(REMOVE_SPURIOUS_LOG_FILES, "true").strip().lower() != "false":
            remove_spurious_log_files(table.storage, self.instant_time, metadata)
        table.storage.delete_dir(f"{MARKER_DIR}/{self.instant_time}")
        return done

    def _replaced(self, table: HudiTable, metadata: CommitMetadata) -> dict[str, list[str]]:
        """partition -> the committed file groups this overwrite replaces (under the lock)."""
        view = FileSystemView(table.storage, table.properties, table.timeline)
        written = sorted(metadata.partition_to_write_stats)
        partitions = written if self.overwrite == OVERWRITE_PARTITIONS else sorted(
            set(view.partitions()) | set(written))
        ours = metadata.file_ids()
        replaced: dict[str, list[str]] = {}
        for partition in partitions:
            ids = [g.file_id for g in view.file_groups(partition) if g.file_id not in ours]
            if ids or partition in written:
                replaced[partition] = ids
        return replaced

    def _remove_stray_base_files(self, table: HudiTable, metadata: CommitMetadata) -> None:
        """Delete base files of this instant that no write stat names (failed attempts)."""
        kept = {s.path for s in metadata.write_stats() if s.path}
        marker_root = f"{MARKER_DIR}/{self.instant_time}/"
        for status in table.storage.list_recursive(marker_root.rstrip("/")):
            if status.is_dir or ".marker." not in status.name:
                continue
            rel = status.path[len(marker_root):] if status.path.startswith(marker_root) else ""
            data_file = rel.rsplit(".marker.", 1)[0]
            parsed = BaseFileName.parse(data_file.rsplit("/", 1)[-1])
            # Only base files carry this instant in their name: they are ours for sure.
            if parsed is not None and parsed.instant == self.instant_time and data_file not in kept:
                table.storage.delete(data_file)

    def abort(self) -> str | None:
        """Roll the instant back (its files removed, a rollback instant written).

        Returns:
            The rollback's instant time, or None when nothing was started.
        """
        if self.instant is None:
            return None
        try:
            with self._locked():
                return rollback_instant(self.table.reload(), self.instant_time)
        finally:
            self._finish()

    def _finish(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
            self.heartbeat = None


def _touched(metadata: CommitMetadata) -> set[tuple[str, str]]:
    """(partition, file id) of every file group a commit wrote or replaced."""
    touched = {(s.partition_path or "", s.file_id) for s in metadata.write_stats()}
    for partition, file_ids in metadata.partition_to_replace_file_ids.items():
        touched.update((partition, file_id) for file_id in file_ids)
    return touched


def check_write_conflicts(
    table: HudiTable, instant_time: str, started_with: frozenset[str],
    metadata: CommitMetadata, options: Mapping[str, str],
) -> None:
    """Refuse to complete ``instant_time`` when completing it would clobber or lose data.

    Called under the table lock with ``table`` freshly loaded, by every commit path (the
    Spark pipeline's :class:`Transaction` and the pure-Python ``WriteClient``). Two checks:
    the instant must still be inflight (another writer may have rolled it back as abandoned,
    e.g. after its heartbeat stalled: completing it then would publish a commit that a
    rollback already voided); and, under optimistic concurrency, no write completed since
    it started (not in ``started_with``) may have touched one of its file groups.

    Raises:
        CommitConflictError: naming both instants and the file groups, or the rollback.
    """
    current = table.timeline.get(instant_time)
    if current is None or not current.is_inflight:
        state = "gone from the timeline" if current is None else f"{current.state}"
        raise CommitConflictError(
            f"table {table.name}: write {instant_time} is {state}: another writer rolled it "
            "back (its heartbeat had expired); nothing of it is visible: retry the write"
        )
    if options.get(CONCURRENCY_MODE, OPTIMISTIC).lower() != OPTIMISTIC:
        return
    ours = _touched(metadata)
    for other in table.timeline.completed(_WRITE_ACTIONS):
        if other.timestamp in started_with or other.timestamp == instant_time:
            continue
        theirs = table.timeline.commit_metadata(other)
        if theirs.operation_type == LOG_COMPACT_OPERATION:
            # A log compaction only replaces blocks that readers merge in their place
            # (RFC-48): it never conflicts with a write, whatever the file groups.
            continue
        clash = sorted(ours & _touched(theirs))
        if clash:
            groups = ", ".join(f"{p or '<root>'}/{f}" for p, f in clash[:10])
            raise CommitConflictError(
                f"table {table.name}: write {instant_time} conflicts with "
                f"{other.action} {other.timestamp}, completed meanwhile, on file groups "
                f"{groups}; {instant_time} is rolled back: retry the write"
            )
