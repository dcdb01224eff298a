"""The catalog: :class:`Catalog` (the interface sessions use) and :class:`SqlCatalog`, its
implementation over SQLite or PostgreSQL with the synchronized metastore cache.

A statement calls :meth:`Catalog.begin_statement` once with the tables it names (the one
database call it makes), then :meth:`Catalog.load_table` for each; a hit costs no database
call. Writers bracket a data commit with :meth:`Catalog.allocate_write_id` and
:meth:`Catalog.commit_write` (or use :meth:`Catalog.write_transaction`).
"""

from __future__ import annotations

import abc
import contextlib
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

from hudisql.catalog import db
from hudisql.catalog.cache import CacheStats, MetastoreCache
from hudisql.catalog.entry import (
    StatementSnapshot,
    TableEntry,
    TableIdentifier,
    TableName,
    TimelineSummary,
)
from hudisql.catalog.external import TableState, read_table_state, timeline_summary
from hudisql.catalog.legacy_names import NameFix
from hudisql.catalog.lock import CATALOG_URL_OPTION, CatalogLockProvider
from hudisql.catalog.poller import NotificationPoller
from hudisql.catalog.store import CatalogStore, WriteId
from hudisql.catalog.write_ids import ValidWriteIdList
from hudisql.errors import CatalogError, CatalogUnavailableError, TableNotFoundError
from hudisql.table.format.properties import TableProperties
from hudisql.table.io.locations import absolute_location, is_remote, join_location, redact
from hudisql.table.io.storage import Storage
from hudisql.txn.lock import LOCK_PROVIDER

_log = logging.getLogger(__name__)


class WriteTransaction:
    """An open write id and the metadata changes to commit with it."""

    def __init__(self, write: WriteId) -> None:
        self.write = write
        self.schema: str | None = None
        self.set_properties: dict[str, str] = {}
        self.unset_properties: list[str] = []
        self.timeline: TimelineSummary | None = None
        self.entry: TableEntry | None = None

    @property
    def write_id(self) -> int:
        """The write id this transaction commits."""
        return self.write.write_id

    def update(
        self, *, schema: str | None = None, set_properties: Mapping[str, str] | None = None,
        unset_properties: Sequence[str] = (), timeline: TimelineSummary | None = None,
    ) -> None:
        """Record metadata changes to commit with the write id."""
        if schema is not None:
            self.schema = schema
        self.set_properties.update(set_properties or {})
        self.unset_properties.extend(unset_properties)
        if timeline is not None:
            self.timeline = timeline


