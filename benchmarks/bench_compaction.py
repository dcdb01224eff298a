"""Log compaction benchmark (issue 14): slices with 50 small log blocks.

1. Bytes written by log compaction against full compaction of the same slices (goal: at
   most 0.2).
2. Merged read time of those slices before and after log compaction (goal: 3x faster).
3. The snapshot read after full compaction against reading the same rows as plain parquet
   (reported).

Run: ``.venv/bin/python benchmarks/bench_compaction.py [--rows N] [--blocks N]``. The table
is written by the core's writer (no Spark); services run in-process, one task per slice.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import best_of, print_table

from hudisql.services.compaction import run_compaction
from hudisql.services.log_compaction import run_log_compaction
from hudisql.table.read.merge import log_touched_keys, read_file_slice
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("fare", pa.float64()),
                    ("rider", pa.string()), ("city", pa.string())])
CITIES = ("sf", "la", "ny", "sp")


def _records(keys: list[int], ts: int, rng: random.Random) -> pa.Table:
    return pa.table({
        "id": [f"k{k:08d}" for k in keys], "ts": [ts] * len(keys),
        "fare": [rng.random() * 100 for _ in keys],
        "rider": [f"rider-{rng.randrange(10_000)}" for _ in keys],
        "city": [CITIES[k % len(CITIES)] for k in keys],
    }, schema=SCHEMA)


def build(root: Path, rows: int, blocks: int, per_block: int, hot: int | None = None) -> Path:
    """A MOR table: ``rows`` inserted, then ``blocks`` upserts of ``per_block`` random keys
    among the first ``hot`` (default: all), each adding one small log block to every file
    group."""
    rng = random.Random(7)
    table = create_table(root / "t", "t", SCHEMA, "id", ["city"], "ts", "MERGE_ON_READ",
                         options={"hoodie.parquet.compression.codec": "snappy"})
    client = WriteClient(table, max_records_per_file=rows)
    client.insert(_records(list(range(rows)), 1, rng))
    for b in range(blocks):
        client.upsert(_records(rng.sample(range(hot or rows), per_block), 2 + b, rng))
    return root / "t"


def slice_read_seconds(path: Path, rounds: int) -> tuple[float, float]:
    """Best seconds to read every slice merged, and to merge only their logs."""
    table = HudiTable.open(str(path))
    slices = table.file_slices()

    def read() -> None:
        for s in slices:
            read_file_slice(table.storage, table.properties, table.timeline, s)

    def logs() -> None:
        for s in slices:
            log_touched_keys(table.storage, table.properties, table.timeline, s)

    best = best_of({"read": read, "logs": logs}, rounds)
    return best["read"], best["logs"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--blocks", type=int, default=50)
    parser.add_argument("--per-block", type=int, default=100)
    parser.add_argument("--hot-keys", type=int, default=2_000,
                        help="updates pick their keys among this many (hot) keys")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-compaction-"))
    try:
        base = build(work / "base", args.rows, args.blocks, args.per_block, args.hot_keys)
        lc_path, full_path = work / "lc" / "t", work / "full" / "t"
        shutil.copytree(base, lc_path)
        shutil.copytree(base, full_path)
        read_before = slice_read_seconds(lc_path, args.rounds)
        lc = run_log_compaction(HudiTable.open(str(lc_path)))
        assert lc is not None
        read_after = slice_read_seconds(lc_path, args.rounds)
        full = run_compaction(HudiTable.open(str(full_path)))
        assert full is not None
        ratio = lc.bytes_written / full.bytes_written
        hudi = HudiTable.open(str(full_path))
        plain = work / "plain.parquet"
        pq.write_table(hudi.read(), plain, compression="snappy")
        times = best_of({
            "snapshot": lambda: HudiTable.open(str(full_path)).read(),
            "plain": lambda: pq.read_table(plain),
        }, args.rounds)
        slices = len(hudi.file_slices())
        print_table(
            f"Log compaction: {slices} slices, {args.blocks} log blocks of {args.per_block} "
            f"updates (keys among {args.hot_keys} hot ones) over {args.rows} rows",
            ("figure", "value", "goal"),
            [
                ("bytes written: log compaction", f"{lc.bytes_written:,}", ""),
                ("bytes written: full compaction", f"{full.bytes_written:,}", ""),
                ("ratio log / full", f"{ratio:.3f}", "<= 0.2"),
                ("slice reads before log compaction (s)", f"{read_before[0]:.3f}", ""),
                ("slice reads after log compaction (s)", f"{read_after[0]:.3f}", ""),
                ("read speed-up", f"{read_before[0] / read_after[0]:.2f}x", ">= 3x"),
                ("log merges before log compaction (s)", f"{read_before[1]:.3f}", ""),
                ("log merges after log compaction (s)", f"{read_after[1]:.3f}", ""),
                ("log merge speed-up", f"{read_before[1] / read_after[1]:.2f}x", ""),
                ("snapshot after compaction (s)", f"{times['snapshot']:.3f}", ""),
                ("plain parquet of the same rows (s)", f"{times['plain']:.3f}", ""),
                ("snapshot / plain", f"{times['snapshot'] / times['plain']:.2f}x", "report"),
            ],
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
