"""``writeStream.format("hudi")`` exactly once, with a real checkpoint folder and Spark's own
restarts: a replayed batch (its commit marker deleted) is skipped, a failure between the
table's commit and Spark's (here an asynchronous compaction's, reported by the batch after
it) is skipped on restart, a reset checkpoint with the same identifier
is refused, and a driver SIGKILLed mid-batch leaves an instant the next run rolls back before
it writes the batch once. Every table written equals the batch write of the same rows (also
read through hudi-rs), with one completed write instant per batch id.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import signal
import subprocess
import sys
import time
from pathlib import Path

import hudi
import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException

from hudisql.table.format.filenames import LogFileName
from hudisql.table.format.instant import WRITE_ACTIONS
from hudisql.table.format.service_plans import compaction_plan
from hudisql.table.table import HudiTable
from hudisql.txn.stream_checkpoint import SINK_CHECKPOINT_KEY
from tests.fixtures import TEST_JVM_OPTS

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "ts long, id string, v double, city string"
#: Three source files, one micro-batch each: keys overlap (upserts), ts grows per file.
FILES = [[(i, f"k{j}", float(10 * i + j), "sf" if j % 2 else "la") for j in range(i, i + 3)]
         for i in range(3)]


def _options(table_type: str = "MERGE_ON_READ") -> dict[str, str]:
    return {"hoodie.table.name": "events", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "city",
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.streaming.retry.interval.ms": "0"}


def _source(spark, root: Path, files: list[list[tuple[object, ...]]]):  # type: ignore[no-untyped-def]
    src = root / "src"
    for i, rows in enumerate(files):
        spark.createDataFrame(rows, SCHEMA).coalesce(1).write.parquet(str(src / f"f{i}"))
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(
        str(src / "*"))


def _run(stream, table: Path, checkpoint: Path, **extra: str) -> None:  # type: ignore[no-untyped-def]
    query = (stream.writeStream.format("hudi").options(**_options(), **extra)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
             .start(str(table)))
    query.awaitTermination()


def _batches(path: Path) -> list[tuple[str, int]]:
    """(instant, batch id) of every completed write instant, in timeline order."""
    table = HudiTable.open(str(path))
    out = []
    for instant in table.timeline.completed(WRITE_ACTIONS):
        text = table.timeline.commit_metadata(instant).extra_metadata.get(SINK_CHECKPOINT_KEY)
        if text:
            out.append((instant.timestamp, int(json.loads(text)["default_single_writer"])))
    return out


def _expected(files: list[list[tuple[object, ...]]]) -> list[tuple[object, ...]]:
    latest: dict[object, tuple[object, ...]] = {}
    for rows in files:
        for row in rows:
            latest[row[1]] = row
    return sorted((r[1], r[0], r[2], r[3]) for r in latest.values())


def _rows(spark, path: Path) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    got = spark.read.format("hudi").load(str(path)).select("id", "ts", "v", "city").collect()
    return sorted(tuple(r) for r in got)


def _rs_rows(path: Path) -> list[tuple[object, ...]]:
    table = pa.Table.from_batches(hudi.HudiTable(str(path)).read())
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "ts", "v", "city")),
                      strict=True))


@pytest.mark.slow
def test_replayed_batch_is_skipped_and_reset_checkpoint_refused(
        spark, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    stream = _source(spark, tmp_path, FILES)
    table, checkpoint = tmp_path / "events", tmp_path / "ck"
    _run(stream, table, checkpoint)
    assert [b for _, b in _batches(table)] == [0, 1, 2]
    # (a) Spark lost batch 2's commit marker: the restart replays it, the sink skips it.
    for marker in (checkpoint / "commits" / "2", checkpoint / "commits" / ".2.crc"):
        marker.unlink(missing_ok=True)
    with caplog.at_level(logging.WARNING, logger="hudisql.write.stream_sink"):
        _run(stream, table, checkpoint)
    assert (checkpoint / "commits" / "2").exists()  # Spark did run batch 2 again
    assert "batch 2 is committed already" in caplog.text
    assert [b for _, b in _batches(table)] == [0, 1, 2]
    assert _rows(spark, table) == _expected(FILES) == _rs_rows(table)
    # (d) a fresh checkpoint with the same identifier starts again at batch 0: refused.
    before = sorted(p.name for p in (table / ".hoodie").iterdir())
    with pytest.raises(StreamingQueryException, match="batch 0 is older than batch 2"):
        _run(stream, table, tmp_path / "ck-reset")
    assert sorted(p.name for p in (table / ".hoodie").iterdir()) == before


_KILLED_DRIVER = """
import sys, time
sys.path.insert(0, sys.argv[1])
import hudisql
from tests.write.test_streaming_sink import SCHEMA, _options
s = hudisql.connect(warehouse=sys.argv[2] + "/wh", conf={"spark.master": "local[1]"})
marker = sys.argv[2] + "/inflight"
def hold(event, instant):
    if event == "inflight":
        open(marker, "w").write(instant)
        time.sleep(600)  # killed here, mid-batch, by the test
