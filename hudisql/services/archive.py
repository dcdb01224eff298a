"""Archival as a table service: the data table's timeline, then its metadata table's.

Runs under the table lock (after clean, when both run after a write). The rules and the
crash-safe steps are ``hudisql.table.services.archive``'s; this module finds what the two
timelines hold each other back by: the data table keeps every instant from the metadata
table's latest compaction on (Hudi's rule), the metadata table keeps its instants from the
data table's earliest active commit or earliest pending instant on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from hudisql.metadata.table import METADATA_PATH, MetadataTable
from hudisql.services.protocol import StepHook, no_step, table_lock
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.service_plans import int_setting
from hudisql.table.format.timeline import Timeline
from hudisql.table.services.archive import (
    ArchivalBounds,
    ArchivalSettings,
    archive_timeline,
    instants_to_archive,
)
from hudisql.table.services.archive_lsm import archive_timeline_lsm
from hudisql.table.table import HudiTable

__all__ = ["ArchiveResult", "archive_locked", "archive_needed", "run_archive"]

#: The metadata table's own compaction trigger (its archival keeps what that counts).
METADATA_MAX_DELTA_COMMITS = "hoodie.metadata.compact.max.delta.commits"


@dataclass(frozen=True)
class ArchiveResult:
    """The instants one archival run moved out of each timeline."""

    data: list[Instant] = field(default_factory=list)
    metadata: list[Instant] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.data or self.metadata)


def _metadata_table(table: HudiTable) -> HudiTable | None:
    if not table.properties.metadata_partitions or not MetadataTable.exists_for(table):
        return None
    return HudiTable.open(table.base_path.rstrip("/") + "/" + METADATA_PATH)


def _data_earliest(timeline: Timeline) -> str | None:
    """Hudi's ``getEarliestInstantForMetadataArchival``: the data table's first active
    commit, or its first pending instant when earlier."""
    commits = timeline.completed([Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT])
    pending = timeline.pending()
    found = [i.timestamp for i in (commits[:1] + pending[:1])]
    return min(found) if found else None


def _metadata_settings(settings: ArchivalSettings, options: Mapping[str, str]
                       ) -> ArchivalSettings:
    return dataclasses.replace(
        settings, max_delta_commits=int_setting(options, METADATA_MAX_DELTA_COMMITS, 10, 1))


def _data_bounds(metadata: HudiTable | None) -> ArchivalBounds:
    """What the metadata table (when there is one) holds the data table's archival by."""
    compaction = None
    if metadata is not None:
        last = metadata.timeline.last_completed([Action.COMMIT])
        compaction = last.timestamp if last is not None else None
    return ArchivalBounds(has_metadata=metadata is not None, metadata_compaction=compaction)


def archive_locked(table: HudiTable, options: Mapping[str, str] | None = None, *,
                   on_step: StepHook = no_step) -> ArchiveResult:
    """Archive the data table and then its metadata table, under the lock the caller holds.

    Raises:
        TableServiceError: bad ``hoodie.keep.*`` settings (nothing archived).
        CorruptTableError: an instant file to archive is malformed (nothing deleted).
    """
    options = dict(options or {})
    settings = ArchivalSettings.parse(options, table.name)
    archive = archive_timeline
    if table.properties.timeline_layout >= 2:
        # Versions 8 and 9: Hudi 1.x's LSM history, held back by the same rules (the
        # metadata table's latest compaction among them), for both tables.
        table.timeline.require_writable()
        archive = archive_timeline_lsm
    metadata = _metadata_table(table)
    data = archive(table.storage, table.timeline, settings,
                   table.properties.is_mor, _data_bounds(metadata), on_step)
    archived_metadata: list[Instant] = []
    if metadata is not None:
        # Reloaded even when nothing new moved: a run cut short may just have been finished.
        data_timeline = table.timeline.reload()
        archived_metadata = (
            archive_timeline_lsm if metadata.properties.timeline_layout >= 2
            else archive_timeline)(
            metadata.storage, metadata.timeline, _metadata_settings(settings, options), True,
            ArchivalBounds(data_earliest=_data_earliest(data_timeline)),
            lambda event, detail: on_step(f"metadata_{event}", detail))
    return ArchiveResult(data, archived_metadata)


def run_archive(table: HudiTable, options: Mapping[str, str] | None = None, *,
                on_step: StepHook = no_step) -> ArchiveResult:
    """Take the table lock and archive what is due (``hoodie.keep.min.commits``,
    ``hoodie.keep.max.commits``); returns what moved out of each timeline.

    Raises:
        TableServiceError: bad settings (nothing archived).
        LockError: the table lock could not be had in time.
    """
    options = dict(options or {})
    ArchivalSettings.parse(options, table.name)  # refuse bad settings before the lock
    with table_lock(table, options):
        return archive_locked(table.reload(), options, on_step=on_step)


def archive_needed(table: HudiTable, options: Mapping[str, str] | None = None) -> bool:
    """True when archival would move instants out of the table's or its metadata table's
    active timeline now: planned without the lock from the timelines as loaded, so that
    the automatic archival after a write takes the lock (and reads the archive) only then.
    A run cut short is finished by the next one that is due; readers list its instants
    once meanwhile.

    Raises:
        TableServiceError: bad ``hoodie.keep.*`` settings.
    """
    options = dict(options or {})
    settings = ArchivalSettings.parse(options, table.name)
    commits = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT)
    metadata = _metadata_table(table)
    if len(table.timeline.completed(commits)) > settings.max_commits and instants_to_archive(
            table.timeline, settings, table.properties.is_mor, _data_bounds(metadata)):
        return True
    if metadata is None or len(metadata.timeline.completed(commits)) <= settings.max_commits:
        return False
    return bool(instants_to_archive(
        metadata.timeline, _metadata_settings(settings, options), True,
        ArchivalBounds(data_earliest=_data_earliest(table.timeline))))
