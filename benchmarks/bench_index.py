"""Index benchmark: building each index type, and an upsert that keeps indexes in sync.

    .venv/bin/python benchmarks/bench_index.py [--rows 5000000] [--repeat 3]

Builds a merge-on-read trips table of ``--rows`` rows (bulk insert), then times:

- the build of each index type (``CREATE INDEX`` through ``handle.indexes``: the record
  index, a secondary index on ``rider``, column stats on ``fare, ts``), each against a plain
  Spark scan of the same columns of the table's base files (what any build must read;
  goal <= 1.3);
- an upsert of ``rows/10`` records (half updates) to a copy of the table with the record
  index, column stats and the secondary index kept in sync, against the same upsert to a
  copy without a metadata table (goal <= 1.25). Best of ``--repeat`` copies each, after
  one untimed upsert per side (on copies of their own) that warms the JVM and the Python
  workers.

Prints a table with the ratios of wall-clock seconds and, on Linux, of CPU seconds of the
whole process tree (driver, JVM, Python workers): on a shared machine the CPU ratio is the
steadier figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
from pyspark.sql import functions as F

import hudisql
from hudisql.table.write.create import create_table

SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("rider", pa.string()),
                    ("fare", pa.float64()), ("city", pa.string())])
#: (label, index name, columns, USING, the data columns a build must read)
BUILDS = [
    ("record index", "record_index", ["uuid"], None, ["_hoodie_record_key"]),
    ("secondary index (rider)", "idx_rider", ["rider"], None, ["_hoodie_record_key", "rider"]),
    ("column stats (fare, ts)", "stats", ["fare", "ts"], "column_stats", ["fare", "ts"]),
]


#: CPU seconds of each scenario's best run (by wall time), keyed by the last _timed label.
CPU: dict[str, float] = {}


def _tree_cpu() -> float:
    """CPU seconds used so far by this process and all its descendants (Linux /proc; 0
    elsewhere): the driver, the JVM and Spark's Python workers."""
    if not os.path.isdir("/proc/self"):
        return 0.0
    parents: dict[int, int] = {}
    used: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        used[int(entry)] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0)
        todo += [child for child, parent in parents.items() if parent == pid]
    return total / os.sysconf("SC_CLK_TCK")


def _timed(fn: Callable[[], object]) -> float:
    """Wall seconds of ``fn()``; its CPU seconds go to ``CPU["last"]``."""
    cpu = _tree_cpu()
    start = time.perf_counter()
    fn()
    CPU["last"] = _tree_cpu() - cpu
    return time.perf_counter() - start


def _best(runs: list[Callable[[], float]]) -> tuple[float, float]:
    """(wall, CPU) seconds of the fastest of ``runs`` (each returns its wall seconds)."""
    best = None
    for run in runs:
        wall = run()
        if best is None or wall < best[0]:
            best = (wall, CPU["last"])
    assert best is not None
    return best


def _records(spark, start: int, count: int, ts: int):  # type: ignore[no-untyped-def]
    return spark.range(start, start + count).selectExpr(
        "concat('key-', CAST(id AS STRING)) AS uuid", f"CAST({ts} AS BIGINT) AS ts",
        "concat('rider-', CAST(id % 1000 AS STRING)) AS rider",
        "CAST(id % 997 AS DOUBLE) / 10 AS fare",
        "concat('city-', CAST(id % 8 AS STRING)) AS city")


