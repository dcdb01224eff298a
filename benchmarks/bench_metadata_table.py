"""Metadata table benchmark: the record index of many keys, and upserts that keep indexes.

Run: ``.venv/bin/python benchmarks/bench_metadata_table.py [--keys N] [--rows M]``. Times,
best of three rounds: routing keys to file groups (Java ``String.hashCode``), building the
record-index rows column-wise, writing the partition's base files, a deltacommit of a tenth
as many new keys, and key lookups over base files and logs. Then an upsert of a tenth of an
M-row merge-on-read table through the pure-Python writer, with files, column stats,
partition stats, bloom filters, record index and a secondary index kept, against the same
upsert on a table without a metadata table.
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

from hudisql.metadata.arrow_records import record_index_rows
from hudisql.metadata.build import build_partitions
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.partitions import file_group_indexes
from hudisql.metadata.records import PartitionUpdate, record_index_record
from hudisql.metadata.table import MetadataTable
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient

GROUPS = 10
LOCATION = RecordLocation("city=sf", "0a1b2c3d-0000-4000-8000-00000000000f-0", "20240101000000000")


def _data_table(root: Path) -> HudiTable:
    schema = pa.schema([("id", pa.string()), ("city", pa.string())])
    client = WriteClient(create_table(root / "t", "bench", schema, "id", "city"))
    client.insert([{"id": "a", "city": "sf"}])
    return client.table


def _completed_data_instant(table: HudiTable) -> str:
    timeline = table.reload().timeline
    inflight = timeline.transition_to_inflight(timeline.create_requested(Action.DELTACOMMIT))
    timeline.complete(inflight, b"{}")
    return inflight.timestamp


def _upsert_ratio(root: Path, n: int) -> tuple[float, float]:
    """Seconds of one upsert without and with every metadata partition kept."""
    from hudisql.metadata.config import IndexDefinition
    from hudisql.metadata.participant import participants_for

    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("rider", pa.string()),
                        ("fare", pa.float64()), ("city", pa.string())])

    def row(i: int, rider: str) -> dict[str, object]:
        return {"id": f"k{i:08d}", "ts": i, "rider": rider, "fare": i * 0.5,
                "city": ("sf", "la", "ny")[i % 3]}

    tables = []
    for name in ("plain", "indexed"):
        client = WriteClient(create_table(root / name, "t", schema, "id", "city", "ts"),
                             max_records_per_file=max(1, n // 6))
        client.insert([row(i, f"r{i % 50}") for i in range(n)])
        tables.append(client.table)
    plain, indexed = tables
    indexed = build_partitions(indexed, ("files", "column_stats", "partition_stats",
                                         "bloom_filters", "record_index",
                                         "secondary_index_rider"),
                               {"secondary_index_rider": IndexDefinition(
                                   "secondary_index_rider", "secondary_index", ("rider",))})
    times = []
    for table in (plain, indexed):
        updates = [row(i, f"x{i % 7}") for i in range(0, n, 10)]
        client = WriteClient(table, participants=participants_for(table))
        start = time.perf_counter()
        client.upsert(updates)
        times.append(time.perf_counter() - start)
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    n = args.keys
    keys = pa.array([f"uuid-{i:012d}-abcdef" for i in range(n)])
    wanted = [f"uuid-{i:012d}-abcdef" for i in range(0, n, max(1, n // 1000))]
    with tempfile.TemporaryDirectory() as tmp:
        table = _data_table(Path(tmp))
        rows = record_index_rows(keys, LOCATION)
        state: dict[str, MetadataTable] = {}

        def build() -> None:
            mdt = MetadataTable(table.reload())
            mdt.drop_partition("record_index")
            ts = mdt.new_init_instant(table.timeline.last_completed().timestamp)
            mdt.initialize_partition("record_index", GROUPS, ts)
            mdt.complete_instant(ts, mdt.write_base_files("record_index", rows, ts))
            state["mdt"] = mdt.reload(table.reload())

        new = [record_index_record(f"new-{i}", LOCATION) for i in range(n // 10)]

        def deltacommit() -> None:
            ts = _completed_data_instant(table)
            state["mdt"].reload(table.reload()).write_deltacommit(
                ts, {"record_index": PartitionUpdate(new)})

        times = best_of({
            "route keys to file groups": lambda: file_group_indexes(keys, GROUPS),
            "record-index rows (Arrow)": lambda: record_index_rows(keys, LOCATION),
            "build partition (10 base files)": build,
        }, 3)
        times.update(best_of({
            f"deltacommit of {n // 10} new keys": deltacommit,
            f"look up {len(wanted)} keys": lambda: state["mdt"].reload(table.reload())
            .read_partition("record_index", keys=wanted),
            "look up 2 keys": lambda: state["mdt"].reload(table.reload())
            .read_partition("record_index", keys=[wanted[3], "new-5"]),
        }, 3))
        plain, indexed = _upsert_ratio(Path(tmp), args.rows)
    print_table(f"metadata table, record index of {n} keys", ("step", "seconds"),
                [(name, f"{t:.3f}") for name, t in times.items()])
    print_table(f"upsert of {args.rows // 10} of {args.rows} rows (pure-Python writer)",
                ("table", "seconds"),
                [("no metadata table", f"{plain:.3f}"), ("6 partitions kept", f"{indexed:.3f}"),
                 ("ratio", f"{indexed / plain:.2f}")])


if __name__ == "__main__":
    main()