class Catalog(abc.ABC):
    """Databases and tables by name, write ids, and table metadata a statement can trust."""

    def __init__(self, name: str, **properties: Any) -> None:
        self.name = name
        self.properties = dict(properties)

    @abc.abstractmethod
    def create_database(
        self, name: str, location: str | None = None,
        properties: Mapping[str, str] | None = None, exist_ok: bool = False,
    ) -> None:
        """Create a database; raises CatalogError when it exists (unless ``exist_ok``)."""

    @abc.abstractmethod
    def drop_database(self, name: str, cascade: bool = False, missing_ok: bool = False) -> None:
        """Drop a database; raises CatalogError when absent or not empty without cascade."""

    @abc.abstractmethod
    def list_databases(self) -> list[str]:
        """The database names, sorted."""

    @abc.abstractmethod
    def list_tables(self, database: str = "default") -> list[TableName]:
        """The tables of ``database`` (SHOW TABLES), sorted; CatalogError if it is absent."""

    @abc.abstractmethod
    def create_table(
        self, identifier: TableIdentifier, *, schema: str | None = None,
        location: str | None = None, properties: Mapping[str, str] | None = None,
        timeline: TimelineSummary | None = None,
    ) -> TableEntry:
        """Create a managed table's catalog entry; TableAlreadyExistsError if the name is taken."""

    @abc.abstractmethod
    def register_table(self, identifier: TableIdentifier, location: str) -> TableEntry:
        """Register the Hudi table at ``location`` as an external table."""

    @abc.abstractmethod
    def drop_table(self, identifier: TableIdentifier, purge: bool = False) -> TableEntry:
        """Drop a table (``purge``: also delete a managed table's files); returns its entry."""

    @abc.abstractmethod
    def rename_table(self, old: TableIdentifier, new: TableIdentifier) -> TableEntry:
        """Rename a table, keeping its table id."""

    @abc.abstractmethod
    def alter_table(
        self, identifier: TableIdentifier, *, schema: str | None = None,
        location: str | None = None, set_properties: Mapping[str, str] | None = None,
        unset_properties: Sequence[str] = (),
    ) -> TableEntry:
        """Change schema, location or properties (a DDL: the write id advances)."""

    @abc.abstractmethod
    def begin_statement(self, identifiers: Iterable[TableIdentifier]) -> StatementSnapshot:
        """Fetch the table ids and ValidWriteIdLists of a statement's tables (one DB call)."""

    @abc.abstractmethod
    def load_table(
        self, identifier: TableIdentifier, valid_write_ids: ValidWriteIdList | None = None,
        table_id: int | None = None,
    ) -> TableEntry:
        """The table's entry, fresh for ``valid_write_ids`` (from the cache when it may be)."""

    def lock_options(self) -> dict[str, str]:
        """The write options giving a table of this catalog the catalog's own lock (shared
        by every process and machine using the catalog); empty: the commit protocol's default.
        """
        return {}

    @abc.abstractmethod
    def tables_at(self, location: str) -> list[TableEntry]:
        """The tables whose location is ``location`` (compared by :func:`normalize_location`),
        read fresh from the database, sorted by name; empty when none is there."""

    @abc.abstractmethod
    def allocate_write_id(self, identifier: TableIdentifier) -> WriteId:
        """Open the next write id of a managed table, before its data commit."""

    @abc.abstractmethod
    def commit_write(
        self, write: WriteId, *, schema: str | None = None,
        set_properties: Mapping[str, str] | None = None, unset_properties: Sequence[str] = (),
        timeline: TimelineSummary | None = None,
    ) -> TableEntry:
        """Commit a write id with the table's new metadata; returns the new entry."""

    @abc.abstractmethod
    def abort_write(self, write: WriteId) -> None:
        """Abort a write id (the data commit failed)."""

    @abc.abstractmethod
    def stats(self) -> CacheStats:
        """Cache counters: hits, misses, refreshes, events applied, lag."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop background work and release database connections."""

    def resolve(self, snapshot: StatementSnapshot, identifier: TableIdentifier) -> TableEntry:
        """The entry of a table a statement named, checked against the statement's snapshot.

        Raises:
            TableNotFoundError: the table did not exist when the statement began, or was
                dropped since.
        """
        snap = snapshot.get(identifier)
        return self.load_table(snap.name, snap.valid_write_ids, snap.table_id)

    @contextlib.contextmanager
    def write_transaction(self, identifier: TableIdentifier) -> Iterator[WriteTransaction]:
        """Allocate a write id, yield it, commit it on success and abort it on error."""
        tx = WriteTransaction(self.allocate_write_id(identifier))
        try:
            yield tx
        except BaseException:
            self.abort_write(tx.write)
            raise
        tx.entry = self.commit_write(
            tx.write, schema=tx.schema, set_properties=tx.set_properties,
            unset_properties=tx.unset_properties, timeline=tx.timeline)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class SqlCatalog(Catalog):
    """The catalog in a SQL database (SQLite file or PostgreSQL) with the synchronized cache.

    Properties: ``uri`` (SQLAlchemy URL; default a SQLite file in the warehouse),
    ``warehouse`` (where managed tables live), ``poll_interval`` (seconds between polls of the
    notification log; ``0`` or ``None``: no background thread, call :meth:`poll`),
    ``busy_timeout`` (seconds to wait for a locked database), ``connect_timeout``,
    ``prewarm`` (load every table at start), ``external_check_interval`` (seconds between
    timeline checks of an external table; 0: on every load).

    Database and table names are case-insensitive and stored in lower case (see
    :class:`TableName`). Names an earlier hudisql stored in mixed case are renamed to lower
    case when the catalog opens (:mod:`hudisql.catalog.legacy_names`); ``name_fixes`` lists
    the renames this instance made.

    Raises:
        CatalogUnavailableError: the database cannot be reached.
    """

    def __init__(self, name: str = "default", **properties: Any) -> None:
        super().__init__(name, **properties)
        self.warehouse = absolute_location(str(properties.get("warehouse") or "spark-warehouse"))
        uri = properties.get("uri") or sqlite_url(self.warehouse)
        self.uri = str(uri)
        if not properties.get("uri") and is_remote(self.warehouse):
            _log.warning(
                "the catalog of warehouse %s is the local SQLite file %s (a database cannot "
                "live in an object store); other machines do not see it: give connect() "
                "catalog='postgresql://...' (or a catalog 'uri') to share one",
                redact(self.warehouse), self.uri.removeprefix("sqlite:///"))
        if self.uri.startswith("sqlite:///"):
            _make_parent(self.uri[len("sqlite:///"):], self.uri)
        self.engine = db.create_engine(
            db.normalize_url(self.uri),
            busy_timeout=_float(properties.get("busy_timeout"), 5.0),
            connect_timeout=_float(properties.get("connect_timeout"), 5.0),
        )
        self.store = CatalogStore(self.engine)
        self.cache = MetastoreCache()
        self.external_check_interval = _float(properties.get("external_check_interval"), 0.0)
        interval = _float(properties.get("poll_interval"), 0.2)
        self.poller = NotificationPoller(self.store, self.cache, interval or 1.0)
        self.name_fixes: list[NameFix] = []
        try:
            db.initialize(self.engine, time.time())
            self.name_fixes = self.store.normalize_stored_names()
            _log_name_fixes(self.name_fixes)
            if _bool(properties.get("prewarm"), True):
                self.prewarm()
            else:
                self.cache.prewarm((), self.store.head_event_id())
        except BaseException:
            self.engine.dispose()
            raise
        if interval:
            self.poller.start()

    # ------------------------------------------------------------ lifecycle

    def prewarm(self) -> None:
        """Load every table into the cache, noting the log position read with them."""
        entries, head = self.store.read_all()
        self.cache.prewarm(entries, head)

    def poll(self, max_events: int | None = None) -> int:
        """Apply the next notification-log events now; returns how many were new."""
        return self.poller.poll_once(max_events)

    def sync(self) -> int:
        """Apply every event written so far; returns how many were new."""
        return self.poller.catch_up()

    def close(self) -> None:
        """Stop the poller and dispose of the connection pool."""
        self.poller.stop()
        self.engine.dispose()

    def stats(self) -> CacheStats:
        """Cache counters of this catalog instance."""
        return self.cache.stats()

    def lock_options(self) -> dict[str, str]:
        """``hoodie.write.lock.provider=catalog`` with this catalog's database URL."""
        return {LOCK_PROVIDER: "catalog", CATALOG_URL_OPTION: self.uri}

    def lock_provider(self, lease: float = 60.0) -> CatalogLockProvider:
        """A table lock provider backed by this catalog's database (shared across machines)."""
        return CatalogLockProvider(self.engine, lease=lease)

    def default_location(self, name: TableName) -> str:
        """Where a managed table lives: ``<warehouse>/[<db>.db/]<table>`` (names escaped)."""
        table = _path_part(name.table)
        if name.database == "default":
            return join_location(self.warehouse, table)
        return join_location(self.warehouse, _path_part(name.database) + ".db", table)

    # ------------------------------------------------------------ databases

    def create_database(
        self, name: str, location: str | None = None,
        properties: Mapping[str, str] | None = None, exist_ok: bool = False,
    ) -> None:
        """Create a database; raises CatalogError when it exists (unless ``exist_ok``)."""
        self.store.create_database(name, location, properties, exist_ok)

    def drop_database(self, name: str, cascade: bool = False, missing_ok: bool = False) -> None:
        """Drop a database; raises CatalogError when absent or not empty without cascade."""
        self.store.drop_database(name, cascade, missing_ok)

    def list_databases(self) -> list[str]:
        """The database names, sorted."""
        return self.store.list_databases()

    def list_tables(self, database: str = "default") -> list[TableName]:
        """The tables of ``database``, sorted; CatalogError if it does not exist."""
        return self.store.list_tables(database)

    # --------------------------------------------------------------- tables

    def create_table(
        self, identifier: TableIdentifier, *, schema: str | None = None,
        location: str | None = None, properties: Mapping[str, str] | None = None,
        timeline: TimelineSummary | None = None,
    ) -> TableEntry:
        """Create a managed table's entry (write id 1); the caller writes its files.

        Raises:
            TableAlreadyExistsError: the name is taken (also by a concurrent session).
            CatalogError: the database does not exist.
        """
        name = TableName.of(identifier)
        entry = self.store.create_table(
            name, location or self.default_location(name), True, schema,
            dict(properties or {}), timeline or TimelineSummary())
        self.cache.install(entry)
        return entry

    def register_table(self, identifier: TableIdentifier, location: str) -> TableEntry:
        """Register the Hudi table at ``location`` as external (other engines write it).

        Raises:
            TableNotFoundError: no Hudi table at ``location``.
            TableAlreadyExistsError: the name is taken.
        """
        name = TableName.of(identifier)
        state = read_table_state(location)
        entry = self.store.create_table(
            name, location, False, state.schema, state.properties, state.timeline)
        self.cache.install(entry)
        return entry

    def drop_table(self, identifier: TableIdentifier, purge: bool = False) -> TableEntry:
        """Drop a table; with ``purge``, also delete a managed table's files afterwards.

        Raises:
            TableNotFoundError: no such table.
        """
        entry = self.store.drop_table(TableName.of(identifier))
        if purge and entry.managed:
            Storage(entry.location).delete_dir("")
        return entry

    def rename_table(self, old: TableIdentifier, new: TableIdentifier) -> TableEntry:
        """Rename a table, keeping its table id.

        Raises:
            TableNotFoundError: ``old`` does not exist.
            TableAlreadyExistsError: ``new`` exists.
        """
        entry = self.store.rename_table(TableName.of(old), TableName.of(new))
        self.cache.install(entry)
        return entry

    def alter_table(
        self, identifier: TableIdentifier, *, schema: str | None = None,
        location: str | None = None, set_properties: Mapping[str, str] | None = None,
        unset_properties: Sequence[str] = (),
    ) -> TableEntry:
        """Change schema, location or properties; the write id advances.

        Raises:
            TableNotFoundError: no such table.
        """
        entry = self.store.alter_table(
            TableName.of(identifier), schema=schema, location=location,
            set_properties=set_properties, unset_properties=unset_properties)
        self.cache.install(entry)
        return entry

    # ---------------------------------------------------------------- reads

    def begin_statement(self, identifiers: Iterable[TableIdentifier]) -> StatementSnapshot:
        """Fetch the table ids and ValidWriteIdLists of a statement's tables: one DB call.

        Tables that do not exist are left out (``snapshot.get`` raises TableNotFoundError).
        """
        snapshot = self.store.snapshot(TableName.of(i) for i in identifiers)
        self.cache.observe_head(snapshot.head_event_id)
        return snapshot

    def load_table(
        self, identifier: TableIdentifier, valid_write_ids: ValidWriteIdList | None = None,
        table_id: int | None = None,
    ) -> TableEntry:
        """The table's entry, never older than ``valid_write_ids``.

        Served from the cache when the cached entry's write ids are equivalent to
        ``valid_write_ids`` and its id is ``table_id``; else read from the database (and
        cached). External tables (``valid_write_ids`` None) are refreshed from their files
        when their timeline moved. Without ``table_id`` this begins a statement of its own.

        Raises:
            TableNotFoundError: no such table, or it was dropped since the statement began.
            CatalogError: a managed table read without its ValidWriteIdList.
        """
        name = TableName.of(identifier)
        if table_id is None:
            return self.resolve(self.begin_statement([name]), name)
        entry = self.cache.lookup(table_id, valid_write_ids)
        if entry is None:
            entry = self._read_through(name, table_id)
        if entry.managed and valid_write_ids is None:
            raise CatalogError(
                f"table {name} is managed: reading it needs the statement's ValidWriteIdList "
                "(from begin_statement); without it the cache could serve a stale entry")
        if entry.external:
            entry = self._fresh_external(entry)
        return entry

    def _read_through(self, name: TableName, table_id: int) -> TableEntry:
        entry = self.store.read_table(table_id)
        if entry is None:
            raise TableNotFoundError(
                f"table {name} (table id {table_id}) was dropped after the statement began; "
                "run the statement again")
        self.cache.install(entry)
        return entry

    def _fresh_external(self, entry: TableEntry) -> TableEntry:
        now = time.monotonic()
        checked = self.cache.checked_at(entry.table_id)
        if checked and now - checked < self.external_check_interval:
            return entry
        storage = Storage(entry.location)
        summary = timeline_summary(storage, TableProperties(entry.properties, entry.location))
        if summary.marker != entry.timeline.marker:
            state = read_table_state(entry.location)
            refreshed = self.store.refresh_external(
                entry.table_id, state.schema, state.properties, state.timeline)
            if refreshed is not None:
                self.cache.install(refreshed)
                self.cache.count_external_refresh()
                entry = refreshed
        self.cache.mark_checked(entry.table_id, now)
        return entry

    def tables_at(self, location: str) -> list[TableEntry]:
        """The tables whose location is ``location`` (compared by :func:`normalize_location`),
        read fresh from the database (not from the cache), sorted by name."""
        wanted = normalize_location(location)
        found = [self.store.read_table(table_id)
                 for table_id, where in self.store.table_locations()
                 if normalize_location(where) == wanted]
        return sorted((e for e in found if e is not None), key=lambda e: e.name)

    # ----------------------------------------------------------- write ids

    def allocate_write_id(self, identifier: TableIdentifier) -> WriteId:
        """Open the next write id of a managed table.

        Raises:
            TableNotFoundError: no such table.
            CatalogError: the table is external.
        """
        return self.store.allocate_write_id(TableName.of(identifier))

    def commit_write(
        self, write: WriteId, *, schema: str | None = None,
        set_properties: Mapping[str, str] | None = None, unset_properties: Sequence[str] = (),
        timeline: TimelineSummary | None = None,
    ) -> TableEntry:
        """Commit ``write`` with the new metadata; the timeline summary and the schema are
        read from the table's files when not given (a write may have evolved the schema:
        ``hoodie.schema.on.write.evolution.enable``, a MERGE with new columns), so the next
        statement of any session sees the table's columns as they are. The new entry is
        cached at once (read your writes).

        Raises:
            TableNotFoundError: the table was dropped meanwhile.
            CatalogError: the write id is not open.
        """
        if timeline is None or schema is None:
            state = _state_at(write.location)
            if state is not None:
                timeline = timeline if timeline is not None else state.timeline
                schema = schema if schema is not None else state.schema
        entry = self.store.commit_write(
            write, schema=schema, set_properties=set_properties,
            unset_properties=unset_properties, timeline=timeline)
        self.cache.install(entry)
        return entry

    def abort_write(self, write: WriteId) -> None:
        """Abort ``write``; raises CatalogError when it is not open."""
        self.store.abort_write(write)


