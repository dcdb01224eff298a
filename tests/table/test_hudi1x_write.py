"""Writing Apache Hudi 1.x tables (versions 8 and 9, timeline layout 2), checked against
what Hudi 1.x wrote (the fixtures) and read back by hudi-rs row for row."""

from __future__ import annotations

import io
import os
import shutil
import threading
from pathlib import Path

import fastavro
import pyarrow.parquet as pq
import pytest

from hudisql.errors import (
    InstantExistsError,
    TableServiceError,
    WriteError,
)
from hudisql.services.archive import archive_needed, run_archive
from hudisql.services.clean import run_clean
from hudisql.services.clustering import run_clustering
from hudisql.services.compaction import run_compaction
from hudisql.services.log_compaction import run_log_compaction
from hudisql.services.upgrade import run_upgrade
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.filenames import LogFileName
from hudisql.table.format.instant import Action, parse_instant_file_name
from hudisql.table.format.lsm_timeline import ArchivedCompletionTimes
from hudisql.table.format.properties import TableProperties
from hudisql.table.services.archive import ArchivedTimeline
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient
from tests.fixtures import VERSION_6, copy_table
from tests.services.kit import (
    SCHEMA,
    Crash,
    crash_at,
    files,
    rec,
    rows,
    rs_rows,
    rs_slices,
    slices,
    upgrade_refused_while_pending,
    upserts,
)


def timeline_names(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir() if p.is_file())


def avro_record_name(data: bytes) -> str:
    return str(fastavro.reader(io.BytesIO(data)).writer_schema["name"])


def all_times(names: list[str]) -> set[str]:
    return {t for n in names if n[:1].isdigit() for t in n.split(".", 1)[0].split("_")}


# -- the timeline ------------------------------------------------------------------------------


def test_layout_2_instants_are_named_and_encoded_as_hudi_1x_writes_them(tmp_path: Path) -> None:
    root = copy_table("v8_trips_8i1u", tmp_path)
    timeline = HudiTable.open(root).timeline
    before = timeline_names(root)
    requested = timeline.create_requested(Action.DELTACOMMIT)
    ts = requested.timestamp
    assert (root / ".hoodie/timeline" / f"{ts}.deltacommit.requested").read_bytes() == b""
    planned = CommitMetadata(operation_type="UPSERT")
    inflight = timeline.transition_to_inflight(requested, planned.to_json())
    data = (root / ".hoodie/timeline" / f"{ts}.deltacommit.inflight").read_bytes()
    assert avro_record_name(data) == "org.apache.hudi.avro.model.HoodieCommitMetadata"
    meta = CommitMetadata(operation_type="UPSERT", extra_metadata={"schema": "{}"})
    meta.add_write_stat(WriteStat(file_id="f1", path="p/f1.parquet", partition_path="p",
                                  num_writes=3, num_inserts=3, file_size_in_bytes=10))
    done = timeline.complete(inflight, meta.to_json())
    # <requested>_<completion>.deltacommit, the completion later than every time before.
    assert done.completion_time is not None
    assert done.file_name == f"{ts}_{done.completion_time}.deltacommit"
    assert done.completion_time > max(all_times(before) | {ts})
    content = (root / ".hoodie/timeline" / done.file_name).read_bytes()
    assert avro_record_name(content) == "org.apache.hudi.avro.model.HoodieCommitMetadata"
    parsed = CommitMetadata.parse(content)
    assert parsed.extra_metadata == meta.extra_metadata and parsed.operation_type == "UPSERT"
    [stat] = parsed.write_stats()
    assert (stat.file_id, stat.path, stat.num_inserts, stat.prev_commit) == (
        "f1", "p/f1.parquet", 3, "null")
    # A second completion of the same instant is refused (its name would differ).
    with pytest.raises(InstantExistsError, match="completed already"):
        timeline.complete(inflight, meta.to_json())
    fresh = timeline.reload()
    found = fresh.get(ts)
    assert found is not None and found.is_completed
    assert found.completion_time == done.completion_time
    # A replacecommit completes as HoodieReplaceCommitMetadata; its inflight stays
    # HoodieCommitMetadata, as Hudi 1.1 wrote the fixture's insert overwrite.
    replace = fresh.transition_to_inflight(fresh.create_requested(Action.REPLACECOMMIT),
                                           planned.to_json())
    meta.partition_to_replace_file_ids = {"p": ["f0"]}
    replaced = fresh.complete(replace, meta.to_json(replace=True))
    assert replaced.completion_time is not None
    assert replaced.completion_time > done.completion_time
    content = (root / ".hoodie/timeline" / replaced.file_name).read_bytes()
    assert avro_record_name(content) == "org.apache.hudi.avro.model.HoodieReplaceCommitMetadata"
    assert CommitMetadata.parse(content).partition_to_replace_file_ids == {"p": ["f0"]}


