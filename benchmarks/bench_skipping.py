"""Data skipping benchmark: queries with the metadata table's indexes against the same
queries with skipping off, and SQL's full scan against t.read() and plain parquet.

    .venv/bin/python benchmarks/bench_skipping.py [--rows 1000000] [--file-groups 240]
        [--repeat 3]

Builds a non-partitioned merge-on-read table of ``--rows`` rows in about ``--file-groups``
file groups (rows numbered by ``seq``, so each file group holds one range of ``seq``:
clustered by file), with a record index on ``uuid`` and column stats on ``seq``; then times,
best of ``--repeat``, each through SQL by name in a hudisql session:

* a point lookup ``WHERE uuid = ...``: skipping on (the record index reads one file group)
  against ``hoodie.enable.data.skipping=false`` (every file group of the table); goal <= 0.1;
* a range query on ``seq`` covering 8 file groups: column stats against skipping off
  (report);
* a full scan (count + sums over every column) through SQL and through ``t.read()`` against
  Spark reading the same rows as plain parquet in as many files (report).

The functions are importable (``bench_write_read.py`` calls :func:`skipping_figures`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa
from report import best_of, print_table

import hudisql
from hudisql.read.pruning import select_slices
from hudisql.session import HudiSession
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient

SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("seq", pa.int64()),
                    ("rider", pa.string()), ("fare", pa.float64()), ("city", pa.string())])
#: File groups the range query covers.
RANGE_GROUPS = 8
#: The data-skipping switch (``hoodie.enable.data.skipping``).
SKIPPING = "hoodie.enable.data.skipping"


def build_table(session: HudiSession, path: Path, name: str, rows: int, file_groups: int
                ) -> HudiTable:
    """A non-partitioned MOR table of ``rows`` rows in about ``file_groups`` file groups
    (so that a record key names one file group), registered as ``name`` with a record index
    on ``uuid`` and column stats on ``seq``; returns it."""
    per_file = max(1, rows // file_groups)
    table = create_table(path, name, SCHEMA, "uuid", (), "ts", "MERGE_ON_READ")
    seq = pa.array(range(rows), pa.int64())
    city = pa.array([f"city-{i % 8}" for i in range(rows)])
    records = pa.table({
        "uuid": pa.array([f"key-{i:09d}" for i in range(rows)]),
        "ts": pa.array([1] * rows, pa.int64()), "seq": seq,
        "rider": pa.array([f"rider-{i % 1000}" for i in range(rows)]),
        "fare": pa.array([(i % 997) / 10 for i in range(rows)], pa.float64()), "city": city})
    WriteClient(table, max_records_per_file=per_file).insert(records)
    session.sql(f"CREATE TABLE {name} USING hudi LOCATION '{path}'")
    session.sql(f"CREATE INDEX record_index ON {name} (uuid)")
    session.sql(f"CREATE INDEX stats ON {name} USING column_stats (seq)")
    return HudiTable.open(str(path))


def _with_skipping(session: HudiSession, on: bool, query: str) -> list[Any]:
    session.spark.conf.set(SKIPPING, "true" if on else "false")
    try:
        return session.sql(query).collect()
    finally:
        session.spark.conf.unset(SKIPPING)


def skipping_figures(session: HudiSession, name: str, table: HudiTable, repeat: int
                     ) -> list[tuple[str, float, float, str]]:
    """(scenario, hudisql s, baseline s, goal) for the point lookup and the range query on
    table ``name`` (built by :func:`build_table`), best of ``repeat`` each."""
    rows = session.sql(f"SELECT count(*) AS n FROM {name}").collect()[0].n
    key = f"key-{rows // 2 + 7:09d}"
    lookup = f"SELECT * FROM {name} WHERE uuid = '{key}'"
    per_group = max(1, rows // len(table.file_slices()))
    low = rows // 3
    span = f"seq >= {low} AND seq < {low + per_group * RANGE_GROUPS}"
    ranged = f"SELECT count(*) AS n, sum(seq) AS s, max(uuid) AS u FROM {name} WHERE {span}"
    for query in (lookup, ranged):
        on, off = _with_skipping(session, True, query), _with_skipping(session, False, query)
        assert on == off and on, f"{query}: {on} with skipping, {off} without"
    best = best_of({
        "lookup_on": lambda: _with_skipping(session, True, lookup),
        "lookup_off": lambda: _with_skipping(session, False, lookup),
        "range_on": lambda: _with_skipping(session, True, ranged),
        "range_off": lambda: _with_skipping(session, False, ranged),
        # The driver's share of the lookup: list the slices, prune them with the indexes.
        "plan_lookup": lambda: select_slices(
            HudiTable.open(table.base_path), table.file_slices(), f"uuid = '{key}'"),
    }, repeat)
    slices = table.file_slices()
    kept_lookup = len(select_slices(table, slices, f"uuid = '{key}'").kept)
    kept_range = len(select_slices(table, slices, span).kept)
    return [
        (f"point lookup, record index ({kept_lookup}/{len(slices)} slices) vs skipping off",
         best["lookup_on"], best["lookup_off"], "<= 0.1"),
        (f"range on seq, column stats ({kept_range}/{len(slices)} slices) vs skipping off",
         best["range_on"], best["range_off"], "(reported)"),
        ("lookup planning on the driver (slices + indexes) vs the lookup",
         best["plan_lookup"], best["lookup_on"], "(reported)"),
    ]


def full_scan_figures(session: HudiSession, name: str, table: HudiTable, work: Path,
                      repeat: int) -> list[tuple[str, float, float, str]]:
    """(scenario, s, plain parquet s, goal): a full scan through SQL and through t.read()
    against Spark reading the same rows as plain parquet."""
    plain = str(work / "plain")
    handle = session.table(name)
    # As many files as the table has file groups: the ratio compares formats, not layouts.
    handle.read(columns=SCHEMA.names).repartition(len(table.file_slices())).write.mode(
        "overwrite").parquet(plain)
    columns = "count(*), sum(ts), sum(seq), sum(fare), max(uuid), max(rider), max(city)"
    best = best_of({
        "sql": lambda: session.sql(f"SELECT {columns} FROM {name}").collect(),
        "read": lambda: handle.read().selectExpr(*columns.split(", ")).collect(),
        "parquet": lambda: session.spark.read.parquet(plain).selectExpr(
            *columns.split(", ")).collect(),
    }, repeat)
    return [("full scan through SQL vs plain parquet", best["sql"], best["parquet"], "(report)"),
            ("full scan through t.read() vs plain parquet", best["read"], best["parquet"],
             "(report)")]


def main() -> None:
    """Build the table, run every scenario and print the ratio table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--file-groups", type=int, default=240)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hudisql-bench-skipping-"))
    session = hudisql.connect(warehouse=work / "wh", conf={"spark.master": "local[2]"})
    try:
        table = build_table(session, work / "t", "bench_skip", args.rows, args.file_groups)
        figures = skipping_figures(session, "bench_skip", table, args.repeat)
        figures += full_scan_figures(session, "bench_skip", table, work, args.repeat)
        groups = len(table.file_slices())
    finally:
        session.stop()
        shutil.rmtree(work, ignore_errors=True)
    print_table(f"data skipping: {args.rows} rows MOR, {groups} file groups, local[2], best of "
                f"{args.repeat}",
                ("scenario", "hudisql s", "baseline s", "ratio", "goal"),
                [(s, f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}", g) for s, a, b, g in figures])


if __name__ == "__main__":
    main()
