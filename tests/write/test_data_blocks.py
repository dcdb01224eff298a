"""Upserts put parquet data blocks in merge-on-read log files (hudisql's default,
``hoodie.logfile.data.block.format``), Avro ones when asked; hudisql and hudi-rs read the
same rows from either, through updates, deletes in the same commit, every column type
and a later upsert on top. A format hudisql does not write is refused before any instant.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from hudisql.errors import WriteError
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.format.log.format import BlockType
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.io.storage import Storage
from hudisql.table.write.create import create_table
from hudisql.table.write.files import DATA_BLOCK_FORMAT
from hudisql.table.write.small_files import SMALL_FILE_LIMIT
from tests.write.trips import check, frame

pytestmark = pytest.mark.spark

BASE = [(f"u{i}", 1, f"rider-{i}", float(i), "sf" if i % 2 else "la") for i in range(8)]
MARKED = ("uuid string, ts long, rider string, fare double, city string, "
          "_hoodie_is_deleted boolean")


def _data_blocks(path: str) -> dict[BlockType, int]:
    """How many blocks of each type the table's log files hold."""
    storage = Storage(path)
    out: dict[BlockType, int] = {}
    for log in Path(path).rglob(".*.log.*"):
        for block in scan_log_file(storage, str(log.relative_to(path))):
            out[block.block_type] = out.get(block.block_type, 0) + 1
    return out


def _tree(path: str) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in Path(path).rglob("*")
            if p.is_file()}


@pytest.mark.parametrize("block_format", [None, "parquet", "avro"])
def test_upserts_write_the_chosen_data_blocks_and_both_readers_agree(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle],
    block_format: str | None,
) -> None:
    handle = new_table()
    # Small files off: the inserts go to a new file group, not into a rewritten base file.
    options = {SMALL_FILE_LIMIT: "0"}
    if block_format is not None:
        options[DATA_BLOCK_FORMAT] = block_format
    handle.insert(frame(hudi_session, BASE))
    # Updates (one stale), inserts and deletes of stored keys in one upsert: one log file
    # per touched file group with a data block and a delete block.
    upsert = [("u1", 2, "new-1", 10.0, "sf", False), ("u2", 0, "stale", -1.0, "la", False),
              ("u4", 2, "new-4", 40.0, "la", False), ("n1", 1, "ins", 5.0, "sf", False),
              ("u3", 3, "x", 0.0, "sf", True), ("u6", 3, "x", 0.0, "la", True)]
    handle.upsert(hudi_session.spark.createDataFrame(upsert, MARKED), **options)
    expected = {r[0]: r for r in BASE}
    expected.update({"u1": upsert[0][:5], "u4": upsert[2][:5], "n1": upsert[3][:5]})
    for gone in ("u3", "u6"):
        del expected[gone]
    check(handle, list(expected.values()))
    # A second upsert on top of the first's log: the merge of two blocks of that format.
    handle.upsert(frame(hudi_session, [("u1", 5, "again", 11.0, "sf")]), **options)
    expected["u1"] = ("u1", 5, "again", 11.0, "sf")
    check(handle, list(expected.values()))
    blocks = _data_blocks(handle.path)
    parquet = block_format in (None, "parquet")
    assert blocks.get(BlockType.PARQUET_DATA, 0) == (3 if parquet else 0)
    assert blocks.get(BlockType.AVRO_DATA, 0) == (0 if parquet else 3)
    assert blocks[BlockType.DELETE] == 2  # one per partition of the deletes


def test_parquet_data_blocks_keep_every_column_type_for_both_readers(
    hudi_session: HudiSession, tmp_path: Path,
) -> None:
    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("d", pa.date32()),
                        ("t", pa.timestamp("us", tz="UTC")), ("dec", pa.decimal128(10, 2)),
                        ("f", pa.float32()), ("b", pa.bool_()), ("bin", pa.binary()),
                        ("city", pa.string()), ("arr", pa.list_(pa.int32())),
                        ("n", pa.int32())])
    path = str(tmp_path / "typed")
    create_table(path, "typed", schema, "id", "city", "ts", "MERGE_ON_READ")
    handle = hudi_session.table_at(path)

    def rows(n: int, ts: int) -> list[dict[str, Any]]:
        return [{"id": f"k{i}", "ts": ts, "d": dt.date(2024, 1, 1 + i),
                 "t": dt.datetime(2024, 1, 1, i, tzinfo=dt.UTC),
                 "dec": decimal.Decimal(f"{i}.{ts:02d}"), "f": i / 4, "b": i % 2 == 0,
                 "bin": bytes([i, ts]), "city": "sf" if i % 2 else "la", "arr": [i, ts],
                 "n": None if i == 1 else i} for i in range(n)]

    spark = hudi_session.spark
    ddl = ("id string, ts long, d date, t timestamp, dec decimal(10,2), f float, b boolean, "
           "bin binary, city string, arr array<int>, n int")
    handle.insert(spark.createDataFrame(rows(6, 1), ddl))
    handle.upsert(spark.createDataFrame(rows(4, 2), ddl))
    assert _data_blocks(path) == {BlockType.PARQUET_DATA: 2}
    expected = {r["id"]: r for r in rows(6, 1)}
    expected.update({r["id"]: r for r in rows(4, 2)})
    names = [f.name for f in schema]
    ours = pa.Table.from_pylist(
        [r.asDict() for r in handle.read().select(*names).collect()]).to_pylist()
    theirs = pa.Table.from_batches(hudi.HudiTable(path).read()).select(names).to_pylist()

    def norm(row: dict[str, Any]) -> tuple[Any, ...]:
        t = row["t"]
        when = t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)
        return (row["id"], row["ts"], row["d"], when, row["dec"], row["f"], row["b"],
                bytes(row["bin"]), row["city"], list(row["arr"]), row["n"])

    want = sorted(norm(r) for r in expected.values())
    assert sorted(norm(r) for r in theirs) == want
    # Spark shows timestamps in the session's zone: compare the instants.
    assert sorted(norm(r) for r in ours) == want


def test_a_block_format_hudisql_does_not_write_is_refused_before_any_instant(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle],
) -> None:
    handle = new_table()
    handle.insert(frame(hudi_session, BASE))
    before = _tree(handle.path)
    with pytest.raises(WriteError, match=r"table trips: hoodie\.logfile\.data\.block\."
                                         r"format='hfile'.*parquet or avro"):
        handle.upsert(frame(hudi_session, BASE[:2]), **{DATA_BLOCK_FORMAT: "hfile"})
    assert _tree(handle.path) == before
