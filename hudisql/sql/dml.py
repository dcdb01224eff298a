"""DML on hudi tables: INSERT INTO, UPDATE, DELETE, MERGE INTO, and rollback.

UPDATE, DELETE and MERGE translate the parsed statement into calls of the Python DML API
(:mod:`hudisql.write.dml`), which SQL shares with :class:`~hudisql.session.HudiTableHandle`:
Spark evaluates every SQL fragment (source queries, SET values, conditions, the MERGE
join); the rows it produces are written by the Spark write pipeline
(:class:`hudisql.write.pipeline.SparkWriter`), one commit per statement. A managed table's
commit is bracketed by a catalog write id, so other sessions' caches see it. A write that
fails is rolled back by the pipeline before the error is raised, so the table reads as it
did before the statement.

``INSERT OVERWRITE`` is a replacecommit, as Spark means it: with a ``PARTITION`` clause,
or under ``spark.sql.sources.partitionOverwriteMode=dynamic``, the partitions the rows go
to are replaced; otherwise the whole table. A MERGE's updates, inserts and deletes are one
upsert commit (deleted rows flagged ``_hoodie_is_deleted``), so it is atomic.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from hudisql.catalog import TableEntry
from hudisql.errors import WriteError
from hudisql.parser import commands as c
from hudisql.sql import reads
from hudisql.sql.frames import affected_frame
from hudisql.sql.spark_tables import quote_identifier, spark_name
from hudisql.table.format.schema import META_COLUMNS
from hudisql.write import dml as api
from hudisql.write.dml import data_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.sql.router import StatementContext
    from hudisql.table.table import HudiTable

__all__ = ["INSERT_OPERATION", "data_columns", "delete", "dml_table", "insert", "merge",
           "rollback", "update", "write_frame"]

#: The session or table option choosing what INSERT INTO does (as Hudi's Spark SQL names it).
INSERT_OPERATION = "hoodie.spark.sql.insert.into.operation"
_INSERT_OPERATIONS = {"upsert": "upsert", "insert": "insert", "bulk_insert": "insert"}
#: A USING source that is a plain (dotted) name: its last part qualifies its columns.
_PLAIN_NAME = re.compile(r"^\s*[\w`.]+\s*$")
#: The alias of a USING subquery that has none (its columns are then named unqualified).
_SOURCE_ALIAS = "__hudisql_source"
#: The prefix of the positional names an INSERT's query columns are renamed to.
_POSITION = "__hudisql_col_"


def _open(entry: TableEntry) -> HudiTable:
    from hudisql.table.table import HudiTable

    return HudiTable.open(entry.location)


def dml_table(ctx: StatementContext, entry: TableEntry) -> api.DmlTable:
    """The DML API's view of ``entry``: read through Spark's definition of the table (so
    conditions may name it), a managed table's commits bracketed by a catalog write id, and
    the router's write step hook."""
    catalog = ctx.catalog
    name = entry.name
    return api.DmlTable(
        ctx.spark, entry.location, ctx.session.write_options(entry.location, in_catalog=True),
        name=str(name),
        qualifiers=(name.table,), reader=lambda: ctx.spark.table(spark_name(name)),
        bracket=(lambda: catalog.write_transaction(name)) if entry.managed else None,
        on_step=ctx.router.on_write_step)


#: The columns Hudi drops from the query an INSERT or a CTAS writes: its meta columns and
#: the operation column (``SELECT * FROM <hudi table>`` returns them).
_QUERY_META_COLUMNS = frozenset({*META_COLUMNS, "_hoodie_operation"})


def without_meta_columns(frame: DataFrame) -> DataFrame:
    """``frame`` without Hudi's meta columns, as Hudi's INSERT and CREATE TABLE ... AS SELECT
    drop them from their query (names compared without case, as Spark resolves them)."""
    meta = [name for name in frame.columns if name.lower() in _QUERY_META_COLUMNS]
    return frame.drop(*meta) if meta else frame


def write_frame(ctx: StatementContext, entry: TableEntry, frame: DataFrame,
                operation: str) -> int:
    """Write ``frame``'s rows as one commit of the Spark write pipeline; returns the row count.

    ``operation`` is a pipeline operation (see :func:`hudisql.write.dml.write_rows`); a
    managed table's commit runs inside a catalog write id, aborted when the write fails.
    """
    return api.write_rows(dml_table(ctx, entry), frame, operation).num_affected_rows


