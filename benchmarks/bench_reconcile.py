"""Reconciliation benchmark: merged reads of file slices with many log blocks, on against off.

Run: ``.venv/bin/python benchmarks/bench_reconcile.py`` (``--quick`` for smaller sizes).

1. A merged read of one file slice (parquet base file + log files of many instants, each
   block stamped with ``BLOCK_IDENTIFIER``) with reconciliation ``off`` (the baseline:
   every visible block is merged), ``sequence`` (rule (b)) and ``full`` (rule (a): each
   instant's commit metadata is read for its record of committed log files). Every round
   loads a fresh timeline, so ``full`` pays for parsing the commit files. Slices without
   retries merge the same blocks in every mode: the difference is the cost of deciding
   (goal: <= 5%). That cost is also timed alone (verdicts for the scanned blocks with a
   fresh timeline) and shown as a share of the baseline read ("decide overhead"). Slices
   with retries (a partial attempt before each committed one) show what reconciliation
   saves: spurious blocks are never decoded.
2. The header-only scan plus verdicts against a full decode of every block of the slice.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa
from report import best_of, print_table

from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.fsview import FileSystemView, VisibleInstants
from hudisql.table.format.instant import Action
from hudisql.table.format.log.format import HeaderKey, LogBlockInfo, block_identifier
from hudisql.table.format.log.reader import decode_data_block, scan_blocks
from hudisql.table.format.log.writer import LogFileWriter, encode_avro_data_block
from hudisql.table.format.properties import new_table_properties
from hudisql.table.format.schema import META_COLUMNS, arrow_to_avro
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.merge import merge_file_slice
from hudisql.table.read.reconcile import BLOCK_ATTEMPT_STAT_KEY, judge_log_blocks
from hudisql.table.read.reconcile import record_committed_log_files as record
from hudisql.table.write.files import write_base_file

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("fare", pa.float64()),
                    ("rider", pa.string())])
FILE_ID = "0c9d2f7e-1a2b-4c3d-8e9f-a0b1c2d3e4f5-0"
BASE = "20250101000000000"
MODES = ("off", "sequence", "full")


def _rows(keys: list[str], instant: str, rng: random.Random) -> pa.Table:
    n = len(keys)
    columns = {
        "_hoodie_commit_time": [instant] * n,
        "_hoodie_commit_seqno": [f"{instant}_0_{i}" for i in range(n)],
        "_hoodie_record_key": keys,
        "_hoodie_partition_path": [""] * n,
        "_hoodie_file_name": [FILE_ID] * n,
        "id": keys,
        "ts": [rng.randrange(10**12) for _ in range(n)],
        "fare": [rng.uniform(5, 100) for _ in range(n)],
        "rider": [f"rider-{rng.randrange(1000)}" for _ in range(n)],
    }
    meta = [pa.field(c, pa.string()) for c in META_COLUMNS]
    return pa.table(columns, schema=pa.schema(meta + list(SCHEMA)))


class Slice:
    """A real v6 MOR table with one file group: a base file and log files of many instants."""

    def __init__(self, root: Path, base_rows: int, rng: random.Random) -> None:
        self.storage = Storage(str(root))
        self.avro = arrow_to_avro(SCHEMA, "bench", with_meta=True)
        self.avro_text = json.dumps(self.avro)
        self.props = new_table_properties("bench", "MERGE_ON_READ", ["id"], precombine_field="ts")
        self.props.save(self.storage)
        self.timeline = Timeline.load(self.storage, self.props)
        self.keys = [f"key-{i:08d}" for i in range(base_rows)]
        self.rng = rng
        self.task = 0
        self._blocks: list[LogBlockInfo] = []
        inflight = self._begin(BASE)
        stat = write_base_file(self.storage, "", FILE_ID, BASE, "0-0-0",
                               _rows(self.keys, BASE, rng), self.avro_text)
        meta = CommitMetadata(extra_metadata={"schema": self.avro_text})
        meta.add_write_stat(stat)
        self.timeline.complete(inflight, meta.to_json())

    def _begin(self, instant: str) -> Any:
        requested = self.timeline.create_requested(Action.DELTACOMMIT, instant)
        return self.timeline.transition_to_inflight(requested)

    def _attempt(self, instant: str, attempt: int, blocks: int, records: int) -> list[str]:
        self.task += 1
        writer = LogFileWriter(self.storage, "", FILE_ID, BASE, f"0-1-{self.task}", 1 << 20)
        for seq in range(blocks):
            keys = self.rng.sample(self.keys, records)
            header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: self.avro_text,
                      HeaderKey.BLOCK_IDENTIFIER: block_identifier(attempt, seq)}
            writer.append(encode_avro_data_block(_rows(keys, instant, self.rng), self.avro,
                                                 header))
        return [rel for rel, _ in writer.close()]

    def add_instant(self, instant: str, blocks: int, records: int, retried: bool) -> None:
        """One deltacommit; with ``retried`` a failed attempt wrote half its blocks first."""
        inflight = self._begin(instant)
        if retried:
            self._attempt(instant, 0, max(blocks // 2, 1), records)
        attempt = 1 if retried else 0
        files = self._attempt(instant, attempt, blocks, records)
        meta = CommitMetadata(extra_metadata={"schema": self.avro_text})
        meta.add_write_stat(WriteStat(
            file_id=FILE_ID, path=files[0], prev_commit=BASE, log_version=1, log_offset=0,
            log_files=[f.rsplit("/", 1)[-1] for f in files],
            extra={BLOCK_ATTEMPT_STAT_KEY: attempt},
        ))
        record(meta)
        self.timeline.complete(inflight, meta.to_json())

    def read(self, mode: str) -> tuple[int, int]:
        """One merged read with a freshly loaded timeline: (rows, blocks merged)."""
        timeline = Timeline.load(self.storage, self.props)
        view = FileSystemView(self.storage, self.props, timeline)
        (file_slice,) = view.latest_file_slices()
        table, report = merge_file_slice(self.storage, self.props, timeline, file_slice,
                                         visible=view.visible, reconcile=mode)
        return table.num_rows, len(report.merged)

    def decide(self, mode: str) -> int:
        """Only the decision: verdicts for the scanned blocks with a freshly loaded timeline."""
        timeline = Timeline.load(self.storage, self.props)
        return len(judge_log_blocks(self._blocks, VisibleInstants(timeline), mode))

    def scan(self) -> None:
        """Keep the slice's scanned blocks for :meth:`decide`."""
        timeline = Timeline.load(self.storage, self.props)
        (file_slice,) = FileSystemView(self.storage, self.props, timeline).latest_file_slices()
        self._blocks = []
        for log in file_slice.log_files:
            self._blocks += scan_blocks(self.storage.read_bytes(log.path), log.path)

    def headers_only(self) -> int:
        """Scan every log file and judge every block; nothing is decoded."""
        timeline = Timeline.load(self.storage, self.props)
        view = FileSystemView(self.storage, self.props, timeline)
        (file_slice,) = view.latest_file_slices()
        blocks = []
        for log in file_slice.log_files:
            blocks += scan_blocks(self.storage.read_bytes(log.path), log.path)
        return len(judge_log_blocks(blocks, view.visible, "full"))

    def full_decode(self) -> int:
        """Scan every log file and decode every block's records."""
        timeline = Timeline.load(self.storage, self.props)
        view = FileSystemView(self.storage, self.props, timeline)
        (file_slice,) = view.latest_file_slices()
        n = 0
        for log in file_slice.log_files:
            data = self.storage.read_bytes(log.path)
            n += sum(decode_data_block(data, b).num_rows for b in scan_blocks(data, log.path))
        return n


