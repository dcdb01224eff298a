"""Stage-by-stage profile of the Spark pipeline's upsert (issue #13 item 5).

    .venv/bin/python benchmarks/profile_upsert.py [--rows 5000000] [--updates 0.1]
        [--table-type MERGE_ON_READ] [--codec snappy] [--index-type BUCKET]
        [--buckets 4] [--option key=value ...]

Builds a table of ``--rows`` rows (bulk insert, partitioned by ``city``; with
``--index-type BUCKET`` created bucketed with ``--buckets`` buckets per partition, with
``RECORD_INDEX`` given a record index after the load, untimed; ``--column-stats`` gives it
a metadata table with column stats of those columns, ``--secondary-index`` a secondary
index on that column), upserts
``rows/5`` records (``--updates`` of them updates) once to warm the JVM and the Python
workers (on a copy), then upserts them to the table itself and prints:

- the driver's steps (the write's progress steps, with their wall time);
- every Spark stage the measured upsert ran: its wall time, the summed task time, the
  rows it read as input or from a shuffle and the rows it wrote to a shuffle (rows that
  cross between stages, and between the JVM and Python where the stage runs Python), from
  the Spark UI's REST API;
- the driver's time outside Spark jobs (the upsert's wall time minus the union of the
  jobs' wall times);
- the Python write tasks' time split by what they do (:mod:`hudisql.write.task_profile`:
  each task profiled with cProfile, summed over tasks): Arrow batches taken from the JVM,
  conforming and precombining, encoding data blocks, encoding base files, writing files,
  index changes and column statistics for the metadata table;
- the commit (the data instant and the metadata table's deltacommit).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hudisql
from hudisql.progress import ProgressUpdate
from hudisql.table.write.create import create_table
from hudisql.table.write.files import COMPRESSION_CODEC
from hudisql.write.pipeline import SparkWriter
from hudisql.write.task_profile import PROFILE_DIR

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_write_read import SCHEMA, _records


class _Steps:
    """A progress sink that records when each step of a write started."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []

    def __call__(self, update: ProgressUpdate) -> None:
        if not self.marks or self.marks[-1][0] != update.stage:
            self.marks.append((update.stage, time.perf_counter()))

    def show(self, end: float) -> None:
        """Print each step and its wall time."""
        for i, (stage, start) in enumerate(self.marks):
            stop = self.marks[i + 1][1] if i + 1 < len(self.marks) else end
            print(f"  driver step {stage!r:<28}{stop - start:>8.2f} s")


#: What the write tasks spend their time on: label -> functions (``file:name`` suffixes of
#: cProfile's keys) whose cumulative time counts for it. Labels are disjoint in practice.
_TASK_PARTS: dict[str, tuple[str, ...]] = {
    "Arrow batches from the JVM": ("serializers.py:load_stream", "serializers.py:_load_from_socket",
                                   "serializers.py:__iter__"),
    "conform + precombine": ("records.py:conform_records", "records.py:precombine"),
    "log block: stamp + conform": ("files.py:_stamp", "files.py:_conform"),
    "log data block encode (avro)": ("writer.py:encode_avro_data_block",),
    "log data block encode (parquet)": ("writer.py:encode_parquet_data_block",),
    "log delete block encode": ("writer.py:encode_delete_block",),
    "log file create": ("files.py:create_log_files",),
    "base file (stamp, encode, write)": ("files.py:write_base_file",),
    "copy-on-write merge": ("slices.py:copy_on_write_merge",),
    "index changes (row_changes)": ("row_changes.py:log_write_changes", "row_changes.py:of",
                                    "row_changes.py:replaced_rows"),
    "index changes to the driver (IPC)": ("row_changes.py:to_ipc",),
    "log column stats": ("column_stats.py:table_ranges",),
}


def _task_split(directory: Path, top: int) -> None:
    """Print the write tasks' profiled time by part (summed over every task), then the
    ``top`` functions by cumulative time."""
    files = sorted(directory.glob("*.pstats"))
    if not files:
        print("  (no write task profiles)")
        return
    stats = pstats.Stats(*[str(f) for f in files])
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_, _, tt, _, _) in raw.values())
    print(f"  Python write tasks ({len(files)} profiled): {total:.2f} task-s in their own code")
    for label, names in _TASK_PARTS.items():
        cum = 0.0
        for (path, _, func), (_, _, _, ct, _) in raw.items():
            if any(f"{os.path.basename(path)}:{func}" == n for n in names):
                cum += ct
        if cum:
            print(f"    {label:<36}{cum:>8.2f} task-s  {100 * cum / total:>5.1f}%")
    if top:
        stats.sort_stats("cumulative").print_stats(top)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url) as response:
        return json.loads(response.read())


def _ms(stamp: str) -> float:
    from datetime import datetime
    return datetime.strptime(stamp.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z"
                             ).timestamp()


