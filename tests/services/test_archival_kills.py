"""Archival killed with SIGKILL at each step, in a real process of its own (issue 28).

The archiving process pauses at a step (its step hook prints ``PAUSED`` and blocks), the
test kills it with ``kill -9``, reads the table through hudisql and hudi-rs while the run is
cut short, then archives again: no instant is lost or listed twice, in the data table's
timeline or its metadata table's, readers never fail, and the end state is the one an
uninterrupted run leaves (the metadata table validates afterwards: ``tests/conftest.py``).
The uninterrupted run also shows the metadata table's rules: the data table keeps what the
metadata table's latest compaction needs, the metadata table archives its own timeline
only below the data table's first active commit.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hudisql.metadata.participant import participants_for
from hudisql.metadata.table import MetadataTable
from hudisql.metadata.validate import validate_metadata_table
from hudisql.services.archive import ArchiveResult, run_archive
from hudisql.sql.timeline import timeline_rows
from hudisql.table.format.archive_format import archive_files
from hudisql.table.services.archive import ArchivedTimeline
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.services.kit import rows, rs_rows

REPO = Path(__file__).resolve().parents[2]
COMMITS = ("commit", "deltacommit", "replacecommit")
OPTIONS = {"hoodie.metadata.compact.max.delta.commits": "4", "hoodie.keep.min.commits": "3",
           "hoodie.keep.max.commits": "5"}

#: Pause at the first (or ``#n``-th) time the run reaches the step, then die.
CHILD = """
import json, sys
from hudisql.services.archive import run_archive
from hudisql.table.table import HudiTable

path, step, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
event, _, nth = step.partition("#")
seen = []

def pause(name, detail):
    if name == event:
        seen.append(detail)
        if len(seen) == int(nth or 1):
            print("PAUSED", name, detail, flush=True)
            sys.stdin.read()  # the test kills this process here

run_archive(HudiTable.open(path), options, on_step=pause)
print("DONE", flush=True)
"""

STEPS = ["written", "pending_deleted", "completed_deleted#3", "metadata_written",
         "metadata_completed_deleted#2"]

Listing = tuple[list[str], list[str]]


def _listing(path: Path) -> Listing:
    """(active instant times, archived instant times) of the table at ``path``."""
    table = HudiTable.open(str(path))
    return ([i.timestamp for i in table.timeline.instants],
            [i.timestamp for i in ArchivedTimeline(table.storage, table.timeline).instants])


def _both(path: Path) -> tuple[Listing, Listing]:
    return _listing(path), _listing(path / ".hoodie" / "metadata")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """A table with a metadata table, both with instants due for archival; what it reads;
    and the state an uninterrupted archival leaves (on a copy)."""
    from tests.metadata.skipping_helpers import indexed_table
    from tests.metadata.test_build_validate import row

    root = tmp_path_factory.mktemp("archival_kills")
    table = indexed_table(root / "t", rows=10, version=6)  # version 6's archived timeline
    client = WriteClient(table, max_records_per_file=5,
                         participants=participants_for(table, OPTIONS))
    for r in range(14):
        client.upsert([row(r % 10, ts=100 + r, rider=f"r{r}")])
    path = root / "t"
    instants = _both(path)
    oldest = instants[0][0][1]  # a write instant the archival moves out
    reference = root / "reference"
    shutil.copytree(path, reference)
    compactions = [i.timestamp for i in MetadataTable(table).timeline.completed(["commit"])]
    result = run_archive(HudiTable.open(str(reference)), OPTIONS)
    assert result.data and result.metadata and oldest in {i.timestamp for i in result.data}
    yield {"path": path, "instants": instants, "oldest": oldest, "end": _both(reference),
           "rows": rows(path), "rows_as_of": rows(path, oldest), "reference": reference,
           "result": result, "compactions": compactions}


def test_the_metadata_table_holds_archival_back_and_archives_its_own_timeline(
    built: dict[str, object],
) -> None:
    result, compactions = built["result"], built["compactions"]
    assert isinstance(result, ArchiveResult) and isinstance(compactions, list) and compactions
    assert all(i.timestamp < compactions[-1] for i in result.data)
    path = Path(str(built["reference"]))
    data_first = HudiTable.open(str(path)).timeline.completed(COMMITS)[0].timestamp
    assert all(i.timestamp < data_first for i in result.metadata)
    mdt = HudiTable.open(str(path / ".hoodie" / "metadata"))
    assert archive_files(mdt.storage, ".hoodie/archived")
    assert rows(path) == built["rows"] == rs_rows(path)
    assert validate_metadata_table(HudiTable.open(str(path))).ok


def _kill_at(path: Path, step: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), step, json.dumps(OPTIONS)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        line = proc.stdout.readline() if ready else ""
        assert line.startswith("PAUSED"), (line, proc.stderr.read() if proc.stderr else "")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _each_once(listing: Listing, everything: Listing) -> None:
    """Every instant listed once, active or archived: none lost, none in both."""
    active, archived = listing
    assert not set(active) & set(archived)
    assert sorted(active + archived) == sorted(everything[0] + everything[1])


@pytest.mark.parametrize("step", STEPS)
def test_archival_killed_at_each_step_loses_nothing_and_a_rerun_finishes(
    built: dict[str, object], tmp_path: Path, step: str,
) -> None:
    path = tmp_path / "t"
    shutil.copytree(built["path"], path)  # type: ignore[arg-type]
    oldest = str(built["oldest"])
    _kill_at(path, step)
    data, metadata = _both(path)
    instants = built["instants"]
    assert isinstance(instants, tuple)
    _each_once(data, instants[0])
    _each_once(metadata, instants[1])
    shown = [r.instant_time for r in timeline_rows(HudiTable.open(str(path)), archived=True)]
    assert sorted(shown) == sorted(data[0] + data[1])  # SHOW TIMELINE ... ARCHIVED: once each
    assert rows(path) == built["rows"] == rs_rows(path)
    assert rows(path, oldest) == built["rows_as_of"] == rs_rows(path, oldest)
    run_archive(HudiTable.open(str(path)), OPTIONS)
    assert _both(path) == built["end"]
    table = HudiTable.open(str(path))
    assert len(archive_files(table.storage, ".hoodie/archived")) == 1
    mdt = HudiTable.open(str(path / ".hoodie" / "metadata"))
    assert len(archive_files(mdt.storage, ".hoodie/archived")) == 1
    assert rows(path) == built["rows"] == rs_rows(path)
