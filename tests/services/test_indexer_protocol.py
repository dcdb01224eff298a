"""The indexer's protocol against real writers: abort on failure, the catch-up's wait and
timeout, writers whose heartbeat expired, and re-runs after a failure (RFC-45)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from hudisql.errors import IndexingTimeoutError
from hudisql.metadata.config import load_index_definitions
from hudisql.services.indexes import TableIndexes
from hudisql.session import HudiSession
from hudisql.table.format.index_plan import pending_indexing
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.services.indexing import assert_exact, trips
from tests.write.trips import rs_rows


class Crash(Exception):
    """An injected failure."""


def _indexes(session: HudiSession, path: str, **options: str) -> TableIndexes:
    return TableIndexes(path, {**session.write_options(path), **options}, session.spark)


def _state(path: str) -> tuple[list[str], list[str], list[str], list[str]]:
    table = HudiTable.open(path)
    props = table.properties
    return (props.metadata_partitions, props.metadata_partitions_inflight,
            [p.instant.timestamp for p in pending_indexing(table.timeline)],
            sorted(load_index_definitions(table)))


ROW = {"ts": 9, "uuid": "z", "rider": "r9", "fare": 1.0, "city": "sf"}


@contextmanager
def writer_held_at(path: str, step: str, options: dict[str, str]) -> Iterator[
        tuple[threading.Event, threading.Event, list[BaseException]]]:
    """A pure-Python writer upserting one row, held at ``step`` until ``release`` is set.

    Yields (reached, release, errors): ``reached`` is set once the writer is at ``step``.
    """
    reached, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hook(event: str, detail: str) -> None:
        if event == step:
            reached.set()
            assert release.wait(120), "the test never released the writer"

    def run() -> None:
        try:
            WriteClient(HudiTable.open(path), on_step=hook, options=options).upsert([ROW])
        except BaseException as exc:  # reported to the test
            errors.append(exc)

    thread = threading.Thread(target=run, name="held-writer")
    thread.start()
    try:
        assert reached.wait(120), "the writer never reached " + step
        yield reached, release, errors
    finally:
        release.set()
        thread.join(120)


def _fail_at(step: str) -> Callable[[str, str], None]:
    def hook(event: str, instant: str) -> None:
        if event == step:
            raise Crash(f"{step} {instant}")
    return hook


@pytest.mark.parametrize("step", ["initializing", "scheduled", "inflight", "built",
                                  "caught_up", "completing"])
def test_a_failure_at_any_step_rolls_the_index_back(session: HudiSession, step: str) -> None:
    handle = trips(session)
    session.sql("CREATE INDEX record_index ON trips (uuid)")
    before = _state(handle.path)
    rows = rs_rows(handle)
    indexes = _indexes(session, handle.path)
    indexer = indexes.indexer()
    indexer.on_step = _fail_at(step)
    indexes.indexer = lambda: indexer  # type: ignore[method-assign]
    with pytest.raises(Crash):
        indexes.create("idx_rider", ["rider"])
    # Config reverted, the plan and the partition's files gone, the built index untouched.
    assert _state(handle.path) == before
    table = HudiTable.open(handle.path)
    assert not table.storage.exists(".hoodie/metadata/secondary_index_idx_rider")
    assert_exact(handle.path)
    # Creating it again works (on versions 8/9 at a fresh initialization instant), and
    # hudi-rs, listing through the metadata table there, reads the same rows.
    _indexes(session, handle.path).create("idx_rider", ["rider"])
    assert_exact(handle.path)
    assert rs_rows(handle) == rows


def test_the_catch_up_times_out_on_a_writer_that_stays_pending(session: HudiSession) -> None:
    handle = trips(session)
    before = _state(handle.path)
    options = session.write_options(handle.path)
    with writer_held_at(handle.path, "inflight", options) as (_, release, errors):
        pending = HudiTable.open(handle.path).timeline.pending([Action.DELTACOMMIT])
        (writer,) = [i.timestamp for i in pending]
        indexes = _indexes(session, handle.path,
                           **{"hoodie.metadata.index.check.timeout.seconds": "0"})
        with pytest.raises(IndexingTimeoutError, match=writer):
            indexes.create("record_index", ["uuid"])
        assert _state(handle.path) == before
        assert not HudiTable.open(handle.path).storage.exists(".hoodie/metadata")
        release.set()
    assert not errors
    # With the writer done, the index builds.
    _indexes(session, handle.path).create("record_index", ["uuid"])
    assert_exact(handle.path)


def test_the_catch_up_waits_for_a_live_writer_then_includes_it(session: HudiSession) -> None:
    handle = trips(session)
    waiting = threading.Event()
    options = session.write_options(handle.path)
    with writer_held_at(handle.path, "inflight", options) as (_, release, errors):
        def on_step(event: str, instant: str) -> None:
            if event == "waiting":
                waiting.set()

        indexes = _indexes(session, handle.path)
        indexer = indexes.indexer()
        indexer.on_step = on_step
        indexes.indexer = lambda: indexer  # type: ignore[method-assign]
        outcome: list[object] = []
        worker = threading.Thread(
            target=lambda: outcome.append(indexes.create("record_index", ["uuid"])))
        worker.start()
        assert waiting.wait(120), "the indexer never waited for the pending writer"
        assert worker.is_alive()
        release.set()
        worker.join(300)
    assert not errors and outcome and outcome[0] is not None
    table = HudiTable.open(handle.path)
    assert "record_index" in table.properties.metadata_partitions
    assert_exact(handle.path)


def test_a_writer_whose_heartbeat_expired_is_not_waited_for(session: HudiSession) -> None:
    # Error case 1: the writer died while the indexer runs; its instant stays pending with
    # no heartbeat. The indexer treats it as failed (timeout 0: it must not wait at all).
    handle = trips(session)

    def die(event: str, detail: str) -> None:
        if event == "file":
            raise Crash(detail)

    with pytest.raises(Crash):
        WriteClient(HudiTable.open(handle.path), on_step=die,
                    options=session.write_options(handle.path)).upsert([ROW])
    (dead,) = HudiTable.open(handle.path).timeline.pending([Action.DELTACOMMIT])
    indexes = _indexes(session, handle.path,
                       **{"hoodie.metadata.index.check.timeout.seconds": "0"})
    assert indexes.create("record_index", ["uuid"]) is not None
    assert_exact(handle.path)
    # The next writer rolls the dead one back; the index stays exact.
    client = WriteClient(HudiTable.open(handle.path), options=session.write_options(handle.path))
    client.rollback(dead.timestamp)
    assert_exact(handle.path)
