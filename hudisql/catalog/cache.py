"""The synchronized metastore cache (after Hive's "Synchronized Metastore Cache" design):
table entries tagged with the write ids they are valid at, kept current from the
notification log, served only when provably fresh.

A read brings the statement's ValidWriteIdList and table id. The cache serves its entry only
when the entry's tag is *equivalent* to the statement's list (no write id committed between
them) and the ids match; otherwise the caller reads the database. A write event installs the
table's new entry as pending (not usable); the commit event makes it usable with the new tag.
Every entry remembers the notification-log event it reflects (``as_of_event``) and is only
ever replaced by a newer one, whether the newer one comes from the log or from a database
read, so the cache moves forward only. External tables carry no tag (eventual consistency).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from hudisql.catalog.entry import TableEntry
from hudisql.catalog.events import ENTRY_EVENTS, EventType, NotificationEvent
from hudisql.catalog.write_ids import Comparison, ValidWriteIdList


@dataclass(frozen=True)
class CacheStats:
    """Counters of one catalog instance's cache (``session.catalog.stats()``)."""

    hits: int
    misses: int
    #: Misses because the statement's write ids were newer than the cached entry's.
    refreshes: int
    events_applied: int
    duplicate_events: int
    #: Events in the log (as last seen by a statement or the poller) not yet applied.
    lag_events: int
    last_event_id: int
    entries: int
    external_refreshes: int

    @property
    def hit_rate(self) -> float:
        """Hits over lookups (0.0 before the first lookup)."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


@dataclass
class _Slot:
    """One table's cached state; ``entry`` is what a hit returns when ``usable``."""

    entry: TableEntry | None
    usable: bool
    as_of_event: int
    pending: TableEntry | None = None
    pending_write_id: int | None = None
    checked_at: float = 0.0


