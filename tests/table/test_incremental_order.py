"""Incremental queries on version 9 tables whose writes complete out of requested order.

Write B is requested before write C but completes after it: B's commit is held at its
validation step (before it takes the table lock) while C runs whole, so C's completion time
comes first, deterministically. Ranges are by completion time, as in Apache Hudi 1.x and
hudi-rs: hudisql's rows equal hudi-rs's for every range, and CDC lists the writes in
completion order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import hudi
import pyarrow as pa
import pytest

from hudisql.errors import ReadOptionError
from hudisql.table.read.cdc import read_cdc
from hudisql.table.read.incremental import read_incremental, resolve_range
from hudisql.table.table import HudiTable
from hudisql.txn.transaction import Transaction
from hudisql.txn.writer import WriteClient, create_table
from tests.table.test_incremental import SCHEMA, TABLE_TYPES, records

Rows = list[tuple[str, float, str]]


@dataclass
class OutOfOrder:
    """A version 9 table: A inserts k00..k09; B (k00, k02 in sf) is requested before C (k01,
    k03 in la) and completes after it; D updates k04 and k05 last."""

    path: str
    a: str
    b: str
    c: str
    d: str

    def table(self) -> HudiTable:
        return HudiTable.open(self.path)

    def done(self, instant: str) -> str:
        """The completion time of write ``instant``."""
        found = self.table().timeline.get(instant)
        assert found is not None and found.completion_time, instant
        return found.completion_time


def write_out_of_order(path: str, table_type: str) -> OutOfOrder:
    """Builds the table of :class:`OutOfOrder`; C runs inside B's hook, before B's commit."""
    create_table(path, "trips", SCHEMA, "uuid", "city", "ts", table_type)
    a = WriteClient(HudiTable.open(path)).insert(records(range(10), ts=1)).instant_time
    held: list[str] = []

    def run_c_first(event: str, _: str) -> None:
        if event == "validating" and not held:
            c_client = WriteClient(HudiTable.open(path))
            held.append(c_client.upsert(records([1, 3], 2, 300.0)).instant_time)

    b = WriteClient(HudiTable.open(path), on_step=run_c_first).upsert(
        records([0, 2], 2, 200.0)).instant_time
    d = WriteClient(HudiTable.open(path)).upsert(records([4, 5], 3, 400.0)).instant_time
    return OutOfOrder(path, a, b, held[0], d)


@pytest.fixture(scope="module", params=TABLE_TYPES)
def history(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> OutOfOrder:
    path = str(tmp_path_factory.mktemp("order") / request.param.lower())
    made = write_out_of_order(path, request.param)
    assert made.b < made.c and made.done(made.c) < made.done(made.b)  # out of order
    return made


def _rows(table: pa.Table) -> Rows:
    if not table.num_rows:
        return []
    return sorted(zip(table.column("uuid").to_pylist(), table.column("fare").to_pylist(),
                      table.column("_hoodie_commit_time").to_pylist(), strict=True))


def _hudi_rs(path: str, begin: str, end: str) -> Rows:
    options = (hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
               .with_start_timestamp(begin).with_end_timestamp(end))
    return _rows(pa.Table.from_batches(hudi.HudiTable(path).read(options)))


def test_ranges_are_by_completion_time_as_hudi_rs_reads_them(history: OutOfOrder) -> None:
    h, done = history, history.done
    table = h.table()
    b_rows = [("k00", 200.0, h.b), ("k02", 202.0, h.b)]
    c_rows = [("k01", 301.0, h.c), ("k03", 303.0, h.c)]
    # C completed first: a range up to its completion holds C, not B (requested before it).
    assert _rows(read_incremental(table, done(h.a), done(h.c))) == c_rows
    assert _rows(read_incremental(table, done(h.c), done(h.b))) == b_rows
    assert resolve_range(table, done(h.a), done(h.b)).instants == (h.c, h.b)  # in that order
    ranges = [(done(h.a), done(h.c)), (done(h.c), done(h.b)), (done(h.a), done(h.b)),
              (done(h.b), done(h.d)), ("000", done(h.b)), ("000", done(h.d)),
              # Requested times are compared with completion times, as Hudi 1.x does.
              (h.a, h.c), (h.b, h.c), (h.c, h.d)]
    for begin, end in ranges:
        assert _rows(read_incremental(table, begin, end)) == _hudi_rs(h.path, begin, end), (
            begin, end)
    # From the start to C's completion: the snapshot then, B's updates not yet in it (as
    # Hudi 1.x reads it: files as of the end's completion, commit times up to C's). hudi-rs
    # 0.5 differs here: it merges B's log, completed after that end, then drops B's rows,
    # so k00 and k02 go missing.
    assert _rows(read_incremental(table, "earliest", done(h.c))) == sorted(
        [r for r in _rows(read_incremental(table, "earliest", done(h.a)))
         if r[0] not in ("k01", "k03")] + c_rows)


def test_cdc_lists_the_writes_in_completion_order(history: OutOfOrder) -> None:
    h = history
    changes = read_cdc(h.table(), h.done(h.a), h.done(h.d)).to_pylist()
    order = list(dict.fromkeys(c["ts_ms"] for c in changes))
    assert order == [h.c, h.b, h.d]
    by_key = {(c["ts_ms"], json.loads(c["after"])["uuid"]): c for c in changes}
    k00 = by_key[(h.b, "k00")]
    assert k00["op"] == "u" and json.loads(k00["before"])["fare"] == 0.0
    only_b = read_cdc(h.table(), h.done(h.c), h.done(h.b))
    assert set(only_b.column("ts_ms").to_pylist()) == {h.b}


def test_a_pending_write_does_not_hold_the_end_back(tmp_path: Path) -> None:
    # It completes after every completion time now on the timeline, so a range ending at
    # the latest completion can never miss it; version 6 holds the end back instead.
    h = write_out_of_order(str(tmp_path / "pending"), "MERGE_ON_READ")
    pending = Transaction(h.table(), {}, "UPSERT")
    held = pending.start()
    try:
        e = WriteClient(h.table()).upsert(records([6], 4, 600.0)).instant_time
        assert held < e
        table = h.table()
        rng = resolve_range(table, h.done(h.d))
        assert rng.end == h.done(e) and rng.instants == (e,)
        with pytest.raises(ReadOptionError, match=f"write {held} .* may complete after"):
            resolve_range(table, h.done(h.d), "2999-01-01 00:00:00.000")
    finally:
        pending.abort()


@pytest.mark.spark
def test_spark_reads_the_same_ranges(spark, history: OutOfOrder) -> None:  # type: ignore[no-untyped-def]
    # Through the data source: from the start to C's completion B's log is hidden, and
    # (C's completion, B's completion] is B's rows alone.
    h, done = history, history.done
    for begin, end in [("earliest", done(h.c)), (done(h.c), done(h.b))]:
        frame = (spark.read.format("hudi")
                 .option("hoodie.datasource.query.type", "incremental")
                 .option("hoodie.datasource.read.begin.instanttime", begin)
                 .option("hoodie.datasource.read.end.instanttime", end).load(h.path))
        assert _rows(frame.toArrow()) == _rows(read_incremental(h.table(), begin, end))
