"""The indexer's planning rules without Spark: RFC-45 case 5 (holes in the write and
non-write timelines) and the refusal to index without a lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudisql.errors import LockError
from hudisql.services.indexer import (
    NO_BASE_INSTANT,
    Indexer,
    base_instant,
    catch_up_times,
    require_lock,
)
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.properties import TableProperties, new_table_properties
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.table import HudiTable

T = "2024010100000000"  # + one digit: instant N is T + str(N) (N < 10), 10 is "20240101000000010"


def ts(n: int) -> str:
    return f"{int(T + '0') + n:017d}"


def _timeline(root: Path) -> Timeline:
    storage = Storage(str(root))
    new_table_properties("t", "MERGE_ON_READ", ["id"]).save(storage)
    return Timeline.load(storage, TableProperties.load(storage))


def _add(timeline: Timeline, n: int, action: str, state: str) -> None:
    requested = timeline.create_requested(action, ts(n))
    if state == "R":
        return
    inflight = timeline.transition_to_inflight(requested)
    if state == "C":
        timeline.complete(inflight, CommitMetadata().to_json())


# The seed's table: DC1 DC2 DC3 CLEAN4(I) DC5 DC6 COMPACT7(R) DC8 INDEXING9(R) DC10(I).
SEED_CASE_5 = [(1, "deltacommit", "C"), (2, "deltacommit", "C"), (3, "deltacommit", "C"),
               (4, "clean", "I"), (5, "deltacommit", "C"), (6, "deltacommit", "C"),
               (7, "compaction", "R"), (8, "deltacommit", "C"), (9, "indexing", "R"),
               (10, "deltacommit", "I")]


def test_case_5_base_instant_and_catch_up_follow_the_seed(tmp_path: Path) -> None:
    timeline = _timeline(tmp_path)
    for n, action, state in SEED_CASE_5:
        _add(timeline, n, action, state)
    table = HudiTable.open(str(tmp_path))
    # No holes in the write timeline up to DC6 (COMPACT7 is pending); CLEAN4 is not a write.
    assert base_instant(table) == ts(6)
    # Caught up: the pending CLEAN4 before the base, then COMPACT7 and DC8; not DC10 (it
    # starts after the plan and logs its own updates) nor the indexing instant itself.
    assert catch_up_times(table, ts(6), ts(9)) == [ts(4), ts(7), ts(8)]


def test_case_5_with_write_holes_only(tmp_path: Path) -> None:
    timeline = _timeline(tmp_path)
    for n, state in [(1, "C"), (2, "C"), (3, "C"), (4, "C"), (5, "I"), (6, "C"), (7, "C"),
                     (8, "C")]:
        _add(timeline, n, "deltacommit", state)
    table = HudiTable.open(str(tmp_path))
    assert base_instant(table) == ts(4)
    assert catch_up_times(table, ts(4), ts(9)) == [ts(5), ts(6), ts(7), ts(8)]


def test_an_empty_timeline_builds_from_nothing(tmp_path: Path) -> None:
    _timeline(tmp_path)
    table = HudiTable.open(str(tmp_path))
    assert base_instant(table) == NO_BASE_INSTANT
    assert catch_up_times(table, NO_BASE_INSTANT, ts(1)) == []


@pytest.mark.parametrize("options", [{}, {"hoodie.write.lock.provider": " "}])
def test_the_indexer_refuses_to_run_without_a_lock(tmp_path: Path,
                                                   options: dict[str, str]) -> None:
    _timeline(tmp_path)
    before = (tmp_path / ".hoodie" / "hoodie.properties").read_bytes()
    with pytest.raises(LockError, match=r"set hoodie\.write\.lock\.provider=file") as caught:
        Indexer(str(tmp_path), options).execute()
    assert "indexing table t needs a lock" in str(caught.value)
    with pytest.raises(LockError):
        require_lock(options, "t")
    assert (tmp_path / ".hoodie" / "hoodie.properties").read_bytes() == before


def test_an_unknown_lock_provider_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LockError, match=r"unknown hoodie\.write\.lock\.provider"):
        require_lock({"hoodie.write.lock.provider": "nope"}, "t")
