"""An indexer killed (SIGKILL, a real process) at each step, then run again, leaves every
partition equal to a from-scratch build (``validate_metadata_table``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hudisql.services.indexes import TableIndexes
from hudisql.session import HudiSession
from hudisql.table.format.index_plan import pending_indexing
from hudisql.table.table import HudiTable
from tests.services.indexing import assert_exact, trips
from tests.write.trips import rs_rows

REPO = Path(__file__).resolve().parents[2]
# One kill per phase: schedule (under its lock), build, catch-up, commit (under its lock).
STEPS = ["initializing", "built", "caught_up", "completing"]


@pytest.mark.parametrize("step", STEPS)
def test_a_killed_indexer_run_again_builds_exactly(session: HudiSession, step: str) -> None:
    handle = trips(session)
    before = rs_rows(handle)
    brief = {"path": handle.path, "partitions": ["RECORD_INDEX", "COLUMN_STATS"],
             "kill_at": step}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "tests.services.index_child",
                           json.dumps(brief)], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=600)
    assert proc.returncode == -9, proc.stderr[-3000:]
    assert "DONE" not in proc.stdout
    table = HudiTable.open(handle.path)
    assert "record_index" not in table.properties.metadata_partitions
    # Running it again (the same call) resumes a saved plan, or schedules anew.
    TableIndexes(handle.path, session.write_options(handle.path), session.spark).run_indexer(
        "scheduleAndExecute", ["RECORD_INDEX", "COLUMN_STATS"])
    table = HudiTable.open(handle.path)
    assert sorted(table.properties.metadata_partitions) == [
        "column_stats", "files", "record_index"]
    assert table.properties.metadata_partitions_inflight == []
    assert pending_indexing(table.timeline) == []
    assert_exact(handle.path)
    assert rs_rows(handle) == before
