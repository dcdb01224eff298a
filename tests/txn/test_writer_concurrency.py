"""Pure-Python writes share the commit protocol's guarantees with the Spark pipeline.

A live WriteClient instant keeps a heartbeat, so another writer starting meanwhile does not
roll it back as abandoned; a write whose instant was rolled back under it (its heartbeat had
stalled) fails instead of publishing a commit that rollback voided; two writers on one file
group: the later one fails and leaves nothing. Interleavings are forced with on_step hooks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import hudisql
from hudisql.errors import CommitConflictError
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from hudisql.table.write.rollback import rollback_instant
from hudisql.txn.transaction import Transaction
from hudisql.txn.writer import WriteClient, create_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string())])


def _table(tmp_path: Path, table_type: str) -> HudiTable:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", precombine_field="ts",
                         table_type=table_type)
    WriteClient(table).insert(pa.table({"id": ["a", "b"], "ts": [1, 1], "v": ["a0", "b0"]}))
    return table.reload()


def _values(path: Path) -> dict[str, str]:
    rows = hudisql.read_table(str(path)).to_pylist()
    return {r["id"]: r["v"] for r in rows}


def _at(event: str, action: Callable[[str], None]) -> Callable[[str, str], None]:
    def hook(name: str, detail: str) -> None:
        if name == event:
            action(detail)
    return hook


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_another_writer_starting_meanwhile_does_not_roll_back_a_live_write(
    tmp_path: Path, table_type: str
) -> None:
    table = _table(tmp_path, table_type)
    other = Transaction(table, {}, "UPSERT")

    def start_other(_: str) -> None:
        other.start()  # rolls back abandoned pending instants: ours must not be one

    client = WriteClient(table, on_step=_at("validating", start_other))
    client.upsert(pa.table({"id": ["a"], "ts": [2], "v": ["a1"]}))
    other.abort()
    assert _values(tmp_path / "t") == {"a": "a1", "b": "b0"}
    assert not table.reload().timeline.pending([Action.COMMIT, Action.DELTACOMMIT])


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_a_write_rolled_back_under_it_fails_instead_of_publishing_a_voided_commit(
    tmp_path: Path, table_type: str
) -> None:
    table = _table(tmp_path, table_type)

    def roll_back_ours(instant: str) -> None:
        # What another writer does to an instant whose heartbeat it saw expire.
        rollback_instant(table.reload(), instant)

    client = WriteClient(table, on_step=_at("validating", roll_back_ours))
    with pytest.raises(CommitConflictError, match="another writer rolled it back"):
        client.upsert(pa.table({"id": ["a"], "ts": [2], "v": ["a1"]}))
    timeline = table.reload().timeline
    assert not timeline.pending([Action.COMMIT, Action.DELTACOMMIT])
    assert len(timeline.completed([Action.COMMIT, Action.DELTACOMMIT])) == 1  # the insert only
    assert _values(tmp_path / "t") == {"a": "a0", "b": "b0"}


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_two_writers_on_one_file_group_the_later_one_fails_and_leaves_nothing(
    tmp_path: Path, table_type: str
) -> None:
    table = _table(tmp_path, table_type)
    both_written = threading.Barrier(2, timeout=30)
    first_done = threading.Event()
    outcome: dict[str, object] = {}

    def writer(name: str, value: str, wait_for_first: bool) -> None:
        def hook(event: str, _: str) -> None:
            if event == "validating":
                both_written.wait()  # both have written their files before either validates
                if wait_for_first:
                    assert first_done.wait(30)
        client = WriteClient(table, on_step=hook)
        try:
            client.upsert(pa.table({"id": ["a"], "ts": [5], "v": [value]}))
            outcome[name] = "committed"
        except CommitConflictError as exc:
            outcome[name] = exc
        finally:
            if not wait_for_first:
                first_done.set()

    first = threading.Thread(target=writer, args=("first", "first", False))
    second = threading.Thread(target=writer, args=("second", "second", True))
    first.start()
    second.start()
    first.join(60)
    second.join(60)
    assert outcome["first"] == "committed"
    error = outcome["second"]
    assert isinstance(error, CommitConflictError) and "conflicts with" in str(error)
    assert _values(tmp_path / "t") == {"a": "first", "b": "b0"}
    timeline = table.reload().timeline
    assert not timeline.pending([Action.COMMIT, Action.DELTACOMMIT])
    assert len(timeline.completed([Action.ROLLBACK])) == 1
