"""Commit participants: what else a commit writes under the table lock (the metadata table).

A :class:`CommitParticipant` is called by :class:`~hudisql.txn.transaction.Transaction`
after conflict resolution and the schema check, under the table lock, before the data
instant completes; and by :mod:`hudisql.txn.rollback` whenever a data instant is rolled
back. Callers pass the participants a table needs (``hudisql.metadata.participants_for``);
nothing registers itself on import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Instant
from hudisql.table.table import HudiTable

__all__ = ["CleanParticipant", "CommitParticipant"]


class CommitParticipant(Protocol):
    """Writes alongside a data commit, and undoes it when the data instant is rolled back."""

    def on_commit(self, table: HudiTable, instant: Instant, metadata: CommitMetadata) -> None:
        """Called under the table lock after conflict resolution, before the data instant
        completes; raising aborts the commit (the data instant is rolled back)."""

    def on_rollback(self, table: HudiTable, instant: Instant) -> None:
        """Called (under the lock) when a data instant is rolled back, completed or not;
        undoes what on_commit wrote for that instant time (idempotent)."""


@runtime_checkable
class CleanParticipant(Protocol):
    """A participant that also records a clean's deleted files (a clean has no commit
    metadata, so :meth:`CommitParticipant.on_commit` does not fit it)."""

    def on_clean(self, table: HudiTable, instant: Instant,
                 deleted: Mapping[str, Sequence[str]]) -> None:
        """Called under the table lock after the clean deleted ``deleted`` (data partition ->
        file names), before the clean instant completes; idempotent (a clean that died is
        finished, and this called again, by the next one)."""
