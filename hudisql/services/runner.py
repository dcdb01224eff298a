"""How a table service runs its per-slice tasks: in this process, or as one Spark job.

A task is a picklable callable taking the :class:`TaskAttempt` it runs in (its write
token and attempt number) and returning a picklable result (``hudisql.txn.tasks``, below
Spark). :class:`LocalRunner` calls them in order (tests, small tables, no Spark);
:class:`SparkRunner` runs them as one Spark job, a ``mapInPandas`` over one row per task,
each task its own input partition, so the heavy work (reading and writing slices) happens
on executors.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from hudisql.table.io.heap import keep_freed_memory
from hudisql.txn.tasks import LocalRunner, SliceRunner, Task, TaskAttempt

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

__all__ = ["LocalRunner", "SliceRunner", "SparkRunner", "Task", "TaskAttempt"]


class SparkRunner:
    """Runs tasks as one Spark job: one input partition and one task per table-service task."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def run(self, tasks: Sequence[Task], description: str = "") -> list[Any]:
        """The results of ``tasks``, run on executors (``mapInPandas``), in task order."""
        if not tasks:
            return []
        payload = [(i, pickle.dumps(task)) for i, task in enumerate(tasks)]
        frame = self.spark.createDataFrame(payload, "i int, task binary")
        frame = frame.repartitionByRange(len(tasks), "i")
        rows = frame.mapInPandas(_run_tasks, "i int, result binary").collect()
        results = {int(r["i"]): pickle.loads(r["result"]) for r in rows}
        return [results[i] for i in range(len(tasks))]


def _run_tasks(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    import pandas as pd
    from pyspark import TaskContext

    keep_freed_memory()
    ctx = TaskContext.get()
    assert ctx is not None
    attempt = TaskAttempt(ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId(),
                          ctx.attemptNumber())
    for batch in batches:
        out = [(int(i), pickle.dumps(pickle.loads(raw)(attempt)))
               for i, raw in zip(batch["i"], batch["task"], strict=True)]
        yield pd.DataFrame(out, columns=["i", "result"])
