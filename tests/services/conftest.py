"""Index service fixtures: HudiSessions on the shared SparkSession (the SQL tests' own), one
trips table with an index that read-only tests of a module share, and the check, after
every test, that each table it left with a metadata table validates exactly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture(autouse=True)
def _metadata_tables_stay_exact(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test, every table it made (under its tmp_path) with built metadata
    partitions must validate: the metadata table equals a recomputation from the data."""
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if tmp is None:
        return
    from hudisql.metadata.validate import validate_metadata_table
    from hudisql.table.properties import TableProperties
    from hudisql.table.storage import Storage
    from hudisql.table.table import HudiTable

    for found in Path(tmp).rglob("hoodie.properties"):
        root = found.parent.parent
        if found.parent.name != ".hoodie" or root.name == "metadata":
            continue
        if not TableProperties.load(Storage(str(root))).metadata_partitions:
            continue
        result = validate_metadata_table(HudiTable.open(str(root)))
        assert result.ok, str(result)
