"""The asynchronous metadata indexer of RFC-45: schedule, build, catch up, commit, or abort.

An indexing instant goes ``<ts>.indexing.requested`` (the :class:`IndexPlan`) ->
``.inflight`` -> ``<ts>.indexing`` (:class:`IndexCommitMetadata`), as the seed's low-level
design says:

* **schedule** (:meth:`Indexer.schedule`), under the table lock: the base instant is the
  latest completed write with no pending write before it (case 5); the partitions' file
  groups are initialized inside the lock (race 3c), the partitions join
  ``hoodie.table.metadata.partitions.inflight`` (so every writer that commits from now on
  logs its updates to them: race 3a) and the plan is saved.
* **execute** (:meth:`Indexer.execute`): requested -> inflight; the partitions are built as
  Spark jobs from the table's committed file slices; then the *catch-up*: every instant
  that was pending when the plan was made (and every later one that completed) must be
  in the metadata table before the index completes. A pending instant is waited for up to
  ``hoodie.metadata.index.check.timeout.seconds``; a write whose heartbeat expired is
  treated as failed (its writer died; the next writer rolls it back, and that rollback
  undoes its metadata updates) instead of being waited for. Then, under the lock, the
  partitions move from inflight to completed in hoodie.properties and the instant
  completes.
* **abort** (:meth:`Indexer.abort`): on failure or timeout, the partitions' files and the
  table config are reverted and the plan removed; re-running builds them again. A run that
  died (SIGKILL) leaves its plan: re-running resumes it, skipping completed partitions and
  rebuilding a half-built one.

Several index types go in one plan and one run. The indexer refuses to run without a lock
provider configured (``hoodie.write.lock.provider``): hudisql sessions set one by default.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hudisql.errors import IndexingError, IndexingTimeoutError, LockError
from hudisql.metadata.builders import partition_stats_follow
from hudisql.metadata.partitions import MetadataPartitionType
from hudisql.services.index_build import IndexBackend, PartitionRequest
from hudisql.table.format.index_plan import (
    IndexCommitMetadata,
    IndexPartitionInfo,
    IndexPlan,
    index_plan,
    pending_indexing,
)
from hudisql.table.format.instant import WRITE_ACTIONS, Action, Instant, new_instant_time
from hudisql.table.format.properties import METADATA_PARTITIONS, METADATA_PARTITIONS_INFLIGHT
from hudisql.table.table import HudiTable
from hudisql.txn.heartbeat import heartbeat_settings, is_abandoned
from hudisql.txn.lock import LOCK_PROVIDER, lock_provider_for, lock_timeout

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_LOG = logging.getLogger(__name__)

#: The partition stats partition (on versions 8/9 it follows the column stats' columns).
PARTITION_STATS = MetadataPartitionType.PARTITION_STATS.partition_path

#: How long the catch-up waits for pending instants (Hudi's key; its default is 900 s).
INDEX_CHECK_TIMEOUT = "hoodie.metadata.index.check.timeout.seconds"
DEFAULT_INDEX_CHECK_TIMEOUT = 900.0
#: How often the catch-up reloads the timeline while it waits (hudisql's key, milliseconds).
INDEX_CHECK_INTERVAL = "hudisql.metadata.index.check.interval.ms"
DEFAULT_INDEX_CHECK_INTERVAL_MS = 200

#: The plan's extra metadata key naming the metadata instant its partitions are built at.
INIT_INSTANT = "hudisql.metadata.init.instant"

#: The base instant of a table with no completed write (Hudi's "solo commit" time).
NO_BASE_INSTANT = "00000000000000000"

#: Writes whose pending instants carry a writer's heartbeat (the others are plans).
_HEARTBEAT_ACTIONS = frozenset({Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT})

#: Called with (event, instant time) at each step; tests inject failures and barriers here.
StepHook = Callable[[str, str], None]
#: Called with (file slices done, file slices in all) while partitions build.
ProgressCallback = Callable[[int, int], None]


def _no_step(event: str, instant: str) -> None:
    return None


def require_lock(options: Mapping[str, str], table: str) -> None:
    """Refuse to index without a configured lock provider that excludes the table's writers.

    Raises:
        LockError: ``hoodie.write.lock.provider`` is not set, or names no provider.
    """
    if not (options.get(LOCK_PROVIDER) or "").strip():
        raise LockError(
            f"indexing table {table} needs a lock that excludes its other writers, and none "
            f"is configured: set {LOCK_PROVIDER}=file (processes on this machine), "
            "=catalog (many machines) or =in-process (this process only), for the indexer "
            "and every writer (hudisql.connect() sets 'file' by default)"
        )
    lock_provider_for(options)


def base_instant(table: HudiTable) -> str:
    """The instant a new index is built up to: the latest completed write with no pending
    write before it (RFC-45 case 5), or :data:`NO_BASE_INSTANT` on an empty timeline."""
    found = table.timeline.last_completed_without_holes(WRITE_ACTIONS)
    return found.timestamp if found is not None else NO_BASE_INSTANT


def catch_up_times(table: HudiTable, base: str, indexing: str) -> list[str]:
    """The instants the catch-up must see in the metadata table before ``indexing`` completes.

    Every instant after ``base`` that was on the timeline when the plan was made (earlier
    than ``indexing``), and every pending non-write instant before ``base`` (case 5: the
    CLEAN4 of ``DC1..DC3 CLEAN4(I) DC5 DC6``), oldest first; indexing instants excluded.
    """
    times = []
    for instant in table.timeline.instants:
        if instant.action == Action.INDEXING or instant.timestamp >= indexing:
            continue
        if instant.timestamp > base or not instant.is_completed:
            times.append(instant.timestamp)
    return times


@dataclass
class Indexer:
    """Builds metadata-table partitions of one table asynchronously (RFC-45).

    ``spark`` runs the builds (one task per file slice); ``on_progress(done, total)``
    reports units built (file slices, or data partitions for file-based indexes);
    ``on_step(event, instant)`` is called at each step (``initializing`` under the lock,
    ``scheduled``, ``inflight``, ``built``, ``waiting`` (with the instant waited for),
    ``caught_up``, ``completing`` (under the lock), ``completed``, ``aborted``): raising
    there simulates a failure at that point.
    """

    path: str
    options: Mapping[str, str]
    spark: SparkSession | None = None
    on_progress: ProgressCallback | None = None
    on_step: StepHook = _no_step
    backend: IndexBackend = field(default_factory=IndexBackend)

    # ------------------------------------------------------------------ helpers

    def table(self) -> HudiTable:
        """The data table, freshly loaded."""
        return HudiTable.open(self.path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[HudiTable]:
        provider = lock_provider_for(self.options)
        with provider.lock(self.table().base_path, lock_timeout(self.options)):
            yield self.table()

    def _check_timeout(self) -> tuple[float, float]:
        raw = self.options.get(INDEX_CHECK_TIMEOUT, str(DEFAULT_INDEX_CHECK_TIMEOUT))
        raw_interval = self.options.get(INDEX_CHECK_INTERVAL, str(DEFAULT_INDEX_CHECK_INTERVAL_MS))
        try:
            timeout, interval = float(raw), float(raw_interval) / 1000.0
        except ValueError:
            timeout = interval = -1.0
        if timeout < 0 or interval < 0:
            raise IndexingError(
                f"{INDEX_CHECK_TIMEOUT}={raw!r} / {INDEX_CHECK_INTERVAL}={raw_interval!r} must "
                "be non-negative numbers (seconds / milliseconds)")
        return timeout, interval

    # ------------------------------------------------------------------ schedule

    def schedule(self, requests: Sequence[PartitionRequest]) -> Instant | None:
        """Plan the build of ``requests``' partitions; returns the requested instant.

        Partitions already built are left out (None when nothing is left); when a pending
        plan (of a run that stopped) holds all the others, that instant is returned: running
        it again resumes it. The ``files``
        partition goes first when the metadata table does not have it yet: every other
        index needs it.

        Raises:
            LockError: no lock provider is configured, or the lock was not granted.
            IndexingError: a partition is being built by another pending indexing instant.
        """
        table = self.table()
        require_lock(self.options, table.name)
        with self._locked() as table:
            resumed = self._pending_plan_of(table, requests)
            if resumed is not None:
                return resumed
            wanted = self._wanted(table, requests)
            if not wanted:
                return None
            base = base_instant(table)
            times = {i.timestamp for i in table.timeline.instants}
            ts = new_instant_time(after=max(times | {base}))
            init = self.backend.init_instant(table, base)
            plan = IndexPlan(tuple(
                IndexPartitionInfo(r.partition, base, {INIT_INSTANT: init}) for r in wanted))
            try:
                self.on_step("initializing", ts)
                self.backend.initialize(table, wanted, init)
                props = self.table().properties
                inflight = _merged(props.metadata_partitions_inflight,
                                   [r.partition for r in wanted])
                props.updated(**{METADATA_PARTITIONS_INFLIGHT: inflight}).save(table.storage)
                instant = table.timeline.create_requested(Action.INDEXING, ts, plan.to_avro())
            except BaseException:
                self._revert(self.table(), init, [r.partition for r in wanted])
                raise
        try:
            self.on_step("scheduled", ts)
        except BaseException:
            with contextlib.suppress(Exception):
                self.abort(ts)
            raise
        return instant

    @staticmethod
    def _pending_plan_of(table: HudiTable, requests: Sequence[PartitionRequest]
                         ) -> Instant | None:
        """The pending indexing instant whose plan holds every requested partition not yet
        built (a run that stopped: scheduling again resumes it), or None."""
        completed = set(table.properties.metadata_partitions)
        wanted = {r.partition for r in requests} - completed
        for pending in pending_indexing(table.timeline):
            if wanted and wanted <= set(pending.plan.partitions):
                return pending.instant
        return None

    def _wanted(self, table: HudiTable, requests: Sequence[PartitionRequest]
                ) -> list[PartitionRequest]:
        """The requests still to build, ``files`` first; stale inflight leftovers cleared."""
        props = table.properties
        completed = set(props.metadata_partitions)
        busy = {p: pending.instant.timestamp for pending in pending_indexing(table.timeline)
                for p in pending.plan.partitions}
        wanted = [r for r in requests if r.partition not in completed]
        if wanted and "files" not in completed and all(r.partition != "files" for r in wanted):
            wanted.insert(0, PartitionRequest("files"))
        for request in wanted:
            if request.partition in busy:
                raise IndexingError(
                    f"table {table.name}: metadata partition {request.partition} is being "
                    f"built by indexing instant {busy[request.partition]}; finish it with "
                    "CALL run_indexer(table => ..., mode => 'execute') or drop it with "
                    "mode => 'dropindex'")
        self._check_partition_stats(table, wanted)
        present = set(self.backend.partitions(table))
        stale = [r.partition for r in wanted
                 if r.partition in props.metadata_partitions_inflight or r.partition in present]
        if stale:  # a schedule that died left them: nothing logs to them without a plan
            self._revert(table, None, stale)
        return wanted

    def _check_partition_stats(self, table: HudiTable,
                               wanted: Sequence[PartitionRequest]) -> None:
        """Refuse a build that changes the columns of built partition stats (versions 8/9
        keep partition stats of the column stats' columns), before anything is written.

        Raises:
            IndexingError: the partition stats would need rebuilding.
        """
        props = table.properties
        known = set(props.metadata_partitions) | set(props.metadata_partitions_inflight)
        if PARTITION_STATS not in known or any(r.partition == PARTITION_STATS for r in wanted):
            return
        named = {r.partition: r.definition for r in wanted if r.definition is not None}
        if partition_stats_follow(table, {**self.backend.definitions(table), **named}):
            raise IndexingError(
                f"table {table.name} (version {props.version}) has partition stats of "
                "other columns than these column stats would index, and Hudi 1.x keeps "
                "partition stats of the column stats' columns: DROP INDEX partition_stats "
                f"ON {table.name} first, then build them again after the column stats "
                f"(CALL run_indexer(table => '{table.name}', mode => 'scheduleAndExecute', "
                "index_types => 'PARTITION_STATS'))")

    # ------------------------------------------------------------------ execute

    def execute(self, instant_time: str | None = None) -> IndexCommitMetadata | None:
        """Build, catch up and complete a pending indexing instant (default: the earliest).

        Returns:
            The completed instant's metadata, or None when no indexing is pending.

        Raises:
            LockError: no lock provider is configured.
            IndexingTimeoutError: a pending instant did not finish in time (aborted).
            IndexingError: the build or catch-up failed (aborted).
        """
        table = self.table()
        require_lock(self.options, table.name)
        pending = pending_indexing(table.timeline)
        if instant_time is not None:
            pending = [p for p in pending if p.instant.timestamp == instant_time]
            if not pending:
                raise IndexingError(
                    f"table {table.name} has no pending indexing instant {instant_time}; list "
                    "them with SHOW TIMELINE and give one whose action is indexing")
        if not pending:
            return None
        instant, plan = pending[0].instant, pending[0].plan
        ts = instant.timestamp
        try:
            return self._run(table, instant, plan)
        except BaseException:
            with contextlib.suppress(Exception):
                self.abort(ts)
            raise

    def _run(self, table: HudiTable, instant: Instant, plan: IndexPlan) -> IndexCommitMetadata:
        ts = instant.timestamp
        completed = set(table.properties.metadata_partitions)
        todo = [p for p in plan.partitions if p not in completed]
        if instant.is_requested:
            instant = table.timeline.transition_to_inflight(instant, plan.to_avro())
        self.on_step("inflight", ts)
        if todo:
            init = _init_of(plan)
            # A run that died may have left part of a build: it is rebuilt from scratch.
            self.backend.reset_build(table, todo, init)
            snapshot = frozenset(i.timestamp for i in table.timeline.completed())
            self.backend.build(self.spark, table, todo, init, self.on_progress)
            self.on_step("built", ts)
            self._catch_up(plan, todo, ts, snapshot)
            self.on_step("caught_up", ts)
        else:
            snapshot = frozenset()
        with self._locked() as table:
            self._check_covered(table, plan, todo, ts, snapshot, wait=False)
            self.on_step("completing", ts)
            props = table.properties
            done = _merged(props.metadata_partitions, todo)
            left = [p for p in props.metadata_partitions_inflight if p not in todo]
            props.updated(**{METADATA_PARTITIONS: done,
                             METADATA_PARTITIONS_INFLIGHT: ",".join(left) or None}
                          ).save(table.storage)
            infos = tuple(IndexPartitionInfo(p, self._caught_up_to(table, ts)) for p in
                          plan.partitions)
            metadata = IndexCommitMetadata(infos)
            inflight = table.timeline.get(ts)
            assert inflight is not None
            table.timeline.complete(inflight, metadata.to_avro())
        self.on_step("completed", ts)
        return metadata

    @staticmethod
    def _caught_up_to(table: HudiTable, ts: str) -> str:
        before = [i.timestamp for i in table.timeline.completed() if i.timestamp < ts
                  and i.action != Action.INDEXING]
        return before[-1] if before else NO_BASE_INSTANT

    def _catch_up(self, plan: IndexPlan, todo: list[str], ts: str,
                  snapshot: frozenset[str]) -> None:
        """Wait until every instant the plan must see is in the metadata table (or failed)."""
        timeout, interval = self._check_timeout()
        deadline = time.monotonic() + timeout
        while True:
            waiting = self._check_covered(self.table(), plan, todo, ts, snapshot, wait=True)
            if not waiting:
                return
            if time.monotonic() >= deadline:
                raise IndexingTimeoutError(
                    f"indexing {ts} of table {self.table().name} gave up: instant(s) "
                    f"{', '.join(waiting)} stayed pending for more than {timeout:g}s "
                    f"({INDEX_CHECK_TIMEOUT}); the index is rolled back: finish or roll back "
                    "those writes, or raise the timeout, then create the index again")
            self.on_step("waiting", waiting[0])
            time.sleep(interval)

    def _check_covered(self, table: HudiTable, plan: IndexPlan, todo: list[str], ts: str,
                       snapshot: frozenset[str], wait: bool) -> list[str]:
        """The instants still pending that the index must wait for; catches up the others.

        Raises:
            IndexingError: a completed write after the build is missing from the metadata
                table and cannot be added (``wait=False``: also any instant still pending).
        """
        timeline = table.timeline
        interval, misses = heartbeat_settings(self.options)
        rolled_back = timeline.rolled_back_instants()
        base = plan.base_instant or NO_BASE_INSTANT
        must_see = set(catch_up_times(table, base, ts))
        must_see |= {i.timestamp for i in timeline.completed() if i.timestamp > ts
                     and i.action != Action.INDEXING}
        waiting = []
        for when in sorted(must_see):
            instant = timeline.get(when)
            if instant is None or when in rolled_back or instant.action == Action.ROLLBACK:
                continue  # rolled back: its metadata updates were undone with it
            if not instant.is_completed:
                abandoned = instant.action in _HEARTBEAT_ACTIONS and is_abandoned(
                    table.storage, when, interval, misses)
                if when > ts or abandoned:
                    continue  # later writers log to the partitions; dead ones are failed
                waiting.append(when)
                continue
            if (when in snapshot or instant.action not in WRITE_ACTIONS
                    or self.backend.covered(table, instant, todo)):
                continue  # built from it, or not a write (cleans keep their own records)
            if wait:
                with self._locked() as locked:
                    self.backend.catch_up(locked, instant, todo)
            else:
                self.backend.catch_up(table, instant, todo)
        if waiting and not wait:
            raise IndexingError(
                f"indexing {ts} of table {table.name}: instant(s) {', '.join(waiting)} are "
                "pending again at commit; create the index again")
        return waiting

    # ------------------------------------------------------------------ abort / drop

    def abort(self, instant_time: str) -> None:
        """Roll back a pending indexing instant: its partitions' files, the table config
        (the partitions leave the inflight list) and its plan are removed. Idempotent."""
        with self._locked() as table:
            instant = table.timeline.get(instant_time)
            if instant is None or instant.is_completed:
                return
            plan = index_plan(table.timeline, instant_time)
            completed = set(table.properties.metadata_partitions)
            self._revert(table, _init_of(plan),
                         [p for p in plan.partitions if p not in completed])
            table.timeline.delete_pending(instant)
        self.on_step("aborted", instant_time)

    def _revert(self, table: HudiTable, init: str | None, partitions: list[str]) -> None:
        """Drop ``partitions`` (config, definitions, files) and the initialization ``init``."""
        self.backend.drop(table, partitions, init)
        self.backend.remove_if_unused(table)

    def drop(self, partitions: Sequence[str], *, rebuilding: bool = False) -> list[str]:
        """Drop built or pending metadata partitions (``dropindex``); returns those dropped.

        A pending indexing instant that builds only dropped partitions is rolled back. On
        versions 8/9, partition stats that follow the dropped column stats' columns go
        too (a warning says so unless ``rebuilding``: the caller builds them again).

        Raises:
            LockError: no lock provider is configured.
        """
        table = self.table()
        require_lock(self.options, table.name)
        partitions = [*partitions, *self._following(table, partitions, warn=not rebuilding)]
        for pending in pending_indexing(table.timeline):
            if set(pending.plan.partitions) & set(partitions):
                self.abort(pending.instant.timestamp)
        with self._locked() as table:
            props = table.properties
            known = set(props.metadata_partitions) | set(props.metadata_partitions_inflight)
            dropped = [p for p in partitions if p in known]
            self.backend.drop(table, dropped, None)
            self.backend.remove_if_unused(table)
        return dropped

    def _following(self, table: HudiTable, dropped: Sequence[str], warn: bool) -> list[str]:
        """``partition_stats`` when dropping ``dropped`` changes its columns (versions 8/9:
        Hudi 1.x keeps partition stats of the column stats' columns, and drops them with
        the column stats); else nothing. Said in a warning: the user named another index."""
        props = table.properties
        known = set(props.metadata_partitions) | set(props.metadata_partitions_inflight)
        if PARTITION_STATS not in known or PARTITION_STATS in dropped:
            return []
        definitions = self.backend.definitions(table)
        left = {p: d for p, d in definitions.items() if p not in dropped}
        if not partition_stats_follow(table, left):
            return []
        if warn:
            _LOG.warning("table %s (version %s): dropping %s drops %s too: Hudi 1.x keeps "
                         "partition stats of the column stats' columns, and only beside them; "
                         "build them again with CALL run_indexer(table => '%s', mode => "
                         "'scheduleAndExecute', index_types => 'PARTITION_STATS')",
                         table.name, props.version, ", ".join(dropped), PARTITION_STATS,
                         table.name)
        return [PARTITION_STATS]


def _init_of(plan: IndexPlan) -> str:
    """The metadata instant a plan's partitions are initialized and built at."""
    for info in plan.partition_infos:
        if info.extra_metadata and info.extra_metadata.get(INIT_INSTANT):
            return info.extra_metadata[INIT_INSTANT]
    raise IndexingError(
        "the indexing plan names no metadata initialization instant "
        f"({INIT_INSTANT}): it was not written by hudisql; drop it with mode => 'dropindex'")


def _merged(current: list[str], added: Sequence[str]) -> str:
    """A comma list of ``current`` with ``added`` appended (each once, order kept)."""
    return ",".join(dict.fromkeys([*current, *added]))