def _instant(i: int) -> str:
    return f"20250101{i + 1:09d}"




def _reader(table: Slice, mode: str) -> Callable[[], Any]:
    return lambda: table.read(mode)


def _decider(table: Slice, mode: str) -> Callable[[], Any]:
    return lambda: table.decide(mode)


def slice_rows(label: str, instants: int, blocks: int, records: int, retried: bool,
               base_rows: int, rounds: int) -> tuple[list[tuple[str, ...]], Slice, Any]:
    """Rows of table 1 for one slice shape; also returns the slice (for table 2)."""
    tmp = tempfile.TemporaryDirectory()
    table = Slice(Path(tmp.name) / "t", base_rows, random.Random(0))
    for i in range(instants):
        table.add_instant(_instant(i), blocks, records, retried)
    merged = {mode: table.read(mode)[1] for mode in MODES}
    times = best_of({mode: _reader(table, mode) for mode in MODES}, rounds)
    table.scan()
    decide = best_of({mode: _decider(table, mode) for mode in MODES}, rounds * 3)
    rows: list[tuple[str, ...]] = []
    for mode in MODES:
        # The decision's own cost over the baseline read: stable on a busy machine, where
        # whole-read ratios move by more than the decision costs.
        extra = (decide[mode] - decide["off"]) / times["off"]
        rows.append((label, mode, str(merged[mode]), f"{times[mode] * 1000:.1f}",
                     f"{times[mode] / times['off']:.3f}", f"{decide[mode] * 1000:.2f}",
                     f"{extra:+.2%}"))
    return rows, table, tmp




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer rounds")
    args = parser.parse_args()
    rounds = 3 if args.quick else 9
    scale = 10 if args.quick else 1
    shapes = [
        # label, instants, blocks per attempt, records per block, retried
        ("50 instants x 4 blocks x 500 rec", 50, 4, 500 // scale, False),
        ("200 instants x 1 block x 100 rec", 200 // scale, 1, 100, False),
        ("50 instants x 4 blocks, retried", 50, 4, 500 // scale, True),
    ]
    rows: list[tuple[str, ...]] = []
    kept = []
    for label, instants, blocks, records, retried in shapes:
        shape_rows, table, tmp = slice_rows(label, instants, blocks, records, retried,
                                            100_000 // scale, rounds)
        rows += shape_rows
        kept.append((label, table, tmp))
    print_table(
        f"Merged read of one file slice (base {100_000 // scale:,} rows), best of {rounds}",
        ("slice", "reconcile", "blocks merged", "read ms", "vs off", "decide ms",
         "decide overhead"), rows)
    scan_rows: list[tuple[str, ...]] = []
    for label, table, _ in kept:
        times = best_of({"headers": table.headers_only, "decode": table.full_decode}, rounds)
        scan_rows.append((label, f"{times['headers'] * 1000:.2f}",
                          f"{times['decode'] * 1000:.1f}",
                          f"{times['headers'] / times['decode']:.3f}"))
    print_table("Verdicts from a header-only scan vs decoding every block",
                 ("slice", "scan+verdicts ms", "scan+decode ms", "ratio"), scan_rows)
    for _, _, tmp in kept:
        tmp.cleanup()


if __name__ == "__main__":
    main()
