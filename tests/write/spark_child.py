"""A driver process of its own for the write fault tests (run as ``python -m``).

``python -m tests.write.spark_child <json>`` with ``{"path", "master", "rows", "operation",
"options", "block_at"}``: writes ``rows`` (trips; a sixth field is ``_hoodie_is_deleted``)
to the table at ``path`` through its own Spark
session. With ``block_at`` set, the write prints ``BLOCKED <instant>`` at that protocol
step and waits for stdin to close (the parent kills it there). Prints ``RESULT <json>``.
"""

from __future__ import annotations

import json
import sys

import hudisql


def main() -> None:
    """Run one write as the brief in ``sys.argv[1]`` says."""
    brief = json.loads(sys.argv[1])
    session = hudisql.connect(conf={"spark.master": brief.get("master", "local[2]"),
                                    "spark.sql.shuffle.partitions": "4"})
    schema = "uuid string, ts long, rider string, fare double, city string"
    if any(len(r) == 6 for r in brief["rows"]):  # a sixth field: Hudi's delete marker
        schema += ", _hoodie_is_deleted boolean"
    df = session.spark.createDataFrame([tuple(r) for r in brief["rows"]], schema)
    from hudisql.write.pipeline import SparkWriter

    def on_step(event: str, instant: str) -> None:
        if event == brief.get("block_at"):
            print(f"BLOCKED {instant}", flush=True)
            sys.stdin.read()

    writer = SparkWriter(session.spark, brief["path"], brief.get("options", {}), on_step)
    result = writer.write(df, brief["operation"])
    print("RESULT " + json.dumps({"instant": result.instant_time,
                                  "files": sorted(s.path or "" for s in result.stats)}),
          flush=True)
    session.stop()


if __name__ == "__main__":
    main()
