"""The statement router: runs a script's statements, hudisql's own and Spark's, in order.

The whole script is parsed first (a parse error runs nothing). Then, per statement: the
tables it names are resolved through the catalog (one :meth:`Catalog.begin_statement`
call) and made visible to Spark (:mod:`hudisql.sql.spark_tables`); hudisql's commands go
to their executors; everything else goes to ``spark.sql`` as its original text. A
statement that fails stops the script; its error carries a note naming the statement's
number, line and column.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudisql.catalog import Catalog, StatementSnapshot, TableEntry, TableName, load_catalog
from hudisql.errors import SqlParseError, TableNotFoundError
from hudisql.parser import Statement, parse_script
from hudisql.parser import commands as c
from hudisql.sql.names import catalog_name, command_tables, statement_tables
from hudisql.sql.spark_tables import SparkTables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudisql.session import HudiSession
    from hudisql.table.write.rollback import StepHook

#: An executor: runs one command of a statement; returns its result.
Executor = Callable[["StatementContext", Any], "DataFrame"]


@dataclass
class StatementContext:
    """What an executor gets: the session, the statement, and its resolved hudi tables."""

    session: HudiSession
    router: SqlRouter
    statement: Statement
    snapshot: StatementSnapshot | None = None
    entries: dict[TableName, TableEntry] = field(default_factory=dict)

    @property
    def spark(self) -> SparkSession:
        """The session's SparkSession."""
        return self.session.spark

    @property
    def catalog(self) -> Catalog:
        """The session's catalog."""
        return self.router.catalog

    def name_of(self, name: c.TableName) -> TableName:
        """The catalog name of a table name the statement wrote.

        Raises:
            TableNotFoundError: a name in a catalog other than Spark's session catalog.
        """
        found = catalog_name(name, self.router.current_database(self.spark, [name]))
        if found is None:
            raise TableNotFoundError(
                f"table {name} is not in the session catalog; hudi tables are named "
                "'table' or 'database.table'"
            )
        return found

    def entry(self, name: c.TableName) -> TableEntry | None:
        """The catalog entry of a hudi table the statement named, or None (not a hudi table)."""
        return self.entries.get(self.name_of(name))

    def require(self, name: c.TableName, what: str) -> TableEntry:
        """The entry of hudi table ``name``.

        Raises:
            TableNotFoundError: no hudi table of that name (the message says what to do).
        """
        entry = self.entry(name)
        if entry is None:
            full = self.name_of(name)
            raise TableNotFoundError(
                f"{what}: table {full} is not a hudi table in the catalog; list the tables "
                f"with SHOW TABLES IN {full.database}, or create it with CREATE TABLE "
                f"{name} USING hudi"
            )
        return entry


