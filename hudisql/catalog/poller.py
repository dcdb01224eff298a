"""The background thread that follows the notification log into the cache.

One per catalog instance. It reads events after the last one applied, in id order, and hands
them to the cache; a database outage only delays it (the cache stays as it was, and reads
fall back to the database). Stopping and starting it again resumes where it left off;
events it sees twice are ignored by the cache.
"""

from __future__ import annotations

import logging
import threading

from hudisql.catalog.cache import MetastoreCache
from hudisql.catalog.store import CatalogStore
from hudisql.errors import CatalogError

log = logging.getLogger(__name__)


class NotificationPoller:
    """Applies notification-log events to a :class:`MetastoreCache`, in a thread or on demand."""

    def __init__(
        self, store: CatalogStore, cache: MetastoreCache, interval: float, batch: int = 1000
    ) -> None:
        self.store = store
        self.cache = cache
        self.interval = interval
        self.batch = batch
        self.last_error: CatalogError | None = None
        self._poll_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rounds = 0
        self._round_done = threading.Condition()

    def poll_once(self, max_events: int | None = None) -> int:
        """Fetch and apply the next events (at most ``max_events``); returns how many were new.

        Raises:
            CatalogUnavailableError: the database could not be read (the cache is unchanged).
        """
        with self._poll_lock:
            limit = self.batch if max_events is None else min(max_events, self.batch)
            events = self.store.events_after(self.cache.last_event_id, limit)
            return sum(1 for event in events if self.cache.apply(event))

    def catch_up(self) -> int:
        """Apply events until none is left; returns how many were applied."""
        total = 0
        while True:
            applied = self.poll_once()
            total += applied
            if applied < self.batch:
                return total

    @property
    def running(self) -> bool:
        """True while the background thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the background thread (no-op when it already runs)."""
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name="hudisql-catalog-poller", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread and wait for it to finish its current poll."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def rounds(self) -> int:
        """How many polling rounds the background thread has finished."""
        with self._round_done:
            return self._rounds

    def wait_rounds(self, count: int, timeout: float) -> bool:
        """Block until the background thread finished ``count`` rounds in all; False on timeout.

        A round that starts after this call has seen every event committed before it.
        """
        with self._round_done:
            return self._round_done.wait_for(lambda: self._rounds >= count, timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.catch_up()
                self.last_error = None
            except CatalogError as exc:
                # Reads go to the database meanwhile; retry at the next interval.
                if self.last_error is None:
                    log.warning("catalog poller: %s", exc)
                self.last_error = exc
            with self._round_done:
                self._rounds += 1
                self._round_done.notify_all()
            self._stop.wait(self.interval)
