"""Executors of the index statements and procedures: CREATE / DROP / SHOW / REFRESH INDEX,
``CALL run_indexer``, ``CALL show_metadata_table_*``, ``CALL validate_metadata_table`` and
``CALL show_data_skipping``.

Each one calls the table handle's ``indexes`` facade (one implementation, two doors). An
error names the statement's position, the table and the index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from hudisql.errors import HudiSqlError
from hudisql.parser import commands as c
from hudisql.sql.frames import rows_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.metadata.skipping import SkippingResult
    from hudisql.services.indexes import TableIndexes
    from hudisql.sql.router import StatementContext

SHOW_INDEXES_COLUMNS = (("index_name", "STRING"), ("index_type", "STRING"),
                        ("col_name", "STRING"), ("state", "STRING"),
                        ("metadata_partition", "STRING"))
RESULT_COLUMNS = (("result", "BOOLEAN"), ("instant_time", "STRING"))


@contextmanager
def _positioned(ctx: StatementContext, what: str) -> Iterator[None]:
    """Re-raise a hudisql error with the statement's kind and position in front."""
    try:
        yield
    except HudiSqlError as exc:
        where = f"{what} at line {ctx.statement.line}, column {ctx.statement.column}"
        if str(exc).startswith(where):
            raise
        try:
            positioned = type(exc)(f"{where}: {exc}")
        except TypeError:  # an error class with other constructor arguments: keep it
            exc.add_note(where)
            raise exc from None
        raise positioned.with_traceback(exc.__traceback__) from None


def _indexes(ctx: StatementContext, table: c.TableName, what: str) -> TableIndexes:
    """The indexes facade of the hudi table ``table`` (a clear error when it is none)."""
    from hudisql.services.indexes import TableIndexes

    entry = ctx.require(table, what)
    session = ctx.session
    return TableIndexes(entry.location, session.write_options(entry.location, in_catalog=True),
                        session.spark, on_progress=session.index_progress)


def create_index(ctx: StatementContext, command: c.CreateIndex) -> DataFrame:
    """CREATE INDEX: build the index now (RFC-45), waiting while it catches up."""
    what = f"CREATE INDEX {command.name}"
    with _positioned(ctx, what):
        indexes = _indexes(ctx, command.table, what)
        options = dict(command.options)
        for column in command.columns:
            options.update(column.options)
        done = indexes.create(command.name, [col.name for col in command.columns],
                              command.using, options, if_not_exists=command.if_not_exists)
    return rows_frame(ctx.spark, [(done is not None, None)], RESULT_COLUMNS)


def drop_index(ctx: StatementContext, command: c.DropIndex) -> DataFrame:
    """DROP INDEX: remove the index's metadata partition and definition."""
    what = f"DROP INDEX {command.name}"
    with _positioned(ctx, what):
        dropped = _indexes(ctx, command.table, what).drop(command.name,
                                                          if_exists=command.if_exists)
    return rows_frame(ctx.spark, [(dropped, None)], RESULT_COLUMNS)


def show_indexes(ctx: StatementContext, command: c.ShowIndexes) -> DataFrame:
    """SHOW INDEXES: one row per index, built or building."""
    with _positioned(ctx, "SHOW INDEXES"):
        rows = [i.as_row() for i in _indexes(ctx, command.table, "SHOW INDEXES").list()]
    return rows_frame(ctx.spark, rows, SHOW_INDEXES_COLUMNS)


def refresh_index(ctx: StatementContext, command: c.RefreshIndex) -> DataFrame:
    """REFRESH INDEX: rebuild the index from the data table."""
    what = f"REFRESH INDEX {command.name}"
    with _positioned(ctx, what):
        _indexes(ctx, command.table, what).refresh(command.name)
    return rows_frame(ctx.spark, [(True, None)], RESULT_COLUMNS)


