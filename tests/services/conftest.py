"""Index service fixtures: HudiSessions on the shared SparkSession (the SQL tests' own), one
trips table with an index that read-only tests of a module share, and the check, after
every test, that each table it left with a metadata table validates exactly."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

import hudisql
from hudisql.catalog import SqlCatalog
from hudisql.session import HudiSession
from tests.services.indexing import trips
from tests.sql.conftest import catalog_url, make_session, session

__all__ = ["catalog_url", "indexed_trips", "make_session", "session"]


@pytest.fixture(scope="module")
def indexed_trips(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[HudiSession]:
    """A session whose trips table has a secondary index idx_fare (and so a record index);
    tests that use it must leave the table as they found it."""
    root = tmp_path_factory.mktemp("indexed")
    catalog = SqlCatalog("shared", uri=f"sqlite:///{root}/catalog.db",
                         warehouse=str(root / "warehouse"), poll_interval=0)
    session = hudisql.connect(spark, warehouse=root / "warehouse", catalog=catalog)
    trips(session)
    session.sql("CREATE INDEX idx_fare ON trips (fare)")
    spark.sql("CREATE TABLE IF NOT EXISTS plain (a INT) USING parquet")
    yield session
    catalog.close()

