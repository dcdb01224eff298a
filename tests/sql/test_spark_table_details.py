"""What hudisql reads of Spark's session catalog, through SQL only (it runs on Spark
Connect too): a table's provider and location, for plain and back-quoted names."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudisql.errors import TableAlreadyExistsError
from hudisql.session import HudiSession
from hudisql.sql.spark_tables import spark_table_details

pytestmark = pytest.mark.spark


def test_provider_and_location_of_plain_hudi_and_missing_tables(
        session: HudiSession, tmp_path: Path) -> None:
    spark = session.spark
    spark.sql("CREATE DATABASE IF NOT EXISTS `odd_db`")
    spark.sql(f"CREATE TABLE `odd_db`.`pq_t` (a INT) USING parquet LOCATION '{tmp_path}/pq'")
    try:
        details = spark_table_details(spark, "`odd_db`.`pq_t`")
        assert details is not None
        assert details["Provider"] == "parquet"
        assert details["Location"].endswith("/pq")
        assert spark_table_details(spark, "`odd_db`.`missing`") is None
        session.sql("CREATE TABLE hudi_details (id INT) USING hudi "
                    "TBLPROPERTIES (primaryKey = 'id')")
        hudi = spark_table_details(spark, "default.hudi_details")
        assert hudi is not None and hudi["Provider"] == "hudi"
        assert hudi["Location"].rstrip("/").endswith("hudi_details")
        assert session.table("hudi_details").path.rstrip("/").endswith("hudi_details")
    finally:
        spark.sql("DROP TABLE IF EXISTS `odd_db`.`pq_t`")


def test_a_spark_table_of_another_provider_is_not_replaced(session: HudiSession,
                                                            tmp_path: Path) -> None:
    spark = session.spark
    spark.sql(f"CREATE TABLE clash (a INT) USING parquet LOCATION '{tmp_path}/clash'")
    try:
        with pytest.raises(TableAlreadyExistsError, match="not a hudi table"):
            session.sql("CREATE TABLE clash (id INT) USING hudi TBLPROPERTIES (primaryKey = 'id')")
        assert spark_table_details(spark, "clash")["Provider"] == "parquet"  # type: ignore[index]
        # The refused CREATE left no hudi table behind: neither files nor a catalog entry.
        assert "clash" not in [n.table for n in session.catalog.list_tables()]
        assert not (Path(session.warehouse) / "clash").exists()
    finally:
        spark.sql("DROP TABLE IF EXISTS clash")
