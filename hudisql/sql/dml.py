"""DML on hudi tables: INSERT INTO, UPDATE, DELETE, MERGE INTO, and rollback.

Spark evaluates every SQL fragment (source queries, SET values, conditions, the MERGE
join); the rows it produces are written by the Spark write pipeline
(:class:`hudisql.write.pipeline.SparkWriter`), one commit per statement (a MERGE that both
upserts and deletes makes two). A managed table's commit is bracketed by a catalog write
id, so other sessions' caches see it. A write that fails is rolled back by the pipeline
before the error is raised, so the table reads as it did before the statement.

``INSERT OVERWRITE`` is a replacecommit, as Spark means it: with a ``PARTITION`` clause,
or under ``spark.sql.sources.partitionOverwriteMode=dynamic``, the partitions the rows go
to are replaced; otherwise the whole table. A MERGE's updates, inserts and deletes are one
upsert commit (deleted rows flagged ``_hoodie_is_deleted``), so it is atomic.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from hudisql.catalog import TableEntry
from hudisql.errors import WriteError
from hudisql.parser import commands as c
from hudisql.sql.dml_expressions import (
    expression_select,
    is_merge_update_only,
    merge_plan,
    refuse_repeated_keys,
    update_plan,
)
from hudisql.sql.frames import affected_frame
from hudisql.sql.spark_tables import quote_identifier, spark_name
from hudisql.table.schema import META_COLUMNS, avro_to_arrow
from hudisql.write.pipeline import IS_DELETED

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.sql.router import StatementContext
    from hudisql.table.table import HudiTable

#: The session or table option choosing what INSERT INTO does (as Hudi's Spark SQL names it).
INSERT_OPERATION = "hoodie.spark.sql.insert.into.operation"
_INSERT_OPERATIONS = {"upsert": "upsert", "insert": "insert", "bulk_insert": "insert"}


def _open(entry: TableEntry) -> HudiTable:
    from hudisql.table.table import HudiTable

    return HudiTable.open(entry.location)


def data_columns(table: HudiTable) -> list[tuple[str, str]]:
    """The table's columns without meta columns: (name, Spark SQL type) in order."""
    from pyspark.sql.pandas.types import from_arrow_schema

    avro = json.loads(table.avro_schema)
    avro["fields"] = [f for f in avro["fields"] if f["name"] not in META_COLUMNS]
    schema = from_arrow_schema(avro_to_arrow(avro), prefer_timestamp_ntz=False)
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def write_frame(ctx: StatementContext, entry: TableEntry, frame: DataFrame, operation: str,
                expressions: dict[str, str] | None = None) -> int:
    """Write ``frame``'s rows as one commit of the Spark write pipeline; returns the row count.

    ``operation`` is ``insert``, ``upsert`` or ``delete`` (``frame`` then holds the key and
    partition columns). The rows are computed once, before the commit starts, so a
    statement reading its own target sees the table as it was. A managed table's commit
    runs inside a catalog write id, aborted when the write fails (the pipeline has rolled
    the instant back by then). ``expressions`` makes it an expression write
    (``hudisql.sql.dml_expressions``).
    """
    from hudisql.write.pipeline import SparkWriter

    rows = frame.localCheckpoint(eager=True)
    count = rows.count()
    if count == 0 and not operation.startswith("insert_overwrite"):
        return 0  # an overwrite with no rows still empties what it overwrites
    writer = SparkWriter(ctx.spark, entry.location, dict(ctx.session.options),
                         on_step=ctx.router.on_write_step)
    tx = ctx.catalog.write_transaction(entry.name) if entry.managed else contextlib.nullcontext()
    with tx:
        writer.write(rows, operation, expressions)
    return int(count)


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
    source = ctx.spark.sql(command.query)
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
    by_target = dict(zip(given, source.columns, strict=True))
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


