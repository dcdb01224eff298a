"""Timeline archival (issue 28): Hudi's archived timeline format, each rule that holds
archival back, a failure injected at each step and a re-run, and hudi-rs reading the
archived table row for row (in-process, no Spark). The metadata table's own archival, and
a real process killed at each step, are ``test_archival_kills.py``'s."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow.compute as pc
import pytest

import hudisql
from hudisql.errors import ReadOptionError
from hudisql.metadata.participant import participants_for
from hudisql.services.archive import run_archive
from hudisql.services.clean import run_clean
from hudisql.services.compaction import schedule_compaction
from hudisql.services.log_compaction import schedule_log_compaction
from hudisql.table.format.archive_format import archive_files, read_archive_file
from hudisql.table.format.commit_metadata import write_avro_container
from hudisql.table.format.instant import Action, State
from hudisql.table.services.archive import ArchivedTimeline
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.services.kit import Crash, crash_at, mor_table, rec, rows, rs_rows, write_instants

COMMITS = ("commit", "deltacommit", "replacecommit")
#: Archival settings that let a few commits show the rules.
SMALL = {"hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "5"}


_BUILT: dict[tuple[int, str], Path] = {}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[int, str], Path]]:
    """Tables of n commits, written once per module; each test works on a copy."""
    _BUILT.clear()
    root = tmp_path_factory.mktemp("archival_tables")
    for n, table_type in ((40, "MERGE_ON_READ"), (8, "MERGE_ON_READ"), (4, "MERGE_ON_READ"),
                          (8, "COPY_ON_WRITE")):
        where = root / f"{table_type}_{n}"
        client = mor_table(where, keys=4, table_type=table_type,
                           version=6)  # version 6's archived timeline (.hoodie/archived)
        for r in range(n - 1):
            client.upsert([rec(i, 2 + r, f"u{r}-{i}") for i in range(2)])
        _BUILT[(n, table_type)] = where / "t"
    yield _BUILT
    _BUILT.clear()


@pytest.fixture(autouse=True)
def _uses_built_tables(built: dict[tuple[int, str], Path]) -> None:
    """Every test here may call ``_table``: the module's tables are built first."""


def _table(tmp_path: Path, n: int = 40, table_type: str = "MERGE_ON_READ") -> tuple[
        WriteClient, Path, list[str]]:
    """A private copy of the module's table of ``n`` commits: its writer, path, commits."""
    path = tmp_path / "t"
    shutil.copytree(_BUILT[(n, table_type)], path)
    done = write_instants(path)
    assert len(done) == n
    return WriteClient(HudiTable.open(str(path))), path, done


def _everything(path: Path) -> tuple[list[str], list[str]]:
    """(active completed commits, archived completed commits), each in order."""
    table = HudiTable.open(str(path))
    active = [i.timestamp for i in table.timeline.completed(COMMITS)]
    archived = [e.timestamp for e in ArchivedTimeline(table.storage, table.timeline).completed()]
    return active, archived


def test_archival_moves_the_oldest_commits_in_hudis_format_and_reads_stay_exact(
    tmp_path: Path,
) -> None:
    _, path, done = _table(tmp_path)
    before, as_of_fifth = rows(path), rows(path, done[4])
    result = run_archive(HudiTable.open(str(path)))
    assert [i.timestamp for i in result.data] == done[:20]
    active, archived = _everything(path)
    assert (active, archived) == (done[20:], done[:20])
    # One file, named and framed as Hudi's archiver names it: one record per state file.
    table = HudiTable.open(str(path))
    [(version, rel)] = archive_files(table.storage, ".hoodie/archived")
    assert rel == ".hoodie/archived/.commits_.archive.1_1-0-1" and version == 1
    entries = read_archive_file(table.storage, rel)
    assert [(e.timestamp, e.action, e.state) for e in entries[:3]] == [
        (done[0], "deltacommit", State.REQUESTED), (done[0], "deltacommit", State.INFLIGHT),
        (done[0], "deltacommit", State.COMPLETED)]
    assert entries[2].record["actionType"] == "deltacommit"
    assert entries[2].record["actionState"] == "COMPLETED"
    assert entries[2].record["hoodieCommitMetadata"]["operationType"] == "INSERT"
    archived_meta = entries[2].commit_metadata()
    assert archived_meta is not None and archived_meta.operation_type == "INSERT"
    assert archived_meta.schema == HudiTable.open(str(path)).avro_schema_as_of(done[20])
    assert not any(n.name.startswith(tuple(done[:20])) for n in (path / ".hoodie").iterdir())
    # Every reader: latest and as of an archived instant whose files are still there.
    assert rows(path) == before == rs_rows(path)
    assert rows(path, done[4]) == as_of_fifth == rs_rows(path, done[4])
    assert not run_archive(HudiTable.open(str(path)))  # nothing more is due