def _operation(ctx: StatementContext, entry: TableEntry) -> str:
    value = ctx.session.options.get(INSERT_OPERATION) or entry.properties.get(
        INSERT_OPERATION, "upsert")
    found = _INSERT_OPERATIONS.get(value.strip().lower())
    if found is None:
        raise WriteError(
            f"option {INSERT_OPERATION}={value!r} is not valid for table {entry.name}; use "
            f"{', '.join(sorted(_INSERT_OPERATIONS))}"
        )
    return found


def _cast(expression: str, kind: str, name: str) -> str:
    return f"CAST(({expression}) AS {kind}) AS {quote_identifier(name)}"


def insert(ctx: StatementContext, command: c.Insert) -> DataFrame:
    """INSERT INTO t [PARTITION (...)] [(cols) | BY NAME] <query>: upsert by default.

    Raises:
        WriteError: IF NOT EXISTS (not supported), a column list that
            names unknown columns, or a query with the wrong number of columns.
    """
    entry = ctx.require(command.table, "INSERT")
    table = _open(entry)
    columns = data_columns(table)
    types = dict(columns)
    lower = {n.lower(): n for n in types}
    source = without_meta_columns(reads.sql(ctx, command.query))
    static = {p: v for p, v in command.partition if v is not None}
    for name in [*static, *command.columns]:
        if name.lower() not in lower:
            raise WriteError(
                f"INSERT INTO {entry.name}: the table has no column {name}; its columns are "
                f"{', '.join(types)}"
            )
    static = {lower[p.lower()]: v for p, v in static.items()}
    if command.by_name:
        given = [lower.get(n.lower(), n) for n in source.columns]
    elif command.columns:
        given = [lower[n.lower()] for n in command.columns]
    else:
        given = [n for n, _ in columns if n not in static]
    if len(given) != len(source.columns):
        raise WriteError(
            f"INSERT INTO {entry.name}: the query gives {len(source.columns)} columns but "
            f"{len(given)} are expected ({', '.join(given)})"
        )
    unknown = [n for n in given if n not in types]
    if unknown:
        raise WriteError(f"INSERT INTO {entry.name}: the table has no columns {unknown}")
    # Spark maps a query's columns to the table's by position (a column list: to the names
    # it lists), whatever the query calls them: duplicate and unnamed outputs (`0, 0`) too.
    # So each output is renamed to its position before it is looked up.
    positional = [f"{_POSITION}{i}" for i in range(len(source.columns))]
    source = source.toDF(*positional)
    by_target = dict(zip(given, positional, strict=True))
    select = []
    for name, kind in columns:
        if name in static:
            select.append(_cast(str(static[name]), kind, name))
        elif name in by_target:
            select.append(_cast(quote_identifier(by_target[name]), kind, name))
        else:
            select.append(_cast("NULL", kind, name))
    operation = (_overwrite_operation(ctx, table, bool(static)) if command.overwrite
                 else _operation(ctx, entry))
    count = write_frame(ctx, entry, source.selectExpr(*select), operation)
    return affected_frame(ctx.spark, count)


def _overwrite_operation(ctx: StatementContext, table: HudiTable, static_partition: bool) -> str:
    """The pipeline operation of INSERT OVERWRITE: replace the partitions written (a PARTITION
    clause, or Spark's dynamic partition overwrite mode) or the whole table."""
    if table.properties.partition_fields:
        mode = ctx.spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static") or ""
        if static_partition or mode.strip().lower() == "dynamic":
            return "insert_overwrite"
    return "insert_overwrite_table"


def update(ctx: StatementContext, command: c.Update) -> DataFrame:
    """UPDATE t SET ... [WHERE ...]: the changed rows are upserted in one commit."""
    entry = ctx.require(command.table, "UPDATE")
    values = {a.column: a.value for a in command.assignments}
    table = _pruned(ctx, entry, dml_table(ctx, entry), command.where, command.alias)
    done = api.update(table, values, command.where, alias=command.alias)
    return affected_frame(ctx.spark, done.num_affected_rows)


def delete(ctx: StatementContext, command: c.Delete) -> DataFrame:
    """DELETE FROM t [WHERE ...]: the matching rows' keys are deleted in one commit."""
    entry = ctx.require(command.table, "DELETE")
    table = _pruned(ctx, entry, dml_table(ctx, entry), command.where, command.alias)
    done = api.delete(table, command.where, alias=command.alias)
    return affected_frame(ctx.spark, done.num_affected_rows)