def test_completion_times_follow_the_order_instants_complete_in(tmp_path: Path) -> None:
    root = copy_table("v8_trips_8i1u", tmp_path)
    timeline = HudiTable.open(root).timeline
    first = timeline.transition_to_inflight(timeline.create_requested(Action.DELTACOMMIT))
    second = timeline.transition_to_inflight(timeline.create_requested(Action.DELTACOMMIT))
    assert first.timestamp < second.timestamp
    # The later-requested one completes first: the earlier one's completion is after it.
    done_second = timeline.complete(second, b"")
    done_first = timeline.complete(first, b"")
    assert done_first.completion_time is not None and done_second.completion_time is not None
    assert second.timestamp < done_second.completion_time < done_first.completion_time
    assert HudiTable.open(root).file_system_view().completion_time(first.timestamp) == (
        done_first.completion_time)


# -- writes on tables Hudi 1.x wrote --------------------------------------------------------------


def trips(client: WriteClient) -> None:
    """An update (a newer ts), an insert and a delete on the quickstart trips."""
    client.upsert([{"ts": 1795159649087, "uuid": "334e26e9-8355-45cc-97c6-c31daf0df330",
                    "rider": "rider-A", "driver": "driver-K", "fare": 99.5,
                    "city": "san_francisco"},
                   {"ts": 1795159649087, "uuid": "new-1", "rider": "rider-Z",
                    "driver": "driver-Z", "fare": 1.5, "city": "chennai"}])
    client.delete(["e3cf430c-889d-4015-bc98-59bdce1e530c"])


def test_writes_on_a_version_8_merge_on_read_table(tmp_path: Path) -> None:
    root = copy_table("v8_trips_8i1u", tmp_path)
    before = {r["uuid"]: r["fare"] for r in rows(root)}
    client = WriteClient(HudiTable.open(root))
    # A write that dies midway leaves its files; the next write rolls it back by deleting
    # them (Hudi 1.x's rollback: no command blocks).
    client.on_step = crash_at("file")
    with pytest.raises(Crash):
        client.upsert([{"ts": 1795159649087, "uuid": "334e26e9-8355-45cc-97c6-c31daf0df330",
                        "rider": "x", "driver": "x", "fare": -1.0, "city": "san_francisco"}])
    client.on_step = lambda e, d: None
    failed = {n.split(".", 1)[0] for n in timeline_names(root) if n.endswith(".inflight")}
    client.rollback(max(failed))
    assert not [p for p in root.rglob("*") if max(failed) in p.name and ".hoodie" not in str(p)]
    trips(client)
    expected = dict(before)
    expected["334e26e9-8355-45cc-97c6-c31daf0df330"] = 99.5
    expected["new-1"] = 1.5
    del expected["e3cf430c-889d-4015-bc98-59bdce1e530c"]
    assert {r["uuid"]: r["fare"] for r in rows(root)} == expected
    assert rs_rows(root) == rows(root)
    assert rs_slices(root) == slices(root)
    # A compaction of Hudi's and hudisql's logs together.
    assert run_compaction(HudiTable.open(root)) is not None
    assert {r["uuid"]: r["fare"] for r in rows(root)} == expected
    assert rs_rows(root) == rows(root) and rs_slices(root) == slices(root)
    names = timeline_names(root)
    rollbacks = [n for n in names if n.endswith(".rollback")]
    assert len(rollbacks) == 1 and "_" in rollbacks[0]
    # Each deltacommit wrote its own log file, named after it.
    logs = [LogFileName.parse(p.name) for p in root.rglob(".*.log.*")]
    completed = {i.timestamp for n in names
                 if (i := parse_instant_file_name(n, 2)) is not None and i.is_completed}
    assert logs and all(log is not None and log.base_instant in completed for log in logs)


