"""Real Spark task retries under expression writes: ``c = c + 1`` is applied exactly once.

A driver process of its own (this module run as ``python -m``, master ``local[2,4]`` so a
failed task is retried) writes an expression upsert (``c`` add 1) with the pipeline's
injected failure: the first attempt of every write task fails right after writing its
k-th file group's log file, so its blocks stay on storage next to the retry's.

- One file group, k = 1: the first attempt finishes all its writes, then fails (as a
  speculative copy that lost would): two complete attempts with equal sequences.
- Four file groups, k = 1: a task holding several groups fails part-way; its first group
  was written by both attempts, the others by the retry only.

A task writes each file slice as one log file created atomically, so a first attempt's
slice is either complete or absent: rule (b) is right here (the later equal run is the
committed retry). Where only rule (a) is right (the earlier of two complete attempts was
committed, with different data) is shown on crafted tables in
``tests/table/test_expressions.py``. The commit deletes the spurious files after
completing; the third test kills the driver between completing and deleting, and the
table still reads exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudisql.table.read.merge import read_file_slice
from hudisql.table.read.reconcile import show_log_blocks
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient, create_table
from hudisql.write.pipeline import FAULT_AFTER_FILES

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([("id", pa.string()), ("c", pa.int64()), ("part", pa.string())])


def _table(path: Path, parts: int) -> dict[str, int]:
    """A MOR table with 8 keys over ``parts`` partitions; returns id -> c."""
    create_table(str(path), "t", SCHEMA, ["id"], ["part"] if parts > 1 else [],
                 table_type="MERGE_ON_READ")
    rows: list[dict[str, Any]] = [{"id": f"k{i}", "c": 10 * i, "part": f"p{i % parts}"}
                                  for i in range(8)]
    WriteClient(HudiTable.open(path)).insert(pa.Table.from_pylist(rows, schema=SCHEMA))
    return {str(r["id"]): int(r["c"]) for r in rows}


def _child(path: Path, parts: int, die_at: str | None = None) -> dict[str, Any]:
    """Run the expression upsert ``c = c + 1`` of every key in a driver of its own."""
    brief = {"path": str(path), "parts": parts, "die_at": die_at}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.write.test_retry_expressions", json.dumps(brief)],
        cwd=REPO, env=env, text=True, capture_output=True, timeout=900, check=False)
    assert proc.returncode == (17 if die_at else 0), proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return dict(json.loads(line[len("RESULT "):]))


def _values(path: Path, mode: str = "full") -> dict[str, int]:
    table = HudiTable.open(path)
    out: dict[str, int] = {}
    for file_slice in table.file_slices():
        rows = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                               columns=["id", "c"], reconcile=mode).to_pylist()
        out.update({str(r["id"]): int(r["c"]) for r in rows})
    return out


def _log_files(path: Path) -> set[str]:
    return {p.name for p in path.rglob("*.log.*")}


def _check_spurious_blocks(path: Path, instant: str) -> None:
    """Exactly the first attempts' blocks are spurious, under rules (a) and (b)."""
    for mode in ("full", "sequence"):
        shown = [r for r in show_log_blocks(HudiTable.open(path), mode=mode).to_pylist()
                 if r["instant_time"] == instant]
        spurious = [r for r in shown if r["verdict"] == "spurious"]
        valid = [r for r in shown if r["verdict"] == "valid"]
        assert spurious, mode
        assert all(r["attempt"] == 0 for r in spurious), mode
        assert all(r["attempt"] >= 1 for r in valid), mode
        # One valid block (the committed retry's) per file group the write touched.
        assert sorted(r["file_id"] for r in valid) == sorted({r["file_id"] for r in shown})
        assert len(spurious) + len(valid) == len(shown), mode


@pytest.mark.parametrize("parts", [1, 4], ids=["complete-pair", "several-groups"])
def test_retried_expression_writes_add_exactly_once(tmp_path: Path, parts: int) -> None:
    path = tmp_path / "t"
    before = _table(path, parts)
    files_before = _log_files(path)
    result = _child(path, parts, die_at="completed")  # the driver dies before the clean-up
    instant = result["instant"]
    expected = {k: v + 1 for k, v in before.items()}
    # The spurious log files are still there, and the reads are exact anyway.
    timeline = HudiTable.open(path).timeline
    completed = timeline.get(instant)
    assert completed is not None and completed.is_completed
    meta = timeline.commit_metadata(completed)
    committed = {Path(n).name for s in meta.write_stats() for n in (s.path, *s.log_files) if n}
    assert committed < _log_files(path) - files_before
    for mode in ("full", "sequence"):
        assert _values(path, mode) == expected, mode
    _check_spurious_blocks(path, instant)
    # Without reconciliation the first attempts' blocks would add again.
    off = _values(path, "off")
    assert off != expected and all(off[k] - before[k] in (1, 2) for k in before)
    assert HudiTable.open(path).read(columns=["id", "c"]).num_rows == len(before)


def test_the_commit_removes_the_spurious_log_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    before = _table(path, 1)
    files_before = _log_files(path)
    result = _child(path, 1)
    # Only the committed attempt's log file is left; the values are the same.
    assert _log_files(path) - files_before == {Path(f).name for f in result["files"]}
    assert _values(path) == {k: v + 1 for k, v in before.items()}
    assert not (path / ".hoodie" / ".temp" / result["instant"]).exists()
    shown = show_log_blocks(HudiTable.open(path)).to_pylist()
    assert all(r["verdict"] == "valid" for r in shown)


def main() -> None:
    """The driver: ``c = c + 1`` on every key of the table as an expression upsert."""
    import hudisql
    from hudisql.write.pipeline import SparkWriter

    brief = json.loads(sys.argv[1])
    session = hudisql.connect(conf={"spark.master": "local[2,4]",
                                    "spark.sql.shuffle.partitions": "4"})
    table = HudiTable.open(brief["path"]).read(columns=["id", "part"]).to_pylist()
    df = session.spark.createDataFrame([(r["id"], 1, r["part"]) for r in table],
                                       "id string, c long, part string")

    def on_step(event: str, instant: str) -> None:
        if event == brief.get("die_at"):
            print("RESULT " + json.dumps({"instant": instant, "files": []}), flush=True)
            os._exit(17)  # a driver that dies here: nothing after this step runs

    writer = SparkWriter(session.spark, brief["path"], {FAULT_AFTER_FILES: "1"}, on_step)
    result = writer.write(df, "upsert", expressions={"c": "add"})
    print("RESULT " + json.dumps({"instant": result.instant_time,
                                  "files": sorted(s.path or "" for s in result.stats)}),
          flush=True)
    session.stop()


if __name__ == "__main__":
    main()
