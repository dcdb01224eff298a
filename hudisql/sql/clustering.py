"""Executors of the clustering statements: (RUN | SCHEDULE) CLUSTERING, SHOW CLUSTERING, and
the ``run_clustering`` / ``show_clustering`` procedures. Each calls the table's
:class:`Maintenance` facade (the same one ``handle.maintenance`` is) with a Spark runner."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hudisql.parser.clustering import RunClustering, ShowClustering
from hudisql.parser.commands import Command
from hudisql.sql.frames import rows_frame
from hudisql.sql.services import maintenance

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.services.maintenance import Maintenance
    from hudisql.sql.router import StatementContext

__all__ = ["CLUSTERING_COLUMNS", "EXECUTORS", "run_clustering", "show_clustering"]

#: Hudi's ``run_clustering`` / ``show_clustering`` result columns.
CLUSTERING_COLUMNS = (("timestamp", "STRING"), ("input_group_size", "INT"), ("state", "STRING"),
                      ("involved_partitions", "STRING"))


def _row(found: dict[str, object], partitions: bool) -> tuple[object, ...]:
    if not partitions:
        found = {**found, "involved_partitions": "*"}
    return tuple(found.values())


def _rows(facade: Maintenance, instants: list[str], partitions: bool) -> list[
        tuple[object, ...]]:
    shown = facade.show_clustering(limit=1_000_000).to_pylist()
    return [_row(r, partitions) for i in instants for r in shown if r["timestamp"] == i]


def run_clustering(ctx: StatementContext, command: RunClustering) -> DataFrame:
    """(RUN | SCHEDULE) CLUSTERING, CALL run_clustering: one row per clustering it planned
    or completed."""
    from hudisql.services.clustering import partitions_matching

    facade = maintenance(ctx, command, "CLUSTERING")
    options = dict(command.options)
    if command.predicate is not None:
        options.update(partitions_matching(facade.open_table(), command.predicate))
    order = list(command.order) or None
    if command.operation == "schedule":
        instant = facade.schedule_clustering(order, command.layout, **options)
        done = [] if instant is None else [instant]
    elif command.operation == "execute":
        results = []
        for instant in command.instants or (None,):
            results += facade.execute_clustering(instant, **options)
        done = [r.instant for r in results]
    else:
        done = [r.instant for r in facade.run_clustering(order, command.layout, **options)]
    return rows_frame(ctx.spark, _rows(facade, done, command.show_partitions),
                      CLUSTERING_COLUMNS)


def show_clustering(ctx: StatementContext, command: ShowClustering) -> DataFrame:
    """SHOW CLUSTERING, CALL show_clustering."""
    shown = maintenance(ctx, command, "CLUSTERING").show_clustering(command.limit)
    return rows_frame(ctx.spark, [_row(r, command.show_partitions) for r in shown.to_pylist()],
                      CLUSTERING_COLUMNS)


EXECUTORS: dict[type[Command], Callable[[StatementContext, Any], DataFrame]] = {
    RunClustering: run_clustering, ShowClustering: show_clustering}
