"""DDL against the catalog: CREATE TABLE ... USING hudi, DROP TABLE, ALTER TABLE RENAME TO /
ADD COLUMNS, SHOW TABLES and DESCRIBE.

A managed table's files are laid down by the table core's ``create_table`` (at LOCATION,
or at the catalog's default location) before its catalog entry is made; if the catalog
refuses the name, the files are removed again, so a failed CREATE leaves nothing behind.
``CREATE TABLE t USING hudi LOCATION '<existing table>'`` registers an external table.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa

from hudisql.catalog import SqlCatalog, TableEntry, TableName, normalize_name
from hudisql.catalog.external import timeline_summary
from hudisql.errors import CatalogError, TableAlreadyExistsError, WriteError
from hudisql.parser import commands as c
from hudisql.sql.frames import empty_frame, rows_frame
from hudisql.sql.spark_tables import SparkTables
from hudisql.table.schema import META_COLUMNS, avro_to_arrow
from hudisql.table.storage import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from hudisql.sql.router import StatementContext


def spark_to_arrow(schema: StructType) -> pa.Schema:
    """The Arrow schema of a Spark schema (timestamps in UTC, as hudi tables store them)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def columns_schema(columns: tuple[c.ColumnSpec, ...], table: str) -> StructType:
    """The Spark schema of a column list.

    Raises:
        WriteError: a type Spark does not know (the message names the column).
    """
    from pyspark.sql.types import DataType, StructField, StructType

    fields = []
    for column in columns:
        try:
            kind = DataType.fromDDL(column.type)
        except Exception as exc:  # Spark's parse errors come in several classes
            raise WriteError(
                f"table {table}: column {column.name} has type {column.type!r}, which Spark "
                f"does not know ({type(exc).__name__}); use a Spark SQL type such as INT, "
                "STRING, DECIMAL(10,2), TIMESTAMP, ARRAY<STRING>"
            ) from None
        fields.append(StructField(column.name, kind, column.nullable))
    return StructType(fields)


def create_table(ctx: StatementContext, command: c.CreateTable) -> DataFrame:
    """CREATE TABLE ... USING hudi: a managed table, a CTAS, or an external registration.

    Raises:
        TableAlreadyExistsError: the name is taken (unless IF NOT EXISTS), or LOCATION
            already holds a hudi table while columns were given.
        TableNotFoundError: LOCATION of a registration holds no hudi table.
        WriteError: no primaryKey, or a bad column type or option.
    """
    name = ctx.name_of(command.table)
    catalog = ctx.catalog
    if name in catalog.begin_statement([name]):
        if command.if_not_exists:
            return empty_frame(ctx.spark)
        raise TableAlreadyExistsError(
            f"table {name} already exists in the catalog; choose another name, or DROP TABLE "
            f"{name} first (CREATE TABLE IF NOT EXISTS skips an existing table)"
        )
    if command.registers_existing:
        assert command.location is not None
        entry = catalog.register_table(name, command.location)
        _check_registered(entry, command)
        SparkTables.of(ctx.spark).ensure(ctx.spark, entry)
        return empty_frame(ctx.spark)
    source = ctx.spark.sql(command.query) if command.query is not None else None
    spark_schema = source.schema if source is not None else columns_schema(
        command.columns, str(name))
    if not command.primary_key:
        raise WriteError(
            f"CREATE TABLE {name}: hudi tables need a record key; add TBLPROPERTIES "
            "(primaryKey = '<column>[,<column>...]')"
        )
    entry = _create_managed(ctx, name, command, spark_to_arrow(spark_schema))
    SparkTables.of(ctx.spark).ensure(ctx.spark, entry)
    if source is not None:
        from hudisql.sql import dml

        try:
            dml.write_frame(ctx, entry, source, operation="insert")
        except BaseException:
            # CTAS is one statement: a failed insert leaves no table behind.
            catalog.drop_table(name, purge=True)
            SparkTables.of(ctx.spark).forget(ctx.spark, name)
            raise
    return empty_frame(ctx.spark)


def _check_registered(entry: TableEntry, command: c.CreateTable) -> None:
    keys = entry.properties.get("hoodie.table.recordkey.fields", "")
    if command.primary_key and [k.strip() for k in keys.split(",")] != list(command.primary_key):
        raise WriteError(
            f"table {entry.name}: primaryKey {','.join(command.primary_key)!r} differs from the "
            f"record key {keys!r} of the table at {entry.location}; leave primaryKey out when "
            "registering an existing table"
        )


def _create_managed(
    ctx: StatementContext, name: TableName, command: c.CreateTable, schema: pa.Schema
) -> TableEntry:
    from hudisql.table.write_create import create_table as core_create

    catalog = ctx.catalog
    if command.location is not None:
        location = command.location
    elif isinstance(catalog, SqlCatalog):
        location = catalog.default_location(name)
    else:
        location = os.path.join(ctx.router.warehouse, name.table)
    storage = Storage(location)
    existed = storage.exists("")
    options = {**command.hoodie_options, "hoodie.database.name": name.database}
    table = core_create(
        location, name.table, schema, list(command.primary_key), list(command.partitioned_by),
        command.precombine_field, command.hoodie_table_type, options)
    try:
        return catalog.create_table(
            name, schema=table.avro_schema, location=location,
            properties={k: v for k, v in table.properties.items()
                        if k != "hoodie.table.checksum"},
            timeline=timeline_summary(table.storage, table.properties))
    except BaseException:
        # The name went to another session meanwhile: take back the files just written.
        if existed:
            storage.delete_dir(".hoodie")
        else:
            storage.delete_dir("")
        raise


