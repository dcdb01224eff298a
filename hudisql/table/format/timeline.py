"""The active timeline: every instant of a table, its state, and the metadata it carries.

Loads and writes timeline layout 1 (``.hoodie``, table version 6) and layout 2
(``.hoodie/timeline``, versions 8 and 9). Each state change is a new file created with
create-if-absent, so two writers can never both create one instant or one state of it.
Layout 2 names a completed instant ``<requested>_<completion>.<action>``: the completion
time is taken when the instant completes, which writers do under the table lock, later than
every time on the timeline (so completion times strictly increase, as Hudi 1.x requires);
since the name differs per completion time, create-if-absent alone cannot stop a second
completion, so :meth:`Timeline.complete` looks for a completed file first. Commit metadata
handed in as v6 JSON is written as the Avro container layout 2 keeps (see
:mod:`hudisql.table.format.commit_metadata_avro`), and a clustering plan is requested as
the ``clustering`` action there (``replacecommit`` in layout 1).
Archived instants (``.hoodie/archived``; ``hudisql.table.services.archive.ArchivedTimeline`` loads
them on demand) are not loaded here: an instant older than the first active write instant
counts as completed unless a rollback names it.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime

from hudisql.errors import (
    CorruptTableError,
    InstantExistsError,
    InvalidInstantTransitionError,
    UnsupportedTableVersionError,
    WriteError,
)
from hudisql.table.format.commit_metadata import (
    AVRO_MAGIC,
    CommitMetadata,
    RollbackMetadata,
    RollbackPlan,
    read_avro_container,
)
from hudisql.table.format.commit_metadata_avro import encode_commit_metadata
from hudisql.table.format.instant import (
    COMPLETED_AS,
    WRITE_ACTIONS,
    Action,
    Instant,
    State,
    instant_file_name,
    is_instant_time,
    new_instant_time,
    parse_instant_file_name,
)
from hudisql.table.format.properties import WRITABLE_VERSIONS, TableProperties
from hudisql.table.io.storage import Storage

#: Completed actions whose metadata records the table schema (compaction completes as commit).
COMMIT_ACTIONS: frozenset[str] = frozenset(
    {Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT}
)

#: Where a data table keeps its metadata table (relative to the table).
METADATA_TABLE_DIR = ".hoodie/metadata"

# An instant time picked by create_requested can collide with another process's; retry.
_MAX_TIME_ATTEMPTS = 5


#: (file name, layout, modification time) -> the instant it records, for every load of the
#: process: a statement loads its table's timeline about ten times, and an Instant is
#: immutable. Cleared when full.
_PARSED: dict[tuple[str, int, datetime | None], Instant | None] = {}
_KEPT_INSTANTS = 100_000


def _parsed_instant(name: str, layout: int, mtime: datetime | None) -> Instant | None:
    key = (name, layout, mtime)
    try:
        return _PARSED[key]
    except KeyError:
        pass
    instant = parse_instant_file_name(name, layout, mtime)
    if len(_PARSED) >= _KEPT_INSTANTS:
        _PARSED.clear()
    _PARSED[key] = instant
    return instant


def list_instant_files(storage: Storage, props: TableProperties) -> list[Instant]:
    """Every instant file of the table's active timeline, from one listing of its folder,
    in the order instants sort (parses kept as :meth:`Timeline.load` keeps them)."""
    layout = props.timeline_layout
    found = [_parsed_instant(info.name, layout, info.mtime)
             for info in storage.list_dir(props.timeline_dir) if not info.is_dir]
    return sorted((i for i in found if i is not None), key=Instant._key)


def _action_set(actions: Iterable[str] | None) -> frozenset[str] | None:
    if actions is None:
        return None
    if isinstance(actions, str):
        return frozenset({actions})
    return frozenset(actions)


class Timeline:
    """A table's active timeline as loaded at one moment (``reload()`` for a fresh one).

    ``instants`` holds one instant per instant time in its latest state; ``instant_files``
    every state file of one instant time, with modification times. Writes through this
    object (``create_requested``, ``transition_to_inflight``, ``complete``,
    ``delete_pending``) are reflected in it; other writers' only after ``reload()``.
    """

    def __init__(self, storage: Storage, props: TableProperties, files: Iterable[Instant]) -> None:
        self.storage = storage
        self.props = props
        self.layout = props.timeline_layout
        self.timeline_dir = props.timeline_dir
        self._lock = threading.RLock()
        self._files: dict[str, dict[str, Instant]] = {}
        for f in files:
            self._files.setdefault(f.timestamp, {})[f.file_name] = f
        self._instants: list[Instant] | None = None
        self._by_time: dict[str, Instant] = {}
        self._boundary: str | None = None
        self._state: frozenset[str] | None = None
        self._rolled_back: set[str] | None = None

    @classmethod
    def load(cls, storage: Storage, props: TableProperties) -> Timeline:
        """The timeline of the table at ``storage`` (reads the folder listing only)."""
        layout = props.timeline_layout
        files = []
        for info in storage.list_dir(props.timeline_dir):
            if info.is_dir:
                continue
            instant = _parsed_instant(info.name, layout, info.mtime)
            if instant is not None:
                files.append(instant)
        return cls(storage, props, files)

    def reload(self) -> Timeline:
        """A freshly loaded timeline of the same table."""
        return Timeline.load(self.storage, self.props)

    def __repr__(self) -> str:
        return f"Timeline({self.storage.base_uri!r}, {len(self.instants)} instants)"

    # -- the instants ------------------------------------------------------------------------

    def _index(self) -> tuple[list[Instant], dict[str, Instant]]:
        with self._lock:
            if self._instants is None:
                # Instant's order is its _key; sorting by it spares a Python __lt__ per compare.
                latest = [max(files.values(), key=Instant._key)
                          for files in self._files.values() if files]
                self._instants = sorted(latest, key=Instant._key)
                self._by_time = {i.timestamp: i for i in self._instants}
                self._boundary = next(
                    (i.timestamp for i in self._instants
                     if i.action in WRITE_ACTIONS or i.action in COMMIT_ACTIONS), None)
                self._state = frozenset(
                    name for files in self._files.values() for name in files)
            return self._instants, self._by_time

    def state(self) -> frozenset[str]:
        """The names of every instant file of this timeline as loaded and written through
        it: two timelines of one table with the same state agree on every instant's state,
        completion time and contents (a state file is never rewritten), so what is derived
        from the timeline alone can be kept under this key."""
        with self._lock:
            self._index()
            assert self._state is not None
            return self._state

    @property
    def instants(self) -> list[Instant]:
        """One instant per instant time, in its latest state, sorted by time."""
        return list(self._index()[0])

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def get(self, timestamp: str) -> Instant | None:
        """The instant at ``timestamp`` in its latest state, or None if not on the timeline."""
        return self._index()[1].get(timestamp)

    def instant_files(self, timestamp: str) -> list[Instant]:
        """Every state file of the instant at ``timestamp``, requested first, with mtimes."""
        with self._lock:
            return sorted(self._files.get(timestamp, {}).values())

    def completed(self, actions: Iterable[str] | None = None) -> list[Instant]:
        """The completed instants (of ``actions``, if given), oldest first."""
        wanted = _action_set(actions)
        return [
            i
            for i in self._index()[0]
            if i.is_completed and (wanted is None or i.action in wanted)
        ]

    def pending(self, actions: Iterable[str] | None = None) -> list[Instant]:
        """The requested and inflight instants (of ``actions``, if given), oldest first."""
        wanted = _action_set(actions)
        return [
            i
            for i in self._index()[0]
            if not i.is_completed and (wanted is None or i.action in wanted)
        ]

    def last_completed(self, actions: Iterable[str] | None = None) -> Instant | None:
        """The latest completed instant (of ``actions``, if given), or None."""
        done = self.completed(actions)
        return done[-1] if done else None

    def last_completed_without_holes(
        self, actions: Iterable[str] | None = WRITE_ACTIONS
    ) -> Instant | None:
        """The last completed instant with no pending instant before it (RFC-45, case 5).

        Looks at the write timeline by default, as RFC-45's indexer does (in
        ``DC1 DC2 DC3 CLEAN4(inflight) DC5 DC6 COMPACT7(requested) DC8`` it is DC6);
        ``actions=None`` considers every action (there: DC3). Returns None when the first
        such instant is pending or there is none.
        """
        wanted = _action_set(actions)
        last = None
        for instant in self._index()[0]:
            if wanted is not None and instant.action not in wanted:
                continue
            if not instant.is_completed:
                break
            last = instant
        return last

    @property
    def start_timestamp(self) -> str | None:
        """The instant time of the first active instant, or None for an empty timeline."""
        instants = self._index()[0]
        return instants[0].timestamp if instants else None

    @property
    def archive_boundary(self) -> str | None:
        """The instant time of the first active write instant (any state): archival moves
        only completed writes (and the cleans and rollbacks among them) out, so every write
        instant older than this one was archived. Savepoints, indexing and restores stay
        active, so they do not count."""
        with self._lock:
            self._index()
            return self._boundary

    def is_completed(self, timestamp: str) -> bool:
        """True when the instant at ``timestamp`` completed.

        An instant time not on the active timeline but older than its first write instant
        was archived, and counts as completed unless a completed rollback names it.
        """
        instant = self.get(timestamp)
        if instant is not None:
            return instant.is_completed
        start = self.archive_boundary
        return start is not None and timestamp < start and (
            timestamp not in self._rolled_back_set()
        )

    def rolled_back_instants(self) -> set[str]:
        """The instant times that completed rollbacks name as undone.

        Raises:
            CorruptTableError: a rollback's metadata is malformed (names the instant).
        """
        return set(self._rolled_back_set())

    def _rolled_back_set(self) -> set[str]:
        with self._lock:
            if self._rolled_back is None:
                undone: set[str] = set()
                for rollback in self.completed([Action.ROLLBACK]):
                    data = self.read_content(rollback)
                    undone |= RollbackMetadata.parse(data, self._label(rollback)).rolled_back()
                self._rolled_back = undone
            return self._rolled_back

    # -- contents ----------------------------------------------------------------------------

    def _resolve(self, instant: Instant | str) -> Instant:
        if isinstance(instant, Instant):
            return instant
        found = self.get(instant)
        if found is None:
            raise CorruptTableError(
                f"no instant {instant} on the timeline of table {self.storage.base_uri}; it "
                "was archived or rolled back, or never existed: reload the timeline"
            )
        return found

    def _label(self, instant: Instant) -> str:
        return f"{instant.file_name} of table {self.storage.base_uri}"

    def _path(self, file_name: str) -> str:
        return posixpath.join(self.timeline_dir, file_name)

    def read_content(self, instant: Instant | str) -> bytes:
        """The bytes of ``instant``'s file (for a time: of its latest state).

        Raises:
            CorruptTableError: the file is gone (archived or rolled back since loading).
        """
        instant = self._resolve(instant)
        try:
            return self.storage.read_bytes(self._path(instant.file_name))
        except FileNotFoundError:
            raise CorruptTableError(
                f"instant file {self._label(instant)} is gone: it was archived or rolled back "
                "since the timeline was loaded; reload the timeline and retry"
            ) from None

    def commit_metadata(self, instant: Instant | str) -> CommitMetadata:
        """The commit metadata of ``instant`` (a pending one's is the planned write profile).

        Raises:
            CorruptTableError: the file is malformed (names the instant and table).
        """
        instant = self._resolve(instant)
        return CommitMetadata.parse(self.read_content(instant), self._label(instant))

    def rollback_plan(self, timestamp: str) -> RollbackPlan:
        """The plan of the rollback at ``timestamp`` (its ``.rollback.requested`` file).

        Raises:
            CorruptTableError: no such plan, or a malformed one.
        """
        for f in self.instant_files(timestamp):
            if f.action == Action.ROLLBACK and f.is_requested:
                return RollbackPlan.parse(self.read_content(f), self._label(f))
        raise CorruptTableError(
            f"no rollback plan {timestamp}.rollback.requested on the timeline of table "
            f"{self.storage.base_uri}; reload the timeline"
        )

    def rollback_metadata(self, instant: Instant | str) -> RollbackMetadata:
        """The metadata of a completed rollback.

        Raises:
            CorruptTableError: the file is malformed (names the instant and table).
        """
        instant = self._resolve(instant)
        return RollbackMetadata.parse(self.read_content(instant), self._label(instant))

    def latest_schema(self) -> str | None:
        """The table schema (Avro JSON) recorded by the latest completed commit that has one."""
        for instant in reversed(self.completed(COMMIT_ACTIONS)):
            schema = self.commit_metadata(instant).schema
            if schema:
                return schema
        return None

    # -- writes ------------------------------------------------------------------------------

    def require_writable(self) -> None:
        """Raise unless hudisql may write this table's timeline.

        Raises:
            UnsupportedTableVersionError: a version hudisql does not write (or a layout
                that does not go with its version).
        """
        if WRITABLE_VERSIONS.get(self.props.version) != self.layout:
            versions = ", ".join(f"{v} (timeline layout {lay})"
                                 for v, lay in sorted(WRITABLE_VERSIONS.items()))
            raise UnsupportedTableVersionError(
                f"table {self.storage.base_uri} is version {self.props.version} (timeline "
                f"layout {self.layout}); hudisql writes versions {versions}: write to it with "
                "Apache Hudi 1.x"
            )

    def _require_writable(self) -> None:
        self.require_writable()

    def _encode(self, instant: Instant, content: bytes) -> tuple[Instant, bytes]:
        """The instant and content as this timeline's layout writes them.

        Layout 2 keeps the metadata of inflight and completed commits, deltacommits and
        replacecommits as Avro (a completed replacecommit as HoodieReplaceCommitMetadata, an
        inflight one as HoodieCommitMetadata, as Hudi 1.x writes them); a requested
        replacecommit holding a clustering plan is the ``clustering`` action there.
        """
        if self.layout < 2:
            return instant, content
        if (
            instant.action == Action.REPLACECOMMIT and instant.is_requested
            and content.startswith(AVRO_MAGIC) and is_clustering_plan(content)
        ):
            instant = Instant(instant.timestamp, Action.CLUSTERING, State.REQUESTED)
        if (
            instant.action in COMMIT_ACTIONS and not instant.is_requested and content.strip()
            and not content.startswith(AVRO_MAGIC)
        ):
            metadata = CommitMetadata.parse(content, self._label(instant))
            replace = instant.action == Action.REPLACECOMMIT and instant.is_completed
            content = encode_commit_metadata(metadata, replace)
        return instant, content

    def _check_action(self, action: str) -> str:
        if action not in {a.value for a in Action}:
            raise WriteError(
                f"{action!r} is not a timeline action (table {self.storage.base_uri}); use one "
                f"of {', '.join(a.value for a in Action)}"
            )
        return str(action)

    def _create(self, instant: Instant, content: bytes) -> Instant:
        instant, content = self._encode(instant, content)
        try:
            self.storage.create_if_absent(self._path(instant.file_name), content)
        except FileExistsError:
            raise InstantExistsError(
                f"instant file {self._label(instant)} already exists: another writer created "
                "it first; reload the timeline and start a new instant"
            ) from None
        with self._lock:
            self._files.setdefault(instant.timestamp, {})[instant.file_name] = instant
            self._instants = None
            self._rolled_back = None
        return instant

    def _on_disk(self, timestamp: str, action: str, state: State) -> bool:
        return bool(self._names_on_disk(timestamp, action, state))

    def _names_on_disk(self, timestamp: str, action: str, state: State) -> list[str]:
        """The file names of ``action`` at ``timestamp`` in ``state`` on storage now (a
        completed layout-2 instant's name holds its completion time, so it is listed)."""
        if self.layout < 2 or state != State.COMPLETED:
            name = instant_file_name(timestamp, action, state)
            return [name] if self.storage.exists(self._path(name)) else []
        completed = COMPLETED_AS.get(action, action)
        names = []
        for f in self.storage.list_dir(self.timeline_dir):
            if not f.name.startswith(f"{timestamp}_"):
                continue
            found = parse_instant_file_name(f.name, self.layout)
            if found is not None and found.is_completed and found.action == completed:
                names.append(f.name)
        return names

    def _times_on_disk(self) -> set[str]:
        """Every instant time on storage now: requested times and (layout 2) completion
        times."""
        times: set[str] = set()
        for f in self.storage.list_dir(self.timeline_dir):
            if f.name[:1].isdigit():
                stem = f.name.split(".", 1)[0]
                times.update(stem.split("_"))
        return times

    def _requested_times_on_disk(self) -> set[str]:
        return {
            f.name.split(".", 1)[0].split("_", 1)[0]
            for f in self.storage.list_dir(self.timeline_dir)
            if f.name[:1].isdigit()
        }

    def create_requested(
        self, action: str, timestamp: str | None = None, content: bytes = b"",
        reserve: Callable[[str], None] | None = None,
    ) -> Instant:
        """Create ``<ts>.<action>.requested`` holding ``content``; returns the instant.

        Without ``timestamp`` a new instant time is taken, later than every instant on the
        timeline (retried if another writer takes the same time meanwhile). ``reserve(ts)``
        is called with each time tried, before its file exists: a writer starts the
        instant's heartbeat there, so no other writer ever sees the instant without one.

        Raises:
            InstantExistsError: an instant at ``timestamp`` exists already.
            InvalidInstantTransitionError: ``action`` has no requested state (savepoint).
            WriteError: an unknown action or a malformed ``timestamp``.
            UnsupportedTableVersionError: hudisql does not write the table (see require_writable).
        """
        self._require_writable()
        action = self._check_action(action)
        if action == Action.SAVEPOINT:
            raise InvalidInstantTransitionError(
                f"savepoints on table {self.storage.base_uri} have no requested state: "
                "use create_inflight"
            )
        return self._create_new(action, State.REQUESTED, timestamp, content, reserve)

    def create_inflight(
        self, action: str, timestamp: str | None = None, content: bytes = b""
    ) -> Instant:
        """Create a savepoint directly inflight (``<ts>.savepoint.inflight``), as Hudi does.

        Raises:
            InvalidInstantTransitionError: any other action (those start requested).
            InstantExistsError, WriteError, UnsupportedTableVersionError: as create_requested.
        """
        self._require_writable()
        action = self._check_action(action)
        if action != Action.SAVEPOINT:
            raise InvalidInstantTransitionError(
                f"a {action} on table {self.storage.base_uri} starts requested: use "
                "create_requested, then transition_to_inflight"
            )
        return self._create_new(action, State.INFLIGHT, timestamp, content)

    def _create_new(
        self, action: str, state: State, timestamp: str | None, content: bytes,
        reserve: Callable[[str], None] | None = None,
    ) -> Instant:
        if timestamp is not None:
            if not is_instant_time(timestamp):
                raise WriteError(
                    f"{timestamp!r} is not an instant time (yyyyMMddHHmmssSSS) for table "
                    f"{self.storage.base_uri}"
                )
            if timestamp in self._requested_times_on_disk():
                raise InstantExistsError(
                    f"an instant at {timestamp} already exists on the timeline of table "
                    f"{self.storage.base_uri}; pick a new instant time"
                )
            if reserve is not None:
                reserve(timestamp)
            return self._create(Instant(timestamp, action, state), content)
        after = max(self._times_on_disk(), default=None)
        for _ in range(_MAX_TIME_ATTEMPTS):
            ts = new_instant_time(after=after)
            if reserve is not None:
                reserve(ts)
            try:
                return self._create(Instant(ts, action, state), content)
            except InstantExistsError:
                after = ts
        raise InstantExistsError(
            f"could not find a free instant time on table {self.storage.base_uri} after "
            f"{_MAX_TIME_ATTEMPTS} attempts: too many concurrent writers; retry"
        )

    def transition_to_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        """Move a requested instant inflight (create its inflight file); returns it.

        Raises:
            InvalidInstantTransitionError: ``instant`` is not requested, or its requested
                file is gone, or it completed already.
            InstantExistsError: another writer moved it inflight first.
        """
        self._require_writable()
        if not instant.is_requested:
            raise InvalidInstantTransitionError(
                f"{instant} on table {self.storage.base_uri} is not requested: only a "
                "requested instant goes inflight"
            )
        ts, action = instant.timestamp, instant.action
        if not self._on_disk(ts, action, State.REQUESTED):
            raise InvalidInstantTransitionError(
                f"{instant.file_name} is not on the timeline of table {self.storage.base_uri} "
                "(rolled back?): reload the timeline and start a new instant"
            )
        if self._on_disk(ts, action, State.COMPLETED):
            raise InvalidInstantTransitionError(
                f"{ts}.{action} on table {self.storage.base_uri} completed already"
            )
        return self._create(instant.with_state(State.INFLIGHT), content)

    def complete(self, instant: Instant, content: bytes) -> Instant:
        """Complete an inflight instant: create its completed file with ``content``.

        Raises:
            InvalidInstantTransitionError: ``instant`` is not inflight, or its inflight file
                is gone (rolled back).
            InstantExistsError: it is completed already (another writer was first).
        """
        self._require_writable()
        if not instant.is_inflight:
            raise InvalidInstantTransitionError(
                f"{instant} on table {self.storage.base_uri} is not inflight: an instant "
                "completes only from inflight"
            )
        if not self._on_disk(instant.timestamp, instant.action, State.INFLIGHT):
            raise InvalidInstantTransitionError(
                f"{instant.file_name} is not on the timeline of table {self.storage.base_uri} "
                "(rolled back?): its writes must not be completed; start a new instant"
            )
        if self.layout < 2:
            return self._create(instant.with_state(State.COMPLETED), content)
        # One listing: is it completed already, and the latest time on the timeline.
        action = COMPLETED_AS.get(instant.action, instant.action)
        latest = ""
        for f in self.storage.list_dir(self.timeline_dir):
            found = parse_instant_file_name(f.name, self.layout)
            if found is None:
                continue
            if found.timestamp == instant.timestamp and found.is_completed and (
                    found.action == action):
                raise InstantExistsError(
                    f"instant {instant.timestamp} of table {self.storage.base_uri} is "
                    f"completed already ({f.name}): another writer completed it first"
                )
            latest = max(latest, found.timestamp, found.completion_time or "")
        # Callers hold the table lock here: no other completion time is taken meanwhile.
        completion = new_instant_time(after=latest or None)
        return self._create(
            Instant(instant.timestamp, action, State.COMPLETED, completion), content
        )

    def delete_rolled_back(self, instant: Instant) -> None:
        """Delete every state file of a completed instant that a completed rollback voided.

        The completed file goes first: readers already ignore the instant (a completed
        rollback names it), and a crash in between leaves files a re-run removes.

        Raises:
            InvalidInstantTransitionError: no completed rollback names the instant.
        """
        self._require_writable()
        ts, action = instant.timestamp, instant.action
        if ts not in self.rolled_back_instants():
            raise InvalidInstantTransitionError(
                f"{ts}.{action} on table {self.storage.base_uri} is not rolled back by a "
                "completed rollback: roll it back first"
            )
        self._delete_states(ts, action, [State.COMPLETED, State.INFLIGHT, State.REQUESTED])

    def delete_pending(self, instant: Instant, keep_requested: bool = False) -> None:
        """Delete a pending instant's inflight and (unless ``keep_requested``) requested file.

        The inflight file goes first, so a crash in between leaves a requested instant
        that a later rollback finds again.

        Raises:
            InvalidInstantTransitionError: the instant completed (roll it back instead).
        """
        self._require_writable()
        ts, action = instant.timestamp, instant.action
        if instant.is_completed or self._on_disk(ts, action, State.COMPLETED):
            raise InvalidInstantTransitionError(
                f"{ts}.{action} on table {self.storage.base_uri} is completed: roll it back "
                "instead of deleting its files"
            )
        states = [State.INFLIGHT] if keep_requested else [State.INFLIGHT, State.REQUESTED]
        self._delete_states(ts, action, states)

    def _delete_states(self, ts: str, action: str, states: list[State]) -> None:
        """Delete the instant's files of ``states``, in that order, from disk and this view."""
        for state in states:
            names = self._names_on_disk(ts, action, state)
            if not names and self.layout >= 2 and state != State.COMPLETED:
                # Layout 2 names a pending compaction, log compaction or clustering by what
                # it was planned as; only its completed file by the action it completes as.
                names = [n for planned, done in COMPLETED_AS.items() if done == action
                         for n in self._names_on_disk(ts, planned, state)]
            for name in names or [instant_file_name(ts, action, state)]:
                self.storage.delete(self._path(name))
                with self._lock:
                    files = self._files.get(ts, {})
                    files.pop(name, None)
                    if not files:
                        self._files.pop(ts, None)
                    self._instants = None


def is_clustering_plan(content: bytes) -> bool:
    """True when ``content`` is a HoodieRequestedReplaceMetadata of a clustering."""
    try:
        name, record = read_avro_container(content)
    except ValueError:
        return False
    return name.endswith("HoodieRequestedReplaceMetadata") and (
        record.get("operationType") == "CLUSTER"
    )