s.router.on_write_step = hold
stream = (s.spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
          .parquet(sys.argv[2] + "/src/*"))
(stream.writeStream.format("hudi").options(**_options(), **{
    "hoodie.client.heartbeat.interval_in_ms": "500",
    "hoodie.client.heartbeat.tolerable.misses": "1"})
 .option("checkpointLocation", sys.argv[2] + "/ck").trigger(availableNow=True)
 .start(sys.argv[2] + "/events").awaitTermination())
"""


@pytest.mark.slow
def test_driver_killed_mid_batch_is_rolled_back_and_written_once(
        spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    files = FILES[:1]
    stream = _source(spark, tmp_path, files)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_SUBMIT_OPTS": TEST_JVM_OPTS,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", _KILLED_DRIVER, str(REPO), str(tmp_path)],
                             env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
    marker = tmp_path / "inflight"
    deadline = time.monotonic() + 300
    while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists(), (child.stderr.read() if child.stderr else b"")[-3000:]
    os.killpg(child.pid, signal.SIGKILL)  # (c) the driver dies with batch 0's instant inflight
    child.wait()
    killed = marker.read_text()
    table = HudiTable.open(str(tmp_path / "events"))
    assert [i.timestamp for i in table.timeline.pending()] == [killed]
    # The killed writer's heartbeat expires (0.5 s x 1 miss); wait for that, not longer.
    beat = tmp_path / "events" / ".hoodie" / ".heartbeat" / killed
    while beat.exists() and time.time() - beat.stat().st_mtime < 1.5:
        time.sleep(0.1)
    _run(stream, tmp_path / "events", tmp_path / "ck",
         **{"hoodie.client.heartbeat.interval_in_ms": "500",
            "hoodie.client.heartbeat.tolerable.misses": "1"})
    table = HudiTable.open(str(tmp_path / "events"))
    assert killed in table.timeline.rolled_back_instants()
    assert not table.timeline.pending()
    assert [b for _, b in _batches(tmp_path / "events")] == [0]
    assert _rows(spark, tmp_path / "events") == _expected(files) == _rs_rows(tmp_path / "events")


@pytest.mark.slow
def test_to_table_update_and_complete_output_modes(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import hudisql
    from hudisql.errors import WriteError

    session = hudisql.connect(spark, warehouse=str(tmp_path / "wh"))
    try:
        name = f"streamed_cow_{os.getpid()}"
        session.sql(f"CREATE TABLE {name} (ts BIGINT, id STRING, v DOUBLE, city STRING) "
                    "USING hudi TBLPROPERTIES (type = 'cow', primaryKey = 'id', "
                    "preCombineField = 'ts')")
        stream = _source(spark, tmp_path, FILES)
        # Output mode update upserts the updated rows by key, into a catalog table by name.
        (stream.writeStream.format("hudi").outputMode("update")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True)
         .toTable(name).awaitTermination())
        path = Path(session.table(name).path)
        assert [b for _, b in _batches(path)] == [0, 1, 2]
        assert _rows(spark, path) == _expected(FILES) == _rs_rows(path)
        # A partitionBy that contradicts the table's partitioning stops the query, unwritten.
        before = _batches(path)
        with pytest.raises(StreamingQueryException,
                           match=r"partitionBy\('city'\) differs from the table's"):
            (stream.writeStream.format("hudi").partitionBy("city")
             .option("hoodie.datasource.write.streaming.checkpoint.identifier", "by_city")
             .option("checkpointLocation", str(tmp_path / "ck-part")).trigger(availableNow=True)
             .toTable(name).awaitTermination())
        assert _batches(path) == before
        # Output mode complete: each batch's result replaces the table's rows; partitionBy
        # partitions the new table as the partition path option would.
        counts = (stream.groupBy("city").count().writeStream.format("hudi").partitionBy("city")
                  .outputMode("complete").options(**{
                      "hoodie.table.name": "counts",
                      "hoodie.datasource.write.recordkey.field": "city"})
                  .option("checkpointLocation", str(tmp_path / "ck-counts"))
                  .trigger(availableNow=True).start(str(tmp_path / "counts")))
        counts.awaitTermination()
        got = spark.read.format("hudi").load(str(tmp_path / "counts")).select("city", "count")
        assert sorted(tuple(r) for r in got.collect()) == [("la", 5), ("sf", 4)]
        table = HudiTable.open(str(tmp_path / "counts"))
        assert table.properties.partition_fields == ["city"]
        assert (tmp_path / "counts" / "la").is_dir()
        assert {i.action for i in table.timeline.completed(WRITE_ACTIONS)} == {"replacecommit"}
        with pytest.raises(WriteError, match="output mode update upserts"):
            (stream.writeStream.format("hudi").outputMode("update")
             .option("hoodie.datasource.write.operation", "insert")
             .option("checkpointLocation", str(tmp_path / "ck-bad")).toTable(name))
    finally:
        session.close()


@pytest.mark.slow
def test_a_failed_attempt_is_rolled_back_and_retried(
        spark, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    import hudisql

    session = hudisql.connect(spark)  # the newest session over spark: the sink's
    failed: list[str] = []

    def fail_once(event: str, instant: str) -> None:
        if event == "written" and not failed:
            failed.append(instant)
            raise RuntimeError(f"injected failure of {instant} before its commit")

    session.router.on_write_step = fail_once  # type: ignore[union-attr]
    try:
        stream = _source(spark, tmp_path, FILES[:1])
        with caplog.at_level(logging.WARNING, logger="hudisql.write.stream_sink"):
            _run(stream, tmp_path / "events", tmp_path / "ck")
    finally:
        session.close()
    assert "batch 0 failed on attempt 1 of 3" in caplog.text
    table = HudiTable.open(str(tmp_path / "events"))
    assert failed and failed[0] in table.timeline.rolled_back_instants()
    assert [b for _, b in _batches(tmp_path / "events")] == [0]
    assert _rows(spark, tmp_path / "events") == _expected(FILES[:1])


#: Five source files, one micro-batch each, for the asynchronous compaction.
FILES5 = [[(i, f"k{j}", float(10 * i + j), "sf" if j % 2 else "la") for j in range(i, i + 3)]
          for i in range(5)]


@pytest.mark.slow
def test_async_compaction_runs_beside_the_batches_and_its_failure_stops_the_query(
        spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Hudi's async compaction: planned after batch 1, held at its last step while batch 2
    commits (its logs go on the compaction's new slice), then completed with every file
    group; the next one fails, and batch 4, committed meanwhile, stops the query with the
    cause before Spark's commit: (b) the restart skips batch 4 and runs the compaction
    again."""
    import threading

    import hudisql
    from hudisql.write import stream_compaction

    session = hudisql.connect(spark)  # the newest session over spark: the sink's
    path = tmp_path / "events"
    seen: dict[str, object] = {}
    batch2_done, first_done, batch4_started, second_failed, second_done = (
        threading.Event(), threading.Event(), threading.Event(), threading.Event(),
        threading.Event())
    writes: list[str] = []
    compactions: list[str] = []

    def on_write(event: str, instant: str) -> None:
        if event == "completed":
            writes.append(instant)
            if len(writes) == 3:
                batch2_done.set()
        elif event == "written" and len(writes) == 3:  # batch 3 plans the next compaction
            assert first_done.wait(120)
        elif event == "inflight" and len(writes) == 4:
            batch4_started.set()
        elif event == "written" and len(writes) == 4:  # batch 4 reports the failure
            assert second_failed.wait(120)

    def on_compaction(event: str, instant: str) -> None:
        if event == "inflight" and instant not in compactions:
            compactions.append(instant)
            if len(compactions) == 2:  # fails while batch 4 writes
                assert batch4_started.wait(120)
                raise RuntimeError(f"injected failure of compaction {instant}")
        elif event == "written" and instant == compactions[0]:
            seen["held"] = batch2_done.wait(120)  # batch 2 commits while we wait
            timeline = HudiTable.open(str(path)).timeline
            seen["pending"] = [i.timestamp for i in timeline.pending()]
        elif event == "async_done":
            (first_done if instant == compactions[0] else second_done).set()
        elif event == "async_failed":
            second_failed.set()

    session.router.on_write_step = on_write  # type: ignore[union-attr]
    stream_compaction.set_step_hook(on_compaction)
    services = {"hoodie.datasource.compaction.async.enable": "true",
                "hoodie.compact.inline.max.delta.commits": "2"}
    try:
        stream = _source(spark, tmp_path, FILES5)
        with pytest.raises(StreamingQueryException,
                           match=r"asynchronous compaction .* failed .*injected failure"):
            _run(stream, path, tmp_path / "ck", **services)
        assert seen == {"held": True, "pending": [compactions[0]]}
        assert not (tmp_path / "ck" / "commits" / "4").exists()
        first, second = compactions
        table = HudiTable.open(str(path))
        # Batch 2 (started after the plan) wrote on the new slice of the planned file
        # groups; the compaction kept them all (its base files do not hide those logs). At
        # version 8/9 a log is named after the deltacommit that wrote it and belongs to the
        # slice of the latest base instant at or before its completion; its write stat's
        # prevCommit is that deltacommit, as Hudi 1.x's append handle records it (version
        # 6: the slice's base instant, in both the name and prevCommit).
        assert table.properties.version == 9  # the default of new tables, as Hudi 1.1's
        batch2 = table.timeline.commit_metadata(table.timeline.get(writes[2]))
        logs: dict[str, set[str]] = {}
        for stat in batch2.write_stats():
            if LogFileName.parse(posixpath.basename(stat.path or "")) is not None:
                logs.setdefault(stat.file_id or "", set()).update(stat.log_files or ())
        planned = {op.file_id for op in compaction_plan(table.timeline, first).operations}
        on_new = {f: names for f, names in logs.items() if f in planned}
        compacted = table.timeline.commit_metadata(table.timeline.get(first))
        assert writes[2] > first and on_new
        assert set(on_new) <= {s.file_id for s in compacted.write_stats()}
        assert {s.prev_commit for s in batch2.write_stats() if s.file_id in logs} == {writes[2]}
        view = table.file_system_view(as_of=writes[2])
        slices = {s.file_id: (s.base_instant, s.base_file is not None,
                              {log.name for log in s.log_files})
                  for s in view.latest_file_slices() if s.file_id in on_new}
        assert slices == {f: (first, True, names) for f, names in on_new.items()}
        assert [i.timestamp for i in table.timeline.pending()] == [second]
        assert table.timeline.get(second).is_requested  # reverted, its plan kept
        # Batch 4 committed (on the pending compaction's new slice), read exactly meanwhile.
        assert [b for _, b in _batches(path)] == [0, 1, 2, 3, 4]
        assert _rows(spark, path) == _expected(FILES5)
        # The restart skips the replayed batch 4 and runs the compaction again.
        _run(stream, path, tmp_path / "ck", **services)
        assert second_done.wait(120)
    finally:
        stream_compaction.set_step_hook(None)
        session.close()
    table = HudiTable.open(str(path))
    assert not table.timeline.pending()
    assert [i.timestamp for i in table.timeline.completed(["commit"])] == [first, second]
    assert [b for _, b in _batches(path)] == [0, 1, 2, 3, 4]
    assert _rows(spark, path) == _expected(FILES5) == _rs_rows(path)
