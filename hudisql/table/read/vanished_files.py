"""Files that vanish between a reader's listing and its read (concurrent rollbacks, cleans).

A reader lists a file slice's files, then opens them, maybe much later on an executor. A
failed write's rollback may delete its log files in between: those hold only blocks of an
instant that is not completed, which the reader would not merge anyway, so a vanished log
file that no visible commit names is skipped (reading it would change nothing). A vanished
file that a visible commit names (any base file of a listed slice, or a committed log file)
was removed under the reader by a rollback of a completed write or a clean: that is an error
naming the file and the commit, and the query can be rerun.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import TypeVar

from hudisql.errors import CorruptTableError
from hudisql.table.format.fsview import FileSlice, LogFile, VisibleInstants
from hudisql.table.format.timeline import COMMIT_ACTIONS, Timeline
from hudisql.table.io.storage import Storage

T = TypeVar("T")

__all__ = ["committing_instant", "read_log_bytes", "read_log_file", "vanished_file_error"]


def committing_instant(timeline: Timeline, visible: VisibleInstants, file_slice: FileSlice,
                       rel_path: str) -> str | None:
    """The visible commit whose write stats name ``rel_path`` (a file of ``file_slice``), or
    None when none does."""
    wanted = posixpath.normpath(rel_path)
    for instant in reversed(timeline.completed(COMMIT_ACTIONS)):
        if instant.timestamp < file_slice.base_instant or instant.timestamp not in visible:
            continue
        stats = timeline.commit_metadata(instant).partition_to_write_stats.get(
            file_slice.partition_path or "", [])
        if any(s.path and posixpath.normpath(s.path) == wanted for s in stats):
            return instant.timestamp
    return None


def vanished_file_error(rel_path: str, file_slice: FileSlice, instant: str) -> CorruptTableError:
    """The error for a committed file of ``file_slice`` that vanished while being read."""
    where = file_slice.partition_path or "<root>"
    return CorruptTableError(
        f"file {rel_path} of file group {file_slice.file_id} (partition {where}), written by "
        f"completed instant {instant}, vanished while it was being read: a concurrent rollback "
        "of a completed write or a clean removed it; rerun the query to read the table as it "
        "is now"
    )


def read_log_file(read: Callable[[], T], timeline: Timeline, visible: VisibleInstants,
                     file_slice: FileSlice, log: LogFile) -> T | None:
    """``read()`` of ``log`` (its bytes, or a scan of its blocks); None when the file vanished
    and no visible commit names it.

    Raises:
        CorruptTableError: it vanished and a visible commit names it.
    """
    try:
        return read()
    except FileNotFoundError:
        owner = committing_instant(timeline, visible, file_slice, log.path)
        if owner is None:
            return None
        raise vanished_file_error(log.path, file_slice, owner) from None


def read_log_bytes(storage: Storage, timeline: Timeline, visible: VisibleInstants,
                   file_slice: FileSlice, log: LogFile) -> bytes | None:
    """The bytes of ``log``; None when it vanished and no visible commit names it.

    Raises:
        CorruptTableError: it vanished and a visible commit names it.
    """
    return read_log_file(lambda: storage.read_bytes(log.path), timeline, visible,
                         file_slice, log)
