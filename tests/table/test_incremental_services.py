"""Incremental and CDC queries over ranges with a log compaction and a compaction inside.

Table services rewrite files, not records: a log compaction keeps each record's commit time,
and a compaction folds logs into a base file with the same rows. A range holding them must
return exactly what it returns without them, and hudi-rs must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hudisql
from hudisql.services.maintenance import Maintenance
from hudisql.table.read.cdc import read_cdc
from hudisql.table.read.incremental import read_incremental
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.table.test_incremental import fares, hudi_rs_incremental, make_history, records

SMALL_BLOCKS = {"hoodie.log.compaction.blocks.threshold": "2"}


def serviced_history(root: Path) -> tuple[str, list[str], str, str]:
    """A MOR table whose history is: the shared five writes, three updates of one file group
    (log blocks), a log compaction, a compaction, one more update.

    Returns (path, [update instants], log compaction instant, compaction instant).
    """
    history = make_history(root, "MERGE_ON_READ")
    client = WriteClient(HudiTable.open(history.path))
    updates = [client.upsert(records([0, 2], 10 + n, 1000.0 * (n + 1))).instant_time
               for n in range(3)]
    services = Maintenance(history.path)
    logcompaction = services.schedule_log_compaction(**SMALL_BLOCKS)
    assert logcompaction is not None, "three log blocks in one slice qualify at threshold 2"
    services.run_log_compaction(logcompaction, **SMALL_BLOCKS)
    done = services.run_compaction()
    assert done is not None
    compaction = done.instant
    updates.append(WriteClient(HudiTable.open(history.path)).upsert(
        records([4], 20, 7.0)).instant_time)
    return history.path, updates, logcompaction, compaction


def _at(table: HudiTable, instant: str) -> str:
    """Where a range ending at ``instant`` ends: its completion time (version 9)."""
    found = table.timeline.get(instant)
    assert found is not None
    return found.completion_time or instant


@pytest.fixture
def serviced(tmp_path: Path) -> tuple[str, list[str], str, str]:
    return serviced_history(tmp_path)


def test_services_inside_the_range_change_no_incremental_row(
        serviced: tuple[str, list[str], str, str]) -> None:
    path, updates, logcompaction, compaction = serviced
    table = HudiTable.open(path)
    instants = [i.timestamp for i in table.timeline.completed()]
    assert {logcompaction, compaction} <= set(instants)
    begin, end = _at(table, updates[0]), _at(table, updates[-1])
    got = read_incremental(table, begin, end)
    # The two later updates of k00/k02 (the last wins) and the final update of k04.
    assert fares(got) == {"k00": 3000.0, "k02": 3002.0, "k04": 11.0}
    assert set(got.column("_hoodie_commit_time").to_pylist()) == {updates[2], updates[3]}
    assert fares(got) == hudi_rs_incremental(path, begin, end)
    # Exactly the snapshot as of the end, cut to the range's commit times.
    snapshot = hudisql.read_table(path, as_of=updates[-1]).to_pylist()
    assert sorted(r["uuid"] for r in snapshot
                  if updates[0] < r["_hoodie_commit_time"] <= updates[-1]) == sorted(fares(got))


def test_a_range_of_only_services_is_empty(serviced: tuple[str, list[str], str, str]) -> None:
    path, updates, _, compaction = serviced
    table = HudiTable.open(path)
    begin, end = _at(table, updates[2]), _at(table, compaction)
    assert read_incremental(table, begin, end).num_rows == 0
    assert hudi_rs_incremental(path, begin, end) == {}
    assert read_cdc(table, begin, end).num_rows == 0


def test_cdc_over_services_shows_only_the_writes(
        serviced: tuple[str, list[str], str, str]) -> None:
    path, updates, _, _ = serviced
    table = HudiTable.open(path)
    changes = read_cdc(table, _at(table, updates[0]), _at(table, updates[-1]))
    # k00 and k02 updated by two of the range's writes, k04 by one: five updates, nothing
    # from the log compaction or the compaction.
    assert changes.column("op").to_pylist() == ["u"] * 5
