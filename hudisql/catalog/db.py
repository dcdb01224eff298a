"""The catalog database: its tables (SQLAlchemy Core), engines for SQLite and PostgreSQL,
and the translation of driver errors into :mod:`hudisql.errors`.

Every catalog change runs in a *write transaction* that first locks the event sequence row,
so catalog writes are serialized and notification-log event ids are handed out in commit
order (a poller that has read event N never later finds a smaller id committed).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import URL, Connection, Engine, make_url

from hudisql.errors import CatalogError, CatalogUnavailableError

SCHEMA_VERSION = 1

metadata = sa.MetaData()

databases = sa.Table(
    "hudisql_databases",
    metadata,
    sa.Column("name", sa.String(512), primary_key=True),
    sa.Column("location", sa.Text, nullable=True),
    sa.Column("properties", sa.Text, nullable=False, default="{}"),
    sa.Column("created_at", sa.Float, nullable=False),
)

tables = sa.Table(
    "hudisql_tables",
    metadata,
    # Handed out from the `table_id` sequence row: never reused, kept across renames.
    sa.Column("table_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("db_name", sa.String(512), nullable=False),
    sa.Column("name", sa.String(512), nullable=False),
    sa.Column("location", sa.Text, nullable=False),
    sa.Column("managed", sa.Boolean, nullable=False),
    sa.Column("schema", sa.Text, nullable=True),
    sa.Column("properties", sa.Text, nullable=False),
    sa.Column("timeline", sa.Text, nullable=False),
    sa.Column("write_id_hwm", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.UniqueConstraint("db_name", "name", name="hudisql_tables_name_uq"),
)

#: Open ("o") and aborted ("a") write ids; a committed write id has no row (hwm covers it).
write_ids = sa.Table(
    "hudisql_write_ids",
    metadata,
    sa.Column("table_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("write_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("state", sa.String(1), nullable=False),
    sa.Column("opened_at", sa.Float, nullable=False),
)

notification_log = sa.Table(
    "hudisql_notification_log",
    metadata,
    sa.Column("event_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("event_time", sa.Float, nullable=False),
    sa.Column("event_type", sa.String(32), nullable=False),
    sa.Column("db_name", sa.String(512), nullable=True),
    sa.Column("table_name", sa.String(512), nullable=True),
    sa.Column("table_id", sa.BigInteger, nullable=True),
    sa.Column("write_id", sa.BigInteger, nullable=True),
    sa.Column("message", sa.Text, nullable=False),
)

#: Rows: "event_id" (the last event id written), "table_id" (the last table id handed out),
#: "schema_version".
sequences = sa.Table(
    "hudisql_sequences",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.BigInteger, nullable=False),
)

locks = sa.Table(
    "hudisql_locks",
    metadata,
    sa.Column("lock_key", sa.String(1024), primary_key=True),
    sa.Column("owner", sa.String(256), nullable=False),
    sa.Column("acquired_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
)

_PG_INIT_LOCK = 0x68756469  # an arbitrary advisory-lock key for schema creation ("hudi")


def normalize_url(url: str) -> URL:
    """The SQLAlchemy URL for a catalog URL (``postgresql://`` means psycopg 3).

    Raises:
        CatalogError: the URL is malformed or names a database that is not supported.
    """
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy raises ArgumentError for junk
        raise CatalogError(
            f"catalog URL {redact(url)!r} is malformed ({exc}); use 'sqlite:///path/to/file.db' "
            "or 'postgresql://user@host:port/database'"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed
    raise CatalogError(
        f"catalog URL {redact(url)!r}: database {backend!r} is not supported; use SQLite "
        "('sqlite:///file.db') or PostgreSQL ('postgresql://...')"
    )


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for error messages)."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def create_engine(url: URL, busy_timeout: float, connect_timeout: float) -> Engine:
    """An engine for the catalog database: SQLite in WAL mode with a busy timeout, or
    PostgreSQL with connect and lock timeouts, both with explicit transaction control."""
    if url.get_backend_name() == "sqlite":
        engine = sa.create_engine(url, connect_args={"timeout": busy_timeout})
        _setup_sqlite(engine, busy_timeout)
        return engine
    options = f"-c lock_timeout={int(busy_timeout * 1000)}"
    return sa.create_engine(
        url,
        pool_pre_ping=True,
        connect_args={"connect_timeout": max(1, int(connect_timeout)), "options": options},
    )


def _setup_sqlite(engine: Engine, busy_timeout: float) -> None:
    @sa_event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Python's sqlite3 would otherwise open transactions lazily and never as IMMEDIATE.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        cur.close()
        enable_wal(dbapi_conn, busy_timeout)
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @sa_event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A write transaction takes SQLite's write lock at once: a deferred one that later
        # upgrades fails with SQLITE_BUSY when another writer got there first.
        write = conn.get_execution_options().get("hudisql_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def enable_wal(dbapi_conn: Any, busy_timeout: float,
               on_retry: Callable[[], None] | None = None) -> None:
    """Put the SQLite database of ``dbapi_conn`` in WAL mode, retrying while it is locked.

    Switching the journal mode needs the database to itself, and SQLite may answer
    "database is locked" at once, without waiting out the busy timeout, when another
    process opens (or switches) the same new database at that moment. So the switch is
    retried until ``busy_timeout`` has passed; ``on_retry`` runs before each retry.

    Raises:
        sqlite3.OperationalError: still locked after ``busy_timeout`` seconds.
    """
    deadline = time.monotonic() + busy_timeout
    while True:
        cur = dbapi_conn.cursor()
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        finally:
            cur.close()
        if on_retry is not None:
            on_retry()
        time.sleep(0.005)  # back off a little: the other connection is mid-transaction


def is_sqlite(engine: Engine) -> bool:
    """True when ``engine`` talks to SQLite."""
    return engine.dialect.name == "sqlite"


@contextlib.contextmanager
def translate_errors(engine: Engine, doing: str) -> Iterator[None]:
    """Turn driver errors raised while ``doing`` into CatalogUnavailableError / CatalogError.

    Integrity errors pass through untouched: callers know which name they collided on.
    """
    try:
        yield
    except sa.exc.IntegrityError:
        raise
    except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
        raise CatalogUnavailableError(
            f"the catalog database {redact(str(engine.url))} is unreachable or locked while "
            f"{doing} ({_first_line(exc)}); nothing was changed: check that the database is up "
            "and not held by another process, then retry"
        ) from exc
    except sa.exc.DBAPIError as exc:
        if exc.connection_invalidated or _is_lock_timeout(exc):
            raise CatalogUnavailableError(
                f"the catalog database {redact(str(engine.url))} is unreachable or locked "
                f"while {doing} ({_first_line(exc)}); nothing was changed: retry when it is "
                "available"
            ) from exc
        raise CatalogError(
            f"the catalog database {redact(str(engine.url))} refused a request while {doing}: "
            f"{_first_line(exc)}; check that the URL names a hudisql catalog database"
        ) from exc


def _is_lock_timeout(exc: sa.exc.DBAPIError) -> bool:
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return code in {"55P03", "57014", "57P01", "08006", "08001", "08003"}


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return text[0] if text else type(orig).__name__


@contextlib.contextmanager
def write_transaction(engine: Engine, doing: str) -> Iterator[Connection]:
    """A serialized catalog write transaction; the event sequence row is locked first.

    Raises:
        CatalogUnavailableError: the database is unreachable or stayed locked too long.
    """
    with (
        translate_errors(engine, doing),
        engine.connect().execution_options(hudisql_write=True) as conn,
        conn.begin(),
    ):
        conn.execute(
            sa.select(sequences.c.value).where(sequences.c.name == "event_id").with_for_update()
        )
        yield conn


@contextlib.contextmanager
def read_connection(engine: Engine, doing: str) -> Iterator[Connection]:
    """A connection for reads, inside one transaction (one consistent snapshot on SQLite)."""
    with translate_errors(engine, doing), engine.connect() as conn, conn.begin():
        yield conn


def initialize(engine: Engine, now: float) -> None:
    """Create the catalog tables, sequences and the ``default`` database if absent.

    Safe when many processes start at once: creation runs under a lock.

    Raises:
        CatalogError: the database holds a newer catalog schema than this hudisql knows.
    """
    with (
        translate_errors(engine, "creating the catalog tables"),
        engine.connect().execution_options(hudisql_write=True) as conn,
        conn.begin(),
    ):
        if not is_sqlite(engine):
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_INIT_LOCK)))
        metadata.create_all(conn, checkfirst=True)
        present = dict(conn.execute(sa.select(sequences.c.name, sequences.c.value)).all())
        for name, value in (("event_id", 0), ("table_id", 0), ("schema_version", SCHEMA_VERSION)):
            if name not in present:
                conn.execute(sa.insert(sequences).values(name=name, value=value))
        version = present.get("schema_version", SCHEMA_VERSION)
        if version > SCHEMA_VERSION:
            raise CatalogError(
                f"the catalog database {redact(str(engine.url))} has catalog schema version "
                f"{version}, newer than this hudisql ({SCHEMA_VERSION}); upgrade hudisql"
            )
        has_default = conn.execute(
            sa.select(databases.c.name).where(databases.c.name == "default")
        ).first()
        if has_default is None:
            conn.execute(
                sa.insert(databases).values(
                    name="default", location=None, properties="{}", created_at=now
                )
            )