def test_writes_on_a_version_8_copy_on_write_table(tmp_path: Path) -> None:
    root = copy_table("v8_nonpartitioned", tmp_path)
    client = WriteClient(HudiTable.open(root))
    before = rows(root)
    update = {k: v for k, v in before[0].items() if not k.startswith("_hoodie")}
    update["longField"] = (update["longField"] or 0) + 1000
    update["name"] = "updated"
    client.upsert([update])
    client.delete([str(before[1]["id"])])
    after = rows(root)
    assert len(after) == len(before) - 1
    assert [r["name"] for r in after if r["id"] == update["id"]] == ["updated"]
    assert rs_rows(root) == after


# -- new tables of versions 8 and 9 ---------------------------------------------------------------


@pytest.mark.parametrize("version", [8, 9])
def test_new_tables_of_versions_8_and_9(tmp_path: Path, version: int) -> None:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", ["city"], "ts", "MERGE_ON_READ",
                         options={"hoodie.write.table.version": str(version)})
    root = tmp_path / "t"
    props = TableProperties.load(table.storage)
    assert (props.version, props.timeline_layout) == (version, 2)
    assert props["hoodie.table.initial.version"] == str(version)
    assert props["hoodie.timeline.path"] == "timeline"
    assert props["hoodie.table.keygenerator.type"] == "SIMPLE"
    assert props["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    assert "hoodie.compaction.record.merger.strategy" not in props
    if version == 8:
        assert props["hoodie.record.merge.strategy.id"] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
        assert props["hoodie.table.precombine.field"] == "ts"
    else:
        assert props["hoodie.table.ordering.fields"] == "ts"
        assert "hoodie.table.precombine.field" not in props
        assert "hoodie.compaction.payload.class" not in props
    assert (root / ".hoodie/timeline/history").is_dir()
    assert not (root / ".hoodie/archived").exists()
    client = WriteClient(table)
    client.insert([rec(i, 1, "ins") for i in range(6)])
    upserts(client, 2)
    client.delete(["k1"])
    assert rs_rows(root) == rows(root)
    lc = run_log_compaction(HudiTable.open(root),
                            options={"hoodie.log.compaction.blocks.threshold": "2"})
    assert lc is not None
    compaction = run_compaction(HudiTable.open(root))
    assert compaction is not None
    upserts(client, 1, start=10)
    cleaned = run_clean(HudiTable.open(root), {"hoodie.cleaner.commits.retained": "1"})
    assert cleaned is not None and cleaned.total_files_deleted > 0
    expected = {f"k{i}": f"u0-{i}" for i in range(6)}
    assert {r["id"]: r["v"] for r in rows(root)} == expected
    assert rs_rows(root) == rows(root) and rs_slices(root) == slices(root)
    names = timeline_names(root)
    assert f"{lc.instant}.logcompaction.requested" in names
    assert next(n for n in names if n.startswith(f"{lc.instant}_")).endswith(".deltacommit")
    assert next(n for n in names if n.startswith(f"{compaction.instant}_")).endswith(".commit")
    assert any(n.endswith(".clean") and "_" in n for n in names)
    # Completion times strictly increase in the order instants completed.
    completions = [parse_instant_file_name(n, 2) for n in names]
    done = [i for i in completions if i is not None and i.is_completed]
    assert len({i.completion_time for i in done}) == len(done)
    # Archival into the LSM history; a crash once the history holds the instants leaves
    # them active too (readers take the active copy), and the next run removes them.
    keep = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
            "hoodie.compact.inline.max.delta.commits": "1"}
    assert archive_needed(HudiTable.open(root), keep)
    now = rows(root)
    with pytest.raises(Crash):
        run_archive(HudiTable.open(root), keep, on_step=crash_at("written"))
    assert rows(root) == now and rs_rows(root) == now
    history = root / ".hoodie/timeline/history"
    assert (history / "_version_").read_text() == "1"
    [lsm] = [p.name for p in history.iterdir() if p.name.endswith(".parquet")]
    archived = pq.read_table(history / lsm).to_pylist()
    assert {"instantTime", "completionTime", "action", "metadata", "plan", "version"} == set(
        archived[0])
    result = run_archive(HudiTable.open(root), keep)
    assert result.data == []  # the crashed run's instants were finished, nothing new is due
    active = HudiTable.open(root).timeline
    assert all(active.get(r["instantTime"]) is None for r in archived)
    first = archived[0]
    assert ArchivedCompletionTimes(active.storage, active.props).get(
        first["instantTime"]) == first["completionTime"]
    # The archived timeline as hudisql's readers (SHOW TIMELINE, incremental) see it.
    entries = ArchivedTimeline(active.storage, active).completed()
    assert [e.timestamp for e in entries] == [r["instantTime"] for r in archived]
    assert all(e.commit_metadata() is not None for e in entries
               if e.action in ("commit", "deltacommit"))
    assert rows(root) == now and rs_rows(root) == now
    upserts(client, 1, start=20)
    assert rs_rows(root) == rows(root)


