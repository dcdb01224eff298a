"""Clustering benchmark (issue 31): the two figures of its "Done when".

1. **Pruning.** A copy-on-write table written in arrival order (``id``), with column stats,
   ``k`` and ``k2`` random (uncorrelated with the write order). A range query on ``k``
   selecting about 1% of the rows: file slices kept by column stats before and after
   ``RUN CLUSTERING ... ORDER BY k`` (goal: <= 5% after; the mean over ten places of the
   range), one query's time (rows counted through Spark's ``hudi`` source) with data
   skipping against a full scan; then Z-order and Hilbert clusterings over ``(k, k2)``:
   slices kept for a 1% range on either column.
2. **Small files.** One partition of 1,000 small files clustered into files of the target
   size: files after, time against Spark rewriting the same rows as plain parquet
   (``spark.read.parquet(...).coalesce(n).write.parquet``; goal <= 1.5x).

Run: ``.venv/bin/python benchmarks/bench_clustering.py [--rows N] [--small-rows N]
[--files N]``. Tables are written by the core's writer (no Spark, so the setup is not
timed through Spark); clustering runs as Spark jobs (``local[2]``) through
``handle.maintenance`` as ``RUN CLUSTERING`` does, with the metadata table as participant.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import print_table

from hudisql.metadata.build import build_partitions
from hudisql.metadata.participant import participants_for
from hudisql.metadata.skipping import data_skipping
from hudisql.services.maintenance import Maintenance
from hudisql.services.runner import SparkRunner
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("k", pa.int64()),
                    ("k2", pa.int64()), ("note", pa.string())])
SPACE = 1_000_000_000


def _rows(start: int, count: int, rng: random.Random) -> list[dict[str, object]]:
    return [{"id": f"id{i:010d}", "ts": 1, "k": rng.randrange(SPACE), "k2": rng.randrange(SPACE),
             "note": f"row {i} of the benchmark"} for i in range(start, start + count)]


def _write(root: Path, name: str, rows: int, files: int, stats: bool) -> HudiTable:
    """A non-partitioned COW table of ``rows`` rows in ``files`` base files, in id order."""
    table = create_table(root / name, name, SCHEMA, "id", (), "ts", "COPY_ON_WRITE")
    client = WriteClient(table, max_records_per_file=max(1, rows // files))
    rng = random.Random(7)
    batch = 200_000
    for start in range(0, rows, batch):
        client.insert(_rows(start, min(batch, rows - start), rng))
        client = WriteClient(client.table, max_records_per_file=max(1, rows // files))
    table = client.table
    if stats:
        table = build_partitions(table, ("files", "column_stats"))
    return table


def _kept(table: HudiTable, column: str) -> tuple[float, int]:
    """Slices kept for a 1% range on ``column``, averaged over ten places of the range (a
    single place may fall on a curve's big jumps, or between them); and the slices."""
    kept = []
    for place in range(10):
        lo = int(SPACE * (0.03 + 0.092 * place))
        result = data_skipping(table.reload(), f"{column} BETWEEN {lo} AND {lo + SPACE // 100}")
        kept.append(len(result.kept))
    return sum(kept) / len(kept), result.total


def _share(kept: tuple[float, int]) -> str:
    return f"{kept[0]:.1f} of {kept[1]} ({100 * kept[0] / kept[1]:.1f}%)"


def _spark(warehouse: Path):  # type: ignore[no-untyped-def]
    """A local[2] SparkSession started as users start one (``hudisql.connect``)."""
    import hudisql

    return hudisql.connect(warehouse=warehouse, conf={
        "spark.master": "local[2]", "spark.app.name": "bench_clustering",
        "spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"}).spark


def _timed(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _count(spark, path: str, flt: str, skipping: bool) -> int:  # type: ignore[no-untyped-def]
    """Rows matching ``flt`` through the ``hudi`` source. Skipping: the predicate fixed for
    the relation (``hudisql.read.where``), the only one that prunes (filters Spark pushes
    never do, see ``hudisql.read.datasource``); a full scan reads every slice."""
    spark.conf.set("hoodie.enable.data.skipping", "true" if skipping else "false")
    reader = spark.read.format("hudi")
    if skipping:
        reader = reader.option("hudisql.read.where", flt)
    return int(reader.load(path).where(flt).count())


def _queries(spark, path: str, flt: str) -> tuple[float, float, int]:  # type: ignore[no-untyped-def]
    """Best of two runs each, interleaved (full scan first: no warm-up favours skipping):
    seconds with data skipping, seconds of a full scan, rows."""
    best = {True: float("inf"), False: float("inf")}
    rows = 0
    for _ in range(2):
        for skipping in (False, True):
            took, n = _timed(lambda s=skipping: _count(spark, path, flt, s))
            best[skipping] = min(best[skipping], took)
            rows = int(n)  # type: ignore[call-overload]
    return best[True], best[False], rows


def pruning(root: Path, spark, rows: int, files: int) -> None:  # type: ignore[no-untyped-def]
    table = _write(root, "arrival", rows, files, stats=True)
    path = table.base_path
    lo = int(SPACE * 0.37)
    on_k = f"k BETWEEN {lo} AND {lo + SPACE // 100}"
    on_k2 = f"k2 BETWEEN {lo} AND {lo + SPACE // 100}"
    size = sum(s.total_size for s in table.file_slices())
    options = {"hoodie.clustering.plan.strategy.small.file.limit": str(10 * size),
               "hoodie.clustering.plan.strategy.target.file.max.bytes": str(size // files + 1),
               "hoodie.clustering.plan.strategy.max.bytes.per.group": str(10 * size)}
    facade = Maintenance(path, options, SparkRunner(spark),
                         participants=lambda t: participants_for(t))
    out = []
    before = _kept(table, "k")
    t_skip, t_full, n = _queries(spark, path, on_k)
    out.append(("before (arrival order)", _share(before), f"{n}", f"{t_skip:.2f}",
                f"{t_full:.2f}", "-"))
    t_cluster, _ = _timed(lambda: facade.run_clustering(order=["k"]))
    after = _kept(table, "k")
    t_skip, t_full, n = _queries(spark, path, on_k)
    out.append(("ORDER BY k", _share(after), f"{n}", f"{t_skip:.2f}", f"{t_full:.2f}",
                f"{t_cluster:.1f}"))
    for layout in ("z-order", "hilbert"):
        t_cluster, _ = _timed(lambda lay=layout: facade.run_clustering(order=["k", "k2"],
                                                                       layout=lay))
        for name, flt in (("k", on_k), ("k2", on_k2)):
            kept = _kept(table, name)
            t_skip, t_full, n = _queries(spark, path, flt)
            out.append((f"{layout} (k, k2), range on {name}",
                        _share(kept), f"{n}",
                        f"{t_skip:.2f}", f"{t_full:.2f}",
                        f"{t_cluster:.1f}" if name == "k" else ""))
    print_table(f"1. pruning: {rows:,} rows in {files} files, a 1% range",
                ("layout", "slices kept (column stats, mean of 10 ranges)", "rows",
                 "query s (skipping)",
                 "query s (full scan)", "clustering s"), out)


def small_files(root: Path, spark, rows: int, files: int) -> None:  # type: ignore[no-untyped-def]
    table = _write(root, "small", rows, files, stats=False)
    path = table.base_path
    bases = [os.path.join(path, s.base_file.path) for s in table.file_slices() if s.base_file]
    size = sum(os.path.getsize(b) for b in bases)
    target = max(1, size // 4)  # four files of the target size
    # Both sides write snappy (Spark's default; hudisql's is gzip, as Hudi's).
    options = {"hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
               "hoodie.parquet.compression.codec": "snappy"}
    facade = Maintenance(path, options, SparkRunner(spark),
                         participants=lambda t: participants_for(t))
    t_ours, results = _timed(facade.run_clustering)
    after = HudiTable.open(path).file_slices()
    outputs = len(after)
    plain = str(root / "plain")
    t_spark, _ = _timed(lambda: spark.read.parquet(*bases).coalesce(outputs)
                        .write.mode("overwrite").parquet(plain))
    out = [("hudisql clustering", f"{len(bases)} -> {outputs}", f"{t_ours:.1f}",
            f"{t_ours / t_spark:.2f}x"),
           ("Spark: read parquet, coalesce, write parquet", f"{len(bases)} -> {outputs}",
            f"{t_spark:.1f}", "1.00x")]
    assert results and sum(s.num_writes for s in results[0].write_stats) == rows
    print_table(f"2. small files: {rows:,} rows in {len(bases)} files of one partition, "
                f"target {target / 1e6:.1f} MB", ("job", "files", "seconds", "vs Spark"), out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--small-rows", type=int, default=500_000)
    parser.add_argument("--small-files", type=int, default=1000)
    parser.add_argument("--only", choices=("pruning", "small"), default=None)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        spark = _spark(Path(tmp) / "warehouse")
        if args.only in (None, "pruning"):
            pruning(Path(tmp), spark, args.rows, args.files)
        if args.only in (None, "small"):
            small_files(Path(tmp), spark, args.small_rows, args.small_files)
        spark.stop()
    print(f"load: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
