"""Failures of Spark writes: task retries, concurrent writers, a killed driver."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from hudisql.errors import CommitConflictError
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.format.filenames import BaseFileName
from hudisql.txn.heartbeat import HEARTBEAT_INTERVAL_MS
from hudisql.write.pipeline import FAULT_AFTER_FILES, SparkWriter
from tests.services.indexing import assert_exact

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ROWS = [("u1", 1, "rider-A", 10.0, "sf"), ("u2", 1, "rider-B", 20.0, "sf"),
        ("u3", 1, "rider-C", 30.0, "la"), ("u4", 1, "rider-D", 40.0, "ny")]
SCHEMA = "uuid string, ts long, rider string, fare double, city string"


def _rows(handle: HudiTableHandle) -> list[tuple[Any, ...]]:
    df = handle.read().select("uuid", "ts", "rider", "fare", "city")
    return sorted(tuple(r) for r in df.collect())


def _oracle(handle: HudiTableHandle) -> list[tuple[Any, ...]]:
    table = pa.Table.from_batches(hudi.HudiTable(handle.path).read())
    if not table.num_rows:
        return []
    return sorted(tuple(r.values()) for r in
                  table.select(["uuid", "ts", "rider", "fare", "city"]).to_pylist())


def _child(brief: dict[str, Any], **popen: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "tests.write.spark_child", json.dumps(brief)],
                            cwd=REPO, env=env, text=True, stdout=subprocess.PIPE, **popen)


def run_child(brief: dict[str, Any]) -> dict[str, Any]:
    """Run a ``spark_child`` write to its end and return its RESULT line (fails the test,
    with the child's stderr, when the child fails)."""
    proc = _child(brief, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(
        next(x for x in out.splitlines() if x.startswith("RESULT"))[7:])
    return result


def _base_files(path: str) -> set[str]:
    return {str(p.relative_to(path)) for p in Path(path).rglob("*.parquet")
            if ".hoodie" not in p.parts}


def test_task_retries_commit_exactly_once(new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("MERGE_ON_READ")
    brief = {"path": handle.path, "master": "local[2,4]", "rows": ROWS, "operation": "insert",
             "options": {FAULT_AFTER_FILES: "1"}}
    result = run_child(brief)
    assert _rows(handle) == sorted(ROWS)
    assert _oracle(handle) == sorted(ROWS)
    timeline = handle.core().timeline
    assert [i.timestamp for i in timeline.completed()] == [result["instant"]]
    assert not timeline.pending()
    # Base files written by the failed first attempts were removed at commit.
    assert _base_files(handle.path) == set(result["files"])
    assert all(BaseFileName.parse(Path(f).name) for f in result["files"])


def test_task_retries_of_log_writes_keep_the_indexes_exact(
        new_table: Callable[..., HudiTableHandle]) -> None:
    """Log writes to a table with a record index, a secondary index and column stats under
    real task retries (``local[2,4]``, every task's first attempt dies after one file
    group): the retry computes the groups' index changes and log stats again, against the
    groups as they were (the dead attempt's logs are not theirs), and the metadata table
    is exact after the commit."""
    handle = new_table("MERGE_ON_READ")
    handle.insert(handle.session.spark.createDataFrame(ROWS, SCHEMA))
    handle.indexes.create("record_index", ["uuid"])
    handle.indexes.create("idx_rider", ["rider"])
    handle.indexes.create("stats", ["fare", "ts"], using="column_stats")
    # Updates only (each group gets a log file): u1 changes rider, u2 loses on ts, u3's
    # fare changes; u4 is deleted by its marker.
    updates = [("u1", 2, "rider-Z", 11.0, "sf", False), ("u2", 0, "rider-Y", 0.0, "sf", False),
               ("u3", 2, "rider-C", 31.0, "la", False), ("u4", 2, "rider-D", 40.0, "ny", True)]
    brief = {"path": handle.path, "master": "local[2,4]", "rows": updates,
             "operation": "upsert", "options": {FAULT_AFTER_FILES: "1"}}
    result = run_child(brief)
    assert all(".log." in Path(f).name for f in result["files"])
    expected = sorted([("u1", 2, "rider-Z", 11.0, "sf"), ROWS[1], ("u3", 2, "rider-C", 31.0, "la")])
    assert _rows(handle) == expected
    assert _oracle(handle) == expected
    assert_exact(handle.path)


def test_overlapping_writers_one_commits_the_other_fails_cleanly(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("MERGE_ON_READ")
    spark = hudi_session.spark
    handle.insert(spark.createDataFrame(ROWS, SCHEMA))
    files_before = {str(p) for p in Path(handle.path).rglob("*") if ".hoodie" not in p.parts}
    late: dict[str, str] = {}

    def meanwhile(event: str, instant: str) -> None:
        # Writer A has written its files; writer B commits an update of the same file group.
        if event == "written":
            late["a"] = instant
            late["b"] = handle.upsert(spark.createDataFrame(
                [("u1", 3, "rider-A", 12.0, "sf")], SCHEMA)).instant_time

    writer_a = SparkWriter(spark, handle.path, {}, meanwhile)
    with pytest.raises(CommitConflictError) as excinfo:
        writer_a.write(spark.createDataFrame([("u2", 2, "rider-B", 22.0, "sf")], SCHEMA),
                       "upsert")
    message = str(excinfo.value)
    assert late["a"] in message and late["b"] in message and "city=sf/" in message
    assert _rows(handle) == sorted([("u1", 3, "rider-A", 12.0, "sf"), *ROWS[1:]])
    timeline = handle.core().timeline
    assert not timeline.pending()
    assert late["a"] in timeline.rolled_back_instants()
    files_after = {str(p) for p in Path(handle.path).rglob("*") if ".hoodie" not in p.parts}
    b_files = {f for f in files_after - files_before}
    assert len(b_files) == 1  # only writer B's log file; writer A's is gone


def test_disjoint_writers_both_commit(hudi_session: HudiSession,
                                     new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("COPY_ON_WRITE")
    spark = hudi_session.spark
    handle.insert(spark.createDataFrame(ROWS, SCHEMA))

    def meanwhile(event: str, instant: str) -> None:
        if event == "written":
            handle.upsert(spark.createDataFrame([("u3", 2, "rider-C", 33.0, "la")], SCHEMA))

    SparkWriter(spark, handle.path, {}, meanwhile).write(
        spark.createDataFrame([("u4", 2, "rider-D", 44.0, "ny")], SCHEMA), "upsert")
    expected = sorted([*ROWS[:2], ("u3", 2, "rider-C", 33.0, "la"),
                       ("u4", 2, "rider-D", 44.0, "ny")])
    assert _rows(handle) == expected
    assert _oracle(handle) == expected
    assert len(handle.core().timeline.completed()) == 3


def test_killed_driver_is_rolled_back_by_the_next_writer(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("MERGE_ON_READ")
    spark = hudi_session.spark
    handle.insert(spark.createDataFrame(ROWS, SCHEMA))
    brief = {"path": handle.path, "rows": [("u1", 5, "ghost", 0.0, "sf"),
                                           ("u9", 5, "ghost", 0.0, "la")],
             "operation": "upsert", "block_at": "written"}
    proc = _child(brief, stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("BLOCKED "), line
    dead = line.split()[1]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(60)
    assert handle.core().timeline.get(dead) is not None
    assert _rows(handle) == sorted(ROWS)  # nobody sees the dead writer's rows
    assert _oracle(handle) == sorted(ROWS)
    # The next writer: its heartbeat settings make the dead writer's beat long expired.
    handle.upsert(spark.createDataFrame([("u2", 2, "rider-B", 21.0, "sf")], SCHEMA),
                  **{HEARTBEAT_INTERVAL_MS: "1"})
    timeline = handle.core().timeline
    assert timeline.get(dead) is None
    assert dead in timeline.rolled_back_instants()
    expected = sorted([ROWS[0], ("u2", 2, "rider-B", 21.0, "sf"), *ROWS[2:]])
    assert _rows(handle) == expected
    assert _oracle(handle) == expected
