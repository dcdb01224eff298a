"""Reading the real Hudi fixture tables: hudisql against the ``hudi`` (hudi-rs) reader.

Every fixture table (v6 and v8, COW and MOR, Avro and parquet log blocks, deletes, a
rollback command block) must read with exactly the rows the ``hudi`` PyPI reader returns,
compared row by row after sorting by record key, with the same columns in the same order.

Allowed type differences, and only these (``_normalised``):
- nullability: hudi-rs declares the five meta columns NOT NULL; hudisql derives the
  schema from the table's Avro schema, where every field is a ``["null", T]`` union;
- the names of list items and map entries (``element``/``array``, ``entries``/``key_value``/
  the column name): parquet-avro and Spark name these wrapper fields differently, and the
  name carries no data.
"""

from __future__ import annotations

from typing import Any

import hudi
import pyarrow as pa
import pytest

import hudisql
from hudisql.errors import HudiSqlError, TableNotFoundError
from hudisql.table import HudiTable
from tests.fixtures import TABLE_ZIPS, table_path

KEY = "_hoodie_record_key"

#: Fixture tables with two write commits: (table, first commit instant).
TWO_COMMITS = {
    "v6_trips_8i1u": "20250331030642808",
    "v6_trips_8i3d": "20250618054711154",
    "v8_trips_8i1u": "20250713011913147",
    "v6_nonpartitioned_rollback": "20250126040823628",
    "v6_simplekeygen_nonhivestyle": "20250121000547796",
    "v6_nonpartitioned": "20240418173550988",
    "v8_nonpartitioned": "20250713010535797",
}


def _normalised(t: pa.DataType) -> pa.DataType:
    """``t`` without nullability and without the names of list items and map entries."""
    if pa.types.is_map(t):
        return pa.map_(_normalised(t.key_type), _normalised(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_normalised(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _normalised(f.type)) for f in t])
    return t


def _hudi_read(name: str, as_of: str | None = None) -> pa.Table:
    table = hudi.HudiTable(str(table_path(name)))
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = table.read(options)
    schema = batches[0].schema if batches else table.get_schema_with_meta_fields()
    return pa.Table.from_batches(batches, schema=schema)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.sort_by(KEY).to_pylist()
    return rows


def assert_same_table(ours: pa.Table, theirs: pa.Table) -> None:
    """Same columns in the same order, same types (up to the allowed differences), same rows."""
    assert ours.column_names == theirs.column_names
    for mine, other in zip(ours.schema, theirs.schema, strict=True):
        assert _normalised(mine.type).equals(_normalised(other.type)), (
            f"{mine.name}: {mine.type} != {other.type}"
        )
    assert ours.num_rows == theirs.num_rows
    for mine_row, other_row in zip(_rows(ours), _rows(theirs), strict=True):
        assert mine_row == other_row


@pytest.mark.parametrize("name", sorted(TABLE_ZIPS))
def test_snapshot_matches_hudi_reader(name: str) -> None:
    ours = hudisql.read_table(str(table_path(name)))
    assert_same_table(ours, _hudi_read(name))


@pytest.mark.parametrize("name", sorted(TWO_COMMITS))
def test_time_travel_to_first_commit_matches_hudi_reader(name: str) -> None:
    first = TWO_COMMITS[name]
    ours = hudisql.read_table(str(table_path(name)), as_of=first)
    theirs = _hudi_read(name, as_of=first)
    assert_same_table(ours, theirs)
    # Only the first commit's writes are seen.
    assert set(ours.column("_hoodie_commit_time").to_pylist()) == {first}


def _by_rider(table: pa.Table) -> dict[str, dict[str, Any]]:
    return {row["rider"]: row for row in table.to_pylist()}


TRIPS_FARES = {
    "rider-A": 19.10, "rider-C": 27.70, "rider-D": 33.90, "rider-E": 93.50,
    "rider-F": 34.15, "rider-G": 43.40, "rider-I": 41.06, "rider-J": 17.85,
}


@pytest.mark.parametrize("name", ["v6_trips_8i1u", "v8_trips_8i1u"])
def test_trips_update_gives_rider_d_fare_25(name: str) -> None:
    # The .sql: 8 inserts, then UPDATE ... SET fare = 25.0 WHERE rider = 'rider-D'.
    table = HudiTable.open(table_path(name))
    rows = _by_rider(table.read())
    assert {r: row["fare"] for r, row in rows.items()} == {**TRIPS_FARES, "rider-D": 25.0}
    update = table.timeline.completed()[-1].timestamp
    assert rows["rider-D"]["_hoodie_commit_time"] == update
    assert {row["_hoodie_commit_time"] for r, row in rows.items() if r != "rider-D"} == {
        table.timeline.completed()[0].timestamp
    }
    assert rows["rider-D"]["city"] == "san_francisco"
    assert rows["rider-D"]["_hoodie_partition_path"] == "city=san_francisco"


