"""Log format benchmark: Avro data block encode/decode throughput, and a header-only scan.

Run: ``.venv/bin/python benchmarks/bench_log_format.py`` (``--quick`` for smaller sizes).

1. Encode and decode of Avro data blocks (Arrow table -> whole block -> Arrow table) against
   fastavro's bare schemaless loop over the same records (dicts -> one ``bytes`` per record
   -> dicts), timed in the same process, best of several interleaved rounds. Two record
   shapes: the quickstart trips table and the sample table with every type the fixtures
   have (decimal, date, timestamp, binary, array<struct>, map<string,struct>, nested
   struct). The goal is ours/fastavro >= 0.8.
2. A header-only scan of a log file of 10,000 blocks from storage, against reading the
   same file's bytes (and against reading them and scanning in memory).
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fastavro
import pyarrow as pa
from report import print_table

from hudisql.table.format.log import (
    HeaderKey,
    decode_data_block,
    encode_avro_data_block,
    scan_blocks,
    scan_log_file,
)
from hudisql.table.format.log.format import BlockType, encode_block
from hudisql.table.format.schema import arrow_to_avro, arrow_to_records
from hudisql.table.io.storage import Storage

INSTANT = "20250101000000000"


def trips_table(n: int, rng: random.Random) -> pa.Table:
    """Rows shaped like the quickstart trips table, meta columns included."""
    cities = ["san_francisco", "sao_paulo", "chennai"]
    rows = []
    for i in range(n):
        city = cities[i % 3]
        key = f"{rng.getrandbits(128):032x}"
        rows.append({
            "_hoodie_commit_time": INSTANT, "_hoodie_commit_seqno": f"{INSTANT}_0_{i}",
            "_hoodie_record_key": key, "_hoodie_partition_path": f"city={city}",
            "_hoodie_file_name": "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0",
            "ts": 1695159649087 + rng.randrange(10**6), "uuid": key,
            "rider": f"rider-{rng.choice('ABCDEFGHIJ')}", "driver": f"driver-{i % 50}",
            "fare": round(rng.uniform(5, 100), 2), "city": city,
        })
    return pa.Table.from_pylist(rows)


SAMPLE_SCHEMA = pa.schema([
    ("id", pa.int32()), ("name", pa.string()), ("isActive", pa.bool_()),
    ("byteField", pa.int32()), ("shortField", pa.int32()), ("intField", pa.int32()),
    ("longField", pa.int64()), ("floatField", pa.float32()), ("doubleField", pa.float64()),
    ("decimalField", pa.decimal128(10, 5)), ("dateField", pa.date32()),
    ("timestampField", pa.timestamp("us", tz="UTC")), ("binaryField", pa.binary()),
    ("arrayField", pa.list_(pa.struct([("arr_struct_f1", pa.string()),
                                       ("arr_struct_f2", pa.int32())]))),
    ("mapField", pa.map_(pa.string(), pa.struct([("map_field_value_struct_f1", pa.float64()),
                                                 ("map_field_value_struct_f2", pa.bool_())]))),
    ("structField", pa.struct([("field1", pa.string()), ("field2", pa.int32()),
                               ("child_struct", pa.struct([("child_field1", pa.float64()),
                                                           ("child_field2", pa.bool_())]))])),
])


def sample_table(n: int, rng: random.Random) -> pa.Table:
    """Rows of the fixtures' sample table, every type it has."""
    colors = ["red", "blue", "green", "yellow", "purple"]
    start = dt.datetime(2023, 4, 1, tzinfo=dt.UTC)
    rows = []
    for i in range(n):
        rows.append({
            "id": i, "name": f"name-{i}", "isActive": i % 2 == 0, "byteField": i % 128,
            "shortField": i % 30000, "intField": rng.randrange(10**6),
            "longField": rng.randrange(10**12), "floatField": float(i % 100),
            "doubleField": rng.random() * 1000,
            "decimalField": Decimal(rng.randrange(10**10)).scaleb(-5),
            "dateField": start.date() + dt.timedelta(days=i % 365),
            "timestampField": start + dt.timedelta(seconds=i),
            "binaryField": f"binary data {i}".encode(),
            "arrayField": [{"arr_struct_f1": rng.choice(colors), "arr_struct_f2": k * 100}
                           for k in range(1 + i % 3)],
            "mapField": [(f"key{k}", {"map_field_value_struct_f1": rng.random(),
                                      "map_field_value_struct_f2": k % 2 == 0})
                         for k in range(2)],
            "structField": {"field1": f"f{i}", "field2": i % 90,
                            "child_struct": {"child_field1": rng.random(),
                                             "child_field2": i % 3 == 0}},
        })
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