def test_a_table_version_hudisql_does_not_write_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match=r"hoodie\.write\.table\.version='7'"):
        create_table(tmp_path / "t", "t", SCHEMA, "id", ["city"], "ts",
                     options={"hoodie.write.table.version": "7"})
    assert not os.path.exists(tmp_path / "t")


def test_clustering_and_rollback_on_a_version_9_table(tmp_path: Path) -> None:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", ["city"], "ts", "COPY_ON_WRITE",
                         options={"hoodie.write.table.version": "9"})
    root = tmp_path / "t"
    client = WriteClient(table)
    client.insert([rec(i, 1, "ins") for i in range(4)])
    client.insert([rec(i, 1, "ins") for i in range(4, 8)])
    [done] = run_clustering(HudiTable.open(root),
                            {"hoodie.clustering.plan.strategy.small.file.limit": str(10**9)})
    names = timeline_names(root)
    # Requested as its own action, completed as a replacecommit (Hudi 1.x's names).
    assert f"{done.instant}.clustering.requested" in names
    [completed] = [n for n in names if n.startswith(f"{done.instant}_")]
    assert completed.endswith(".replacecommit")
    content = (root / ".hoodie/timeline" / completed).read_bytes()
    assert avro_record_name(content) == "org.apache.hudi.avro.model.HoodieReplaceCommitMetadata"
    clustered = rows(root)
    assert rs_rows(root) == clustered
    last = upserts(client, 1, keys=8)[-1]
    client.rollback(last)
    assert rows(root) == clustered and rs_rows(root) == clustered
    assert not [n for n in timeline_names(root) if n.startswith(last)]


# -- upgrade_table -------------------------------------------------------------------------------


def test_upgrade_from_version_6_survives_a_crash_at_every_step(tmp_path: Path) -> None:
    root = copy_table("v6_trips_8i1u", tmp_path)
    before = rows(root)
    layout_1 = sorted(p.name for p in (root / ".hoodie").iterdir()
                      if parse_instant_file_name(p.name, 1) is not None)
    # A crash once the new timeline is written: still version 6, read as before.
    with pytest.raises(Crash):
        run_upgrade(HudiTable.open(root), 9, on_step=crash_at("timeline"))
    assert TableProperties.load(HudiTable.open(root).storage).version == 6
    assert rows(root) == before and rs_rows(root) == before
    # A crash right after the switch: version 9, the old files still there, read the same.
    with pytest.raises(Crash):
        run_upgrade(HudiTable.open(root), 9, on_step=crash_at("properties"))
    props = TableProperties.load(HudiTable.open(root).storage)
    assert (props.version, props.timeline_layout, props["hoodie.table.initial.version"]) == (
        9, 2, "6")
    assert rows(root) == before and rs_rows(root) == before
    assert all((root / ".hoodie" / name).exists() for name in layout_1)
    # The next run finishes: the layout-1 files are gone.
    run_upgrade(HudiTable.open(root), 9)
    assert not [p for p in (root / ".hoodie").iterdir()
                if parse_instant_file_name(p.name, 1) is not None]
    names = timeline_names(root)
    assert len([n for n in names if "_" in n]) == 2  # both deltacommits, completion-named
    assert all(avro_record_name((root / ".hoodie/timeline" / n).read_bytes())
               == "org.apache.hudi.avro.model.HoodieCommitMetadata"
               for n in names if "_" in n or n.endswith(".inflight"))
    assert rows(root) == before and rs_rows(root) == before
    trips(WriteClient(HudiTable.open(root)))
    assert rs_rows(root) == rows(root) and len(rows(root)) == len(before)


