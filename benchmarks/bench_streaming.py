"""Streaming sink benchmark: sustained rows per second into a MERGE_ON_READ table, per-batch
commit latency at the start and at the end, against the same rows as batch writes.

    .venv/bin/python benchmarks/bench_streaming.py [--batches 200] [--rows 10000]
        [--keys 500000] [--table-type MERGE_ON_READ] [--window 20] [--compaction-every N]

The source is a folder of ``--batches`` parquet files of ``--rows`` rows each (written by
pyarrow up front, untimed), read by Spark's file source one file per micro-batch
(``maxFilesPerTrigger=1``, ``Trigger.AvailableNow``). Keys are drawn from ``--keys``, so
later batches update rows of earlier ones (upserts, the sink's default operation), across 4
partitions. The stream writes with ``writeStream.format("hudi")``; a batch's commit latency
is Spark's ``addBatch`` duration (the sink's whole write: staging, tagging, files, commit);
the stream's time outside them (offset and commit logs, file listing, planning) is printed
too. One untimed batch write warms the session up first.
The baseline writes the same files, one ``df.write.format("hudi").mode("append")`` each, to
another table, timed per write. Printed: total rows per second of both, and the p50/p99 of
the first and last ``--window`` batches (growth between them is the cost of a growing
timeline and table, for the automatic table services to remove), with the machine's load.
With ``--compaction-every N`` (a merge-on-read table) the stream compacts asynchronously
every N deltacommits (``hoodie.datasource.compaction.async.enable``, as Hudi's sink does by
default) and the batch writes inline at the same cadence; the stream's last compaction is
waited for (untimed) before the baseline starts, and the compactions each side completed
are printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import hudisql

SCHEMA = "id string, ts long, amount double, city string"
CITIES = np.array(["sf", "la", "ny", "sea"])


def _options(name: str, table_type: str) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "city",
            "hoodie.datasource.write.table.type": table_type,
            "hudisql.progress.display": "off"}


def _write_source(folder: Path, batches: int, rows: int, keys: int) -> None:
    rng = np.random.default_rng(7)
    folder.mkdir(parents=True)
    for b in range(batches):
        ids = rng.integers(0, keys, rows)
        pq.write_table(pa.table({
            "id": pa.array([f"k{i:08d}" for i in ids]),
            "ts": pa.array(np.full(rows, b, dtype=np.int64)),
            "amount": pa.array(rng.random(rows) * 100),
            "city": pa.array(CITIES[ids % len(CITIES)]),
        }), folder / f"part-{b:05d}.parquet")


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def _row(label: str, total_s: float, rows: int, latencies: list[float], window: int) -> str:
    first = _percentiles(latencies[:window])
    last = _percentiles(latencies[-window:])
    return (f"{label:<22} {rows / total_s:>10,.0f} {first[0]:>9.2f} {first[1]:>9.2f} "
            f"{last[0]:>9.2f} {last[1]:>9.2f} {total_s:>9.1f}")


def _compactions(path: Path) -> int:
    from hudisql.table.table import HudiTable

    return len(HudiTable.open(str(path)).timeline.completed(["commit"]))


def _wait_for_compactions(path: Path, timeout_s: float = 600) -> None:
    """Wait (untimed) until no compaction of the streamed table is pending: the stream's
    last one runs on in its thread after the query ends."""
    from hudisql.table.table import HudiTable

    deadline = time.monotonic() + timeout_s
    while HudiTable.open(str(path)).timeline.pending(["compaction"]):
        if time.monotonic() > deadline:
            raise SystemExit(f"a compaction of {path} is still pending after {timeout_s} s")
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=500_000)
    parser.add_argument("--table-type", default="MERGE_ON_READ")
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--compaction-every", type=int, default=0,
                        help="compact every N deltacommits (0: never)")
    args = parser.parse_args()
    every = str(args.compaction_every)
    stream_extra = ({} if not args.compaction_every else {
        "hoodie.datasource.compaction.async.enable": "true",
        "hoodie.compact.inline.max.delta.commits": every})
    batch_extra = ({} if not args.compaction_every else {
        "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": every})
    window = max(1, min(args.window, args.batches // 2 or 1))
    root = Path(tempfile.mkdtemp(prefix="bench-streaming-"))
    try:
        session = hudisql.connect(warehouse=str(root / "wh"), conf={
            "spark.sql.streaming.numRecentProgressUpdates": str(args.batches + 10)})
        spark = session.spark
        _write_source(root / "src", args.batches, args.rows, args.keys)
        total_rows = args.batches * args.rows

        # Untimed warm-up (JIT, Python workers), so neither side pays it: one batch written.
        (spark.read.schema(SCHEMA).parquet(str(root / "src" / "part-00000.parquet"))
         .write.format("hudi").options(**_options("warmup", args.table_type))
         .mode("append").save(str(root / "warmup")))

        stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
                  .parquet(str(root / "src")))
        started = time.perf_counter()
        query = (stream.writeStream.format("hudi")
                 .options(**_options("streamed", args.table_type), **stream_extra)
                 .option("checkpointLocation", str(root / "ck")).trigger(availableNow=True)
                 .start(str(root / "streamed")))
        query.awaitTermination()
        stream_s = time.perf_counter() - started
        progress = [p for p in query.recentProgress if p.numInputRows]
        stream_latency = [p.durationMs["addBatch"] / 1000.0 for p in progress]
        assert len(stream_latency) == args.batches, (len(stream_latency), args.batches)
        _wait_for_compactions(root / "streamed")

        batch_latency = []
        started = time.perf_counter()
        for b in range(args.batches):
            df = spark.read.schema(SCHEMA).parquet(str(root / "src" / f"part-{b:05d}.parquet"))
            t0 = time.perf_counter()
            (df.write.format("hudi").options(**_options("batched", args.table_type),
                                             **batch_extra)
             .mode("append").save(str(root / "batched")))
            batch_latency.append(time.perf_counter() - t0)
        batch_s = time.perf_counter() - started

        same = (spark.read.format("hudi").load(str(root / "streamed")).select("id", "ts", "amount")
                .exceptAll(spark.read.format("hudi").load(str(root / "batched"))
                           .select("id", "ts", "amount")).count())
        load = os.getloadavg()
        print(f"\n{args.batches} micro-batches of {args.rows:,} rows into a {args.table_type} "
              f"table, keys drawn from {args.keys:,}; load average {load[0]:.1f} "
              f"{load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores")
        print(f"{'':<22} {'rows/s':>10} {'p50 first':>9} {'p99 first':>9} {'p50 last':>9} "
              f"{'p99 last':>9} {'total s':>9}   (latencies in s, first/last {window} batches)")
        print(_row("writeStream (sink)", stream_s, total_rows, stream_latency, window))
        print(_row("df.write per batch", batch_s, total_rows, batch_latency, window))
        print(f"ratio sink / batch writes: {stream_s / batch_s:.2f}x total time; the stream "
              f"spent {stream_s - sum(stream_latency):.1f} s outside its batches' writes "
              f"(offsets, commit log, listing, planning); rows that differ between the two "
              f"tables: {same}")
        if args.compaction_every:
            print(f"compactions completed: stream {_compactions(root / 'streamed')} "
                  f"(asynchronous), batch writes {_compactions(root / 'batched')} (inline)")
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
