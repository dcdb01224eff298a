"""One executor per command kind, and the pass-through path (with SHOW TABLES, DESCRIBE,
SHOW PARTITIONS, SHOW TBLPROPERTIES and ANALYZE TABLE answered from the catalog and the
table when they are about hudi tables)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import TokenType

from hudisql.errors import HudiSqlError
from hudisql.parser import commands as c
from hudisql.parser.services import ShowTableService, TableService
from hudisql.sql import (
    clustering,
    ddl,
    dml,
    index,
    names,
    reads,
    services,
    table_statements,
    upgrade,
)
from hudisql.sql.frames import rows_frame
from hudisql.sql.timeline import (
    COMMITS_COLUMNS,
    TIMELINE_COLUMNS,
    commit_rows,
    timeline_rows,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from hudisql.sql.router import Executor, StatementContext
    from hudisql.table.table import HudiTable

create_table = ddl.create_table


def pass_through(ctx: StatementContext) -> DataFrame:
    """Run a statement that is not hudisql's: SHOW TABLES and DESCRIBE of a hudi table are
    answered with the catalog's view, everything else by ``spark.sql(original text)``, with
    time travel and ``hudi_table_changes`` on hudi tables rewritten
    (:mod:`hudisql.sql.time_travel`) and each hudi table read through its own pruned view
    (:mod:`hudisql.sql.reads`)."""
    text = ctx.statement.text
    show = _show_tables_form(text)
    if show is not None:
        return ddl.show_tables(ctx, *show)
    if ctx.entries:
        answered = table_statements.answer(ctx)
        if answered is not None:
            return answered
    if ctx.entries and _starts_with_describe(text):
        try:
            tree = sqlglot.parse_one(text, read="spark")
        except (ParseError, TokenError):
            tree = None
        if (isinstance(tree, exp.Describe) and isinstance(tree.this, exp.Table)
                and not tree.args.get("partition") and not tree.expressions):
            table = tree.this
            parts = tuple(p for p in (table.catalog, table.db, table.name) if p)
            entry = ctx.entry(c.TableName(parts))
            if entry is not None:
                style = str(tree.args.get("style") or "").upper()
                return ddl.describe(ctx, entry, extended=style in ("EXTENDED", "FORMATTED"))
    return reads.sql(ctx, text)


def _starts_with_describe(text: str) -> bool:
    return bool(_DESCRIBE.match(_strip_leading_comments(text)))


_DESCRIBE = re.compile(r"(?i)^(DESC|DESCRIBE)\b")
_COMMENTS = re.compile(r"^(\s+|--[^\n]*(\n|$)|/\*.*?\*/)+", re.S)


def _strip_leading_comments(text: str) -> str:
    match = _COMMENTS.match(text)
    return text[match.end():] if match else text


def _show_tables_form(text: str) -> tuple[str | None, str | None] | None:
    """``(database, pattern)`` for ``SHOW TABLES [FROM|IN db] [[LIKE] 'pattern']``, else None."""
    if not re.match(r"(?i)^SHOW\s+TABLES\b", _strip_leading_comments(text)):
        return None
    words = names.words(text)[2:]
    database = pattern = None
    if len(words) >= 2 and words[0].text.upper() in ("FROM", "IN"):
        database = words[1].text
        words = words[2:]
    if words and words[0].text.upper() == "LIKE":
        words = words[1:]
    if len(words) == 1 and words[0].token_type == TokenType.STRING:
        pattern = words[0].text
        words = []
    return (database, pattern) if not words else None


def run_command(ctx: StatementContext, command: c.Command) -> DataFrame:
    """Run a hudisql command with its executor.

    Raises:
        HudiSqlError: a command kind without an executor (a parser newer than the router).
    """
    executor = EXECUTORS.get(type(command))
    if executor is None:
        raise HudiSqlError(
            f"{type(command).__name__} statements are parsed but hudisql cannot run them yet; "
            "upgrade hudisql")
    return executor(ctx, command)


def _core(ctx: StatementContext, table: c.TableName | None, path: str | None) -> HudiTable:
    from hudisql.table.table import HudiTable

    if path is not None:
        return HudiTable.open(path)
    assert table is not None
    return HudiTable.open(ctx.require(table, "SHOW TIMELINE").location)


def show_timeline(ctx: StatementContext, command: c.ShowTimeline) -> DataFrame:
    """SHOW TIMELINE / CALL show_timeline: one row per instant, newest first."""
    table = _core(ctx, command.table, command.path)
    rows = [r.as_tuple() for r in timeline_rows(table, command.limit, command.archived)]
    return rows_frame(ctx.spark, rows, TIMELINE_COLUMNS)


def show_commits(ctx: StatementContext, command: c.ShowCommits) -> DataFrame:
    """CALL show_commits: the newest completed writes with their statistics."""
    table = _core(ctx, command.table, None)
    found = commit_rows(table, command.limit, command.archived, command.start_ts,
                        command.end_ts)
    return rows_frame(ctx.spark, found, COMMITS_COLUMNS)


def show_log_blocks(ctx: StatementContext, command: c.ShowLogBlocks) -> DataFrame:
    """CALL show_log_blocks: every log block of the latest file slices and its verdict."""
    from hudisql.table.read.reconcile import show_log_blocks as log_blocks

    blocks = log_blocks(_core(ctx, command.table, None), command.file_id)
    return ctx.spark.createDataFrame(blocks.to_pandas(), schema=_spark_schema(blocks))


def _spark_schema(table: pa.Table) -> StructType:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(table.schema)


def rollback_to_instant(ctx: StatementContext, command: c.RollbackToInstant) -> DataFrame:
    """CALL rollback_to_instant: roll back a failed write, or the latest completed one."""
    entry = ctx.require(command.table, "rollback_to_instant")
    done = dml.rollback(ctx, entry, command.instant_time)
    return rows_frame(ctx.spark, [(True, done)],
                      (("rollback_result", "BOOLEAN"), ("rollback_instant", "STRING")))


def refuse_unparsed(ctx: StatementContext, command: c.Unparsed) -> DataFrame:
    """A statement hudisql's grammar cannot read, on a hudi table: its parse error.

    Raises:
        SqlParseError: where and why the statement does not parse.
    """
    raise command.error


def _then_inline_services(executor: Executor) -> Executor:
    """``executor``, then the inline table services the session's options turn on."""
    def run(ctx: StatementContext, command: c.Command) -> DataFrame:
        result = executor(ctx, command)
        table = getattr(command, "table", None)
        if isinstance(table, c.TableName) and ctx.entry(table) is not None:
            from hudisql.services.inline import run_inline_services

            run_inline_services(services.maintenance(ctx, TableService(
                "log_compaction", "run", table)), ctx.session.background)
        return result
    return run


EXECUTORS: dict[type[c.Command], Executor] = {
    c.Unparsed: refuse_unparsed,
    c.ShowTimeline: show_timeline,
    c.ShowCommits: show_commits,
    c.RollbackToInstant: rollback_to_instant,
    c.ShowLogBlocks: show_log_blocks,
    c.DropTable: ddl.drop_table,
    c.AlterTableRename: ddl.rename_table,
    c.AlterTableAddColumns: ddl.add_columns,
    c.Insert: _then_inline_services(dml.insert),
    c.Update: _then_inline_services(dml.update),
    c.Delete: _then_inline_services(dml.delete),
    c.Merge: _then_inline_services(dml.merge),
    TableService: services.table_service,
    ShowTableService: services.show_table_service,
    **index.EXECUTORS,
    **clustering.EXECUTORS,
    **upgrade.EXECUTORS,
}