def _assigned(entry: TableEntry, table: HudiTable, assignments: tuple[c.Assignment, ...],
              alias: str | None, allow_keys: bool = False) -> dict[str, str]:
    """Column -> value SQL of SET assignments; record key and partition columns are refused
    unless ``allow_keys`` (MERGE, where ON ties the key to the matched row)."""
    props = table.properties
    fixed = {f.lower() for f in props.record_key_fields + props.partition_fields}
    names = {n.lower(): n for n, _ in data_columns(table)}
    out: dict[str, str] = {}
    for assignment in assignments:
        column = assignment.column
        prefixes = {entry.name.table.lower(), (alias or "").lower()}
        head, _, tail = column.rpartition(".")
        if head and head.lower() in prefixes:
            column = tail
        if column.lower() not in names:
            raise WriteError(
                f"table {entry.name} has no column {assignment.column}; its columns are "
                f"{', '.join(names.values())}"
            )
        if column.lower() in fixed and not allow_keys:
            raise WriteError(
                f"column {column} of table {entry.name} is a record key or partition column and "
                "cannot be updated; delete the row and insert it with the new value"
            )
        out[names[column.lower()]] = assignment.value
    return out


def update(ctx: StatementContext, command: c.Update) -> DataFrame:
    """UPDATE t SET ... [WHERE ...]: the changed rows are upserted in one commit."""
    entry = ctx.require(command.table, "UPDATE")
    table = _open(entry)
    values = _assigned(entry, table, command.assignments, command.alias)
    plan = update_plan(values, entry.name.table, command.alias) if table.properties.is_mor else None
    if plan is not None:  # the stored value is read when the log is merged, not now
        target = quote_identifier(command.alias or entry.name.table)
        select = expression_select(plan, data_columns(table), _kept_columns(table), target)
        query = _target_query(entry, select, command.alias or entry.name.table, command.where)
        count = write_frame(ctx, entry, ctx.spark.sql(query), "upsert", plan.ops)
        return affected_frame(ctx.spark, count)
    select = [
        _cast(values[name], kind, name) if name in values
        else _cast(quote_identifier(name), kind, name)
        for name, kind in data_columns(table)
    ]
    query = _target_query(entry, select, command.alias, command.where)
    count = write_frame(ctx, entry, ctx.spark.sql(query), "upsert")
    return affected_frame(ctx.spark, count)


def _target_query(entry: TableEntry, select: list[str], alias: str | None,
                  where: str | None) -> str:
    """``SELECT <select> FROM <target> [AS alias] [WHERE where]``: an UPDATE's or DELETE's rows."""
    query = f"SELECT {', '.join(select)} FROM {spark_name(entry.name)}"
    if alias:
        query += f" AS {quote_identifier(alias)}"
    if where:
        query += f" WHERE {where}"
    return query


def _kept_columns(table: HudiTable) -> list[str]:
    """Columns an expression write takes from the target row: keys, partition, ordering."""
    ordering = table.properties.precombine_field
    return _key_columns(table) + ([ordering] if ordering else [])


def _merge_expressions(ctx: StatementContext, entry: TableEntry, table: HudiTable,
                       command: c.Merge) -> DataFrame | None:
    """A MERGE whose one clause is ``WHEN MATCHED THEN UPDATE SET c = t.c + s.c`` on a MOR
    table, as an expression write; None when it is not one."""
    if not table.properties.is_mor or not is_merge_update_only(command):
        return None
    [clause] = command.clauses
    values = _assigned(entry, table, clause.assignments, command.alias, allow_keys=True)
    plan = merge_plan(command, values)
    if plan is None:
        return None
    target = quote_identifier(command.alias or entry.name.table)
    source = command.source + (
        f" AS {quote_identifier(command.source_alias)}" if command.source_alias else "")
    select = expression_select(plan, data_columns(table), _kept_columns(table), target)
    query = (f"SELECT {', '.join(select)} FROM {source} JOIN {spark_name(entry.name)} "
             f"AS {target} ON {command.on}")
    if clause.condition:
        query += f" WHERE {clause.condition}"
    rows = ctx.spark.sql(query).localCheckpoint(eager=True)
    refuse_repeated_keys(rows, _key_columns(table), str(entry.name))
    return affected_frame(ctx.spark, write_frame(ctx, entry, rows, "upsert", plan.ops))


def _key_columns(table: HudiTable) -> list[str]:
    props = table.properties
    return props.record_key_fields + [
        f for f in props.partition_fields if f not in props.record_key_fields]


def delete(ctx: StatementContext, command: c.Delete) -> DataFrame:
    """DELETE FROM t [WHERE ...]: the matching rows' keys are deleted in one commit."""
    entry = ctx.require(command.table, "DELETE")
    table = _open(entry)
    keys = [quote_identifier(k) for k in _key_columns(table)]
    query = _target_query(entry, keys, command.alias, command.where)
    count = write_frame(ctx, entry, ctx.spark.sql(query), "delete")
    return affected_frame(ctx.spark, count)


