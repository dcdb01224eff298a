"""The README's demo runs end to end (in its own process: it starts and stops its own Spark)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_demo_runs_end_to_end_and_shows_the_merged_rows(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hudisql.demo", "--warehouse", str(tmp_path / "wh")],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    # Quiet success (issue 26): no ERROR log line and no stack trace, on either stream.
    noisy = [line[:300] for line in (out + result.stderr).splitlines()
             if "ERROR" in line or "Exception" in line]
    assert noisy == []
    assert "|9909a8b1|rider-D|driver-L|25.0 |san_francisco|" in out  # the update applied
    assert "rider-G" not in out.split("through the hudi Spark data source", 1)[1]  # deleted
    assert "the hudi (hudi-rs) reader reads the same table: 5 rows" in out
    assert "6 rows then, 5 now; rider-D's fare then: 33.9, now: 25.0" in out
    # The three writes, four updates before the log compaction, and the log compaction.
    timeline = out.split("== SHOW TIMELINE", 1)[1]
    assert len(re.findall(r"\|deltacommit\s*\|COMPLETED\|", timeline)) == 7
    assert len(re.findall(r"\|logcompaction\s*\|COMPLETED\|LOG_COMPACT", timeline)) == 1
    assert len(re.findall(r"\|indexing\s*\|COMPLETED\|", timeline)) == 2
    assert "the metadata table matches the data table: 0 differences" in out
    blocks = re.search(r"valid log blocks: (\d+) before, (\d+) after; the same rows: True", out)
    assert blocks is not None and int(blocks[2]) < int(blocks[1])
