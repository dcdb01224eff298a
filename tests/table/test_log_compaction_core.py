"""The log compaction core on hand-built slices: the plan strategy's runs and barriers, and
execution that keeps what every key's merge means (natural-order deletes included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.fsview import LogFile
from hudisql.table.format.instant import Action
from hudisql.table.format.log.format import BlockType, HeaderKey
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.format.service_plans import CompactionOperation
from hudisql.table.services.log_compaction import (
    LogCompactionSettings,
    execute_slice,
    plan_slice,
)
from tests.table.test_merge import BASE, FILE_ID, SliceTable

TS = [f"202401010000{i:02d}000" for i in range(1, 12)]
LC = "20240102000000000"


def _table(tmp_path: Path, **props: Any) -> SliceTable:
    t = SliceTable(tmp_path / "t", **props)
    t.instant(BASE)
    t.write_base([("a", 50, "base-a"), ("b", 5, "base-b")])
    return t


def _plan(t: SliceTable, **settings: int) -> list[str] | None:
    run = plan_slice(t.storage, t.timeline.reload(), t.slice(),
                     LogCompactionSettings(**settings))
    return None if run is None else run.instants


def test_a_slice_qualifies_at_the_block_threshold(tmp_path: Path) -> None:
    t = _table(tmp_path)
    for ts in TS[:4]:
        t.instant(ts)
        t.write_log(t.data(ts, [("b", 6, ts)]))
    assert _plan(t) is None
    t.instant(TS[4])
    t.write_log(t.data(TS[4], [("b", 6, TS[4])]))
    assert _plan(t) == list(reversed(TS[:5]))


def test_a_pending_block_breaks_the_run(tmp_path: Path) -> None:
    t = _table(tmp_path)
    for i, ts in enumerate(TS[:7]):
        t.instant(ts, state="inflight" if i == 2 else "completed")
        t.write_log(t.data(ts, [("b", 6, ts)]))
    # T3 may yet complete between T2 and T4: runs are T1-T2 and T4-T7; the longer wins.
    assert _plan(t) == list(reversed(TS[3:7]))


def test_a_large_block_breaks_the_run_an_expression_block_does_not(tmp_path: Path) -> None:
    t = _table(tmp_path)
    from hudisql.table.read.expressions import mark_expressions

    marked = mark_expressions(t.avro, {"ord": "add"}, "test")
    for i, ts in enumerate(TS[:8]):
        t.instant(ts)
        if i == 3:
            t.write_log(t.data(ts, [("b", 1, None)], avro=marked))
        elif i == 5:
            t.write_log(t.data(ts, [(f"k{n}", 1, "x" * 50) for n in range(200)]))
        else:
            t.write_log(t.data(ts, [("b", 6, ts)]))
    small = max(scan_log_file(t.storage, t.logs[0].path)[0].length * 2, 2000)
    # Runs: T1-T5 (the expression block T4 is kept as one in the compacted instant) |
    # large T6 | T7-T8: the longest is T1-T5.
    assert _plan(t, small_block_size=small) == list(reversed(TS[:5]))


def _compact(t: SliceTable, instants: list[str]) -> LogFile:
    names = [log.name for log in t.logs]
    op = CompactionOperation(FILE_ID, "", BASE, names, t.base.name if t.base else None)
    t.instant(LC, state="inflight", action=Action.LOGCOMPACTION)
    schema = json_schema(t)
    stat = execute_slice(t.storage, t.props, t.timeline.reload(), op, instants, LC,
                         "0-5-5", schema, LogCompactionSettings())
    assert stat is not None
    name = stat.log_files[0]
    version = int(name.split(".log.")[1].split("_")[0])
    log = LogFile(name, FILE_ID, BASE, version, "0-5-5", t.storage.size(name))
    t.logs.append(log)
    inflight = t.timeline.reload().get(LC)
    assert inflight is not None
    t.timeline.complete(inflight, CommitMetadata(operation_type="LOG_COMPACT").to_json())
    return log


def json_schema(t: SliceTable) -> str:
    import json

    return json.dumps(t.avro)


@pytest.mark.parametrize("props", [{}, {"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}])
def test_compaction_keeps_natural_order_deletes_that_wiped_a_key(
    tmp_path: Path, props: dict[str, str]
) -> None:
    t = _table(tmp_path, **props)
    for ts in TS[:5]:
        t.instant(ts)
    t.write_log(t.data(TS[0], [("a", 10, "t1-a"), ("b", 9, "t1-b")]))
    t.write_log(t.delete(TS[1], [("a", 0), ("b", 0)]))  # natural order: wipes a and b
    t.write_log(t.data(TS[2], [("a", 1, "t3-a")]))  # a comes back with a low ordering value
    t.write_log(t.delete(TS[3], [("c", 0)]))
    t.write_log(t.data(TS[4], [("c", 2, "t5-c"), ("d", 3, "t5-d")]))
    before = t.values()
    assert before["a"] == (1, "t3-a") and "b" not in before
    log = _compact(t, list(reversed(TS[:5])))
    blocks = scan_log_file(t.storage, log.path)
    assert [b.block_type for b in blocks] == [BlockType.DELETE, BlockType.PARQUET_DATA]
    assert {b.header[HeaderKey.COMPACTED_BLOCK_TIMES] for b in blocks} == {
        ",".join(reversed(TS[:5]))}
    _, report = t.merge()
    assert {b.instant_time for b in report.merged} == {LC}
    assert t.values() == before


def test_ordered_deletes_keep_their_ordering_value(tmp_path: Path) -> None:
    t = _table(tmp_path)
    for ts in TS[:3]:
        t.instant(ts)
    t.write_log(t.delete(TS[0], [("a", 60), ("b", 4)]))  # a removed; b's base row wins
    t.write_log(t.data(TS[1], [("e", 1, "t2-e")]))
    t.write_log(t.delete(TS[2], [("e", 1)]))
    before = t.values()
    assert set(before) == {"b"}
    _compact(t, list(reversed(TS[:3])))
    # A later record with a lower ordering value still loses to the compacted delete.
    t.instant(TS[5])
    t.write_log(t.data(TS[5], [("a", 55, "late-a"), ("e", 2, "late-e")]))
    assert t.values() == {"b": (5, "base-b"), "e": (2, "late-e")}
