"""Heartbeats of inflight instants: how a writer tells a live instant from an abandoned one.

While a writer works on an instant it refreshes ``.hoodie/.heartbeat/<instant>`` from a
background thread. The file holds the time of the last beat (milliseconds since the epoch;
an empty file, as Apache Hudi writes it, falls back to its modification time). An inflight
instant whose heartbeat is missing or older than ``interval * tolerable_misses`` is
abandoned: its writer died, and the next writer rolls it back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType

import pyarrow.fs as pafs

from hudisql.table.io.storage import Storage

#: The folder of heartbeat files (Hudi's own).
HEARTBEAT_DIR = ".hoodie/.heartbeat"
#: Beat interval option (Hudi's own key) and its default.
HEARTBEAT_INTERVAL_MS = "hoodie.client.heartbeat.interval_in_ms"
DEFAULT_INTERVAL_MS = 60_000
#: How many missed beats make an instant abandoned (Hudi's own key) and its default.
HEARTBEAT_TOLERABLE_MISSES = "hoodie.client.heartbeat.tolerable.misses"
DEFAULT_TOLERABLE_MISSES = 2


def heartbeat_path(instant: str) -> str:
    """The heartbeat file of ``instant``, relative to the table's base path."""
    return f"{HEARTBEAT_DIR}/{instant}"


def heartbeat_settings(options: Mapping[str, str]) -> tuple[float, int]:
    """The beat interval (seconds) and tolerable misses of a writer's options."""
    interval = float(options.get(HEARTBEAT_INTERVAL_MS, DEFAULT_INTERVAL_MS)) / 1000.0
    misses = int(options.get(HEARTBEAT_TOLERABLE_MISSES, DEFAULT_TOLERABLE_MISSES))
    return interval, misses


def last_heartbeat(storage: Storage, instant: str) -> float | None:
    """The time (seconds since the epoch) of ``instant``'s last beat, or None without one."""
    rel = heartbeat_path(instant)
    try:
        text = storage.read_bytes(rel).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    if text.isdigit():
        return int(text) / 1000.0
    info = storage.fs.get_file_info(storage.full_path(rel))
    if info.type == pafs.FileType.NotFound or info.mtime is None:
        return None
    return float(info.mtime.timestamp())


def is_abandoned(
    storage: Storage,
    instant: str,
    interval: float,
    tolerable_misses: int = DEFAULT_TOLERABLE_MISSES,
    now: float | None = None,
) -> bool:
    """True when ``instant`` has no heartbeat, or its last beat is older than allowed.

    Args:
        interval: the beat interval in seconds.
        tolerable_misses: beats that may be missed before the instant counts as abandoned.
        now: the current time (seconds since the epoch); default the clock.
    """
    beat = last_heartbeat(storage, instant)
    if beat is None:
        return True
    current = time.time() if now is None else now
    return current - beat > interval * max(tolerable_misses, 1)


class Heartbeat:
    """Keeps ``instant``'s heartbeat fresh from a daemon thread while the writer works.

    Use as a context manager (or :meth:`start` / :meth:`stop`). Stopping removes the file:
    an instant that completed or was rolled back needs no heartbeat.
    """

    def __init__(
        self,
        storage: Storage,
        instant: str,
        interval: float = DEFAULT_INTERVAL_MS / 1000.0,
        clock: Callable[[], float] = time.time,
        on_beat: Callable[[float], None] | None = None,
    ) -> None:
        self.storage = storage
        self.instant = instant
        self.interval = interval
        self._clock = clock
        self._on_beat = on_beat
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.beats = 0
        self.error: BaseException | None = None

    def beat(self) -> float:
        """Write one beat now; returns its time (seconds since the epoch)."""
        now = self._clock()
        self.storage.write_atomic(heartbeat_path(self.instant), str(int(now * 1000)).encode())
        self.beats += 1
        if self._on_beat is not None:
            self._on_beat(now)
        return now

    def start(self) -> Heartbeat:
        """Write the first beat and start refreshing it every ``interval`` seconds; returns self."""
        self.beat()
        self._thread = threading.Thread(
            target=self._run, name=f"hudisql-heartbeat-{self.instant}", daemon=True
        )
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.beat()
            except Exception as exc:  # a failed beat must not kill the writer's thread
                # The writer checks :attr:`error`; readers will see the beat as missed.
                self.error = exc

    def stop(self, delete: bool = True) -> None:
        """Stop beating and (by default) delete the heartbeat file."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if delete:
            self.storage.delete(heartbeat_path(self.instant))

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
