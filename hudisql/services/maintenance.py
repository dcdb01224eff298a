"""``handle.maintenance``: one facade over the table services, used by Python and SQL alike.

Every method reloads the table, runs the service with the session's options, its runner
(Spark: one task per file slice) and the commit participants of the table (the metadata
table, when it has one), inside the bracket the caller gives (a catalog write id for a
managed table), and returns plain results: instant times, :class:`ServiceResult`,
``pyarrow`` tables of Hudi's ``show_compaction`` columns, :class:`CleanMetadata`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudisql.metadata.participant import participants_for
from hudisql.services import archive, clean, clustering, compaction, log_compaction
from hudisql.services.plans import ServiceResult, show_service_plans
from hudisql.services.runner import LocalRunner, SliceRunner
from hudisql.table.format.instant import Action
from hudisql.table.format.service_plans import CleanMetadata
from hudisql.table.table import HudiTable

__all__ = ["Maintenance", "metadata_participants", "no_participants"]


def no_participants(table: HudiTable) -> Sequence[Any]:
    """No commit participants (a table without a metadata table)."""
    return ()


def metadata_participants(table: HudiTable) -> Sequence[Any]:
    """The table's commit participants: its metadata table's, when it has one."""
    return participants_for(table)


@dataclass
class Maintenance:
    """Log compaction, compaction, clustering and clean of the table at ``path``."""

    path: str
    options: Mapping[str, str] = field(default_factory=dict)
    runner: SliceRunner = field(default_factory=LocalRunner)
    bracket: Callable[[], AbstractContextManager[object]] = nullcontext
    #: Every service commit keeps the metadata table exact (tests may pass no_participants).
    participants: Callable[[HudiTable], Sequence[Any]] = metadata_participants

    def _participants(self, table: HudiTable) -> Sequence[Any]:
        if self.participants is metadata_participants:  # with this session's options
            return participants_for(table, self.options)
        return self.participants(table)

    def open_table(self) -> HudiTable:
        """The table, freshly loaded."""
        return HudiTable.open(self.path)

    def _merged(self, options: Mapping[str, str]) -> dict[str, str]:
        return {**self.options, **options}

    def schedule_log_compaction(self, **options: str) -> str | None:
        """Plan a log compaction; returns its instant time, or None when no slice qualifies.

        Raises:
            TableServiceError: a copy-on-write table, or bad settings.
        """
        table = self.open_table()
        with self.bracket():
            return log_compaction.schedule_log_compaction(
                table, self._merged(options), runner=self.runner,
                participants=self._participants(table))

    def run_log_compaction(self, instant: str | None = None, **options: str) -> (
            ServiceResult | None):
        """Run the log compaction planned at ``instant`` (default: plan one and run it).

        Returns:
            What it did, or None when no slice qualified.

        Raises:
            TableServiceError: a copy-on-write table, or ``instant`` is not a pending plan.
        """
        table = self.open_table()
        with self.bracket():
            return log_compaction.run_log_compaction(
                table, instant, self._merged(options), runner=self.runner,
                participants=self._participants(table))

    def show_log_compaction(self, limit: int = 20) -> pa.Table:
        """The log compaction instants, newest first: timestamp, operation_size, state."""
        return show_service_plans(self.open_table(), Action.LOGCOMPACTION, limit)

    def schedule_compaction(self, **options: str) -> str | None:
        """Plan a compaction of every slice with logs; returns its instant time (or None).

        Raises:
            TableServiceError: a copy-on-write table, or bad settings.
        """
        with self.bracket():
            return compaction.schedule_compaction(
                self.open_table(), self._merged(options), runner=self.runner)

    def run_compaction(self, instant: str | None = None, **options: str) -> ServiceResult | None:
        """Run the compaction planned at ``instant`` (default: the oldest pending plan, else
        a new one).

        Raises:
            TableServiceError: a copy-on-write table, or ``instant`` is not a pending plan.
        """
        table = self.open_table()
        with self.bracket():
            return compaction.run_compaction(
                table, instant, self._merged(options), runner=self.runner,
                participants=self._participants(table))

    def show_compaction(self, limit: int = 20) -> pa.Table:
        """The compaction instants, newest first: timestamp, operation_size, state."""
        return show_service_plans(self.open_table(), Action.COMPACTION, limit)

    def run_clean(self, **options: str) -> CleanMetadata | None:
        """Delete the file slices no reader as of a retained instant needs.

        Returns:
            The clean's metadata, or None when there was nothing to delete.

        Raises:
            TableServiceError: an unsupported policy, or settings that would delete
                latest slices (``hoodie.cleaner.commits.retained`` below 1).
        """
        table = self.open_table()
        with self.bracket():
            return clean.run_clean(table, self._merged(options),
                                   participants=self._participants(table))

    def run_archive(self, **options: str) -> archive.ArchiveResult:
        """Archive the oldest completed instants beyond ``hoodie.keep.max.commits`` (down to
        ``hoodie.keep.min.commits``), of the table and of its metadata table.

        Returns:
            What moved out of each timeline (falsy when nothing was due).

        Raises:
            TableServiceError: bad ``hoodie.keep.*`` settings.
        """
        return archive.run_archive(self.open_table(), self._merged(options))

    def schedule_clustering(self, order: Sequence[str] | None = None, layout: str | None = None,
                            **options: str) -> str | None:
        """Plan a clustering (sorted by ``order`` along ``layout``: ``linear``, ``z-order``
        or ``hilbert``); returns its instant time, or None when no group qualifies.

        Raises:
            TableServiceError: an unknown sort column or layout, bad settings, or the file
                groups are all in a pending clustering. Nothing is written then.
        """
        merged = clustering.with_sort(self._merged(options), order, layout)
        with self.bracket():
            return clustering.schedule_clustering(self.open_table(), merged,
                                                  runner=self.runner)

    def execute_clustering(self, instant: str | None = None, **options: str) -> (
            list[ServiceResult]):
        """Run the clustering planned at ``instant`` (default: every pending plan no live
        process runs, oldest first); returns what each did.

        Raises:
            TableServiceError: ``instant`` is not a pending clustering, or a write landed on
                its file groups since it was planned (the plan is dropped).
        """
        table = self.open_table()
        with self.bracket():
            return clustering.execute_clustering(
                table, instant, self._merged(options), runner=self.runner,
                participants=self._participants(table))

    def run_clustering(self, order: Sequence[str] | None = None, layout: str | None = None,
                       **options: str) -> list[ServiceResult]:
        """Finish clusterings whose process died, then plan one and run it: small file
        slices rewritten into files of the target size, ordered by ``order`` along
        ``layout`` (``linear``, ``z-order``, ``hilbert``).

        Returns:
            What each completed clustering did (empty: nothing qualified).

        Raises:
            TableServiceError: see :meth:`schedule_clustering` and
                :meth:`execute_clustering`.
        """
        table = self.open_table()
        merged = clustering.with_sort(self._merged(options), order, layout)
        with self.bracket():
            return clustering.run_clustering(table, merged, runner=self.runner,
                                             participants=self._participants(table))

    def show_clustering(self, limit: int = 20) -> pa.Table:
        """The clustering instants, newest first: timestamp, input_group_size, state,
        involved_partitions."""
        return clustering.show_clustering(self.open_table(), limit)