def _between(done: list[str], k: int) -> str:
    ts = str(int(done[k]) + 1)
    assert done[k] < ts < done[k + 1]
    return ts


def _pending_write(path: Path, done: list[str]) -> str:
    table = HudiTable.open(str(path))
    table.timeline.create_requested(Action.DELTACOMMIT, _between(done, 5))
    return done[5]  # the completed commit before it stays


def _pending_clustering(path: Path, done: list[str]) -> str:
    HudiTable.open(str(path)).timeline.create_requested(Action.CLUSTERING, _between(done, 7))
    return done[7]


def _savepoint(path: Path, done: list[str]) -> str:
    timeline = HudiTable.open(str(path)).timeline
    content = write_avro_container(
        '{"type":"record","name":"HoodieSavepointMetadata","namespace":'
        '"org.apache.hudi.avro.model","fields":[{"name":"savepointedBy","type":"string"},'
        '{"name":"savepointedAt","type":"long"},{"name":"comments","type":"string"},'
        '{"name":"partitionMetadata","type":{"type":"map","values":"string"}}]}',
        [{"savepointedBy": "t", "savepointedAt": 0, "comments": "", "partitionMetadata": {}}])
    savepoint = timeline.create_inflight(Action.SAVEPOINT, _between(done, 9))
    timeline.complete(savepoint, content)
    return done[10]  # commits from the savepoint on stay


@pytest.mark.parametrize("blocker", [_pending_write, _pending_clustering, _savepoint])
def test_a_pending_write_or_a_savepoint_holds_archival_back(tmp_path: Path, blocker) -> None:  # type: ignore[no-untyped-def]
    _, path, done = _table(tmp_path)
    first_kept = blocker(path, done)
    run_archive(HudiTable.open(str(path)))
    active, archived = _everything(path)
    assert archived == done[:done.index(first_kept)] and active[0] == first_kept


def test_pending_compaction_and_log_compaction_hold_archival_back(tmp_path: Path) -> None:
    client, path, done = _table(tmp_path, n=8)
    compaction = schedule_compaction(HudiTable.open(str(path)))
    assert compaction is not None
    for r in range(30):
        client.upsert([rec(0, 100 + r, f"late{r}")])
    run_archive(HudiTable.open(str(path)))
    assert _everything(path)[1] == done[:7]  # up to the commit before the plan
    _, path2, done2 = _table(tmp_path / "lc", n=8)
    client2 = WriteClient(HudiTable.open(str(path2)))
    assert schedule_log_compaction(
        HudiTable.open(str(path2)), {"hoodie.log.compaction.blocks.threshold": "2"})
    for r in range(30):
        client2.upsert([rec(1, 100 + r, f"late{r}")])
    run_archive(HudiTable.open(str(path2)))
    assert _everything(path2)[1] == done2[:7]


def test_the_cleaners_earliest_commit_to_retain_holds_archival_back(tmp_path: Path) -> None:
    _, path, done = _table(tmp_path, n=8, table_type="COPY_ON_WRITE")
    clean = run_clean(HudiTable.open(str(path)), {"hoodie.cleaner.commits.retained": "5"})
    assert clean is not None and clean.earliest_commit_to_retain == done[3]
    before = rows(path)
    run_archive(HudiTable.open(str(path)), SMALL)  # 5 would go; the clean keeps done[3:]
    active, archived = _everything(path)
    assert archived == done[:3] and active[0] == done[3]
    assert HudiTable.open(str(path)).timeline.completed([Action.CLEAN])  # newer than archived
    assert rows(path) == before == rs_rows(path)
    with pytest.raises(ReadOptionError, match=rf"as of {done[1]}: that instant was cleaned"):
        rows(path, done[1])  # archived, and the clean deleted what it needs
    assert rows(path, done[3]) == rs_rows(path, done[3])


def test_bad_settings_are_refused_before_anything_moves(tmp_path: Path) -> None:
    from hudisql.errors import TableServiceError

    _, path, _ = _table(tmp_path, n=8)
    with pytest.raises(TableServiceError, match=r"hoodie.keep.max.commits=20 must be greater"):
        run_archive(HudiTable.open(str(path)), {"hoodie.keep.max.commits": "20"})
    assert archive_files(HudiTable.open(str(path)).storage, ".hoodie/archived") == []


