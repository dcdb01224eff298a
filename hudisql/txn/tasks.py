"""The tasks of a table service and what runs them, below Spark.

A task is a picklable callable taking the :class:`TaskAttempt` it runs in (its write token
and attempt number) and returning a picklable result. :class:`LocalRunner` calls them in
order in this process (the metadata table's own services, tests, small tables);
``hudisql.services.runner.SparkRunner`` runs them as one Spark job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hudisql.table.format.filenames import write_token

__all__ = ["LocalRunner", "SliceRunner", "Task", "TaskAttempt"]


@dataclass(frozen=True)
class TaskAttempt:
    """Where a task runs: Spark's partition, stage and task attempt ids, attempt number."""

    partition_id: int
    stage_id: int
    attempt_id: int
    attempt_number: int = 0

    @property
    def write_token(self) -> str:
        """``<partitionId>-<stageId>-<taskAttemptId>``: the token in the files it writes."""
        return write_token(self.partition_id, self.stage_id, self.attempt_id)


Task = Callable[[TaskAttempt], Any]


class SliceRunner(Protocol):
    """Runs a table service's tasks and returns their results in task order."""

    def run(self, tasks: Sequence[Task], description: str = "") -> list[Any]:
        """Run every task once (retries are the runner's business); results in order."""
        ...


class LocalRunner:
    """Runs tasks one after the other in this process (no Spark)."""

    def run(self, tasks: Sequence[Task], description: str = "") -> list[Any]:
        """The results of ``tasks``, each run in a task attempt of its own."""
        return [task(TaskAttempt(i, 0, i)) for i, task in enumerate(tasks)]
