"""Merging small archive files: ``.hoodie/archived`` stays a few files however long the history.

Every archival run writes one new archive file, created whole (hudisql never appends to an
archive file, which is how Apache Hudi keeps their number down on file systems with append).
Once ``hoodie.archive.merge.files.batch.size`` (default 10) files smaller than
``hoodie.archive.merge.small.file.limit.bytes`` (default 20 MiB) sit before the newest one,
they are merged into the oldest of them, as Hudi's ``hoodie.archive.merge.enable`` does
(on by default here, off in Hudi: see above). The newest file is never merged: it holds
the last run, which the next run reads to finish an interrupted one.

A merged file is the candidates' bytes one after the other: their log blocks, unchanged.
**Steps**, each safe to be killed after: (1) a plan (``.hudisql_merge_plan`` in the
archive folder, a name no archive reader matches) names the target, the candidates and
the merged size; (2) the target is replaced by the merged bytes (one atomic replace);
(3) the other candidates are deleted; (4) the plan is deleted. The next run finishes a
plan whose target has the merged size (deletes the candidates left) and drops one whose
target does not (nothing was replaced). Meanwhile readers may meet an instant in two
files; the archived timeline lists it once.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass

from hudisql.errors import CorruptTableError
from hudisql.table.format.archive_format import archive_version
from hudisql.table.io.storage import Storage

__all__ = ["MergeSettings", "finish_interrupted_merge", "merge_small_archive_files"]

MERGE_ENABLE = "hoodie.archive.merge.enable"
MERGE_BATCH = "hoodie.archive.merge.files.batch.size"
MERGE_SMALL_LIMIT = "hoodie.archive.merge.small.file.limit.bytes"
PLAN_NAME = ".hudisql_merge_plan"

StepHook = Callable[[str, str], None]


@dataclass(frozen=True)
class MergeSettings:
    """When small archive files are merged (see the module notes)."""

    enabled: bool = True
    batch_size: int = 10
    small_file_limit: int = 20 * 1024 * 1024


def _plan_path(archive_dir: str) -> str:
    return posixpath.join(archive_dir, PLAN_NAME)


def _sized_archive_files(storage: Storage, archive_dir: str) -> list[tuple[int, str, int]]:
    """(version, relative path, size) of each archive file, oldest first."""
    found = []
    for status in storage.list_dir(archive_dir):
        version = archive_version(status.name)
        if version is not None and not status.is_dir:
            found.append((version, posixpath.join(archive_dir, status.name), status.size))
    return sorted(found)


def finish_interrupted_merge(storage: Storage, archive_dir: str, on_step: StepHook) -> None:
    """Finish or drop a merge that died (module notes); under the table lock.

    Raises:
        CorruptTableError: the plan is malformed (nothing is deleted then).
    """
    plan_path = _plan_path(archive_dir)
    if not storage.exists(plan_path):
        return
    try:
        plan = json.loads(storage.read_bytes(plan_path))
        target, candidates, size = plan["target"], list(plan["candidates"]), int(plan["size"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptTableError(
            f"archive merge plan {storage.full_path(plan_path)} is malformed ({exc}); delete "
            "it if no archive file is smaller than the files it names"
        ) from None
    if storage.exists(target) and storage.size(target) == size:
        for rel in candidates:
            if rel != target:
                storage.delete(rel)
        on_step("merge_finished", target)
    storage.delete(plan_path)


def merge_small_archive_files(storage: Storage, archive_dir: str, settings: MergeSettings,
                              on_step: StepHook) -> str | None:
    """Merge the small archive files before the newest when enough are there; returns the
    merged file (None: nothing to merge). Under the table lock, after an archival run."""
    if not settings.enabled or not storage.exists(archive_dir):
        return None
    files = _sized_archive_files(storage, archive_dir)[:-1]  # never the newest
    small = [(rel, size) for _, rel, size in files if size < settings.small_file_limit]
    if len(small) < max(2, settings.batch_size):
        return None
    merged = b"".join(storage.read_bytes(rel) for rel, _ in small)
    target = small[0][0]
    plan = {"target": target, "candidates": [rel for rel, _ in small], "size": len(merged)}
    storage.write_atomic(_plan_path(archive_dir), json.dumps(plan).encode())
    on_step("merge_planned", target)
    storage.write_atomic(target, merged)
    on_step("merged", target)
    for rel, _ in small[1:]:
        storage.delete(rel)
    on_step("merge_deleted", target)
    storage.delete(_plan_path(archive_dir))
    return target
