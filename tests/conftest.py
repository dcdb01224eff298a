"""Shared pytest fixtures: the real Hudi fixture tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures import TABLE_ZIPS, copy_table, table_path


@pytest.fixture(params=sorted(TABLE_ZIPS))
def fixture_table_name(request: pytest.FixtureRequest) -> str:
    """Each fixture table's name in turn."""
    return str(request.param)


@pytest.fixture
def fixture_table(fixture_table_name: str) -> Path:
    """Each fixture table's extracted (read-only) directory in turn."""
    return table_path(fixture_table_name)


@pytest.fixture
def writable_table(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A factory: ``writable_table(name)`` returns a private copy of that fixture table."""
    return lambda name: copy_table(name, tmp_path)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The one SparkSession of the test process (local, 2 cores), started on first use.

    Started by ``hudisql.connect()``: the Python workers use this interpreter, Python data
    sources get the filters Spark pushes, and the ``hudi`` data source is registered.
    """
    import hudisql

    session = hudisql.connect(
        warehouse=tmp_path_factory.mktemp("warehouse"),
        conf={"spark.master": "local[2]", "spark.app.name": "hudisql-tests"},
    )
    yield session.spark
    session.stop()
