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
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import best_of, print_table

from hudisql.metadata.hfile_records import HFileRecords, encode_hfile
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.records import record_index_record
from hudisql.table.format.hfile import HFileReader

LOCATION = RecordLocation("city=sf", "0a1b2c3d-0000-4000-8000-00000000000f-0", "20240101000000000")


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

        start = time.perf_counter()
        write()
        write_seconds = time.perf_counter() - start
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

        times = best_of({"scan (raw)": scan_raw, "scan (records)": scan_records,
                         "point lookup": lookup, "prefix scan (1000 keys)": prefix_scan}, 3)
        reader = HFileReader(written["data"], str(path))
        print_table(
            f"HFile of {args.keys:,} record-index keys: {len(written['data']) / 2**20:.1f} MiB, "
            f"{len(reader.index)} data blocks (GZ); write {write_seconds:.2f} s",
            ("operation", "seconds", "of a full scan"),
            [(name, f"{s:.4f}", f"{s / times['scan (records)']:.4f}")
             for name, s in times.items()])


if __name__ == "__main__":
    main()
