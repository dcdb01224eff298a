"""Shared pytest fixtures: the real Hudi fixture tables, the one SparkSession, and the check,
after every test, that each table it left under its tmp_path with a metadata table
validates exactly (issue 12: every commit keeps the metadata table exact)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.fixtures import TABLE_ZIPS, TEST_JVM_OPTS, copy_table, table_path

#: Every Spark driver the suite starts (this process's SparkSession and the drivers of the
#: subprocesses, notebooks and demo, which inherit the environment) runs with TEST_JVM_OPTS:
#: ``spark-submit`` adds ``SPARK_SUBMIT_OPTS`` to the driver's command line. A value set
#: outside the suite is kept.
os.environ.setdefault("SPARK_SUBMIT_OPTS", TEST_JVM_OPTS)


#: Hypothesis's timing checks (input generation "too slow", a 200 ms deadline per example)
#: fail tests on a loaded machine (two test processes and other work on 2 cores) while
#: asserting no behaviour: timings belong in benchmarks/.
settings.register_profile("hudisql", suppress_health_check=[HealthCheck.too_slow],
                          deadline=None)
settings.load_profile("hudisql")

#: Markers of tests that take many seconds (their modules start first in a parallel run).
SLOW_MARKERS = ("slow", "notebook", "cluster")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a pytest-xdist worker (``./dev test`` runs two), put the modules that hold slow
    tests first, in their collected order: xdist hands out whole files (``--dist
    loadfile``), and a long file handed out last would leave the other process idle."""
    if not hasattr(config, "workerinput"):
        return
    slow = {item.path for item in items
            if any(item.get_closest_marker(m) is not None for m in SLOW_MARKERS)}
    items.sort(key=lambda item: item.path not in slow)  # stable: collected order kept


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


def metadata_tables_under(root: Path) -> list[Path]:
    """Base paths of the tables (of versions hudisql writes) under ``root`` with built
    metadata partitions."""
    from hudisql.table.format.properties import WRITABLE_VERSIONS, TableProperties
    from hudisql.table.io.storage import Storage

    found = []
    for mdt_props in root.rglob(".hoodie/metadata/.hoodie/hoodie.properties"):
        base = mdt_props.parents[3]
        if base.name == "metadata" and base.parent.name == ".hoodie":
            continue  # a metadata table's own (never nested)
        props = TableProperties.load(Storage(str(base)))
        if props.version in WRITABLE_VERSIONS and props.metadata_partitions:
            found.append(base)
    return sorted(found)


@pytest.fixture(autouse=True)
def _metadata_tables_stay_exact(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used ``tmp_path``, every table under it with built metadata
    partitions must validate: the metadata table equals a recomputation from the data.
    A test that leaves one stale on purpose says so: ``@pytest.mark.metadata_stale``.

    Cheap for tests without one: a glob for ``.hoodie/metadata`` under the test's tmp_path.
    """
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if request.node.get_closest_marker("metadata_stale") is not None:
        return
    if tmp is None or not Path(tmp).exists():
        return
    tables = metadata_tables_under(Path(tmp))
    if not tables:
        return
    from hudisql.metadata.validate import validate_metadata_table
    from hudisql.table.table import HudiTable

    for base in tables:
        result = validate_metadata_table(HudiTable.open(str(base)))
        shown = "\n".join(f"  {d.partition} {d.key!r}: expected {str(d.expected)[:200]}, "
                          f"got {str(d.actual)[:200]}" for d in result.differences[:10])
        assert result.ok, (f"metadata table of {base} differs from its data in "
                           f"{len(result.differences)} keys:\n{shown}")
