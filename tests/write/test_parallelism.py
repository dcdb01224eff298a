"""The Spark writer's parallelism comes from the session's configuration (Connect-safe)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from hudisql.sql.spark_tables import SparkTables
from hudisql.write.pipeline import SparkWriter

pytestmark = pytest.mark.spark


def test_parallelism_and_the_application_key_match_the_spark_context(
        spark: SparkSession, tmp_path: object) -> None:
    writer = SparkWriter(spark, str(tmp_path))
    # What the SparkContext says, read without it (local[2] in the tests: 2 threads).
    assert writer._parallelism() == spark.sparkContext.defaultParallelism == 2
    assert SparkTables.of(spark) is SparkTables.of(spark)
    assert spark.conf.get("spark.app.id") == spark.sparkContext.applicationId
