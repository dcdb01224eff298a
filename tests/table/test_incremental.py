"""Incremental queries (latest state and CDC) in pure Python, MOR and COW.

Each table has inserts, updates, deletes and a rolled-back write inside the range; results
are checked against what was written, against snapshots of the table core, and against
hudi-rs's own incremental query. The tables are version 9, whose ranges are by completion
time (:meth:`History.at` gives a write's); the version 6 ones of tests of what only version
6 does (a pending write holding the default end back, the archive of layout 1) are by
instant time. Writes that complete out of requested order: ``test_incremental_order.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import hudi
import pyarrow as pa
import pytest

import hudisql
from hudisql.errors import CorruptTableError, ReadOptionError
from hudisql.table.read.cdc import read_cdc
from hudisql.table.read.incremental import check_time_travel, read_incremental, resolve_range
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient, create_table
from tests.fixtures import VERSION_6, table_path

SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("fare", pa.float64()),
                    ("city", pa.string())])
TABLE_TYPES = ["MERGE_ON_READ", "COPY_ON_WRITE"]


def records(keys: range | list[int], ts: int, fare: float = 0.0) -> pa.Table:
    """Rows ``k<i>`` with fare ``fare + i`` in two cities."""
    keys = list(keys)
    return pa.table({"uuid": [f"k{i:02d}" for i in keys], "ts": [ts] * len(keys),
                     "fare": [fare + i for i in keys],
                     "city": [("sf", "la")[i % 2] for i in keys]}, schema=SCHEMA)


@dataclass
class History:
    """A table and the instants of its writes."""

    path: str
    insert: str  # k00..k19, fare i
    update: str  # k00..k04 -> fare 100+i; inserts k20..k24
    delete: str  # deletes k05..k07
    rolled_back: str  # k08, k09 -> 900+i, then rolled back
    late: str  # k10 -> fare 510

    def table(self) -> HudiTable:
        return HudiTable.open(self.path)

    def at(self, instant: str) -> str:
        """Where a range ending at write ``instant`` ends: its completion time on versions
        8/9 (ranges are by completion time there), the instant itself on version 6."""
        found = self.table().timeline.get(instant)
        assert found is not None and found.is_completed, instant
        return found.completion_time or instant


def make_history(root: Path, table_type: str,
                 options: dict[str, str] | None = None) -> History:
    """Writes the same five commits (one rolled back) to a new table (``options``: of
    ``create_table``, e.g. ``VERSION_6``; default a version 9 table)."""
    path = str(root / table_type.lower())
    create_table(path, "trips", SCHEMA, "uuid", "city", "ts", table_type, options=options)
    client = WriteClient(HudiTable.open(path))
    first = client.insert(records(range(20), ts=1)).instant_time
    second = client.upsert(pa.concat_tables([records(range(5), 2, 100.0),
                                             records(range(20, 25), 2)])).instant_time
    third = client.delete([f"k{i:02d}" for i in range(5, 8)]).instant_time
    doomed = client.upsert(records([8, 9], 3, 900.0)).instant_time
    client.rollback(doomed)
    last = client.upsert(records([10], 4, 500.0)).instant_time
    return History(path, first, second, third, doomed, last)


@pytest.fixture(scope="module", params=TABLE_TYPES)
def history(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> History:
    """Shared by the module's tests, which only read it (tests that write build their own)."""
    return make_history(tmp_path_factory.mktemp("history"), request.param)


def fares(table: pa.Table) -> dict[str, float]:
    return dict(zip(table.column("uuid").to_pylist(), table.column("fare").to_pylist(),
                    strict=True))


def hudi_rs_incremental(path: str, begin: str, end: str) -> dict[str, float]:
    options = (hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
               .with_start_timestamp(begin).with_end_timestamp(end))
    return fares(pa.Table.from_batches(hudi.HudiTable(path).read(options)))


