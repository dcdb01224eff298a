"""Every commit path keeps the metadata table exact (issue 12, item 3).

A merge-on-read trips table with a record index, a secondary index (idx_rider) and column
stats goes through each kind of commit: a Spark upsert (``df.write``), a DELETE, a MERGE,
an INSERT OVERWRITE, a compaction, a log compaction, a clean and a rollback. After each
one the metadata table has a deltacommit at the data instant's time, validates exactly
against a recomputation from the data table (here and in the suite-wide check of
tests/conftest.py), and hudi-rs reads the same rows as hudisql. A Spark write that fails,
before or after the metadata table took its part, leaves the metadata table as it was.
"""

from __future__ import annotations

import pytest

from hudisql.metadata import commit_update
from hudisql.metadata.builders import DataFile
from hudisql.metadata.row_changes import RowChanges
from hudisql.metadata.table import MetadataTable
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from hudisql.write.pipeline import SparkWriter
from tests.services.indexing import assert_exact, snapshot, trips
from tests.write.trips import Crash, rs_rows, spark_rows

PARTITIONS = ["column_stats", "files", "record_index", "secondary_index_idx_rider"]
SAVE_OPTIONS = {"hoodie.datasource.write.recordkey.field": "uuid",
                "hoodie.datasource.write.precombine.field": "ts",
                "hoodie.datasource.write.partitionpath.field": "city",
                "hoodie.datasource.write.operation": "upsert"}


def _indexed(session: HudiSession) -> HudiTableHandle:
    handle = trips(session)
    session.sql("CREATE INDEX idx_rider ON trips (rider)")
    session.sql("CREATE INDEX stats ON trips USING column_stats (fare, ts, rider)")
    assert sorted(HudiTable.open(handle.path).properties.metadata_partitions) == PARTITIONS
    return handle


def _latest(handle: HudiTableHandle) -> str:
    return HudiTable.open(handle.path).timeline.completed()[-1].timestamp


def _in_sync(handle: HudiTableHandle, instant: str | None = None) -> None:
    """The metadata table has ``instant``'s deltacommit, validates, and hudi-rs agrees."""
    if instant is not None:
        mdt = MetadataTable(HudiTable.open(handle.path))
        found = mdt.timeline.get(instant)
        assert found is not None and found.is_completed, f"no metadata deltacommit {instant}"
    assert_exact(handle.path)
    assert rs_rows(handle) == spark_rows(handle)


def test_a_spark_upsert_through_df_write_updates_every_index(session: HudiSession) -> None:
    handle = _indexed(session)
    rows = [("a", 9, "r9", 1.5, "sf"), ("e", 9, "r1", 2.5, "la")]
    writer = session.spark.createDataFrame(
        rows, "uuid string, ts long, rider string, fare double, city string"
    ).write.format("hudi").mode("append")
    for key, value in SAVE_OPTIONS.items():
        writer = writer.option(key, value)
    writer.save(handle.path)
    _in_sync(handle, _latest(handle))
    # The secondary index moved 'a' from r1 to r9 and added 'e' under r1.
    assert session.sql("CALL validate_metadata_table(table => 'trips')").collect() == []
    assert ("a", 9, "r9", 1.5, "sf") in rs_rows(handle)


def test_delete_merge_and_overwrite_keep_the_indexes_exact(session: HudiSession) -> None:
    handle = _indexed(session)
    session.sql("DELETE FROM trips WHERE rider = 'r1'")
    _in_sync(handle, _latest(handle))
    assert sorted(r[0] for r in rs_rows(handle)) == ["b", "d"]

    session.sql("""MERGE INTO trips t
        USING (SELECT 5 AS ts, 'b' AS uuid, 'r7' AS rider, 1.0 AS fare, 'la' AS city
               UNION ALL SELECT 5, 'f', 'r8', 2.0, 'sf') s
        ON t.uuid = s.uuid
        WHEN MATCHED THEN UPDATE SET *
        WHEN NOT MATCHED THEN INSERT *""")
    _in_sync(handle, _latest(handle))
    assert sorted(r[0] for r in rs_rows(handle)) == ["b", "d", "f"]

    session.sql("INSERT OVERWRITE trips SELECT 6, 'g', 'r1', 3.0, 'sf'")
    table = HudiTable.open(handle.path)
    assert table.timeline.completed()[-1].action == Action.REPLACECOMMIT
    _in_sync(handle, _latest(handle))
    # Without PARTITION (...) the whole table is replaced: every old key leaves the record
    # and secondary indexes.
    assert [r[0] for r in rs_rows(handle)] == ["g"]


