"""Fixtures of the Spark write tests: a HudiSession and empty tables to write to."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudisql
from hudisql.catalog import SqlCatalog
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.write.create import create_table

TRIP_SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("rider", pa.string()),
                         ("fare", pa.float64()), ("city", pa.string())])


@pytest.fixture(scope="session")
def hudi_session(spark) -> HudiSession:  # type: ignore[no-untyped-def]
    """The shared SparkSession extended by hudisql."""
    session: HudiSession = hudisql.connect(spark)
    return session


@pytest.fixture
def new_table(hudi_session: HudiSession, tmp_path: Path
              ) -> Callable[..., HudiTableHandle]:
    """A factory: ``new_table(table_type, partitioned=True)`` creates an empty trips table."""

    def make(table_type: str = "MERGE_ON_READ", partitioned: bool = True,
             name: str = "trips") -> HudiTableHandle:
        path = tmp_path / f"{name}_{table_type.lower()}"
        create_table(str(path), name, TRIP_SCHEMA, "uuid", "city" if partitioned else (),
                     "ts", table_type)
        return hudi_session.table_at(str(path))

    return make


@pytest.fixture
def managed(spark: Any, tmp_path: Path) -> Iterator[tuple[HudiSession, SqlCatalog]]:
    """A HudiSession on its own SQLite catalog, and a second catalog instance on that database
    (another session's view, its cache warmed by the tests before their writes)."""
    url = f"sqlite:///{tmp_path}/catalog.db"
    ours = SqlCatalog("ours", uri=url, warehouse=str(tmp_path / "wh"), poll_interval=0)
    theirs = SqlCatalog("theirs", uri=url, warehouse=str(tmp_path / "wh"), poll_interval=0)
    yield hudisql.connect(spark, warehouse=tmp_path / "wh", catalog=ours), theirs
    ours.close()
    theirs.close()
