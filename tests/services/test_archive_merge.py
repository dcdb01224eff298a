"""Merging small archive files (issue 28: files under ``.hoodie`` bounded by the archival
settings, not by the commit count): Hudi's ``hoodie.archive.merge.*`` options and plan, a
failure injected at each step of a merge and a re-run, and the archived timeline read
exactly before and after (in-process, no Spark)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hudisql.errors import TableServiceError
from hudisql.services.archive import run_archive
from hudisql.table.format.archive_format import archive_files
from hudisql.table.services.archive import ArchivedTimeline
from hudisql.table.services.archive_merge import PLAN_NAME
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.services.kit import Crash, crash_at, mor_table, rec, rows, rs_rows, write_instants

#: Archival every 3 commits, each run leaving one archive file; merged 4 at a time.
OPTIONS = {"hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "5",
           "hoodie.archive.merge.files.batch.size": "4"}
RUNS = 5


@pytest.fixture(scope="module")
def unmerged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A table archived RUNS times with merging off: RUNS small archive files."""
    root = tmp_path_factory.mktemp("archive_merge")
    client = mor_table(root, keys=4)
    off = {**OPTIONS, "hoodie.archive.merge.enable": "false"}
    table = HudiTable.open(str(root / "t"))
    for r in range(40):
        if len(archive_files(table.storage, ".hoodie/archived")) == RUNS:
            break
        client.upsert([rec(i, 2 + r, f"u{r}-{i}") for i in range(2)])
        run_archive(HudiTable.open(str(root / "t")), off)
    assert len(archive_files(table.storage, ".hoodie/archived")) == RUNS
    yield root / "t"


def _copy(unmerged: Path, tmp_path: Path) -> Path:
    path = tmp_path / "t"
    shutil.copytree(unmerged, path)
    return path


def _archived(path: Path) -> list[str]:
    table = HudiTable.open(str(path))
    return [e.timestamp for e in ArchivedTimeline(table.storage, table.timeline).entries]


def _state(path: Path) -> tuple[list[str], list[str], list[dict[str, object]]]:
    """(every instant state archived, active write instants, rows)."""
    return _archived(path), write_instants(path), rows(path)


def test_small_archive_files_merge_into_one_and_every_instant_reads_once(
    unmerged: Path, tmp_path: Path,
) -> None:
    path = _copy(unmerged, tmp_path)
    before = _state(path)
    assert len(before[0]) == len(set(before[0])) and before[0]
    result = run_archive(HudiTable.open(str(path)), OPTIONS)
    assert not result.data and len(result.merged_files) == RUNS  # nothing due, files merged
    table = HudiTable.open(str(path))
    assert [v for v, _ in archive_files(table.storage, ".hoodie/archived")] == [RUNS + 1]
    assert not (path / ".hoodie/archived" / PLAN_NAME).exists()
    assert _state(path) == before and rows(path) == rs_rows(path)
    # Fewer candidates than the batch size: left alone.
    assert not run_archive(HudiTable.open(str(path)), OPTIONS).merged_files


def test_merging_off_and_bad_settings(unmerged: Path, tmp_path: Path) -> None:
    path = _copy(unmerged, tmp_path)
    off = {**OPTIONS, "hoodie.archive.merge.enable": "false"}
    assert not run_archive(HudiTable.open(str(path)), off).merged_files
    with pytest.raises(TableServiceError, match=r"hoodie\.archive\.merge\.enable"):
        run_archive(HudiTable.open(str(path)), {**OPTIONS, "hoodie.archive.merge.enable": "yes"})
    table = HudiTable.open(str(path))
    assert len(archive_files(table.storage, ".hoodie/archived")) == RUNS
    # A file above the small-file limit is a break point: only newer files are candidates.
    small = {**OPTIONS, "hoodie.archive.merge.small.file.limit.bytes": "1"}
    assert not run_archive(HudiTable.open(str(path)), small).merged_files


@pytest.mark.parametrize("event", ["merge_planned", "merge_written", "merge_candidate_deleted"])
def test_a_failure_at_each_merge_step_loses_nothing_and_a_rerun_settles_it(
    unmerged: Path, tmp_path: Path, event: str,
) -> None:
    path = _copy(unmerged, tmp_path)
    before = _state(path)
    with pytest.raises(Crash):
        run_archive(HudiTable.open(str(path)), OPTIONS, on_step=crash_at(event))
    assert (path / ".hoodie/archived" / PLAN_NAME).exists()
    assert _state(path) == before  # readers see every instant once meanwhile
    # The next writes' archival settles the merge before writing its own archive file
    # (whose version the unsettled plan names as its merged file).
    client = WriteClient(HudiTable.open(str(path)))
    for r in range(3):
        client.upsert([rec(i, 100 + r, f"w{r}-{i}") for i in range(2)])
    result = run_archive(HudiTable.open(str(path)), OPTIONS)
    assert result.data and not (path / ".hoodie/archived" / PLAN_NAME).exists()
    archived, active, now = _state(path)
    assert archived[:len(before[0])] == before[0] and len(archived) == len(set(archived))
    assert set(before[1]) <= set(active) | set(archived)  # no write instant lost
    # Undone (the merged file may be partial), the 5 files and the new one merge into one;
    # finished, the merged file stays beside the new one.
    table = HudiTable.open(str(path))
    expected = 2 if event == "merge_candidate_deleted" else 1
    assert len(archive_files(table.storage, ".hoodie/archived")) == expected
    assert now == rs_rows(path)
