"""Compaction and clean end to end on real tables (in-process runner, no Spark)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from hudisql.errors import CommitConflictError, TableServiceError
from hudisql.services.clean import run_clean
from hudisql.services.compaction import run_compaction, schedule_compaction
from hudisql.services.plans import show_service_plans
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Action
from hudisql.table.format.service_plans import CleanMetadata, clean_plan, compaction_plan
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.services.kit import (
    Crash,
    crash_at,
    files,
    mor_table,
    rec,
    rows,
    rs_rows,
    rs_snapshots,
    sliced_past,
    snapshots,
    upserts,
)


def _compacted(tmp_path: Path) -> tuple[WriteClient, Path, str]:
    client = mor_table(tmp_path)
    upserts(client, 3)
    path = tmp_path / "t"
    result = run_compaction(HudiTable.open(str(path)))
    assert result is not None
    return client, path, result.instant


def test_compaction_writes_base_files_and_reads_the_same_as_of_every_instant(
    tmp_path: Path,
) -> None:
    client = mor_table(tmp_path)
    done = upserts(client, 3)
    path = tmp_path / "t"
    before = snapshots(path)
    result = run_compaction(HudiTable.open(str(path)))
    assert result is not None and result.file_groups == 2
    table = HudiTable.open(str(path))
    c = result.instant
    # The completed file names its completion time too in versions 8/9 (layout 2).
    done_file = (f"{c}.commit" if table.properties.version == 6 else
                 f"{c}_{table.timeline.get(c).completion_time}.commit")
    assert [f.file_name for f in table.timeline.instant_files(c)] == [
        f"{c}.compaction.requested", f"{c}.compaction.inflight", done_file]
    meta = CommitMetadata.parse(table.timeline.read_content(c))
    assert (meta.operation_type, meta.compacted) == ("COMPACT", True)
    plan = compaction_plan(table.timeline, c)
    assert plan.version == 2 and all(len(op.delta_file_paths) == 3 for op in plan.operations)
    for file_slice in table.file_slices():
        assert file_slice.base_instant == c and not file_slice.log_files
    # Records keep the commit time of the write that made them.
    assert {r["_hoodie_commit_time"] for r in rows(path)} == {done[-1]}
    assert {k: v for k, v in snapshots(path).items() if k != c} == before
    assert rs_snapshots(path) == snapshots(path)
    # Writes go on on the new slice.
    client.upsert([rec(0, 50, "after")])
    assert {r["id"]: r["v"] for r in rows(path)}["k0"] == "after"
    assert rows(path) == rs_rows(path)
    shown = show_service_plans(table, Action.COMPACTION).to_pylist()
    assert shown == [{"timestamp": c, "operation_size": 2, "state": "COMPLETED"}]


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_after_the_plan_keeps_its_file_group_out(tmp_path: Path, version: int) -> None:
    """Version 6: a write that names its log by the old slice, completed after the plan,
    keeps its file group out of the compaction. Version 9 names the log by the write and
    slices it by the write's completion, after the plan: it is on the compaction's new
    slice, so the compaction keeps every file group (Hudi 1.x)."""
    client = mor_table(tmp_path, version=version)
    upserts(client, 3)
    path = tmp_path / "t"
    compaction = schedule_compaction(HudiTable.open(str(path)))
    assert compaction is not None
    late = client.upsert([rec(0, 60, "late")]).instant_time  # k0 lives in the sf file group
    result = run_compaction(HudiTable.open(str(path)), compaction)
    sf_bases = list((path / "city=sf").glob(f"*_{compaction}.parquet"))
    if version == 6:
        assert result is not None and result.file_groups == 1
        # The left-out file group's new base file is gone: no reader can pick it.
        assert not sf_bases
    else:
        assert result is not None and result.file_groups == 2 and len(sf_bases) == 1
        sf = [s for s in HudiTable.open(str(path)).file_slices() if s.partition_path == "city=sf"]
        assert [(s.base_instant, s.base_file.name if s.base_file else None,
                 [log.base_instant for log in s.log_files]) for s in sf] == [
            (compaction, sf_bases[0].name, [late])]
    assert len(list((path / "city=la").glob(f"*_{compaction}.parquet"))) == 1
    got = {r["id"]: r["v"] for r in rows(path)}
    assert got["k0"] == "late"
    assert rows(path) == rs_rows(path)


def test_a_write_started_after_the_plan_completes_beside_the_compaction(
    tmp_path: Path,
) -> None:
    """Version 9: a write that started after the plan and completes after the compaction
    does not conflict with it (Hudi's rule): its log, sliced by its completion, is on the
    compaction's new slice."""
    client = mor_table(tmp_path)
    upserts(client, 3)
    path = tmp_path / "t"
    compaction = schedule_compaction(HudiTable.open(str(path)))
    assert compaction is not None

    def compact_meanwhile(event: str, detail: str) -> None:
        if event == "validating":  # its log file is written, its commit not yet made
            result = run_compaction(HudiTable.open(str(path)), compaction)
            assert result is not None and result.file_groups == 2

    writer = WriteClient(HudiTable.open(str(path)), on_step=compact_meanwhile)
    done = writer.upsert([rec(0, 70, "beside")]).instant_time
    table = HudiTable.open(str(path))
    assert table.properties.version == 9
    assert table.timeline.get(done).completion_time > table.timeline.get(
        compaction).completion_time
    sf = [s for s in table.file_slices() if s.partition_path == "city=sf"]
    assert [(s.base_instant, [log.base_instant for log in s.log_files]) for s in sf] == [
        (compaction, [done])]
    assert {r["id"]: r["v"] for r in rows(path)}["k0"] == "beside"
    assert rows(path) == rs_rows(path)


def test_time_travel_to_a_write_that_completed_after_a_later_compaction_was_planned(
    tmp_path: Path,
) -> None:
    """Version 9: write D is requested, compaction C is planned, D completes, C runs. As of
    D the table holds D's rows in hudisql; hudi-rs leaves D's logs out there (they are on
    C's slice, later than D), the one instant where the readers differ by rule."""
    client = mor_table(tmp_path)
    upserts(client, 2)
    path = tmp_path / "t"
    planned: list[str | None] = []

    def plan_meanwhile(event: str, detail: str) -> None:
        if event == "validating" and not planned:
            planned.append(schedule_compaction(HudiTable.open(str(path))))

    writer = WriteClient(HudiTable.open(str(path)), on_step=plan_meanwhile)
    done = writer.upsert([rec(0, 70, "D")]).instant_time
    assert planned[0] is not None and done < planned[0]
    assert run_compaction(HudiTable.open(str(path)), planned[0]) is not None
    assert {r["id"]: r["v"] for r in rows(path, done)}["k0"] == "D"
    assert {r["id"]: r["v"] for r in rs_rows(path, done)}["k0"] == "u1-0"
    assert sliced_past(path) == {done}
    ours, theirs = snapshots(path), rs_snapshots(path)
    assert {ts: v for ts, v in ours.items() if ts != done} == {
        ts: v for ts, v in theirs.items() if ts != done}


def test_a_writer_that_started_before_the_compaction_completed_conflicts(
    tmp_path: Path,
) -> None:
    client = mor_table(tmp_path)
    upserts(client, 3)
    path = tmp_path / "t"
    before = rows(path)

    def compact_meanwhile(event: str, detail: str) -> None:
        if event == "validating":  # its log file is written, its commit not yet made
            assert run_compaction(HudiTable.open(str(path))) is not None

    writer = WriteClient(HudiTable.open(str(path)), on_step=compact_meanwhile)
    with pytest.raises(CommitConflictError):
        writer.upsert([rec(0, 70, "lost?")])
    assert rows(path) == before  # the writer was rolled back; nothing is lost or doubled


def test_a_failed_compaction_goes_back_to_requested_and_runs_again(tmp_path: Path) -> None:
    client = mor_table(tmp_path)
    upserts(client, 3)
    path = tmp_path / "t"
    before = rows(path)
    compaction = schedule_compaction(HudiTable.open(str(path)))
    assert compaction is not None
    with pytest.raises(Crash):
        run_compaction(HudiTable.open(str(path)), compaction, on_step=crash_at("completing"))
    table = HudiTable.open(str(path))
    instant = table.timeline.get(compaction)
    assert instant is not None and instant.is_requested
    assert not list(path.rglob(f"*_{compaction}.parquet"))
    assert rows(path) == before
    assert run_compaction(table, compaction) is not None
    assert rows(path) == before
    with pytest.raises(TableServiceError, match="not a pending compaction"):
        run_compaction(HudiTable.open(str(path)), compaction)


def test_clean_removes_slices_no_retained_reader_needs(tmp_path: Path) -> None:
    client, path, _first = _compacted(tmp_path)
    upserts(client, 2, start=30)
    second = run_compaction(HudiTable.open(str(path)))
    assert second is not None
    upserts(client, 1, start=40)
    table = HudiTable.open(str(path))
    completed = [i.timestamp for i in table.timeline.completed(
        [Action.COMMIT, Action.DELTACOMMIT])]
    retained = completed[-2:]
    keep = {ts: rows(path, ts) for ts in retained}
    result = run_clean(table, {"hoodie.cleaner.commits.retained": "2"})
    assert result is not None and result.total_files_deleted > 0
    table = HudiTable.open(str(path))
    [clean] = table.timeline.completed([Action.CLEAN])
    meta = CleanMetadata.parse(table.timeline.read_content(clean))
    assert meta.earliest_commit_to_retain == retained[0]
    assert clean_plan(table.timeline, clean.timestamp).file_count() == meta.total_files_deleted
    # The slices before the first compaction are gone; every retained instant reads the same.
    assert not list(path.rglob(f"*_{completed[0]}.parquet"))
    assert {ts: rows(path, ts) for ts in retained} == keep
    assert {ts: rs_rows(path, ts) for ts in retained} == keep
    assert run_clean(HudiTable.open(str(path)), {"hoodie.cleaner.commits.retained": "2"}) is None


def test_clean_keeps_the_slices_of_retained_instants(tmp_path: Path) -> None:
    client, path, _compaction = _compacted(tmp_path)
    upserts(client, 1, start=30)
    untouched = files(path)
    # Retaining 3 commits keeps the instants before the compaction readable.
    assert run_clean(HudiTable.open(str(path)), {"hoodie.cleaner.commits.retained": "3"}) is None
    assert files(path) == untouched


@pytest.mark.parametrize("options,match", [
    ({"hoodie.cleaner.commits.retained": "0"}, "latest file slices"),
    ({"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
      "hoodie.cleaner.fileversions.retained": "0"}, "latest file slices"),
    ({"hoodie.cleaner.policy": "KEEP_SOMETHING"}, "not supported"),
])
def test_clean_settings_that_would_remove_latest_slices_are_refused(
    tmp_path: Path, options: dict[str, str], match: str,
) -> None:
    _, path, _ = _compacted(tmp_path)
    untouched = files(path)
    with pytest.raises(TableServiceError, match=match):
        run_clean(HudiTable.open(str(path)), options)
    assert files(path) == untouched


def test_keep_latest_file_versions(tmp_path: Path) -> None:
    client, path, _ = _compacted(tmp_path)
    upserts(client, 1, start=30)
    assert run_compaction(HudiTable.open(str(path))) is not None
    now = rows(path)
    options = {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
               "hoodie.cleaner.fileversions.retained": "2"}
    result = run_clean(HudiTable.open(str(path)), options)
    assert result is not None
    table = HudiTable.open(str(path))
    assert all(len(g.slices) == 2 for g in table.file_system_view().file_groups())
    assert rows(path) == now == rs_rows(path)


def test_clean_deletes_file_groups_an_old_replacecommit_replaced(tmp_path: Path) -> None:
    from hudisql.table.write.files import write_base_file

    client = mor_table(tmp_path)
    path = tmp_path / "t"
    table = HudiTable.open(str(path))
    [sf] = [s for s in table.file_slices() if s.partition_path == "city=sf"]
    # An insert overwrite of city=sf: a new file group replaces the old one.
    timeline = table.timeline
    inflight = timeline.transition_to_inflight(timeline.create_requested(Action.REPLACECOMMIT))
    records = pa.table({"_hoodie_record_key": ["k9"], "id": ["k9"], "ts": [5], "v": ["new"],
                        "city": ["sf"]})
    stat = write_base_file(table.storage, "city=sf", "new-group-0", inflight.timestamp,
                           "0-1-1", records, table.avro_schema)
    meta = CommitMetadata(extra_metadata={"schema": table.avro_schema},
                          operation_type="INSERT_OVERWRITE",
                          partition_to_replace_file_ids={"city=sf": [sf.file_id]})
    meta.add_write_stat(stat)
    timeline.complete(inflight, meta.to_json(replace=True))
    upserts(client, 1, start=30)
    now = rows(path)
    assert run_clean(HudiTable.open(str(path)), {"hoodie.cleaner.commits.retained": "1"})
    assert not [p for p in (path / "city=sf").iterdir() if p.name.startswith(sf.file_id)]
    assert rows(path) == now == rs_rows(path)


def test_clean_of_a_copy_on_write_table_keeps_retained_versions(tmp_path: Path) -> None:
    client = mor_table(tmp_path, table_type="COPY_ON_WRITE")
    done = upserts(client, 3)
    path = tmp_path / "t"
    keep = {ts: rows(path, ts) for ts in done[-2:]}
    result = run_clean(HudiTable.open(str(path)), {"hoodie.cleaner.commits.retained": "2"})
    assert result is not None and result.total_files_deleted == 2 * 2  # 2 old versions x 2
    assert {ts: rows(path, ts) for ts in done[-2:]} == keep
    assert {ts: rs_rows(path, ts) for ts in done[-2:]} == keep
    assert all(len(list(p.glob("*.parquet"))) == 2 for p in path.glob("city=*"))
