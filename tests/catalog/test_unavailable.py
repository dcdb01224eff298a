"""The catalog database locked or unreachable: a clear CatalogUnavailableError, the cache as
it was, and no half-written table."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import psycopg
import pytest

from hudisql.catalog import SqlCatalog, TableName
from hudisql.errors import CatalogError, CatalogUnavailableError
from tests.catalog.pg_server import PostgresServer

A, B = TableName("default", "a"), TableName("default", "b")


def _snapshot(cat: SqlCatalog) -> list[tuple[object, ...]]:
    return [(e.table_id, e.name, e.schema, str(e.valid_write_ids), e.as_of_event)
            for e in cat.cache.entries()]


def _assert_refused_and_nothing_changed(cat: SqlCatalog) -> None:
    before = _snapshot(cat)
    with pytest.raises(CatalogUnavailableError, match=r"unreachable or locked.*nothing was"):
        cat.create_table(B, schema="b")
    with pytest.raises(CatalogUnavailableError):
        cat.alter_table(A, schema="changed")
    with pytest.raises(CatalogUnavailableError):
        cat.allocate_write_id(A)
    assert _snapshot(cat) == before


def _assert_recovered(cat: SqlCatalog, head: int) -> None:
    assert cat.list_tables() == [A]  # no half-written table b
    assert cat.store.head_event_id() == head  # and no event for it
    stmt = cat.begin_statement([A])
    assert cat.resolve(stmt, A).schema == "a"
    cat.create_table(B, schema="b")
    assert cat.list_tables() == [A, B]


def test_sqlite_locked_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "catalog.db"
    with SqlCatalog("t", uri=f"sqlite:///{path}", warehouse=str(tmp_path), poll_interval=0,
                    busy_timeout=0.2) as cat:
        cat.create_table(A, schema="a")
        head = cat.store.head_event_id()
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            _assert_refused_and_nothing_changed(cat)
            # WAL readers are not blocked: the cache still serves the table.
            hits = cat.stats().hits
            assert cat.resolve(cat.begin_statement([A]), A).schema == "a"
            assert cat.stats().hits == hits + 1
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        _assert_recovered(cat, head)


def test_sqlite_catalog_in_an_impossible_place(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(CatalogUnavailableError, match="cannot be created"):
        SqlCatalog("t", uri=f"sqlite:///{blocker}/sub/catalog.db", poll_interval=0)


def test_sqlite_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "catalog.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CatalogError, match="catalog"):
        SqlCatalog("t", uri=f"sqlite:///{path}", poll_interval=0)
    assert path.read_bytes() == b"this is not sqlite" * 100


@pytest.mark.postgres
def test_postgres_locked_by_another_session(pg_server: PostgresServer, tmp_path: Path) -> None:
    url = pg_server.empty_catalog()
    with SqlCatalog("t", uri=url, warehouse=str(tmp_path), poll_interval=0,
                    busy_timeout=0.3) as cat:
        cat.create_table(A, schema="a")
        head = cat.store.head_event_id()
        holder = psycopg.connect(url)
        try:
            # Blocks every catalog write (they lock the event sequence first), not reads.
            holder.execute("LOCK TABLE hudisql_sequences IN EXCLUSIVE MODE")
            _assert_refused_and_nothing_changed(cat)
        finally:
            holder.rollback()
            holder.close()
        _assert_recovered(cat, head)


@pytest.mark.postgres
def test_postgres_server_unreachable_at_start() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(CatalogUnavailableError, match=f"127.0.0.1:{port}") as info:
        SqlCatalog("t", uri=f"postgresql://postgres:secret@127.0.0.1:{port}/x", poll_interval=0)
    assert "secret" not in str(info.value)  # the password is not shown


@pytest.mark.postgres
def test_postgres_database_unreachable_midway(pg_server: PostgresServer, tmp_path: Path) -> None:
    url = pg_server.new_database()
    name = url.rsplit("/", 1)[1]
    with SqlCatalog("t", uri=url, warehouse=str(tmp_path), poll_interval=0.01) as cat:
        cat.create_table(A, schema="a")
        head = cat.store.head_event_id()
        assert cat.poller.wait_rounds(cat.poller.rounds + 1, timeout=60)
        with pg_server.admin() as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = %s", (name,))
        try:
            _assert_refused_and_nothing_changed(cat)
            with pytest.raises(CatalogUnavailableError):
                cat.begin_statement([A])
            # The poller keeps failing quietly; the cache stays as it was.
            assert cat.poller.wait_rounds(cat.poller.rounds + 2, timeout=60)
            assert isinstance(cat.poller.last_error, CatalogUnavailableError)
        finally:
            with pg_server.admin() as admin:
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        _assert_recovered(cat, head)
