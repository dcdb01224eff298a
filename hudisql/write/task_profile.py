"""Opt-in profiling of write tasks, for ``benchmarks/profile_upsert.py`` (issue #13).

When the environment variable :data:`PROFILE_DIR` names a directory on the executors (set
it before the session starts, or as ``spark.executorEnv.HUDISQL_PROFILE_WRITE_TASKS``),
every write task runs under :mod:`cProfile` and dumps its statistics to
``<dir>/<pid>-<task attempt>.pstats``. The profiler runs only while the task's own code
runs (from each pull of its iterator to the next batch it yields), so Arrow batches
decoded from the JVM count and Spark's time between batches does not. Unset (always, in
production), the task function is returned as is.
"""

from __future__ import annotations

import cProfile
import os
from collections.abc import Callable, Iterator

import pyarrow as pa

__all__ = ["PROFILE_DIR", "profiled"]

#: The environment variable naming the directory of the tasks' profiles.
PROFILE_DIR = "HUDISQL_PROFILE_WRITE_TASKS"

TaskFn = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def profiled(task: TaskFn) -> TaskFn:
    """``task`` profiled to :data:`PROFILE_DIR` when the variable is set on the executor;
    returns a function of the same shape."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        target = os.environ.get(PROFILE_DIR)
        if not target:
            yield from task(batches)
            return
        from pyspark import TaskContext

        ctx = TaskContext.get()
        attempt = ctx.taskAttemptId() if ctx is not None else 0
        profile = cProfile.Profile()
        results = task(batches)
        while True:
            profile.enable()
            try:
                item = next(results)
            except StopIteration:
                break
            finally:
                profile.disable()
            yield item
        os.makedirs(target, exist_ok=True)
        profile.dump_stats(os.path.join(target, f"{os.getpid()}-{attempt}.pstats"))

    return run
