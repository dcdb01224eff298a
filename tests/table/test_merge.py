"""Merged reads of one file slice: each rule of docs/FORMAT.md on a crafted, real slice.

Every test writes a real v6 MOR table (hoodie.properties, timeline instants, a parquet
base file, log files made of Hudi-format blocks) and reads one slice with
``read_file_slice``/``merge_file_slice``. Records are ``(id, ord, val)``; ``ord`` is the
precombine field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudisql.errors import HudiSqlError
from hudisql.table.format.commit_metadata import CommitMetadata, RollbackMetadata
from hudisql.table.format.fsview import BaseFile, FileSlice, LogFile
from hudisql.table.format.instant import Action
from hudisql.table.format.log.format import BlockType, DeleteRecord, HeaderKey, encode_block
from hudisql.table.format.log.writer import (
    encode_avro_data_block,
    encode_delete_block,
    encode_rollback_block,
)
from hudisql.table.format.properties import new_table_properties
from hudisql.table.format.schema import META_COLUMNS, arrow_to_avro
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.merge import (
    CorruptLogBlockWarning,
    SliceReadReport,
    merge_file_slice,
    read_file_slice,
)

SCHEMA = pa.schema([("id", pa.string()), ("ord", pa.int64()), ("val", pa.string())])
FILE_ID = "5d1f3a3e-0b4c-4a57-9a3e-2f1c0e9b7a11-0"
BASE = "20240101000000000"
T1, T2, T3, T4 = (f"2024010100000{i}000" for i in range(1, 5))
Row = tuple[Any, ...]  # (id, ord, val[, more columns])


class SliceTable:
    """A real v6 MOR table with one file group, built block by block."""

    def __init__(self, root: Path, schema: pa.Schema = SCHEMA, **props: Any) -> None:
        self.storage = Storage(str(root))
        self.schema = schema
        self.avro = arrow_to_avro(schema, "t", with_meta=True)
        precombine = props.pop("precombine", "ord")
        self.props = new_table_properties(
            "t", "MERGE_ON_READ", ["id"], precombine_field=precombine,
            create_schema=json.dumps(arrow_to_avro(schema, "t")), extra=props or None,
        )
        self.props.save(self.storage)
        self.storage.write_bytes(".hoodie_partition_metadata", b"partitionDepth=0\n")
        self.timeline = Timeline.load(self.storage, self.props)
        self.base: BaseFile | None = None
        self.logs: list[LogFile] = []

    # -- timeline ------------------------------------------------------------------------

    def instant(self, ts: str, state: str = "completed", action: str = Action.DELTACOMMIT) -> str:
        instant = self.timeline.create_requested(action, ts)
        if state in ("inflight", "completed"):
            instant = self.timeline.transition_to_inflight(instant)
        if state == "completed":
            meta = CommitMetadata(extra_metadata={"schema": json.dumps(self.avro)})
            self.timeline.complete(instant, meta.to_json())
        return ts

    def rollback(self, ts: str, target: str) -> None:
        instant = self.timeline.create_requested(Action.ROLLBACK, ts)
        instant = self.timeline.transition_to_inflight(instant)
        meta = RollbackMetadata(start_rollback_time=ts, commits_rollback=[target])
        self.timeline.complete(instant, meta.to_avro())

    # -- files ---------------------------------------------------------------------------

    def records(self, ts: str, rows: list[Row], schema: pa.Schema | None = None) -> pa.Table:
        schema = schema or self.schema
        columns: dict[str, list[Any]] = {
            "_hoodie_commit_time": [ts] * len(rows),
            "_hoodie_commit_seqno": [f"{ts}_0_{i}" for i in range(len(rows))],
            "_hoodie_record_key": [r[0] for r in rows],
            "_hoodie_partition_path": [""] * len(rows),
            "_hoodie_file_name": [FILE_ID] * len(rows),
        }
        for i, name in enumerate(schema.names):
            columns[name] = [r[i] if i < len(r) else None for r in rows]
        meta = [pa.field(n, pa.string()) for n in META_COLUMNS]
        return pa.table(columns, schema=pa.schema(meta + list(schema)))

    def write_base(self, rows: list[Row], ts: str = BASE) -> None:
        name = f"{FILE_ID}_0-1-1_{ts}.parquet"
        sink = pa.BufferOutputStream()
        pq.write_table(self.records(ts, rows), sink)
        self.storage.write_bytes(name, sink.getvalue().to_pybytes())
        self.base = BaseFile(name, FILE_ID, ts, "0-1-1", self.storage.size(name))

    def data(self, ts: str, rows: list[Row], avro: dict[str, Any] | None = None,
             schema: pa.Schema | None = None, **header: str) -> bytes:
        headers = {HeaderKey.INSTANT_TIME: ts}
        headers.update({HeaderKey[k]: v for k, v in header.items()})
        return encode_avro_data_block(self.records(ts, rows, schema), avro or self.avro, headers)

    def delete(self, ts: str, keys: list[tuple[str, Any]]) -> bytes:
        records = [DeleteRecord(k, "", o) for k, o in keys]
        return encode_delete_block(records, {HeaderKey.INSTANT_TIME: ts})

    def write_log(self, *blocks: bytes) -> LogFile:
        version = len(self.logs) + 1
        name = f".{FILE_ID}_{BASE}.log.{version}_0-1-{version}"
        self.storage.write_bytes(name, b"".join(blocks))
        log = LogFile(name, FILE_ID, BASE, version, f"0-1-{version}", self.storage.size(name))
        self.logs.append(log)
        return log

    # -- reads ---------------------------------------------------------------------------

    def slice(self) -> FileSlice:
        return FileSlice("", FILE_ID, BASE, self.base, tuple(self.logs))

    def merge(self, as_of: str | None = None, **kw: Any) -> tuple[pa.Table, SliceReadReport]:
        timeline = self.timeline.reload()
        return merge_file_slice(self.storage, self.props, timeline, self.slice(), as_of, **kw)

    def values(self, as_of: str | None = None) -> dict[str, tuple[int | None, str]]:
        table, _ = self.merge(as_of)
        assert table.column_names[:5] == list(META_COLUMNS)
        return {r["id"]: (r["ord"], r["val"]) for r in table.to_pylist()}


@pytest.fixture
def t(tmp_path: Path) -> SliceTable:
    table = SliceTable(tmp_path / "t")
    table.instant(BASE)
    table.write_base([("a", 5, "base-a"), ("b", 5, "base-b"), ("c", 5, "base-c")])
    return table


def test_base_file_alone_reads_as_is(t: SliceTable) -> None:
    assert t.values() == {"a": (5, "base-a"), "b": (5, "base-b"), "c": (5, "base-c")}


def test_greatest_ordering_value_wins_whatever_the_log_order(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    t.write_log(t.data(T1, [("a", 9, "t1-a"), ("b", 4, "t1-b")]))
    t.write_log(t.data(T2, [("a", 7, "t2-a"), ("b", 6, "t2-b")]))
    assert t.values() == {"a": (9, "t1-a"), "b": (6, "t2-b"), "c": (5, "base-c")}


def test_new_keys_in_logs_are_added_to_the_base_rows(t: SliceTable) -> None:
    t.instant(T1)
    t.write_log(t.data(T1, [("d", 1, "t1-d"), ("e", 1, "t1-e")]))
    assert t.values() == {
        "a": (5, "base-a"), "b": (5, "base-b"), "c": (5, "base-c"),
        "d": (1, "t1-d"), "e": (1, "t1-e"),
    }


def test_ties_go_to_the_later_record_in_log_order(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    # Across blocks (base vs log, log vs log) and within one block.
    t.write_log(t.data(T1, [("a", 5, "t1-a"), ("b", 5, "t1-b"), ("b", 5, "t1-b2")]))
    t.write_log(t.data(T2, [("a", 5, "t2-a")]))
    assert t.values() == {"a": (5, "t2-a"), "b": (5, "t1-b2"), "c": (5, "base-c")}


def test_delete_removes_key_unless_the_record_orders_higher(t: SliceTable) -> None:
    t.instant(T1)
    t.write_log(t.delete(T1, [("a", 5), ("b", 4), ("zz", 9)]))
    # a: delete ordering 5 >= 5 removes it; b: 4 < 5 keeps the base row; zz: no such key.
    assert t.values() == {"b": (5, "base-b"), "c": (5, "base-c")}


def test_record_after_delete_needs_a_greater_ordering_value(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    t.instant(T3)
    t.write_log(
        t.delete(T1, [("a", 6), ("b", 6)]),
        t.data(T2, [("a", 6, "t2-a"), ("b", 5, "t2-b")]),
        t.data(T3, [("b", 7, "t3-b")]),
    )
    # a: equal ordering does not bring it back; b: 7 > 6 does.
    assert t.values() == {"b": (7, "t3-b"), "c": (5, "base-c")}


def test_natural_order_delete_removes_whatever_came_before(t: SliceTable) -> None:
    # Spark writes orderingVal int 0 when a delete has no ordering value: it applies in
    # log order, so it wins over the earlier ord=100 and loses to the later ord=1.
    t.instant(T1)
    t.instant(T2)
    t.instant(T3)
    t.write_log(
        t.data(T1, [("a", 100, "t1-a"), ("b", 100, "t1-b"), ("d", 3, "t1-d")]),
        t.delete(T2, [("a", 0), ("b", None), ("d", 0)]),
        t.data(T3, [("b", 1, "t3-b"), ("d", None, "t3-d")]),
    )
    # Even a later record without an ordering value comes after the delete.
    assert t.values() == {"b": (1, "t3-b"), "c": (5, "base-c"), "d": (None, "t3-d")}


def test_blocks_of_pending_instants_are_not_merged(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2, state="inflight")
    t.instant(T3, state="requested")
    t.write_log(
        t.data(T1, [("a", 6, "t1-a")]),
        t.data(T2, [("a", 9, "t2-a")]),
        t.data(T3, [("b", 9, "t3-b")]),
        t.data(T4, [("c", 9, "t4-c")]),  # T4 is not on the timeline at all
    )
    table, report = t.merge()
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {
        "a": "t1-a", "b": "base-b", "c": "base-c"
    }
    assert [b.instant_time for b in report.merged] == [T1]
    assert [b.instant_time for b in report.invisible] == [T2, T3, T4]


def test_as_of_ignores_blocks_of_later_instants(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    t.write_log(t.data(T1, [("a", 6, "t1-a")]), t.data(T2, [("a", 7, "t2-a")]))
    assert t.values(as_of=BASE)["a"] == (5, "base-a")
    assert t.values(as_of=T1)["a"] == (6, "t1-a")
    assert t.values(as_of=T2)["a"] == (7, "t2-a")


def test_rollback_command_voids_its_target_wherever_it_sits(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    t.instant(T3)
    # T2's blocks sit before the command block, and after it in a later file.
    t.write_log(t.data(T1, [("a", 6, "t1-a")]), t.data(T2, [("a", 8, "t2-a")]))
    t.write_log(encode_rollback_block(T3, T2))
    t.write_log(t.data(T2, [("b", 8, "t2-b")]), t.delete(T2, [("c", 9)]))
    table, report = t.merge()
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {
        "a": "t1-a", "b": "base-b", "c": "base-c"
    }
    assert len(report.rolled_back) == 3
    assert {b.instant_time for b in report.rolled_back} == {T2}
    assert len(report.commands) == 1


def test_instant_named_by_a_completed_rollback_is_not_merged(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    t.write_log(t.data(T1, [("a", 6, "t1-a")]), t.data(T2, [("b", 6, "t2-b")]))
    assert t.values()["b"] == (6, "t2-b")
    t.rollback(T3, T2)
    assert t.values() == {"a": (6, "t1-a"), "b": (5, "base-b"), "c": (5, "base-c")}


def _broken_trailing_length(block: bytes) -> bytes:
    total = int.from_bytes(block[-8:], "big")
    return block[:-8] + (total + 1).to_bytes(8, "big")


def test_corrupt_block_is_skipped_reported_and_reading_goes_on(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    t.instant(T3)
    t.write_log(
        t.data(T1, [("a", 6, "t1-a")]),
        _broken_trailing_length(t.data(T2, [("a", 99, "corrupt"), ("c", 99, "corrupt")])),
        b"garbage between blocks",
        t.data(T3, [("b", 7, "t3-b")]),
    )
    with pytest.warns(CorruptLogBlockWarning, match="corrupt log block"):
        table, report = t.merge()
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {
        "a": "t1-a", "b": "t3-b", "c": "base-c"
    }
    assert [b.instant_time for b in report.merged] == [T1, T3]
    assert report.corrupt and all(b.block_type == BlockType.CORRUPT for b in report.corrupt)


def test_log_file_cut_short_keeps_the_blocks_before_the_cut(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    cut = t.data(T2, [("b", 9, "t2-b")])
    t.write_log(t.data(T1, [("a", 6, "t1-a")]), cut[: len(cut) // 2])
    with pytest.warns(CorruptLogBlockWarning, match="corrupt log block"):
        table, report = t.merge()
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {
        "a": "t1-a", "b": "base-b", "c": "base-c"
    }
    assert len(report.corrupt) == 1


def test_block_whose_content_does_not_decode_is_skipped(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    # Sound framing, but the content claims 5 records and holds a few stray bytes.
    header = {HeaderKey.INSTANT_TIME: T1, HeaderKey.SCHEMA: json.dumps(t.avro)}
    bad = encode_block(BlockType.AVRO_DATA, header, b"\x00\x00\x00\x03\x00\x00\x00\x05\x07")
    t.write_log(bad, t.data(T2, [("b", 7, "t2-b")]))
    with pytest.warns(CorruptLogBlockWarning, match="does not decode"):
        table, report = t.merge()
    assert {r["id"]: r["val"] for r in table.to_pylist()}["b"] == "t2-b"
    assert [b.instant_time for b in report.corrupt] == [T1]
    assert [b.instant_time for b in report.merged] == [T2]


def test_log_compacted_block_stands_in_for_the_blocks_it_names(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    # The compacted block holds a's merged record only, so b's T2 record can only come
    # through if the replaced block were merged too.
    t.write_log(t.data(T1, [("a", 6, "t1-a")]), t.data(T2, [("b", 6, "t2-b")]))
    t.write_log(t.data(T3, [("a", 6, "compacted-a")], COMPACTED_BLOCK_TIMES=f"{T1},{T2}"))
    t.instant(T3, state="inflight", action=Action.LOGCOMPACTION)
    pending = t.values()
    assert pending["a"] == (6, "t1-a") and pending["b"] == (6, "t2-b")
    inflight = t.timeline.reload().get(T3)
    assert inflight is not None
    t.timeline.complete(inflight, CommitMetadata(compacted=True).to_json())
    table, report = t.merge()
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {
        "a": "compacted-a", "b": "base-b", "c": "base-c"
    }
    assert {b.instant_time for b in report.replaced} == {T1, T2}


def test_log_compaction_replacement_is_transitive(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2, action=Action.LOGCOMPACTION)
    t.instant(T3, action=Action.LOGCOMPACTION)
    t.write_log(
        t.data(T1, [("a", 6, "t1-a"), ("b", 6, "t1-b")]),
        t.data(T2, [("a", 6, "c1-a"), ("b", 6, "c1-b")], COMPACTED_BLOCK_TIMES=T1),
        t.data(T3, [("a", 6, "c2-a")], COMPACTED_BLOCK_TIMES=T2),
    )
    # T3 replaces T2, which replaced T1: only T3's block is merged.
    assert {k: v[1] for k, v in t.values().items()} == {
        "a": "c2-a", "b": "base-b", "c": "base-c"
    }


@pytest.mark.parametrize(
    "props", [{"precombine": None}, {"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}]
)
def test_commit_time_ordering_takes_the_latest_write(tmp_path: Path, props: Any) -> None:
    t = SliceTable(tmp_path / "t", **props)
    t.instant(BASE)
    t.write_base([("a", 9, "base-a"), ("b", 9, "base-b")])
    t.instant(T1)
    t.instant(T2)
    t.write_log(t.data(T1, [("a", 1, "t1-a"), ("b", 1, "t1-b")]), t.delete(T2, [("b", 5)]))
    assert t.values() == {"a": (1, "t1-a")}


def test_log_only_slice_without_base_file(tmp_path: Path) -> None:
    t = SliceTable(tmp_path / "t")
    t.instant(BASE)
    t.instant(T1)
    t.write_log(t.data(BASE, [("a", 1, "x"), ("b", 1, "y")]), t.data(T1, [("a", 2, "z")]))
    assert t.values() == {"a": (2, "z"), "b": (1, "y")}


def test_selected_columns_still_merge_by_ordering(t: SliceTable) -> None:
    t.instant(T1)
    t.instant(T2)
    t.write_log(t.data(T1, [("a", 9, "t1-a")]), t.data(T2, [("a", 7, "t2-a")]))
    table, _ = t.merge(columns=["val", "_hoodie_record_key"])
    assert table.column_names == ["val", "_hoodie_record_key"]
    assert sorted(table.column("val").to_pylist()) == ["base-b", "base-c", "t1-a"]


def test_column_added_in_a_log_block_reads_null_for_older_rows(t: SliceTable) -> None:
    wider = SCHEMA.append(pa.field("extra", pa.float64()))
    t.instant(T1)
    block = t.data(T1, [("a", 6, "t1-a", 1.5)], avro=arrow_to_avro(wider, "t", with_meta=True),
                   schema=wider)
    t.write_log(block)
    table, _ = t.merge()
    assert table.column_names[-1] == "extra"
    extra = {r["id"]: r["extra"] for r in table.to_pylist()}
    assert extra == {"a": 1.5, "b": None, "c": None}


def test_given_schema_shapes_the_result(t: SliceTable) -> None:
    target = t.records(BASE, []).schema.append(pa.field("later", pa.int32()))
    t.instant(T1)
    t.write_log(t.data(T1, [("a", 6, "t1-a")]))
    got = read_file_slice(
        t.storage, t.props, t.timeline.reload(), t.slice(), schema=target
    )
    assert got.schema.equals(target)
    assert got.column("later").null_count == 3


def test_unknown_column_names_the_file_group(t: SliceTable) -> None:
    with pytest.raises(HudiSqlError, match=f"'nope'.*{FILE_ID}"):
        t.merge(columns=["id", "nope"])
