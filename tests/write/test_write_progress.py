"""A Spark write reports its steps and the file slices it wrote, and a failed one ends failed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hudisql.errors import HudiSqlError, WriteError
from hudisql.progress import ProgressUpdate
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.write.pipeline import SparkWriter

pytestmark = pytest.mark.spark

ROWS = [(f"u{i}", 1, f"rider-{i}", float(i), city)
        for i, city in enumerate(["sf", "la", "ny"] * 4)]
COLUMNS = "uuid string, ts long, rider string, fare double, city string"


def test_a_write_reports_each_step_and_its_slices(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("MERGE_ON_READ")
    updates: list[ProgressUpdate] = []
    writer = SparkWriter(hudi_session.spark, handle.path, progress=updates.append)
    result = writer.write(hudi_session.spark.createDataFrame(ROWS, COLUMNS), "upsert")
    ended = [(u.step, u.stage) for u in updates if u.step_ended]
    assert ended == [(1, "staging records"), (2, "writing file slices"), (3, "committing")]
    groups = {(s.partition_path, s.file_id) for s in result.stats}
    written = next(u for u in updates if u.step_ended and u.stage == "writing file slices")
    assert written.done == written.total == len(groups) == 3
    assert all(u.job == "upsert trips" and u.steps == 3 for u in updates)
    assert updates[-1].finished and not updates[-1].failed
    assert updates[-1].elapsed >= written.elapsed


def test_a_refused_write_ends_as_failed(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("COPY_ON_WRITE")
    df = hudi_session.spark.createDataFrame(ROWS[:2], COLUMNS)
    SparkWriter(hudi_session.spark, handle.path, progress=lambda u: None).write(df, "insert")
    updates: list[ProgressUpdate] = []
    writer = SparkWriter(hudi_session.spark, handle.path, progress=updates.append)
    with pytest.raises(WriteError, match="already in the table"):
        writer.write(df, "insert")
    assert updates[-1].finished and updates[-1].failed
    assert [u.finished for u in updates].count(True) == 1


def test_an_unknown_progress_mode_is_refused_before_anything_is_written(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("COPY_ON_WRITE")
    writer = SparkWriter(hudi_session.spark, handle.path, {"hudisql.progress.display": "loud"})
    with pytest.raises(HudiSqlError, match="'loud' is not a progress mode"):
        writer.write(hudi_session.spark.createDataFrame(ROWS, COLUMNS), "insert")
    assert handle.core().timeline.instants == []
