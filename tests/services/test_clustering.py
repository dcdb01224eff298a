"""Clustering in the core (no Spark): Hudi's plan format, rows equal through hudisql and
hudi-rs for MOR (with log files in the clustered groups) and COW, the layouts, refusals that
leave the table byte-identical, writers under a pending clustering, rollback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hudisql.errors import CommitConflictError, TableServiceError, WriteError
from hudisql.services.clustering import (
    execute_clustering,
    run_clustering,
    schedule_clustering,
    show_clustering,
)
from hudisql.table.format.commit_metadata import read_avro_container
from hudisql.table.format.instant import Action
from hudisql.table.services.clustering import clustering_plan, is_clustering
from hudisql.table.services.layout import (
    curve_keys,
    cut_points,
    layout_strategy,
    ordered,
    sort_indices,
)
from hudisql.table.table import HudiTable
from hudisql.txn.rollback import rollback_write
from hudisql.txn.writer import WriteClient
from tests.services.kit import crash_at, files, mor_table, rec, rows, rs_rows, upserts

SORT = "hoodie.clustering.plan.strategy.sort.columns"
LAYOUT = "hoodie.layout.optimize.strategy"


#: A pending clustering's action: replacecommit (version 6) or clustering (8/9).
_CLUSTERING_ACTIONS = (Action.REPLACECOMMIT, Action.CLUSTERING)


def _many_files(tmp_path: Path, table_type: str) -> tuple[WriteClient, Path]:
    """Four inserts (four file groups per city) and two upserts (logs on MOR)."""
    client = mor_table(tmp_path, keys=10, table_type=table_type)
    for r in range(3):
        client.insert([rec(i, 1, f"x{(i * 7) % 13}") for i in range(10 + 10 * r, 20 + 10 * r)])
    upserts(client, 2, keys=10)
    return client, tmp_path / "t"


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_clustering_rewrites_small_groups_with_equal_rows(tmp_path: Path,
                                                          table_type: str) -> None:
    _, path = _many_files(tmp_path, table_type)
    before = rows(path)
    table = HudiTable.open(str(path))
    if table_type == "MERGE_ON_READ":
        assert any(s.has_log_files for s in table.file_slices())
    [result] = run_clustering(table, {SORT: "v"})
    assert result.file_groups == 8
    assert rows(path) == before == rs_rows(path)
    table = HudiTable.open(str(path))
    slices = table.file_slices()
    assert len(slices) == 2 and not any(s.has_log_files for s in slices)
    # Each new file holds its partition's rows sorted by v; commit times are kept.
    for s in slices:
        assert s.base_file is not None
        got = pa.parquet.read_table(str(path / s.base_file.path))
        assert got.column("v").to_pylist() == sorted(got.column("v").to_pylist())
    # Hudi's format: the requested replacecommit (version 6) or clustering (8/9) holds
    # HoodieRequestedReplaceMetadata.
    requested = (path / ".hoodie" / f"{result.instant}.replacecommit.requested"
                 if table.properties.version == 6 else
                 path / ".hoodie" / "timeline" / f"{result.instant}.clustering.requested")
    name, record = read_avro_container(requested.read_bytes())
    assert name == "org.apache.hudi.avro.model.HoodieRequestedReplaceMetadata"
    plan = record["clusteringPlan"]
    assert record["operationType"] == "CLUSTER"
    assert plan["strategy"]["strategyClassName"].endswith("SparkSortAndSizeExecutionStrategy")
    assert plan["strategy"]["strategyParams"][SORT] == "v"
    assert plan["preserveHoodieMetadata"] is True
    assert sorted(len(g["slices"]) for g in plan["inputGroups"]) == [4, 4]
    assert all(s["dataFilePath"].startswith(("/", "file:")) or not s["dataFilePath"]
               for g in plan["inputGroups"] for s in g["slices"])
    metadata = table.timeline.commit_metadata(result.instant)
    assert metadata.operation_type == "CLUSTER"
    assert sum(len(v) for v in metadata.partition_to_replace_file_ids.values()) == 8
    assert is_clustering(table.timeline, result.instant)
    [shown] = show_clustering(table).to_pylist()
    assert shown == {"timestamp": result.instant, "input_group_size": 2,
                     "state": "COMPLETED", "involved_partitions": "city=la,city=sf"}
    # Writes after clustering go on as before, and a second run has nothing small to merge.
    WriteClient(table).upsert([rec(3, 99, "after")])
    assert {r["v"] for r in rows(path) if r["id"] == "k3"} == {"after"}
    assert rows(path) == rs_rows(path)
    assert run_clustering(HudiTable.open(str(path))) == []


def test_size_settings_split_groups_and_outputs(tmp_path: Path) -> None:
    _, path = _many_files(tmp_path, "COPY_ON_WRITE")
    before = rows(path)
    table = HudiTable.open(str(path))
    sizes = sorted(s.total_size for s in table.file_slices())
    options = {"hoodie.clustering.plan.strategy.max.bytes.per.group": str(2 * sizes[-1] + 1),
               "hoodie.clustering.plan.strategy.target.file.max.bytes": str(sizes[0]),
               "hoodie.clustering.plan.partition.filter.mode": "SELECTED_PARTITIONS",
               "hoodie.clustering.plan.strategy.partition.selected": "city=sf"}
    instant = schedule_clustering(table, options)
    assert instant is not None
    plan = clustering_plan(HudiTable.open(str(path)).timeline, instant)
    assert [len(g.slices) for g in plan.groups] == [2, 2]
    assert {g.partition_path for g in plan.groups} == {"city=sf"}
    assert all(g.num_output_file_groups >= 2 for g in plan.groups)
    execute_clustering(HudiTable.open(str(path)))
    assert rows(path) == before == rs_rows(path)
    slices = HudiTable.open(str(path)).file_slices()
    assert len([s for s in slices if s.partition_path == "city=la"]) == 4


def test_layouts_order_rows_along_their_curves() -> None:
    grid = pa.table({"a": [x for _ in range(8) for x in range(8)],
                     "b": [y for y in range(8) for _ in range(8)]})
    for layout in ("z-order", "hilbert"):
        keys = curve_keys(grid, ["a", "b"], layout)
        assert len(set(keys.tolist())) == 64  # one point per cell
        order = np.argsort(keys)
        a, b = np.array(grid["a"])[order], np.array(grid["b"])[order]
        steps = np.abs(np.diff(a)) + np.abs(np.diff(b))
        if layout == "hilbert":
            assert steps.max() == 1  # every step of a Hilbert curve moves to a neighbour
        # Either column is local: each quarter of the order spans half of each axis.
        for q in range(4):
            part = slice(16 * q, 16 * q + 16)
            assert np.ptp(a[part]) == 3 and np.ptp(b[part]) == 3
    # Files are cut where the curve jumps most nearby: whole cells, so with four files each
    # holds one quadrant of the grid, though the cut may move off the equal split.
    for layout in ("z-order", "hilbert"):
        rows, keys = ordered(grid.slice(3), ["a", "b"], layout)
        assert keys is not None
        bounds = list(zip([0, *cut_points(keys, 4)], [*cut_points(keys, 4), rows.num_rows],
                          strict=True))
        assert len(bounds) == 4
        for start, end in bounds:
            part = rows.slice(start, end - start)
            assert np.ptp(np.array(part["a"])) == 3 and np.ptp(np.array(part["b"])) == 3
    linear = sort_indices(grid, ["b", "a"], "linear").to_pylist()
    assert linear == list(range(64))
    assert layout_strategy("ZORDER") == "z-order"
    with pytest.raises(TableServiceError, match="'spiral' is not a layout strategy"):
        layout_strategy("spiral")


@pytest.mark.parametrize("options, message", [
    ({SORT: "nope"}, "sort column 'nope' is not a column of the table"),
    ({SORT: "v", LAYOUT: "spiral"}, "is not a layout strategy"),
    ({LAYOUT: "hilbert"}, "orders rows by columns, and none are given"),
    ({"hoodie.clustering.plan.strategy.max.bytes.per.group": "zero"}, "is not an integer"),
])
def test_bad_input_is_refused_and_the_table_stays_byte_identical(
        tmp_path: Path, options: dict[str, str], message: str) -> None:
    _, path = _many_files(tmp_path, "MERGE_ON_READ")
    before = files(path)
    with pytest.raises(TableServiceError, match=message):
        run_clustering(HudiTable.open(str(path)), options)
    assert files(path) == before


def test_a_pending_clustering_on_the_same_groups_is_refused(tmp_path: Path) -> None:
    _, path = _many_files(tmp_path, "MERGE_ON_READ")
    instant = schedule_clustering(HudiTable.open(str(path)), {SORT: "v"})
    assert instant is not None
    before = files(path)
    with pytest.raises(TableServiceError, match=f"pending clustering {instant} "
                                                r"\(REQUESTED\); run it first"):
        run_clustering(HudiTable.open(str(path)), {SORT: "ts"})
    with pytest.raises(TableServiceError, match="is a completed deltacommit"):
        first = HudiTable.open(str(path)).timeline.completed()[0].timestamp
        execute_clustering(HudiTable.open(str(path)), first)
    assert files(path) == before
    [done] = execute_clustering(HudiTable.open(str(path)))
    assert done.instant == instant


def _writer_at(step: str, write: Any) -> Any:
    """A step hook that runs ``write`` when the clustering reaches ``step`` (a barrier:
    the write happens between the clustering's read and its commit)."""
    def hook(event: str, instant: str) -> None:
        if event == step:
            write()
    return hook


def test_a_writer_under_a_pending_clustering_conflicts_and_loses_nothing(
        tmp_path: Path) -> None:
    _, path = _many_files(tmp_path, "MERGE_ON_READ")
    outcome: list[BaseException] = []

    def update() -> None:
        try:
            WriteClient(HudiTable.open(str(path))).upsert([rec(2, 500, "during")])
        except CommitConflictError as exc:
            outcome.append(exc)

    [result] = run_clustering(HudiTable.open(str(path)), {SORT: "v"},
                              on_step=_writer_at("written", update))
    [refused] = outcome
    assert "pending clustering" in str(refused) and "retry after" in str(refused)
    assert [r["v"] for r in rows(path) if r["id"] == "k2"] == ["u1-2"]
    # Retried after the clustering completed, the update lands on the new file group.
    WriteClient(HudiTable.open(str(path))).upsert([rec(2, 500, "during")])
    assert [r["v"] for r in rows(path) if r["id"] == "k2"] == ["during"]
    assert rows(path) == rs_rows(path)
    assert result.instant in {i.timestamp for i in HudiTable.open(str(path)).timeline.completed()}


def test_with_the_allow_strategy_the_writer_wins_and_the_clustering_is_dropped(
        tmp_path: Path) -> None:
    _, path = _many_files(tmp_path, "MERGE_ON_READ")
    allow = {"hoodie.clustering.updates.strategy":
             "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"}

    def update() -> None:
        WriteClient(HudiTable.open(str(path)), options=allow).upsert([rec(2, 500, "during")])

    with pytest.raises(TableServiceError, match="writes landed on file groups"):
        run_clustering(HudiTable.open(str(path)), {SORT: "v"},
                       on_step=_writer_at("written", update))
    table = HudiTable.open(str(path))
    assert not [i for i in table.timeline.pending() if i.action in _CLUSTERING_ACTIONS]
    assert [r["v"] for r in rows(path) if r["id"] == "k2"] == ["during"]
    assert rows(path) == rs_rows(path)
    assert len(table.file_slices()) == 8  # nothing replaced
    with pytest.raises(WriteError, match="is not supported"):
        WriteClient(table, options={"hoodie.clustering.updates.strategy": "Mine"}).upsert(
            [rec(2, 501, "x")])


@pytest.mark.parametrize("step", ["inflight", "written", "completing"])
def test_a_failed_run_is_reverted_and_runs_again(tmp_path: Path, step: str) -> None:
    _, path = _many_files(tmp_path, "MERGE_ON_READ")
    before = rows(path)
    with pytest.raises(Exception, match=step):
        run_clustering(HudiTable.open(str(path)), {SORT: "v"}, on_step=crash_at(step))
    table = HudiTable.open(str(path))
    [pending] = [i for i in table.timeline.pending() if i.action in _CLUSTERING_ACTIONS]
    assert pending.is_requested and rows(path) == before == rs_rows(path)
    assert len(table.file_slices()) == 8
    [done] = execute_clustering(table)
    assert done.instant == pending.timestamp
    assert rows(path) == before == rs_rows(path)


def test_rolling_back_a_completed_clustering_restores_the_groups(tmp_path: Path) -> None:
    _, path = _many_files(tmp_path, "MERGE_ON_READ")
    before = rows(path)
    groups = {(s.partition_path, s.file_id) for s in HudiTable.open(str(path)).file_slices()}
    [done] = run_clustering(HudiTable.open(str(path)), {SORT: "v"})
    rollback_write(HudiTable.open(str(path)), done.instant, {})
    table = HudiTable.open(str(path))
    assert {(s.partition_path, s.file_id) for s in table.file_slices()} == groups
    assert rows(path) == before == rs_rows(path)
    assert show_clustering(table).num_rows == 0


CHILD = """
import os, sys
from hudisql.table.table import HudiTable
from hudisql.services.clustering import run_clustering

path, step = sys.argv[1:3]

def die(event, instant):
    if event == step:
        os._exit(17)

run_clustering(HudiTable.open(path), {"hoodie.clustering.plan.strategy.sort.columns": "v"},
               on_step=die)
os._exit(0)
"""


@pytest.mark.parametrize("step", ["inflight", "written", "completing"])
def test_a_killed_clustering_is_finished_by_the_next_run(tmp_path: Path, step: str) -> None:
    import subprocess
    import sys

    _, path = _many_files(tmp_path, "MERGE_ON_READ")
    before = rows(path)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), step],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 17, done.stderr
    table = HudiTable.open(str(path))
    [pending] = [i for i in table.timeline.pending() if i.action in _CLUSTERING_ACTIONS]
    assert pending.is_inflight and rows(path) == before == rs_rows(path)
    # A writer meanwhile leaves the dead clustering alone (it is not an insert overwrite).
    for beat in (path / ".hoodie" / ".heartbeat").glob("*"):
        beat.unlink()  # the dead process beats no more
    WriteClient(table).insert([rec(100, 1, "new")])
    before = rows(path)
    finished = run_clustering(HudiTable.open(str(path)))  # finishes it, then plans anew
    assert finished[0].instant == pending.timestamp
    assert rows(path) == before == rs_rows(path)
    # One file per partition from the finished run, none left of the dead one.
    assert len(list(path.rglob(f"*_{pending.timestamp}.parquet"))) == 2