def test_latest_state_of_the_records_written_in_the_range(history: History) -> None:
    table = history.table()
    got = read_incremental(table, history.at(history.insert), history.at(history.late))
    expected = {**{f"k{i:02d}": 100.0 + i for i in range(5)},
                **{f"k{i:02d}": float(i) for i in range(20, 25)}, "k10": 510.0}
    assert fares(got) == expected  # no deleted key, nothing of the rolled-back write
    assert set(got.column("_hoodie_commit_time").to_pylist()) == {history.update, history.late}
    assert fares(got) == hudi_rs_incremental(history.path, history.at(history.insert),
                                             history.at(history.late))
    # The same rows as the snapshot as of the end, cut to the range's commit times.
    snapshot = hudisql.read_table(history.path, as_of=history.late)
    in_range = [r for r in snapshot.to_pylist()
                if history.insert < r["_hoodie_commit_time"] <= history.late]
    assert sorted(r["uuid"] for r in in_range) == sorted(expected)


def test_range_bounds_begin_exclusive_end_inclusive(history: History) -> None:
    table = history.table()
    at = history.at
    assert read_incremental(table, at(history.update), at(history.delete)).num_rows == 0
    only_update = read_incremental(table, at(history.insert), at(history.update))
    assert len(fares(only_update)) == 10
    assert fares(only_update) == hudi_rs_incremental(history.path, at(history.insert),
                                                     at(history.update))
    everything = read_incremental(table, "earliest", at(history.update))
    assert fares(everything) == fares(hudisql.read_table(history.path, as_of=history.update))
    assert read_incremental(table, "000").num_rows == 22  # 25 keys, 3 deleted
    # The end defaults to the latest commit; a time string bounds the same way.
    assert fares(read_incremental(table, at(history.update))) == {"k10": 510.0}


def test_only_the_file_groups_written_in_the_range_are_read(history: History) -> None:
    table = history.table()
    rng = resolve_range(table, history.at(history.delete), history.at(history.late))
    assert rng.instants == (history.late,)  # the rolled-back write is no instant of it
    written = {(s.partition_path, s.file_id)
               for s in table.timeline.commit_metadata(history.late).write_stats()}
    assert rng.file_groups == written
    assert resolve_range(table, "earliest").file_groups is None


def test_cdc_before_and_after_images(history: History) -> None:
    changes = read_cdc(history.table(), history.at(history.insert),
                       history.at(history.late)).to_pylist()
    ops = [(c["ts_ms"], c["op"], json.loads(c["before"] or c["after"])["uuid"])
           for c in changes]
    assert [ts for ts, _, _ in ops] == sorted(ts for ts, _, _ in ops)  # in instant order
    assert sorted(ops) == sorted(
        [(history.update, "u", f"k{i:02d}") for i in range(5)]
        + [(history.update, "i", f"k{i:02d}") for i in range(20, 25)]
        + [(history.delete, "d", f"k{i:02d}") for i in range(5, 8)]
        + [(history.late, "u", "k10")])
    by_key = {json.loads(c["before"] or c["after"])["uuid"]: c for c in changes}
    k00 = by_key["k00"]
    assert json.loads(k00["before"])["fare"] == 0.0
    assert json.loads(k00["after"])["fare"] == 100.0
    assert json.loads(k00["after"])["_hoodie_commit_time"] == history.update
    assert by_key["k20"]["before"] is None and by_key["k05"]["after"] is None
    assert json.loads(by_key["k05"]["before"])["fare"] == 5.0


def test_cdc_from_the_start_inserts_every_first_write(history: History) -> None:
    changes = read_cdc(history.table(), "earliest", history.at(history.insert)).to_pylist()
    assert [c["op"] for c in changes] == ["i"] * 20
    assert {c["ts_ms"] for c in changes} == {history.insert}


@pytest.mark.parametrize("name", ["v6_trips_8i1u", "v6_trips_8i3d", "v6_nonpartitioned",
                                  "v6_nonpartitioned_rollback", "v8_trips_8i1u",
                                  "v8_nonpartitioned"])
def test_fixtures_read_incrementally_as_hudi_rs_does(name: str) -> None:
    path = str(table_path(name))
    table = HudiTable.open(path)
    # Hudi 1.x's own version 8 tables: bounds are completion times.
    done = [i.completion_time or i.timestamp for i in table.timeline.completed()
            if i.timestamp not in table.timeline.rolled_back_instants()]
    for begin, end in [(done[0], done[-1]), ("000", done[0])]:
        got = read_incremental(table, begin, end)
        options = (hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
                   .with_start_timestamp(begin).with_end_timestamp(end))
        oracle = pa.Table.from_batches(hudi.HudiTable(path).read(options))
        keys = "_hoodie_record_key"
        assert sorted(got.column(keys).to_pylist()) == sorted(
            oracle.column(keys).to_pylist() if oracle.num_rows else [])


