"""What the catalog hands out: table names, table entries, and a statement's snapshot.

A :class:`TableEntry` is one table's metadata (id, name, location, managed or external,
schema, properties, timeline summary) together with the ``ValidWriteIdList`` it is valid at.
A :class:`StatementSnapshot` is what a statement fetches once, at its start: the table ids and
ValidWriteIdLists of the tables it names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hudisql.catalog.write_ids import ValidWriteIdList
from hudisql.errors import CatalogError, TableNotFoundError

DEFAULT_DATABASE = "default"


def normalize_name(name: str) -> str:
    """A database or table name as the catalog keeps and compares it: in lower case.

    Names are case-insensitive, as in Spark SQL and the Hive metastore (which stores names
    lowercased): ``Trips``, ``trips`` and ``TRIPS`` name one table. Quoted identifiers
    (```Trips```) are folded too, as Hive folds them. Column names are not catalog names:
    they keep their case. Always lower case, whatever ``spark.sql.caseSensitive`` says:
    the metastore's rule, not the analyzer's.
    """
    return name.lower()


@dataclass(frozen=True, order=True)
class TableName:
    """A table's full name: its database and its name, both folded to lower case.

    This is the one place where table names are normalized (:func:`normalize_name`):
    every ``TableName``, whether made from a user's string, a parsed SQL statement, a
    catalog row or a notification-log message, holds lower-case parts. So every catalog
    operation that takes a name (create, drop, rename, alter, register, load, resolve,
    write ids) stores and looks up one spelling, the database's unique key on
    ``(db_name, name)`` refuses ``T`` beside ``t``, and dicts keyed by names (a
    statement's snapshot, the router's entries) agree, with no ``lower()`` at each call.
    Folding at construction rather than in the store keeps the rule out of SQL: the
    database compares names exactly (and can use its index), never with its own
    ``lower()``, which differs from Python's for non-ASCII letters on SQLite.
    Database names given as plain strings go through :func:`normalize_name` in the store.
    Names an earlier hudisql stored in mixed case are lowercased when a catalog opens
    (:mod:`hudisql.catalog.legacy_names`).
    """

    database: str
    table: str

    def __post_init__(self) -> None:
        # A frozen dataclass: fields are set once, here, through object.__setattr__.
        object.__setattr__(self, "database", normalize_name(self.database))
        object.__setattr__(self, "table", normalize_name(self.table))

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"

    @classmethod
    def of(cls, identifier: TableIdentifier) -> TableName:
        """The full name for ``identifier``.

        Raises:
            CatalogError: an empty name, or a tuple that is not ``(database, table)``.
        """
        if isinstance(identifier, TableName):
            return identifier
        if isinstance(identifier, tuple):
            if len(identifier) != 2 or not all(isinstance(p, str) for p in identifier):
                raise CatalogError(
                    f"table identifier {identifier!r} must be a (database, table) pair of strings"
                )
            database, table = identifier
        else:
            database, sep, table = str(identifier).partition(".")
            if not sep:
                database, table = DEFAULT_DATABASE, database
        if not database or not table:
            raise CatalogError(
                f"table identifier {identifier!r} has an empty database or table name; "
                "give it as 'table', 'database.table' or (database, table)"
            )
        return cls(database, table)


#: A table name: ``(database, table)`` taken literally but for case, a :class:`TableName`, or
#: a string ``"table"`` (default database) or ``"database.table"`` (split at the first dot).
#: Names that contain a dot must be given as a tuple. Case never matters (see TableName).
TableIdentifier = str | tuple[str, str] | TableName


@dataclass(frozen=True)
class TimelineSummary:
    """A table's timeline at a glance: enough to tell when it moved.

    ``marker`` changes whenever an instant file appears, changes state or disappears.
    """

    last_completed: str | None = None
    completed: int = 0
    pending: int = 0
    marker: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        return {
            "last_completed": self.last_completed,
            "completed": self.completed,
            "pending": self.pending,
            "marker": self.marker,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> TimelineSummary:
        """The summary from :meth:`to_json`'s dict (an empty summary for None)."""
        if not data:
            return cls()
        return cls(
            last_completed=data.get("last_completed"),
            completed=int(data.get("completed", 0)),
            pending=int(data.get("pending", 0)),
            marker=str(data.get("marker", "")),
        )


