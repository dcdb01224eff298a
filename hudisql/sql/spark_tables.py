"""Spark's view of catalog tables: a session-catalog table per hudi table a statement names.

Spark resolves names in its own session catalog, so each hudi table a statement names is
defined there as ``CREATE TABLE <name> USING hudi LOCATION '<base path>'`` (an external
table to Spark: dropping the definition never touches the files). The definition holds
the schema and location, so it is re-created when the catalog entry's table id, location
or schema changed since it was made; a new commit alone (write ids, timeline marker) only
needs ``REFRESH TABLE`` (the ``hudi`` data source lists the timeline when it plans a read).

Spark's session catalog is shared by every SparkSession of one SparkContext, so what was
defined is remembered per application (not per HudiSession): two HudiSessions on one
SparkSession see one set of definitions.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hudisql.catalog import TableEntry, TableName
from hudisql.errors import TableAlreadyExistsError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Definition:
    """What a Spark definition was made from, and the entry version it was last refreshed at."""

    table_id: int
    location: str
    schema: str | None
    version: tuple[str, str]


def quote_identifier(part: str) -> str:
    """One name part back-quoted for Spark SQL (any characters allowed)."""
    return "`" + part.replace("`", "``") + "`"


def spark_name(name: TableName) -> str:
    """``name`` as ``database.table``, both parts back-quoted, for Spark SQL."""
    return f"{quote_identifier(name.database)}.{quote_identifier(name.table)}"


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _key(name: TableName) -> tuple[str, str]:
    # Spark's session catalog folds table and database names to lower case.
    return (name.database.lower(), name.table.lower())


class SparkTables:
    """The hudi tables defined in one Spark application's session catalog."""

    _by_app: dict[str, SparkTables] = {}
    _by_app_lock = threading.Lock()

    def __init__(self) -> None:
        self._defined: dict[tuple[str, str], Definition] = {}
        self._databases: set[str] = {"default"}
        self._lock = threading.RLock()

    @classmethod
    def of(cls, spark: SparkSession) -> SparkTables:
        """The registry of ``spark``'s application (one per Spark application)."""
        # The application id from the session's configuration (no SparkContext: it works
        # on Spark Connect too).
        app = str(spark.conf.get("spark.app.id"))
        with cls._by_app_lock:
            found = cls._by_app.get(app)
            if found is None:
                found = cls._by_app[app] = SparkTables()
            return found

    def is_defined(self, name: TableName) -> bool:
        """True when hudisql defined ``name`` in Spark's session catalog."""
        return _key(name) in self._defined

    def defined_names(self) -> set[tuple[str, str]]:
        """The (database, table) pairs hudisql defined, lower-cased as Spark keeps them."""
        return set(self._defined)

    def ensure(self, spark: SparkSession, entry: TableEntry) -> None:
        """Make Spark see ``entry``: define, re-define or refresh its table as needed.

        Raises:
            TableAlreadyExistsError: Spark's session catalog holds a table of that name
                that is not a hudi table.
        """
        version = (
            "" if entry.valid_write_ids is None else str(entry.valid_write_ids),
            entry.timeline.marker,
        )
        wanted = Definition(entry.table_id, entry.location, entry.schema, version)
        key = _key(entry.name)
        with self._lock:
            current = self._defined.get(key)
            if current == wanted:
                return
            name = spark_name(entry.name)
            if current is not None and (current.table_id, current.location, current.schema) == (
                wanted.table_id, wanted.location, wanted.schema
            ):
                spark.sql(f"REFRESH TABLE {name}")
                self._defined[key] = wanted
                return
            self._define(spark, entry, name, replace=current is not None)
            self._defined[key] = wanted

    def _define(self, spark: SparkSession, entry: TableEntry, name: str, replace: bool) -> None:
        database = entry.name.database
        if database.lower() not in self._databases:
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote_identifier(database)}")
            self._databases.add(database.lower())
        provider = _spark_provider(spark, name)
        if provider is not None and provider != "hudi" and not replace:
            raise TableAlreadyExistsError(
                f"Spark's session catalog already has a table {entry.name} that is not a hudi "
                f"table; drop or rename it in Spark (DROP TABLE {name}) to use the hudi table "
                "of that name"
            )
        if provider is not None:
            spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} USING hudi LOCATION {sql_string(entry.location)}")

    def forget(self, spark: SparkSession, name: TableName) -> None:
        """Drop hudisql's Spark definition of ``name`` (the table left the catalog)."""
        with self._lock:
            if self._defined.pop(_key(name), None) is not None:
                spark.sql(f"DROP TABLE IF EXISTS {spark_name(name)}")


def spark_table_details(spark: SparkSession, name: str) -> dict[str, str] | None:
    """What Spark's session catalog says of table ``name`` (Spark SQL text: ``t``,
    ``db.t``, back-quoted parts): the ``Key: value`` lines of ``SHOW TABLE EXTENDED``
    (``Provider``, ``Location``, ``Type``...), or None when Spark has no such table. SQL
    only, no JVM handle, so it works on Spark Connect too. (``DESCRIBE TABLE EXTENDED``
    does not do: for a Python data source's table it shows neither provider nor location.)
    """
    if not spark.catalog.tableExists(name):
        return None
    *database, table = _name_parts(name)
    where = f" IN {quote_identifier(database[-1])}" if database else ""
    found = spark.sql(f"SHOW TABLE EXTENDED{where} LIKE {sql_string(table)}").collect()
    for row in found:
        facts = row.asDict()
        if str(facts.get("tableName", "")).lower() != table.lower() or facts.get("isTemporary"):
            continue
        details: dict[str, str] = {}
        for line in str(facts.get("information") or "").splitlines():
            key, sep, value = line.partition(": ")
            if sep and key and not key.startswith(" "):
                details.setdefault(key, value.strip())
        return details
    return None


def _name_parts(name: str) -> list[str]:
    """The parts of a Spark SQL table name (``db.t``, ```my db`.t``), unquoted."""
    parts: list[str] = []
    current: list[str] = []
    quoted, i = False, 0
    while i < len(name):
        ch = name[i]
        if ch == "`":
            if quoted and name[i + 1:i + 2] == "`":  # an escaped back-quote
                current.append("`")
                i += 1
            else:
                quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _spark_provider(spark: SparkSession, name: str) -> str | None:
    """The provider of Spark's table ``name`` (lower case), or None when there is none."""
    details = spark_table_details(spark, name)
    return None if details is None else details.get("Provider", "").lower()