def test_deletes_of_a_fixture_are_cdc_deletes() -> None:
    table = HudiTable.open(str(table_path("v6_trips_8i3d")))
    first, last = (i.timestamp for i in table.timeline.completed())
    changes = read_cdc(table, first, last)
    assert changes.column("op").to_pylist() == ["d", "d", "d"]
    assert changes.column("after").null_count == 3


@pytest.mark.parametrize(("begin", "end", "message"), [
    (None, None, "needs hoodie.datasource.read.begin.instanttime"),
    ("yesterday", None, "is not an instant time"),
    ("20250101000000000", None, None),  # before the first instant: fine
    ("29990101000000000", None, "no instant 29990101000000000 on the timeline"),
    ("earliest", "earliest", "must be an instant or a time"),
])
def test_bad_bounds_are_refused(history: History, begin: str | None, end: str | None,
                                message: str | None) -> None:
    if message is None:
        assert read_incremental(history.table(), begin, end).num_rows == 22
        return
    with pytest.raises(ReadOptionError, match=message):
        read_incremental(history.table(), begin, end)


def test_begin_after_end_is_refused(history: History) -> None:
    with pytest.raises(ReadOptionError, match="swap them"):
        read_incremental(history.table(), history.at(history.late), history.at(history.update))


def test_a_rolled_back_instant_is_not_on_the_timeline(history: History) -> None:
    with pytest.raises(ReadOptionError, match=f"no instant {history.rolled_back}"):
        read_incremental(history.table(), history.rolled_back)


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_pending_writes_bound_the_default_end_on_version_6(table_type: str,
                                                           tmp_path: Path) -> None:
    # By instant time, a write pending before a completed one would fall into a range read
    # later: version 6 holds the end back (version 9: test_incremental_order.py).
    history = make_history(tmp_path, table_type, VERSION_6)
    client = WriteClient(history.table(), on_step=_crash_when_validating)
    with pytest.raises(RuntimeError):
        client.upsert(records([1], 9, 7000.0))
    table = history.table()
    pending = table.timeline.pending()[0].timestamp
    WriteClient(table).upsert(records([2], 9, 8000.0))  # completes after the pending one
    table = table.reload()
    assert resolve_range(table, history.delete).end == history.late
    with pytest.raises(ReadOptionError, match=f"write {pending} .* is still"):
        resolve_range(table, history.delete, table.timeline.last_completed().timestamp)
    with pytest.raises(ReadOptionError, match="first pending write"):
        check_time_travel(table, table.timeline.last_completed().timestamp)
    assert check_time_travel(table, history.late) == history.late


def test_a_damaged_archive_is_an_error_unless_the_full_scan_fallback_is_on(
    tmp_path: Path,
) -> None:
    # A range that starts among archived instants reads the archived timeline (issue 28;
    # tests/services/test_archival.py reads real archives): a damaged archive file is an
    # error naming it, never instants silently left out. (Version 6's archive layout.)
    history = make_history(tmp_path, "MERGE_ON_READ", VERSION_6)
    table = history.table()
    archive = Path(history.path) / ".hoodie" / "archived"
    archive.mkdir(exist_ok=True)
    (archive / ".commits_.archive.1_1-0-1").write_bytes(b"archived instants")
    with pytest.raises(CorruptTableError, match=r"commits_\.archive\.1_1-0-1 is damaged.*"
                       r"fulltablescan\.enable=true"):
        read_incremental(table, "20000101000000000")
    full = read_incremental(table, "20000101000000000", full_scan_fallback=True)
    assert full.num_rows == 22


def test_tables_without_meta_fields_are_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "plain")
    create_table(path, "plain", SCHEMA, "uuid", "city", "ts", "COPY_ON_WRITE",
                 options={"hoodie.populate.meta.fields": "false"})
    with pytest.raises(ReadOptionError, match=r"populate\.meta\.fields=false"):
        read_incremental(HudiTable.open(path), "earliest")


def _crash_when_validating(event: str, _: str) -> None:
    if event == "validating":
        raise RuntimeError("injected crash")
