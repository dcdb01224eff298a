"""An indexer process of its own, killed at a step (run as ``python -m``).

``python -m tests.services.index_child <json>`` with ``{"path", "partitions", "kill_at"}``:
schedules and runs the build of ``partitions`` (``run_indexer`` scheduleAndExecute) through
its own Spark session, and SIGKILLs itself when the indexer reaches step ``kill_at``.
"""

from __future__ import annotations

import json
import os
import signal
import sys

import hudisql
from hudisql.services.indexes import TableIndexes


def main() -> None:
    """Run the indexer as the brief in ``sys.argv[1]`` says; die at its step."""
    brief = json.loads(sys.argv[1])
    session = hudisql.connect(conf={"spark.master": "local[1]",
                                    "spark.sql.shuffle.partitions": "2"})
    indexes = TableIndexes(brief["path"], session.write_options(brief["path"]), session.spark)
    indexer = indexes.indexer()

    def on_step(event: str, instant: str) -> None:
        if event == brief["kill_at"]:
            os.kill(os.getpid(), signal.SIGKILL)

    indexer.on_step = on_step
    indexes.indexer = lambda: indexer  # type: ignore[method-assign]
    indexes.run_indexer("scheduleAndExecute", brief["partitions"])
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
