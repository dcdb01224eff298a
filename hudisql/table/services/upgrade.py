"""Upgrading a table to version 8 or 9 (``CALL upgrade_table``), as Hudi 1.x's upgrade does.

A version-6 table keeps its timeline in ``.hoodie`` (layout 1); versions 8 and 9 in
``.hoodie/timeline`` (layout 2), with completed instants named ``<requested>_<completion>``
and commit metadata in Avro. The upgrade writes the layout-2 timeline beside the old one,
then switches ``hoodie.properties`` (one atomic replace: the moment the table becomes
version 8/9), then removes the layout-1 instant files. A crash before the switch leaves a
version-6 table whose readers never look in ``.hoodie/timeline`` (the next upgrade writes
it again); a crash after it leaves a version 8/9 table whose readers never look at the
old files, which the next ``upgrade_table`` removes. Completion times are the completed
files' modification times (as Hudi's ``SixToEightUpgradeHandler`` takes them), raised where
needed so that each is after its requested time and after the one completed before it.

Archived instants (``.hoodie/archived``) are rewritten as the LSM history's first snapshot
(:mod:`hudisql.table.services.upgrade_archive`); the old archive folder is left in place
(no version 8/9 reader looks at it). Refused, with the table unchanged: pending instants
(finish or roll them back first: a version-6 log written during a pending compaction is
named after that compaction, which layout 2 would read as its writer). A version-6 table's
metadata table is removed before this runs and rebuilt at the new version after it
(:mod:`hudisql.services.upgrade_metadata`); here it must be gone already.
Going from 8 to 9 changes only ``hoodie.properties``; going down is not offered.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass

from hudisql.errors import TableServiceError
from hudisql.table.format.commit_metadata import AVRO_MAGIC, CommitMetadata
from hudisql.table.format.commit_metadata_avro import encode_commit_metadata
from hudisql.table.format.instant import (
    Action,
    Instant,
    State,
    format_instant_time,
    instant_time_after,
    parse_instant_file_name,
)
from hudisql.table.format.table_versions import INITIAL_VERSION, hudi1x_properties
from hudisql.table.format.timeline import (
    COMMIT_ACTIONS,
    METADATA_TABLE_DIR,
    Timeline,
    is_clustering_plan,
)
from hudisql.table.services.upgrade_archive import convert_archive
from hudisql.table.table import HudiTable

__all__ = ["UPGRADE_VERSIONS", "UpgradeResult", "check_upgrade", "upgrade_table"]

#: The versions ``upgrade_table`` goes to.
UPGRADE_VERSIONS = (8, 9)

StepHook = Callable[[str, str], None]


def _no_step(event: str, detail: str) -> None:
    """The default step hook: nothing."""


@dataclass(frozen=True)
class UpgradeResult:
    """What an upgrade did: the versions before and after, the instants it moved."""

    from_version: int
    to_version: int
    instants: int


def upgrade_table(table: HudiTable, to_version: int,
                  on_step: StepHook = _no_step) -> UpgradeResult:
    """Upgrade ``table`` to ``to_version`` (8 or 9), under the table lock the caller holds.

    ``on_step(event, detail)`` is called after each step (``timeline``: the layout-2
    timeline is written; ``properties``: the table is the new version; ``cleaned``: the
    layout-1 files are gone); raising there simulates a crash.

    Raises:
        TableServiceError: ``to_version`` is not 8 or 9, lower than the table's, the
            table has pending instants or still a version-6 metadata table, or an archived
            instant that cannot be rewritten.
    """
    props, where = table.properties, f"table {table.name} at {table.base_path}"
    check_upgrade(table, to_version)
    if props.version >= 8:
        moved = _remove_layout_1_files(table)  # a crash after the switch left them
        if moved:
            on_step("cleaned", str(moved))
        if props.version < to_version:
            initial = int(props.get(INITIAL_VERSION, str(props.version)))
            hudi1x_properties(props, to_version, initial).save(table.storage)
            on_step("properties", str(to_version))
        return UpgradeResult(props.version, to_version, 0)
    if props.metadata_partitions or props.metadata_partitions_inflight or table.storage.exists(
            METADATA_TABLE_DIR):
        raise TableServiceError(
            f"upgrade_table of {where}: it still has a version-6 metadata table "
            f"({METADATA_TABLE_DIR}); upgrade it with CALL upgrade_table, which rebuilds it "
            "at the new version")
    timeline = table.timeline
    files = [f for i in timeline.instants for f in timeline.instant_files(i.timestamp)]
    completions = _completion_times(files)
    new_dir = ".hoodie/timeline"
    table.storage.makedirs(posixpath.join(new_dir, "history"))
    # The archive first: a table whose archive cannot be rewritten is refused unchanged
    # (the history folder is not read before the switch).
    convert_archive(table.storage, props.archive_dir, posixpath.join(new_dir, "history"),
                    on_step)
    clustering = {f.timestamp for f in files if f.action == Action.REPLACECOMMIT
                  and f.is_requested and _is_clustering(timeline, f)}
    for f in files:
        name, content = _converted(timeline, f, completions.get(f.timestamp),
                                   f.timestamp in clustering)
        table.storage.write_atomic(posixpath.join(new_dir, name), content)
    on_step("timeline", str(len(files)))
    hudi1x_properties(props, to_version, initial_version=props.version).save(table.storage)
    on_step("properties", str(to_version))
    _remove_layout_1_files(table)
    on_step("cleaned", str(len(files)))
    return UpgradeResult(props.version, to_version, len(timeline.instants))


def check_upgrade(table: HudiTable, to_version: int) -> None:
    """Refuse, before anything is written, an upgrade of ``table`` to ``to_version`` that
    cannot be done: a version it does not go to, a downgrade, or (from version 6) pending
    instants.

    Raises:
        TableServiceError: naming the table, what stands in the way and what to do.
    """
    props, where = table.properties, f"table {table.name} at {table.base_path}"
    if to_version not in UPGRADE_VERSIONS:
        raise TableServiceError(
            f"upgrade_table of {where}: to_version {to_version} is not one hudisql upgrades "
            f"to; use {' or '.join(str(v) for v in UPGRADE_VERSIONS)}")
    if to_version < props.version:
        raise TableServiceError(
            f"upgrade_table of {where}: the table is version {props.version}, above "
            f"{to_version}; hudisql does not downgrade tables")
    if props.version >= 8:
        return
    pending = [str(i) for i in table.timeline.pending()]
    if pending:
        raise TableServiceError(
            f"upgrade_table of {where}: pending instants {', '.join(pending)}; complete or "
            "roll them back first (CALL rollback_to_instant, RUN COMPACTION, ...)")


def _completion_times(files: list[Instant]) -> dict[str, str]:
    """Completion times of the completed instants: modification times, in the order the
    files were written, each after its requested time and after the previous one."""
    completed = [f for f in files if f.is_completed]
    completed.sort(key=lambda f: (f.modification_time is None, f.modification_time,
                                  f.timestamp))
    out: dict[str, str] = {}
    previous = ""
    for f in completed:
        candidate = (format_instant_time(f.modification_time)
                     if f.modification_time is not None else "")
        floor = max(f.timestamp, previous)
        if candidate <= floor:
            candidate = instant_time_after(floor)
        out[f.timestamp] = previous = candidate
    return out


def _is_clustering(timeline: Timeline, requested: Instant) -> bool:
    content = timeline.read_content(requested)
    return content.startswith(AVRO_MAGIC) and is_clustering_plan(content)


def _converted(timeline: Timeline, f: Instant, completion: str | None,
               clustering: bool) -> tuple[str, bytes]:
    """The layout-2 name and content of layout-1 instant file ``f``."""
    content = timeline.read_content(f)
    action = f.action
    if clustering and not f.is_completed:
        action = Action.CLUSTERING
        if f.is_inflight:
            content = b""  # Hudi 1.x leaves a clustering's inflight file empty
    if (action in COMMIT_ACTIONS and not f.is_requested and content.strip()
            and not content.startswith(AVRO_MAGIC)):
        metadata = CommitMetadata.parse(content, f"{f.file_name} of {timeline.storage.base_uri}")
        content = encode_commit_metadata(
            metadata, action == Action.REPLACECOMMIT and f.is_completed)
    if f.is_completed:
        assert completion is not None
        return Instant(f.timestamp, action, State.COMPLETED, completion).file_name, content
    return Instant(f.timestamp, action, f.state).file_name, content


def _remove_layout_1_files(table: HudiTable) -> int:
    """Delete the layout-1 instant files left in ``.hoodie``; returns how many there were."""
    removed = 0
    for status in table.storage.list_dir(".hoodie"):
        if status.is_dir or parse_instant_file_name(status.name, 1) is None:
            continue
        table.storage.delete(posixpath.join(".hoodie", status.name))
        removed += 1
    return removed
