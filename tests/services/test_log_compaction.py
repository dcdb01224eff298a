"""Log compaction end to end on real tables (in-process runner, no Spark): what it writes,
that every reader reads the same rows before and after, as of every instant, and the
seed's scenarios (RFC-48) as deterministic tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hudisql.errors import TableServiceError
from hudisql.services.compaction import run_compaction, schedule_compaction
from hudisql.services.log_compaction import run_log_compaction, schedule_log_compaction
from hudisql.services.plans import show_service_plans
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Action
from hudisql.table.format.log.format import BlockType, HeaderKey
from hudisql.table.format.log.reader import decode_data_block, scan_log_file
from hudisql.table.format.service_plans import LOG_COMPACTION_EXECUTOR, compaction_plan
from hudisql.table.services.log_compaction import (
    PLANNED_INSTANTS_KEY,
    LogCompactionSettings,
    execute_slice,
    planned_instants,
)
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
    snapshots,
    upserts,
)


def _table(tmp_path: Path, rounds: int = 6) -> tuple[WriteClient, Path, list[str]]:
    client = mor_table(tmp_path)
    done = upserts(client, rounds)
    return client, tmp_path / "t", done


def _lc_blocks(path: Path, instant: str) -> list[tuple[str, object]]:
    out = []
    for log in sorted(path.rglob(".*.log.*")):
        rel = str(log.relative_to(path))
        for block in scan_log_file(HudiTable.open(str(path)).storage, rel):
            if block.instant_time == instant:
                out.append((rel, block))
    return out


def test_log_compaction_merges_the_blocks_and_every_reader_reads_the_same(
    tmp_path: Path,
) -> None:
    _, path, done = _table(tmp_path)
    before = snapshots(path)
    result = run_log_compaction(HudiTable.open(str(path)))
    assert result is not None and result.file_groups == 2
    lc = result.instant
    table = HudiTable.open(str(path))
    # The plan: Hudi's Avro plan, version 2, log file names, the executor Hudi names.
    plan = compaction_plan(table.timeline, lc, Action.LOGCOMPACTION)
    assert plan.version == 2 and plan.preserve_hoodie_metadata is True
    assert plan.strategy is not None
    assert plan.strategy.compactor_class_name == LOG_COMPACTION_EXECUTOR
    assert all(len(op.delta_file_paths) == 6 and "/" not in op.delta_file_paths[0]
               for op in plan.operations)
    assert json.loads(plan.extra_metadata[PLANNED_INSTANTS_KEY])
    # Completed as a deltacommit with operation LOG_COMPACT; requested/inflight remain.
    # Versions 8/9 (timeline layout 2) name the completed file with its completion time.
    (completed,) = [f for f in table.timeline.instant_files(lc) if f.is_completed]
    if table.properties.version < 8:
        done_name = f"{lc}.deltacommit"
    else:
        assert completed.completion_time is not None and completed.completion_time > lc
        done_name = f"{lc}_{completed.completion_time}.deltacommit"
    names = sorted(f.file_name for f in table.timeline.instant_files(lc))
    assert names == sorted([done_name, f"{lc}.logcompaction.inflight",
                            f"{lc}.logcompaction.requested"])
    meta = CommitMetadata.parse(table.timeline.read_content(lc))
    assert meta.operation_type == "LOG_COMPACT"
    # The compacted blocks: the LC's instant, the replaced instants newest first.
    blocks = _lc_blocks(path, lc)
    assert len(blocks) == 2
    for rel, block in blocks:
        assert block.header[HeaderKey.COMPACTED_BLOCK_TIMES] == ",".join(reversed(done))
        data = (path / rel).read_bytes()
        records = decode_data_block(data, block)
        # Records keep the commit time and seqno of the write that made them.
        assert set(records.column("_hoodie_commit_time").to_pylist()) == {done[-1]}
        assert all(s.startswith(done[-1] + "_")
                   for s in records.column("_hoodie_commit_seqno").to_pylist())
    after = snapshots(path)
    assert {k: v for k, v in after.items() if k != lc} == before
    # hudi-rs, as of every instant too, reads exactly hudisql's rows.
    assert rs_snapshots(path) == after
    # SHOW LOG COMPACTION: the instant, its operations, its state.
    shown = show_service_plans(table, Action.LOGCOMPACTION).to_pylist()
    assert shown == [{"timestamp": lc, "operation_size": 2, "state": "COMPLETED"}]


def test_slices_below_the_block_threshold_are_left_alone(tmp_path: Path) -> None:
    _, path, _ = _table(tmp_path, rounds=4)
    untouched = files(path)
    assert run_log_compaction(HudiTable.open(str(path))) is None
    assert files(path) == untouched
    options = {"hoodie.log.compaction.blocks.threshold": "3"}
    assert run_log_compaction(HudiTable.open(str(path)), options=options) is not None


def test_copy_on_write_table_is_refused_and_unchanged(tmp_path: Path) -> None:
    client = mor_table(tmp_path, table_type="COPY_ON_WRITE")
    upserts(client, 2)
    path = tmp_path / "t"
    untouched = files(path)
    with pytest.raises(TableServiceError, match=r"merge-on-read.*copy-on-write"):
        run_log_compaction(HudiTable.open(str(path)))
    with pytest.raises(TableServiceError, match="copy-on-write"):
        schedule_compaction(HudiTable.open(str(path)))
    assert files(path) == untouched


def test_at_an_instant_that_is_not_a_pending_plan_is_refused(tmp_path: Path) -> None:
    _, path, done = _table(tmp_path)
    untouched = files(path)
    for bad in (done[0], "20990101000000000"):
        with pytest.raises(TableServiceError, match=f"AT {bad}.*not a pending logcompaction"):
            run_log_compaction(HudiTable.open(str(path)), bad)
    assert files(path) == untouched


def test_scenario_1_writer_appends_while_log_compaction_runs(tmp_path: Path) -> None:
    client, path, _ = _table(tmp_path)
    table = HudiTable.open(str(path))
    lc = schedule_log_compaction(table)
    assert lc is not None

    def concurrent_write(event: str, instant: str) -> None:
        if event == "written":  # the compacted blocks are on disk, not yet committed
            client.upsert([rec(0, 99, "writer"), rec(1, 7, "writer-tie")])

    run_log_compaction(table, lc, on_step=concurrent_write)
    got = {r["id"]: r["v"] for r in rows(path)}
    assert got["k0"] == "writer"
    assert got["k1"] == "writer-tie"  # equal ordering value: the later write wins
    assert rows(path) == rs_rows(path)


def test_scenario_2_failed_log_compaction_is_rolled_back_at_once(tmp_path: Path) -> None:
    _, path, _ = _table(tmp_path)
    before = snapshots(path)
    with pytest.raises(Crash) as crash:
        run_log_compaction(HudiTable.open(str(path)), on_step=crash_at("completing"))
    lc = str(crash.value).split()[-1]
    table = HudiTable.open(str(path))
    assert table.timeline.pending([Action.LOGCOMPACTION]) == []  # its plan went too
    assert [i.action for i in table.timeline.completed()][-1] == Action.ROLLBACK
    # Its blocks are gone: version 6 appended them as the 7th log file of each group;
    # versions 8/9 wrote log files of their own, named after the log compaction.
    ours = "*.log.7_*" if table.properties.version < 8 else f".*_{lc}.log.*"
    assert not list(path.rglob(ours))
    assert snapshots(path) == before
    # A new log compaction plans the same blocks again.
    assert run_log_compaction(table) is not None
    assert rows(path) == before[""]


def test_scenario_2_dead_log_compaction_is_rolled_back_later(tmp_path: Path) -> None:
    _, path, _ = _table(tmp_path)
    before = snapshots(path)
    table = HudiTable.open(str(path))
    lc = schedule_log_compaction(table)
    assert lc is not None
    # A process that died after writing its blocks: inflight, blocks on disk, no heartbeat.
    table = table.reload()
    table.timeline.transition_to_inflight(table.timeline.get(lc))  # type: ignore[arg-type]
    plan = compaction_plan(table.timeline, lc, Action.LOGCOMPACTION)
    for op in plan.operations:
        execute_slice(table.storage, table.properties, table.timeline, op,
                      planned_instants(plan, op), lc, "0-9-9", table.avro_schema,
                      LogCompactionSettings())
    assert snapshots(path) == before  # pending: never read
    assert rows(path) == rs_rows(path)  # hudi-rs too: the duplicates agree
    second = run_log_compaction(HudiTable.open(str(path)))
    assert second is not None and second.instant != lc
    timeline = HudiTable.open(str(path)).timeline
    assert timeline.get(lc) is None and lc in timeline.rolled_back_instants()
    assert rows(path) == before[""]


def test_rerun_at_an_abandoned_inflight_log_compaction(tmp_path: Path) -> None:
    _, path, _ = _table(tmp_path)
    before = rows(path)
    table = HudiTable.open(str(path))
    lc = schedule_log_compaction(table)
    assert lc is not None
    table = table.reload()
    table.timeline.transition_to_inflight(table.timeline.get(lc))  # type: ignore[arg-type]
    result = run_log_compaction(table, lc)
    assert result is not None and result.instant == lc
    assert rows(path) == before


@pytest.mark.parametrize(("block_format", "kind"), [("parquet", BlockType.PARQUET_DATA),
                                                    ("avro", BlockType.AVRO_DATA)])
def test_scenario_3_merged_block_over_the_block_size_is_split(
    tmp_path: Path, block_format: str, kind: BlockType
) -> None:
    client = mor_table(tmp_path, keys=40)
    upserts(client, 5, keys=40)
    path = tmp_path / "t"
    before = rows(path)
    options = {"hoodie.logfile.data.block.max.size": "1200" if kind == BlockType.AVRO_DATA
               else "2600", "hoodie.logfile.data.block.format": block_format}
    result = run_log_compaction(HudiTable.open(str(path)), options=options)
    assert result is not None
    blocks = _lc_blocks(path, result.instant)
    data = [b for _, b in blocks if b.block_type == kind]
    assert len(data) > 2 * 2  # more than one block per file group
    times = {b.header[HeaderKey.COMPACTED_BLOCK_TIMES] for _, b in blocks}
    assert len(times) == 1
    assert rows(path) == before
    assert rows(path) == rs_rows(path)


def test_scenario_4_compaction_of_the_same_file_groups_alongside(tmp_path: Path) -> None:
    _, path, _ = _table(tmp_path)
    before = rows(path)
    table = HudiTable.open(str(path))
    lc = schedule_log_compaction(table)
    compaction = schedule_compaction(table)  # a pending log compaction does not exclude
    assert lc is not None and compaction is not None
    assert run_log_compaction(HudiTable.open(str(path)), lc) is not None
    done = run_compaction(HudiTable.open(str(path)), compaction)
    assert done is not None and done.file_groups == 2
    timeline = HudiTable.open(str(path)).timeline
    assert timeline.is_completed(lc) and timeline.is_completed(compaction)
    assert rows(path) == before
    assert rows(path) == rs_rows(path)


def _rounds(client: WriteClient, rounds: int, start: int) -> list[str]:
    """Upserts touching 4 different keys of 40 each round (blocks grow when compacted)."""
    return [client.upsert([rec(k, start + r, f"r{start + r}") for k in
                           range(4 * (r % 10), 4 * (r % 10) + 4)]).instant_time
            for r in range(rounds)]


def test_nested_log_compaction_and_large_blocks_left_alone(tmp_path: Path) -> None:
    client = mor_table(tmp_path, keys=40)
    path = tmp_path / "t"
    _rounds(client, 6, start=2)
    first = run_log_compaction(HudiTable.open(str(path)))
    assert first is not None
    more = _rounds(client, 5, start=20)
    before = snapshots(path)
    second = run_log_compaction(HudiTable.open(str(path)))
    assert second is not None
    times = {b.header[HeaderKey.COMPACTED_BLOCK_TIMES] for _, b in _lc_blocks(path, second.instant)}
    assert times == {",".join([*reversed(more), first.instant])}  # nested: it compacts the first
    assert {k: v for k, v in snapshots(path).items() if k != second.instant} == before
    # The second compacted block is large next to a 4-key block: it is not rewritten again.
    small = max(b.length for _, b in _lc_blocks(path, more[0]))
    big = min(b.length for _, b in _lc_blocks(path, second.instant))
    assert big > small
    more = _rounds(client, 5, start=40)
    before = rows(path)
    options = {"hudisql.log.compaction.small.block.size": str((small + big) // 2)}
    third = run_log_compaction(HudiTable.open(str(path)), options=options)
    assert third is not None
    times = {b.header[HeaderKey.COMPACTED_BLOCK_TIMES] for _, b in _lc_blocks(path, third.instant)}
    assert times == {",".join(reversed(more))}
    assert rows(path) == before
    assert rows(path) == rs_rows(path)


def test_deletes_are_compacted_into_a_delete_block_of_their_own(tmp_path: Path) -> None:
    client, path, _ = _table(tmp_path)
    client.delete(["k0", "k3"])
    client.upsert([rec(0, 50, "back")])
    before = snapshots(path)
    result = run_log_compaction(HudiTable.open(str(path)))
    assert result is not None
    kinds = [b.block_type for _, b in _lc_blocks(path, result.instant)]
    assert BlockType.DELETE in kinds and BlockType.PARQUET_DATA in kinds
    assert {k: v for k, v in snapshots(path).items() if k != result.instant} == before
    assert {r["id"] for r in rows(path)} == {"k0", "k1", "k2", "k4", "k5"}


def test_a_log_compaction_never_conflicts_with_a_write(tmp_path: Path) -> None:
    _client, path, _ = _table(tmp_path)

    def log_compact_meanwhile(event: str, detail: str) -> None:
        if event == "validating":  # the write's log file is on disk, its commit not yet made
            assert run_log_compaction(HudiTable.open(str(path))) is not None

    writer = WriteClient(HudiTable.open(str(path)), on_step=log_compact_meanwhile)
    writer.upsert([rec(0, 80, "w"), rec(1, 80, "w")])
    got = {r["id"]: r["v"] for r in rows(path)}
    assert (got["k0"], got["k1"]) == ("w", "w")
    assert rows(path) == rs_rows(path)


@pytest.mark.parametrize("precombine", ["ts", None])
def test_hudi_rs_reads_exactly_hudisqls_rows_around_log_compaction(
    tmp_path: Path, precombine: str | None,
) -> None:
    # Event-time and commit-time ordering; deletes, re-inserts with lower ordering values,
    # and a writer appending while the log compaction runs.
    client = mor_table(tmp_path, precombine=precombine)
    path = tmp_path / "t"
    upserts(client, 3)
    client.delete(["k0", "k1"])
    client.upsert([rec(0, 1, "back-low"), rec(2, 9, "hi")])
    client.upsert([rec(2, 3, "lower"), rec(3, 4, "d")])
    lc = schedule_log_compaction(HudiTable.open(str(path)))
    assert lc is not None

    def concurrent_write(event: str, instant: str) -> None:
        if event == "written":
            client.delete(["k3"])
            client.upsert([rec(1, 2, "w-back"), rec(4, 4, "w")])

    run_log_compaction(HudiTable.open(str(path)), lc, on_step=concurrent_write)
    assert rs_snapshots(path) == snapshots(path)
    got = {r["id"]: r["v"] for r in rows(path)}
    assert "k3" not in got and got["k1"] == "w-back" and got["k4"] == "w"
    assert got["k2"] == ("hi" if precombine else "lower")


def test_a_live_run_is_not_run_twice(tmp_path: Path) -> None:
    from hudisql.txn.heartbeat import Heartbeat

    _, path, _ = _table(tmp_path)
    table = HudiTable.open(str(path))
    lc = schedule_log_compaction(table)
    assert lc is not None
    table = table.reload()
    table.timeline.transition_to_inflight(table.timeline.get(lc))  # type: ignore[arg-type]
    untouched = files(path)
    with Heartbeat(table.storage, lc):  # another process runs it and is alive
        with pytest.raises(TableServiceError, match="another process is running it"):
            run_log_compaction(HudiTable.open(str(path)), lc)
        assert run_log_compaction(HudiTable.open(str(path))) is None  # its groups are busy
        assert {k: v for k, v in files(path).items() if ".heartbeat" not in k} == {
            k: v for k, v in untouched.items() if ".heartbeat" not in k}


def test_parquet_compacted_blocks_keep_every_column_type_for_both_readers(
    tmp_path: Path,
) -> None:
    """Log compaction's parquet data blocks (decoded by Arrow in one pass) hold dates,
    timestamps, decimals, floats, booleans, bytes and lists as the Avro blocks did: hudisql
    and hudi-rs read the same rows before and after. A block format log compaction does not
    write is refused before anything is planned."""
    import datetime as dt
    import decimal

    import pyarrow as pa
    from hudi import HudiTable as RsTable

    import hudisql
    from hudisql.table.write.create import create_table

    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("d", pa.date32()),
                        ("t", pa.timestamp("us", tz="UTC")), ("dec", pa.decimal128(10, 2)),
                        ("f", pa.float32()), ("b", pa.bool_()), ("bin", pa.binary()),
                        ("city", pa.string()), ("arr", pa.list_(pa.int32()))])
    path = tmp_path / "t"
    client = WriteClient(create_table(path, "t", schema, "id", ["city"], "ts",
                                      "MERGE_ON_READ"))

    def batch(n: int, ts: int) -> pa.Table:
        return pa.Table.from_pylist([{
            "id": f"k{i}", "ts": ts, "d": dt.date(2024, 1, 1 + i),
            "t": dt.datetime(2024, 1, 1, i, tzinfo=dt.UTC),
            "dec": decimal.Decimal(f"{i}.{ts:02d}"), "f": i / 3, "b": i % 2 == 0,
            "bin": bytes([i, ts]), "city": "sf" if i % 2 else "la", "arr": [i, ts]}
            for i in range(n)], schema=schema)

    client.insert(batch(6, 1))
    for ts in range(2, 8):
        client.upsert(batch(4, ts))

    def both() -> list[dict[str, object]]:
        ours = hudisql.read_table(str(path)).sort_by("_hoodie_record_key").to_pylist()
        theirs = pa.Table.from_batches(RsTable(str(path)).read()).sort_by(
            "_hoodie_record_key").to_pylist()
        assert ours == theirs
        return ours

    before = both()
    with pytest.raises(TableServiceError, match="orc"):
        run_log_compaction(HudiTable.open(str(path)),
                           options={"hoodie.logfile.data.block.format": "orc"})
    result = run_log_compaction(HudiTable.open(str(path)))
    assert result is not None
    kinds = {b.block_type for s in result.write_stats
             for b in scan_log_file(HudiTable.open(str(path)).storage, s.path)}
    assert kinds == {BlockType.PARQUET_DATA}
    assert both() == before
