"""Writers of one table with different locks are refused (issue #18, failure 3).

With the in-process lock in two processes, neither lock excludes the other writer: the
conflict check and the commit were not atomic between them, and two writes of one record
could both complete (one update lost). Each writer now checks, under its lock, the lock the
table's writers use; a live writer with another lock makes it fail with LockError.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudisql.errors import LockError
from hudisql.table.table import HudiTable
from hudisql.txn.lock import LOCK_FILESYSTEM_PATH, LOCK_PROVIDER
from hudisql.txn.shared_lock import LOCK_RECORD, recorded_lock
from hudisql.txn.writer import WriteClient, create_table

SPAWN = mp.get_context("spawn")
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string())])
IN_PROCESS = {LOCK_PROVIDER: "in-process"}


def _table(tmp_path: Path) -> HudiTable:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", precombine_field="ts",
                         table_type="MERGE_ON_READ")
    WriteClient(table, options=IN_PROCESS).insert(
        pa.table({"id": ["a"], "ts": [1], "v": ["a0"]}))
    return table.reload()


def _upsert_pausing_before_completing(path: str, value: str, paused: Any, go: Any,
                                      result: Any) -> None:
    """Child: upsert ``a = value`` with the in-process lock, pausing just before completing
    (its conflict check passed)."""

    def hook(event: str, detail: str) -> None:
        if event == "completing":
            paused.set()
            go.wait(60)

    try:
        client = WriteClient(HudiTable.open(path), on_step=hook, options=IN_PROCESS)
        done = client.upsert(pa.table({"id": ["a"], "ts": [2], "v": [value]}))
        result.put(("ok", done.instant_time))
    except BaseException as exc:
        result.put((type(exc).__name__, str(exc)))


def _values(table: HudiTable) -> dict[str, str]:
    return {r["id"]: r["v"] for r in table.reload().read().to_pylist()}


def test_two_processes_with_in_process_locks_cannot_both_commit(tmp_path: Path) -> None:
    table = _table(tmp_path)
    paused, go, result = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    child = SPAWN.Process(target=_upsert_pausing_before_completing,
                          args=(table.base_path, "child", paused, go, result))
    child.start()
    ours: object
    try:
        assert paused.wait(120), "the child writer never reached its commit"
        try:
            # Same record, same kind of lock, another process: it does not exclude the child.
            ours = WriteClient(table.reload(), options=IN_PROCESS).upsert(
                pa.table({"id": ["a"], "ts": [3], "v": ["parent"]})).instant_time
        except LockError as exc:
            ours = exc
    finally:
        go.set()
        outcome = result.get(timeout=120)
        child.join(60)
    # Before the fix both completed: "parent" was committed, then lost under "child".
    assert outcome[0] == "ok"
    assert isinstance(ours, LockError), f"both writes completed: {ours}"
    message = str(ours)
    assert f"in-process lock of process {os.getpid()}" in message
    assert f"in-process lock of process {child.pid}" in message
    assert "hoodie.write.lock.provider" in message
    assert _values(table) == {"a": "child"}
    timeline = table.reload().timeline
    assert not timeline.pending()  # the refused writer left nothing behind


def test_a_writer_with_another_lock_may_write_once_no_writer_is_live(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert recorded_lock(table) == f"in-process lock of process {os.getpid()} on " + \
        os.uname().nodename
    file_lock = {LOCK_PROVIDER: "file", LOCK_FILESYSTEM_PATH: str(tmp_path / "locks")}
    done = WriteClient(table, options=file_lock).upsert(
        pa.table({"id": ["a"], "ts": [2], "v": ["a1"]}))
    record = json.loads(table.storage.read_bytes(LOCK_RECORD))
    assert record["lock"].startswith(f"file lock {tmp_path / 'locks'}")
    assert record["provider"] == "hudisql.txn.lock.FileLockProvider"
    assert record["instant"] is None  # recorded when the transaction started
    assert _values(table) == {"a": "a1"} and done.instant_time


def test_a_live_writer_with_another_lock_refuses_a_start(tmp_path: Path) -> None:
    table = _table(tmp_path)
    file_lock = {LOCK_PROVIDER: "file", LOCK_FILESYSTEM_PATH: str(tmp_path / "locks")}
    refused: list[LockError] = []

    def start_other(event: str, detail: str) -> None:
        if event == "file":  # our instant is inflight with a fresh heartbeat
            with pytest.raises(LockError) as info:
                WriteClient(table.reload(), options=IN_PROCESS).upsert(
                    pa.table({"id": ["b"], "ts": [1], "v": ["b0"]}))
            refused.append(info.value)

    WriteClient(table, options=file_lock, on_step=start_other).upsert(
        pa.table({"id": ["a"], "ts": [2], "v": ["a1"]}))
    assert len(refused) == 1 and "file lock" in str(refused[0])
    assert _values(table) == {"a": "a1"}
    assert not table.reload().timeline.pending()
