"""Catalog test fixtures: catalog URLs on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hudisql.catalog import SqlCatalog
from tests.catalog.pg_server import PostgresServer, PostgresUnavailable


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole test session; a failure to start fails loudly."""
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as exc:
        pytest.fail(f"the PostgreSQL server for the catalog tests did not start: {exc}")
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty catalog database: a SQLite file, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/catalog.db"
    server: PostgresServer = request.getfixturevalue("pg_server")
    return server.empty_catalog()


@pytest.fixture
def make_catalog(catalog_url: str, tmp_path: Path) -> Iterator[Callable[..., SqlCatalog]]:
    """A factory of catalog instances on ``catalog_url`` (no poller thread unless asked);
    all are closed at the end of the test."""
    made: list[SqlCatalog] = []

    def make(**props: Any) -> SqlCatalog:
        props.setdefault("poll_interval", 0)
        props.setdefault("warehouse", str(tmp_path / "warehouse"))
        catalog = SqlCatalog("test", uri=catalog_url, **props)
        made.append(catalog)
        return catalog

    yield make
    for catalog in made:
        catalog.close()
