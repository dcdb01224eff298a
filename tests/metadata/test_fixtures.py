"""Metadata tables of the real Hudi fixture tables (written by Apache Hudi on Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiTable as RsTable

import hudisql
from hudisql.metadata.build import build_partitions
from hudisql.metadata.participant import participants_for
from hudisql.metadata.table import MetadataTable
from hudisql.metadata.validate import validate_metadata_table
from hudisql.table.table import HudiTable
from tests.fixtures import TABLE_ZIPS

V6 = sorted(n for n in TABLE_ZIPS if n.startswith("v6"))
V8 = sorted(n for n in TABLE_ZIPS if n.startswith("v8"))
BUILT = ("files", "column_stats", "record_index", "partition_stats", "bloom_filters")


def rows(path: str) -> list[dict[str, Any]]:
    ours = hudisql.read_table(path).sort_by("_hoodie_record_key").to_pylist()
    theirs = pa.Table.from_batches(RsTable(path).read()).sort_by("_hoodie_record_key").to_pylist()
    assert ours == theirs
    return ours


@pytest.mark.parametrize("name", V6)
def test_hudi_written_tables_get_an_exact_metadata_table(name: str, writable_table: Any) -> None:
    path: Path = writable_table(name)
    before = rows(str(path))
    table = build_partitions(HudiTable.open(path), BUILT)
    result = validate_metadata_table(table)
    assert result.ok and set(result.partitions) == set(BUILT), str(result)
    files = MetadataTable(table).read_partition("files")
    assert "__all_partitions__" in files
    assert rows(str(path)) == before  # hudi-rs lists storage for v6 and ignores it


@pytest.mark.parametrize("name", V8)
def test_version_8_tables_get_an_exact_metadata_table(name: str, writable_table: Any) -> None:
    """Hudi 1.0's tables without a metadata table get one as Hudi 1.x keeps it (layout 2,
    HFile, Hudi 1.1's record schema): exact, and hudi-rs (which lists a version-8 table
    through it) reads the same rows."""
    path: Path = writable_table(name)
    assert participants_for(HudiTable.open(path)) == []
    before = rows(str(path))
    table = build_partitions(HudiTable.open(path), BUILT)
    result = validate_metadata_table(table)
    assert result.ok and set(result.partitions) == set(BUILT), str(result)
    assert MetadataTable(table).timeline.layout == 2
    assert rows(str(path)) == before


@pytest.mark.metadata_stale  # a metadata table faked by hand: its partitions hold no files
@pytest.mark.parametrize("name", V8)
def test_version_8_indexes_are_listed_from_their_config(name: str, writable_table: Any) -> None:
    """A Hudi 1.x table with an (HFile) metadata table: listed from hoodie.properties."""
    from hudisql.metadata.overview import metadata_partitions
    from hudisql.table.format import properties as P

    path: Path = writable_table(name)
    table = HudiTable.open(path)
    table.properties.updated(**{P.METADATA_PARTITIONS: "files,record_index"}).save(
        table.storage)
    table.storage.makedirs(".hoodie/metadata/.hoodie")
    table.storage.write_bytes(".hoodie/metadata/.hoodie/hoodie.properties",
                              table.storage.read_bytes(P.PROPERTIES_FILE))
    listed = metadata_partitions(table.reload()).to_pylist()
    assert [(p["partition"], p["state"], p["file_groups"]) for p in listed] == [
        ("files", "completed", 0), ("record_index", "completed", 0)]
