"""The catalog-database lock provider, across processes (each with its own catalog)."""

from __future__ import annotations

import multiprocessing
import os
import socket
from pathlib import Path

import pytest
import sqlalchemy as sa

from hudisql.catalog import SqlCatalog, db
from hudisql.errors import LockError
from tests.catalog import workers

KEY = "default.t;'ü"


def test_three_processes_take_turns(catalog_url: str, tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    counter, log = tmp_path / "counter", tmp_path / "log"
    counter.write_text("0")
    barrier, results = ctx.Barrier(3), ctx.Queue()
    rounds = 8
    procs = [ctx.Process(target=workers.lock_counter_worker,
                         args=(catalog_url, KEY, rounds, barrier, str(counter), str(log),
                               results)) for _ in range(3)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=workers.BARRIER_TIMEOUT * 2) for _ in procs]
    for p in procs:
        p.join(60)
    assert all(o[0] == "ok" for o in outcomes), outcomes
    assert int(counter.read_text()) == 3 * rounds  # no lost update
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * 3 * rounds
    for enter, leave in zip(lines[::2], lines[1::2], strict=True):
        # Nobody entered while another was inside.
        assert enter.startswith("enter ") and leave == "exit " + enter.split()[1]
    assert len({line.split()[1] for line in lines}) == 3


def test_a_held_lock_times_out_naming_its_holder(catalog_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    acquired, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=workers.lock_holder_worker,
                         args=(catalog_url, KEY, 30.0, acquired, release, False))
    holder.start()
    try:
        assert acquired.wait(workers.BARRIER_TIMEOUT)
        with SqlCatalog("me", uri=catalog_url, poll_interval=0) as cat:
            provider = cat.lock_provider()
            held_by = f"held by {socket.gethostname()}:{holder.pid}"
            with pytest.raises(LockError, match=held_by), provider.lock(KEY, timeout=0.3):
                pass
            release.set()
            with provider.lock(KEY, timeout=workers.BARRIER_TIMEOUT):
                assert provider.holder(KEY) is not None
            assert provider.holder(KEY) is None
    finally:
        release.set()
        holder.join(60)
    assert holder.exitcode == 0


def test_the_lock_of_a_dead_holder_is_taken_over_after_its_lease(catalog_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    acquired, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=workers.lock_holder_worker,
                         args=(catalog_url, KEY, 0.5, acquired, release, True))
    holder.start()
    assert acquired.wait(workers.BARRIER_TIMEOUT)
    holder.join(60)
    with SqlCatalog("me", uri=catalog_url, poll_interval=0) as cat:
        provider = cat.lock_provider()
        with provider.lock(KEY, timeout=workers.BARRIER_TIMEOUT):
            owner = provider.holder(KEY)
            assert owner is not None and owner.split(":")[1] == str(os.getpid())


def test_a_lock_lost_while_held_is_reported(catalog_url: str) -> None:
    with SqlCatalog("me", uri=catalog_url, poll_interval=0) as cat:
        provider = cat.lock_provider()
        with (
            pytest.raises(LockError, match="was lost while held"),
            provider.lock(KEY, timeout=5),
            cat.engine.begin() as conn,
        ):
            conn.execute(sa.delete(db.locks))  # someone removes our row
        with provider.lock(KEY, timeout=5):  # and the lock is usable again
            pass
    with pytest.raises(LockError, match="lease must be positive"):
        cat.lock_provider(lease=0)


def test_locks_of_different_tables_do_not_block_each_other(catalog_url: str) -> None:
    with SqlCatalog("me", uri=catalog_url, poll_interval=0) as cat:
        provider = cat.lock_provider()
        with provider.lock("a", timeout=1), provider.lock("b", timeout=1):
            assert provider.holder("a") != provider.holder("b")


def test_writers_find_the_catalog_lock_by_name(catalog_url: str) -> None:
    from hudisql.catalog.lock import CatalogLockProvider
    from hudisql.txn.lock import LockProvider, lock_provider_for

    options = {"hoodie.write.lock.provider": "catalog", "hudisql.catalog.url": catalog_url}
    first, second = lock_provider_for(options), lock_provider_for(options)
    assert isinstance(first, CatalogLockProvider) and isinstance(first, LockProvider)
    with first.lock(KEY, timeout=5), pytest.raises(LockError, match="held by"), \
            second.lock(KEY, timeout=0.2):
        pass  # the second writer, with its own provider object, cannot get in
    with second.lock(KEY, timeout=5):
        pass  # released on leaving the first block


def test_the_catalog_lock_needs_a_catalog_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from hudisql.txn.lock import lock_provider_for

    monkeypatch.delenv("HUDISQL_CATALOG_URL", raising=False)
    with pytest.raises(LockError, match=r"hudisql\.catalog\.url"):
        lock_provider_for({"hoodie.write.lock.provider": "catalog"})


def test_an_error_inside_the_lock_is_not_hidden_by_the_release(catalog_url: str) -> None:
    with SqlCatalog("c", uri=catalog_url, poll_interval=0) as cat:
        provider = cat.lock_provider()
        with pytest.raises(ZeroDivisionError), provider.lock(KEY, timeout=5):
            1 / 0  # noqa: B018
        with provider.lock(KEY, timeout=1):
            pass  # and the lock was released