class SqlRouter:
    """Routes statements to hudisql's executors or to Spark; owns the session's catalog.

    ``catalog`` is a :class:`Catalog`, a URL or a configured catalog name (opened with
    :func:`load_catalog` on first use), or None for the default SQLite catalog in the
    warehouse.
    """

    def __init__(self, catalog: Catalog | str | None, warehouse: str) -> None:
        self._catalog = catalog if isinstance(catalog, Catalog) else None
        self._catalog_spec = None if isinstance(catalog, Catalog) else catalog
        self.warehouse = warehouse
        #: Called at each step of a DML statement's write (tests inject failures here).
        self.on_write_step: StepHook | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ catalog

    @property
    def catalog(self) -> Catalog:
        """The catalog (opened on first use).

        Raises:
            CatalogError: a named catalog is not configured.
            CatalogUnavailableError: the catalog database cannot be reached.
        """
        with self._lock:
            if self._catalog is None:
                spec = self._catalog_spec
                if spec and "://" not in spec:
                    self._catalog = load_catalog(spec)
                else:
                    self._catalog = load_catalog(spec, warehouse=self.warehouse)
            return self._catalog

    def close(self) -> None:
        """Close the catalog, if it was opened."""
        with self._lock:
            if self._catalog is not None:
                self._catalog.close()

    @staticmethod
    def current_database(spark: SparkSession, names: list[c.TableName]) -> str:
        """Spark's current database, asked only when some name is unqualified."""
        if any(len(n.parts) == 1 for n in names):
            return str(spark.catalog.currentDatabase())
        return "default"

    # ------------------------------------------------------------------ running

    def __call__(self, session: HudiSession, text: str) -> DataFrame:
        """Run the script ``text``; returns the last statement's result.

        Raises:
            SqlParseError: the script does not parse (nothing ran), or holds no statement.
        """
        results = self.run_script(session, text)
        if not results:
            raise SqlParseError(
                "line 1, column 1: the script holds no statement; write one, e.g. SHOW TABLES",
                line=1, column=1)
        return results[-1]

    def run_script(self, session: HudiSession, text: str) -> list[DataFrame]:
        """Run every statement of ``text`` in order; returns one result per statement.

        Raises:
            SqlParseError: the script does not parse; nothing ran.
        """
        statements = parse_script(text, defer_target_errors=True)
        # A statement hudisql cannot parse on a table already hudi's fails the script
        # before anything runs, as any parse error does (other targets: Spark's grammar).
        for statement in statements:
            if isinstance(statement.command, c.Unparsed):
                target = statement.command.table
                _, entries = self.resolve_names(session.spark, [target])
                name = catalog_name(target, self.current_database(session.spark, [target]))
                if name is not None and name in entries:
                    raise statement.command.error
        results = []
        for number, statement in enumerate(statements, start=1):
            try:
                results.append(self.run_statement(session, statement))
            except Exception as exc:
                if len(statements) > 1 or statement.line > 1 or statement.column > 1:
                    exc.add_note(
                        f"in statement {number} at line {statement.line}, column "
                        f"{statement.column}: {_abbreviated(statement.text)}")
                raise
        return results

    def run_statement(self, session: HudiSession, statement: Statement) -> DataFrame:
        """Resolve the tables ``statement`` names, then run it."""
        from hudisql.sql import executors

        ctx = StatementContext(session, self, statement)
        command = statement.command
        if isinstance(command, c.CreateTable):
            return executors.create_table(ctx, command)
        if command is None:
            names = statement_tables(statement.text)
        else:
            names = command_tables(command)
            if command.spark_fallback:
                # DML source queries and conditions may name further hudi tables.
                names += [n for n in statement_tables(statement.text) if n not in names]
        self.resolve(ctx, names)
        if command is None:
            return executors.pass_through(ctx)
        if command.spark_fallback and ctx.entry(command_tables(command)[0]) is None:
            # A DML or DDL statement on a table that is not a hudi table: Spark's business.
            return session.spark.sql(statement.text)
        return executors.run_command(ctx, command)

    def resolve(self, ctx: StatementContext, names: list[c.TableName]) -> None:
        """Resolve ``names`` through the catalog (one call) and make Spark see each hudi table.

        A name hudisql once defined in Spark whose table left the catalog (dropped or
        renamed by another session) loses its Spark definition.
        """
        snapshot, entries = self.resolve_names(ctx.spark, names)
        if snapshot is not None:
            ctx.snapshot = snapshot
        ctx.entries.update(entries)

    def resolve_names(
        self, spark: SparkSession, names: list[c.TableName]
    ) -> tuple[StatementSnapshot | None, dict[TableName, TableEntry]]:
        """Resolve ``names`` (one catalog call) and define each hudi table in Spark.

        Returns:
            The statement snapshot (None when no name is a catalog name) and the entries of
            the names the catalog holds.
        """
        entries: dict[TableName, TableEntry] = {}
        if not names:
            return None, entries
        database = self.current_database(spark, names)
        # Names are case-insensitive: `Trips` and `trips` in one statement are one table.
        wanted = list(dict.fromkeys(
            n for n in (catalog_name(x, database) for x in names) if n is not None))
        if not wanted:
            return None, entries
        snapshot = self.catalog.begin_statement(wanted)
        spark_tables = SparkTables.of(spark)
        for name in wanted:
            if name in snapshot:
                entry = self.catalog.resolve(snapshot, name)
                entries[name] = entry
                spark_tables.ensure(spark, entry)
            elif spark_tables.is_defined(name):
                spark_tables.forget(spark, name)
        return snapshot, entries

def _abbreviated(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."
