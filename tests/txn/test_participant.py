"""Commit participants: called under the table lock before the instant completes; a
participant's failure rolls the data instant back; every rollback tells the participants.

Spark-free: the pure-Python writer commits through the same Transaction as the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest

import hudisql
from hudisql.errors import LockError
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Action, Instant
from hudisql.table.table import HudiTable
from hudisql.txn.lock import lock_provider_for
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.transaction import Transaction
from hudisql.txn.writer import WriteClient, create_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string())])


class Boom(RuntimeError):
    """A participant's failure."""


def _lock_is_held(table: HudiTable) -> bool:
    """True when the table's (default) lock is taken right now."""
    try:
        release = lock_provider_for({}).acquire(table.base_path, timeout=0)
    except LockError:
        return True
    release()
    return False


@dataclass
class Recorder:
    """A participant that records what it saw, and can be told to fail on commit."""

    name: str
    log: list[str]
    fail: bool = False
    seen: list[tuple[str, str, bool, int]] = field(default_factory=list)

    def on_commit(self, table: HudiTable, instant: Instant, metadata: CommitMetadata) -> None:
        state = table.reload().timeline.get(instant.timestamp)
        assert state is not None
        self.seen.append(("commit", str(state.state), _lock_is_held(table),
                          len(metadata.write_stats())))
        self.log.append(f"{self.name}.on_commit {instant.timestamp}")
        if self.fail:
            raise Boom(f"{self.name} failed")

    def on_rollback(self, table: HudiTable, instant: Instant) -> None:
        self.seen.append(("rollback", instant.timestamp, _lock_is_held(table), 0))
        self.log.append(f"{self.name}.on_rollback {instant.timestamp}")


def _table(tmp_path: Path) -> HudiTable:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", precombine_field="ts",
                         table_type="MERGE_ON_READ")
    WriteClient(table).insert(pa.table({"id": ["a", "b"], "ts": [1, 1], "v": ["a0", "b0"]}))
    return table.reload()


def _values(table: HudiTable) -> dict[str, str]:
    return {r["id"]: r["v"] for r in hudisql.read_table(table.base_path).to_pylist()}


def test_the_protocol_is_what_the_seam_says() -> None:
    participant: CommitParticipant = Recorder("p", [])  # structural: the Protocol fits
    assert callable(participant.on_commit) and callable(participant.on_rollback)


def test_participants_run_in_order_under_the_lock_before_the_instant_completes(
    tmp_path: Path,
) -> None:
    table = _table(tmp_path)
    log: list[str] = []
    first, second = Recorder("first", log), Recorder("second", log)
    done = WriteClient(table, participants=[first, second]).upsert(
        pa.table({"id": ["a", "c"], "ts": [2, 2], "v": ["a1", "c1"]}))
    ts = done.instant_time
    assert log == [f"first.on_commit {ts}", f"second.on_commit {ts}"]
    # Inflight while it ran, with the lock held, and given the commit's write stats.
    assert first.seen == [("commit", "INFLIGHT", True, len(done.write_stats()))]
    assert len(done.write_stats()) >= 1
    completed = table.reload().timeline.get(ts)
    assert completed is not None and completed.is_completed
    assert not _lock_is_held(table)
    assert _values(table) == {"a": "a1", "b": "b0", "c": "c1"}


def test_a_failing_participant_rolls_the_data_instant_back(tmp_path: Path) -> None:
    table = _table(tmp_path)
    before = _values(table)
    log: list[str] = []
    first, failing = Recorder("first", log), Recorder("failing", log, fail=True)
    client = WriteClient(table, participants=[first, failing])
    with pytest.raises(Boom):
        client.upsert(pa.table({"id": ["a", "c"], "ts": [2, 2], "v": ["a1", "c1"]}))
    timeline = table.reload().timeline
    rollbacks = [i for i in timeline.completed() if i.action == Action.ROLLBACK]
    assert len(rollbacks) == 1
    (ts,) = timeline.rollback_metadata(rollbacks[0]).rolled_back()
    assert timeline.get(ts) is None and not timeline.pending()
    # Both were told of the rollback, under the lock, after their on_commit.
    assert log == [f"first.on_commit {ts}", f"failing.on_commit {ts}",
                   f"first.on_rollback {ts}", f"failing.on_rollback {ts}"]
    assert first.seen[-1] == ("rollback", ts, True, 0)
    assert _values(table) == before
    assert not _lock_is_held(table)


def test_rollbacks_call_on_rollback(tmp_path: Path) -> None:
    table = _table(tmp_path)
    log: list[str] = []
    participant = Recorder("p", log)

    def crash(event: str, detail: str) -> None:
        if event == "file":
            raise Boom("writer died")

    # A writer dies mid-write; its user rolls it back by name.
    client = WriteClient(table, participants=[participant], on_step=crash)
    with pytest.raises(Boom):
        client.upsert(pa.table({"id": ["a"], "ts": [2], "v": ["a1"]}))
    (pending,) = table.reload().timeline.pending()
    client.on_step = lambda event, detail: None
    client.rollback(pending.timestamp)
    assert log == [f"p.on_rollback {pending.timestamp}"]
    assert participant.seen == [("rollback", pending.timestamp, True, 0)]

    # Another dies; the next transaction rolls it back as abandoned (no heartbeat left).
    client.on_step = crash
    with pytest.raises(Boom):
        client.upsert(pa.table({"id": ["b"], "ts": [2], "v": ["b1"]}))
    (abandoned,) = table.reload().timeline.pending()
    txn = Transaction(table.reload(), {}, "UPSERT", participants=[participant])
    txn.start()
    txn.abort()
    assert log[1:] == [f"p.on_rollback {abandoned.timestamp}", f"p.on_rollback {txn.instant_time}"]
    assert not table.reload().timeline.pending()
    assert _values(table) == {"a": "a0", "b": "b0"}


def test_a_refused_rollback_tells_no_participant(tmp_path: Path) -> None:
    table = _table(tmp_path)
    first = table.timeline.completed()[0].timestamp
    WriteClient(table).upsert(pa.table({"id": ["a"], "ts": [2], "v": ["a1"]}))
    log: list[str] = []
    client = WriteClient(table.reload(), participants=[Recorder("p", log)])
    with pytest.raises(hudisql.errors.WriteError, match="later"):
        client.rollback(first)  # a completed write a later one builds on
    assert log == []
