"""HFile benchmark: a record-index base file of N keys, written, scanned whole, and looked up.

Run: ``.venv/bin/python benchmarks/bench_hfile.py [--keys N]`` (default 1,000,000). Writes
one GZ HFile of record-index records (keys ``key-<n>``, 24 characters, one location) with
hudisql's writer, then times, best of three: writing it, reading every record's raw bytes
(``items``), decoding every record (``HFileRecords``), a point lookup from a cold open of
the file (trailer, load-on-open section, one data block, read by ranges through
``pyarrow``) and a prefix scan of 1,000 keys. The goal of #32: a point lookup costs at most
a tenth of a full scan.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import print_table

from hudisql.metadata.hfile_records import HFileRecords, encode_hfile
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.records import record_index_record
from hudisql.table.format.hfile import HFileReader

LOCATION = RecordLocation("city=sf", "0a1b2c3d-0000-4000-8000-00000000000f-0", "20240101000000000")


def _best_of_three(fns: dict[str, Callable[[], None]]) -> dict[str, tuple[float, float]]:
    """Best wall and best CPU seconds of each function, rounds interleaved. CPU seconds
    move less with the load of a shared machine than wall seconds."""
    best = {name: (float("inf"), float("inf")) for name in fns}
    for _ in range(3):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=1_000_000)
    args = parser.parse_args()
    records = [record_index_record(f"key-{i:020d}", LOCATION) for i in range(args.keys)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "record-index-0000-0_0-0-0_20240101000000000.hfile"
        written: dict[str, bytes] = {}

        def write() -> None:
            written["data"] = encode_hfile(records)
            path.write_bytes(written["data"])

        start, start_cpu = time.perf_counter(), time.process_time()
        write()
        write_seconds = time.perf_counter() - start
        write_cpu = time.process_time() - start_cpu
        wanted = records[args.keys * 2 // 3]["key"]
        prefix = wanted[:-3]

        def scan_raw() -> None:
            assert sum(1 for _ in HFileReader(path.read_bytes(), str(path)).items()) == args.keys

        def scan_records() -> None:
            assert sum(1 for _ in HFileRecords(path.read_bytes(), str(path))) == args.keys

        def lookup() -> None:
            with pa.OSFile(str(path)) as native:
                assert HFileRecords(native, str(path)).get(wanted) is not None

        def prefix_scan() -> None:
            with pa.OSFile(str(path)) as native:
                found = sum(1 for _ in HFileRecords(native, str(path)).with_prefix(prefix))
                assert found == min(1000, args.keys)

        times = _best_of_three({"scan (raw)": scan_raw, "scan (records)": scan_records,
                                "point lookup": lookup, "prefix scan (1000 keys)": prefix_scan})
        full = times["scan (records)"]
        reader = HFileReader(written["data"], str(path))
        print_table(
            f"HFile of {args.keys:,} record-index keys: {len(written['data']) / 2**20:.1f} MiB, "
            f"{len(reader.index)} data blocks (GZ); write {write_seconds:.2f} s "
            f"({write_cpu:.2f} s CPU)",
            ("operation", "seconds", "of a full scan", "CPU seconds", "of a full scan (CPU)"),
            [(name, f"{wall:.4f}", f"{wall / full[0]:.4f}", f"{cpu:.4f}", f"{cpu / full[1]:.4f}")
             for name, (wall, cpu) in times.items()])


if __name__ == "__main__":
    main()
