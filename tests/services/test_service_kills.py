"""A log compaction or compaction killed at each step (a real subprocess ending itself with
``os._exit`` at that step): readers never see its work, and the next run rolls it back
(log compaction) or runs it again (compaction), so nothing is read twice or lost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hudisql.services.compaction import run_compaction
from hudisql.services.log_compaction import run_log_compaction
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from hudisql.txn.transaction import Transaction
from tests.services.kit import mor_table, rows, rs_rows, snapshots, upserts

CHILD = """
import os, sys
from hudisql.table.table import HudiTable
from hudisql.services.compaction import run_compaction
from hudisql.services.log_compaction import run_log_compaction

path, service, step = sys.argv[1:4]

def die(event, instant):
    if event == step:
        os._exit(17)

run = run_log_compaction if service == "log" else run_compaction
run(HudiTable.open(path), on_step=die)
os._exit(0)
"""


def _kill_at(path: Path, service: str, step: str) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), service, step],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 17, done.stderr


def _expire_heartbeats(path: Path) -> None:
    """The dead process beats no more: its heartbeat expires (removed, not waited for)."""
    for beat in (path / ".hoodie" / ".heartbeat").glob("*"):
        beat.unlink()


@pytest.mark.parametrize("step", ["inflight", "written", "completing"])
def test_a_killed_log_compaction_is_rolled_back_by_the_next_run(
    tmp_path: Path, step: str,
) -> None:
    client = mor_table(tmp_path)
    upserts(client, 6)
    path = tmp_path / "t"
    before = snapshots(path)
    _kill_at(path, "log", step)
    [pending] = HudiTable.open(str(path)).timeline.pending([Action.LOGCOMPACTION])
    assert snapshots(path) == before  # its blocks are never read
    assert rows(path) == rs_rows(path)
    _expire_heartbeats(path)
    result = run_log_compaction(HudiTable.open(str(path)))
    assert result is not None and result.instant != pending.timestamp
    timeline = HudiTable.open(str(path)).timeline
    assert pending.timestamp in timeline.rolled_back_instants()
    assert {k: v for k, v in snapshots(path).items() if k != result.instant} == before
    assert rows(path) == rs_rows(path)


@pytest.mark.parametrize("step", ["inflight", "written", "completing"])
def test_a_killed_compaction_runs_again(tmp_path: Path, step: str) -> None:
    client = mor_table(tmp_path)
    upserts(client, 3)
    path = tmp_path / "t"
    before = snapshots(path)
    _kill_at(path, "compaction", step)
    [pending] = HudiTable.open(str(path)).timeline.pending([Action.COMPACTION])
    assert snapshots(path) == before
    assert rows(path) == rs_rows(path)
    _expire_heartbeats(path)
    result = run_compaction(HudiTable.open(str(path)))
    assert result is not None and result.instant == pending.timestamp
    assert {k: v for k, v in snapshots(path).items() if k != result.instant} == before
    assert rows(path) == rs_rows(path)


def test_a_killed_log_compaction_is_rolled_back_by_the_next_writer(tmp_path: Path) -> None:
    client = mor_table(tmp_path)
    upserts(client, 6)
    path = tmp_path / "t"
    _kill_at(path, "log", "written")
    [pending] = HudiTable.open(str(path)).timeline.pending([Action.LOGCOMPACTION])
    _expire_heartbeats(path)
    before = rows(path)
    # The next writer (the Spark pipeline's transaction) rolls it back when it starts.
    txn = Transaction(HudiTable.open(str(path)), {}, "UPSERT")
    txn.start()
    txn.commit([], HudiTable.open(str(path)).avro_schema)
    timeline = HudiTable.open(str(path)).timeline
    assert timeline.pending([Action.LOGCOMPACTION]) == []
    assert pending.timestamp in timeline.rolled_back_instants()
    assert rows(path) == before
    assert rows(path) == rs_rows(path)