def _log_name_fixes(fixes: list[NameFix]) -> None:
    for fix in fixes:
        kind = "database" if fix.table is None else "table"
        if fix.clashed:
            _log.warning(
                "catalog %s %s was renamed to %s, not %s: names are case-insensitive now and "
                "another %s holds that name; its data is untouched (give it a name of your "
                "choice with ALTER TABLE %s RENAME TO ...)", kind, fix.old, fix.new, fix.wanted,
                kind, fix.new if fix.table is not None else f"{fix.new}.<table>")
        else:
            _log.info("catalog %s %s is now named %s (names are stored in lower case)",
                      kind, fix.old, fix.new)


def sqlite_url(warehouse: str) -> str:
    """The default catalog: a SQLite file in the warehouse directory; for a warehouse in an
    object store (where SQLite cannot live), a file of this user's named after the
    warehouse: ``~/.hudisql/catalogs/<scheme>-<bucket>-<path>.db``."""
    if is_remote(warehouse):
        head = str(warehouse).partition("?")[0]
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", head.replace("://", "-")).strip("-")
        return "sqlite:///" + str(Path.home() / ".hudisql" / "catalogs" / f"{slug}.db")
    return "sqlite:///" + os.path.join(os.path.abspath(warehouse), "hudisql_catalog.db")