def run_indexer(ctx: StatementContext, command: c.RunIndexer) -> DataFrame:
    """CALL run_indexer: Hudi's HoodieIndexer modes."""
    with _positioned(ctx, "CALL run_indexer"):
        done = _indexes(ctx, command.table, "CALL run_indexer").run_indexer(
            command.mode, command.index_types, command.instant_time)
    return rows_frame(ctx.spark, [(True, ",".join(done) or None)], RESULT_COLUMNS)


def show_metadata_table(ctx: StatementContext, command: c.ShowMetadataTable) -> DataFrame:
    """CALL show_metadata_table_partitions | _files | _column_stats."""
    from hudisql.services import metadata_inspect

    what = f"CALL show_metadata_table_{command.what}"
    with _positioned(ctx, what):
        location = ctx.require(command.table, what).location
        show: Callable[..., tuple[list[tuple[Any, ...]], tuple[tuple[str, str], ...]]] = {
            "partitions": metadata_inspect.partitions,
            "files": metadata_inspect.files,
            "column_stats": metadata_inspect.column_stats,
        }[command.what]
        rows, columns = show(location, command.partition, command.columns)
    return rows_frame(ctx.spark, rows, columns)


def validate_metadata_table(ctx: StatementContext, command: c.ValidateMetadataTable
                            ) -> DataFrame:
    """CALL validate_metadata_table: every difference between the built partitions and the
    data table (no rows: the metadata table is exact)."""
    from hudisql.services import metadata_inspect

    what = "CALL validate_metadata_table"
    with _positioned(ctx, what):
        rows, columns = metadata_inspect.validate(ctx.require(command.table, what).location)
    return rows_frame(ctx.spark, rows, columns)


#: ``CALL show_data_skipping``'s columns: one row per index step, then the totals.
DATA_SKIPPING_COLUMNS = (("index_name", "STRING"), ("file_slices_before", "INT"),
                         ("file_slices_after", "INT"), ("skipped", "INT"), ("note", "STRING"))
#: The index name of the totals row.
TOTAL = "total"


def data_skipping_rows(result: SkippingResult, enabled: bool = True
                       ) -> list[tuple[str, int, int, int, str | None]]:
    """The rows of ``CALL show_data_skipping`` for one result: each step, then the totals."""
    rows = [(s.index, s.before, s.after, s.before - s.after, s.note or None)
            for s in result.steps]
    if not result.steps:
        note = "no index applies to this filter"
    elif not enabled:
        note = "hoodie.enable.data.skipping is false in this session: reads skip nothing"
    else:
        note = None
    rows.append((TOTAL, result.total, len(result.kept), result.skipped, note))
    return rows


def show_data_skipping(ctx: StatementContext, command: c.ShowDataSkipping) -> DataFrame:
    """CALL show_data_skipping: which file slices each index keeps for the filter."""
    from hudisql.metadata.skipping import ENABLE_DATA_SKIPPING, data_skipping
    from hudisql.table.table import HudiTable

    what = "CALL show_data_skipping"
    with _positioned(ctx, what):
        if command.table is not None:
            location = ctx.require(command.table, what).location
        else:
            assert command.path is not None
            location = command.path
        zone = ctx.spark.conf.get("spark.sql.session.timeZone", None)
        result = data_skipping(HudiTable.open(location), command.filter, command.as_of,
                               time_zone=zone)
    # The session's option, else ``SET hoodie.enable.data.skipping=...`` in Spark's conf.
    setting = (ctx.session.options.get(ENABLE_DATA_SKIPPING)
               or ctx.spark.conf.get(ENABLE_DATA_SKIPPING, None) or "true")
    return rows_frame(ctx.spark, data_skipping_rows(result, setting.strip().lower() != "false"),
                      DATA_SKIPPING_COLUMNS)


EXECUTORS: dict[type[c.Command], Callable[[StatementContext, Any], DataFrame]] = {
    c.CreateIndex: create_index,
    c.DropIndex: drop_index,
    c.ShowIndexes: show_indexes,
    c.RefreshIndex: refresh_index,
    c.RunIndexer: run_indexer,
    c.ShowMetadataTable: show_metadata_table,
    c.ValidateMetadataTable: validate_metadata_table,
    c.ShowDataSkipping: show_data_skipping,
}
