"""Write tasks get file groups by estimated work: Spark's hash is predicted exactly."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from hudisql.write.task_balance import (
    balanced_tasks,
    spark_partition_of,
    task_column,
    task_keys,
)


@pytest.mark.spark
def test_spark_puts_each_key_where_the_prediction_says(spark: SparkSession) -> None:
    keys = spark.range(300).selectExpr("CAST(id AS INT) AS k")
    for tasks in (2, 3, 4, 7):
        rows = keys.repartition(tasks, "k").select(
            "k", F.spark_partition_id().alias("p")).collect()
        assert {r["k"]: r["p"] for r in rows} == {
            k: spark_partition_of(k, tasks) for k in range(300)}
    # Each file id lands in its assigned task through the map of task keys.
    placement = {"a": 0, "b": 1, "c": 2, "d": 0}
    groups = spark.createDataFrame([(f,) for f in "abcdabcd"], "fid string")
    rows = groups.repartition(3, task_column(placement, 3, F.col("fid"))).select(
        "fid", F.spark_partition_id().alias("p")).collect()
    assert {(r["fid"], r["p"]) for r in rows} == set(placement.items())


def test_heaviest_first_each_to_the_least_loaded_task() -> None:
    work = {"a": 10.0, "b": 9.0, "c": 1.0, "d": 1.0, "e": 1.0}
    placed = balanced_tasks(work, 2)
    assert placed == {"a": 0, "b": 1, "c": 1, "d": 0, "e": 1}
    loads = [sum(w for f, w in work.items() if placed[f] == t) for t in range(2)]
    assert loads == [11.0, 11.0]
    assert sorted(task_keys(5)) == sorted(set(task_keys(5)))
    assert [spark_partition_of(k, 5) for k in task_keys(5)] == list(range(5))
