"""Index state in hoodie.properties and index definitions in index.json."""

from __future__ import annotations

import json

import pytest

from hudisql.errors import CorruptTableError
from hudisql.metadata.config import (
    DEFAULT_INDEX_DEFS_PATH,
    INDEX_DEFS_PATH_KEY,
    IndexDefinition,
    completed_partitions,
    has_metadata_table,
    inflight_partitions,
    load_index_definitions,
    save_index_definitions,
    set_partition_state,
    with_index_version,
)
from hudisql.table.format import properties as P
from hudisql.table.table import HudiTable


def test_partition_states_move_and_stay_sorted(mor_table: HudiTable) -> None:
    assert not has_metadata_table(mor_table.properties)
    table = set_partition_state(mor_table, "record_index", "inflight")
    table = set_partition_state(table, "files", "completed")
    assert table.properties[P.METADATA_PARTITIONS_INFLIGHT] == "record_index"
    table = set_partition_state(table, "record_index", "completed")
    assert table.properties[P.METADATA_PARTITIONS] == "files,record_index"
    assert P.METADATA_PARTITIONS_INFLIGHT not in table.properties
    assert has_metadata_table(table.properties)
    # The saved file is what TableProperties reads back, checksum included.
    reread = P.TableProperties.load(table.storage)
    assert completed_partitions(reread) == ["files", "record_index"]
    assert inflight_partitions(reread) == []
    table = set_partition_state(table, "files", None)
    assert completed_partitions(table.properties) == ["record_index"]


def test_an_unchanged_state_leaves_the_file_alone(mor_table: HudiTable) -> None:
    table = set_partition_state(mor_table, "files", "completed")
    before = table.storage.read_bytes(P.PROPERTIES_FILE)
    set_partition_state(table, "files", "completed")
    assert table.storage.read_bytes(P.PROPERTIES_FILE) == before


def test_index_definitions_as_hudi_writes_them(mor_table_v6: HudiTable) -> None:
    assert load_index_definitions(mor_table_v6) == {}
    rider = IndexDefinition("secondary_index_idx_rider", "secondary_index", ("rider",))
    table = save_index_definitions(mor_table_v6, {rider.index_name: rider})
    assert table.properties[INDEX_DEFS_PATH_KEY] == DEFAULT_INDEX_DEFS_PATH
    data = json.loads(table.storage.read_bytes(DEFAULT_INDEX_DEFS_PATH))
    assert data == {"indexDefinitions": {"secondary_index_idx_rider": {
        "indexName": "secondary_index_idx_rider", "indexType": "secondary_index",
        "indexFunction": "identity", "sourceFields": ["rider"], "indexOptions": {}}}}
    assert load_index_definitions(table) == {rider.index_name: rider}


def test_index_json_written_by_hudi_1x_is_read(mor_table: HudiTable) -> None:
    text = {"indexDefinitions": {"expr_index_ts": {
        "indexName": "expr_index_ts", "indexType": "column_stats", "indexFunction": "day",
        "sourceFields": ["ts"], "indexOptions": {"expr": "day"}, "version": "V2",
        "somethingNew": 1}}}
    mor_table.storage.makedirs(".hoodie/.index_defs")
    mor_table.storage.write_bytes(DEFAULT_INDEX_DEFS_PATH, json.dumps(text).encode())
    found = load_index_definitions(mor_table)["expr_index_ts"]
    assert (found.index_function, found.version, dict(found.index_options)) == (
        "day", "V2", {"expr": "day"})


def test_a_damaged_index_json_is_reported(mor_table: HudiTable) -> None:
    mor_table.storage.makedirs(".hoodie/.index_defs")
    mor_table.storage.write_bytes(DEFAULT_INDEX_DEFS_PATH, b"[not json")
    with pytest.raises(CorruptTableError, match="index definition file"):
        load_index_definitions(mor_table)


@pytest.mark.parametrize(("name", "kind", "versions"), [
    ("secondary_index_idx_rider", "secondary_index", (None, "V1", "V2")),
    ("column_stats", "column_stats", (None, "V1", "V2")),
    ("partition_stats", "partition_stats", (None, "V1", "V2")),
    ("expr_index_idx_day", "column_stats", (None, "V1", "V2")),
    ("expr_index_idx_lower", "bloom_filters", (None, "V1", "V2")),
    ("bloom_filters", "bloom_filters", (None, "V1", "V1")),
    ("record_index", "record_index", (None, "V1", "V1")),
])
def test_the_index_version_hudi_gives_each_table_version(
        name: str, kind: str, versions: tuple[str | None, ...]) -> None:
    # HoodieIndexVersion.getCurrentVersion: by the partition's type, expression indexes
    # at the version of column stats whatever their index type.
    definition = IndexDefinition(name, kind, ("x",))
    assert tuple(with_index_version(definition, v).version for v in (6, 8, 9)) == versions
