"""Many writers, no surprises (issue #18, item 4): the multi-process stress test.

Three processes, each a plain ``hudisql.connect(warehouse=..., catalog=url)`` session with
the default settings, run rounds of UPDATE, MERGE and INSERT on one catalog table, retrying
a statement only on CommitConflictError, while this process reads the table throughout
through SQL and the pure-Python reader. Every statement must commit, no read may fail or see
a partial statement, and the final values must be exact. On SQLite and on PostgreSQL.
Writers start together at a barrier (each prints READY, all are told GO).
"""

from __future__ import annotations

import json
import os
import queue
import selectors
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import hudisql
from tests.catalog.stress_writer import inserted_id

WRITERS = 3
#: Rounds per writer: 1 keeps the suite's time bounded on a loaded machine; raise it here.
ROUNDS = int(os.environ.get("HUDISQL_STRESS_ROUNDS", "1"))
M = 9  # rows updated by every round: id % 3 = k belongs to writer k
ROOT = Path(__file__).resolve().parents[2]


def _line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next line the process prints (fails the test when none comes in time)."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            pytest.fail(f"writer {proc.args} printed nothing for {timeout}s")
    return proc.stdout.readline().strip()


def _forward(k: int, proc: subprocess.Popen[str], lines: queue.Queue[tuple[int, str]]) -> None:
    """Put each line writer ``k`` prints on ``lines``; a last one when it ends silently."""
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.put((k, line.strip()))
    lines.put((k, "ERR the writer ended (see its log)"))


def _check_snapshot(rows: list[tuple[int, int]], sums: list[int], how: str) -> None:
    """One read: every old row there, each at a whole number of statements, the sum only
    growing, no row of a statement that did not commit."""
    old = {i: v for i, v in rows if i < M}
    assert sorted(old) == list(range(M)), f"{how}: rows {sorted(old)}"
    assert all(v % 11 in (0, 1) for v in old.values()), f"{how}: partial values {old}"
    new = {i for i, _ in rows if i >= M}
    assert new <= {inserted_id(k, r) for k in range(WRITERS) for r in range(ROUNDS)}, new
    total = sum(old.values())
    assert not sums or total >= sums[-1], f"{how}: sum went back from {sums[-1]} to {total}"
    sums.append(total)


@pytest.mark.slow
def test_writers_in_three_processes_on_one_catalog_table(
    spark: Any, catalog_url: str, tmp_path: Path,
) -> None:
    warehouse = tmp_path / "warehouse"
    # The writers start their sessions while this one creates the table: they touch it only
    # after GO.
    started = time.monotonic()
    logs = [open(tmp_path / f"writer{k}.log", "w") for k in range(WRITERS)]  # noqa: SIM115
    writers = [subprocess.Popen(
        [sys.executable, "-m", "tests.catalog.stress_writer", str(warehouse), catalog_url,
         str(k), str(ROUNDS), str(M)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=logs[k], text=True)
        for k in range(WRITERS)]
    sql_sums: list[int] = []
    core_sums: list[int] = []
    try:
        session = hudisql.connect(spark, warehouse=warehouse, catalog=catalog_url)
        session.sql("CREATE TABLE stress (id INT, k INT, v BIGINT) USING hudi "
                    "TBLPROPERTIES (primaryKey = 'id', type = 'mor')")
        values = ", ".join(f"({i}, {i % 3}, 0)" for i in range(M))
        session.sql(f"INSERT INTO stress VALUES {values}")
        path = session.table("stress").path
        for proc in writers:
            assert _line(proc, 300) == "READY"
        ready = time.monotonic()
        for proc in writers:  # the barrier: all start together
            assert proc.stdin is not None
            proc.stdin.write("GO\n")
            proc.stdin.flush()
        # Read after every commit of any writer, while the others are mid-statement.
        lines: queue.Queue[tuple[int, str]] = queue.Queue()
        for k, proc in enumerate(writers):
            threading.Thread(target=_forward, args=(k, proc, lines), daemon=True).start()
        outcomes: dict[int, str] = {}
        while len(outcomes) < WRITERS:
            k, line = lines.get(timeout=600)
            if not line.startswith("COMMITTED"):
                outcomes.setdefault(k, line)  # DONE or ERR; then its stream ends
                continue
            rows = session.sql("SELECT id, v FROM stress").collect()
            _check_snapshot([(r.id, r.v) for r in rows], sql_sums, "SQL read")
            table = hudisql.read_table(path).select(["id", "v"]).to_pylist()
            _check_snapshot([(r["id"], r["v"]) for r in table], core_sums, "core read")
        writing = time.monotonic() - ready
    finally:
        for proc in writers:
            if proc.poll() is None:
                proc.kill()
            proc.wait(60)
        for log in logs:
            log.close()
    assert all(o.startswith("DONE ") for o in outcomes.values()), outcomes
    counts = [json.loads(outcomes[k][5:]) for k in range(WRITERS)]
    assert [c["statements"] for c in counts] == [3 * ROUNDS] * WRITERS
    expected = {i: 11 * ROUNDS for i in range(M)}
    expected.update({inserted_id(k, r): 0 for k in range(WRITERS) for r in range(ROUNDS)})
    final_sql = {r.id: r.v for r in session.sql("SELECT id, v FROM stress").collect()}
    final_core = {r["id"]: r["v"] for r in hudisql.read_table(path).to_pylist()}
    assert final_sql == expected and final_core == expected
    # Not yet through hudi-rs: it reads UPDATE SET v = v + 1's expression blocks as plain
    # values (10 where 11 is right) until the log compaction issue's expression-block work
    # lands (issue #18 says: until then SQL and the core reader).
    report = {"conflicts": [c["conflicts"] for c in counts],
              "writer_seconds": [c["seconds"] for c in counts],
              "rounds": ROUNDS, "reads": len(sql_sums) + len(core_sums),
              "start_seconds": round(ready - started, 1), "write_seconds": round(writing, 1)}
    print(f"\nstress {catalog_url.split(':')[0]}: {json.dumps(report)}")
    session.close()