def _best(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def codec_rows(name: str, table: pa.Table, rounds: int) -> list[tuple[str, ...]]:
    """Encode and decode rates of ours and fastavro's for one table."""
    schema_text = json.dumps(arrow_to_avro(table.schema, "bench"))
    parsed = fastavro.parse_schema(json.loads(schema_text))
    records = arrow_to_records(table)
    header = {HeaderKey.INSTANT_TIME: INSTANT}

    def fa_encode() -> list[bytes]:
        out = []
        for r in records:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, r)
            out.append(buf.getvalue())
        return out

    def fa_decode() -> list[Any]:
        return [fastavro.schemaless_reader(io.BytesIO(b), parsed, None) for b in encoded]

    def our_encode() -> bytes:
        return encode_avro_data_block(table, schema_text, header)

    def our_decode() -> pa.Table:
        [info] = scan_blocks(block)
        return decode_data_block(block, info)

    encoded = fa_encode()
    block = our_encode()
    assert our_decode().equals(table.cast(our_decode().schema))
    times = {"fa_enc": float("inf"), "our_enc": float("inf"),
             "fa_dec": float("inf"), "our_dec": float("inf")}
    # Interleaved rounds: a busy neighbour slows both sides alike.
    for _ in range(rounds):
        for key, fn in (("fa_enc", fa_encode), ("our_enc", our_encode),
                        ("fa_dec", fa_decode), ("our_dec", our_decode)):
            times[key] = min(times[key], _best(fn, 1)[0])
    n = table.num_rows
    rows = []
    for op in ("encode", "decode"):
        ours, theirs = times[f"our_{op[:3]}"], times[f"fa_{op[:3]}"]
        rows.append((name, str(n), op, f"{n / ours:,.0f}", f"{n / theirs:,.0f}",
                     f"{theirs / ours:.2f}"))
    return rows


class _CountingFile:
    def __init__(self, inner: Any, counter: list[int]) -> None:
        self.inner, self.counter = inner, counter

    def size(self) -> int:
        return int(self.inner.size())

    def read_at(self, n: int, pos: int) -> bytes:
        data = bytes(self.inner.read_at(n, pos))
        self.counter[0] += len(data)
        return data

    def close(self) -> None:
        self.inner.close()


class _CountingStorage(Storage):
    counter = [0]

    def open_input_file(self, rel: str) -> Any:
        return _CountingFile(super().open_input_file(rel), self.counter)


def _write_scan_file(path: Path, blocks: int, records: int, sparse_content: int) -> None:
    """``blocks`` blocks of ``records`` trips records, or of ``sparse_content`` zero bytes
    left as a hole in the file (a large block that costs no disk)."""
    table = trips_table(max(records, 1), random.Random(1))
    schema_text = json.dumps(arrow_to_avro(table.schema, "bench"))
    one = encode_avro_data_block(table, schema_text, {HeaderKey.INSTANT_TIME: INSTANT})
    [info] = scan_blocks(one)
    content = one[info.content_position:info.content_position + info.content_length]
    if sparse_content:
        content = b"\0" * sparse_content
    with open(path, "wb") as f:
        for i in range(blocks):
            block = encode_block(BlockType.AVRO_DATA, {
                HeaderKey.INSTANT_TIME: f"2025010100{i:07d}", HeaderKey.SCHEMA: schema_text,
                HeaderKey.BLOCK_IDENTIFIER: f"0,{i}"}, content)
            if not sparse_content:
                f.write(block)
                continue
            head = block.index(content) if content else len(block)
            f.write(block[:head])
            f.seek(len(content), 1)  # a hole: reads back as zeros
            f.write(block[head + len(content):])


