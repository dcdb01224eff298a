"""Small statements (issue #29 item 3): a 1-row INSERT, UPDATE, DELETE and point SELECT.

    .venv/bin/python benchmarks/bench_small.py [--rows 1000] [--runs 20] [--profile N]

Creates a merge-on-read hudi table (hudisql SQL, the defaults: ``CREATE TABLE ... USING
hudi PARTITIONED BY (city) TBLPROPERTIES (primaryKey, preCombineField, type='mor')``) and
a Spark parquet table of the same ``--rows`` rows (8 cities), then times ``--runs`` runs
of each statement (after one untimed warm-up each) and prints the median, with the Spark
jobs each run launched (counted from the Spark UI's REST API) and the load of the machine.
The baselines are Spark's own statements on the parquet table: a 1-row ``INSERT INTO``
for INSERT, UPDATE and DELETE (Spark cannot update or delete a parquet table; the goal is
that a hudi DML statement costs about what Spark's insert costs), and the same point
``SELECT`` (goal: every ratio <= 2).

``--profile N`` also prints, per statement, the driver's top ``N`` functions by
cumulative time (cProfile of one more run) and each Spark job's name and wall time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hudisql

COLUMNS = "id INT, name STRING, ts BIGINT, city STRING"


def _rows_query(start: int, count: int, ts: int) -> str:
    return (f"SELECT CAST(id AS INT) AS id, concat('name-', CAST(id AS STRING)) AS name, "
            f"CAST({ts} AS BIGINT) AS ts, concat('city-', CAST(id % 8 AS STRING)) AS city "
            f"FROM range({start}, {start + count})")


class _Jobs:
    """Spark jobs launched since the last call, from the Spark UI's REST API."""

    def __init__(self, spark: Any) -> None:
        context = spark.sparkContext  # the benchmark's own use; hudisql code never does this
        self.url = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}/jobs"
        self.seen = {j["jobId"] for j in self._get()}

    def _get(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(self.url) as response:
            return list(json.loads(response.read()))

    def new(self) -> list[dict[str, Any]]:
        """The jobs not seen before, oldest first."""
        jobs = [j for j in self._get() if j["jobId"] not in self.seen]
        self.seen |= {j["jobId"] for j in jobs}
        return sorted(jobs, key=lambda j: j["jobId"])


def _seconds(stamp: str) -> float:
    from datetime import datetime
    return datetime.strptime(stamp.replace("GMT", "+0000"),
                             "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def _statements(rows: int) -> dict[str, tuple[Callable[[int], str], Callable[[int], str]]]:
    """Per statement: (hudi text of run ``i``, Spark parquet baseline text of run ``i``)."""
    def insert(table: str) -> Callable[[int], str]:
        return lambda i: (f"INSERT INTO {table} VALUES ({rows + 1000 + i}, 'new', 1, "
                          f"'city-{i % 8}')")

    point = rows // 2
    return {
        "INSERT 1 row": (insert("small_hudi"), insert("small_parquet")),
        "UPDATE 1 row": (lambda i: f"UPDATE small_hudi SET ts = ts + 1 WHERE id = {i}",
                         insert("small_parquet")),
        "DELETE 1 row": (lambda i: f"DELETE FROM small_hudi WHERE id = {rows - 1 - i}",
                         insert("small_parquet")),
        "point SELECT": (lambda i: f"SELECT * FROM small_hudi WHERE id = {point}",
                         lambda i: f"SELECT * FROM small_parquet WHERE id = {point}"),
    }


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--profile", type=int, default=0,
                        help="print the driver's top N functions and the jobs per statement")
    parser.add_argument("--only", default="", help="comma-separated statement name prefixes")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hudisql-small-"))
    session = hudisql.connect(warehouse=work / "wh", conf={
        "spark.master": "local[2]", "spark.ui.enabled": "true", "spark.ui.port": "0"})
    spark = session.spark
    results: list[tuple[str, float, float, float, float]] = []
    try:
        session.sql(f"CREATE TABLE small_hudi ({COLUMNS}) USING hudi PARTITIONED BY (city) "
                    "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor')")
        spark.sql(f"CREATE TABLE small_parquet ({COLUMNS}) USING parquet PARTITIONED BY (city) "
                  f"LOCATION '{work / 'parquet'}'")
        start = time.perf_counter()
        session.sql(f"INSERT INTO small_hudi {_rows_query(0, args.rows, 0)}").collect()
        load = time.perf_counter() - start
        spark.sql(f"INSERT INTO small_parquet {_rows_query(0, args.rows, 0)}").collect()
        jobs = _Jobs(spark)
        print(f"tables of {args.rows} rows (hudi load {load:.2f} s); {args.runs} runs each; "
              f"local[2]; load before: {os.getloadavg()[0]:.2f}", flush=True)
        wanted = [p.strip() for p in args.only.split(",") if p.strip()]
        for name, (hudi_text, spark_text) in _statements(args.rows).items():
            if wanted and not any(name.startswith(p) for p in wanted):
                continue
            figures = []
            for run_sql, text in ((session.sql, hudi_text), (spark.sql, spark_text)):
                run_sql(text(args.runs + 1)).collect()  # warm-up
                jobs.new()
                times, counts = [], []
                for i in range(args.runs):
                    start = time.perf_counter()
                    run_sql(text(i)).collect()
                    times.append(time.perf_counter() - start)
                    counts.append(len(jobs.new()))
                figures += [statistics.median(times), statistics.median(counts)]
            results.append((name, *figures))  # type: ignore[arg-type]
            print(f"  {name}: hudisql {figures[0]:.3f} s ({figures[1]:g} jobs), spark "
                  f"{figures[2]:.3f} s ({figures[3]:g} jobs)", flush=True)
            if args.profile:
                _profile(session.sql, hudi_text(args.runs + 2), jobs, args.profile)
        load_after = os.getloadavg()[0]
    finally:
        session.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'statement':<16}{'hudisql s':>10}{'jobs':>6}{'spark s':>9}{'jobs':>6}"
          f"{'ratio':>7}  goal   (load after {load_after:.2f})")
    for name, hudi_s, hudi_jobs, spark_s, spark_jobs in results:
        print(f"{name:<16}{hudi_s:>10.3f}{hudi_jobs:>6g}{spark_s:>9.3f}{spark_jobs:>6g}"
              f"{hudi_s / spark_s:>7.2f}  <= 2")


def _profile(run_sql: Callable[[str], Any], text: str, jobs: _Jobs, top: int) -> None:
    """Print one run's driver profile (top functions) and the Spark jobs it launched."""
    profile = cProfile.Profile()
    start = time.time()
    with profile:
        run_sql(text).collect()
    end = time.time()
    print(f"    profile of {text!r}: {end - start:.3f} s")
    covered = 0.0
    for job in jobs.new():
        a, b = _seconds(job["submissionTime"]), _seconds(job["completionTime"])
        covered += b - a
        print(f"      job {job['jobId']:>4} {b - a:>6.3f} s  {job['name'][:90]}")
    print(f"      driver outside jobs ~{end - start - covered:.3f} s")
    pstats.Stats(profile).sort_stats("cumulative").print_stats("hudisql/", top)


if __name__ == "__main__":
    main()
