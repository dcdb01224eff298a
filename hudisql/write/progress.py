"""Slices done during a Spark write, counted from its markers (no Spark status API needed).

Spark's status tracker is reachable only through the JVM gateway, which Spark Connect does
not have, and the write job returns its write stats only when every task has ended. But
each task creates a marker (``.hoodie/.temp/<instant>/<partition>/<file>.marker.<kind>``)
before it writes a file slice's data file, and the driver knows where: :class:`MarkerWatch`
lists that directory every half second while the job runs and reports how many file
groups have been started. Index builds and compactions that write through the same
per-slice functions can watch their instants the same way.
"""

from __future__ import annotations

import posixpath
import threading
from types import TracebackType

from hudisql.progress import Progress, no_progress
from hudisql.table.format.filenames import BaseFileName, LogFileName
from hudisql.table.io.storage import Storage
from hudisql.table.write.files import MARKER_DIR

#: Seconds between two listings of the marker directory.
POLL_INTERVAL = 0.5


def started_file_groups(storage: Storage, instant_time: str) -> int:
    """How many file groups the write of ``instant_time`` has started (distinct markers)."""
    groups: set[tuple[str, str]] = set()
    for status in storage.list_recursive(f"{MARKER_DIR}/{instant_time}"):
        if status.is_dir:
            continue
        folder, name = posixpath.split(status.path)
        data_file = name.split(".marker.", 1)[0]
        parsed = BaseFileName.parse(data_file) or LogFileName.parse(data_file)
        if parsed is not None:
            groups.add((folder, parsed.file_id))
    return len(groups)


class MarkerWatch:
    """While open, reports the file groups a write has started to ``progress`` (a thread).

    Nothing is listed when ``progress`` shows nothing (CI, ``hudisql.progress.display=off``).
    """

    def __init__(self, progress: Progress, storage: Storage, instant_time: str,
                 interval: float = POLL_INTERVAL) -> None:
        self.progress = progress
        self.storage = storage
        self.instant_time = instant_time
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.progress.update(started_file_groups(self.storage, self.instant_time))
            except OSError:
                continue  # the directory is being written: try again at the next tick

    def __enter__(self) -> MarkerWatch:
        if self.progress.sink is not no_progress:
            self._thread = threading.Thread(target=self._run, name="hudisql-marker-watch",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