def test_upgrade_of_a_table_hudisql_compacted(tmp_path: Path) -> None:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", ["city"], "ts", options=VERSION_6)
    root = tmp_path / "t"
    client = WriteClient(table)
    client.insert([rec(i, 1, "ins") for i in range(6)])
    upserts(client, 2)
    assert run_compaction(HudiTable.open(root)) is not None
    upserts(client, 3, start=5)
    run_clean(HudiTable.open(root), {"hoodie.cleaner.commits.retained": "2"})
    keep = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
            "hoodie.compact.inline.max.delta.commits": "1"}
    archived = [i.timestamp for i in run_archive(HudiTable.open(root), keep).data]
    assert archived
    before = rows(root)
    # A pending instant is refused, the table unchanged.
    upgrade_refused_while_pending(root, 8)
    # A write asking for another version is refused: upgrading is a step of its own.
    unchanged = files(root)
    asking = WriteClient(HudiTable.open(root), options={"hoodie.write.table.version": "8"})
    with pytest.raises(WriteError, match=r"is version 6, but the write sets .*upgrade_table"):
        upserts(asking, 1, start=7)
    assert files(root) == unchanged
    run_upgrade(HudiTable.open(root), 8)
    assert rows(root) == before and rs_rows(root) == before
    # The version-6 archive is the LSM history's first snapshot now.
    history = root / ".hoodie/timeline/history"
    [lsm] = [p.name for p in history.iterdir() if p.name.endswith(".parquet")]
    lsm_rows = pq.read_table(history / lsm).to_pylist()
    assert [r["instantTime"] for r in lsm_rows] == archived
    assert all(CommitMetadata.parse(r["metadata"]) is not None for r in lsm_rows
               if r["action"] in ("commit", "deltacommit"))
    upserts(WriteClient(HudiTable.open(root)), 1, start=9)
    assert rs_rows(root) == rows(root)
    # 8 to 9 changes the properties only; going down is refused.
    run_upgrade(HudiTable.open(root), 9)
    props = TableProperties.load(HudiTable.open(root).storage)
    assert (props.version, props["hoodie.table.initial.version"]) == (9, "6")
    with pytest.raises(TableServiceError, match="does not downgrade"):
        run_upgrade(HudiTable.open(root), 8)
    assert rs_rows(root) == rows(root)


def test_racing_writers_get_distinct_completion_times(tmp_path: Path) -> None:
    create_table(tmp_path / "t", "t", SCHEMA, "id", ["city"], "ts", "MERGE_ON_READ",
                 options={"hoodie.write.table.version": "9"})
    root = tmp_path / "t"
    n = 4
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            client = WriteClient(HudiTable.open(root), options={
                "hoodie.write.lock.provider": "in-process"})
            barrier.wait()
            # A partition of its own: no two writers touch one file group.
            client.insert([{"id": f"w{i}", "ts": 1, "v": "x", "city": f"c{i}"}])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    done = [i for n_ in timeline_names(root)
            if (i := parse_instant_file_name(n_, 2)) is not None and i.is_completed]
    assert len(done) == n
    completions = [i.completion_time for i in done]
    assert len(set(completions)) == n
    assert all(i.completion_time is not None and i.completion_time > i.timestamp for i in done)
    assert {r["id"] for r in rs_rows(root)} == {f"w{i}" for i in range(n)} == {
        r["id"] for r in rows(root)}


def test_writes_on_a_table_hudi_1_1_wrote_once_its_metadata_table_is_gone(
        tmp_path: Path) -> None:
    # Hudi 1.1's own version-9 table (two key fields, COMPLEX key generator by type only,
    # ordering fields, compaction and clustering on its timeline) without its HFile
    # metadata table, as Hudi leaves it after a write with hoodie.metadata.enable=false.
    root = copy_table("v9_txns_complex_meta", tmp_path)
    shutil.rmtree(root / ".hoodie/metadata")
    storage = HudiTable.open(root).storage
    TableProperties.load(storage).updated(**{
        "hoodie.table.metadata.partitions": None,
        "hoodie.table.metadata.partitions.inflight": None}).save(storage)
    before = rows(root)
    assert rs_rows(root) == before
    update = {k: v for k, v in before[0].items() if not k.startswith("_hoodie")}
    update["txn_ts"] += 1000
    update["merchant_name"] = "hudisql"
    client = WriteClient(HudiTable.open(root))
    client.upsert([update])
    client.delete([before[1]["_hoodie_record_key"]])
    after = rows(root)
    assert len(after) == len(before) - 1
    assert [r["merchant_name"] for r in after
            if r["_hoodie_record_key"] == before[0]["_hoodie_record_key"]] == ["hudisql"]
    assert rs_rows(root) == after and rs_slices(root) == slices(root)
    assert run_compaction(HudiTable.open(root)) is not None
    assert rows(root) == after and rs_rows(root) == after
