"""Clean in the table core: which old file slices to delete, and deleting them.

``hoodie.cleaner.policy``:

- ``KEEP_LATEST_COMMITS`` (default): keep every slice a reader as of one of the last
  ``hoodie.cleaner.commits.retained`` (default 10) completed write instants needs. The
  earliest of them (or the first pending write, when earlier) is the *earliest instant to
  retain* E; a slice is deleted only when the next slice of its file group starts no later
  than E, so every reader as of E or later reads that next slice or a later one.
- ``KEEP_LATEST_FILE_VERSIONS``: keep the latest ``hoodie.cleaner.fileversions.retained``
  (default 3) slices of every file group.

File groups a replacecommit (insert overwrite, clustering) no later than E replaced are
deleted whole. The latest slice of a live file group is never deleted, nor a slice whose
base instant is savepointed; settings that would delete latest slices (a retained count
below 1) are refused. The plan is Hudi's ``HoodieCleanerPlan`` (full file paths) in
``<ts>.clean.requested``; the completed ``<ts>.clean`` holds ``HoodieCleanMetadata``.
Log files a log compaction replaced stay with their slice until it is cleaned (RFC-48).
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Mapping
from dataclasses import dataclass

from hudisql.errors import TableServiceError
from hudisql.table.format.filenames import BaseFileName, LogFileName
from hudisql.table.format.fsview import FileSystemView
from hudisql.table.format.instant import Action, Instant, State
from hudisql.table.format.service_plans import (
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    int_setting,
)
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage

__all__ = ["CleanSettings", "execute_clean", "plan_clean"]

POLICY = "hoodie.cleaner.policy"
COMMITS_RETAINED = "hoodie.cleaner.commits.retained"
FILE_VERSIONS_RETAINED = "hoodie.cleaner.fileversions.retained"
KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
_WRITES = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT, Action.COMPACTION,
           Action.LOGCOMPACTION, Action.CLUSTERING)


def _retained(options: Mapping[str, str], key: str, default: int, table: str) -> int:
    return int_setting(options, key, default, 1,
                       f"would let clean delete the latest file slices of table {table}: "
                       "retain at least 1")


@dataclass(frozen=True)
class CleanSettings:
    """The cleaner policy and how much it retains."""

    policy: str = KEEP_LATEST_COMMITS
    commits_retained: int = 10
    file_versions_retained: int = 3

    @classmethod
    def parse(cls, options: Mapping[str, str], table: str = "") -> CleanSettings:
        """The settings from Hudi's option names.

        Raises:
            TableServiceError: an unknown policy, or a retained count below 1 (it would
                remove latest slices).
        """
        policy = str(options.get(POLICY, KEEP_LATEST_COMMITS)).strip().upper()
        if policy not in (KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS):
            raise TableServiceError(
                f"{POLICY}={options.get(POLICY)!r} is not supported (table {table}): use "
                f"{KEEP_LATEST_COMMITS} or {KEEP_LATEST_FILE_VERSIONS}"
            )
        d = cls()
        return cls(
            policy,
            _retained(options, COMMITS_RETAINED, d.commits_retained, table),
            _retained(options, FILE_VERSIONS_RETAINED, d.file_versions_retained, table),
        )


def _earliest_to_retain(timeline: Timeline, retained: int) -> Instant | None:
    completed = timeline.completed(_WRITES)
    if len(completed) <= retained:
        return None
    earliest = completed[-retained]
    pending = timeline.pending(_WRITES)
    if pending and pending[0].timestamp < earliest.timestamp:
        return None  # nothing before a pending write is safe to judge yet
    return earliest


def plan_clean(
    storage: Storage, view: FileSystemView, settings: CleanSettings
) -> CleanerPlan | None:
    """The clean plan for the table ``view`` shows (None: nothing to delete).

    ``view`` must be a view of the latest state (no ``as_of``).
    """
    timeline = view.timeline
    savepointed = {i.timestamp for i in timeline.completed([Action.SAVEPOINT])}
    earliest: Instant | None = None
    if settings.policy == KEEP_LATEST_COMMITS:
        earliest = _earliest_to_retain(timeline, settings.commits_retained)
        if earliest is None:
            return None
    files: dict[str, list[CleanFileInfo]] = {}
    for group in view.file_groups():
        slices = group.slices
        for index, old in enumerate(slices[:-1]):
            if old.base_instant in savepointed:
                continue
            if settings.policy == KEEP_LATEST_COMMITS:
                assert earliest is not None
                if slices[index + 1].base_instant > earliest.timestamp:
                    continue
            elif index >= len(slices) - settings.file_versions_retained:
                continue
            files.setdefault(group.partition_path, []).extend(
                CleanFileInfo(storage.full_path(path)) for path in old.paths)
    if earliest is not None:
        _replaced_groups(storage, timeline, earliest.timestamp, files)
    if not files:
        return None
    if earliest is not None:
        earliest = Instant(earliest.timestamp, earliest.action, State.COMPLETED)
    return CleanerPlan(policy=settings.policy, earliest_instant_to_retain=earliest,
                       file_paths_to_be_deleted_per_partition=files)


def _replaced_groups(storage: Storage, timeline: Timeline, earliest: str,
                     files: dict[str, list[CleanFileInfo]]) -> None:
    """Add the files of file groups a replacecommit no later than ``earliest`` replaced: no
    reader as of a retained instant reads them."""
    for instant in timeline.completed([Action.REPLACECOMMIT]):
        if instant.timestamp > earliest:
            continue
        replaced = timeline.commit_metadata(instant).partition_to_replace_file_ids
        for partition, file_ids in replaced.items():
            ids = set(file_ids)
            for status in storage.list_dir(partition):
                parsed = BaseFileName.parse(status.name) or LogFileName.parse(status.name)
                if not status.is_dir and parsed is not None and parsed.file_id in ids:
                    files.setdefault(partition, []).append(
                        CleanFileInfo(storage.full_path(status.path)))


def _relative(storage: Storage, path: str) -> str:
    root = storage.full_path("").rstrip("/") + "/"
    if path.startswith(root):
        return path[len(root):]
    scheme = path.find("://")
    if scheme >= 0 and path[scheme + 3:].startswith(root.lstrip("/")):
        return path[scheme + 3 + len(root.lstrip("/")):]
    raise TableServiceError(
        f"clean plan names {path!r}, which is not below the table at {storage.full_path('')}"
    )


def execute_clean(
    storage: Storage, timeline: Timeline, instant_time: str, plan: CleanerPlan
) -> CleanMetadata:
    """Delete the plan's files (those already gone count as deleted: a re-run after a crash).

    Returns:
        The metadata to complete the clean instant with.
    """
    started = time.monotonic()
    partitions: dict[str, CleanPartitionMetadata] = {}
    for partition, infos in plan.file_paths_to_be_deleted_per_partition.items():
        meta = partitions.setdefault(
            partition, CleanPartitionMetadata(partition, plan.policy))
        for info in infos:
            rel = _relative(storage, info.file_path)
            name = posixpath.basename(rel)
            meta.delete_path_patterns.append(name)
            try:
                if storage.exists(rel):
                    storage.delete(rel)
                meta.success_delete_files.append(name)
            except OSError:
                meta.failed_delete_files.append(name)
    earliest = plan.earliest_instant_to_retain
    last = timeline.last_completed(_WRITES)
    return CleanMetadata(
        policy=plan.policy,
        start_clean_time=instant_time,
        earliest_commit_to_retain=earliest.timestamp if earliest is not None else "",
        last_completed_commit_timestamp=last.timestamp if last is not None else "",
        time_taken_in_millis=int((time.monotonic() - started) * 1000),
        partition_metadata=partitions,
    )
