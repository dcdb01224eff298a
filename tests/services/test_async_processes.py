"""Async log compaction from another process alongside a writer process (file lock).

The two processes interleave as the machine schedules them; what is asserted holds for
every interleaving: the table ends with exactly the writer's last values, through hudisql
and hudi-rs, and every log compaction that completed reads the same as the blocks it
replaced (checked by the final rows, and by the reads as of every instant: each is one whole
write of the writer, and hudi-rs reads the same)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hudisql.services.compaction import run_compaction
from hudisql.services.log_compaction import run_log_compaction
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from tests.services.kit import assert_readers_agree, mor_table, rows, write_instants

WRITER = """
import sys
from hudisql.errors import CommitConflictError
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
path, lock_dir = sys.argv[1:3]
options = {"hoodie.write.lock.provider": "file", "hoodie.write.lock.filesystem.path": lock_dir}
client = WriteClient(HudiTable.open(path), options=options)
for r in range(8):
    for attempt in range(20):  # a compaction that completed meanwhile is a conflict: retry
        try:
            client.upsert([{"id": f"k{i}", "ts": 10 + r, "v": f"p{r}-{i}",
                            "city": ("sf", "la")[i % 2]} for i in range(6)])
            break
        except CommitConflictError:
            continue
    else:
        sys.exit(3)
"""


def assert_whole_writes(path: Path) -> None:
    """As of every write instant T (and now) the table holds exactly the last write
    requested by T: the writer rewrites every key each round, so every row carries that
    write's commit time, and hudi-rs reads the same where it reads by the same rule."""
    snapshots = assert_readers_agree(path)
    timeline = HudiTable.open(str(path)).timeline
    deltacommits = [i.timestamp for i in timeline.completed([Action.DELTACOMMIT])
                    if timeline.commit_metadata(i).operation_type in ("INSERT", "UPSERT")]
    for ts in [*write_instants(path), ""]:
        last = max(d for d in deltacommits if not ts or d <= ts)
        assert {r["_hoodie_commit_time"] for r in snapshots[ts]} == {last}, ts
        assert len(snapshots[ts]) == 6, ts


def test_log_compactions_alongside_a_writer_process(tmp_path: Path) -> None:
    mor_table(tmp_path)
    path = tmp_path / "t"
    options = {"hoodie.write.lock.provider": "file",
               "hoodie.write.lock.filesystem.path": str(tmp_path / "locks"),
               "hoodie.log.compaction.blocks.threshold": "2"}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path),
                               str(tmp_path / "locks")], stderr=subprocess.PIPE, text=True)
    done = []
    while writer.poll() is None:  # log compactions while the writer writes
        result = run_log_compaction(HudiTable.open(str(path)), options=options)
        if result is not None:
            done.append(result.instant)
    _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    # And one over the finished logs (none when the last one already took them all).
    last = run_log_compaction(HudiTable.open(str(path)), options=options)
    if last is not None:
        done.append(last.instant)
    assert done
    timeline = HudiTable.open(str(path)).timeline
    completed = [i.timestamp for i in timeline.completed()]
    assert all(ts in completed for ts in done)
    assert timeline.pending([Action.LOGCOMPACTION]) == []
    assert {r["id"]: r["v"] for r in rows(path)} == {f"k{i}": f"p7-{i}" for i in range(6)}
    assert_whole_writes(path)


def test_compactions_alongside_a_writer_process(tmp_path: Path) -> None:
    mor_table(tmp_path)
    path = tmp_path / "t"
    options = {"hoodie.write.lock.provider": "file",
               "hoodie.write.lock.filesystem.path": str(tmp_path / "locks")}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path),
                               str(tmp_path / "locks")], stderr=subprocess.PIPE, text=True)
    while writer.poll() is None:  # compactions while the writer writes
        run_compaction(HudiTable.open(str(path)), options=options)
    _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    run_compaction(HudiTable.open(str(path)), options=options)
    timeline = HudiTable.open(str(path)).timeline
    assert timeline.pending([Action.COMPACTION]) == []
    assert timeline.completed([Action.COMMIT])
    assert {r["id"]: r["v"] for r in rows(path)} == {f"k{i}": f"p7-{i}" for i in range(6)}
    assert_whole_writes(path)
