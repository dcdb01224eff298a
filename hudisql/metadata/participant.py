"""Keeping the metadata table exact on every commit: the commit participant of the seam.

The commit protocol (``hudisql.txn``) calls each participant under the table lock, after
conflict resolution and before the data instant completes (``on_commit``), and when it
rolls a data instant back (``on_rollback``). :class:`MetadataTableParticipant` writes the
metadata deltacommit with the same instant time to every built and every being-built
metadata partition (RFC-45: writers look for pending indexing before they commit), and
undoes it on rollback. :func:`participants_for` is what callers pass to a transaction.
"""

from __future__ import annotations

from collections.abc import Mapping

from hudisql.errors import MetadataTableError
from hudisql.metadata.commit_update import commit_updates
from hudisql.metadata.config import completed_partitions, has_metadata_table, inflight_partitions
from hudisql.metadata.row_changes import RowChanges
from hudisql.metadata.table import MetadataTable
from hudisql.table.commit_metadata import CommitMetadata
from hudisql.table.instant import Instant
from hudisql.table.properties import WRITE_VERSION
from hudisql.table.table import HudiTable
from hudisql.txn.participant import CommitParticipant

__all__ = ["MetadataTableParticipant", "participants_for"]


class MetadataTableParticipant:
    """Writes each data commit's metadata deltacommit; rolls it back with the data instant.

    Args:
        changes: per ``(partition, file id)`` the commit touches, its rows before and after
            (:class:`RowChanges`), when the writer computed them on its executors; without
            them the record and secondary index updates read the touched slices.
    """

    def __init__(self, changes: Mapping[tuple[str, str], RowChanges] | None = None) -> None:
        self.changes = changes

    def on_commit(self, table: HudiTable, instant: Instant, metadata: CommitMetadata) -> None:
        """Write the deltacommit ``instant.timestamp`` to every built and being-built partition.

        Raises:
            MetadataTableError: a partition the table config names has no file groups
                (the metadata table is damaged: drop the index and create it again).
        """
        props = table.properties  # the transaction loaded it under the lock
        partitions = sorted(set(completed_partitions(props)) | set(inflight_partitions(props)))
        if not partitions:
            return
        mdt = MetadataTable(table)
        missing = [p for p in partitions if not mdt.file_group_ids(p)]
        if missing:
            raise MetadataTableError(
                f"table {table.name}: hoodie.properties lists metadata partitions {missing} "
                f"but {mdt.storage.base_uri} has no file groups for them; instant "
                f"{instant.timestamp} is not committed. Drop those indexes (DROP INDEX) and "
                "create them again"
            )
        updates = commit_updates(table, instant.timestamp, metadata, partitions,
                                 changes=self.changes)
        mdt.write_deltacommit(instant.timestamp, updates)

    def on_rollback(self, table: HudiTable, instant: Instant) -> None:
        """Remove the metadata deltacommit ``instant.timestamp`` (idempotent)."""
        if table.properties.version == WRITE_VERSION and MetadataTable.exists_for(table):
            MetadataTable(table).rollback(instant.timestamp)


def participants_for(table: HudiTable) -> list[CommitParticipant]:
    """The participants a commit on ``table`` needs: the metadata table's when it has one.

    Only version-6 tables (the ones hudisql writes) get one.
    """
    if table.properties.version != WRITE_VERSION:
        return []
    if has_metadata_table(table.properties) or MetadataTable.exists_for(table):
        return [MetadataTableParticipant()]
    return []