class MetastoreCache:
    """Table entries by table id, with the design's freshness check and event application.

    Thread-safe: the poller thread applies events while sessions look entries up.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[int, _Slot] = {}
        # Table ids are never reused, so a dropped id is remembered to refuse late installs.
        self._dropped: dict[int, int] = {}
        self._last_event_id = 0
        self._head_event_id = 0
        self._hits = self._misses = self._refreshes = 0
        self._events = self._duplicates = self._external_refreshes = 0

    # ---------------------------------------------------------------- reads

    def lookup(self, table_id: int, request: ValidWriteIdList | None) -> TableEntry | None:
        """The cached entry if it may serve a statement holding ``request``, else None.

        Managed tables need ``request`` equivalent to the entry's tag; external tables
        (``request`` None, entry without a tag) are served whenever usable. Counts the
        hit or miss.
        """
        with self._lock:
            slot = self._slots.get(table_id)
            entry = slot.entry if slot is not None and slot.usable else None
            if entry is not None:
                tag = entry.valid_write_ids
                if tag is None and request is None:
                    self._hits += 1
                    return entry
                if tag is not None and request is not None:
                    relation = tag.compare(request)
                    if relation is Comparison.EQUIVALENT:
                        self._hits += 1
                        return entry
                    if relation is Comparison.OLDER:
                        self._refreshes += 1
            self._misses += 1
            return None

    def peek(self, table_id: int) -> TableEntry | None:
        """The usable cached entry of ``table_id`` regardless of freshness (no counting)."""
        with self._lock:
            slot = self._slots.get(table_id)
            return slot.entry if slot is not None and slot.usable else None

    def entries(self) -> list[TableEntry]:
        """Every usable cached entry, by table id."""
        with self._lock:
            return [
                s.entry
                for _, s in sorted(self._slots.items())
                if s.usable and s.entry is not None
            ]

    # --------------------------------------------------------------- writes

    def install(self, entry: TableEntry) -> bool:
        """Cache ``entry`` (read from the database or just written) if it is newer.

        Returns:
            True when installed; False when the cache already reflects that event or a later
            one, or the table was dropped at or after it.
        """
        with self._lock:
            return self._install(entry)

    def _install(self, entry: TableEntry) -> bool:
        dropped_at = self._dropped.get(entry.table_id)
        if dropped_at is not None and dropped_at >= entry.as_of_event:
            return False
        slot = self._slots.get(entry.table_id)
        if slot is not None and slot.as_of_event >= entry.as_of_event:
            return False
        self._slots[entry.table_id] = _Slot(entry, True, entry.as_of_event)
        return True

    def prewarm(self, entries: Iterable[TableEntry], head_event_id: int) -> None:
        """Load every entry read at ``head_event_id``; the log is followed from there on."""
        with self._lock:
            for entry in entries:
                self._install(entry)
            self._last_event_id = max(self._last_event_id, head_event_id)
            self._head_event_id = max(self._head_event_id, head_event_id)

    def mark_checked(self, table_id: int, when: float) -> None:
        """Remember when an external table's timeline was last compared with its files."""
        with self._lock:
            slot = self._slots.get(table_id)
            if slot is not None:
                slot.checked_at = when

    def checked_at(self, table_id: int) -> float:
        """When the external table's timeline was last checked (0.0: never)."""
        with self._lock:
            slot = self._slots.get(table_id)
            return slot.checked_at if slot is not None else 0.0

    def count_external_refresh(self) -> None:
        """Count a refresh of an external table whose timeline moved."""
        with self._lock:
            self._external_refreshes += 1

    def observe_head(self, head_event_id: int) -> None:
        """Note the log's newest event id as a statement or the poller saw it (for lag)."""
        with self._lock:
            self._head_event_id = max(self._head_event_id, head_event_id)

    @property
    def last_event_id(self) -> int:
        """The id of the last notification-log event applied."""
        with self._lock:
            return self._last_event_id

    def apply(self, event: NotificationEvent) -> bool:
        """Apply one notification-log event; an event already applied changes nothing.

        Returns:
            True when the event was new (even if it concerned nothing cached).
        """
        with self._lock:
            if event.event_id <= self._last_event_id:
                self._duplicates += 1
                return False
            self._last_event_id = event.event_id
            self._head_event_id = max(self._head_event_id, event.event_id)
            self._events += 1
            if event.table_id is not None:
                self._apply_table_event(event, event.table_id)
            return True

    def _apply_table_event(self, event: NotificationEvent, table_id: int) -> None:
        if event.event_type is EventType.DROP_TABLE:
            self._slots.pop(table_id, None)
            self._dropped[table_id] = event.event_id
            return
        if table_id in self._dropped:
            return
        slot = self._slots.get(table_id)
        if slot is not None and event.event_id <= slot.as_of_event:
            return  # a database read already brought this table past the event
        if event.event_type in ENTRY_EVENTS:
            self._apply_entry_event(event, table_id, slot)
            return
        if slot is None:
            return  # nothing cached to re-tag; the next read loads the table
        tag = ValidWriteIdList.parse(event.message["write_ids"])
        slot.as_of_event = event.event_id
        if event.event_type is EventType.COMMIT_TXN and slot.pending_write_id == event.write_id:
            assert slot.pending is not None
            slot.entry = dataclasses.replace(
                slot.pending, valid_write_ids=tag, as_of_event=event.event_id
            )
            slot.pending, slot.pending_write_id, slot.usable = None, None, True
            return
        if event.event_type is EventType.ABORT_TXN and slot.pending_write_id == event.write_id:
            slot.pending, slot.pending_write_id = None, None
        if slot.entry is not None:
            slot.entry = dataclasses.replace(
                slot.entry, valid_write_ids=tag, as_of_event=event.event_id
            )
        slot.usable = slot.entry is not None and slot.pending is None

    def _apply_entry_event(self, event: NotificationEvent, table_id: int, slot: _Slot | None) -> (
        None
    ):
        entry = TableEntry.from_json(event.message, event.event_id)
        if event.write_id is None:
            # External tables have no write ids: the new entry is usable at once.
            self._slots[table_id] = _Slot(entry, True, event.event_id)
            return
        if slot is None:
            slot = self._slots[table_id] = _Slot(None, False, event.event_id)
        # The seed: a write marks the entry unusable until its commit event is applied.
        slot.pending, slot.pending_write_id = entry, event.write_id
        slot.usable = False
        slot.as_of_event = event.event_id

    # ---------------------------------------------------------------- stats

    def stats(self) -> CacheStats:
        """A consistent copy of the counters."""
        with self._lock:
            return CacheStats(
                hits=self._hits,
                misses=self._misses,
                refreshes=self._refreshes,
                events_applied=self._events,
                duplicate_events=self._duplicates,
                lag_events=max(0, self._head_event_id - self._last_event_id),
                last_event_id=self._last_event_id,
                entries=sum(1 for s in self._slots.values() if s.usable and s.entry is not None),
                external_refreshes=self._external_refreshes,
            )