@dataclass(frozen=True)
class TableEntry:
    """One table's catalog metadata, valid at ``valid_write_ids`` (None: external table).

    ``as_of_event`` is the notification-log event id this entry reflects: the cache never
    replaces an entry by one with a smaller value, so it only moves forward.
    """

    table_id: int
    name: TableName
    location: str
    managed: bool
    schema: str | None
    properties: Mapping[str, str]
    timeline: TimelineSummary
    valid_write_ids: ValidWriteIdList | None
    as_of_event: int = 0

    @property
    def external(self) -> bool:
        """True for a registered table that other engines write (no write ids)."""
        return not self.managed

    @property
    def table_type(self) -> str:
        """``"MANAGED"`` or ``"EXTERNAL"`` (as DESCRIBE shows it)."""
        return "MANAGED" if self.managed else "EXTERNAL"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the entry (the notification log's message body)."""
        return {
            "table_id": self.table_id,
            "database": self.name.database,
            "table": self.name.table,
            "location": self.location,
            "managed": self.managed,
            "schema": self.schema,
            "properties": dict(self.properties),
            "timeline": self.timeline.to_json(),
            "write_ids": None if self.valid_write_ids is None else str(self.valid_write_ids),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], as_of_event: int) -> TableEntry:
        """The entry from :meth:`to_json`'s dict, reflecting event ``as_of_event``."""
        write_ids = data.get("write_ids")
        return cls(
            table_id=int(data["table_id"]),
            name=TableName(data["database"], data["table"]),
            location=data["location"],
            managed=bool(data["managed"]),
            schema=data.get("schema"),
            properties=dict(data.get("properties") or {}),
            timeline=TimelineSummary.from_json(data.get("timeline")),
            valid_write_ids=None if write_ids is None else ValidWriteIdList.parse(write_ids),
            as_of_event=as_of_event,
        )

    def describe(self) -> list[tuple[str, str]]:
        """``(key, value)`` rows for DESCRIBE TABLE EXTENDED's table section."""
        rows = [
            ("Database", self.name.database),
            ("Table", self.name.table),
            ("Table Id", str(self.table_id)),
            ("Type", self.table_type),
            ("Location", self.location),
            ("Provider", "hudi"),
            ("Last Completed Instant", self.timeline.last_completed or ""),
            ("Write Ids", "" if self.valid_write_ids is None else str(self.valid_write_ids)),
        ]
        rows += [(f"Property {k}", v) for k, v in sorted(self.properties.items())]
        return rows


def dumps(data: Mapping[str, Any]) -> str:
    """Compact, key-sorted JSON (what the catalog stores in text columns)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class TableSnapshot:
    """One table as a statement sees it: its id and ValidWriteIdList (None: external)."""

    name: TableName
    table_id: int
    valid_write_ids: ValidWriteIdList | None


@dataclass(frozen=True)
class StatementSnapshot:
    """The table ids and ValidWriteIdLists a statement fetched at its start (one DB call).

    ``head_event_id`` is the newest notification-log event id at that moment.
    """

    tables: Mapping[TableName, TableSnapshot]
    head_event_id: int

    def get(self, identifier: TableIdentifier) -> TableSnapshot:
        """The snapshot of one named table.

        Raises:
            TableNotFoundError: the table did not exist when the statement began.
        """
        name = TableName.of(identifier)
        try:
            return self.tables[name]
        except KeyError:
            raise TableNotFoundError(
                f"table {name} does not exist in the catalog; check the name with SHOW TABLES "
                f"IN {name.database}, or create it first"
            ) from None

    def __contains__(self, identifier: object) -> bool:
        if not isinstance(identifier, (str, tuple, TableName)):
            return False
        return TableName.of(identifier) in self.tables

    def with_own_write(self, identifier: TableIdentifier, write_id: int) -> (
        StatementSnapshot
    ):
        """This snapshot with ``write_id`` marked committed: a writer reading its own write."""
        snap = self.get(identifier)
        if snap.valid_write_ids is None:
            return self
        tables = dict(self.tables)
        tables[snap.name] = TableSnapshot(
            snap.name, snap.table_id, snap.valid_write_ids.with_committed(write_id)
        )
        return StatementSnapshot(tables, self.head_event_id)
