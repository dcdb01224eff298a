"""Merge mode: the payload class (v6) or hoodie.record.merge.mode (v8+) decides who wins.

Hudi merges ``OverwriteWithLatestAvroPayload`` tables (all the MOR fixtures) by commit time:
the later write wins even with a smaller precombine value. ``DefaultHoodieRecordPayload``
tables (what hudisql creates when a precombine field is given) compare ordering values.
Both readers, ours and the hudi PyPI reader, must agree on each.
"""

from __future__ import annotations

from pathlib import Path

import hudi
import pyarrow as pa
import pytest

import hudisql
from hudisql.table import HudiTable
from hudisql.table.format.properties import COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING
from hudisql.txn.writer import WriteClient, create_table
from tests.fixtures import copy_table

RIDER_A = "334e26e9-8355-45cc-97c6-c31daf0df330"  # ts 1695159649087, fare 19.10


def _fares(rows: pa.Table) -> dict[str, float]:
    return dict(zip(rows.column("uuid").to_pylist(), rows.column("fare").to_pylist(), strict=True))


def _hudi_rows(path: Path) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTable(str(path)).read())


def test_overwrite_with_latest_payload_lets_the_later_write_win(tmp_path: Path) -> None:
    path = copy_table("v6_trips_8i1u", tmp_path)
    table = HudiTable.open(str(path))
    assert table.properties.merge_mode == COMMIT_TIME_ORDERING
    old = table.read().filter(pa.compute.equal(pa.compute.field("uuid"), RIDER_A))
    update = old.select(table.schema.names[5:]).set_column(
        4, "fare", pa.array([1.0])).set_column(0, "ts", pa.array([1], pa.int64()))
    WriteClient(table).upsert(update)
    assert _fares(hudisql.read_table(str(path)))[RIDER_A] == 1.0
    assert _fares(_hudi_rows(path))[RIDER_A] == 1.0


def test_default_payload_keeps_the_greater_ordering_value(tmp_path: Path) -> None:
    schema = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("fare", pa.float64())])
    table = create_table(tmp_path / "t", "t", schema, "uuid", precombine_field="ts")
    assert table.properties.merge_mode == EVENT_TIME_ORDERING
    client = WriteClient(table)
    client.insert(pa.table({"uuid": ["a", "b"], "ts": [10, 10], "fare": [1.0, 2.0]}))
    client.upsert(pa.table({"uuid": ["a", "b"], "ts": [5, 20], "fare": [9.0, 8.0]}))
    expected = {"a": 1.0, "b": 8.0}  # a's update is older than what is stored
    assert _fares(hudisql.read_table(str(tmp_path / "t"))) == expected
    assert _fares(_hudi_rows(tmp_path / "t")) == expected


@pytest.mark.parametrize(
    ("props", "mode"),
    [
        ({"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}, COMMIT_TIME_ORDERING),
        ({"hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
          "hoodie.compaction.payload.class":
              "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"},
         EVENT_TIME_ORDERING),
        ({"hoodie.compaction.payload.class":
              "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}, EVENT_TIME_ORDERING),
        ({}, EVENT_TIME_ORDERING),
    ],
)
def test_merge_mode_prefers_the_explicit_setting(props: dict[str, str], mode: str) -> None:
    from hudisql.table.format.properties import new_table_properties

    base = new_table_properties("t", "MERGE_ON_READ", ["k"])
    values = {k: v for k, v in base.items() if k != "hoodie.compaction.payload.class"}
    assert type(base)(values | props).merge_mode == mode
