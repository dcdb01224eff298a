"""Data tables for metadata tests, written with the pure-Python writer."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient

SCHEMA = pa.schema([
    ("id", pa.string()), ("ts", pa.int64()), ("rider", pa.string()), ("fare", pa.float64()),
    ("day", pa.date32()), ("city", pa.string()),
])
CITIES = ("sf", "la", "ny")


def row(i: int, ts: int = 1, rider: str | None = None, fare: float | None = None) -> dict[str, Any]:
    """A record of the test table."""
    return {"id": f"k{i:03d}", "ts": ts, "rider": rider if rider is not None else f"r{i % 4}",
            "fare": fare if fare is not None else i * 1.5, "day": dt.date(2024, 1, 1 + i % 28),
            "city": CITIES[i % 3]}


def new_table(path: Path, table_type: str = "MERGE_ON_READ", partitioned: bool = True,
              rows: int = 12, version: int | None = None) -> HudiTable:
    """A table with ``rows`` records inserted in one commit (at ``version``: the default
    version of new tables when None)."""
    options = {} if version is None else {"hoodie.write.table.version": str(version)}
    table = create_table(path, "trips", SCHEMA, "id", "city" if partitioned else (), "ts",
                         table_type, options=options)
    client = WriteClient(table, max_records_per_file=5)
    if rows:
        client.insert([row(i) for i in range(rows)])
    return client.table


@pytest.fixture
def mor_table(tmp_path: Path) -> HudiTable:
    """A partitioned merge-on-read table with 12 records."""
    return new_table(tmp_path / "mor")


@pytest.fixture
def mor_table_v6(tmp_path: Path) -> HudiTable:
    """``mor_table`` at version 6, for tests of what its metadata table has on disk (Hudi
    0.x's instant names, schema and index definitions)."""
    return new_table(tmp_path / "mor", version=6)
