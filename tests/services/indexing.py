"""Helpers the index tests share: a trips table, byte snapshots, validation."""

from __future__ import annotations

import os
from pathlib import Path

from hudisql.metadata.validate import validate_metadata_table
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.table import HudiTable

TRIPS = """CREATE TABLE trips (ts BIGINT, uuid STRING, rider STRING, fare DOUBLE, city STRING)
  USING hudi PARTITIONED BY (city)
  TBLPROPERTIES (type = 'mor', primaryKey = 'uuid', preCombineField = 'ts')"""
ROWS = ("INSERT INTO trips VALUES (1, 'a', 'r1', 19.1, 'sf'), (2, 'b', 'r2', 27.7, 'la'), "
        "(3, 'c', 'r1', 5.0, 'sf'), (4, 'd', 'r3', 8.5, 'nyc')")


def trips(session: HudiSession) -> HudiTableHandle:
    """A merge-on-read trips table with four rows in three partitions; its handle."""
    session.sql(TRIPS)
    session.sql(ROWS)
    return session.table("trips")


def snapshot(root: str) -> dict[str, bytes]:
    """Every file under ``root`` (the table, its timeline, its metadata table) and its bytes."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def assert_exact(path: str) -> None:
    """The metadata table's built partitions equal a recomputation from the data table."""
    result = validate_metadata_table(HudiTable.open(path))
    assert result.ok, str(result)


#: Upserts of the trips rows whose metadata table compacts (every 3 deltacommits) and
#: log-compacts (every 2 blocks) itself, so a few writes exercise both.
SELF_SERVICE_OPTIONS = {"hoodie.datasource.write.recordkey.field": "uuid",
                        "hoodie.datasource.write.precombine.field": "ts",
                        "hoodie.datasource.write.partitionpath.field": "city",
                        "hoodie.datasource.write.operation": "upsert",
                        "hoodie.metadata.compact.max.delta.commits": "3",
                        "hoodie.metadata.log.compaction.enable": "true",
                        "hoodie.metadata.log.compaction.blocks.threshold": "2"}
