"""Parser benchmark: parse-and-classify cost per statement against ``spark.sql`` itself.

Run: ``.venv/bin/python benchmarks/bench_parser.py`` (``--statements N``, ``--repeats R``).

The baseline is ``spark.sql(text)`` of the same trivial statements in the same process:
Spark parses and analyses each one and builds a DataFrame (nothing is collected). Against
it: ``parse_script`` over one script of those statements (pure pass-through: the cheap
token-level check), over the pass-through corpus repeated to the same count (realistic
mixed Spark SQL), and over a script of hudisql's own statements (full statement parse).
Goals: under 1 ms per statement and under 5% of Spark's time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hudisql.parser import parse_script

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "parser" / "passthrough_corpus.sql"
HUDI_STATEMENTS = [
    "SHOW TIMELINE ON db.trips LIMIT 10",
    "CALL show_commits(table => 'db.trips', limit => 5)",
    "CREATE TABLE t (id INT, name STRING, ts BIGINT, dt STRING) USING hudi PARTITIONED BY (dt) "
    "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor')",
    "INSERT INTO t SELECT id, name, ts, dt FROM staging WHERE dt = '2024-01-01'",
    "UPDATE t SET name = upper(name), ts = ts + 1 WHERE id IN (1, 2, 3)",
    "DELETE FROM t WHERE dt < '2023-01-01'",
    "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.op = 'D' THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
]


def best_of(repeats: int, run: Callable[[], object]) -> float:
    """The fastest of ``repeats`` runs of ``run``, in seconds (the least disturbed one)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def scripts(count: int) -> dict[str, tuple[list[str], str]]:
    """The scripts to parse: name -> (statements, script text)."""
    trivial = [f"SELECT {i} AS n" for i in range(count)]
    corpus = [s.text for s in parse_script(CORPUS.read_text(encoding="utf-8"))]
    mixed = (corpus * (count // len(corpus) + 1))[:count]
    ours = (HUDI_STATEMENTS * (count // len(HUDI_STATEMENTS) + 1))[:count]
    return {
        "trivial SELECTs (pass-through)": (trivial, ";\n".join(trivial)),
        "corpus mix (pass-through)": (mixed, ";\n".join(mixed)),
        "hudisql statements (full parse)": (ours, ";\n".join(ours)),
    }


def spark_baseline(statements: list[str], repeats: int) -> float:
    """Seconds for ``spark.sql`` of every statement (analysis only), best of ``repeats``."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-parser")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for text in statements[:200]:  # warm the JVM's code paths
        spark.sql(text)
    return best_of(repeats, lambda: [spark.sql(text) for text in statements])


def main() -> None:
    """Time every scenario and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cases = scripts(args.statements)
    baseline = spark_baseline(cases["trivial SELECTs (pass-through)"][0], args.repeats)
    rows = [("spark.sql, trivial SELECTs (baseline)", baseline)]
    for name, (_, text) in cases.items():
        parse_script(text)  # warm imports and caches
        seconds = best_of(args.repeats, lambda t=text: parse_script(t))  # type: ignore[misc]
        rows.append((f"parse_script, {name}", seconds))
    n = args.statements
    print(f"{n} statements per scenario, best of {args.repeats} runs\n")
    print(f"{'scenario':<50} {'total ms':>10} {'us/stmt':>10} {'vs spark':>10}")
    for name, seconds in rows:
        ratio = seconds / baseline
        print(f"{name:<50} {seconds * 1e3:>10.1f} {seconds / n * 1e6:>10.1f} {ratio:>9.1%}")
    ours = rows[1][1]
    print(
        f"\ngoal (same trivial statements): < 1000 us/stmt and < 5% of spark.sql -> "
        f"{ours / n * 1e6:.1f} us/stmt, {ours / baseline:.1%}"
    )


if __name__ == "__main__":
    main()