def main() -> None:
    """Run the profile and print it."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--updates", type=float, default=0.1)
    parser.add_argument("--table-type", default="MERGE_ON_READ")
    parser.add_argument("--codec", default="snappy")
    parser.add_argument("--index-type", default="SIMPLE", help="hoodie.index.type of the upsert")
    parser.add_argument("--buckets", type=int, default=4, help="buckets per partition (BUCKET)")
    parser.add_argument("--top", type=int, default=0,
                        help="also print the write tasks' top functions by cumulative time")
    parser.add_argument("--record-index", action="store_true",
                        help="give the table a record index whatever the index type (its "
                        "upkeep in every commit; RECORD_INDEX implies it)")
    parser.add_argument("--column-stats", default="",
                        help="comma-separated columns: give the table a metadata table with "
                        "column stats of them (files + column stats upkeep in the commit)")
    parser.add_argument("--secondary-index", default="",
                        help="a column: give the table a secondary index on it (its upkeep "
                        "in every commit)")
    parser.add_argument("--driver-top", type=int, default=0,
                        help="also print the driver's top functions by cumulative time")
    parser.add_argument("--option", action="append", default=[], help="key=value write option")
    args = parser.parse_args()
    options = dict(o.split("=", 1) for o in args.option)
    index_type = args.index_type.upper()
    options.setdefault("hoodie.index.type", index_type)
    upsert_rows = args.rows // 5
    n_updates = int(upsert_rows * args.updates)
    work = Path(tempfile.mkdtemp(prefix="hudisql-profile-"))
    task_profiles = work / "task_profiles"
    session = hudisql.connect(warehouse=work / "wh", conf={
        "spark.master": "local[2]", "spark.ui.enabled": "true", "spark.ui.port": "0",
        f"spark.executorEnv.{PROFILE_DIR}": str(task_profiles), COMPRESSION_CODEC: args.codec})
    spark = session.spark
    ui = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}"
    try:
        path = str(work / "hudi")
        table_options = ({"hoodie.index.type": "BUCKET",
                          "hoodie.bucket.index.num.buckets": str(args.buckets)}
                         if index_type == "BUCKET" else {})
        create_table(path, "bench", SCHEMA, "uuid", "city", "ts", args.table_type,
                     options=table_options)
        handle = session.table_at(path)
        handle.bulk_insert(_records(spark, 0, args.rows, 1))
        if index_type == "RECORD_INDEX" or args.record_index:
            handle.indexes.create("record_index", ["uuid"])
        if args.column_stats:
            handle.indexes.create("column_stats", args.column_stats.split(","),
                                  using="column_stats")
        if args.secondary_index:
            handle.indexes.create(f"idx_{args.secondary_index}", [args.secondary_index])
        batch = _records(spark, args.rows - n_updates, upsert_rows, 2).cache()
        batch.count()
        shutil.copytree(path, work / "warm")
        session.table_at(str(work / "warm")).upsert(batch, **options)
        seen = {j["jobId"] for j in _get(f"{ui}/jobs")}
        steps = _Steps()
        # Every write task profiles itself (the same workers as the warm-up's): keep the
        # measured write's profiles only.
        shutil.rmtree(task_profiles, ignore_errors=True)
        driver = cProfile.Profile()
        start = time.perf_counter()
        wall_start = time.time()
        with driver:
            # The session's options (the codec) under the upsert's, as handle.upsert has.
            SparkWriter(spark, path, session.write_options(path, options),
                        progress=steps).write(batch, "upsert")
        end = time.perf_counter()
        wall_end = time.time()
        jobs = [j for j in _get(f"{ui}/jobs") if j["jobId"] not in seen]
        stage_ids = sorted({s for j in jobs for s in j["stageIds"]})
        stages = [s for s in _get(f"{ui}/stages") if s["stageId"] in stage_ids
                  and s["status"] == "COMPLETE"]
        split = work / "split"
        if task_profiles.exists():
            shutil.copytree(task_profiles, split)
    finally:
        session.stop()
    print(f"upsert of {upsert_rows} records ({n_updates} updates) into {args.rows} rows "
          f"{args.table_type}, local[2], options {options}: {end - start:.2f} s")
    steps.show(end)
    spans = []
    for job in sorted(jobs, key=lambda j: j["jobId"]):
        a, b = _ms(job["submissionTime"]), _ms(job["completionTime"])
        spans.append((a, b))
        print(f"  job {job['jobId']:>3} {b - a:>7.2f} s  {job['name'][:70]}")
    for s in sorted(stages, key=lambda s: s["stageId"]):
        wall = _ms(s["completionTime"]) - _ms(s["submissionTime"])
        print(f"    stage {s['stageId']:>3} {wall:>7.2f} s wall {s['executorRunTime'] / 1000:>7.2f}"
              f" s tasks ({s['numTasks']:>3}, JVM CPU {s['executorCpuTime'] / 1e9:.2f} s)"
              f"  in {s['inputRecords']:>9} shuffle-in "
              f"{s['shuffleReadRecords']:>9} shuffle-out {s['shuffleWriteRecords']:>9}  "
              f"{s['name'][:60]}")
    covered, last = 0.0, wall_start
    for a, b in sorted(spans):
        a, b = max(a, last), min(b, wall_end)
        if b > a:
            covered += b - a
            last = b
    print(f"  driver outside Spark jobs: {(wall_end - wall_start) - covered:.2f} s of "
          f"{wall_end - wall_start:.2f} s")
    _task_split(work / "split", args.top)
    if args.driver_top:
        print("  the driver (cProfile of the measured write; waits on Spark jobs included):")
        pstats.Stats(driver).sort_stats("cumulative").print_stats(args.driver_top)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
