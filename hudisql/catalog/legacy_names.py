"""Names an earlier hudisql stored in mixed case, and the lower-case names they are given.

Catalog names are case-insensitive and stored in lower case (Hive's rule; see
:class:`~hudisql.catalog.entry.TableName`). A catalog database written before that rule
may hold ``Trips`` or a database ``Sales``. When a catalog opens, each such name is
renamed to its lower-case form (one write transaction, with the usual notification-log
events, so every session's cache follows), keeping its table id, location, files and
write ids: the table stays reachable as ``trips``, ``Trips`` or ``TRIPS``.

Two stored names that differ only in case (``T`` and ``t``) cannot both become ``t``. The
one already in lower case keeps its name (else the oldest: the smallest table id, or the
earliest created database); each other one gets the first free name ``<name>_2``,
``<name>_3``... and a warning says so. Nothing is dropped or merged. This module plans the
renames; :meth:`CatalogStore.normalize_stored_names` applies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from hudisql.catalog.entry import normalize_name

K = TypeVar("K")


@dataclass(frozen=True)
class StoredDatabase:
    """A database row as stored: its name and when it was created."""

    name: str
    created_at: float


@dataclass(frozen=True)
class StoredTable:
    """A table row's name as stored, with its table id."""

    table_id: int
    database: str
    table: str


@dataclass(frozen=True)
class NameFix:
    """One stored name to change: a database (``table_id`` None) or a table.

    ``old_table``/``table`` are None for a database. A table appears here when its own name
    or its database's name changes.
    """

    old_database: str
    database: str
    table_id: int | None = None
    old_table: str | None = None
    table: str | None = None

    @property
    def old(self) -> str:
        """The stored name: ``db`` or ``db.table``."""
        return self.old_database if self.old_table is None else (
            f"{self.old_database}.{self.old_table}")

    @property
    def new(self) -> str:
        """The name it is given: ``db`` or ``db.table``."""
        return self.database if self.table is None else f"{self.database}.{self.table}"

    @property
    def wanted(self) -> str:
        """The plain lower-case name: what :attr:`new` is unless that was taken."""
        if self.table is None or self.old_table is None:
            return normalize_name(self.old_database)
        return f"{self.database}.{normalize_name(self.old_table)}"

    @property
    def clashed(self) -> bool:
        """True when the plain lower-case name was taken and a suffixed one was given."""
        return self.new != self.wanted


def is_normalized(name: str) -> bool:
    """True when ``name`` is stored as the catalog now keeps names (lower case)."""
    return name == normalize_name(name)


def needs_fixes(databases: Iterable[str], tables: Iterable[StoredTable]) -> bool:
    """True when some stored database or table name is not in lower case."""
    return not all(is_normalized(d) for d in databases) or not all(
        is_normalized(t.database) and is_normalized(t.table) for t in tables)


def plan_fixes(
    databases: Sequence[StoredDatabase], tables: Sequence[StoredTable]
) -> tuple[list[NameFix], list[NameFix]]:
    """The database renames and the table renames that leave every stored name lower case.

    Deterministic: the same rows always give the same plan. Returns ``(databases, tables)``;
    a renamed database never takes an existing database's name, so its tables keep their
    names (in lower case) and no two databases are merged.
    """
    ordered = sorted(databases, key=lambda d: (d.created_at, d.name))
    db_targets = _targets([(d.name, d.name) for d in ordered])
    db_fixes = [NameFix(old, new) for old, new in db_targets.items() if old != new]
    table_fixes: list[NameFix] = []
    by_database: dict[str, list[StoredTable]] = {}
    for row in sorted(tables, key=lambda t: t.table_id):
        database = db_targets.get(row.database, normalize_name(row.database))
        by_database.setdefault(database, []).append(row)
    for database, rows in by_database.items():
        names = _targets([(r.table_id, r.table) for r in rows])
        for row in rows:
            new_table = names[row.table_id]
            if (row.database, row.table) != (database, new_table):
                table_fixes.append(NameFix(row.database, database, row.table_id, row.table,
                                           new_table))
    return db_fixes, table_fixes


def _targets(named: Sequence[tuple[K, str]]) -> dict[K, str]:
    """Each ``(key, name)`` of ``named`` (in priority order) to a unique lower-case name.

    Names already in lower case keep theirs; then, in order, a mixed-case name takes its
    lower-case form if free; the rest take the first free ``<name>_<n>`` (n = 2, 3, ...).
    """
    taken = {name for _, name in named if is_normalized(name)}
    targets = {key: name for key, name in named if is_normalized(name)}
    deferred: list[tuple[K, str]] = []
    for key, name in named:
        if key in targets:
            continue
        lower = normalize_name(name)
        if lower in taken:
            deferred.append((key, lower))
        else:
            targets[key] = lower
            taken.add(lower)
    for key, lower in deferred:
        n = 2
        while f"{lower}_{n}" in taken:
            n += 1
        targets[key] = f"{lower}_{n}"
        taken.add(targets[key])
    return targets