def scan_rows(label: str, blocks: int, records: int, sparse_content: int,
              rounds: int) -> list[tuple[str, ...]]:
    """Header-only scan of a log file of ``blocks`` blocks against reading its bytes."""
    mb = 1024 * 1024
    with tempfile.TemporaryDirectory(prefix="hudisql-bench-") as tmp:
        _write_scan_file(Path(tmp) / "scan.log", blocks, records, sparse_content)
        storage = _CountingStorage(tmp)
        size = (Path(tmp) / "scan.log").stat().st_size

        scanned = [0]

        def scan_file() -> int:
            storage.counter[0] = 0
            n = len(scan_log_file(storage, "scan.log"))
            scanned[0] = storage.counter[0]
            return n

        def read_whole() -> int:
            # Every byte, in 8 MiB reads (the file may not fit in memory).
            f = storage.open_input_file("scan.log")
            total = 0
            while total < size:
                total += len(f.read_at(8 * mb, total))
            f.close()
            return total

        def read_and_scan() -> int:
            return len(scan_blocks(storage.read_bytes("scan.log")))

        assert scan_file() == blocks
        cases: list[tuple[str, Callable[[], int]]] = [("scan", scan_file), ("read", read_whole)]
        if not sparse_content:
            assert read_and_scan() == blocks
            cases.append(("read+scan", read_and_scan))
        results: dict[str, float] = {}
        for _ in range(rounds):
            for key, fn in cases:
                results[key] = min(results.get(key, float("inf")), _best(fn, 1)[0])
    rows = [
        (label, f"{size / mb:,.0f}", "scan_log_file (header-only)", f"{results['scan']:.3f}",
         f"{scanned[0] / mb:,.1f}", f"{blocks / results['scan']:,.0f}",
         f"{results['scan'] / results['read']:.2f}"),
        (label, f"{size / mb:,.0f}", "read every byte of the file", f"{results['read']:.3f}",
         f"{size / mb:,.1f}", "-", "1.00"),
    ]
    if "read+scan" in results:
        rows.append((label, f"{size / mb:,.0f}", "read_bytes, then scan_blocks",
                     f"{results['read+scan']:.3f}", f"{size / mb:,.1f}",
                     f"{blocks / results['read+scan']:,.0f}",
                     f"{results['read+scan'] / results['read']:.2f}"))
    return rows




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    args = parser.parse_args()
    rounds = 1 if args.quick else 3
    scale = 10 if args.quick else 1
    rng = random.Random(0)
    rows = codec_rows("trips", trips_table(50_000 // scale, rng), rounds)
    rows += codec_rows("all types", sample_table(20_000 // scale, rng), rounds)
    print_table(
        "Avro data blocks: ours (Arrow -> block -> Arrow) vs fastavro's schemaless loop",
        ("records", "n", "op", "ours rec/s", "fastavro rec/s", "ours/fastavro"), rows)
    blocks = 10_000
    scan = scan_rows(f"{40 // min(scale, 4)} records", blocks, 40 // min(scale, 4), 0, rounds)
    scan += scan_rows("256 KiB (sparse)", blocks, 0, 256 * 1024 // scale, rounds)
    print_table(
        f"Header-only scan of a log file of {blocks:,} blocks vs reading its bytes",
        ("block content", "file MiB", "method", "seconds", "MiB read", "blocks/s",
         "time vs read"), scan)

if __name__ == "__main__":
    main()
