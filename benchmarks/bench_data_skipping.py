"""Data skipping benchmark: planning time of index lookups on a table of many file groups.

Run: ``.venv/bin/python benchmarks/bench_data_skipping.py [--rows N] [--groups G]
[--commits C]``. Writes a non-partitioned merge-on-read table of N rows in G file groups
(keys and fares clustered by file) with the pure-Python writer, builds every metadata
partition (files, column stats, partition stats, bloom filters, record index, a secondary
index on ``rider``), then C upserts (each adds log files to data and metadata file groups).
Times ``skip_file_slices`` (the driver's planning: metadata reads and pruning) per filter,
best of five, with the slices kept.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import best_of, print_table

from hudisql.metadata.build import build_partitions
from hudisql.metadata.config import IndexDefinition
from hudisql.metadata.participant import participants_for
from hudisql.metadata.skipping import parse_predicates, skip_file_slices
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient

PARTITIONS = ("files", "column_stats", "partition_stats", "bloom_filters", "record_index",
              "secondary_index_rider")
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("rider", pa.string()),
                    ("fare", pa.float64())])


def _row(i: int, ts: int = 1, rider: str | None = None) -> dict[str, object]:
    return {"id": f"k{i:09d}", "ts": ts, "rider": rider or f"r{i % 50}", "fare": i * 0.5}


def _table(root: Path, rows: int, groups: int, commits: int) -> HudiTable:
    client = WriteClient(create_table(root / "t", "t", SCHEMA, "id", (), "ts"),
                         max_records_per_file=max(1, rows // groups))
    client.insert([_row(i) for i in range(rows)])
    table = build_partitions(client.table, PARTITIONS, {"secondary_index_rider": IndexDefinition(
        "secondary_index_rider", "secondary_index", ("rider",))})
    for c in range(commits):
        client = WriteClient(table, participants=participants_for(table))
        client.upsert([_row(i, ts=2 + c, rider="vip") for i in range(c, rows, rows // 20)])
        table = client.table
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--groups", type=int, default=250)
    parser.add_argument("--commits", type=int, default=5)
    args = parser.parse_args()
    n = args.rows
    filters = {
        "point lookup (record index)": f"id = 'k{n // 3:09d}'",
        "10 keys IN (record index)": "id IN (" + ", ".join(
            f"'k{i:09d}'" for i in range(0, n, n // 10)) + ")",
        "key range (column stats)": f"id >= 'k{n - n // 100:09d}'",
        "fare < x (column stats)": f"fare < {n // 200}",
        "rider = 'vip' (secondary index)": "rider = 'vip'",
        "no index applies": "lower(rider) = 'x'",
    }
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        table = _table(Path(tmp), n, args.groups, args.commits)
        built = time.perf_counter() - start
        path = table.base_path
        slices = HudiTable.open(path).file_slices()
        kept: dict[str, str] = {}

        def plan(text: str) -> None:
            result = skip_file_slices(HudiTable.open(path), slices, parse_predicates(text))
            kept[text] = f"{len(result.kept)}/{result.total}"

        times = best_of({name: (lambda t=text: plan(t)) for name, text in filters.items()}, 5)
        cpu = {}
        for name, text in filters.items():  # the driver's CPU time, immune to other load
            start = time.process_time()
            for _ in range(5):
                plan(text)
            cpu[name] = (time.process_time() - start) / 5
        opened = best_of({"open": lambda: HudiTable.open(path).file_slices()}, 5)["open"]
    print(f"table: {n} rows, {len(slices)} file groups, {args.commits} upserts "
          f"(built in {built:.1f} s); opening it and listing slices: {opened * 1000:.1f} ms")
    print_table("data skipping: planning (skip_file_slices, table open included)",
                ("filter", "ms (best of 5)", "CPU ms (mean)", "slices kept"),
                [(name, f"{t * 1000:.1f}", f"{cpu[name] * 1000:.1f}", kept[filters[name]])
                 for name, t in times.items()])


if __name__ == "__main__":
    main()
