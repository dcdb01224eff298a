"""The LSM history of a version 9 table stays a few files (issue 28): each archival run's
layer-0 file is compacted into the next layer once ``hoodie.timeline.compaction.batch.size``
files share a layer, old manifests and compacted files are cleaned, readers (hudisql's
archived timeline and completion times, hudi-rs) see the same instants throughout, and a
run killed at each compaction step loses nothing (in-process, no Spark)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hudisql.services.archive import run_archive
from hudisql.table.format.lsm_timeline import ArchivedCompletionTimes
from hudisql.table.services.archive import ArchivedTimeline
from hudisql.table.table import HudiTable
from tests.services.kit import Crash, crash_at, mor_table, rows, rs_rows, upserts

COMMITS = ("commit", "deltacommit", "replacecommit")
#: Two files per layer make a file of the next one: six runs show two layers.
BATCH = {"hoodie.timeline.compaction.batch.size": "2"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A version 9 merge-on-read table of 17 deltacommits, and their completion times."""
    root = tmp_path_factory.mktemp("lsm_history")
    client = mor_table(root, keys=4, version=9)
    upserts(client, 16, keys=2)
    table = HudiTable.open(str(root / "t"))
    done = {i.timestamp: i.completion_time or "" for i in table.timeline.completed(COMMITS)}
    assert len(done) == 17 and all(done.values())
    yield root / "t", done


def _copy(tmp_path: Path, built: tuple[Path, dict[str, str]]) -> tuple[Path, list[str]]:
    path = tmp_path / "t"
    shutil.copytree(built[0], path)
    return path, sorted(built[1])


def _run(path: Path, k: int, on_step=None) -> None:  # type: ignore[no-untyped-def]
    """Archival run ``k`` (0-based): two more commits move to the history."""
    keep = {"hoodie.keep.min.commits": str(15 - 2 * k),
            "hoodie.keep.max.commits": str(16 - 2 * k), **BATCH}
    if on_step is None:
        assert len(run_archive(HudiTable.open(str(path)), keep).data) == 2
    else:
        run_archive(HudiTable.open(str(path)), keep, on_step=on_step)


def _history(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie/timeline/history").iterdir())


def _seen(path: Path, done: dict[str, str]) -> tuple[list[str], list[str]]:
    """(active commits, archived commits); the archived ones' completion times checked."""
    table = HudiTable.open(str(path))
    active = [i.timestamp for i in table.timeline.completed(COMMITS)]
    archived = [e.timestamp for e in ArchivedTimeline(table.storage, table.timeline).completed()]
    times = ArchivedCompletionTimes(table.storage, table.properties)
    assert {t: times.get(t) for t in archived} == {t: done[t] for t in archived}
    assert times.all() == {t: done[t] for t in archived}
    return active, archived


def test_the_history_is_compacted_layer_by_layer_and_cleaned(
        tmp_path: Path, built: tuple[Path, dict[str, str]]) -> None:
    path, done = _copy(tmp_path, built)
    before = rows(path)
    for k in range(6):
        _run(path, k)
        assert _seen(path, built[1]) == (done[2 * k + 2:], done[:2 * k + 2])
    # Runs 1+2 made a layer-1 file, 3+4 another, and the two a layer-2 file; 5+6 a layer-1.
    history = path / ".hoodie/timeline/history"
    latest = json.loads((history / "manifest_10").read_text())["files"]
    assert (history / "_version_").read_text() == "10"
    assert sorted(e["fileName"] for e in latest) == [
        f"{done[0]}_{done[7]}_2.parquet", f"{done[8]}_{done[11]}_1.parquet"]
    # The three manifests before it are kept (readers may still hold them), and the files
    # they name: the layer-0 inputs of the last compaction; everything older is gone.
    assert _history(path) == sorted([
        "_version_", *(f"manifest_{v}" for v in (7, 8, 9, 10)),
        f"{done[0]}_{done[7]}_2.parquet", f"{done[8]}_{done[11]}_1.parquet",
        f"{done[8]}_{done[9]}_0.parquet", f"{done[10]}_{done[11]}_0.parquet"])
    assert rows(path) == before == rs_rows(path)


@pytest.mark.parametrize("event", ["history_compaction_written", "history_compacted",
                                   "history_cleaned"])
def test_a_compaction_killed_at_each_step_loses_nothing_and_later_runs_finish_it(
        tmp_path: Path, built: tuple[Path, dict[str, str]], event: str) -> None:
    path, done = _copy(tmp_path, built)
    before = rows(path)
    for k in range(3):
        _run(path, k)
    with pytest.raises(Crash):
        _run(path, 3, on_step=crash_at(event))  # its layer-1, then layer-2 compaction
    assert _seen(path, built[1]) == (done[8:], done[:8])
    assert rows(path) == before == rs_rows(path)
    for k in range(4, 6):
        _run(path, k)
    assert _seen(path, built[1]) == (done[12:], done[:12])
    # The same tree as without the kill, and no file left that no manifest names.
    history = path / ".hoodie/timeline/history"
    latest = json.loads((history / f"manifest_{(history / '_version_').read_text()}"
                         ).read_text())["files"]
    assert sorted(e["fileName"] for e in latest) == [
        f"{done[0]}_{done[7]}_2.parquet", f"{done[8]}_{done[11]}_1.parquet"]
    named = {e["fileName"] for m in history.glob("manifest_*")
             for e in json.loads(m.read_text())["files"]}
    assert {n for n in _history(path) if n.endswith(".parquet")} == named
    assert rows(path) == before == rs_rows(path)
