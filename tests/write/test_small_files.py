"""Small-file handling of Spark writes: inserts fill small file groups before new ones."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hudisql.errors import WriteError
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.format.fsview import FileSlice
from hudisql.table.write.small_files import (
    MAX_FILE_SIZE,
    RECORD_SIZE_ESTIMATE,
    SMALL_FILE_LIMIT,
    SmallFileSettings,
    average_record_size,
)
from hudisql.write.pipeline import FAULT_AFTER_FILES, MAX_RECORDS_PER_FILE
from tests.write.test_write_faults import run_child
from tests.write.trips import Row, crash_when_written, frame, rs_rows, spark_rows

pytestmark = pytest.mark.spark


def _rows(n: int, start: int = 0, ts: int = 1, city: str = "sf") -> list[Row]:
    return [(f"k{i:04d}", ts, f"rider-{i}", float(i), city) for i in range(start, start + n)]


def _slices(handle: HudiTableHandle) -> dict[str, FileSlice]:
    return {s.file_id: s for s in handle.core().file_slices()}


def _last_stats(handle: HudiTableHandle) -> list[dict[str, Any]]:
    timeline = handle.core().timeline
    last = timeline.last_completed()
    assert last is not None
    return [s.to_dict() for s in timeline.commit_metadata(last).write_stats()]


def _expected(*batches: list[Row]) -> list[Row]:
    merged: dict[str, Row] = {}
    for batch in batches:
        for row in batch:
            merged[row[0]] = row
    return sorted(merged.values())


def test_copy_on_write_inserts_fill_the_small_file(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("COPY_ON_WRITE", partitioned=False)
    first = _rows(4)
    handle.insert(frame(hudi_session, first))
    (group,) = _slices(handle)
    upsert = [("k0001", 2, "rider-x", 99.0, "sf"), *_rows(3, start=10)]
    handle.upsert(frame(hudi_session, upsert))
    slices = _slices(handle)
    assert list(slices) == [group], "the inserts went to the small file group, no new group"
    (stat,) = _last_stats(handle)
    assert (stat["numInserts"], stat["numUpdateWrites"], stat["numWrites"]) == (3, 1, 7)
    expected = _expected(first, upsert)
    assert spark_rows(handle) == expected
    assert rs_rows(handle) == expected


def test_merge_on_read_rewrites_a_small_base_file_that_takes_inserts(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("MERGE_ON_READ", partitioned=False)
    first = _rows(4)
    handle.insert(frame(hudi_session, first))
    (group,) = _slices(handle)
    upsert = [("k0002", 2, "rider-y", 98.0, "sf"), *_rows(2, start=20)]
    result = handle.upsert(frame(hudi_session, upsert))
    assert result.action == "deltacommit"
    (file_slice,) = _slices(handle).values()
    assert file_slice.file_id == group
    assert file_slice.base_instant == result.instant_time, "a new base file, in this commit"
    assert not file_slice.log_files
    (stat,) = _last_stats(handle)
    assert (stat["numInserts"], stat["numUpdateWrites"]) == (2, 1)
    expected = _expected(first, upsert)
    assert spark_rows(handle) == expected
    assert rs_rows(handle) == expected


def test_merge_on_read_updates_alone_still_go_to_a_log_file(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("MERGE_ON_READ", partitioned=False)
    first = _rows(4)
    handle.insert(frame(hudi_session, first))
    update = [("k0000", 3, "rider-z", 1.5, "sf")]
    handle.upsert(frame(hudi_session, update))
    (file_slice,) = _slices(handle).values()
    assert len(file_slice.log_files) == 1, "no inserts: the small file is not rewritten"
    # A slice with log files takes no inserts (the simple index reads no log keys for
    # placement): they go to a new file group.
    more = _rows(2, start=30)
    handle.upsert(frame(hudi_session, more))
    slices = _slices(handle)
    assert len(slices) == 2
    assert slices[file_slice.file_id].log_files == file_slice.log_files
    expected = _expected(first, update, more)
    assert spark_rows(handle) == expected
    assert rs_rows(handle) == expected
    # The new group (B) is the partition's small file and takes all its inserts (an insert
    # sink): its keys are not looked up, the other group's (A, with a log file) are; B's
    # write task tells its updates, inserts and deletes apart.
    a = file_slice.file_id
    (b,) = [fid for fid in slices if fid != a]
    marked = "uuid string, ts long, rider string, fare double, city string, " \
             "_hoodie_is_deleted boolean"
    mixed = [("k0001", 4, "in-a", 2.0, "sf", False), ("k0030", 4, "in-b", 3.0, "sf", False),
             ("k0040", 4, "new", 4.0, "sf", False), ("k0031", 4, "gone", 0.0, "sf", True),
             ("k0099", 4, "absent", 0.0, "sf", True)]
    result = handle.upsert(hudi_session.spark.createDataFrame(mixed, marked))
    after = _slices(handle)
    assert set(after) == {a, b}
    assert len(after[a].log_files) == 2, "the update of a key in A went to a log of A"
    assert after[b].base_instant == result.instant_time and not after[b].log_files
    (stat,) = [s for s in _last_stats(handle) if s["fileId"] == b]
    assert (stat["numInserts"], stat["numUpdateWrites"], stat["numDeletes"]) == (1, 1, 1)
    expected = [r for r in _expected(first, update, more, [r[:5] for r in mixed if not r[5]])
                if r[0] != "k0031"]
    assert spark_rows(handle) == expected
    assert rs_rows(handle) == expected
    # Only a delete of a key nobody holds: nothing to write.
    handle.upsert(hudi_session.spark.createDataFrame([("k0098", 5, "x", 0.0, "sf", True)],
                                                     marked))
    assert _last_stats(handle) == []
    assert _slices(handle) == after


@pytest.mark.parametrize("table_type,rewritten", [("MERGE_ON_READ", 1),
                                                  ("COPY_ON_WRITE", 2)])
def test_candidates_per_partition(hudi_session: HudiSession,
                                  new_table: Callable[..., HudiTableHandle],
                                  table_type: str, rewritten: int) -> None:
    handle = new_table(table_type, partitioned=False)
    first = _rows(5)
    handle.bulk_insert(frame(hudi_session, first), **{MAX_RECORDS_PER_FILE: "3"})
    before = _slices(handle)
    assert len(before) == 2
    # Room for about 15 records of 1000 bytes in each small file.
    room = max(s.total_size for s in before.values()) + 15_000
    more = _rows(40, start=100)
    result = handle.upsert(frame(hudi_session, more), **{
        MAX_FILE_SIZE: str(room), RECORD_SIZE_ESTIMATE: "1000"})
    after = _slices(handle)
    taken = [fid for fid in before if after[fid].base_instant == result.instant_time]
    # Merge-on-read pads the smallest slice only (Hudi's candidates limit 1); copy-on-write
    # fills every small file; the rest of the inserts go to new groups.
    assert len(taken) == rewritten
    if table_type == "MERGE_ON_READ":
        smallest = min(before.values(), key=lambda s: s.total_size)
        assert taken == [smallest.file_id]
    assert len(after) > 2
    expected = _expected(first, more)
    assert spark_rows(handle) == expected
    assert rs_rows(handle) == expected


def test_limit_zero_turns_small_files_off(hudi_session: HudiSession,
                                          new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("COPY_ON_WRITE", partitioned=False)
    first = _rows(4)
    handle.insert(frame(hudi_session, first))
    (group,) = _slices(handle)
    more = _rows(3, start=50)
    handle.upsert(frame(hudi_session, more), **{SMALL_FILE_LIMIT: "0"})
    slices = _slices(handle)
    assert len(slices) == 2
    assert slices[group].base_instant == handle.core().timeline.completed()[0].timestamp
    assert spark_rows(handle) == _expected(first, more)


def _room_for_five(hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]
                   ) -> tuple[HudiTableHandle, list[Row], str, dict[str, str], int]:
    """A copy-on-write table of 4 rows in one small file group, and the write options that
    leave that file room for 5 records of 1000 bytes (with the file's size)."""
    handle = new_table("COPY_ON_WRITE", partitioned=False)
    first = _rows(4)
    handle.insert(frame(hudi_session, first))
    (group,) = _slices(handle)
    size = _slices(handle)[group].total_size
    return handle, first, group, {MAX_FILE_SIZE: str(size + 5000),
                                  RECORD_SIZE_ESTIMATE: "1000"}, size


def test_capacity_bounds_what_a_small_file_takes(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    # Of 200 inserts, about 5 go to the small file (by key hash); the rest make new groups.
    handle, first, group, options, size = _room_for_five(hudi_session, new_table)
    more = _rows(200, start=1000)
    handle.upsert(frame(hudi_session, more), **options)
    slices = _slices(handle)
    assert len(slices) > 1
    (stat,) = [s for s in _last_stats(handle) if s["fileId"] == group]
    assert 0 < stat["numInserts"] <= 20
    full = {MAX_FILE_SIZE: str(size)}  # no room at all: the file takes nothing
    handle.upsert(frame(hudi_session, _rows(10, start=5000)), **full)
    assert group not in {s["fileId"] for s in _last_stats(handle)}
    assert spark_rows(handle) == _expected(first, more, _rows(10, start=5000))


def test_inserts_are_counted_after_the_lookup_not_bounded_by_the_records(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    """Room for 5 records; the upsert has 4 updates and 5 new keys (one twice): 10 records
    but 5 inserts, so all go to the small file, as Hudi's partitioner places its exact
    insert count (before, the records' count was shared out and a new group made)."""
    handle, first, group, options, _ = _room_for_five(hudi_session, new_table)
    upsert = [*_rows(4, ts=2), *_rows(5, start=100), ("k0100", 3, "rider-y", 7.0, "sf")]
    handle.upsert(frame(hudi_session, upsert), **options)
    assert list(_slices(handle)) == [group], "every insert fits the small file"
    (stat,) = _last_stats(handle)
    assert (stat["numInserts"], stat["numUpdateWrites"], stat["numWrites"]) == (5, 4, 9)
    expected = _expected(first, upsert)
    assert spark_rows(handle) == expected
    assert rs_rows(handle) == expected


@pytest.mark.slow
def test_rewrite_under_task_retry_commits_once(hudi_session: HudiSession,
                                               new_table: Callable[..., HudiTableHandle]
                                               ) -> None:
    handle = new_table("MERGE_ON_READ", partitioned=True)
    first = _rows(6) + _rows(6, start=100, city="la")
    handle.insert(frame(hudi_session, first))
    # Each partition's small file takes inserts: rewritten by tasks whose first attempt
    # dies after one file (local[2,4]: Spark retries them).
    upsert = [("k0001", 5, "rider-q", 7.0, "sf"), ("k0900", 1, "rider-n", 3.0, "sf"),
              *_rows(3, start=300, city="la")]
    brief = {"path": handle.path, "master": "local[2,4]", "rows": upsert,
             "operation": "upsert", "options": {FAULT_AFTER_FILES: "1"}}
    result = run_child(brief)
    expected = _expected(first, upsert)
    assert spark_rows(handle) == expected
    assert rs_rows(handle) == expected
    timeline = handle.core().timeline
    assert timeline.last_completed().timestamp == result["instant"]  # type: ignore[union-attr]
    assert not timeline.pending()
    # Both small files were rewritten in this commit, and only the committed attempts'
    # files of this instant are left.
    assert {s.base_instant for s in handle.core().file_slices()} == {result["instant"]}
    written = {str(p.relative_to(handle.path))
               for p in Path(handle.path).rglob(f"*_{result['instant']}.parquet")}
    assert written == set(result["files"])


@pytest.mark.parametrize("option,value", [(SMALL_FILE_LIMIT, "lots"),
                                          (MAX_RECORDS_PER_FILE, "0")])
def test_bad_setting_is_refused_before_any_instant(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle],
        option: str, value: str) -> None:
    handle = new_table("MERGE_ON_READ", partitioned=False)
    handle.insert(frame(hudi_session, _rows(3)))
    before = sorted((p.relative_to(handle.path), p.read_bytes())
                    for p in Path(handle.path).rglob("*") if p.is_file())
    with pytest.raises(WriteError, match=rf"table trips: option {option}={value!r} must be"):
        handle.upsert(frame(hudi_session, _rows(2, start=9)), **{option: value})
    after = sorted((p.relative_to(handle.path), p.read_bytes())
                   for p in Path(handle.path).rglob("*") if p.is_file())
    assert after == before


def test_average_record_size_comes_from_the_newest_big_enough_commit(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("COPY_ON_WRITE", partitioned=False)
    handle.insert(frame(hudi_session, _rows(50)))
    timeline = handle.core().timeline
    stats = _last_stats(handle)
    size = sum(s["totalWriteBytes"] for s in stats)
    rows = sum(s["numWrites"] for s in stats)
    assert average_record_size(timeline, SmallFileSettings(limit=size - 1)) == size // rows
    # Commits under the limit tell nothing: the estimate stands.
    assert average_record_size(timeline, SmallFileSettings(
        limit=size, record_size_estimate=77)) == 77


def test_a_failed_rewrite_is_rolled_back_and_the_old_base_file_stays(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("MERGE_ON_READ", partitioned=False)
    first = _rows(4)
    handle.insert(frame(hudi_session, first))
    (before,) = _slices(handle).values()
    with crash_when_written(hudi_session):
        handle.upsert(frame(hudi_session, _rows(3, start=40)))
    (after,) = _slices(handle).values()
    assert after == before, "the old base file is still the latest slice"
    timeline = handle.core().timeline
    assert [i.action for i in timeline.completed()] == ["deltacommit", "rollback"]
    assert len(list(Path(handle.path).rglob("*.parquet"))) == 1, "the rewrite's file is gone"
    assert spark_rows(handle) == sorted(first)
    assert rs_rows(handle) == sorted(first)
