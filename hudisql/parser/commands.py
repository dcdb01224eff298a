"""The typed commands hudisql's statements parse into: one frozen dataclass per statement kind.

SQL fragments that Spark evaluates (source queries, SET values, conditions) are kept as
their original text; names are parsed (:class:`TableName`, column names unquoted).
Commands whose ``spark_fallback`` is true name a target table that only the session can
judge: when it is not a hudi table, the session runs the statement's original text
through ``spark.sql`` instead.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TableName:
    """A table name as written, unquoted: ``parts`` is e.g. ``("db", "t")`` for ``db.t``."""

    parts: tuple[str, ...]

    @property
    def name(self) -> str:
        """The table's own name (the last part)."""
        return self.parts[-1]

    @property
    def database(self) -> str | None:
        """The database part, or None when the name is not qualified."""
        return self.parts[-2] if len(self.parts) > 1 else None

    @property
    def sql(self) -> str:
        """The name back-quoted for Spark SQL (``db`.`t`` style), safe for any characters."""
        return ".".join("`" + part.replace("`", "``") + "`" for part in self.parts)

    def __str__(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class ColumnSpec:
    """A column definition: ``name`` (dotted for nested fields), Spark ``type`` as written.

    ``position`` is ``"FIRST"`` or ``"AFTER <column>"`` (ALTER TABLE ADD COLUMNS only).
    """

    name: str
    type: str
    nullable: bool = True
    comment: str | None = None
    position: str | None = None


class Command:
    """Base class of every hudisql command."""

    spark_fallback: t.ClassVar[bool] = False


@dataclass(frozen=True)
class CreateTable(Command):
    """``CREATE TABLE ... USING hudi``: a new table, a CTAS, or registering one at LOCATION.

    ``properties`` holds every TBLPROPERTIES/OPTIONS entry as written; ``primary_key``,
    ``precombine_field`` and ``table_type`` are the typed reading of the known ones.
    """

    table: TableName
    columns: tuple[ColumnSpec, ...] = ()
    partitioned_by: tuple[str, ...] = ()
    primary_key: tuple[str, ...] = ()
    precombine_field: str | None = None
    table_type: t.Literal["cow", "mor"] = "cow"
    properties: dict[str, str] = field(default_factory=dict)
    location: str | None = None
    comment: str | None = None
    if_not_exists: bool = False
    query: str | None = None

    @property
    def hoodie_options(self) -> dict[str, str]:
        """The ``hoodie.*`` properties, for the table config and writer options."""
        return {k: v for k, v in self.properties.items() if k.startswith("hoodie.")}

    @property
    def hoodie_table_type(self) -> str:
        """``COPY_ON_WRITE`` or ``MERGE_ON_READ``, as hoodie.properties spells it."""
        return "MERGE_ON_READ" if self.table_type == "mor" else "COPY_ON_WRITE"

    @property
    def registers_existing(self) -> bool:
        """True for ``CREATE TABLE t USING hudi LOCATION '...'`` (no columns, no query)."""
        return not self.columns and self.query is None and self.location is not None


@dataclass(frozen=True)
class DropTable(Command):
    """``DROP TABLE [IF EXISTS] t [PURGE]``."""

    spark_fallback: t.ClassVar[bool] = True
    table: TableName
    if_exists: bool = False
    purge: bool = False


@dataclass(frozen=True)
class Unparsed(Command):
    """A DML or DDL statement on ``table`` that hudisql's grammar cannot read.

    Only the session can judge it: on a table that is not a hudi table the statement's
    text goes to Spark unchanged (Spark's grammar is wider, e.g. ``ADD COLUMN ... DEFAULT``);
    on a hudi table ``error`` (where and why hudisql's grammar stopped) is raised.
    """

    spark_fallback: t.ClassVar[bool] = True
    table: TableName
    error: Exception = field(compare=False, repr=False)


@dataclass(frozen=True)
class AlterTableAddColumns(Command):
    """``ALTER TABLE t ADD COLUMNS (...)``."""

    spark_fallback: t.ClassVar[bool] = True
    table: TableName
    columns: tuple[ColumnSpec, ...]


@dataclass(frozen=True)
class AlterTableRename(Command):
    """``ALTER TABLE t RENAME TO u``."""

    spark_fallback: t.ClassVar[bool] = True
    table: TableName
    new_name: TableName


@dataclass(frozen=True)
class Insert(Command):
    """``INSERT INTO|OVERWRITE [TABLE] t [PARTITION (...)] [(cols) | BY NAME] <query>``.

    ``query`` is the source query's text (``SELECT ...``, ``VALUES ...``, a CTE-led query);
    ``partition`` pairs each static partition column with its value's SQL text, or None
    for a dynamic one.
    """

    spark_fallback: t.ClassVar[bool] = True
    table: TableName
    query: str
    overwrite: bool = False
    columns: tuple[str, ...] = ()
    by_name: bool = False
    partition: tuple[tuple[str, str | None], ...] = ()
    if_not_exists: bool = False


@dataclass(frozen=True)
class Assignment:
    """One ``column = value`` of a SET list; ``value`` is Spark SQL text."""

    column: str
    value: str


@dataclass(frozen=True)
class Update(Command):
    """``UPDATE t [AS a] SET ... [WHERE ...]``; ``where`` is the condition's text."""

    spark_fallback: t.ClassVar[bool] = True
    table: TableName
    assignments: tuple[Assignment, ...]
    alias: str | None = None
    where: str | None = None


@dataclass(frozen=True)
class Delete(Command):
    """``DELETE FROM t [AS a] [WHERE ...]``; ``where`` is the condition's text."""

    spark_fallback: t.ClassVar[bool] = True
    table: TableName
    alias: str | None = None
    where: str | None = None


@dataclass(frozen=True)
class MergeClause:
    """One ``WHEN ...`` clause of MERGE.

    ``kind`` is ``matched``, ``not_matched`` or ``not_matched_by_source``; ``action`` is
    ``update``, ``delete`` or ``insert``; ``star`` marks ``UPDATE SET *`` / ``INSERT *``.
    """

    kind: t.Literal["matched", "not_matched", "not_matched_by_source"]
    action: t.Literal["update", "delete", "insert"]
    condition: str | None = None
    assignments: tuple[Assignment, ...] = ()
    star: bool = False
    insert_columns: tuple[str, ...] = ()
    insert_values: tuple[str, ...] = ()


@dataclass(frozen=True)
class Merge(Command):
    """``MERGE INTO t USING s ON ... WHEN ...``.

    ``source`` is the source's text: a table name or a parenthesized query.
    """

    spark_fallback: t.ClassVar[bool] = True
    table: TableName
    source: str
    on: str
    clauses: tuple[MergeClause, ...]
    alias: str | None = None
    source_alias: str | None = None

    @property
    def source_query(self) -> str:
        """A query over the source, for ``spark.sql``."""
        return f"SELECT * FROM {self.source}"


@dataclass(frozen=True)
class ShowTimeline(Command):
    """``SHOW TIMELINE [ON] <table | 'path'> [ARCHIVED] [LIMIT n]``; ``limit`` None means
    every instant; ``archived`` adds the archived timeline (Hudi's ``showArchived``)."""

    table: TableName | None = None
    path: str | None = None
    limit: int | None = None
    archived: bool = False


@dataclass(frozen=True)
class ShowCommits(Command):
    """``CALL show_commits(table => 't', limit => n)``: the newest completed commits;
    ``CALL show_archived_commits(table, limit, start_ts, end_ts)``: the archived ones."""

    table: TableName
    limit: int = 10
    archived: bool = False
    start_ts: str | None = None
    end_ts: str | None = None


@dataclass(frozen=True)
class RollbackToInstant(Command):
    """``CALL rollback_to_instant(table => 't', instant_time => '...')``."""

    table: TableName
    instant_time: str


@dataclass(frozen=True)
class ShowLogBlocks(Command):
    """``CALL show_log_blocks(table => 't' [, file_id => '...'])``: every log block of the
    latest file slices with its verdict (valid, spurious, rolled back, corrupt, ...)."""

    table: TableName
    file_id: str | None = None


@dataclass(frozen=True)
class IndexColumn:
    """One column of CREATE INDEX with its own ``OPTIONS(...)`` (as written, keys as given)."""

    name: str
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateIndex(Command):
    """``CREATE INDEX [IF NOT EXISTS] name ON [TABLE] t [USING type] (col [OPTIONS(...)], ...)
    [OPTIONS(...)]`` (Apache Hudi's grammar).

    ``using`` is the lower-cased index type (``column_stats`` or ``bloom_filters``), or
    None: a record index on the record key columns, else a secondary index.
    """

    name: str
    table: TableName
    columns: tuple[IndexColumn, ...]
    using: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropIndex(Command):
    """``DROP INDEX [IF EXISTS] name ON [TABLE] t``."""

    name: str
    table: TableName
    if_exists: bool = False


@dataclass(frozen=True)
class ShowIndexes(Command):
    """``SHOW INDEXES (FROM | IN) [TABLE] t``."""

    table: TableName


@dataclass(frozen=True)
class RefreshIndex(Command):
    """``REFRESH INDEX name ON [TABLE] t``: rebuild the index from the data table."""

    name: str
    table: TableName


@dataclass(frozen=True)
class RunIndexer(Command):
    """``CALL run_indexer(table => 't', mode => ..., index_types => 'A,B', instant_time => ...)``.

    ``mode`` is ``schedule``, ``execute``, ``scheduleandexecute`` or ``dropindex``
    (lower-cased, as Hudi's HoodieIndexer matches it); ``index_types`` are metadata
    partition type names (``COLUMN_STATS``, ``RECORD_INDEX``, ...), upper-cased.
    """

    table: TableName
    mode: str
    index_types: tuple[str, ...] = ()
    instant_time: str | None = None


@dataclass(frozen=True)
class ShowMetadataTable(Command):
    """``CALL show_metadata_table_partitions | _files | _column_stats(table => 't', ...)``.

    ``what`` is ``partitions``, ``files`` or ``column_stats``; ``partition`` narrows files
    and column stats to one data partition; ``columns`` narrows column stats.
    """

    table: TableName
    what: t.Literal["partitions", "files", "column_stats"]
    partition: str | None = None
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class ValidateMetadataTable(Command):
    """``CALL validate_metadata_table(table => 't')``: recompute every built partition from
    the data table and report each difference."""

    table: TableName


@dataclass(frozen=True)
class ShowDataSkipping(Command):
    """``CALL show_data_skipping(table => 't' | path => '...', filter => "...")``: which
    file slices the metadata table's indexes keep for a filter, index by index."""

    table: TableName | None
    path: str | None
    filter: str
    as_of: str | None = None
