"""Keeping the metadata table exact on every commit: the commit participant of the seam.

The commit protocol (``hudisql.txn``) calls each participant under the table lock, after
conflict resolution and before the data instant completes (``on_commit``), and when it
rolls a data instant back (``on_rollback``). :class:`MetadataTableParticipant` writes the
metadata deltacommit with the same instant time to every built and every being-built
metadata partition (RFC-45: writers look for pending indexing before they commit), and
undoes it on rollback; before each deltacommit it lets the metadata table compact itself
(``hudisql.metadata.services``). :func:`participants_for` is what callers pass to a
transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hudisql.errors import MetadataTableError
from hudisql.metadata.builders import index_spec
from hudisql.metadata.commit_update import commit_updates, deleted_files_updates, stats_columns
from hudisql.metadata.config import (
    completed_partitions,
    has_metadata_table,
    inflight_partitions,
    load_index_definitions,
)
from hudisql.metadata.partitions import MetadataPartitionType as T
from hudisql.metadata.records import ColumnRange
from hudisql.metadata.row_changes import RowChanges
from hudisql.metadata.services import covered_by_service, rebuild_without, run_metadata_services
from hudisql.metadata.table import MetadataTable
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Instant
from hudisql.table.format.properties import WRITABLE_VERSIONS
from hudisql.table.table import HudiTable
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.table_service import StepHook, no_step

__all__ = ["MetadataTableParticipant", "file_stats_columns", "participants_for",
           "row_change_columns"]


class MetadataTableParticipant:
    """Writes each data commit's metadata deltacommit; rolls it back with the data instant.

    Args:
        changes: per ``(partition, file id)`` the commit touches, its rows before and after
            (:class:`RowChanges`), when the writer computed them on its executors; without
            them the record and secondary index updates read the touched slices.
        file_stats: per written file (relative path), its column ranges, when the writer
            computed them (:func:`stats_columns`); else the column and partition stats
            read the files.
        options: the writer's options; ``hoodie.metadata.compact.max.delta.commits`` and
            ``hoodie.metadata.log.compaction.*`` say when the metadata table compacts
            itself (``hudisql.metadata.services``).
        on_service_step: the step hook of those services (tests inject failures there).
    """

    def __init__(self, changes: Mapping[tuple[str, str], RowChanges] | None = None,
                 file_stats: Mapping[str, Sequence[ColumnRange]] | None = None,
                 options: Mapping[str, str] | None = None,
                 on_service_step: StepHook = no_step) -> None:
        self.changes = changes
        self.file_stats = file_stats
        #: The writer's options: they say when the metadata table compacts itself.
        self.options = dict(options or {})
        #: Step hook of the metadata table's own services (tests inject failures here).
        self.on_service_step = on_service_step

    def _services(self, table: HudiTable) -> None:
        """The metadata table's own services, before this commit's deltacommit (as Hudi
        runs them at the start of each write): see ``hudisql.metadata.services``."""
        run_metadata_services(table, self.options, self.on_service_step)

    def on_commit(self, table: HudiTable, instant: Instant, metadata: CommitMetadata) -> None:
        """Write the deltacommit ``instant.timestamp`` to every built and being-built partition.

        Raises:
            MetadataTableError: a partition the table config names has no file groups
                (the metadata table is damaged: drop the index and create it again).
        """
        partitions = self._partitions(table, instant)
        if not partitions:
            return
        updates = commit_updates(table, instant.timestamp, metadata, partitions,
                                 changes=self.changes, file_stats=self.file_stats)
        self._services(table)
        MetadataTable(table).write_deltacommit(instant.timestamp, updates)

    def on_clean(self, table: HudiTable, instant: Instant,
                 deleted: Mapping[str, Sequence[str]]) -> None:
        """Write the clean's deltacommit: its deleted files leave ``files``, ``column_stats``,
        ``bloom_filters`` and ``partition_stats`` (record and secondary indexes point at
        file groups, which a clean keeps). Idempotent: a retried clean rewrites it."""
        partitions = self._partitions(table, instant)
        if partitions:
            self._services(table)
            MetadataTable(table).write_deltacommit(
                instant.timestamp, deleted_files_updates(table, deleted, partitions))

    def _partitions(self, table: HudiTable, instant: Instant) -> list[str]:
        """The built and being-built partitions (each must have its file groups)."""
        props = table.properties  # loaded under the lock
        partitions = sorted(set(completed_partitions(props)) | set(inflight_partitions(props)))
        if not partitions:
            return []
        mdt = MetadataTable(table)
        missing = [p for p in partitions if not mdt.file_group_ids(p)]
        if missing:
            raise MetadataTableError(
                f"table {table.name}: hoodie.properties lists metadata partitions {missing} "
                f"but {mdt.storage.base_uri} has no file groups for them; instant "
                f"{instant.timestamp} is not committed. Drop those indexes (DROP INDEX) and "
                "create them again"
            )
        return partitions

    def on_rollback(self, table: HudiTable, instant: Instant) -> None:
        """Remove the metadata deltacommit ``instant.timestamp`` (idempotent).

        When a metadata compaction or log compaction merged it already (a completed write
        rolled back later), the built partitions are rebuilt without the instant instead.
        """
        if table.properties.version in WRITABLE_VERSIONS and MetadataTable.exists_for(table):
            mdt = MetadataTable(table)
            if covered_by_service(mdt, instant.timestamp):
                rebuild_without(table, instant.timestamp)
            else:
                mdt.rollback(instant.timestamp)


def participants_for(table: HudiTable,
                     options: Mapping[str, str] | None = None) -> list[CommitParticipant]:
    """The participants a commit on ``table`` needs: the metadata table's when it has one.

    Tables of the versions hudisql writes (6, 8, 9) get one. ``options`` are the writer's
    (``hoodie.metadata.compact.max.delta.commits``, ``hoodie.metadata.log.compaction.*``).
    """
    if table.properties.version not in WRITABLE_VERSIONS:
        return []
    if has_metadata_table(table.properties) or MetadataTable.exists_for(table):
        return [MetadataTableParticipant(options=options)]
    return []


def file_stats_columns(table: HudiTable) -> tuple[str, ...] | None:
    """The columns a writer computes each log file's ranges of (column and partition
    stats), or None when the table keeps neither (built or being built)."""
    props = table.properties
    partitions = sorted(set(completed_partitions(props)) | set(inflight_partitions(props)))
    columns = stats_columns(table, partitions) if partitions else []
    return tuple(columns) if columns else None


def row_change_columns(table: HudiTable) -> tuple[str, ...] | None:
    """The secondary index columns a writer computes :class:`RowChanges` for, or None when
    the table keeps no record or secondary index (built or being built): nothing to compute.
    """
    props = table.properties
    partitions = sorted(set(completed_partitions(props)) | set(inflight_partitions(props)))
    if not partitions:
        return None
    defs = load_index_definitions(table)
    specs = [index_spec(table, p, defs) for p in partitions]
    if not any(s.kind in (T.RECORD_INDEX, T.SECONDARY_INDEX) for s in specs):
        return None
    return tuple(sorted({s.source_fields[0] for s in specs if s.kind == T.SECONDARY_INDEX}))
