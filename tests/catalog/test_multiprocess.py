"""Several processes, each with its own catalog instance, on one SQLite file or PostgreSQL
database: scripted interleavings of commits, schema changes, renames, drop-and-recreate and
reads, forced by barriers. No read may return an entry older than its statement's
ValidWriteIdList, and tables nobody changed must come from the cache."""

from __future__ import annotations

import multiprocessing
import queue
from pathlib import Path
from typing import Any

import pytest

from tests.catalog import workers

WORKERS = 3
ROUNDS = 18


def _collect(results: Any, count: int, procs: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for _ in range(count):
        try:
            out.append(results.get(timeout=workers.BARRIER_TIMEOUT * 2))
        except queue.Empty:
            alive = [p.pid for p in procs if p.is_alive()]
            pytest.fail(f"a worker process sent no result (still alive: {alive})")
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0, f"worker {p.pid} exited with {p.exitcode}"
    return out


def test_no_stale_reads_across_processes(catalog_url: str, tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    inboxes = [ctx.Queue() for _ in range(WORKERS)]
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=workers.consistency_worker,
            # The last worker follows the log with its background poller thread.
            args=(i, WORKERS, catalog_url, str(tmp_path / "wh"), ROUNDS, i == WORKERS - 1,
                  barrier, inboxes, results),
        )
        for i in range(WORKERS)
    ]
    for p in procs:
        p.start()
    outcomes = _collect(results, WORKERS, procs)
    errors = [o[2] for o in outcomes if o[0] == "error"]
    assert not errors, "\n".join(errors)

    tallies = [o[2] for o in outcomes]
    stats = [o[3] for o in outcomes]
    reads = sum(t["reads"] for t in tallies)
    stale = sum(t["stale"] for t in tallies)
    examples = [e for t in tallies for e in t["stale_examples"]]
    hits = sum(s["hits"] for s in stats)
    misses = sum(s["misses"] for s in stats)
    writes = sum(t["writes"] for t in tallies)
    print(f"\n[{catalog_url.split(':')[0]}] {reads} reads, {writes} writes, {stale} stale, "
          f"hit rate {hits / (hits + misses):.1%}, refreshes "
          f"{sum(s['refreshes'] for s in stats)}, reads of dropped tables "
          f"{sum(t['dropped'] for t in tallies)}")
    assert reads + writes >= 1000
    assert writes == ROUNDS
    assert stale == 0, examples
    # Tables unchanged since the cache last caught up are always served from it.
    unchanged = sum(t["unchanged_reads"] for t in tallies)
    assert unchanged > 0
    assert sum(t["unchanged_hits"] for t in tallies) == unchanged
    # Every process applied the whole log (the background poller's as well).
    assert len({s["last_event_id"] for s in stats}) == 1
    assert all(s["refreshes"] > 0 for s in stats)


def test_two_processes_creating_one_name_exactly_one_wins(catalog_url: str,
                                                           tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    name = ("default", "race;'ü.t")
    procs = [
        ctx.Process(target=workers.create_race_worker,
                    args=(catalog_url, str(tmp_path / "wh"), name, barrier, results))
        for _ in range(WORKERS)
    ]
    for p in procs:
        p.start()
    outcomes = _collect(results, WORKERS, procs)
    kinds = sorted(o[0] for o in outcomes)
    assert kinds == ["created"] + ["exists"] * (WORKERS - 1), outcomes
    assert all("already exists" in o[1] for o in outcomes if o[0] == "exists")