def _pruned(ctx: StatementContext, entry: TableEntry, table: api.DmlTable, where: str | None,
            alias: str | None) -> api.DmlTable:
    """``table`` reading its target as a SELECT by name reads it (:mod:`hudisql.sql.reads`):
    only the file slices that may hold rows matching the condition's own conjuncts, a few
    small ones on the driver with no Spark job (:mod:`hudisql.read.local`). The statement
    still applies its whole condition to the rows. Unchanged when no conjunct prunes (no
    WHERE, a subquery, a database-qualified column): Spark reads the table by name."""
    if where is None:
        return table
    qualifier = alias or entry.name.table
    found = _HudiSource(entry)
    text = (f"SELECT * FROM {spark_name(entry.name)} AS {quote_identifier(qualifier)} "
            f"WHERE {where}")
    refs = reads.scan_references(text, found.columns)
    if len(refs) != 1 or refs[0].where is None:
        return table
    conjuncts = refs[0].where

    def reader() -> DataFrame:
        from hudisql.read.frame import read_frame

        return read_frame(ctx.spark, found.table, ctx.session.options, where=conjuncts,
                          filter_rows=False).alias(qualifier)
    return dataclasses.replace(table, reader=reader)


class _HudiSource:
    """The statement's target, opened once, and its columns for the conjunct analysis."""

    def __init__(self, entry: TableEntry) -> None:
        self.table = _open(entry)
        self._columns = {n.lower() for n in self.table.schema.names}

    def columns(self, name: c.TableName) -> set[str] | None:
        """The target's columns (lower-cased); the analysed text names only the target."""
        return self._columns


def merge(ctx: StatementContext, command: c.Merge) -> DataFrame:
    """MERGE INTO t USING s ON ... WHEN [NOT] MATCHED ...: the clauses in order, each source
    row taking the first whose condition holds; updates, inserts and deletes are one
    upsert commit (deleted rows flagged ``_hoodie_is_deleted``).

    Raises:
        WriteError: ``WHEN NOT MATCHED BY SOURCE`` (not supported), an unknown column.
    """
    entry = ctx.require(command.table, "MERGE INTO")
    if any(cl.kind == "not_matched_by_source" for cl in command.clauses):
        raise WriteError(
            f"MERGE INTO {entry.name}: WHEN NOT MATCHED BY SOURCE is not supported; delete "
            "those rows with a DELETE FROM ... WHERE NOT EXISTS (...) statement"
        )
    source = reads.sql(ctx, command.source_query)
    builder = api.merge(dml_table(ctx, entry), source, command.on,
                        source_alias=_source_alias(command),
                        target_alias=command.alias or entry.name.table)
    for clause in command.clauses:
        builder = _add_clause(builder, clause)
    done = builder.execute()
    return affected_frame(ctx.spark, done.num_affected_rows)


def _source_alias(command: c.Merge) -> str:
    """The name the statement gives the USING source: its alias, the last part of a table
    name, or a hidden alias for a subquery without one."""
    if command.source_alias:
        return command.source_alias
    if _PLAIN_NAME.match(command.source):
        return command.source.strip().rsplit(".", 1)[-1].strip("`")
    return _SOURCE_ALIAS


def _add_clause(builder: api.MergeBuilder, clause: c.MergeClause) -> api.MergeBuilder:
    """``builder`` with the parsed WHEN clause ``clause`` added."""
    if clause.action == "delete":
        return builder.when_matched_delete(clause.condition)
    if clause.action == "update":
        if clause.star:
            return builder.when_matched_update_all(clause.condition)
        return builder.when_matched_update(
            {a.column: a.value for a in clause.assignments}, clause.condition)
    if clause.star:
        return builder.when_not_matched_insert_all(clause.condition)
    return builder.when_not_matched_insert(
        dict(zip(clause.insert_columns, clause.insert_values, strict=True)), clause.condition)


def rollback(ctx: StatementContext, entry: TableEntry, instant_time: str) -> str:
    """Roll back the failed write ``instant_time`` with the table core; returns the rollback's
    instant time."""
    from hudisql.metadata.participant import participants_for
    from hudisql.txn.writer import WriteClient

    table = _open(entry)
    options = ctx.session.write_options(entry.location, in_catalog=True)
    client = WriteClient(table, participants=participants_for(table, options),
                         options=options)
    if entry.managed:
        with ctx.catalog.write_transaction(entry.name):
            return client.rollback(instant_time)
    return client.rollback(instant_time)
