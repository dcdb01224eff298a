"""A live instant is never rolled back (issue #18, failure 1).

A writer's requested instant is visible to every other writer as soon as its file exists.
If its heartbeat came only after, a writer in another process whose lock does not exclude
the first (the in-process lock across processes) saw a heartbeat-less instant, rolled it
back as abandoned, and the first writer failed with ``InvalidInstantTransitionError``. The
heartbeat now beats before the requested file is created. Real processes, driven by events.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import pyarrow as pa

from hudisql.table.table import HudiTable
from hudisql.txn.heartbeat import heartbeat_path
from hudisql.txn.lock import LOCK_PROVIDER, InProcessLockProvider
from hudisql.txn.rollback import rollback_abandoned
from hudisql.txn.writer import WriteClient, create_table

SPAWN = mp.get_context("spawn")
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string())])
OPTIONS = {LOCK_PROVIDER: "in-process"}


def _write_pausing_when_visible(path: str, visible: Any, go: Any, result: Any) -> None:
    """Child: upsert, pausing right after its requested instant became visible."""

    def hook(event: str, detail: str) -> None:
        if event == "requested":
            visible.set()
            go.wait(60)

    try:
        done = WriteClient(HudiTable.open(path), on_step=hook, options=OPTIONS).upsert(
            pa.table({"id": ["a"], "ts": [2], "v": ["a1"]}))
        result.put(("ok", done.instant_time))
    except BaseException as exc:
        result.put((type(exc).__name__, str(exc)))


def test_a_writer_in_another_process_does_not_roll_back_an_instant_it_just_saw(
    tmp_path: Path,
) -> None:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", precombine_field="ts",
                         table_type="MERGE_ON_READ")
    WriteClient(table, options=OPTIONS).insert(pa.table({"id": ["a"], "ts": [1], "v": ["a0"]}))
    visible, go, result = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    child = SPAWN.Process(target=_write_pausing_when_visible,
                          args=(table.base_path, visible, go, result))
    child.start()
    try:
        assert visible.wait(120), "the writer never created its instant"
        (seen,) = table.reload().timeline.pending()
        had_heartbeat = table.storage.exists(heartbeat_path(seen.timestamp))
        # This process's writer starts: its (in-process) lock does not exclude the child.
        with InProcessLockProvider().lock(table.base_path, timeout=5):
            rolled_back = rollback_abandoned(table, OPTIONS)
    finally:
        go.set()
        outcome = result.get(timeout=120)
        child.join(60)
    # Before the fix: rolled_back == [seen] and the child failed with
    # InvalidInstantTransitionError (its requested instant was gone).
    assert (had_heartbeat, rolled_back, outcome) == (True, [], ("ok", seen.timestamp))
    completed = table.reload().timeline.get(seen.timestamp)
    assert completed is not None and completed.is_completed
    assert {r["v"] for r in table.reload().read().to_pylist()} == {"a1"}