def test_compaction_log_compaction_and_clean_keep_the_indexes_exact(
        session: HudiSession) -> None:
    handle = _indexed(session)
    for ts in (7, 8):  # two log blocks on the sf file group
        session.sql(f"INSERT INTO trips VALUES ({ts}, 'a', 'r{ts}', {ts}.5, 'sf')")
        _in_sync(handle, _latest(handle))
    done = handle.maintenance.run_log_compaction(**{"hoodie.log.compaction.blocks.threshold": "2"})
    assert done is not None
    _in_sync(handle, done.instant)

    (row,) = session.sql("RUN COMPACTION ON trips").collect()
    assert row["state"] == "COMPLETED"
    _in_sync(handle, row["timestamp"])

    (cleaned,) = session.sql("CALL run_clean(table => 'trips', options => "
                             "'hoodie.cleaner.commits.retained=1')").collect()
    assert cleaned["total_files_deleted"] > 0
    # The clean's metadata deltacommit drops the deleted files from files and column_stats.
    _in_sync(handle, cleaned["start_clean_time"])


def test_rollback_to_instant_removes_the_commits_metadata(session: HudiSession) -> None:
    handle = _indexed(session)
    before = rs_rows(handle)
    session.sql("INSERT INTO trips VALUES (9, 'z', 'r9', 9.5, 'la')")
    instant = _latest(handle)
    _in_sync(handle, instant)
    session.sql(f"CALL rollback_to_instant(table => 'trips', instant_time => '{instant}')")
    assert MetadataTable(HudiTable.open(handle.path)).timeline.get(instant) is None
    _in_sync(handle)
    assert rs_rows(handle) == before


@pytest.mark.parametrize("event", ["written", "completing"])
def test_a_failed_spark_write_leaves_the_metadata_table_as_it_was(
        session: HudiSession, event: str) -> None:
    """``written``: before the participants ran; ``completing``: after the metadata
    deltacommit was written, just before the data instant completes."""
    handle = _indexed(session)
    mdt_root = f"{handle.path}/.hoodie/metadata"
    before_rows = rs_rows(handle)
    before = {k: v for k, v in snapshot(mdt_root).items() if not k.startswith(".hoodie/.temp")}

    def crash(step: str, detail: str) -> None:
        if step == event:
            raise Crash(detail)

    session.router.on_write_step = crash  # type: ignore[union-attr]
    try:
        with pytest.raises(Crash):
            session.sql("INSERT INTO trips VALUES (9, 'a', 'r9', 9.5, 'sf')")
    finally:
        session.router.on_write_step = None  # type: ignore[union-attr]
    after = {k: v for k, v in snapshot(mdt_root).items() if not k.startswith(".hoodie/.temp")}
    assert after == before
    _in_sync(handle)
    assert rs_rows(handle) == before_rows


def _spy_row_changes(monkeypatch: pytest.MonkeyPatch) -> list[dict[tuple[str, str], RowChanges]]:
    """The RowChanges each write hands the metadata participant, in order: from its Spark
    tasks, or from the driver for a statement small enough to be written there
    (``hudisql.write.local.max.records``); the two share the functions that compute them."""
    seen: list[dict[tuple[str, str], RowChanges]] = []
    for name in ("_tag_and_write", "_tag_and_write_local"):
        original = getattr(SparkWriter, name)

        def spy(self: SparkWriter, *args: object, _original: object = original,
                **kwargs: object) -> object:
            stats, changes = _original(self, *args, **kwargs)  # type: ignore[operator]
            seen.append(changes)
            return stats, changes

        monkeypatch.setattr(SparkWriter, name, spy)
    return seen


