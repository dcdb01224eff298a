"""Removing the log files of failed or duplicate task attempts once their instant completed.

A retried or speculative Spark task leaves log files its commit does not keep. Readers
never merge their blocks (``reconcile.py``: the commit's record names the committed
files), so removing them is tidiness, not correctness: it runs after the instant is
completed, and a process that dies before it leaves a table that still reads exactly.

The candidates are the instant's log file markers (``APPEND``; ``CREATE`` for a version
8/9 log file named after its instant) minus the log files its commit metadata names. A
marker may name a file this writer never created (another writer took that log version
first), so a candidate is deleted only when every block in it that decodes a header was
written by this instant.
"""

from __future__ import annotations

import posixpath

from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.filenames import LogFileName
from hudisql.table.format.log.reader import scan_blocks
from hudisql.table.io.storage import Storage
from hudisql.table.write.files import MARKER_DIR

__all__ = ["remove_spurious_log_files", "spurious_log_files"]

#: The markers a log file is written under: APPEND, or CREATE (versions 8/9 name a new log
#: file after its instant); base files' CREATE markers are no log file names and are skipped.
_LOG_MARKERS = (".marker.APPEND", ".marker.CREATE")


def _committed_names(metadata: CommitMetadata) -> set[str]:
    names: set[str] = set()
    for stat in metadata.write_stats():
        for name in (stat.path, *stat.log_files):
            if name:
                names.add(posixpath.basename(name))
    return names


def spurious_log_files(storage: Storage, instant_time: str, metadata: CommitMetadata) -> list[str]:
    """The log files (relative paths) of ``instant_time`` that its commit did not keep.

    ``metadata`` is the instant's commit metadata. Returns only files whose every block
    with a readable header carries ``instant_time`` (never another writer's file).
    """
    root = f"{MARKER_DIR}/{instant_time}"
    if not storage.exists(root):
        return []
    kept = _committed_names(metadata)
    found = []
    for status in storage.list_recursive(root):
        suffix = next((m for m in _LOG_MARKERS if status.name.endswith(m)), None)
        if status.is_dir or suffix is None:
            continue
        rel = status.path[len(root) + 1:-len(suffix)]
        name = posixpath.basename(rel)
        if LogFileName.parse(name) is None or name in kept or not storage.exists(rel):
            continue
        blocks = [b for b in scan_blocks(storage.read_bytes(rel), rel) if not b.is_corrupt]
        if all(b.instant_time == instant_time for b in blocks):
            found.append(rel)
    return sorted(found)


def remove_spurious_log_files(
    storage: Storage, instant_time: str, metadata: CommitMetadata
) -> list[str]:
    """Delete :func:`spurious_log_files` of a completed instant; returns their paths.

    Call it after the instant is completed and before its markers are removed.
    """
    removed = spurious_log_files(storage, instant_time, metadata)
    for rel in removed:
        storage.delete(rel)
    return removed
