"""Merging small archive files, so the archived timeline stays a handful of files.

hudisql never appends to an archive file (each archival run creates one whole file, the
only way that is crash-safe on object stores), so without merging a table committed to
once a minute would gather an archive file every few minutes forever. Apache Hudi meets
the same problem on storage without append with ``hoodie.archive.merge.enable``; hudisql
merges the same way, with the same options and plan file, and turns merging on by default
because it never appends (``hoodie.archive.merge.enable=false`` turns it off):

- the candidates are the newest archive files, consecutive, each no larger than
  ``hoodie.archive.merge.small.file.limit.bytes`` (20 MiB); the older ones stay as they
  are, so the files keep the order of their instants;
- once there are ``hoodie.archive.merge.files.batch.size`` (10) of them, a plan
  (``.hoodie/archived/mergeArchivePlan``, Hudi's ``HoodieMergeArchiveFilePlan``) names them
  and the merged file; the merged file (the next version, the candidates' blocks one after
  another) is created whole; the candidates are deleted; the plan is deleted.

A run cut short is settled by the next one, as Hudi settles it: with every candidate
still there the merged file may be partial and is deleted; with some gone, the merged file
is complete and the rest are deleted. A reader in between may see an instant in both a
candidate and the merged file, which the archived timeline lists once.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hudisql.errors import CorruptTableError, TableServiceError
from hudisql.table.format.archive_format import (
    archive_file_name,
    archive_files,
    read_archive_file,
)
from hudisql.table.format.commit_metadata import read_avro_container, write_avro_container
from hudisql.table.format.service_plans import int_setting
from hudisql.table.io.storage import Storage

__all__ = ["MergeSettings", "merge_archive_files", "settle_interrupted_merge"]

MERGE_ENABLE = "hoodie.archive.merge.enable"
MERGE_BATCH = "hoodie.archive.merge.files.batch.size"
MERGE_SMALL_FILE = "hoodie.archive.merge.small.file.limit.bytes"
#: Hudi's name for the plan of a merge in progress (``HoodieArchivedTimeline``).
PLAN_NAME = "mergeArchivePlan"

_PLAN_SCHEMA = """{"namespace": "org.apache.hudi.avro.model", "type": "record",
 "name": "HoodieMergeArchiveFilePlan", "fields": [
  {"name": "version", "type": ["int", "null"], "default": 1},
  {"name": "candidate", "type": ["null", {"type": "array", "items": "string"}],
   "default": null},
  {"name": "mergedArchiveFileName", "type": ["null", "string"], "default": null}]}"""

StepHook = Callable[[str, str], None]


def _no_step(event: str, detail: str) -> None:
    return None


@dataclass(frozen=True)
class MergeSettings:
    """When small archive files are merged (Hudi's option names)."""

    enabled: bool = True
    batch_size: int = 10
    small_file_bytes: int = 20 * 1024 * 1024

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> MergeSettings:
        """The settings from Hudi's options; hudisql's default for ``enable`` is true.

        Raises:
            TableServiceError: a count or size that is not a positive integer, or an
                ``enable`` value other than true or false.
        """
        d = cls()
        raw = str(options.get(MERGE_ENABLE, "true")).strip().lower()
        if raw not in ("true", "false"):
            raise TableServiceError(f"{MERGE_ENABLE}={options[MERGE_ENABLE]!r}: give true or false")
        return cls(raw == "true", int_setting(options, MERGE_BATCH, d.batch_size, 1),
                   int_setting(options, MERGE_SMALL_FILE, d.small_file_bytes, 1))


def _plan_path(archive_dir: str) -> str:
    return posixpath.join(archive_dir, PLAN_NAME)


def settle_interrupted_merge(storage: Storage, archive_dir: str,
                             on_step: StepHook = _no_step) -> None:
    """Finish or undo a merge whose plan is still there (Hudi's rule, see the module).

    Archival runs it before writing its own archive file: an unsettled plan names the next
    version as its merged file, which a new archive file must not be mistaken for."""
    plan_path = _plan_path(archive_dir)
    if not storage.exists(plan_path):
        return
    try:
        _, plan = read_avro_container(storage.read_bytes(plan_path))
    except ValueError:  # a plan cut short while written: nothing else happened yet
        storage.delete(plan_path)
        return
    names = [posixpath.basename(c) for c in plan.get("candidate") or []]
    candidates = [posixpath.join(archive_dir, n) for n in names]
    merged = posixpath.join(archive_dir, str(plan.get("mergedArchiveFileName") or ""))
    if all(storage.exists(c) for c in candidates):
        if plan.get("mergedArchiveFileName") and storage.exists(merged):  # maybe partial
            storage.delete(merged)
    elif storage.exists(merged):
        for c in candidates:
            if storage.exists(c):
                storage.delete(c)
    storage.delete(plan_path)
    on_step("merge_settled", archive_dir)


def merge_archive_files(storage: Storage, archive_dir: str, settings: MergeSettings,
                        on_step: StepHook = _no_step) -> list[str]:
    """Settle an interrupted merge, then merge the newest small archive files when there
    are ``settings.batch_size`` of them, under the table lock the caller holds.

    Returns:
        The archive files merged away by this run (relative paths), oldest first.

    Raises:
        CorruptTableError: a candidate archive file is damaged (nothing is merged then).
    """
    settle_interrupted_merge(storage, archive_dir, on_step)
    if not settings.enabled:
        return []
    files = archive_files(storage, archive_dir)
    if len(files) < settings.batch_size:
        return []
    sizes = {s.name: s.size for s in storage.list_dir(archive_dir)}
    candidates: list[tuple[int, str]] = []
    for version, rel in reversed(files):
        if sizes.get(posixpath.basename(rel), 0) > settings.small_file_bytes:
            break
        candidates.append((version, rel))
    if len(candidates) < settings.batch_size:
        return []
    candidates.reverse()
    for _, rel in candidates:  # refuse to fold a damaged file into a sound one
        read_archive_file(storage, rel)
    merged_name = archive_file_name(files[-1][0] + 1)
    plan = {"version": 1, "candidate": [storage.full_path(rel) for _, rel in candidates],
            "mergedArchiveFileName": merged_name}
    storage.create_if_absent(_plan_path(archive_dir), write_avro_container(_PLAN_SCHEMA, [plan]))
    on_step("merge_planned", merged_name)
    content = b"".join(storage.read_bytes(rel) for _, rel in candidates)
    merged = posixpath.join(archive_dir, merged_name)
    try:
        storage.create_if_absent(merged, content)
    except FileExistsError as e:
        raise CorruptTableError(
            f"archive file {storage.full_path(merged)} appeared while merging archive files "
            "into it: another process archives this table without the table lock; the "
            "next archival settles the merge") from e
    on_step("merge_written", merged_name)
    for _, rel in candidates:
        storage.delete(rel)
        on_step("merge_candidate_deleted", rel)
    storage.delete(_plan_path(archive_dir))
    return [rel for _, rel in candidates]
