"""Real Spark task retries leave duplicate log blocks; reads never merge them twice.

A driver process of its own (``tests.write.spark_child``, master ``local[2,4]`` so a failed
task is retried) upserts into a MOR table with an injected failure: the first attempt of
every write task fails right after writing its first file group's log file, so that
attempt's log blocks stay on storage next to the retry's. The commit keeps them (only base
files of failed attempts are removed), so the table on disk is what a crash before any
clean-up leaves too (the commit's removal of spurious log files is switched off here).
``show_log_blocks`` must mark exactly the first attempts' blocks spurious, under rule (a)
and with rule (a) switched off, and the read must be exact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from hudisql.table.read.reconcile import show_log_blocks
from hudisql.table.table import HudiTable
from hudisql.txn.transaction import REMOVE_SPURIOUS_LOG_FILES
from hudisql.txn.writer import WriteClient, create_table
from hudisql.write.pipeline import FAULT_AFTER_FILES

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("rider", pa.string()),
                    ("fare", pa.float64()), ("city", pa.string())])
CITIES = ("sf", "la", "ny")
INSERTS = [(f"u{i}", 1, f"rider-{i}", 10.0 * i, CITIES[i % 3]) for i in range(6)]
UPDATES = [(u, 2, r, fare + 1.5, city) for u, _, r, fare, city in INSERTS]


def _upsert_with_retries(path: Path) -> str:
    brief = {"path": str(path), "master": "local[2,4]", "rows": UPDATES,
             "operation": "upsert",
             "options": {FAULT_AFTER_FILES: "1", REMOVE_SPURIOUS_LOG_FILES: "false"}}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.write.spark_child", json.dumps(brief)], cwd=REPO,
        env=env, text=True, capture_output=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return str(json.loads(line[len("RESULT "):])["instant"])


def test_spark_task_retries_leave_spurious_blocks_that_are_never_merged(tmp_path: Path) -> None:
    path = tmp_path / "trips"
    create_table(str(path), "trips", SCHEMA, "uuid", "city", "ts", "MERGE_ON_READ")
    WriteClient(HudiTable.open(path)).insert(pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r, strict=True)) for r in INSERTS], schema=SCHEMA))
    instant = _upsert_with_retries(path)

    table = HudiTable.open(path)
    rows = sorted(tuple(r.values()) for r in table.read(columns=SCHEMA.names).to_pylist())
    assert rows == sorted(UPDATES)
    for mode in ("full", "sequence"):
        shown = [r for r in show_log_blocks(table, mode=mode).to_pylist()
                 if r["instant_time"] == instant]
        spurious = [r for r in shown if r["verdict"] == "spurious"]
        valid = [r for r in shown if r["verdict"] == "valid"]
        # Every write task failed once after one file: its first attempt's blocks are there.
        assert spurious, mode
        assert all(r["attempt"] == 0 and r["sequence"] == 0 for r in spurious), mode
        assert all(r["attempt"] >= 1 for r in valid), mode
        # Each updated file group merges exactly one attempt: the committed retry.
        assert sorted(r["file_id"] for r in valid) == sorted({r["file_id"] for r in shown})
        assert len(valid) == len(CITIES), mode
        assert len(spurious) + len(valid) == len(shown), mode
    # Without reconciliation the duplicates would be merged: both attempts' blocks count.
    off = [r for r in show_log_blocks(table, mode="off").to_pylist()
           if r["instant_time"] == instant]
    assert sum(r["verdict"] == "valid" for r in off) == len(off) > len(CITIES)