def normalize_location(location: str) -> str:
    """One spelling of a table location, to compare two: a local path or ``file:`` URI
    (``file:/p``, ``file:///p``, ``file://localhost/p``, percent-encoded or not) becomes an
    absolute normalized path; another URI (``s3://...``) loses its trailing ``/``."""
    return absolute_location(location)


def _make_parent(path: str, uri: str) -> None:
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    except OSError as exc:
        raise CatalogUnavailableError(
            f"the catalog database {uri} cannot be created: {exc}; point 'uri' or "
            "'warehouse' at a writable directory") from None


def _state_at(location: str) -> TableState | None:
    """What the table's files say (schema, timeline summary), or None before it exists."""
    if not Storage(location).is_file(".hoodie/hoodie.properties"):
        return None
    return read_table_state(location)


def _path_part(name: str) -> str:
    part = quote(name, safe=" -_.,;'\"()=+@")
    return part.replace(".", "%2E") if part in {".", ".."} else part


def _float(value: Any, default: float) -> float:
    if value is None or value == "":
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise CatalogError(f"catalog property value {value!r} is not a number") from None


def _bool(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes", "on"}:
        return True
    if text in {"false", "0", "no", "off"}:
        return False
    raise CatalogError(f"catalog property value {value!r} is not a boolean (true/false)")