DIE_IN_COMMIT = """
import os, sys
from hudisql.metadata.participant import participants_for
from hudisql.services.clustering import run_clustering
from hudisql.table.table import HudiTable

class Die:
    def on_commit(self, table, instant, metadata):
        os._exit(17)  # the metadata table has taken its part; the instant is not complete

    def on_rollback(self, table, instant):
        pass

table = HudiTable.open(sys.argv[1])
run_clustering(table, {"hoodie.clustering.plan.strategy.sort.columns": "v"},
               participants=[*participants_for(table), Die()])
"""


def test_killed_after_the_metadata_table_took_its_part(tmp_path: Path) -> None:
    import subprocess
    import sys

    from hudisql.metadata.build import build_partitions
    from hudisql.metadata.participant import participants_for
    from hudisql.metadata.validate import validate_metadata_table

    client = mor_table(tmp_path, keys=10)
    build_partitions(client.table, ("files", "column_stats", "record_index"))
    for r in range(2):
        table = HudiTable.open(str(tmp_path / "t"))
        WriteClient(table, participants=participants_for(table)).insert(
            [rec(i, 1, f"x{i}") for i in range(10 + 10 * r, 20 + 10 * r)])
    path = tmp_path / "t"
    before = rows(path)
    done = subprocess.run([sys.executable, "-c", DIE_IN_COMMIT, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 17, done.stderr
    assert rows(path) == before and validate_metadata_table(HudiTable.open(str(path))).ok
    for beat in (path / ".hoodie" / ".heartbeat").glob("*"):
        beat.unlink()
    table = HudiTable.open(str(path))
    [finished] = run_clustering(table, participants=participants_for(table))
    assert rows(path) == before == rs_rows(path)
    assert validate_metadata_table(HudiTable.open(str(path))).ok
    assert finished.instant in {i.timestamp for i in HudiTable.open(str(path)).timeline.completed()}
