"""SHOW TIMELINE and the CALL procedures, on Apache Hudi's tables and on tables hudisql wrote."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from hudisql.errors import HudiSqlError, SqlParseError
from hudisql.session import HudiSession
from hudisql.sql.timeline import TIMELINE_COLUMNS, timeline_rows
from hudisql.table import HudiTable
from hudisql.txn.writer import WriteClient, create_table
from tests.fixtures import TABLE_ZIPS, copy_table, table_path

# The timeline's file names, parsed here independently of the table core.
_FILE = re.compile(r"^(\d+)(?:_(\d+))?\.([a-z]+)(?:\.(requested|inflight))?$")
_COMPLETED_AS = {"compaction": "commit", "logcompaction": "deltacommit"}


def listed_instants(base: Path) -> dict[str, tuple[str, str]]:
    """instant time -> (action, state) from the timeline folder's file names."""
    folder = base / ".hoodie" / "timeline"
    folder = folder if folder.is_dir() else base / ".hoodie"
    states: dict[str, dict[str, str]] = {}
    for path in folder.iterdir():
        match = _FILE.match(path.name)
        if not match:
            continue
        ts, _, action, suffix = match.groups()
        if action == "inflight":  # layout 1: a plain commit goes inflight as <ts>.inflight
            action, suffix = "commit", "inflight"
        state = {"requested": "REQUESTED", "inflight": "INFLIGHT", None: "COMPLETED"}[suffix]
        states.setdefault(ts, {})[state] = action
    out = {}
    for ts, by_state in states.items():
        for state in ("COMPLETED", "INFLIGHT", "REQUESTED"):
            if state in by_state:
                out[ts] = (by_state[state], state)
                break
    return out


@pytest.mark.parametrize("name", sorted(TABLE_ZIPS))
def test_every_instant_of_every_fixture_table(name: str) -> None:
    base = table_path(name)
    rows = timeline_rows(HudiTable.open(str(base)))
    expected = listed_instants(base)
    assert expected
    assert [r.instant_time for r in rows] == sorted(expected, reverse=True)
    for row in rows:
        action, state = expected[row.instant_time]
        assert (row.action, row.state) == (action, state), row.instant_time
        assert row.timeline_type == "ACTIVE"
        assert row.requested_time is not None
        if row.state == "COMPLETED" and row.action in ("commit", "deltacommit"):
            assert row.operation and row.records_written is not None
            assert row.files_written and row.files_written > 0
            assert row.bytes_written and row.bytes_written > 0
            assert row.completed_time is not None and row.duration_ms is not None


def test_v8_completed_time_is_the_completion_time_of_the_file_name() -> None:
    rows = timeline_rows(HudiTable.open(str(table_path("v8_nonpartitioned"))))
    newest = rows[0]
    assert newest.instant_time == "20250713010536861"
    assert newest.completed_time is not None
    assert newest.completed_time.strftime("%Y%m%d%H%M%S%f")[:17] == "20250713010537206"
    assert newest.duration_ms == 345


def test_rollback_info_links_a_rollback_and_its_target() -> None:
    rows = timeline_rows(HudiTable.open(str(table_path("v6_nonpartitioned_rollback"))))
    by_time = {r.instant_time: r for r in rows}
    rollback = by_time["20250126040936578"]
    assert rollback.action == "rollback"
    # Apache Hudi rolled back a failed deltacommit and removed its instant files.
    assert rollback.rollback_info == "rolls back 20250126040826878"
    assert "20250126040826878" not in by_time
    assert by_time["20250126040823628"].rollback_info is None


