"""Merged-read benchmark: the table core's read of one file slice against plain pyarrow.

    .venv/bin/python benchmarks/bench_merge.py [--rows 300000] [--rounds 5] [--profile]

Builds real v6 MERGE_ON_READ file slices (a parquet base file written by the core's writer
and log files of Avro data / delete blocks) and times, best of ``--rounds`` interleaved:

* ``core``: ``read_file_slice`` of the slice (every column), as ``HudiTable.read`` does;
* ``source``: ``read_slice_batches``, the data source's executor path (every batch consumed);
* ``baseline``: pyarrow reading the same base file (every column) plus scanning and
  decoding the same log blocks with the core's block decoder: the I/O and decoding any
  merged read must do, without the merge.

The ratio ``core / baseline`` is the merge's overhead (goal: close to 1). ``--profile``
prints a cProfile of ``read_file_slice`` on each slice instead.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from report import best_of

from hudisql.read.datasource import read_slice_batches
from hudisql.table import HudiTable
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.instant import Action
from hudisql.table.format.log.format import DeleteRecord, HeaderKey, block_identifier
from hudisql.table.format.log.reader import decode_data_block, decode_delete_block, scan_blocks
from hudisql.table.format.log.writer import (
    LogFileWriter,
    encode_avro_data_block,
    encode_delete_block,
)
from hudisql.table.format.properties import new_table_properties
from hudisql.table.format.schema import META_COLUMNS, arrow_to_avro
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.merge import read_file_slice
from hudisql.table.read.reconcile import BLOCK_ATTEMPT_STAT_KEY
from hudisql.table.read.reconcile import record_committed_log_files as record
from hudisql.table.write.files import write_base_file

SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("rider", pa.string()),
                    ("fare", pa.float64()), ("city", pa.string())])
FILE_ID = "5d1c7a3e-9b2f-4e6d-8c1a-b2c3d4e5f6a7-0"
BASE = "20250101000000000"


def _rows(ids: np.ndarray, ts: int) -> pa.Table:
    """Records (meta columns included, unset) for the given numeric ids."""
    keys = pc.binary_join_element_wise("key-", pa.array(ids).cast(pa.string()), "")
    n = len(ids)
    meta = {name: pa.nulls(n, pa.string()) for name in META_COLUMNS}
    meta["_hoodie_record_key"] = keys
    meta["_hoodie_partition_path"] = pa.array([""] * n, pa.string())
    data = {
        "uuid": keys,
        "ts": pa.array(np.full(n, ts, dtype=np.int64)),
        "rider": pc.binary_join_element_wise("rider-", pa.array(ids % 1000).cast(pa.string()), ""),
        "fare": pa.array((ids % 997).astype(np.float64) / 10),
        "city": pc.binary_join_element_wise("city-", pa.array(ids % 8).cast(pa.string()), ""),
    }
    schema = pa.schema([pa.field(c, pa.string()) for c in META_COLUMNS] + list(SCHEMA))
    return pa.table({**meta, **data}, schema=schema)


class Slice:
    """A real v6 MOR table with one file group: a base file and log files of some instants."""

    def __init__(self, root: Path, base_rows: int) -> None:
        self.storage = Storage(str(root))
        self.avro = arrow_to_avro(SCHEMA, "bench", with_meta=True)
        self.avro_text = json.dumps(self.avro)
        self.props = new_table_properties("bench", "MERGE_ON_READ", ["uuid"],
                                          precombine_field="ts")
        self.props.save(self.storage)
        self.timeline = Timeline.load(self.storage, self.props)
        self.base_rows = base_rows
        self.rng = np.random.default_rng(0)
        self.task = 0
        inflight = self._begin(BASE)
        stat = write_base_file(self.storage, "", FILE_ID, BASE, "0-0-0",
                               _rows(np.arange(base_rows), 1), self.avro_text)
        meta = CommitMetadata(extra_metadata={"schema": self.avro_text})
        meta.add_write_stat(stat)
        self.timeline.complete(inflight, meta.to_json())

    def _begin(self, instant: str) -> Any:
        requested = self.timeline.create_requested(Action.DELTACOMMIT, instant)
        return self.timeline.transition_to_inflight(requested)

    def add_instant(self, instant: str, updates: int, deletes: int = 0) -> None:
        """One deltacommit: a log file with a data block of ``updates`` random base keys
        (newer ``ts``) and, with ``deletes``, a delete block of other random base keys."""
        inflight = self._begin(instant)
        self.task += 1
        writer = LogFileWriter(self.storage, "", FILE_ID, BASE, f"0-1-{self.task}", 1 << 30)
        ids = self.rng.choice(self.base_rows, updates + deletes, replace=False)
        header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: self.avro_text,
                  HeaderKey.BLOCK_IDENTIFIER: block_identifier(0, 0)}
        writer.append(encode_avro_data_block(_rows(np.sort(ids[:updates]), 2), self.avro,
                                             header))
        if deletes:
            header = {**header, HeaderKey.BLOCK_IDENTIFIER: block_identifier(0, 1)}
            records = [DeleteRecord(f"key-{i}", "", 0) for i in ids[updates:]]
            writer.append(encode_delete_block(records, header))
        files = [rel for rel, _ in writer.close()]
        meta = CommitMetadata(extra_metadata={"schema": self.avro_text})
        meta.add_write_stat(WriteStat(
            file_id=FILE_ID, path=files[0], prev_commit=BASE, log_version=1, log_offset=0,
            log_files=[f.rsplit("/", 1)[-1] for f in files], extra={BLOCK_ATTEMPT_STAT_KEY: 0},
        ))
        record(meta)
        self.timeline.complete(inflight, meta.to_json())

    def open(self) -> tuple[HudiTable, FileSlice]:
        """The table (fresh timeline) and its one latest file slice."""
        table = HudiTable.open(self.storage.base_uri)
        (file_slice,) = table.file_slices()
        return table, file_slice


def core(table: HudiTable, file_slice: FileSlice) -> int:
    """``read_file_slice`` of every column, as ``HudiTable.read`` calls it."""
    schema = table.schema
    rows = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                           schema=schema)
    return int(rows.num_rows)


def source(table: HudiTable, file_slice: FileSlice) -> int:
    """The data source's executor path: every batch of every column, in Spark's types."""
    head = table.timeline.last_completed()
    snapshot = head.timestamp if head is not None else None
    return sum(b.num_rows for b in read_slice_batches(table, file_slice, snapshot,
                                                      table.schema))


def baseline(table: HudiTable, file_slice: FileSlice) -> int:
    """pyarrow reading the base file plus scanning and decoding every log block."""
    assert file_slice.base_file is not None
    with table.storage.open_input_file(file_slice.base_file.path) as f:
        n = int(pq.read_table(f).num_rows)
    for log in file_slice.log_files:
        data = table.storage.read_bytes(log.path)
        for block in scan_blocks(data, log.path):
            if block.block_type.name == "DELETE":
                n += len(decode_delete_block(data, block))
            else:
                n += decode_data_block(data, block).num_rows
    return n




def _shapes(rows: int) -> list[tuple[str, list[tuple[int, int]]]]:
    """(label, [(updates, deletes) per instant]) for each slice benchmarked."""
    return [
        ("no logs", []),
        ("1 log, 10% updates", [(rows // 10, 0)]),
        ("3 logs, 3x3% updates + deletes", [(rows // 33, rows // 300)] * 3),
        ("1 log, 1% updates", [(rows // 100, 0)]),
    ]


def main() -> None:
    """Build the slices, time (or profile) the reads and print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=300_000, help="base file rows")
    parser.add_argument("--rounds", type=int, default=5, help="runs per read; best is kept")
    parser.add_argument("--profile", action="store_true", help="cProfile read_file_slice")
    args = parser.parse_args()
    print(f"one file slice of {args.rows} base rows (5 data columns + 5 meta columns)")
    print(f"{'slice':<34}{'rows':>8}{'core s':>8}{'source s':>10}{'pyarrow s':>11}"
          f"{'core x':>8}{'source x':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, instants) in enumerate(_shapes(args.rows)):
            bench = Slice(Path(tmp) / f"t{i}", args.rows)
            for j, (updates, deletes) in enumerate(instants):
                bench.add_instant(f"2025010200000{j:04d}", updates, deletes)
            table, file_slice = bench.open()
            rows = core(table, file_slice)
            if args.profile:
                print(f"--- {label}")
                profiler = cProfile.Profile()
                profiler.runcall(core, table, file_slice)
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
                continue
            times = best_of({
                "core": functools.partial(core, table, file_slice),
                "source": functools.partial(source, table, file_slice),
                "base": functools.partial(baseline, table, file_slice),
            }, args.rounds)
            print(f"{label:<34}{rows:>8}{times['core']:>8.3f}{times['source']:>10.3f}"
                  f"{times['base']:>11.3f}{times['core'] / times['base']:>8.2f}"
                  f"{times['source'] / times['base']:>10.2f}")


if __name__ == "__main__":
    main()