@pytest.mark.parametrize("event", ["written", "pending_deleted", "completed_deleted"])
def test_a_failure_at_each_step_loses_nothing_and_a_rerun_finishes(
    tmp_path: Path, event: str,
) -> None:
    _, path, done = _table(tmp_path)
    before, as_of = rows(path), rows(path, done[3])
    with pytest.raises(Crash):
        run_archive(HudiTable.open(str(path)), on_step=crash_at(event))
    active, archived = _everything(path)
    assert sorted(set(active) | set(archived)) == done  # every instant, once
    assert not set(active) & set(archived)
    assert rows(path) == before == rs_rows(path) and rows(path, done[3]) == as_of
    run_archive(HudiTable.open(str(path)))
    assert _everything(path) == (done[20:], done[:20])
    table = HudiTable.open(str(path))
    assert len(archive_files(table.storage, ".hoodie/archived")) == 1  # nothing listed twice
    assert rows(path) == before == rs_rows(path)


def test_without_a_metadata_compaction_nothing_is_archived(tmp_path: Path) -> None:
    from tests.metadata.skipping_helpers import indexed_table
    from tests.metadata.test_build_validate import row

    table = indexed_table(tmp_path / "t", rows=10)
    options = {"hoodie.metadata.compact.max.delta.commits": "1000", **SMALL}
    client = WriteClient(table, max_records_per_file=5,
                         participants=participants_for(table, options))
    for r in range(8):
        client.upsert([row(r % 10, ts=100 + r)])
    assert not run_archive(HudiTable.open(str(tmp_path / "t")), options)


@pytest.mark.slow
def test_incremental_and_cdc_queries_read_archived_instants(tmp_path: Path) -> None:
    from hudisql.table.read.cdc import read_cdc
    from hudisql.table.read.incremental import read_incremental

    _, path, done = _table(tmp_path, n=8)

    def queries() -> list[object]:
        table = HudiTable.open(str(path))
        return [read_incremental(table, done[1]).sort_by("_hoodie_record_key").to_pylist(),
                read_incremental(table, "earliest").sort_by("_hoodie_record_key").to_pylist(),
                read_cdc(table, done[1]).to_pylist(), read_cdc(table, "earliest").to_pylist()]

    before = queries()
    assert before[2] and before[3]
    archived = run_archive(HudiTable.open(str(path)), SMALL).data
    assert [i.timestamp for i in archived] == done[:3]  # the next compaction keeps 5
    assert queries() == before
    table = HudiTable.open(str(path))
    full = read_incremental(table, done[1], full_scan_fallback=True)
    assert full.sort_by("_hoodie_record_key").to_pylist() == before[0]


def test_show_timeline_archived_and_show_archived_commits(tmp_path: Path) -> None:
    from hudisql.parser import ShowCommits, ShowTimeline, parse_script
    from hudisql.sql.timeline import commit_rows, timeline_rows

    _, path, done = _table(tmp_path)
    run_archive(HudiTable.open(str(path)))
    table = HudiTable.open(str(path))
    rows_ = timeline_rows(table, archived=True)
    assert [r.instant_time for r in rows_] == list(reversed(done))
    assert {r.timeline_type for r in rows_[20:]} == {"ARCHIVED"}
    assert rows_[-1].operation == "INSERT" and rows_[-1].records_written == 4
    assert [r.instant_time for r in timeline_rows(table)] == list(reversed(done[20:]))
    assert len(timeline_rows(table, 25, archived=True)) == 25
    archived = commit_rows(table, 5, archived=True)
    assert [r[0] for r in archived] == list(reversed(done[15:20]))
    assert [r[0] for r in commit_rows(table, 50, True, done[2], done[4])] == [
        done[4], done[3], done[2]]
    [timeline] = [s.command for s in parse_script("SHOW TIMELINE t ARCHIVED LIMIT 3")]
    assert timeline == ShowTimeline(table=timeline.table, limit=3, archived=True)
    [call] = [s.command for s in parse_script(
        f"CALL show_archived_commits(table => 't', limit => 5, start_ts => '{done[1]}')")]
    assert isinstance(call, ShowCommits) and call.archived and call.start_ts == done[1]
    [shown] = [s.command for s in parse_script(
        "CALL show_timeline(table => 't', showArchived => true)")]
    assert isinstance(shown, ShowTimeline) and shown.archived


def test_every_action_archives_with_its_content(tmp_path: Path) -> None:
    from hudisql.services.compaction import run_compaction

    client, path, _ = _table(tmp_path, n=4)
    first = run_compaction(HudiTable.open(str(path)))
    assert first is not None
    assert run_clean(HudiTable.open(str(path)), {"hoodie.cleaner.commits.retained": "1"})
    late = client.upsert([rec(0, 90, "undone")]).instant_time
    rollback = client.rollback(late)
    for r in range(30):
        client.upsert([rec(1, 100 + r, f"w{r}")])
    assert run_compaction(HudiTable.open(str(path))) is not None
    assert run_clean(HudiTable.open(str(path)), {"hoodie.cleaner.commits.retained": "1"})
    before = rows(path)
    run_archive(HudiTable.open(str(path)))
    table = HudiTable.open(str(path))
    archived = {e.timestamp: e for e in ArchivedTimeline(table.storage, table.timeline).entries}
    [entry] = [e for e in read_archive_file(table.storage, archive_files(
        table.storage, ".hoodie/archived")[0][1]) if e.timestamp == first.instant
        and e.state == State.REQUESTED]
    assert entry.action == "compaction" and entry.record["hoodieCompactionPlan"]["operations"]
    assert archived[first.instant].record["hoodieCommitMetadata"]["operationType"] == "COMPACT"
    clean = next(e for e in archived.values() if e.action == "clean")
    assert clean.record["hoodieCleanMetadata"]["earliestCommitToRetain"]
    assert archived[rollback].record["hoodieRollbackMetadata"]["commitsRollback"] == [late]
    assert late not in archived  # rolled back: its files were gone before archival
    assert rows(path) == before == rs_rows(path)