def _scan(spark, path: str, columns: list[str]) -> float:  # type: ignore[no-untyped-def]
    """A plain Spark scan of ``columns`` of the table's base files (count + per-column max)."""
    files = [str(p) for p in Path(path).rglob("*.parquet") if ".hoodie" not in p.parts]
    return _timed(lambda: spark.read.parquet(*files).select(
        F.count(F.lit(1)), *[F.max(c) for c in columns]).collect())


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per scenario; best is kept")
    parser.add_argument("--builds-only", action="store_true",
                        help="time the index builds only (not the upsert)")
    parser.add_argument("--upsert-only", action="store_true",
                        help="skip the timed index builds (the upsert part only)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hudisql-bench-index-"))
    session = hudisql.connect(warehouse=work / "wh", conf={"spark.master": "local[2]"})
    spark = session.spark
    lines: list[tuple[str, tuple[float, float], tuple[float, float], str]] = []
    try:
        plain = str(work / "plain")
        create_table(plain, "bench", SCHEMA, "uuid", "city", "ts", "MERGE_ON_READ")
        load = _timed(lambda: session.table_at(plain).bulk_insert(
            _records(spark, 0, args.rows, 1)))
        # Copies before any index: the upsert's two sides.
        # (Plus one copy per side for the untimed warm-up upsert.)
        for i in [] if args.builds_only else [*range(args.repeat), "warm"]:
            shutil.copytree(plain, work / f"indexed{i}")
            shutil.copytree(plain, work / f"bare{i}")
        # The copies' dirty pages are flushed before anything is timed: write-back of the
        # 400 MB just copied would otherwise overlap the first builds. (Full runs still
        # time the record index build 0.05-0.1 s slower than --builds-only runs did at
        # first; later --builds-only runs were as slow, so that is run-to-run spread.)
        os.sync()
        indexed = session.table_at(plain)
        for label, name, columns, using, read in [] if args.upsert_only else BUILDS:
            built = _best([lambda n=name, c=columns, u=using: _build(indexed, n, c, u)
                           for _ in range(args.repeat)])
            scanned = _best([lambda r=read: _scan(spark, plain, r) for _ in range(args.repeat)])
            lines.append((f"build {label}", built, scanned, "<= 1.3"))
            print(f"build {label}: {built[0]:.2f} s (cpu {built[1]:.2f}) against a scan "
                  f"{scanned[0]:.2f} s (cpu {scanned[1]:.2f})", flush=True)
        if not args.builds_only:
            for i in [*range(args.repeat), "warm"]:  # the indexed copies get all three indexes
                handle = session.table_at(str(work / f"indexed{i}"))
                for _, name, columns, using, _ in BUILDS:
                    handle.indexes.create(name, columns, using)
            upsert_rows = max(1, args.rows // 10)
            batch = _records(spark, args.rows - upsert_rows // 2, upsert_rows, 2).cache()
            batch.count()
            # Untimed: the first upsert of a session pays the JVM's JIT of the upsert's
            # jobs and the Python workers' imports of the write path (about 3 CPU-s at
            # 2.5M rows), whichever side runs it; with one run per side that was the
            # indexed one. One upsert per side on copies of their own warms both.
            for side in ("bare", "indexed"):
                session.table_at(str(work / f"{side}warm")).upsert(batch)
            # Interleaved, in turns (indexed, bare, bare, indexed, ...): drift of the shared
            # machine and the JVM still warming up over the first runs touch both.
            best = {"indexed": (float("inf"), 0.0), "bare": (float("inf"), 0.0)}
            for i in range(args.repeat):
                for side in ("indexed", "bare") if i % 2 == 0 else ("bare", "indexed"):
                    best[side] = min(best[side], _best([lambda i=i, side=side: _timed(
                        lambda: session.table_at(str(work / f"{side}{i}")).upsert(batch))]))
            t_indexed, t_bare = best["indexed"], best["bare"]
            lines.append(("upsert, RI + CS + SI kept", t_indexed, t_bare, "<= 1.25"))
        from hudisql.metadata.validate import validate_metadata_table
        from hudisql.table.table import HudiTable

        # (Not after builds only: recomputing a big record index on the driver takes more
        # memory than the builds; the tests validate builds.)
        ok = args.builds_only or validate_metadata_table(HudiTable.open(
            str(work / "indexed0"))).ok
    finally:
        session.stop()
        shutil.rmtree(work, ignore_errors=True)
    upserted = ("" if args.builds_only
                else f"; upsert {max(1, args.rows // 10)} records (half updates)")
    print(f"table: {args.rows} rows MOR (bulk insert {load:.1f}s){upserted}; local[2]; best of "
          f"{args.repeat}; metadata table "
          f"{'not validated' if args.builds_only else 'validates' if ok else 'DOES NOT validate'}"
          " at the end")
    print(f"{'scenario':<36}{'hudisql s':>10}{'baseline s':>12}{'ratio':>8}"
          f"{'cpu s':>8}{'base cpu':>10}{'cpu ratio':>10}  goal")
    for label, (ours, ours_cpu), (base, base_cpu), goal in lines:
        cpu_ratio = f"{ours_cpu / base_cpu:>10.2f}" if base_cpu else f"{'-':>10}"
        print(f"{label:<36}{ours:>10.2f}{base:>12.2f}{ours / base:>8.2f}"
              f"{ours_cpu:>8.2f}{base_cpu:>10.2f}{cpu_ratio}  {goal}")
    print("baselines: a plain Spark scan of the columns the build reads; the same upsert "
          "without a metadata table")


def _build(handle, name: str, columns: list[str], using: str | None) -> float:  # type: ignore[no-untyped-def]
    """Seconds to build the index from scratch (an earlier build is dropped first, untimed)."""
    handle.indexes.drop(name, if_exists=True)
    return _timed(lambda: handle.indexes.create(name, columns, using))


if __name__ == "__main__":
    main()
