"""Step-by-step profile of a point lookup through SQL by name (issue #13's lookup goal).

    .venv/bin/python benchmarks/profile_lookup.py [--rows 500000] [--file-groups 240]
        [--repeat 5] [--keep DIR]

Builds :func:`bench_skipping.build_table`'s table (or reuses the one in ``--keep``), then
times, best of ``--repeat``, each step ``SELECT * FROM t WHERE uuid = ...`` goes through:

- the statement's text rewritten (time travel, the hudi references found by sqlglot);
- the table opened and its columns read;
- the slices planned on the driver (listing, partition paths, the metadata table's indexes);
- the DataFrame of the kept slices built (a local relation when they are small,
  ``hudisql.read.local``), and registered as a view (the path before DataFrame parameters);
- Spark's analysis of the statement (``spark.sql`` returns an analyzed DataFrame);
- the job (``collect``);

and the whole statement through ``session.sql``, with skipping on and off.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_skipping import SKIPPING, build_table
from report import print_table

import hudisql
from hudisql.read.frame import read_frame
from hudisql.read.pruning import select_slices
from hudisql.sql.reads import scan_references
from hudisql.table.table import HudiTable

NAME = "bench_lookup"


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    """Build (or reuse) the table, time each step of the lookup and print them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--file-groups", type=int, default=240)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=None,
                        help="a directory to build the table in once and reuse")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="hudisql-profile-lookup-"))
    fresh = not (work / "t" / ".hoodie").exists()
    session = hudisql.connect(warehouse=work / "wh", conf={"spark.master": "local[2]"})
    try:
        if fresh:
            build_table(session, work / "t", NAME, args.rows, args.file_groups)
        rows = _steps(session, HudiTable.open(str(work / "t")), args.rows, args.repeat)
    finally:
        session.stop()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print_table(f"point lookup, {args.rows} rows, best of {args.repeat}",
                ("step", "s"), [(s, f"{t:.4f}") for s, t in rows])


def _steps(session: hudisql.HudiSession, table: HudiTable, rows: int, repeat: int
           ) -> list[tuple[str, float]]:
    key = f"key-{rows // 2 + 7:09d}"
    where = f"uuid = '{key}'"
    query = f"SELECT * FROM {NAME} WHERE {where}"
    spark = session.spark
    assert session.sql(query).collect()  # warm: the catalog, the workers, the JIT
    out: list[tuple[str, float]] = []
    t, _ = _best(lambda: scan_references(query, lambda n: {"uuid", "seq"}), repeat)
    out.append(("sqlglot: references and conjuncts", t))
    t, _ = _best(lambda: HudiTable.open(table.base_path).schema, repeat)
    out.append(("table opened, schema read", t))
    t, _ = _best(lambda: select_slices(HudiTable.open(table.base_path),
                                       HudiTable.open(table.base_path).file_slices(), where),
                 repeat)
    out.append(("slices planned (listing + indexes)", t))
    t, frame = _best(lambda: read_frame(spark, HudiTable.open(table.base_path), {}, where=where),
                     repeat)
    out.append(("read_frame (planning + DataFrame)", t))
    t, _ = _best(lambda: frame.createOrReplaceTempView("profile_view"), repeat)
    out.append(("temp view registered (the old per-reference view)", t))
    t, analyzed = _best(lambda: spark.sql("SELECT * FROM profile_view"), repeat)
    out.append(("spark.sql analysis of text naming that view", t))
    t, _ = _best(lambda: spark.sql("SELECT * FROM {t}", t=frame), repeat)
    out.append(("spark.sql analysis, DataFrame parameter (today)", t))
    t, _ = _best(analyzed.collect, repeat)
    out.append(("the job (collect of the analyzed frame)", t))
    t, _ = _best(lambda: frame.collect(), repeat)
    out.append(("the job (collect of the DataFrame)", t))
    spark.catalog.dropTempView("profile_view")
    t, _ = _best(lambda: session.sql(query).collect(), repeat)
    out.append(("whole statement, skipping on", t))
    spark.conf.set(SKIPPING, "false")
    try:
        t, _ = _best(lambda: session.sql(query).collect(), repeat)
    finally:
        spark.conf.unset(SKIPPING)
    out.append(("whole statement, skipping off", t))
    return out


if __name__ == "__main__":
    main()