def test_trips_delete_removes_the_three_keys() -> None:
    # The .sql: 8 inserts, then DELETE ... WHERE rider in ('rider-A', 'rider-C', 'rider-D').
    rows = _by_rider(hudisql.read_table(str(table_path("v6_trips_8i3d"))))
    assert sorted(rows) == ["rider-E", "rider-F", "rider-G", "rider-I", "rider-J"]
    assert {r: row["fare"] for r, row in rows.items()} == {
        r: f for r, f in TRIPS_FARES.items() if r in rows
    }


def test_trips_delete_as_of_insert_still_has_all_eight() -> None:
    rows = _by_rider(
        hudisql.read_table(str(table_path("v6_trips_8i3d")), as_of=TWO_COMMITS["v6_trips_8i3d"])
    )
    assert {r: row["fare"] for r, row in rows.items()} == TRIPS_FARES


def test_rolled_back_update_is_not_seen() -> None:
    # Alice's update (isActive=false) went to a deltacommit that was rolled back with a
    # command block; the later insert of Bob (isActive=true) is a valid parquet log block.
    rows = {
        row["name"]: row
        for row in hudisql.read_table(str(table_path("v6_nonpartitioned_rollback"))).to_pylist()
    }
    assert sorted(rows) == ["Alice", "Bob", "Carol"]
    assert rows["Alice"]["isActive"] is True
    assert rows["Bob"]["isActive"] is True
    assert rows["Bob"]["_hoodie_commit_time"] == "20250126060846931"


def test_cow_second_commit_replaces_alice_and_adds_diana() -> None:
    rows = {
        row["name"]: row
        for row in hudisql.read_table(str(table_path("v6_nonpartitioned"))).to_pylist()
    }
    assert sorted(rows) == ["Alice", "Bob", "Carol", "Diana"]
    assert rows["Alice"]["isActive"] is False
    assert rows["Diana"]["longField"] == 987654321


def test_open_exposes_properties_timeline_schema_and_slices() -> None:
    table = HudiTable.open(table_path("v6_trips_8i1u"))
    assert table.properties.table_name == "v6_trips_8i1u"
    assert table.properties.is_mor
    assert [i.timestamp for i in table.timeline.completed()] == [
        "20250331030642808",
        "20250331030645735",
    ]
    assert table.schema.names == [
        "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
        "_hoodie_partition_path", "_hoodie_file_name",
        "ts", "uuid", "rider", "driver", "fare", "city",
    ]
    assert '"name":"v6_trips_8i1u_record"' in table.avro_schema.replace(" ", "")
    slices = table.file_slices()
    assert sorted(s.partition_path for s in slices) == [
        "city=chennai", "city=san_francisco", "city=sao_paulo"
    ]
    only_sf = table.file_slices(partitions=["city=san_francisco"])
    assert [len(s.log_files) for s in only_sf] == [1]


def test_read_selected_columns_in_the_order_asked() -> None:
    table = HudiTable.open(table_path("v6_trips_8i1u"))
    got = table.read(columns=["fare", "rider"])
    assert got.column_names == ["fare", "rider"]
    assert dict(zip(got.column("rider").to_pylist(), got.column("fare").to_pylist(),
                    strict=True)) == {**TRIPS_FARES, "rider-D": 25.0}


def test_unknown_column_is_a_clear_error() -> None:
    table = HudiTable.open(table_path("v6_trips_8i1u"))
    with pytest.raises(HudiSqlError, match=r"v6_trips_8i1u has no column.*'tip'"):
        table.read(columns=["rider", "tip"])


def test_malformed_as_of_is_a_clear_error() -> None:
    with pytest.raises(HudiSqlError, match="yyyyMMddHHmmssSSS"):
        hudisql.read_table(str(table_path("v6_trips_8i1u")), as_of="yesterday")


def test_as_of_in_seconds_and_iso_forms() -> None:
    path = str(table_path("v6_trips_8i1u"))
    # 2025-03-31 03:06:42 covers the first commit (…42808) but not the update (…45735).
    for as_of in ("20250331030642", "2025-03-31 03:06:42", "2025-03-31T03:06:44.000"):
        rows = _by_rider(hudisql.read_table(path, as_of=as_of))
        assert rows["rider-D"]["fare"] == 33.90, as_of


def test_as_of_before_the_first_commit_reads_nothing() -> None:
    got = hudisql.read_table(str(table_path("v6_trips_8i1u")), as_of="20240101000000000")
    assert got.num_rows == 0
    assert got.column_names[:5] == [
        "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
        "_hoodie_partition_path", "_hoodie_file_name",
    ]


def test_path_that_is_not_a_hudi_table(tmp_path: Any) -> None:
    with pytest.raises(TableNotFoundError):
        hudisql.read_table(str(tmp_path))
