"""The statement a connection is running, and a client's CancelRequest stopping it.

A CancelRequest arrives on a connection of its own, so it is handled in another thread
than the statement's. Spark's job tags (``SparkSession.addTag``/``interruptTag``) are kept
per thread in a classic session: a tag added in the statement's thread is unknown to the
cancelling thread, and ``interruptTag`` there interrupts nothing (measured). Each
connection has a Spark session of its own, so ``SparkSession.interruptAll()`` on it stops
exactly that connection's jobs, from any thread.

A cancel may arrive before the statement's first Spark job starts (while it is parsed,
planned, or between two jobs); interrupting once would then hit nothing and the job would
run to its end. So a cancel keeps interrupting, every :data:`RETRY_SECONDS`, until the
statement it was meant for ends; the statement's end waits for an interruption in flight,
so the next statement is never hit. A cancel when nothing runs does nothing, as in
PostgreSQL.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger("hudisql.server")

#: How often a cancel interrupts the connection's Spark jobs while its statement runs.
RETRY_SECONDS = 0.1


class RunningStatement:
    """What one connection is running, and whether its client asked to cancel it.

    Args:
        interrupt: stops every Spark job of the connection (its Spark session's
            ``interruptAll``).
    """

    def __init__(self, interrupt: Callable[[], object]) -> None:
        self._interrupt = interrupt
        self._lock = threading.Lock()
        self._ended = threading.Condition(self._lock)
        self._serial = 0
        #: The statement's text (None between statements).
        self.text: str | None = None
        #: When it started (``time.time()``), for ``pg_stat_activity``.
        self.started: float | None = None
        #: Set by a cancel, cleared when the statement ends.
        self.cancelled = threading.Event()

    @contextmanager
    def run(self, text: str) -> Iterator[None]:
        """Mark ``text`` as running for the duration of the ``with`` block."""
        with self._lock:
            self._serial += 1
            self.text, self.started = text, time.time()
        try:
            yield
        finally:
            with self._lock:
                self.text = self.started = None
                self.cancelled.clear()
                self._ended.notify_all()

    def cancel(self) -> bool:
        """Ask the running statement to stop; returns False when none runs."""
        with self._lock:
            if self.text is None:
                return False
            serial = self._serial
            self.cancelled.set()
        threading.Thread(target=self._interrupt_until_ended, args=(serial,), daemon=True,
                         name="hudisql-serve-cancel").start()
        return True

    def _interrupt_until_ended(self, serial: int) -> None:
        with self._lock:
            while self.text is not None and self._serial == serial:
                try:
                    self._interrupt()
                except Exception:  # a stopped Spark: nothing left to interrupt
                    log.warning("interrupting a cancelled statement failed", exc_info=True)
                    return
                self._ended.wait(RETRY_SECONDS)