def test_snapshot_reads_never_open_the_archive(tmp_path: Path) -> None:
    """Reads that do not ask for an archived instant never open the archived timeline: they
    still work with its file damaged, while SHOW TIMELINE ... ARCHIVED names the damage."""
    from hudisql.errors import CorruptTableError
    from hudisql.sql.timeline import timeline_rows
    from hudisql.table.read.incremental import read_incremental

    _, path, done = _table(tmp_path)
    before, as_of = rows(path), rows(path, done[30])
    run_archive(HudiTable.open(str(path)))
    [(_, rel)] = archive_files(HudiTable.open(str(path)).storage, ".hoodie/archived")
    (path / rel).write_bytes(b"#HUDI#" + b"\0" * 64)  # a damaged block
    assert rows(path) == before == rs_rows(path) and rows(path, done[30]) == as_of
    point = hudisql.read_table(str(path)).filter(pc.field("_hoodie_record_key") == "k1")
    assert point.num_rows == 1
    table = HudiTable.open(str(path))
    assert read_incremental(table, done[25]).num_rows
    with pytest.raises(CorruptTableError, match=r"archive file .* is damaged"):
        timeline_rows(table, archived=True)


MERGE = {"hoodie.archive.merge.files.batch.size": "3"}


def _archive_five_more(path: Path, runs: range, on_step=None) -> None:  # type: ignore[no-untyped-def]
    """One archival run per ``k`` in ``runs``, each moving 5 more commits out (a file each)."""
    for k in runs:
        keep = {"hoodie.keep.min.commits": str(35 - 5 * k),
                "hoodie.keep.max.commits": str(36 - 5 * k)}
        if on_step is None:
            run_archive(HudiTable.open(str(path)), {**keep, **MERGE})
        else:
            run_archive(HudiTable.open(str(path)), {**keep, **MERGE}, on_step=on_step)


def _versions(path: Path) -> list[int]:
    return [v for v, _ in archive_files(HudiTable.open(str(path)).storage, ".hoodie/archived")]


def test_small_archive_files_are_merged_so_their_number_stays_bounded(tmp_path: Path) -> None:
    _, path, done = _table(tmp_path)
    before = rows(path)
    _archive_five_more(path, range(6))
    # Files 1-3 merged into 1 at the 4th run, then 1, 4 and 5 into 1 at the 6th.
    assert _versions(path) == [1, 6]
    assert _everything(path) == (done[30:], done[:30])
    table = HudiTable.open(str(path))
    merged = read_archive_file(table.storage, ".hoodie/archived/.commits_.archive.1_1-0-1")
    assert sorted({e.timestamp for e in merged}) == done[:25]
    assert len(merged) == 3 * 25  # each state file once
    assert rows(path) == before == rs_rows(path)


@pytest.mark.parametrize("event", ["merge_planned", "merged", "merge_deleted"])
def test_a_merge_cut_short_lists_each_instant_once_and_the_next_run_finishes_it(
    tmp_path: Path, event: str,
) -> None:
    _, path, done = _table(tmp_path)
    before = rows(path)
    _archive_five_more(path, range(3))
    with pytest.raises(Crash):
        _archive_five_more(path, range(3, 4), on_step=crash_at(event))
    assert _everything(path) == (done[20:], done[:20])  # each instant once
    assert rows(path) == before == rs_rows(path)
    run_archive(HudiTable.open(str(path)), {"hoodie.keep.min.commits": "20",
                                            "hoodie.keep.max.commits": "21"})
    assert not (path / ".hoodie" / "archived" / ".hudisql_merge_plan").exists()
    assert _versions(path) == ([1, 2, 3, 4] if event == "merge_planned" else [1, 4])
    assert _everything(path) == (done[20:], done[:20])
    _archive_five_more(path, range(4, 5))  # files 1-4 merged now when the merge was dropped
    assert _versions(path) == ([1, 5] if event == "merge_planned" else [1, 4, 5])
    assert _everything(path) == (done[25:], done[:25])
