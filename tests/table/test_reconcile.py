"""Duplicate log blocks from task retries are never merged: HUDI-6758's scenarios on real files.

Each test writes a real v6 MOR table (``test_reconcile_kit.RetryTable``) and the log blocks
of the task attempts of one or more instants, then reads the file slice. Block ``k`` of
attempt ``a`` writes the keys ``k<k>`` and ``x<a>_<k>``, both with value ``a<a>``, so the
merged rows show exactly which attempts' blocks were merged. Every scenario runs under
rule (a) (the commit's record of its committed log files), rule (b) (block sequences, the
record ignored) and rule (b) reached because the commit has no record.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hudisql.errors import CorruptTableError, HudiSqlError
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.read.merge import CorruptLogBlockWarning
from hudisql.table.read.reconcile import (
    BLOCK_ATTEMPT_STAT_KEY,
    COMMITTED_LOG_FILES_KEY,
    LOG_BLOCKS_SCHEMA,
    CommittedFileGroup,
    CommittedLogFiles,
    ReconcileMode,
    committed_log_files,
    record_committed_log_files,
    show_log_blocks,
)
from hudisql.table.table import HudiTable
from tests.table.test_reconcile_kit import BASE, FILE_ID, RetryTable, cut, ts

#: rule name -> (read mode, whether commits carry rule (a)'s record)
RULES = {"a": ("full", True), "b": ("sequence", True), "b-unrecorded": ("full", False)}
BASE_ROWS = {"b0": "base", "b1": "base"}


@pytest.fixture
def t(tmp_path: Path) -> RetryTable:
    return RetryTable(tmp_path / "t", BASE_ROWS)


@pytest.fixture(params=sorted(RULES))
def rule(request: pytest.FixtureRequest) -> tuple[str, bool]:
    return RULES[str(request.param)]


def blocks(t: RetryTable, instant: str, attempt: int, n: int, ids: bool = True) -> list[bytes]:
    """Blocks 0..n-1 of ``attempt``."""
    return [
        t.data(instant, (attempt, k) if ids else None, {f"k{k}": f"a{attempt}",
                                                        f"x{attempt}_{k}": f"a{attempt}"})
        for k in range(n)
    ]


def rows_of(attempt: int, n: int) -> dict[str, str]:
    """The rows merged when exactly blocks 0..n-1 of ``attempt`` are merged over the base."""
    rows = dict(BASE_ROWS)
    for k in range(n):
        rows[f"k{k}"] = rows[f"x{attempt}_{k}"] = f"a{attempt}"
    return rows


def verdicts(t: RetryTable, mode: str) -> list[str]:
    return [v for *_, v in t.verdicts(mode)]


# -- HUDI-6758's scenarios ------------------------------------------------------------------


def test_scenario_1_one_attempt_all_valid(t: RetryTable, rule: tuple[str, bool]) -> None:
    mode, record = rule
    i = t.begin(ts(1))
    t.commit(i, t.write(blocks(t, i, 0, 2)), 0, record=record)
    assert t.values(mode) == rows_of(0, 2)
    assert [(ident, v) for _, ident, v in t.verdicts(mode)] == [
        ((0, 0), "valid"), ((0, 1), "valid")
    ]


def test_scenario_2_partial_first_attempt_is_spurious(
    t: RetryTable, rule: tuple[str, bool]
) -> None:
    mode, record = rule
    i = t.begin(ts(1))
    t.write(blocks(t, i, 0, 2))  # attempt 0 dies before its third block
    t.commit(i, t.write(blocks(t, i, 1, 3)), 1, record=record)
    assert t.values(mode) == rows_of(1, 3)
    assert verdicts(t, mode) == ["spurious"] * 2 + ["valid"] * 3


def test_scenario_3_two_complete_attempts_the_later_wins(
    t: RetryTable, rule: tuple[str, bool]
) -> None:
    mode, record = rule
    i = t.begin(ts(1))
    t.write(blocks(t, i, 0, 2))
    t.commit(i, t.write(blocks(t, i, 1, 2)), 1, record=record)
    assert t.values(mode) == rows_of(1, 2)
    assert verdicts(t, mode) == ["spurious"] * 2 + ["valid"] * 2


def test_scenario_4_complete_first_attempt_beats_a_later_partial_one(
    t: RetryTable, rule: tuple[str, bool]
) -> None:
    mode, record = rule
    i = t.begin(ts(1))
    committed = t.write(blocks(t, i, 0, 2))
    t.write(blocks(t, i, 1, 1))  # a speculative copy killed after one block
    t.commit(i, committed, 0, record=record)
    assert t.values(mode) == rows_of(0, 2)
    assert verdicts(t, mode) == ["valid"] * 2 + ["spurious"]


def test_scenario_4_without_reconciliation_applies_the_duplicate(t: RetryTable) -> None:
    # The control: a reader that merges every block lets the killed copy's block win.
    i = t.begin(ts(1))
    committed = t.write(blocks(t, i, 0, 2))
    t.write(blocks(t, i, 1, 1))
    t.commit(i, committed, 0)
    merged = t.values("off")
    assert merged["k0"] == "a1" and "x1_0" in merged
    assert merged != rows_of(0, 2)


@pytest.mark.filterwarnings("ignore::hudisql.table.read.merge.CorruptLogBlockWarning")
def test_corrupt_block_scenario_same_log_file(t: RetryTable, rule: tuple[str, bool]) -> None:
    # HUDI-6758's "scenario 3 with hdfs": attempt 0's second block is torn, attempt 1 appends
    # its first block to the same log file and its second to the next one.
    mode, record = rule
    i = t.begin(ts(1))
    a0 = blocks(t, i, 0, 2)
    a1 = blocks(t, i, 1, 2)
    shared = t.write_raw(a0[0] + cut(a0[1]) + a1[0])
    second = t.write([a1[1]])
    t.commit(i, [shared, *second], 1, record=record)
    with pytest.warns(CorruptLogBlockWarning, match="trailing length"):
        assert t.values(mode) == rows_of(1, 2)
    assert t.verdicts(mode) == [
        (shared, (0, 0), "spurious"),
        (shared, None, "corrupt"),
        (shared, (1, 0), "valid"),
        (second[0], (1, 1), "valid"),
    ]


@pytest.mark.filterwarnings("ignore::hudisql.table.read.merge.CorruptLogBlockWarning")
def test_torn_tail_never_counts_toward_a_sequence(t: RetryTable, rule: tuple[str, bool]) -> None:
    mode, record = rule
    i = t.begin(ts(1))
    committed = t.write(blocks(t, i, 0, 2))
    b1 = blocks(t, i, 1, 3)
    t.write(b1[:1], tail=cut(b1[1]))  # the copy died writing its block 1
    t.commit(i, committed, 0, record=record)
    with pytest.warns(CorruptLogBlockWarning, match="cut short"):
        assert t.values(mode) == rows_of(0, 2)
    assert verdicts(t, mode) == ["valid", "valid", "spurious", "corrupt"]


def test_stage_retry_restarts_attempt_numbers(t: RetryTable, rule: tuple[str, bool]) -> None:
    # A stage retry numbers its task attempts from 0 again: two runs of attempt 0.
    mode, record = rule
    i = t.begin(ts(1))
    t.write([t.data(i, (0, k), {f"k{k}": "stale", f"y{k}": "stale"}) for k in range(2)])
    committed = t.write(blocks(t, i, 0, 3))
    t.commit(i, committed, 0, record=record)
    assert t.values(mode) == rows_of(0, 3)
    assert verdicts(t, mode) == ["spurious"] * 2 + ["valid"] * 3


def test_blocks_of_later_instants_are_reconciled_separately(
    t: RetryTable, rule: tuple[str, bool]
) -> None:
    mode, record = rule
    i1, i2 = t.begin(ts(1)), ts(2)
    t.commit(i1, t.write(blocks(t, i1, 0, 2)), 0, record=record)
    t.begin(i2)
    t.write([t.data(i2, (0, 0), {"k0": "i2a0"})])
    t.commit(i2, t.write([t.data(i2, (1, 0), {"k0": "i2a1"})]), 1, record=record)
    assert t.values(mode) == {**rows_of(0, 2), "k0": "i2a1"}
    assert verdicts(t, mode) == ["valid", "valid", "spurious", "valid"]


def test_delete_blocks_are_reconciled_like_data_blocks(
    t: RetryTable, rule: tuple[str, bool]
) -> None:
    mode, record = rule
    i = t.begin(ts(1))
    t.write([t.data(i, (0, 0), {"n": "a0"}), t.delete(i, (0, 1), ["b0"])])
    committed = t.write([t.data(i, (1, 0), {"n": "a1"}), t.delete(i, (1, 1), ["b1"])])
    t.commit(i, committed, 1, record=record)
    assert t.values(mode) == {"b0": "base", "n": "a1"}


# -- old tables: no block identifiers --------------------------------------------------------


@pytest.mark.parametrize("mode", ["full", "sequence"])
def test_blocks_without_identifier_are_all_valid(t: RetryTable, mode: str) -> None:
    i = t.begin(ts(1))
    t.write(blocks(t, i, 0, 2, ids=False))
    committed = t.write(blocks(t, i, 1, 2, ids=False))
    t.commit(i, committed, record=False)
    # Nothing tells the attempts apart: both are merged, as every reader before did.
    assert t.values(mode) == {**rows_of(0, 2), **rows_of(1, 2)}
    _, report = t.merge(mode)
    assert {v.verdict for v in report.verdicts} == {"valid"}
    assert all("no BLOCK_IDENTIFIER" in v.reason for v in report.verdicts)


def test_rule_a_needs_no_identifiers(t: RetryTable) -> None:
    i = t.begin(ts(1))
    t.write(blocks(t, i, 0, 2, ids=False))
    committed = t.write(blocks(t, i, 1, 2, ids=False))
    t.commit(i, committed)
    assert t.values("full") == rows_of(1, 2)
    assert verdicts(t, "full") == ["spurious"] * 2 + ["valid"] * 2


def test_identified_and_unidentified_blocks_of_one_instant(t: RetryTable) -> None:
    i = t.begin(ts(1))
    t.write([t.data(i, None, {"old": "v"})])
    t.write(blocks(t, i, 0, 1))
    t.commit(i, t.write(blocks(t, i, 1, 2)), 1, record=False)
    assert t.values("sequence") == {**rows_of(1, 2), "old": "v"}
    assert verdicts(t, "sequence") == ["valid", "spurious", "valid", "valid"]


# -- what only rule (a) gets right -------------------------------------------------------


def test_only_a_two_complete_attempts_the_earlier_committed(t: RetryTable) -> None:
    # Speculation: attempt 0 finished first and was committed; its copy finished too, with
    # different data (a non-deterministic input). Equal sequences: rule (b) takes the later.
    i = t.begin(ts(1))
    committed = t.write(blocks(t, i, 0, 2))
    t.write(blocks(t, i, 1, 2))
    t.commit(i, committed, 0)
    assert t.values("full") == rows_of(0, 2)
    assert t.values("sequence") == rows_of(1, 2)  # rule (b)'s documented limit


def test_only_a_interleaved_speculative_attempts(t: RetryTable) -> None:
    i = t.begin(ts(1))
    files0, _ = t.interleave(blocks(t, i, 0, 2), blocks(t, i, 1, 2))
    t.commit(i, files0, 0)
    assert t.values("full") == rows_of(0, 2)
    assert verdicts(t, "full") == ["valid", "spurious", "valid", "spurious"]
    assert t.values("sequence") == rows_of(1, 2)  # ties go to the later-started copy


def test_only_a_failed_attempt_wrote_a_file_group_the_committed_one_did_not(
    t: RetryTable,
) -> None:
    # The retry routed its records elsewhere: this file group holds only the failed blocks.
    i = t.begin(ts(1))
    t.write(blocks(t, i, 0, 2))
    elsewhere = "99999999-0000-0000-0000-000000000000-0"
    t.commit(i, [f".{elsewhere}_{i}.log.1_0-1-99"], 1, file_id=elsewhere)
    assert t.values("full") == BASE_ROWS
    _, report = t.merge("full")
    assert all("committed no log files of file group" in v.reason for v in report.verdicts)
    assert t.values("sequence") == rows_of(0, 2)


def test_only_a_committed_attempt_wrote_fewer_blocks(t: RetryTable) -> None:
    i = t.begin(ts(1))
    t.write(blocks(t, i, 0, 3))  # wrote everything, then lost its executor
    t.commit(i, t.write(blocks(t, i, 1, 2)), 1)  # its retry read less input
    assert t.values("full") == rows_of(1, 2)
    assert t.values("sequence") == rows_of(0, 3)


def test_rule_a_checks_the_attempt_within_a_named_file(t: RetryTable) -> None:
    i = t.begin(ts(1))
    a0, a1 = blocks(t, i, 0, 1), blocks(t, i, 1, 1)
    shared = t.write_raw(a0[0] + a1[0])
    t.commit(i, [shared], 1)
    assert t.values("full") == rows_of(1, 1)
    _, report = t.merge("full")
    assert "attempt 0 wrote this block; commit" in report.verdicts[0].reason


# -- other verdicts ----------------------------------------------------------------------


def test_rolled_back_and_pending_instants_get_their_verdicts(t: RetryTable) -> None:
    i1, i2, i3 = t.begin(ts(1)), t.begin(ts(2)), ts(3)
    t.write(blocks(t, i1, 0, 1))
    t.write(blocks(t, i1, 1, 1))
    t.rollback(ts(4), i1)
    t.write(blocks(t, i2, 0, 1))  # i2 stays inflight
    t.begin(i3)
    t.commit(i3, t.write(blocks(t, i3, 0, 1)), 0)
    _, report = t.merge("full")
    got = [(v.block.instant_time, str(v.verdict)) for v in report.verdicts]
    assert got == [
        (i1, "rolled_back"), (i1, "rolled_back"), (ts(4), "valid"), (i2, "not_visible"),
        (i3, "valid"),
    ]
    assert "not completed" in report.verdicts[3].reason
    assert report.merged == [report.verdicts[4].block]
    assert len(report.rolled_back) == 2 and len(report.commands) == 1


def test_rollback_on_the_timeline_only(t: RetryTable) -> None:
    i1 = t.begin(ts(1))
    t.commit(i1, t.write(blocks(t, i1, 0, 1)), 0)
    t.rollback(ts(2), i1, command_block=False)
    _, report = t.merge("full")
    assert [str(v.verdict) for v in report.verdicts] == ["rolled_back"]
    assert "completed rollback on the timeline" in report.verdicts[0].reason


def test_as_of_before_an_instant(t: RetryTable) -> None:
    i1 = t.begin(ts(1))
    t.commit(i1, t.write(blocks(t, i1, 0, 1)), 0)
    _, report = t.merge("full", as_of=BASE)
    assert [str(v.verdict) for v in report.verdicts] == ["not_visible"]
    assert f"after as_of {BASE}" in report.verdicts[0].reason
    assert t.values("full", as_of=BASE) == BASE_ROWS


def test_a_spurious_log_compaction_block_replaces_nothing(
    t: RetryTable, rule: tuple[str, bool]
) -> None:
    # A log compaction's failed attempt compacted i1 and i2 (but wrong: it lost k1); its
    # retry compacted i1 only. Only the committed attempt's block stands in for others.
    mode, record = rule
    i1, i2, lc = t.begin(ts(1)), ts(2), ts(3)
    t.commit(i1, t.write([t.data(i1, (0, 0), {"k0": "i1"})]), 0, record=record)
    t.begin(i2)
    t.commit(i2, t.write([t.data(i2, (0, 0), {"k1": "i2"})]), 0, record=record)
    t.begin(lc)
    t.write([t.data(lc, (0, 0), {"k0": "lc-a0"}, compacts=[i1, i2])])
    t.write([t.data(lc, (0, 1), {"x": "lc-a0"})])
    t.write([t.data(lc, (1, 0), {"k0": "lc-a1"}, compacts=[i1])])  # died before block 1
    committed = t.write([t.data(lc, (2, 0), {"k0": "lc-a2"}, compacts=[i1]),
                         t.data(lc, (2, 1), {"y": "lc-a2"})])
    t.commit(lc, committed, 2, record=record)
    assert t.values(mode) == {**BASE_ROWS, "k0": "lc-a2", "k1": "i2", "y": "lc-a2"}
    assert verdicts(t, mode) == [
        "replaced", "valid", "spurious", "spurious", "spurious", "valid", "valid"
    ]


# -- the record --------------------------------------------------------------------------


def _stat(file_id: str, path: str | None, logs: list[str], attempt: int | None) -> WriteStat:
    extra = {} if attempt is None else {BLOCK_ATTEMPT_STAT_KEY: attempt}
    return WriteStat(file_id=file_id, path=path, log_files=logs, extra=extra)


def test_record_from_write_stats_round_trips_through_commit_metadata() -> None:
    log1 = f"p/.{FILE_ID}_{BASE}.log.3_1-2-7"
    log2 = f".{FILE_ID}_{BASE}.log.4_1-2-7"
    other = "f2e0c1d2-0000-0000-0000-000000000000-0"
    meta = CommitMetadata(extra_metadata={"schema": "{}"})
    meta.add_write_stat(_stat(FILE_ID, log1, [], 2))
    meta.add_write_stat(_stat(FILE_ID, log2, [log2], None))  # rollover: a second stat
    meta.add_write_stat(_stat(other, f"p/{other}_0-1-1_{BASE}.parquet", [], None))  # base file
    record = record_committed_log_files(meta)
    assert record.file_groups == {
        FILE_ID: CommittedFileGroup(frozenset({log1.split("/")[-1], log2}), 2)
    }
    parsed = CommitMetadata.parse(meta.to_json())
    assert CommittedLogFiles.of_metadata(parsed, "x") == record
    assert parsed.extra_metadata["schema"] == "{}"


def test_record_refuses_stats_of_two_attempts() -> None:
    meta = CommitMetadata()
    meta.add_write_stat(_stat(FILE_ID, f".{FILE_ID}_{BASE}.log.1_0-1-1", [], 0))
    meta.add_write_stat(_stat(FILE_ID, f".{FILE_ID}_{BASE}.log.2_0-1-2", [], 1))
    with pytest.raises(HudiSqlError, match="attempts 0 and 1"):
        record_committed_log_files(meta)
    assert COMMITTED_LOG_FILES_KEY not in meta.extra_metadata


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"f-0": {"attempt": 1}}', "no list of logFiles"),
        ('{"f-0": {"logFiles": ["a"], "attempt": -1}}', "attempt -1"),
        ('{"f-0": ["a"]}', "no list of logFiles"),
    ],
)
def test_malformed_record_is_a_clear_error(text: str, what: str) -> None:
    with pytest.raises(CorruptTableError, match=what) as info:
        CommittedLogFiles.parse(text, "20240101000000001")
    assert "commit 20240101000000001" in str(info.value)
    assert "reconcile='sequence'" in str(info.value)


@pytest.mark.parametrize("value", ["{", {"f-0": {"logFiles": []}}, 7])
def test_reading_with_a_malformed_record(t: RetryTable, value: object) -> None:
    i = t.begin(ts(1))
    committed = t.write(blocks(t, i, 0, 1))
    meta = CommitMetadata(extra_metadata={"schema": t.avro_text})
    meta.add_write_stat(WriteStat(file_id=FILE_ID, path=committed[0], log_files=committed))
    content = json.loads(meta.to_json())
    content["extraMetadata"][COMMITTED_LOG_FILES_KEY] = value  # not a JSON text of the record
    inflight = t.timeline.get(i)
    assert inflight is not None
    t.timeline.complete(inflight, json.dumps(content).encode())
    before = sorted(s.path for s in t.storage.list_recursive("") if not s.is_dir)
    with pytest.raises(CorruptTableError, match=f"commit {i}: extraMetadata"):
        t.merge("full")
    assert sorted(s.path for s in t.storage.list_recursive("") if not s.is_dir) == before
    assert t.values("sequence") == rows_of(0, 1)


def test_unknown_mode_is_refused(t: RetryTable) -> None:
    with pytest.raises(HudiSqlError, match=r"'sometimes'.*'full'"):
        t.merge("sometimes")
    assert ReconcileMode.of(" Sequence ") is ReconcileMode.SEQUENCE


# -- inspection and the table read -------------------------------------------------------


def test_show_log_blocks_lists_every_block_with_its_verdict(t: RetryTable) -> None:
    i1, i2 = t.begin(ts(1)), t.begin(ts(2))
    committed = t.write(blocks(t, i1, 0, 2))
    spurious = t.write(blocks(t, i1, 1, 1))
    t.commit(i1, committed, 0)
    pending = t.write([t.data(i2, (0, 0), {"p": "v"})])
    table = HudiTable.open(t.storage.base_uri)
    shown = show_log_blocks(table)
    assert shown.schema == LOG_BLOCKS_SCHEMA
    rows = shown.to_pylist()
    assert [(r["log_file"], r["instant_time"], r["attempt"], r["sequence"], r["verdict"])
            for r in rows] == [
        (committed[0], i1, 0, 0, "valid"),
        (committed[1], i1, 0, 1, "valid"),
        (spurious[0], i1, 1, 0, "spurious"),
        (pending[0], i2, 0, 0, "not_visible"),
    ]
    assert {(r["partition_path"], r["file_id"], r["block_type"]) for r in rows} == {
        ("", FILE_ID, "AVRO_DATA")
    }
    assert all(r["position"] == 0 for r in rows)  # one block per file
    assert rows[2]["reason"].startswith(f"commit {i1} did not commit log file {spurious[0]}")
    by_sequence = show_log_blocks(table, mode="sequence").column("reason").to_pylist()
    assert by_sequence[2].startswith(f"attempt 1 wrote sequence 0..0 of instant {i1}")
    assert show_log_blocks(table, file_id=FILE_ID).equals(shown)
    # The table read merges the committed attempt only.
    assert {r["id"]: r["val"] for r in table.read().to_pylist()} == rows_of(0, 2)


def test_show_log_blocks_of_an_unknown_file_group(t: RetryTable) -> None:
    table = HudiTable.open(t.storage.base_uri)
    with pytest.raises(HudiSqlError, match="table t has no file group 'nope'"):
        show_log_blocks(table, file_id="nope")
    assert show_log_blocks(table).num_rows == 0  # a base file, no logs


def test_show_log_blocks_on_tables_written_by_hudi(fixture_table: Path) -> None:
    table = HudiTable.open(fixture_table)
    shown = show_log_blocks(table).to_pylist()
    blocks_in_logs = sum(
        len(scan_log_file(table.storage, log.path))
        for s in table.file_slices() for log in s.log_files
    )
    assert len(shown) == blocks_in_logs
    # Hudi's blocks carry no identifier: nothing is spurious, attempts are unknown.
    assert all(r["attempt"] is None and r["verdict"] != "spurious" for r in shown)


def test_record_lookup_sees_an_instant_completed_through_the_same_timeline(
    t: RetryTable,
) -> None:
    i = t.begin(ts(1))
    committed = t.write(blocks(t, i, 0, 1))
    assert committed_log_files(t.timeline, i) is None  # still inflight
    t.commit(i, committed, 0)
    record = committed_log_files(t.timeline, i)
    assert record is not None
    assert record.file_groups == {FILE_ID: CommittedFileGroup(frozenset(committed), 0)}
    assert committed_log_files(t.timeline, ts(9)) is None  # not on the timeline
