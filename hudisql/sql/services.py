"""Executors of the table service statements: SCHEDULE/RUN/SHOW (LOG) COMPACTION and the
``run_compaction``, ``show_compaction``, ``run_log_compaction``, ``show_log_compaction`` and
``run_clean`` procedures. Each builds the table's :class:`Maintenance` facade (the same one
``handle.maintenance`` is) with a Spark runner and calls it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from hudisql.parser.clustering import RunClustering, ShowClustering
from hudisql.parser.services import ShowTableService, TableService
from hudisql.sql.frames import rows_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.services.maintenance import Maintenance
    from hudisql.sql.router import StatementContext

#: Hudi's ``run_compaction`` / ``show_compaction`` result columns.
SERVICE_COLUMNS = (("timestamp", "STRING"), ("operation_size", "INT"), ("state", "STRING"))
#: Hudi's ``run_clean`` result columns (the ones hudisql fills).
CLEAN_COLUMNS = (("start_clean_time", "STRING"), ("time_taken_in_millis", "BIGINT"),
                 ("total_files_deleted", "INT"), ("earliest_commit_to_retain", "STRING"))

_NAMES = {"compaction": "COMPACTION", "log_compaction": "LOG COMPACTION", "clean": "CLEAN"}


def maintenance(ctx: StatementContext,
                command: TableService | ShowTableService | RunClustering | ShowClustering,
                statement: str | None = None) -> Maintenance:
    """The facade over the statement's table (by name, in a catalog write id when managed);
    ``statement`` names the service in errors (default: the command's own service)."""
    from hudisql.services.maintenance import Maintenance, metadata_participants
    from hudisql.services.runner import SparkRunner

    bracket: Callable[[], AbstractContextManager[object]] = nullcontext
    if command.table is not None:
        entry = ctx.require(command.table, statement or _NAMES[getattr(command, "service", "")])
        path = entry.location
        if entry.managed:
            def bracket() -> AbstractContextManager[object]:
                return ctx.catalog.write_transaction(entry.name)
    else:
        assert command.path is not None
        path = command.path
    return Maintenance(path, ctx.session.write_options(path), SparkRunner(ctx.spark),
                       bracket=bracket, participants=metadata_participants)


def table_service(ctx: StatementContext, command: TableService) -> DataFrame:
    """SCHEDULE/RUN (LOG) COMPACTION, CALL run_compaction/run_log_compaction/run_clean."""
    facade = maintenance(ctx, command)
    if command.service == "clean":
        done = facade.run_clean(**command.options)
        rows = [] if done is None else [(done.start_clean_time, done.time_taken_in_millis,
                                         done.total_files_deleted,
                                         done.earliest_commit_to_retain)]
        return rows_frame(ctx.spark, rows, CLEAN_COLUMNS)
    log = command.service == "log_compaction"
    schedule = facade.schedule_log_compaction if log else facade.schedule_compaction
    run = facade.run_log_compaction if log else facade.run_compaction
    if command.operation == "schedule":
        instant = schedule()
    else:
        if command.operation == "execute" and command.instant is None and not log:
            result = run()  # the oldest pending plan (none: a new one)
        else:
            result = run(command.instant)
        instant = None if result is None else result.instant
    if instant is None:
        return rows_frame(ctx.spark, [], SERVICE_COLUMNS)
    shown = (facade.show_log_compaction if log else facade.show_compaction)(limit=1_000_000)
    rows = [tuple(r.values()) for r in shown.to_pylist() if r["timestamp"] == instant]
    return rows_frame(ctx.spark, rows, SERVICE_COLUMNS)


def show_table_service(ctx: StatementContext, command: ShowTableService) -> DataFrame:
    """SHOW (LOG) COMPACTION, CALL show_compaction/show_log_compaction."""
    facade = maintenance(ctx, command)
    log = command.service == "log_compaction"
    shown = (facade.show_log_compaction if log else facade.show_compaction)(command.limit)
    return rows_frame(ctx.spark, [tuple(r.values()) for r in shown.to_pylist()],
                      SERVICE_COLUMNS)