_MATCHED = "__hudisql_matched"
_CLAUSE = "__hudisql_clause"


def merge(ctx: StatementContext, command: c.Merge) -> DataFrame:
    """MERGE INTO t USING s ON ... WHEN [NOT] MATCHED ...: Spark joins and picks each source
    row's clause (the first whose condition holds); updates, inserts and deletes are one
    upsert commit (deleted rows flagged ``_hoodie_is_deleted``).

    Raises:
        WriteError: ``WHEN NOT MATCHED BY SOURCE`` (not supported), an unknown column.
    """
    entry = ctx.require(command.table, "MERGE INTO")
    table = _open(entry)
    if any(cl.kind == "not_matched_by_source" for cl in command.clauses):
        raise WriteError(
            f"MERGE INTO {entry.name}: WHEN NOT MATCHED BY SOURCE is not supported; delete "
            "those rows with a DELETE FROM ... WHERE NOT EXISTS (...) statement"
        )
    as_expressions = _merge_expressions(ctx, entry, table, command)
    if as_expressions is not None:
        return as_expressions
    columns = data_columns(table)
    target = quote_identifier(command.alias or entry.name.table)
    source_alias = command.source_alias
    source = command.source + (f" AS {quote_identifier(source_alias)}" if source_alias else "")
    source_ref = quote_identifier(source_alias) if source_alias else command.source
    tests = []
    for clause in command.clauses:
        matched = f"{target}.{_MATCHED} IS NOT NULL"
        test = matched if clause.kind == "matched" else f"NOT ({matched})"
        if clause.condition:
            test += f" AND ({clause.condition})"
        tests.append(test)
    # Each output column repeats the clause tests in order, so the first clause that holds
    # decides both which clause a row takes and what it writes (one SELECT, one join).
    chosen = " ".join(f"WHEN {test} THEN {i}" for i, test in enumerate(tests))
    outputs = [f"CASE {chosen} ELSE -1 END AS {_CLAUSE}"]
    for name, kind in columns:
        values = " ".join(
            f"WHEN {test} THEN "
            f"{_clause_value(entry, table, clause, name, target, source_ref, command.alias)}"
            for test, clause in zip(tests, command.clauses, strict=True))
        outputs.append(_cast(f"CASE {values} END", kind, name))
    query = (
        f"SELECT {', '.join(outputs)} FROM {source} LEFT JOIN "
        f"(SELECT *, true AS {_MATCHED} FROM {spark_name(entry.name)}) AS {target} "
        f"ON {command.on}"
    )
    deletes = [i for i, cl in enumerate(command.clauses) if cl.action == "delete"]
    taken = F.col(_CLAUSE)
    # One commit: rows of delete clauses carry the target's values and Hudi's delete flag.
    rows = (ctx.spark.sql(query).where(taken >= 0)
            .withColumn(IS_DELETED, taken.isin(deletes)).drop(_CLAUSE))
    return affected_frame(ctx.spark, write_frame(ctx, entry, rows, "upsert"))


def _clause_value(entry: TableEntry, table: HudiTable, clause: c.MergeClause, name: str,
                  target: str, source_ref: str, alias: str | None) -> str:
    """The SQL of column ``name`` in the row ``clause`` writes (a delete: the target's)."""
    if clause.action == "delete":
        return f"{target}.{quote_identifier(name)}"
    if clause.star:
        return f"{source_ref}.{quote_identifier(name)}"
    if clause.action == "update":
        values = _assigned(entry, table, clause.assignments, alias, allow_keys=True)
        return values.get(name, f"{target}.{quote_identifier(name)}")
    lowered = {col.lower(): value for col, value in
               zip(clause.insert_columns, clause.insert_values, strict=True)}
    return lowered.get(name.lower(), "NULL")


def rollback(ctx: StatementContext, entry: TableEntry, instant_time: str) -> str:
    """Roll back the failed write ``instant_time`` with the table core; returns the rollback's
    instant time."""
    from hudisql.table.writer import WriteClient

    client = WriteClient(_open(entry))
    if entry.managed:
        with ctx.catalog.write_transaction(entry.name):
            return client.rollback(instant_time)
    return client.rollback(instant_time)
