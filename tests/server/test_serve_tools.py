"""What BI tools send when they connect, replayed: DBeaver, Metabase and Power BI (Npgsql)
cannot run here, so their connect-time statements (``data/connect_*.sql``, each citing where
it was taken from) go through psycopg, block by block, and must all answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.server.conftest import Served

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DATA = Path(__file__).with_name("data")


def blocks(path: Path) -> list[str]:
    """The fixture's blocks (each one simple-query message): text between lines holding
    only ``;``."""
    return [b.strip() for b in re.split(r"^;\s*$", path.read_text(), flags=re.M) if b.strip()]


def replay(served: Served, name: str) -> list[list[tuple]]:  # type: ignore[type-arg]
    """Every result set of the fixture ``name``, in order (statements without rows: [])."""
    import psycopg

    results: list[list[tuple]] = []  # type: ignore[type-arg]
    with psycopg.connect(served.dsn(), autocommit=True) as conn:
        for block in blocks(DATA / name):
            try:
                cur = conn.execute(block.encode())  # bytes: sent as is, % not a placeholder
            except psycopg.Error as exc:
                raise AssertionError(f"{name}: {exc}\n--- statement:\n{block}") from exc
            while True:
                results.append(cur.fetchall() if cur.description is not None else [])
                if not cur.nextset():
                    break
    return results


def test_dbeaver_connect(served: Served) -> None:
    results = replay(served, "connect_dbeaver.sql")
    assert results[3] == [("default", "alice")]  # current_schema(), session_user
    assert {"pg_catalog", "default"} <= {row[2] for row in results[4]}  # namespaces
    # The navigator's table and column reads list the hudi table and its columns.
    assert "trips" in [row[2] for row in results[13]]
    assert {"uuid", "fare"} <= {row[2] for row in results[14]}


def test_metabase_connect(served: Served) -> None:
    results = replay(served, "connect_metabase.sql")
    assert results[2] == [("read committed",)]
    privileges = results[5]
    assert ("default", "trips") in [(row[1], row[2]) for row in privileges]
    tables = results[6]
    assert ("default", "trips", "TABLE") in [row[:3] for row in tables]


def test_powerbi_connect(served: Served) -> None:
    results = replay(served, "connect_powerbi.sql")
    version, types = results[1], results[2]
    assert version[0][0].startswith("PostgreSQL 16")
    by_name = {row[2]: row for row in types}
    # Npgsql tells arrays from base types by their receive function (array_recv).
    assert by_name["int4"][3] == "b" and by_name["_int4"][3] == "a"
    assert by_name["_int4"][5] == 23
    tables, columns = results[-2], results[-1]
    assert ("default", "trips", "BASE TABLE") in tables
    assert [c[0] for c in columns][-4:] == ["ts", "uuid", "fare", "city"]
