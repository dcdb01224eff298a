"""The metadata table of version 8/9 tables, written as Hudi 1.x keeps it: hudisql's writes
and table services on Hudi 1.1's own version-9 table with its HFile metadata table (record,
secondary and column/partition stats indexes), and on a version-9 table hudisql creates,
read back by hudi-rs through that metadata table. The suite's validation fixture checks
every metadata table under ``tmp_path`` after each test."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiTable as RsTable

from hudisql.errors import CorruptTableError
from hudisql.metadata.participant import participants_for
from hudisql.metadata.table import MetadataTable
from hudisql.metadata.validate import validate_metadata_table
from hudisql.services.clean import run_clean
from hudisql.services.compaction import run_compaction
from hudisql.services.indexes import TableIndexes
from hudisql.services.log_compaction import run_log_compaction
from hudisql.table.format.properties import TableProperties
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient
from tests.fixtures import copy_table
from tests.services.kit import rows, rs_rows, rs_slices, slices


def client(root: Path, options: dict[str, str] | None = None) -> WriteClient:
    table = HudiTable.open(root)
    return WriteClient(table, participants=participants_for(table, options))


def same_for_hudi_rs(root: Path) -> None:
    """hudi-rs reads hudisql's rows and lists its slices; its table stats work; the
    metadata table validates."""
    assert rs_rows(root) == rows(root)
    assert rs_slices(root) == slices(root)
    count, size = RsTable(str(root)).compute_table_stats()
    assert count > 0 and size > 0
    result = validate_metadata_table(HudiTable.open(root))
    assert result.ok, str(result)


def service(root: Path, run: Any, **options: Any) -> str:
    table = HudiTable.open(root)
    done = run(table, participants=participants_for(table), **options)
    assert done is not None
    return str(getattr(done, "instant", ""))


def test_writes_and_services_on_hudi_1_1s_table_with_its_metadata_table(
        tmp_path: Path) -> None:
    root = copy_table("v9_txns_complex_meta", tmp_path)
    mdt_timeline = root / ".hoodie/metadata/.hoodie/timeline"
    before = rows(root)
    assert validate_metadata_table(HudiTable.open(root)).ok  # Hudi 1.1's, as read
    update = {k: v for k, v in before[0].items() if not k.startswith("_hoodie")}
    update["txn_ts"] += 1000
    update["merchant_name"] = "hudisql"
    update["txn_date"] = dt.date(2025, 2, 1)
    new = {**update, "txn_id": "TXN-NEW", "amount": Decimal("12.50")}
    client(root).upsert([update, new])
    client(root).delete([before[1]["_hoodie_record_key"]])
    after = rows(root)
    assert len(after) == len(before)
    assert {r["merchant_name"] for r in after} >= {"hudisql"}
    same_for_hudi_rs(root)
    # The metadata timeline is layout 2: each metadata deltacommit completed with its own
    # completion time; log files are named after the deltacommit that wrote them.
    latest = HudiTable.open(root).timeline.last_completed()
    assert latest is not None
    names = sorted(p.name for p in mdt_timeline.iterdir())
    assert any(n.startswith(latest.timestamp + "_") and n.endswith(".deltacommit")
               for n in names)
    assert any(p.name.startswith(f".files-0000-0_{latest.timestamp}.log.")
               for p in (root / ".hoodie/metadata/files").iterdir())
    # The secondary index on a date keeps Hudi 1.1's V2 keys (day numbers).
    mdt = MetadataTable(HudiTable.open(root))
    keys = mdt.read_partition("secondary_index_txn_date_idx")
    days = (dt.date(2025, 2, 1) - dt.date(1970, 1, 1)).days
    assert any(k.startswith(f"{days}$") for k in keys)
    assert not any(k.startswith("2025-") for k in keys)
    service(root, run_log_compaction, options={"hoodie.log.compaction.blocks.threshold": "2"})
    same_for_hudi_rs(root)
    service(root, run_compaction)
    same_for_hudi_rs(root)
    run_clean(HudiTable.open(root), participants=participants_for(HudiTable.open(root)))
    same_for_hudi_rs(root)
    assert rows(root) == after
    # Negative control: with an HFile of the metadata table damaged, both readers refuse.
    newest = max((p for p in (root / ".hoodie/metadata/files").iterdir()
                  if p.name.endswith(".hfile")), key=lambda p: p.name.rsplit("_", 1)[-1])
    good = newest.read_bytes()
    newest.write_bytes(good[: len(good) // 2])
    try:
        with pytest.raises(Exception):  # noqa: B017 - hudi-rs raises its own error types
            RsTable(str(root)).get_file_slices()
        with pytest.raises(CorruptTableError):
            MetadataTable(HudiTable.open(root)).read_partition("files")
    finally:
        newest.write_bytes(good)


S2 = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string()),
                ("city", pa.string()), ("d", pa.date32()), ("amt", pa.decimal128(10, 2))])


def rec(i: int, ts: int, v: str) -> dict[str, Any]:
    return {"id": f"k{i}", "ts": ts, "v": v, "city": ("sf", "la")[i % 2],
            "d": dt.date(2024, 1, 1 + i), "amt": Decimal(f"{i}.25")}


@pytest.mark.slow
def test_a_version_9_table_hudisql_creates_keeps_hudi_1_1s_metadata_table(
        tmp_path: Path, spark: Any) -> None:
    root = tmp_path / "t"
    create_table(root, "t", S2, "id", ["city"], "ts", "MERGE_ON_READ",
                 options={"hoodie.write.table.version": "9"})
    client(root).insert([rec(i, 1, "ins") for i in range(6)])
    indexes = TableIndexes(str(root), {"hoodie.write.lock.provider": "in-process"},
                           spark=spark)
    indexes.create("record_index", ["id"])
    indexes.create("stats", ["ts", "d", "amt", "v"], using="column_stats")
    indexes.create("idx_d", ["d"])
    props = TableProperties.load(MetadataTable(HudiTable.open(root)).storage)
    assert (props.version, props.timeline_layout, props["hoodie.table.base.file.format"]) == (
        9, 2, "HFILE")
    assert props["hoodie.table.keygenerator.type"] == "HOODIE_TABLE_METADATA"
    definitions = json.loads((root / ".hoodie/.index_defs/index.json").read_text())
    versions = {k: d["version"] for k, d in definitions["indexDefinitions"].items()}
    assert versions == {"column_stats": "V2", "secondary_index_idx_d": "V2"}
    same_for_hudi_rs(root)
    for r in range(3):
        client(root).upsert([rec(i, 2 + r, f"u{r}-{i}") for i in range(6)])
    client(root).delete(["k1"])
    same_for_hudi_rs(root)
    service(root, run_log_compaction, options={"hoodie.log.compaction.blocks.threshold": "2"})
    service(root, run_compaction)
    same_for_hudi_rs(root)
    services = {"hoodie.metadata.log.compaction.enable": "true",
                "hoodie.metadata.log.compaction.blocks.threshold": "3"}
    for i in range(10):  # enough metadata deltacommits for its log compaction and compaction
        client(root, services).upsert([rec(0, 10 + i, f"w{i}")])
    mdt_timeline = root / ".hoodie/metadata/.hoodie/timeline"
    for action in ("compaction", "logcompaction"):
        done = [n for n in os.listdir(mdt_timeline) if n.endswith(f".{action}.requested")]
        # Fresh instants of their own (17 digits), not Hudi 0.x's <data instant>001/005.
        assert done and all(len(n.split(".")[0]) == 17 for n in done), action
    same_for_hudi_rs(root)
