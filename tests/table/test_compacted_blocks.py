"""Readers honour log-compacted blocks as Hudi's optimized scan does (RFC-48).

A compacted block stands in the slot of the newest block it replaced (transitively), so a
block a writer appended while the log compaction ran still wins over it; blocks of a
pending or failed log compaction are never read. Hand-built real slices (``SliceTable``).
"""

from __future__ import annotations

from pathlib import Path

from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Action
from tests.table.test_merge import BASE, SliceTable

T1, T2, T3, T4, T5, T6 = (f"2024010100000{i}000" for i in range(1, 7))


def _table(tmp_path: Path, **props: object) -> SliceTable:
    t = SliceTable(tmp_path / "t", **props)
    t.instant(BASE)
    t.write_base([("a", 5, "base-a"), ("b", 5, "base-b")])
    return t


def _vals(t: SliceTable) -> dict[str, str]:
    return {k: v[1] for k, v in t.values().items()}


def test_writer_block_appended_during_log_compaction_wins_over_it(tmp_path: Path) -> None:
    # Scenario 1: T1, T2 planned; a writer's T4 lands before the compacted block T3.
    t = _table(tmp_path)
    t.instant(T1)
    t.instant(T2)
    t.write_log(t.data(T1, [("a", 5, "t1-a")]))
    t.write_log(t.data(T2, [("b", 5, "t2-b")]))
    t.instant(T3, state="requested", action=Action.LOGCOMPACTION)
    t.instant(T4)
    t.write_log(t.data(T4, [("a", 5, "w-a")]))
    t.write_log(t.data(T3, [("a", 5, "t1-a"), ("b", 5, "t2-b")],
                       COMPACTED_BLOCK_TIMES=f"{T2},{T1}"))
    before = _vals(t)
    assert before == {"a": "w-a", "b": "t2-b"}
    instant = t.timeline.reload().get(T3)
    assert instant is not None
    t.timeline.complete(t.timeline.transition_to_inflight(instant),
                        CommitMetadata(operation_type="LOG_COMPACT").to_json())
    table, report = t.merge()
    # The equal ordering value ties: the later merge slot wins, and that is the writer's.
    assert {r["id"]: r["val"] for r in table.to_pylist()} == before
    assert [b.instant_time for b in report.merged] == [T3, T4]
    assert {b.instant_time for b in report.replaced} == {T1, T2}


def test_commit_time_ordering_keeps_the_concurrent_write(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"})
    t.instant(T1)
    t.write_log(t.data(T1, [("a", 9, "t1-a")]))
    t.instant(T2)
    t.write_log(t.data(T2, [("a", 1, "w-a")]))  # a concurrent writer, after the plan
    t.instant(T3, action=Action.LOGCOMPACTION)
    t.write_log(t.data(T3, [("a", 9, "t1-a")], COMPACTED_BLOCK_TIMES=T1))
    assert _vals(t) == {"a": "w-a", "b": "base-b"}


def test_nested_compaction_takes_the_slot_of_the_innermost_newest_block(
    tmp_path: Path,
) -> None:
    t = _table(tmp_path)
    for ts in (T1, T2, T4):
        t.instant(ts)
    t.instant(T3, action=Action.LOGCOMPACTION)
    t.instant(T5, action=Action.LOGCOMPACTION)
    t.write_log(t.data(T1, [("a", 5, "t1-a")]))
    t.write_log(t.data(T2, [("b", 5, "t2-b")]))
    t.write_log(t.data(T4, [("a", 5, "w-a"), ("b", 5, "w-b")]))
    t.write_log(t.data(T3, [("a", 5, "t1-a"), ("b", 5, "t2-b")],
                       COMPACTED_BLOCK_TIMES=f"{T2},{T1}"))
    # T5 compacts T3 only: it stands where T3 stood (T2's slot), still before T4.
    t.write_log(t.data(T5, [("a", 5, "t1-a"), ("b", 5, "t2-b")], COMPACTED_BLOCK_TIMES=T3))
    table, report = t.merge()
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {"a": "w-a", "b": "w-b"}
    assert [b.instant_time for b in report.merged] == [T5, T4]
    assert {b.instant_time for b in report.replaced} == {T1, T2, T3}


def test_nested_compaction_over_the_writer_block_takes_its_slot(tmp_path: Path) -> None:
    t = _table(tmp_path)
    for ts in (T1, T2, T4, T6):
        t.instant(ts)
    t.instant(T3, action=Action.LOGCOMPACTION)
    t.instant(T5, action=Action.LOGCOMPACTION)
    t.write_log(t.data(T1, [("a", 5, "t1-a")]))
    t.write_log(t.data(T4, [("a", 5, "w-a")]))
    t.write_log(t.data(T3, [("a", 5, "t1-a")], COMPACTED_BLOCK_TIMES=T1))
    t.write_log(t.data(T5, [("a", 5, "w-a")], COMPACTED_BLOCK_TIMES=f"{T4},{T3}"))
    t.write_log(t.data(T6, [("b", 5, "t6-b")]))
    table, report = t.merge()
    assert {r["id"]: r["val"] for r in table.to_pylist()} == {"a": "w-a", "b": "t6-b"}
    assert [b.instant_time for b in report.merged] == [T5, T6]


def test_pending_and_failed_log_compaction_blocks_are_never_read(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.instant(T1)
    t.instant(T2)
    t.write_log(t.data(T1, [("a", 6, "t1-a")]))
    t.write_log(t.data(T2, [("b", 6, "t2-b")]))
    # A pending log compaction wrote a wrong block (it lost b): not read while pending.
    t.instant(T3, state="inflight", action=Action.LOGCOMPACTION)
    t.write_log(t.data(T3, [("a", 6, "t1-a")], COMPACTED_BLOCK_TIMES=f"{T2},{T1}"))
    assert _vals(t) == {"a": "t1-a", "b": "t2-b"}
    _, report = t.merge()
    assert [b.instant_time for b in report.invisible] == [T3]
    # Rolled back (failed): still never read, and the originals stay valid.
    t.rollback(T4, T3)
    assert _vals(t) == {"a": "t1-a", "b": "t2-b"}
    _, report = t.merge()
    assert {b.instant_time for b in report.replaced} == set()


def test_compacted_block_without_its_originals_is_read_in_its_own_place(
    tmp_path: Path,
) -> None:
    t = _table(tmp_path)
    t.instant(T1, action=Action.LOGCOMPACTION)
    t.instant(T2)
    t.write_log(t.data(T1, [("a", 5, "c-a")], COMPACTED_BLOCK_TIMES=BASE[:-1] + "1"))
    t.write_log(t.data(T2, [("a", 5, "t2-a")]))
    assert _vals(t) == {"a": "t2-a", "b": "base-b"}
