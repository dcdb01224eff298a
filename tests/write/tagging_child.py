"""A driver process of its own for the tagging retry tests (run as ``python -m``).

``python -m tests.write.tagging_child <json>`` with ``{"master", "writes": [{"path",
"rows", "options"}]}``: upserts each write's rows (uuid, ts, rider, fare, city,
_hoodie_is_deleted) to its table through one Spark session, in order. Prints ``RESULT
<instant>`` per write.
"""

from __future__ import annotations

import json
import sys

import hudisql

SCHEMA = ("uuid string, ts long, rider string, fare double, city string, "
          "_hoodie_is_deleted boolean")


def main() -> None:
    """Run the writes the brief in ``sys.argv[1]`` lists."""
    brief = json.loads(sys.argv[1])
    session = hudisql.connect(conf={"spark.master": brief.get("master", "local[2]"),
                                    "spark.sql.shuffle.partitions": "4"})
    from hudisql.write.pipeline import SparkWriter

    for write in brief["writes"]:
        df = session.spark.createDataFrame([tuple(r) for r in write["rows"]], SCHEMA)
        result = SparkWriter(session.spark, write["path"], write["options"]).write(df, "upsert")
        print(f"RESULT {result.instant_time}", flush=True)
    session.stop()


if __name__ == "__main__":
    main()
