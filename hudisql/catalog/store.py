"""The catalog store: every read and write of the catalog database, with no cache.

Each change is one write transaction that updates the rows, advances the table's write id
(managed tables) and appends its notification-log events. Reads are single statements that
also return the newest event id, so whatever they read is tagged with the exact event it
reflects. Parameterized queries only (SQLAlchemy Core).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from hudisql.catalog import db
from hudisql.catalog.entry import (
    StatementSnapshot,
    TableEntry,
    TableName,
    TableSnapshot,
    TimelineSummary,
    dumps,
    normalize_name,
)
from hudisql.catalog.events import EventType, NotificationEvent
from hudisql.catalog.legacy_names import (
    NameFix,
    StoredDatabase,
    StoredTable,
    needs_fixes,
    plan_fixes,
)
from hudisql.catalog.write_ids import ValidWriteIdList
from hudisql.errors import CatalogError, TableAlreadyExistsError, TableNotFoundError

_HEAD = (
    sa.select(db.sequences.c.value)
    .where(db.sequences.c.name == "event_id")
    .scalar_subquery()
    .label("head_event_id")
)


@dataclass(frozen=True)
class WriteId:
    """An open write id of one table: the handle of a data commit in progress."""

    table_id: int
    name: TableName
    write_id: int
    location: str


class _Tx:
    """One write transaction: hands out event ids in order and appends events."""

    def __init__(self, conn: Connection, now: float) -> None:
        self.conn = conn
        self.now = now
        self.last_event_id = int(
            conn.execute(
                sa.select(db.sequences.c.value).where(db.sequences.c.name == "event_id")
            ).scalar_one()
        )
        self._first = self.last_event_id

    def emit(
        self,
        event_type: EventType,
        name: TableName | None,
        table_id: int | None,
        write_id: int | None,
        message: Mapping[str, Any],
        database: str | None = None,
    ) -> int:
        self.last_event_id += 1
        self.conn.execute(
            sa.insert(db.notification_log).values(
                event_id=self.last_event_id,
                event_time=self.now,
                event_type=event_type.value,
                db_name=name.database if name else database,
                table_name=name.table if name else None,
                table_id=table_id,
                write_id=write_id,
                message=dumps(message),
            )
        )
        return self.last_event_id

    def finish(self) -> None:
        if self.last_event_id != self._first:
            self.conn.execute(
                sa.update(db.sequences)
                .where(db.sequences.c.name == "event_id")
                .values(value=self.last_event_id)
            )


class CatalogStore:
    """Reads and writes the catalog database directly (the "ObjectStore" of Hive's metastore)."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock

    # ----------------------------------------------------------------- reads

    def snapshot(self, names: Iterable[TableName]) -> StatementSnapshot:
        """Table ids and ValidWriteIdLists of ``names`` plus the head event id: one query.

        Tables that do not exist are absent from the snapshot.
        """
        wanted = sorted(set(names))
        cond = sa.or_(
            *(sa.and_(db.tables.c.db_name == n.database, db.tables.c.name == n.table)
              for n in wanted)
        ) if wanted else sa.false()
        stmt = (
            sa.select(
                db.tables.c.table_id, db.tables.c.db_name, db.tables.c.name,
                db.tables.c.managed, db.tables.c.write_id_hwm,
                db.write_ids.c.write_id, db.write_ids.c.state, _HEAD,
            )
            .select_from(db.tables.outerjoin(
                db.write_ids, db.tables.c.table_id == db.write_ids.c.table_id))
            .where(cond)
        )
        with db.read_connection(self.engine, "fetching the statement's write ids") as conn:
            rows = conn.execute(stmt).all() if wanted else []
            # A statement naming no existing table still learns the head event id.
            head = int(rows[0].head_event_id if rows else conn.execute(sa.select(_HEAD))
                       .scalar_one())
        tables: dict[TableName, TableSnapshot] = {}
        for table_id, group in _group(rows).items():
            first = group[0]
            name = TableName(first.db_name, first.name)
            vwil = _write_id_list(name, first.write_id_hwm, group) if first.managed else None
            tables[name] = TableSnapshot(name, table_id, vwil)
        return StatementSnapshot(tables, head)

    def read_table(self, table_id: int) -> TableEntry | None:
        """The table with id ``table_id`` as it is now, tagged with its write ids and event."""
        with db.read_connection(self.engine, f"reading table id {table_id}") as conn:
            entries, _ = self._read(conn, db.tables.c.table_id == table_id)
        return entries[0] if entries else None

    def read_table_by_name(self, name: TableName) -> TableEntry | None:
        """The table named ``name`` as it is now, or None."""
        with db.read_connection(self.engine, f"reading table {name}") as conn:
            entries, _ = self._read(
                conn, sa.and_(db.tables.c.db_name == name.database, db.tables.c.name == name.table)
            )
        return entries[0] if entries else None

    def read_all(self) -> tuple[list[TableEntry], int]:
        """Every table and the head event id, read in one snapshot (the cache prewarm)."""
        with db.read_connection(self.engine, "prewarming the catalog cache") as conn:
            return self._read(conn, sa.true())

    def table_locations(self) -> list[tuple[int, str]]:
        """Every table's id and location as stored (one query; no other metadata read)."""
        with db.read_connection(self.engine, "listing the tables' locations") as conn:
            rows = conn.execute(sa.select(db.tables.c.table_id, db.tables.c.location)).all()
        return [(int(r.table_id), str(r.location)) for r in rows]

    def _read(self, conn: Connection, where: Any) -> tuple[list[TableEntry], int]:
        stmt = (
            sa.select(db.tables, db.write_ids.c.write_id, db.write_ids.c.state, _HEAD)
            .select_from(db.tables.outerjoin(
                db.write_ids, db.tables.c.table_id == db.write_ids.c.table_id))
            .where(where)
        )
        rows = conn.execute(stmt).all()
        head = int(rows[0].head_event_id) if rows else int(conn.execute(sa.select(_HEAD))
                                                           .scalar_one())
        return [_entry(group, head) for group in _group(rows).values()], head

    def head_event_id(self) -> int:
        """The id of the newest notification-log event (0 when there is none)."""
        with db.read_connection(self.engine, "reading the notification log head") as conn:
            return int(conn.execute(sa.select(_HEAD)).scalar_one())

    def events_after(self, event_id: int, limit: int = 1000) -> list[NotificationEvent]:
        """Notification-log events with ids above ``event_id``, oldest first."""
        log = db.notification_log
        stmt = sa.select(log).where(log.c.event_id > event_id).order_by(log.c.event_id)
        with db.read_connection(self.engine, "reading the notification log") as conn:
            rows = conn.execute(stmt.limit(limit)).all()
        return [NotificationEvent.from_row(r) for r in rows]

    def list_tables(self, database: str) -> list[TableName]:
        """The names of the tables in ``database`` (any case), sorted.

        Raises:
            CatalogError: the database does not exist.
        """
        database = normalize_name(database)
        with db.read_connection(self.engine, f"listing the tables of {database}") as conn:
            _require_database(conn, database)
            rows = conn.execute(
                sa.select(db.tables.c.name).where(db.tables.c.db_name == database)
            ).all()
        return sorted(TableName(database, r.name) for r in rows)

    def list_databases(self) -> list[str]:
        """The names of all databases, sorted."""
        with db.read_connection(self.engine, "listing databases") as conn:
            return sorted(r.name for r in conn.execute(sa.select(db.databases.c.name)).all())

    # ------------------------------------------------------------- databases

    def create_database(
        self, name: str, location: str | None = None,
        properties: Mapping[str, str] | None = None, exist_ok: bool = False,
    ) -> None:
        """Create database ``name``, stored in lower case (names are case-insensitive).

        Raises:
            CatalogError: it exists in any case (unless ``exist_ok``) or the name is empty.
        """
        if not name:
            raise CatalogError("a database name must not be empty")
        name = normalize_name(name)
        with self._write(f"creating database {name!r}") as tx:
            exists = tx.conn.execute(
                sa.select(db.databases.c.name).where(db.databases.c.name == name)).first()
            if exists is not None:
                if exist_ok:
                    return
                raise CatalogError(
                    f"database {name!r} already exists; use CREATE DATABASE IF NOT EXISTS")
            tx.conn.execute(sa.insert(db.databases).values(
                name=name, location=location, properties=dumps(properties or {}),
                created_at=tx.now))
            tx.emit(EventType.CREATE_DATABASE, None, None, None, {"database": name}, name)

    def drop_database(self, name: str, cascade: bool = False, missing_ok: bool = False) -> None:
        """Drop database ``name`` (any case; with its tables when ``cascade``).

        Raises:
            CatalogError: it does not exist, is ``default``, or holds tables without cascade.
        """
        name = normalize_name(name)
        if name == "default":
            raise CatalogError("the default database cannot be dropped")
        with self._write(f"dropping database {name!r}") as tx:
            if tx.conn.execute(sa.select(db.databases.c.name)
                               .where(db.databases.c.name == name)).first() is None:
                if missing_ok:
                    return
                raise CatalogError(f"database {name!r} does not exist; check SHOW DATABASES")
            ids = [r.table_id for r in tx.conn.execute(
                sa.select(db.tables.c.table_id, db.tables.c.name)
                .where(db.tables.c.db_name == name)).all()]
            if ids and not cascade:
                raise CatalogError(
                    f"database {name!r} still holds {len(ids)} table(s); drop them first or "
                    "use DROP DATABASE ... CASCADE")
            for table_id in ids:
                self._drop(tx, table_id)
            tx.conn.execute(sa.delete(db.databases).where(db.databases.c.name == name))
            tx.emit(EventType.DROP_DATABASE, None, None, None, {"database": name}, name)

    def normalize_stored_names(self) -> list[NameFix]:
        """Rename each database and table an earlier hudisql stored with upper-case letters
        to its lower-case name (see :mod:`hudisql.catalog.legacy_names`); returns the renames.

        Table ids, locations and files stay; each table gets a ``RENAME_TABLE`` event (a
        managed table's write id advances, as on any rename), each database a
        ``CREATE_DATABASE`` of its new name and a ``DROP_DATABASE`` of its old one. A read
        first checks whether there is anything to do, so a catalog in order is never locked
        for writing; the check is repeated inside the write, where a concurrent session may
        already have done the work.
        """
        with db.read_connection(self.engine, "checking the case of the catalog's names") as conn:
            databases, tables = _stored_names(conn)
        if not needs_fixes((d.name for d in databases), tables):
            return []
        with self._write("renaming mixed-case names to lower case") as tx:
            db_fixes, table_fixes = plan_fixes(*_stored_names(tx.conn))
            for fix in db_fixes:
                row = tx.conn.execute(sa.select(db.databases).where(
                    db.databases.c.name == fix.old_database)).one()
                tx.conn.execute(sa.insert(db.databases).values(
                    name=fix.database, location=row.location, properties=row.properties,
                    created_at=row.created_at))
                tx.emit(EventType.CREATE_DATABASE, None, None, None,
                        {"database": fix.database, "renamed_from": fix.old_database},
                        fix.database)
            for fix in table_fixes:
                assert fix.table_id is not None and fix.table is not None
                tx.conn.execute(sa.update(db.tables).where(db.tables.c.table_id == fix.table_id)
                                .values(db_name=fix.database, name=fix.table, updated_at=tx.now))
                self._ddl_events(tx, fix.table_id, EventType.RENAME_TABLE,
                                 {"old_database": fix.old_database, "old_table": fix.old_table})
            for fix in db_fixes:
                tx.conn.execute(sa.delete(db.databases).where(
                    db.databases.c.name == fix.old_database))
                tx.emit(EventType.DROP_DATABASE, None, None, None,
                        {"database": fix.old_database, "renamed_to": fix.database},
                        fix.old_database)
        return [*db_fixes, *table_fixes]

    # ---------------------------------------------------------------- tables

    def create_table(
        self, name: TableName, location: str, managed: bool, schema: str | None,
        properties: Mapping[str, str], timeline: TimelineSummary,
    ) -> TableEntry:
        """Insert a table; a managed table gets write id 1, committed.

        Raises:
            TableAlreadyExistsError: a table of that name exists (also when a concurrent
                session created it first).
            CatalogError: the database does not exist.
        """
        try:
            with self._write(f"creating table {name}") as tx:
                _require_database(tx.conn, name.database)
                if _table_id(tx.conn, name) is not None:
                    raise _already_exists(name)
                table_id = self._next_table_id(tx)
                tx.conn.execute(sa.insert(db.tables).values(
                    table_id=table_id, db_name=name.database, name=name.table,
                    location=location, managed=managed, schema=schema,
                    properties=dumps(properties), timeline=dumps(timeline.to_json()),
                    write_id_hwm=0, created_at=tx.now, updated_at=tx.now))
                return self._ddl_events(tx, table_id, EventType.CREATE_TABLE, {})
        except sa.exc.IntegrityError:
            raise _already_exists(name) from None

    def drop_table(self, name: TableName) -> TableEntry:
        """Delete the table named ``name``; returns its last entry.

        Raises:
            TableNotFoundError: no such table.
        """
        with self._write(f"dropping table {name}") as tx:
            table_id = _table_id(tx.conn, name)
            if table_id is None:
                raise _not_found(name)
            entries, _ = self._read(tx.conn, db.tables.c.table_id == table_id)
            self._drop(tx, table_id)
            return entries[0]

    def _drop(self, tx: _Tx, table_id: int) -> None:
        row = tx.conn.execute(sa.select(db.tables.c.db_name, db.tables.c.name)
                              .where(db.tables.c.table_id == table_id)).one()
        tx.conn.execute(sa.delete(db.write_ids).where(db.write_ids.c.table_id == table_id))
        tx.conn.execute(sa.delete(db.tables).where(db.tables.c.table_id == table_id))
        tx.emit(EventType.DROP_TABLE, TableName(row.db_name, row.name), table_id, None, {})

    def rename_table(self, old: TableName, new: TableName) -> TableEntry:
        """Rename a table; its table id stays. A managed table's write id advances.

        Raises:
            TableNotFoundError: ``old`` does not exist.
            TableAlreadyExistsError: ``new`` exists.
            CatalogError: ``new``'s database does not exist.
        """
        try:
            with self._write(f"renaming table {old} to {new}") as tx:
                table_id = _table_id(tx.conn, old)
                if table_id is None:
                    raise _not_found(old)
                _require_database(tx.conn, new.database)
                if _table_id(tx.conn, new) is not None:
                    raise _already_exists(new)
                tx.conn.execute(sa.update(db.tables).where(db.tables.c.table_id == table_id)
                                .values(db_name=new.database, name=new.table, updated_at=tx.now))
                return self._ddl_events(tx, table_id, EventType.RENAME_TABLE,
                                        {"old_database": old.database, "old_table": old.table})
        except sa.exc.IntegrityError:
            raise _already_exists(new) from None

    def alter_table(
        self, name: TableName, *, schema: str | None = None, location: str | None = None,
        set_properties: Mapping[str, str] | None = None, unset_properties: Sequence[str] = (),
        timeline: TimelineSummary | None = None,
    ) -> TableEntry:
        """Change a table's schema, location, properties or timeline (a DDL: write id advances).

        Raises:
            TableNotFoundError: no such table.
        """
        with self._write(f"altering table {name}") as tx:
            table_id = _table_id(tx.conn, name)
            if table_id is None:
                raise _not_found(name)
            self._update(tx, table_id, schema, location, set_properties, unset_properties,
                         timeline)
            return self._ddl_events(tx, table_id, EventType.ALTER_TABLE, {})

    def refresh_external(
        self, table_id: int, schema: str | None, properties: Mapping[str, str],
        timeline: TimelineSummary,
    ) -> TableEntry | None:
        """Store what an external table's files now say (no write id); None if it is gone."""
        with self._write(f"refreshing external table id {table_id}") as tx:
            row = tx.conn.execute(sa.select(db.tables.c.managed)
                                  .where(db.tables.c.table_id == table_id)).first()
            if row is None or row.managed:
                return None
            tx.conn.execute(sa.update(db.tables).where(db.tables.c.table_id == table_id).values(
                schema=schema, properties=dumps(properties), timeline=dumps(timeline.to_json()),
                updated_at=tx.now))
            return self._ddl_events(tx, table_id, EventType.ALTER_TABLE, {"refresh": True})

    # ------------------------------------------------------------- write ids

    def allocate_write_id(self, name: TableName) -> WriteId:
        """Open the next write id of managed table ``name`` (before a data commit).

        Raises:
            TableNotFoundError: no such table.
            CatalogError: the table is external (other engines write it; no write ids).
        """
        with self._write(f"allocating a write id for {name}") as tx:
            row = tx.conn.execute(
                sa.select(db.tables.c.table_id, db.tables.c.managed, db.tables.c.location)
                .where(db.tables.c.db_name == name.database, db.tables.c.name == name.table)
            ).first()
            if row is None:
                raise _not_found(name)
            if not row.managed:
                raise CatalogError(
                    f"table {name} is external: it has no write ids; hudisql writes only "
                    "managed tables through the catalog")
            write_id = self._open_write_id(tx, row.table_id)
            vwil = self._write_id_list(tx.conn, row.table_id, name)
            tx.emit(EventType.ALLOC_WRITE_ID, name, row.table_id, write_id,
                    {"write_ids": str(vwil)})
            return WriteId(int(row.table_id), name, write_id, row.location)

    def commit_write(
        self, write: WriteId, *, schema: str | None = None,
        set_properties: Mapping[str, str] | None = None, unset_properties: Sequence[str] = (),
        timeline: TimelineSummary | None = None,
    ) -> TableEntry:
        """Commit an open write id with the table's new metadata and its two events.

        Raises:
            TableNotFoundError: the table was dropped while the write was in progress.
            CatalogError: the write id is not open (already committed or aborted).
        """
        with self._write(f"committing write id {write.write_id} of {write.name}") as tx:
            name = self._require_open(tx.conn, write)
            self._update(tx, write.table_id, schema, None, set_properties, unset_properties,
                         timeline)
            entry = self._load(tx.conn, write.table_id, 0)
            tx.emit(EventType.WRITE_TABLE, name, write.table_id, write.write_id,
                    entry.to_json())
            return self._commit(tx, write.table_id, write.write_id, name)

    def abort_write(self, write: WriteId) -> None:
        """Abort an open write id: it will never count as committed.

        Raises:
            CatalogError: the write id is not open.
        """
        with self._write(f"aborting write id {write.write_id} of {write.name}") as tx:
            name = self._require_open(tx.conn, write)
            tx.conn.execute(sa.update(db.write_ids).where(
                db.write_ids.c.table_id == write.table_id,
                db.write_ids.c.write_id == write.write_id).values(state="a"))
            vwil = self._write_id_list(tx.conn, write.table_id, name)
            tx.emit(EventType.ABORT_TXN, name, write.table_id, write.write_id,
                    {"write_ids": str(vwil)})

    # ---------------------------------------------------------------- helpers

    @contextlib.contextmanager
    def _write(self, doing: str) -> Iterator[_Tx]:
        with db.write_transaction(self.engine, doing) as conn:
            tx = _Tx(conn, self.clock())
            yield tx
            tx.finish()

    def _next_table_id(self, tx: _Tx) -> int:
        seq = db.sequences
        value = int(tx.conn.execute(
            sa.select(seq.c.value).where(seq.c.name == "table_id")).scalar_one()) + 1
        tx.conn.execute(sa.update(seq).where(seq.c.name == "table_id").values(value=value))
        return value

    def _open_write_id(self, tx: _Tx, table_id: int) -> int:
        t = db.tables
        hwm = int(tx.conn.execute(sa.select(t.c.write_id_hwm)
                                  .where(t.c.table_id == table_id)).scalar_one()) + 1
        tx.conn.execute(sa.update(t).where(t.c.table_id == table_id)
                        .values(write_id_hwm=hwm, updated_at=tx.now))
        tx.conn.execute(sa.insert(db.write_ids).values(
            table_id=table_id, write_id=hwm, state="o", opened_at=tx.now))
        return hwm

    def _ddl_events(
        self, tx: _Tx, table_id: int, event_type: EventType, extra: Mapping[str, Any]
    ) -> TableEntry:
        """A DDL's events: managed tables open and commit a write id around the change."""
        managed = bool(tx.conn.execute(sa.select(db.tables.c.managed)
                                       .where(db.tables.c.table_id == table_id)).scalar_one())
        write_id = self._open_write_id(tx, table_id) if managed else None
        entry = self._load(tx.conn, table_id, 0)
        tx.emit(event_type, entry.name, table_id, write_id, {**entry.to_json(), **extra})
        if write_id is None:
            return self._load(tx.conn, table_id, tx.last_event_id)
        return self._commit(tx, table_id, write_id, entry.name)

    def _commit(self, tx: _Tx, table_id: int, write_id: int, name: TableName) -> TableEntry:
        tx.conn.execute(sa.delete(db.write_ids).where(
            db.write_ids.c.table_id == table_id, db.write_ids.c.write_id == write_id))
        vwil = self._write_id_list(tx.conn, table_id, name)
        tx.emit(EventType.COMMIT_TXN, name, table_id, write_id, {"write_ids": str(vwil)})
        return self._load(tx.conn, table_id, tx.last_event_id)

    def _update(
        self, tx: _Tx, table_id: int, schema: str | None, location: str | None,
        set_properties: Mapping[str, str] | None, unset_properties: Sequence[str],
        timeline: TimelineSummary | None,
    ) -> None:
        t = db.tables
        row = tx.conn.execute(sa.select(t.c.properties).where(t.c.table_id == table_id)).one()
        props = json.loads(row.properties)
        props.update(set_properties or {})
        for key in unset_properties:
            props.pop(key, None)
        values: dict[str, Any] = {"properties": dumps(props), "updated_at": tx.now}
        if schema is not None:
            values["schema"] = schema
        if location is not None:
            values["location"] = location
        if timeline is not None:
            values["timeline"] = dumps(timeline.to_json())
        tx.conn.execute(sa.update(t).where(t.c.table_id == table_id).values(**values))

    def _require_open(self, conn: Connection, write: WriteId) -> TableName:
        row = conn.execute(sa.select(db.tables.c.db_name, db.tables.c.name)
                           .where(db.tables.c.table_id == write.table_id)).first()
        if row is None:
            raise TableNotFoundError(
                f"table {write.name} (id {write.table_id}) was dropped while write id "
                f"{write.write_id} was in progress; nothing was committed to the catalog")
        state = conn.execute(sa.select(db.write_ids.c.state).where(
            db.write_ids.c.table_id == write.table_id,
            db.write_ids.c.write_id == write.write_id)).scalar()
        if state != "o":
            what = "was aborted" if state == "a" else "is not open (already committed?)"
            raise CatalogError(
                f"write id {write.write_id} of table {write.name} {what}; allocate a new "
                "write id and redo the write")
        return TableName(row.db_name, row.name)

    def _write_id_list(self, conn: Connection, table_id: int, name: TableName) -> (
        ValidWriteIdList
    ):
        return self._load(conn, table_id, 0).valid_write_ids or ValidWriteIdList(str(name), 0)

    def _load(self, conn: Connection, table_id: int, as_of_event: int) -> TableEntry:
        entries, _ = self._read(conn, db.tables.c.table_id == table_id)
        entry = entries[0]
        return TableEntry(
            entry.table_id, entry.name, entry.location, entry.managed, entry.schema,
            entry.properties, entry.timeline, entry.valid_write_ids, as_of_event)


def _group(rows: Sequence[Any]) -> dict[int, list[Any]]:
    groups: dict[int, list[Any]] = {}
    for row in rows:
        groups.setdefault(int(row.table_id), []).append(row)
    return groups


def _write_id_list(name: TableName, hwm: int, group: Sequence[Any]) -> ValidWriteIdList:
    open_ids = tuple(int(r.write_id) for r in group if r.write_id is not None and r.state == "o")
    aborted = tuple(int(r.write_id) for r in group if r.write_id is not None and r.state == "a")
    return ValidWriteIdList(str(name), int(hwm), open_ids, aborted)


def _entry(group: Sequence[Any], head: int) -> TableEntry:
    row = group[0]
    name = TableName(row.db_name, row.name)
    return TableEntry(
        table_id=int(row.table_id),
        name=name,
        location=row.location,
        managed=bool(row.managed),
        schema=row.schema,
        properties=json.loads(row.properties),
        timeline=TimelineSummary.from_json(json.loads(row.timeline)),
        valid_write_ids=_write_id_list(name, row.write_id_hwm, group) if row.managed else None,
        as_of_event=head,
    )


def _stored_names(conn: Connection) -> tuple[list[StoredDatabase], list[StoredTable]]:
    """Every database and table name exactly as stored."""
    databases = [StoredDatabase(r.name, float(r.created_at)) for r in conn.execute(
        sa.select(db.databases.c.name, db.databases.c.created_at)).all()]
    tables = [StoredTable(int(r.table_id), r.db_name, r.name) for r in conn.execute(
        sa.select(db.tables.c.table_id, db.tables.c.db_name, db.tables.c.name)).all()]
    return databases, tables


def _table_id(conn: Connection, name: TableName) -> int | None:
    value = conn.execute(sa.select(db.tables.c.table_id).where(
        db.tables.c.db_name == name.database, db.tables.c.name == name.table)).scalar()
    return None if value is None else int(value)


def _require_database(conn: Connection, database: str) -> None:
    found = conn.execute(sa.select(db.databases.c.name)
                         .where(db.databases.c.name == database)).first()
    if found is None:
        raise CatalogError(
            f"database {database!r} does not exist; create it with CREATE DATABASE first")


def _already_exists(name: TableName) -> TableAlreadyExistsError:
    return TableAlreadyExistsError(
        f"table {name} already exists in the catalog; pick another name, or DROP TABLE {name} "
        "first")


def _not_found(name: TableName) -> TableNotFoundError:
    return TableNotFoundError(
        f"table {name} does not exist in the catalog; check the name with SHOW TABLES IN "
        f"{name.database}")