def drop_table(ctx: StatementContext, command: c.DropTable) -> DataFrame:
    """DROP TABLE [IF EXISTS] t [PURGE] of a hudi table (PURGE deletes a managed table's files)."""
    entry = ctx.require(command.table, "DROP TABLE")
    ctx.catalog.drop_table(entry.name, purge=command.purge)
    SparkTables.of(ctx.spark).forget(ctx.spark, entry.name)
    return empty_frame(ctx.spark)


def rename_table(ctx: StatementContext, command: c.AlterTableRename) -> DataFrame:
    """ALTER TABLE t RENAME TO u: the catalog keeps the table id; files stay where they are."""
    entry = ctx.require(command.table, "ALTER TABLE RENAME")
    new_name = ctx.name_of(command.new_name)
    if len(command.new_name.parts) == 1:
        new_name = TableName(entry.name.database, new_name.table)
    renamed = ctx.catalog.rename_table(entry.name, new_name)
    tables = SparkTables.of(ctx.spark)
    tables.forget(ctx.spark, entry.name)
    tables.ensure(ctx.spark, renamed)
    return empty_frame(ctx.spark)


def add_columns(ctx: StatementContext, command: c.AlterTableAddColumns) -> DataFrame:
    """ALTER TABLE t ADD COLUMNS: an empty ``ALTER_SCHEMA`` commit carrying the new schema
    (the commit protocol's :func:`~hudisql.txn.schema_evolution.add_columns`), inside a
    catalog write id for a managed table.

    Raises:
        WriteError: a nested or positioned column, a NOT NULL column, or a name the table
            already has.
    """
    from hudisql.txn.schema_evolution import add_columns as commit_columns

    entry = ctx.require(command.table, "ALTER TABLE ADD COLUMNS")
    for column in command.columns:
        if "." in column.name or column.position:
            raise WriteError(
                f"ALTER TABLE {entry.name} ADD COLUMNS {column.name}: nested fields and "
                "FIRST/AFTER positions are not supported; add top-level columns at the end"
            )
    added = spark_to_arrow(columns_schema(command.columns, str(entry.name)))
    options = dict(ctx.session.options)
    if entry.managed:
        with ctx.catalog.write_transaction(entry.name) as tx:
            commit_columns(entry.location, list(added), options)
            tx.update(schema=_table_schema(entry.location))
    else:
        commit_columns(entry.location, list(added), options)
    return empty_frame(ctx.spark)


def _table_schema(location: str) -> str:
    from hudisql.table.table import HudiTable

    return HudiTable.open(location).avro_schema


def show_tables(ctx: StatementContext, database: str | None, pattern: str | None) -> DataFrame:
    """SHOW TABLES [IN db] [LIKE 'pattern']: the catalog's hudi tables and Spark's own."""
    spark = ctx.spark
    db = database or str(spark.catalog.currentDatabase())
    rows: dict[tuple[str, str], tuple[str, str, bool]] = {}
    # Database names are case-insensitive in Spark and in the catalog alike.
    in_catalog = normalize_name(db) in ctx.catalog.list_databases()
    if spark.catalog.databaseExists(db):
        defined = SparkTables.of(spark).defined_names()
        for row in spark.sql(ctx.statement.text).collect():
            namespace, table, temporary = row[0], row[1], bool(row[2])
            if (str(namespace).lower(), str(table).lower()) not in defined:
                rows[(namespace, table)] = (namespace, table, temporary)
    elif not in_catalog:
        raise CatalogError(
            f"database {db} does not exist; list the databases with SHOW DATABASES"
        )
    if in_catalog:
        matches = _pattern(pattern)
        for name in ctx.catalog.list_tables(db):
            if matches(name.table):
                rows[(name.database, name.table)] = (name.database, name.table, False)
    ordered = [rows[k] for k in sorted(rows)]
    return rows_frame(spark, ordered,
                      (("namespace", "STRING"), ("tableName", "STRING"),
                       ("isTemporary", "BOOLEAN")))


def _pattern(pattern: str | None) -> Callable[[str], bool]:
    """Spark's SHOW TABLES pattern: ``*`` any characters, ``|`` alternatives, no case."""
    if pattern is None:
        return lambda name: True
    choices = [re.escape(p.strip()).replace(r"\*", ".*") for p in pattern.split("|")]
    regex = re.compile("(?is)^(?:" + "|".join(choices) + ")$")
    return lambda name: regex.match(name) is not None


def describe(ctx: StatementContext, entry: TableEntry, extended: bool) -> DataFrame:
    """DESCRIBE [EXTENDED|FORMATTED] of a hudi table, from its catalog entry."""
    from pyspark.sql.pandas.types import from_arrow_schema

    rows: list[tuple[str, str, str | None]] = []
    if entry.schema:
        avro = json.loads(entry.schema)
        columns = from_arrow_schema(avro_to_arrow(avro), prefer_timestamp_ntz=False)
        names = [f.name for f in columns.fields]
        rows += [(m, "string", None) for m in META_COLUMNS if m not in names]
        rows += [(f.name, f.dataType.simpleString(), None) for f in columns.fields]
    partitions = [p for p in entry.properties.get("hoodie.table.partition.fields", "").split(",")
                  if p]
    if partitions:
        types = {r[0]: r[1] for r in rows}
        rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
        rows += [(p, types.get(p, "string"), None) for p in partitions]
    if extended:
        rows += [("", "", ""), ("# Detailed Table Information", "", "")]
        rows += [(key, value, "") for key, value in entry.describe()]
    return rows_frame(ctx.spark, rows,
                      (("col_name", "STRING"), ("data_type", "STRING"), ("comment", "STRING")))
