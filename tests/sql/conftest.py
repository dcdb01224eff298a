"""SQL front-end fixtures: HudiSessions on the shared SparkSession, each with its own catalog."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import hudisql
from hudisql.catalog import SqlCatalog
from hudisql.session import HudiSession


@pytest.fixture
def catalog_url(tmp_path: Path) -> str:
    """An empty SQLite catalog database of this test."""
    return f"sqlite:///{tmp_path}/catalog.db"


@pytest.fixture
def make_session(
    spark: SparkSession, catalog_url: str, tmp_path: Path
) -> Iterator[Callable[[], HudiSession]]:
    """A factory of HudiSessions on the one SparkSession, each with its own catalog instance
    on this test's catalog database (no poller thread: statements ask the database)."""
    catalogs: list[SqlCatalog] = []

    def make() -> HudiSession:
        catalog = SqlCatalog("test", uri=catalog_url, warehouse=str(tmp_path / "warehouse"),
                             poll_interval=0)
        catalogs.append(catalog)
        return hudisql.connect(spark, warehouse=tmp_path / "warehouse", catalog=catalog)

    yield make
    for catalog in catalogs:
        catalog.close()


@pytest.fixture
def session(make_session: Callable[[], HudiSession]) -> HudiSession:
    """One HudiSession with a fresh catalog."""
    return make_session()