def test_copy_on_write_writes_hand_their_row_changes_from_the_tasks(
        session: HudiSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """Copy-on-write slices are rewritten whole: the write tasks compute the record and
    secondary index changes (RowChanges) and the metadata table still validates."""
    session.sql("""CREATE TABLE cow (ts BIGINT, uuid STRING, rider STRING, fare DOUBLE,
        city STRING) USING hudi PARTITIONED BY (city)
        TBLPROPERTIES (type = 'cow', primaryKey = 'uuid', preCombineField = 'ts')""")
    session.sql("INSERT INTO cow VALUES (1, 'a', 'r1', 1.0, 'sf'), (2, 'b', 'r2', 2.0, 'la')")
    session.sql("CREATE INDEX idx_rider ON cow (rider)")
    handle = session.table("cow")

    seen: list[dict[tuple[str, str], object]] = _spy_row_changes(monkeypatch)  # type: ignore[assignment]
    session.sql("INSERT INTO cow VALUES (3, 'a', 'r9', 1.5, 'sf'), (3, 'c', 'r1', 3.0, 'sf')")
    _in_sync(handle, _latest(handle))
    session.sql("DELETE FROM cow WHERE uuid = 'b'")
    _in_sync(handle, _latest(handle))
    upsert, delete = seen
    (sf,) = [c for (p, _), c in upsert.items() if p == "city=sf"]
    assert sf.inserted.to_pylist() == ["c"] and sf.removed.to_pylist() == []  # type: ignore[attr-defined]
    gone, added = sf.pairs("rider")  # type: ignore[attr-defined]
    assert sorted(gone) == [("r1", "a")] and sorted(added) == [("r1", "c"), ("r9", "a")]
    (la,) = delete.values()
    assert la.removed.to_pylist() == ["b"]  # type: ignore[attr-defined]
    assert [r[0] for r in rs_rows(handle)] == ["a", "c"]


def test_merge_on_read_log_writes_hand_their_row_changes_from_the_tasks(
        session: HudiSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """Log files get their record and secondary index changes and their column stats
    from the write tasks too, so the metadata participant reads no file group and decodes
    no log file: an update that changes the indexed
    value, a stale update that loses on the precombine field, a delete, a MERGE that
    updates one key and deletes another in one log file, and an expression update (the
    task reads the group back with its new log), each validated exactly."""
    handle = _indexed(session)
    seen = _spy_row_changes(monkeypatch)
    read_by_participant: list[tuple[str, str]] = []
    original_rows = commit_update.row_changes

    def participant_reads(*args: object, **kwargs: object) -> object:
        found = original_rows(*args, **kwargs)  # type: ignore[arg-type]
        read_by_participant.extend(found)
        return found

    decoded: list[str] = []
    original_ranges = commit_update.file_ranges

    def participant_decodes(table: HudiTable, f: DataFile, columns: list[str]) -> object:
        if f.is_log:
            decoded.append(f.path)
        return original_ranges(table, f, columns)

    monkeypatch.setattr(commit_update, "row_changes", participant_reads)
    monkeypatch.setattr(commit_update, "file_ranges", participant_decodes)

    def step(sql: str, hudi_rs: bool = True) -> RowChanges:
        session.sql(sql)
        if hudi_rs:
            _in_sync(handle, _latest(handle))
        else:  # hudi-rs refuses expression blocks until a compaction
            assert_exact(handle.path)
        assert HudiTable.open(handle.path).file_slices(partitions=["city=sf"])[0].log_files
        (only,) = seen[-1].values()
        return only

    moved = step("UPDATE trips SET rider = 'r9' WHERE uuid = 'a'")
    assert (len(moved.inserted), len(moved.removed)) == (0, 0)
    assert moved.pairs("rider") == ([("r1", "a")], [("r9", "a")])
    stale = step("INSERT INTO trips VALUES (0, 'c', 'r0', 1.0, 'sf')")  # ts 0 < 3: loses
    assert stale.pairs("rider") == ([], [])
    both = step("""MERGE INTO trips t
        USING (SELECT 9 AS ts, 'a' AS uuid, 'r5' AS rider, 1.0 AS fare, 'sf' AS city, false AS d
               UNION ALL SELECT 9, 'c', 'r1', 1.0, 'sf', true) s
        ON t.uuid = s.uuid
        WHEN MATCHED AND s.d THEN DELETE
        WHEN MATCHED THEN UPDATE SET ts = s.ts, rider = s.rider, fare = s.fare""")
    assert both.removed.to_pylist() == ["c"]
    assert sorted(both.pairs("rider")[0]) == [("r1", "c"), ("r9", "a")]
    assert both.pairs("rider")[1] == [("r5", "a")]
    expression = step("UPDATE trips SET fare = fare + 1 WHERE uuid = 'a'", hudi_rs=False)
    assert expression.pairs("rider") == ([], [])
    assert [(r["uuid"], r["fare"]) for r in handle.read().where("city = 'sf'").collect()] == [
        ("a", 2.0)]
    gone = step("DELETE FROM trips WHERE uuid = 'a'", hudi_rs=False)
    assert gone.removed.to_pylist() == ["a"] and gone.pairs("rider") == ([("r5", "a")], [])
    assert read_by_participant == []
    assert decoded == []  # the tasks gave each log file's column stats too
    assert handle.read().where("city = 'sf'").count() == 0
