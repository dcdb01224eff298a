"""Upserts and inserts the driver writes (hudisql.write.driver_write) give the table the rows
and the commits the Spark write tasks give it; only the driver's files carry its write token."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from hudisql.errors import WriteError
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.write.create import create_table
from hudisql.table.write.small_files import MAX_FILE_SIZE, RECORD_SIZE_ESTIMATE, SMALL_FILE_LIMIT
from hudisql.write import pipeline
from hudisql.write.driver_write import DRIVER_MAX_RECORDS
from hudisql.write.index_settings import BUCKET, BUCKET_NUM, INDEX_TYPE
from hudisql.write.pipeline import IS_DELETED, MAX_RECORDS_PER_FILE
from tests.write.conftest import TRIP_SCHEMA
from tests.write.trips import Row, frame, rs_rows, spark_rows

pytestmark = pytest.mark.spark

#: The Spark write tasks write every record.
SPARK_TASKS = {DRIVER_MAX_RECORDS: "0"}
#: The write token of the driver's files (task partition 0, stage 0, attempt 0).
DRIVER_TOKEN = re.compile(r"_0-0-0(_|$)")


def _driver_files(handle: HudiTableHandle) -> set[str]:
    return {p.name for p in Path(handle.path).rglob("*") if p.is_file()
            and DRIVER_TOKEN.search(p.name) and ".hoodie" not in p.parts}


def _rows(n: int, start: int = 0, ts: int = 1) -> list[Row]:
    return [(f"k{i:04d}", ts, f"rider-{i}", float(i), ("sf", "la")[i % 2])
            for i in range(start, start + n)]


def _commits(handle: HudiTableHandle) -> list[tuple[Any, ...]]:
    """Per completed commit: its action and its write stats' inserts, update writes and
    deletes, summed (where the inserts went may differ, and with it the rows a
    copy-on-write rewrite carries over: the driver places them by distinct key, the tasks
    by hash)."""
    timeline = handle.core().timeline
    out = []
    for instant in timeline.completed():
        stats = [s.to_dict() for s in timeline.commit_metadata(instant).write_stats()]
        out.append((instant.action, *(sum(int(s.get(k) or 0) for s in stats) for k in (
            "numInserts", "numUpdateWrites", "numDeletes"))))
    return out


def _writes(handle: HudiTableHandle, session: HudiSession, **options: str) -> list[Row]:
    """Writes that exercise tagging and placement; returns the rows the table should hold."""
    seed = _rows(12)
    handle.bulk_insert(frame(session, seed), **{MAX_RECORDS_PER_FILE: "4", **options})
    # Room for about 4 more records of 1000 bytes in each small file: the inserts fill the
    # small files, then new groups; two versions of k0100 (the later ts wins); k0001 is
    # deleted, k0003 updated, and a delete of an absent key does nothing.
    room = max(s.total_size for s in handle.core().file_slices()) + 4000
    sizing = {MAX_FILE_SIZE: str(room), RECORD_SIZE_ESTIMATE: "1000",
              MAX_RECORDS_PER_FILE: "6", **options}
    updates = [("k0003", 2, "new", 3.5, "la"), ("k0100", 5, "late", 1.0, "sf"),
               ("k0100", 4, "early", 2.0, "sf")]
    batch = frame(session, updates + _rows(20, start=200)).withColumn(IS_DELETED, F.lit(False))
    gone = frame(session, [("k0001", 9, "x", 0.0, "la"), ("k0999", 9, "x", 0.0, "sf")]
                 ).withColumn(IS_DELETED, F.lit(True))
    handle.upsert(batch.unionByName(gone), **sizing)
    handle.insert(frame(session, _rows(5, start=500)), **sizing)
    kept = {r[0]: r for r in seed + _rows(20, start=200) + _rows(5, start=500)}
    kept.pop("k0001")
    kept["k0003"] = updates[0]
    kept["k0100"] = updates[1]
    return sorted(kept.values())


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_driver_writes_what_the_spark_tasks_write(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle], table_type: str
) -> None:
    driver = new_table(table_type, name="driver")
    tasks = new_table(table_type, name="tasks")
    expected = _writes(driver, hudi_session)
    assert _writes(tasks, hudi_session, **SPARK_TASKS) == expected
    for handle in (driver, tasks):
        assert spark_rows(handle) == expected
        assert rs_rows(handle) == expected
    assert _commits(driver) == _commits(tasks)
    # The bulk insert is Spark's in both; the upsert and the insert are the driver's.
    assert _driver_files(driver) and not _driver_files(tasks)


def test_a_key_stored_in_two_groups_is_updated_in_both(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]
) -> None:
    # Bulk inserts keep a duplicate key: one copy in each of two file groups. The Spark
    # join tags the update with both groups, as Hudi's simple index does; so does the
    # driver (a join, not a lookup). (Small files off: the Spark writer would make the
    # smaller group an insert sink, whose keys it does not look up.)
    tables = [new_table("COPY_ON_WRITE", name=name) for name in ("driver", "tasks")]
    for handle, options in zip(tables, ({}, SPARK_TASKS), strict=True):
        for rider in ("a", "b"):  # a bulk insert looks no key up: one copy each
            handle.bulk_insert(frame(hudi_session, [("k1", 1, rider, 1.0, "sf")]))
        assert len(handle.core().file_slices()) == 2
        handle.upsert(frame(hudi_session, [("k1", 2, "new", 3.0, "sf"),
                                           ("k2", 2, "ins", 4.0, "sf")]),
                      **{SMALL_FILE_LIMIT: "0", **options})
    assert spark_rows(tables[0]) == spark_rows(tables[1]) == [
        ("k1", 2, "new", 3.0, "sf"), ("k1", 2, "new", 3.0, "sf"), ("k2", 2, "ins", 4.0, "sf")]
    assert _driver_files(tables[0])


def test_the_limit_and_a_bad_option(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]
) -> None:
    handle = new_table("MERGE_ON_READ")
    handle.upsert(frame(hudi_session, _rows(3)), **{DRIVER_MAX_RECORDS: "2"})
    assert not _driver_files(handle), "more records than the limit: the Spark tasks write"
    before = [i.timestamp for i in handle.core().timeline.instants]
    with pytest.raises(WriteError, match=rf"{DRIVER_MAX_RECORDS}='many'.*give 0"):
        handle.upsert(frame(hudi_session, _rows(3, start=10)), **{DRIVER_MAX_RECORDS: "many"})
    assert [i.timestamp for i in handle.core().timeline.instants] == before
    handle.upsert(frame(hudi_session, _rows(3, start=10)))
    assert _driver_files(handle)
    assert spark_rows(handle) == sorted(_rows(3) + _rows(3, start=10))


def test_bucket_upserts_what_the_spark_tasks_write(
    hudi_session: HudiSession, tmp_path: Path
) -> None:
    # BUCKET reads no stored key: Spark computes each record's bucket group in the one job
    # that collects the records, and the driver writes the groups.
    tables = []
    for name in ("driver", "tasks"):
        path = tmp_path / name
        create_table(str(path), name, TRIP_SCHEMA, "uuid", "city", "ts", "MERGE_ON_READ",
                     options={INDEX_TYPE: BUCKET, BUCKET_NUM: "2"})
        tables.append(hudi_session.table_at(str(path)))
    seed = _rows(10)
    gone = frame(hudi_session, [("k0002", 9, "x", 0.0, "sf"), ("k0999", 9, "x", 0.0, "la")]
                 ).withColumn(IS_DELETED, F.lit(True))
    changes = [("k0003", 2, "new", 3.5, "la"), ("k0500", 2, "ins", 5.0, "ny")]
    for handle, options in zip(tables, ({}, SPARK_TASKS), strict=True):
        handle.upsert(frame(hudi_session, seed), **options)
        handle.upsert(frame(hudi_session, changes).withColumn(IS_DELETED, F.lit(False))
                      .unionByName(gone), **options)
    expected = sorted([r for r in seed if r[0] not in ("k0002", "k0003")] + changes)
    for handle in tables:
        assert spark_rows(handle) == expected
        assert rs_rows(handle) == expected
    assert _commits(tables[0]) == _commits(tables[1])
    groups = [sorted(s.file_id for s in handle.core().file_slices()) for handle in tables]
    assert groups[0] == groups[1], "the same bucket file groups"
    assert _driver_files(tables[0]) and not _driver_files(tables[1])


def test_a_group_that_fails_leaves_the_table_as_it_was(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    # One of the driver's threads fails after others wrote their groups: the write is
    # rolled back, every file it wrote is gone, and both readers see the rows before it.
    handle = new_table("MERGE_ON_READ")
    seed = _rows(8)
    handle.bulk_insert(frame(hudi_session, seed), **{MAX_RECORDS_PER_FILE: "2"})
    data = {p for p in Path(handle.path).rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    calls = []
    real = pipeline._write_group

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[9])  # the file id
        if len(calls) == 3:
            raise RuntimeError("injected: the third group's write fails")
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "_write_group", failing)
    with pytest.raises(RuntimeError, match="third group"):
        handle.upsert(frame(hudi_session, [(k, 2, "new", 0.5, c) for k, _, _, _, c in seed]
                            + _rows(4, start=50)))
    assert len(calls) >= 3
    assert {p for p in Path(handle.path).rglob("*")
            if p.is_file() and ".hoodie" not in p.parts} == data
    timeline = handle.core().timeline
    assert [i.action for i in timeline.completed()] == ["deltacommit", "rollback"]
    assert spark_rows(handle) == rs_rows(handle) == sorted(seed)


def test_keys_of_other_types_are_the_ones_spark_stages(
    hudi_session: HudiSession, tmp_path: Path
) -> None:
    # Spark stages an integer/string key and date/boolean partition values as text, but the
    # driver write forms keys and partition paths again from the collected columns: the
    # stored meta columns, and which stored record an update finds, must be the same.
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.date32()),
                        ("open", pa.bool_()), ("v", pa.int64())])
    spark_schema = "id long, name string, day date, open boolean, v long"
    seed = [(i, f"n{i}", datetime.date(2026, 1, 1 + i % 3), i % 2 == 0, 1) for i in range(9)]
    later = [(i, f"n{i}", datetime.date(2026, 1, 1 + i % 3), i % 2 == 0, 2) for i in (1, 4, 20)]
    meta = []
    for name, options in (("driver", {}), ("tasks", SPARK_TASKS)):
        path = tmp_path / name
        create_table(str(path), name, schema, ["id", "name"], ["day", "open"], "v")
        handle = hudi_session.table_at(str(path))
        for rows in (seed, later):
            handle.upsert(hudi_session.spark.createDataFrame(rows, spark_schema), **options)
        assert bool(_driver_files(handle)) == (name == "driver")
        meta.append(sorted(tuple(r) for r in handle.read().select(
            "_hoodie_record_key", "_hoodie_partition_path", "v").collect()))
    assert meta[0] == meta[1]
    assert ("id:4,name:n4", "day=2026-01-02/open=true", 2) in meta[0]
    assert len(meta[0]) == 10, "the two stored records were updated, one inserted"