def test_counts_of_a_written_table(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int32()), ("v", pa.string())])
    table = create_table(tmp_path / "t", "t", schema, "id", table_type="MERGE_ON_READ")
    client = WriteClient(table)
    client.insert(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"]}))
    client.delete(["2", "3"])
    rows = timeline_rows(HudiTable.open(str(tmp_path / "t")))
    assert [(r.operation, r.records_written, r.records_deleted) for r in rows] == [
        ("DELETE", 0, 2), ("INSERT", 3, 0)]
    assert len(timeline_rows(HudiTable.open(str(tmp_path / "t")), limit=1)) == 1


class Crash(Exception):
    """Injected failure."""


def _crash_on_file(event: str, detail: str) -> None:
    if event == "file":
        raise Crash(detail)


@pytest.mark.spark
def test_show_timeline_show_commits_and_rollback_to_instant(
    session: HudiSession, tmp_path: Path
) -> None:
    schema = pa.schema([("id", pa.int32()), ("v", pa.string())])
    path = tmp_path / "written"
    client = WriteClient(create_table(path, "written", schema, "id", table_type="COPY_ON_WRITE"))
    client.insert(pa.table({"id": pa.array([1], pa.int32()), "v": ["a"]}))
    client.on_step = _crash_on_file
    with pytest.raises(Crash):
        client.upsert(pa.table({"id": pa.array([1], pa.int32()), "v": ["b"]}))
    session.sql(f"CREATE TABLE tl_written USING hudi LOCATION '{path}'")

    frame = session.sql("SHOW TIMELINE ON tl_written")
    assert frame.columns == [c for c, _ in TIMELINE_COLUMNS]
    shown = [(r.action, r.state, r.operation) for r in frame.collect()]
    assert shown == [("commit", "INFLIGHT", None), ("commit", "COMPLETED", "INSERT")]
    pending = frame.collect()[0].instant_time
    assert session.sql(f"SHOW TIMELINE '{path}' LIMIT 1").count() == 1
    assert session.sql("CALL show_timeline(table => 'tl_written', limit => 5)").count() == 2
    commits = session.sql("CALL show_commits(table => 'tl_written')").collect()
    assert [(r.operation, r.total_records_written) for r in commits] == [("INSERT", 1)]

    result = session.sql(
        f"CALL rollback_to_instant(table => 'tl_written', instant_time => '{pending}')").collect()
    assert result[0].rollback_result is True
    after = session.sql("SHOW TIMELINE tl_written").collect()
    assert [(r.action, r.state) for r in after] == [("rollback", "COMPLETED"),
                                                    ("commit", "COMPLETED")]
    assert after[0].rollback_info == f"rolls back {pending}"
    assert [tuple(r) for r in session.sql("SELECT id, v FROM tl_written").collect()] == [(1, "a")]
    # The latest completed commit rolls back too, as Hudi's procedure does: its rows go.
    session.sql(f"CALL rollback_to_instant(table => 'tl_written', "
                f"instant_time => '{commits[0].commit_time}')").collect()
    assert [(r.action, r.state) for r in session.sql("SHOW TIMELINE tl_written").collect()] == [
        ("rollback", "COMPLETED"), ("rollback", "COMPLETED")]
    assert session.sql("SELECT id, v FROM tl_written").count() == 0


@pytest.mark.spark
def test_show_timeline_errors(session: HudiSession, tmp_path: Path) -> None:
    with pytest.raises(SqlParseError, match="SHOW TIMELINE needs a table name or a quoted path"):
        session.sql("SHOW TIMELINE LIMIT 3")
    v8 = copy_table("v8_trips_8i1u", tmp_path)
    rows = session.sql(f"SHOW TIMELINE '{v8}'").collect()
    assert [(r.action, r.state) for r in rows] == [("deltacommit", "COMPLETED")] * 2


@pytest.mark.spark
def test_call_show_log_blocks_marks_a_retried_attempts_blocks_spurious(
    session: HudiSession, tmp_path: Path
) -> None:
    from tests.table.test_reconcile_kit import RetryTable, ts

    t = RetryTable(tmp_path / "retried", {"b0": "base"})
    instant = t.begin(ts(1))
    failed = t.write([t.data(instant, (0, 0), {"k": "first attempt"})])  # the task died after
    committed = t.write([t.data(instant, (1, 0), {"k": "retry"})])
    t.commit(instant, committed, 1)
    session.sql(f"CREATE TABLE tl_retried USING hudi LOCATION '{tmp_path / 'retried'}'")

    shown = session.sql("CALL show_log_blocks(table => 'tl_retried')").collect()
    assert [(r.log_file, r.attempt, r.sequence, r.verdict) for r in shown] == [
        (failed[0], 0, 0, "spurious"), (committed[0], 1, 0, "valid")]
    assert shown[0].reason.startswith(f"commit {instant} did not commit log file {failed[0]}")
    file_id = shown[0].file_id
    assert session.sql(f"CALL show_log_blocks(table => 'tl_retried', file_id => '{file_id}')"
                       ).count() == 2
    with pytest.raises(HudiSqlError, match="has no file group 'nope'"):
        session.sql("CALL show_log_blocks(table => 'tl_retried', file_id => 'nope')")
    assert session.sql("SELECT val FROM tl_retried WHERE id = 'k'").collect()[0].val == "retry"
