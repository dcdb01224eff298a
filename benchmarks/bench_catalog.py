"""Catalog benchmark: metadata lookup latency cached against uncached, and the cache hit rate
of a 4-process workload of 90% reads / 10% writes, on SQLite and on PostgreSQL.

Run: ``.venv/bin/python benchmarks/bench_catalog.py`` (PostgreSQL from
``scripts/postgres.sh install``; ``--no-postgres`` skips it). The uncached lookup (the
baseline) is the database read a cache miss makes, timed in the same process.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hudisql.catalog import Comparison, SqlCatalog, TableName

TABLES = 8
LOOKUPS = 3000
WORKLOAD_PROCS = 4
WORKLOAD_OPS = 400


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.99) - 1]


def _setup(url: str, warehouse: str) -> list[TableName]:
    names = [TableName("default", f"bench_{i}") for i in range(TABLES)]
    with SqlCatalog("setup", uri=url, warehouse=warehouse, poll_interval=0) as cat:
        for n in names:
            cat.create_table(n, schema='{"type":"record","fields":[]}',
                             properties={"owner": "bench", "i": n.table})
    return names


def lookup_latency(url: str, warehouse: str, names: list[TableName]) -> dict[str, Any]:
    """p50/p99 of a cached lookup, an uncached one, and of begin_statement (microseconds)."""
    with SqlCatalog("bench", uri=url, warehouse=warehouse, poll_interval=0) as cat:
        snap = cat.begin_statement(names)
        targets = [snap.get(n) for n in names]
        timings: dict[str, list[float]] = {"cached": [], "uncached": [], "statement": []}
        for i in range(LOOKUPS):
            t = targets[i % len(targets)]
            start = time.perf_counter()
            cat.load_table(t.name, t.valid_write_ids, t.table_id)
            mid = time.perf_counter()
            cat.store.read_table(t.table_id)
            end = time.perf_counter()
            cat.begin_statement([t.name])
            after = time.perf_counter()
            timings["cached"].append((mid - start) * 1e6)
            timings["uncached"].append((end - mid) * 1e6)
            timings["statement"].append((after - end) * 1e6)
        assert cat.stats().misses == 0
    return {k: _percentiles(v) for k, v in timings.items()}


def _workload_proc(url: str, warehouse: str, names: list[TableName], seed: int,
                   barrier: Any, results: Any) -> None:
    rng = random.Random(seed)
    stale = reads = writes = 0
    with SqlCatalog(f"w{seed}", uri=url, warehouse=warehouse, poll_interval=0.05) as cat:
        barrier.wait(120)
        for _ in range(WORKLOAD_OPS):
            name = rng.choice(names)
            if rng.random() < 0.10:
                with cat.write_transaction(name) as tx:
                    tx.update(set_properties={"by": str(seed)})
                writes += 1
                continue
            snap = cat.begin_statement([name])
            entry = cat.resolve(snap, name)
            wanted = snap.get(name).valid_write_ids
            assert entry.valid_write_ids is not None and wanted is not None
            if entry.valid_write_ids.compare(wanted) in (Comparison.OLDER,
                                                         Comparison.INCOMPARABLE):
                stale += 1
            reads += 1
        stats = cat.stats()
    results.put((reads, writes, stale, stats.hits, stats.misses, stats.refreshes))


def workload(url: str, warehouse: str, names: list[TableName]) -> dict[str, Any]:
    """Run 4 processes of 90% reads / 10% writes; returns totals and the hit rate."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(WORKLOAD_PROCS), ctx.Queue()
    procs = [ctx.Process(target=_workload_proc,
                         args=(url, warehouse, names, i, barrier, results))
             for i in range(WORKLOAD_PROCS)]
    start = time.perf_counter()
    for p in procs:
        p.start()
    rows = [results.get(timeout=600) for _ in procs]
    elapsed = time.perf_counter() - start
    for p in procs:
        p.join()
    reads, writes, stale, hits, misses, refreshes = (sum(c) for c in zip(*rows, strict=True))
    return {"reads": reads, "writes": writes, "stale": stale, "hit_rate": hits / (hits + misses),
            "refreshes": refreshes, "seconds": elapsed}


def run(backend: str, url: str, warehouse: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both measurements on one backend."""
    names = _setup(url, warehouse)
    return lookup_latency(url, warehouse, names), workload(url, warehouse, names)


def main() -> None:
    """Run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hudisql-bench-catalog-"))
    backends = [("sqlite", f"sqlite:///{tmp}/catalog.db")]
    server = None
    if not args.no_postgres:
        from tests.catalog.pg_server import PostgresServer

        server = PostgresServer().start()
        backends.append(("postgresql", server.new_database()))
    try:
        results = [(b, *run(b, url, str(tmp / "wh"))) for b, url in backends]
    finally:
        if server is not None:
            server.stop()
    print(f"\nmetadata lookup latency, {LOOKUPS} lookups over {TABLES} tables (microseconds)")
    print(f"{'backend':<11} {'lookup':<22} {'p50':>9} {'p99':>9} {'p50 ratio':>10}")
    for backend, lat, _ in results:
        base = lat["uncached"][0]
        rows = [("uncached (baseline)", lat["uncached"]), ("cached", lat["cached"]),
                ("begin_statement", lat["statement"])]
        for label, (p50, p99) in rows:
            print(f"{backend:<11} {label:<22} {p50:>9.1f} {p99:>9.1f} {base / p50:>9.1f}x")
    print(f"\n{WORKLOAD_PROCS}-process workload, 90% reads / 10% writes, "
          f"{WORKLOAD_OPS} ops per process")
    print(f"{'backend':<11} {'reads':>6} {'writes':>6} {'stale':>6} {'hit rate':>9} "
          f"{'refreshes':>9} {'seconds':>8}")
    for backend, _, w in results:
        print(f"{backend:<11} {w['reads']:>6} {w['writes']:>6} {w['stale']:>6} "
              f"{w['hit_rate']:>9.1%} {w['refreshes']:>9} {w['seconds']:>8.1f}")


if __name__ == "__main__":
    main()
