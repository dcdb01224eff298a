"""Small result DataFrames built on the driver: command results, SHOW output."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def rows_frame(
    spark: SparkSession, rows: Sequence[tuple[object, ...]], columns: Sequence[tuple[str, str]]
) -> DataFrame:
    """A DataFrame of ``rows`` with ``columns`` (name, Spark SQL type) in order."""
    schema = ", ".join(f"`{name}` {kind}" for name, kind in columns)
    return spark.createDataFrame(list(rows), schema)


def empty_frame(spark: SparkSession) -> DataFrame:
    """The result of a statement that returns nothing (DDL): no columns, no rows."""
    from pyspark.sql.types import StructType

    return spark.createDataFrame([], StructType([]))


def affected_frame(spark: SparkSession, count: int) -> DataFrame:
    """A DML statement's result: one row, ``num_affected_rows``.

    Built from Arrow data: a local relation, which Spark returns without a job (a list of
    Python rows is a job with a Python worker each time the result is collected)."""
    import pyarrow as pa

    return spark.createDataFrame(pa.table({"num_affected_rows": pa.array([count], pa.int64())}))
