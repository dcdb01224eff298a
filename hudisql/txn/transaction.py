"""The commit protocol: requested -> inflight -> write -> under the lock: check -> completed.

A :class:`Transaction` opens an instant (under the table lock, after rolling back abandoned
instants), keeps its heartbeat alive while the data files are written, and finishes it under
the table lock: the check that every writer of the table takes the same lock
(:mod:`hudisql.txn.shared_lock`), conflict resolution (:mod:`hudisql.txn.conflict`: a
write completed since this one started touched one of its file groups), the RFC-82 check
of schemas (:mod:`hudisql.txn.schema_conflict`), removal of base files of failed or duplicate task
attempts, the commit participants (the metadata table), and then the completed instant.
Anything failing under the lock rolls the instant back there (its files removed, a rollback
instant written, the participants told) before the error propagates. After completing, it
deletes log files of failed or duplicate attempts (tidiness: reads are exact without it).

Every writer commits through it: the pure-Python :class:`~hudisql.txn.writer.WriteClient`,
the Spark pipeline, DML, ``df.write`` and schema changes.

An overwrite (``insert_overwrite``: the partitions it writes; ``insert_overwrite_table``:
every partition) completes as a ``replacecommit`` whose ``partitionToReplaceFileIds`` names
the file groups it replaces. They are listed under the table lock, from the timeline as it
is then, so every file group committed before the overwrite is replaced; the conflict check
counts replaced file groups as touched, on both sides.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.filenames import BaseFileName
from hudisql.table.format.fsview import FileSystemView
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.table_versions import check_write_table_version
from hudisql.table.read.reconcile import record_committed_log_files
from hudisql.table.table import HudiTable
from hudisql.table.write.files import MARKER_DIR
from hudisql.table.write.rollback import StepHook
from hudisql.table.write.spurious_files import remove_spurious_log_files
from hudisql.txn.conflict import check_write_conflicts
from hudisql.txn.heartbeat import Heartbeat, heartbeat_settings
from hudisql.txn.lock import LockProvider, lock_provider_for, lock_timeout
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.rollback import rollback_abandoned, rollback_locked
from hudisql.txn.schema_conflict import TableSchema, resolve_commit_schema
from hudisql.txn.shared_lock import check_shared_lock
from hudisql.txn.stream_checkpoint import record_batch

__all__ = [
    "OVERWRITE_PARTITIONS",
    "OVERWRITE_TABLE",
    "REMOVE_SPURIOUS_LOG_FILES",
    "StepHook",
    "Transaction",
]

#: Delete log files of failed or duplicate task attempts after completing (default true).
REMOVE_SPURIOUS_LOG_FILES = "hudisql.write.remove.spurious.log.files"

#: What an overwrite replaces: the file groups of the partitions it writes, or of all.
OVERWRITE_PARTITIONS = "partitions"
OVERWRITE_TABLE = "table"


def _no_step(event: str, instant: str) -> None:
    return None


@dataclass
class Transaction:
    """One write's instant from start to completed (or rolled back).

    ``on_step(event, instant)`` is called at each step (``requested``, ``inflight``,
    ``written``, ``completing``, ``completed``, and the rollback's); raising there simulates
    a failure at that point. ``participants`` are called in order under the lock before the
    instant completes, and told of every rollback this transaction makes.
    """

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
    #: Called under the lock before the instant completes (the metadata table).
    participants: Sequence[CommitParticipant] = ()
    #: Roll back pending writes whose heartbeat expired before opening this instant.
    roll_back_abandoned: bool = True
    #: The commit metadata of the completed instant (after :meth:`commit`).
    metadata: CommitMetadata | None = None

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

    def start(self, planned: CommitMetadata | None = None) -> str:
        """Roll back abandoned instants, then open this write's instant (inflight).

        Args:
            planned: what the inflight instant records (the planned write stats, which a
                rollback uses to find the files); default an empty commit metadata.

        Returns:
            The instant time.
        """
        check_write_table_version(self.table.properties, self.options,
                                  f"table {self.table.name} at {self.table.base_path}")
        interval, _ = heartbeat_settings(self.options)
        # The schema the caller derived its writer schema from: the table as it opened it.
        self.schema_at_start = TableSchema.of(self.table.timeline)
        with self._locked():
            assert self.lock is not None
            check_shared_lock(self.table.reload(), self.lock, self.options)
            if self.roll_back_abandoned:
                rollback_abandoned(self.table, self.options, self.participants)
            self.table = self.table.reload()
            timeline = self.table.timeline
            self.started_with = frozenset(i.timestamp for i in timeline.completed())
            action = Action.DELTACOMMIT if self.table.properties.is_mor else Action.COMMIT
            if self.overwrite is not None:
                action = Action.REPLACECOMMIT
            try:
                # The heartbeat beats before the requested file exists: another writer that
                # sees the instant (even one whose lock does not exclude us) sees it live.
                self.instant = timeline.create_requested(
                    action, reserve=lambda ts: self._beat_for(ts, interval))
                self.on_step("requested", self.instant_time)  # visible to other writers now
                content = planned or CommitMetadata(operation_type=self.operation)
                self.instant = timeline.transition_to_inflight(self.instant, content.to_json())
            except BaseException:
                if self.instant is None and self.heartbeat is not None:
                    # No time was ours: the last heartbeat file tried is another writer's.
                    self.heartbeat.stop(delete=False)
                    self.heartbeat = None
                self.release()
                raise
        self.on_step("inflight", self.instant_time)
        return self.instant_time

    def _beat_for(self, instant_time: str, interval: float) -> None:
        """Start the heartbeat of ``instant_time`` (the time about to be taken)."""
        if self.heartbeat is not None:
            # That time was taken by another writer: its heartbeat file is its own now.
            self.heartbeat.stop(delete=False)
        self.heartbeat = Heartbeat(self.table.storage, instant_time, interval).start()

    def commit(self, stats: Sequence[WriteStat], schema: str,
               partitions: Iterable[str] = ()) -> Instant:
        """Complete the instant with ``stats`` under the table lock; returns the completed one.

        Args:
            stats: the write stats of every file written.
            schema: the writer schema (Avro JSON text; empty for none).
            partitions: partitions the commit names even without a write stat.

        Raises:
            CommitConflictError: a write completed since this one started touched one of
                its file groups, or the schema changed incompatibly (RFC-82); this instant
                is rolled back first, as it is when a participant raises.
        """
        assert self.instant is not None
        metadata = CommitMetadata(extra_metadata={"schema": schema},
                                  operation_type=self.operation)
        for partition in partitions:
            metadata.partition_to_write_stats.setdefault(partition, [])
        for stat in stats:
            metadata.add_write_stat(stat)
        self.on_step("written", self.instant_time)
        try:
            with self._locked():
                table = self.table.reload()
                try:
                    done = self._complete(table, metadata, schema)
                    self.metadata = metadata
                except Exception as exc:
                    self._roll_back_locked(table, exc)
                    raise
        finally:
            self.release()
        # Tidiness only: readers already skip these (the commit names its log files).
        self.on_step("completed", self.instant_time)
        if self.options.get(REMOVE_SPURIOUS_LOG_FILES, "true").strip().lower() != "false":
            remove_spurious_log_files(table.storage, self.instant_time, metadata)
        table.storage.delete_dir(f"{MARKER_DIR}/{self.instant_time}")
        return done

    def _complete(self, table: HudiTable, metadata: CommitMetadata, schema: str) -> Instant:
        """Under the lock: conflict and schema checks, participants, then the completed file."""
        assert self.instant is not None and self.lock is not None
        check_shared_lock(table, self.lock, self.options, self.instant_time)
        if self.overwrite is not None:
            metadata.partition_to_replace_file_ids = self._replaced(table, metadata)
        check_write_conflicts(table, self.instant_time, self.started_with, metadata,
                              self.options)
        resolve_commit_schema(table, metadata, self.instant_time, schema or None,
                              self.schema_at_start, self.options, self.instant.action)
        # A streaming micro-batch: committed at most once (checked against the timeline now).
        record_batch(table, metadata, self.options)
        self._remove_stray_base_files(table, metadata)
        if table.properties.is_mor:
            record_committed_log_files(metadata)
        for participant in self.participants:
            participant.on_commit(table, self.instant, metadata)
        self.on_step("completing", self.instant_time)
        return table.timeline.complete(
            self.instant, metadata.to_json(replace=self.overwrite is not None))

    def _roll_back_locked(self, table: HudiTable, error: BaseException) -> None:
        """Roll this instant back while the lock is held (the commit failed under it)."""
        try:
            rollback_locked(table, self.instant_time, self.participants, self.on_step)
        except Exception as exc:
            error.add_note(
                f"rolling back {self.instant_time} of table {table.name} failed too ({exc}); "
                f"the next writer rolls it back once its heartbeat expires, or CALL "
                f"rollback_to_instant(table => '{table.name}', instant_time => "
                f"'{self.instant_time}')"
            )

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
                return rollback_locked(self.table, self.instant_time, self.participants)
        finally:
            self.release()

    def release(self) -> None:
        """Stop the heartbeat (the instant completed, was rolled back, or is left to others)."""
        if self.heartbeat is not None:
            self.heartbeat.stop()
            self.heartbeat = None
