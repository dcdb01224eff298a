"""Helpers the Spark write tests share: trips frames, both readers' rows, a crash hook."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import hudi
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame

from hudisql.session import HudiSession, HudiTableHandle

COLUMNS = ["uuid", "ts", "rider", "fare", "city"]
Row = tuple[Any, ...]


def frame(session: HudiSession, rows: list[Row]) -> DataFrame:
    """A DataFrame of trips ``rows`` (uuid, ts, rider, fare, city)."""
    return session.spark.createDataFrame(
        rows, "uuid string, ts long, rider string, fare double, city string")


def spark_rows(handle: HudiTableHandle) -> list[Row]:
    """The table's rows read by the ``hudi`` Spark data source, sorted."""
    return sorted(tuple(r) for r in handle.read().select(*COLUMNS).collect())


def rs_rows(handle: HudiTableHandle) -> list[Row]:
    """The table's rows read by hudi-rs (the ``hudi`` PyPI reader), sorted."""
    table = pa.Table.from_batches(hudi.HudiTable(handle.path).read())
    if not table.num_rows:
        return []
    return sorted(tuple(r[c] for c in COLUMNS) for r in table.select(COLUMNS).to_pylist())


def check(handle: HudiTableHandle, expected: list[Row]) -> None:
    """Both readers see exactly ``expected``."""
    assert spark_rows(handle) == sorted(expected)
    assert rs_rows(handle) == sorted(expected)


class Crash(Exception):
    """An injected failure."""


@contextmanager
def crash_when_written(session: HudiSession) -> Iterator[None]:
    """Within the block, a write of ``session`` fails with :class:`Crash` once its files are
    written (before it commits); the block must raise it."""
    def crash(event: str, detail: str) -> None:
        if event == "written":
            raise Crash(detail)

    session.router.on_write_step = crash  # type: ignore[union-attr]
    try:
        with pytest.raises(Crash):
            yield
    finally:
        session.router.on_write_step = None  # type: ignore[union-attr]
