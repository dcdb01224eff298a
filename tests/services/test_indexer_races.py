"""RFC-45's races and error cases with real concurrent writers whose commits carry the
metadata-table participant (``participants_for(table)``, as every writer will pass it).

Needs ``hudisql.metadata`` (h/metadata) and ``hudisql.txn`` (main) merged. Writers are the
pure-Python ``WriteClient`` in threads, held at protocol steps by events; the indexer's
own steps (``on_step``) are the barriers: no sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from hudisql.metadata.participant import MetadataTableParticipant, participants_for
from hudisql.metadata.table import MetadataTable
from hudisql.services.index_build import PartitionRequest
from hudisql.services.indexer import Indexer
from hudisql.services.metadata_inspect import validate
from hudisql.session import HudiSession
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Action, Instant
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.services.indexing import assert_exact, trips


class Crash(Exception):
    """An injected failure."""


def _row(n: int, rider: str = "rx") -> dict[str, Any]:
    return {"ts": 100 + n, "uuid": f"w{n}", "rider": rider, "fare": float(n), "city": "sf"}


class HeldWriter:
    """A writer thread upserting rows, held at ``step`` until :meth:`release`.

    Its participants are decided when it starts, as every writer's are.
    """

    def __init__(self, path: str, options: dict[str, str], rows: list[dict[str, Any]],
                 step: str = "validating", participants: list[Any] | None = None) -> None:
        self.reached, self._go = threading.Event(), threading.Event()
        self.errors: list[BaseException] = []
        self.instant: str | None = None

        def hook(event: str, detail: str) -> None:
            if event == "inflight":
                self.instant = detail
            if event == step:
                self.reached.set()
                assert self._go.wait(300), "the test never released the writer"

        def run() -> None:
            try:
                table = HudiTable.open(path)
                chosen = participants_for(table) if participants is None else participants
                WriteClient(table, on_step=hook, options=options,
                            participants=chosen).upsert(rows)
            except BaseException as exc:  # reported to the test
                self.errors.append(exc)

        self.thread = threading.Thread(target=run, name="held-writer")

    def start(self) -> HeldWriter:
        self.thread.start()
        assert self.reached.wait(300), "the writer never reached its step"
        return self

    def release(self) -> None:
        self._go.set()

    def finish(self) -> None:
        self.release()
        self.thread.join(300)
        assert not self.thread.is_alive()


@contextmanager
def stepped(indexer: Indexer, actions: dict[str, Callable[[], None]]) -> Iterator[Indexer]:
    """Run ``actions[event]`` when the indexer reaches that step (once each)."""
    def hook(event: str, instant: str) -> None:
        action = actions.pop(event, None)
        if action is not None:
            action()
    indexer.on_step = hook
    yield indexer


def _indexer(session: HudiSession, path: str) -> Indexer:
    return Indexer(path, session.write_options(path), session.spark)


def _covers(path: str, instant: str, partition: str) -> bool:
    table = HudiTable.open(path)
    mdt = MetadataTable(table)
    found = mdt.timeline.get(instant)
    return found is not None and found.is_completed and (
        partition in mdt.timeline.commit_metadata(found).partition_to_write_stats)


def test_race_3a_writer_starts_after_the_plan_and_logs_to_the_new_partition(
        session: HudiSession) -> None:
    handle = trips(session)
    options = session.write_options(handle.path)
    indexer = _indexer(session, handle.path)
    planned = indexer.schedule([PartitionRequest("record_index")])
    assert planned is not None
    # The writer goes inflight after the request, before the indexer runs; it commits while
    # the build runs (after its snapshot): its own metadata update must carry it.
    writer = HeldWriter(handle.path, options, [_row(1)]).start()
    with stepped(indexer, {"built": writer.finish}):
        indexer.execute(planned.timestamp)
    assert not writer.errors
    assert writer.instant is not None and _covers(handle.path, writer.instant, "record_index")
    assert_exact(handle.path)


def test_race_3b_writer_commits_just_after_the_index_completed(session: HudiSession) -> None:
    handle = trips(session)
    options = session.write_options(handle.path)
    indexer = _indexer(session, handle.path)
    writers: list[HeldWriter] = []

    def start_writer() -> None:  # the catch-up has passed; the writer goes inflight now
        writers.append(HeldWriter(handle.path, options, [_row(2)]).start())

    with stepped(indexer, {"caught_up": start_writer}):
        planned = indexer.schedule([PartitionRequest("record_index")])
        assert planned is not None
        indexer.execute(planned.timestamp)
    (writer,) = writers
    assert "record_index" in HudiTable.open(handle.path).properties.metadata_partitions
    writer.finish()  # it commits to a completed partition: no index loss
    assert not writer.errors
    assert writer.instant is not None and _covers(handle.path, writer.instant, "record_index")
    assert_exact(handle.path)


def test_race_3c_writer_commits_while_file_groups_are_initialized(
        session: HudiSession) -> None:
    handle = trips(session)
    options = session.write_options(handle.path)
    session.sql("CREATE INDEX record_index ON trips (uuid)")  # a metadata table exists
    writer = HeldWriter(handle.path, options, [_row(3, "r1")]).start()
    indexer = _indexer(session, handle.path)
    # Under the schedule's lock the writer is let go: its commit must wait for the lock, so
    # it sees every file group of the new secondary index, never a subset.
    with stepped(indexer, {"initializing": writer.release}):
        planned = indexer.schedule([PartitionRequest("secondary_index_idx_rider", _si("rider"))])
    assert planned is not None
    writer.finish()
    assert not writer.errors and writer.instant is not None
    partition = "secondary_index_idx_rider"
    assert _covers(handle.path, writer.instant, partition)
    mdt = MetadataTable(HudiTable.open(handle.path))
    assert len(mdt.file_group_ids(partition)) == 10
    indexer.execute(planned.timestamp)
    assert_exact(handle.path)


def _si(column: str) -> Any:
    from hudisql.services.index_build import new_definition

    return new_definition(f"secondary_index_idx_{column}", "secondary_index", [column], {})


class _FailAfterMetadata:
    """A participant after the metadata table's that fails: the commit is rolled back after
    its metadata deltacommit was written."""

    def on_commit(self, table: HudiTable, instant: Instant, metadata: CommitMetadata) -> None:
        raise Crash(instant.timestamp)

    def on_rollback(self, table: HudiTable, instant: Instant) -> None:
        return None


def test_error_1_a_writer_fails_while_the_indexer_is_inflight(session: HudiSession) -> None:
    handle = trips(session)
    options = session.write_options(handle.path)
    indexer = _indexer(session, handle.path)
    failed: list[BaseException] = []

    def failing_writer() -> None:
        participants = [MetadataTableParticipant(), _FailAfterMetadata()]
        try:
            WriteClient(HudiTable.open(handle.path), options=options,
                        participants=participants).upsert([_row(4)])
        except Crash as exc:
            failed.append(exc)

    with stepped(indexer, {"built": failing_writer}):
        planned = indexer.schedule([PartitionRequest("record_index")])
        assert planned is not None
        indexer.execute(planned.timestamp)
    assert failed  # its metadata update was rolled back with it
    table = HudiTable.open(handle.path)
    assert "record_index" in table.properties.metadata_partitions
    assert not table.timeline.pending([Action.DELTACOMMIT])
    assert_exact(handle.path)
    # The next writer commits on top; everything stays exact.
    WriteClient(table, options=options, participants=participants_for(table)).upsert([_row(5)])
    assert_exact(handle.path)


def test_error_2_the_indexer_fails_while_a_writer_is_inflight(session: HudiSession) -> None:
    handle = trips(session)
    options = session.write_options(handle.path)
    indexer = _indexer(session, handle.path)
    planned = indexer.schedule([PartitionRequest("record_index")])
    assert planned is not None
    # A writer goes inflight; the indexer dies after its build (its plan stays: it is a
    # crash, not an abort); the writer then commits, logging to the inflight partition.
    writer = HeldWriter(handle.path, options, [_row(6)]).start()
    with pytest.raises(Crash), stepped(indexer, {"built": _raise}):
        indexer.abort = lambda instant_time: None  # type: ignore[method-assign]
        indexer.execute(planned.timestamp)
    writer.finish()
    assert not writer.errors
    table = HudiTable.open(handle.path)
    assert table.properties.metadata_partitions_inflight == ["files", "record_index"]
    assert writer.instant is not None and _covers(handle.path, writer.instant, "record_index")
    # Re-run: the plan and the config tell it what to build; the half-built one is rebuilt.
    _indexer(session, handle.path).execute()
    assert "record_index" in HudiTable.open(handle.path).properties.metadata_partitions
    assert_exact(handle.path)


def _raise() -> None:
    raise Crash("indexer")


def test_error_4_inspection_and_validation_skip_inflight_partitions(
        session: HudiSession) -> None:
    handle = trips(session)
    indexer = _indexer(session, handle.path)
    indexer.schedule([PartitionRequest("column_stats")])
    # Only built partitions are read or validated: an inflight one is not used.
    rows, _ = validate(handle.path)
    assert rows == []
    with pytest.raises(Exception, match="has no built column_stats index"):
        session.sql("CALL show_metadata_table_column_stats(table => 'trips')")
    with pytest.raises(Exception, match="has no built files index"):
        session.sql("CALL show_metadata_table_files(table => 'trips')")
    indexer.execute()
    assert session.sql("CALL show_metadata_table_column_stats(table => 'trips')").count() > 0
