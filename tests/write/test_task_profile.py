"""The opt-in profile of write tasks (``HUDISQL_PROFILE_WRITE_TASKS``): off, a task's
batches pass through untouched and nothing is written; on, the same batches and one
cProfile file per task that ``pstats`` reads, naming the task's own functions."""

from __future__ import annotations

import pstats
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from hudisql.write.task_profile import PROFILE_DIR, profiled


def _double(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        yield pa.RecordBatch.from_arrays([pa.compute.multiply(batch.column(0), 2)], ["x"])


def _batches() -> Iterator[pa.RecordBatch]:
    for i in range(3):
        yield pa.RecordBatch.from_arrays([pa.array([i, i + 1])], ["x"])


def test_off_the_task_runs_as_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(PROFILE_DIR, raising=False)
    out = [b.column(0).to_pylist() for b in profiled(_double)(_batches())]
    assert out == [[0, 2], [2, 4], [4, 6]]
    assert not list(tmp_path.iterdir())


def test_on_the_task_leaves_a_profile_of_its_own_code(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    target = tmp_path / "profiles"
    monkeypatch.setenv(PROFILE_DIR, str(target))
    out = [b.column(0).to_pylist() for b in profiled(_double)(_batches())]
    assert out == [[0, 2], [2, 4], [4, 6]]
    files = list(target.glob("*.pstats"))
    assert len(files) == 1
    stats: dict = pstats.Stats(str(files[0])).stats  # type: ignore[attr-defined]
    assert any(func == "_double" for (_, _, func) in stats)
