"""Apache Hudi 1.x's Spark quickstart (website/docs/quick-start-guide.md, Python and Spark
SQL tabs), step by step in a hudisql session: only the session set-up differs (a
``hudisql.connect`` session instead of pyspark/spark-sql started with Hudi's bundle; the
SQL tab's statements go to ``session.sql`` as they would to the ``hudisql`` shell). Each
step asserts the rows the quickstart's data gives; written tables also read row for row
the same through the ``hudi`` (hudi-rs) reader.

The read-side steps (time travel, incremental and CDC queries, ``hudi_table_changes``) are
in :func:`test_quickstart_read_side_steps`, which needs issue 15's read side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
from pyspark.sql.functions import col

from hudisql.session import HudiSession
from hudisql.table import HudiTable

pytestmark = pytest.mark.spark

COLUMNS = ["ts", "uuid", "rider", "driver", "fare", "city"]
# The Python tab's inserts, as published.
DATA = [(1695159649087, "334e26e9-8355-45cc-97c6-c31daf0df330", "rider-A", "driver-K", 19.10,
         "san_francisco"),
        (1695091554788, "e96c4396-3fad-413a-a942-4cb36106d721", "rider-C", "driver-M", 27.70,
         "san_francisco"),
        (1695046462179, "9909a8b1-2d15-4d3d-8ec9-efc48c536a00", "rider-D", "driver-L", 33.90,
         "san_francisco"),
        (1695516137016, "e3cf430c-889d-4015-bc98-59bdce1e530c", "rider-F", "driver-P", 34.15,
         "sao_paulo"),
        (1695115999911, "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa", "rider-J", "driver-T", 17.85,
         "chennai")]


def fares(rows: Any) -> dict[str, float]:
    """rider -> fare of Rows (or dicts), fares rounded to cents."""
    out = {}
    for r in rows:
        d = r if isinstance(r, dict) else r.asDict()
        out[d["rider"]] = round(d["fare"], 2)
    return out


def rs_fares(path: str) -> dict[str, float]:
    """rider -> fare as the hudi-rs reader reads the table."""
    table = pa.Table.from_batches(hudi.HudiTable(path).read())
    return fares(table.select(["rider", "fare"]).to_pylist())


def test_quickstart_python_tab(session: HudiSession, tmp_path: Path) -> None:
    spark = session.spark  # the set-up: hudisql.connect() instead of pyspark --packages ...
    tableName = "trips_table"  # the quickstart's names, as published
    basePath = f"file://{tmp_path}/trips_table"

    # Insert data: keyless, mode overwrite on a path with no table yet.
    inserts = spark.createDataFrame(DATA).toDF(*COLUMNS)
    hudi_options = {
        "hoodie.table.name": tableName,
        "hoodie.datasource.write.partitionpath.field": "city",
    }
    inserts.write.format("hudi"). \
        options(**hudi_options). \
        mode("overwrite"). \
        save(basePath)
    path = str(tmp_path / "trips_table")
    assert "hoodie.table.recordkey.fields" not in HudiTable.open(path).properties

    # Query data.
    tripsDF = spark.read.format("hudi").load(basePath)
    tripsDF.createOrReplaceTempView("trips_table")
    over_20 = spark.sql("SELECT uuid, fare, ts, rider, driver, city FROM  trips_table "
                        "WHERE fare > 20.0").collect()
    assert fares(over_20) == {"rider-C": 27.7, "rider-D": 33.9, "rider-F": 34.15}
    meta = spark.sql("SELECT _hoodie_commit_time, _hoodie_record_key, _hoodie_partition_path, "
                     "rider, driver, fare FROM trips_table").collect()
    assert len(meta) == 5 and len({r["_hoodie_record_key"] for r in meta}) == 5
    assert {r["_hoodie_partition_path"] for r in meta} == {
        "san_francisco", "sao_paulo", "chennai"}
    keys = {r["rider"]: r["_hoodie_record_key"] for r in meta}

    # Update data: rows read from the table (meta columns and all), fare times ten.
    updatesDf = spark.read.format("hudi").load(basePath).filter("rider == 'rider-D'") \
        .withColumn("fare", col("fare") * 10)
    updatesDf.write.format("hudi"). \
        options(**hudi_options). \
        mode("append"). \
        save(basePath)
    after = spark.read.format("hudi").load(basePath).collect()
    assert fares(after) == {"rider-A": 19.1, "rider-C": 27.7, "rider-D": 339.0,
                            "rider-F": 34.15, "rider-J": 17.85}
    assert {r["rider"]: r["_hoodie_record_key"] for r in after} == keys

    # Delete data.
    deletesDF = spark.read.format("hudi").load(basePath).filter("rider == 'rider-F'")
    hudi_hard_delete_options = {
        "hoodie.table.name": tableName,
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.operation": "delete",
    }
    deletesDF.write.format("hudi"). \
        options(**hudi_hard_delete_options). \
        mode("append"). \
        save(basePath)
    expected = {"rider-A": 19.1, "rider-C": 27.7, "rider-D": 339.0, "rider-J": 17.85}
    assert fares(spark.read.format("hudi").load(basePath).collect()) == expected
    assert rs_fares(path) == expected


SQL_INSERT = """
INSERT INTO hudi_table
VALUES
(1695159649087,'334e26e9-8355-45cc-97c6-c31daf0df330','rider-A','driver-K',19.10,'san_francisco'),
(1695091554788,'e96c4396-3fad-413a-a942-4cb36106d721','rider-C','driver-M',27.70 ,'san_francisco'),
(1695046462179,'9909a8b1-2d15-4d3d-8ec9-efc48c536a00','rider-D','driver-L',33.90 ,'san_francisco'),
(1695332066204,'1dced545-862b-4ceb-8b43-d2a568f6616b','rider-E','driver-O',93.50,'san_francisco'),
(1695516137016,'e3cf430c-889d-4015-bc98-59bdce1e530c','rider-F','driver-P',34.15,'sao_paulo'    ),
(1695376420876,'7a84095f-737f-40bc-b62f-6b69664712d2','rider-G','driver-Q',43.40 ,'sao_paulo'    ),
(1695173887231,'3eeb61f7-c2b0-4636-99bd-5d7a5a1d2c04','rider-I','driver-S',41.06 ,'chennai'      ),
(1695115999911,'c8abbe79-8d89-47ea-b4ce-4d224bae5bfa','rider-J','driver-T',17.85,'chennai');
"""

SQL_MERGE_SOURCE = """
CREATE TABLE fare_adjustment (ts BIGINT, uuid STRING, rider STRING, driver STRING, fare DOUBLE, city STRING)
USING HUDI;
INSERT INTO fare_adjustment VALUES
(1695091554788,'e96c4396-3fad-413a-a942-4cb36106d721','rider-C','driver-M',-2.70 ,'san_francisco'),
(1695530237068,'3f3d9565-7261-40e6-9b39-b8aa784f95e2','rider-K','driver-U',64.20 ,'san_francisco'),
(1695241330902,'ea4c36ff-2069-4148-9927-ef8c1a5abd24','rider-H','driver-R',66.60 ,'sao_paulo'    ),
(1695115999911,'c8abbe79-8d89-47ea-b4ce-4d224bae5bfa','rider-J','driver-T',1.85,'chennai'      );
"""  # noqa: E501

SQL_MERGE = """
MERGE INTO hudi_table AS target
USING fare_adjustment AS source
ON target.uuid = source.uuid
WHEN MATCHED THEN UPDATE SET target.fare = target.fare + source.fare
WHEN NOT MATCHED THEN INSERT *
;
"""


def test_quickstart_spark_sql_tab(session: HudiSession) -> None:
    sql = session.sql  # the set-up: the hudisql shell instead of spark-sql --packages ...
    sql("""
-- create a Hudi table that is partitioned.
CREATE TABLE hudi_table (
    ts BIGINT,
    uuid STRING,
    rider STRING,
    driver STRING,
    fare DOUBLE,
    city STRING
) USING HUDI
PARTITIONED BY (city);
""")
    sql(SQL_INSERT)
    over_20 = sql(" SELECT ts, fare, rider, driver, city FROM  hudi_table WHERE fare > 20.0;")
    assert fares(over_20.collect()) == {"rider-C": 27.7, "rider-D": 33.9, "rider-E": 93.5,
                                        "rider-F": 34.15, "rider-G": 43.4, "rider-I": 41.06}

    sql("UPDATE hudi_table SET fare = 25.0 WHERE rider = 'rider-D';")
    assert fares(sql("SELECT rider, fare FROM hudi_table WHERE rider = 'rider-D'").collect()
                 ) == {"rider-D": 25.0}

    session.sql_script(SQL_MERGE_SOURCE)
    sql(SQL_MERGE)
    merged = {"rider-A": 19.1, "rider-C": 25.0, "rider-D": 25.0, "rider-E": 93.5,
              "rider-F": 34.15, "rider-G": 43.4, "rider-I": 41.06, "rider-J": 19.7,
              "rider-K": 64.2, "rider-H": 66.6}
    assert fares(sql("SELECT rider, fare FROM hudi_table").collect()) == merged

    sql("DELETE FROM hudi_table WHERE uuid = '3f3d9565-7261-40e6-9b39-b8aa784f95e2';")
    del merged["rider-K"]
    assert fares(sql("SELECT rider, fare FROM hudi_table").collect()) == merged
    assert rs_fares(session.table("hudi_table").path) == merged


def test_quickstart_read_side_steps(session: HudiSession, tmp_path: Path) -> None:
    spark = session.spark
    basePath = f"file://{tmp_path}/trips_table"
    hudi_options = {"hoodie.table.name": "trips_table",
                    "hoodie.datasource.write.partitionpath.field": "city"}
    spark.createDataFrame(DATA).toDF(*COLUMNS).write.format("hudi").options(**hudi_options) \
        .mode("overwrite").save(basePath)
    spark.read.format("hudi").load(basePath).filter("rider == 'rider-D'") \
        .withColumn("fare", col("fare") * 10).write.format("hudi").options(**hudi_options) \
        .mode("append").save(basePath)
    first = HudiTable.open(str(tmp_path / "trips_table")).timeline.completed()[0].timestamp

    # Time travel (Python tab): an instant, then the same as a timestamp string.
    old = spark.read.format("hudi").option("as.of.instant", first).load(basePath)
    assert fares(old.collect()) == fares({"rider": r[2], "fare": r[4]} for r in DATA)
    stamp = (f"{first[:4]}-{first[4:6]}-{first[6:8]} {first[8:10]}:{first[10:12]}:"
             f"{first[12:14]}.{first[14:]}")
    old = spark.read.format("hudi").option("as.of.instant", stamp).load(basePath)
    assert len(old.collect()) == len(DATA)

    # Incremental query (Python tab).
    spark.read.format("hudi").load(basePath).createOrReplaceTempView("trips_table")
    commits = list(map(lambda row: row[0], spark.sql(
        "SELECT DISTINCT(_hoodie_commit_time) AS commitTime FROM  trips_table "
        "ORDER BY commitTime").limit(50).collect()))
    beginTime = commits[len(commits) - 2]
    incremental_read_options = {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": beginTime,
    }
    tripsIncrementalDF = spark.read.format("hudi"). \
        options(**incremental_read_options). \
        load(basePath)
    tripsIncrementalDF.createOrReplaceTempView("trips_incremental")
    changed = spark.sql("SELECT `_hoodie_commit_time`, fare, rider, driver, uuid, ts FROM "
                        "trips_incremental WHERE fare > 20.0").collect()
    # Version 9 (as Hudi 1.x makes): the range is by completion time, and the commit
    # beginTime names completed after it, so its rows are in too (the inserts of rider-C
    # and rider-F, the ones over 20).
    assert fares(changed) == {"rider-C": 27.7, "rider-D": 339.0, "rider-F": 34.15}

    # Spark SQL tab: TIMESTAMP AS OF and hudi_table_changes on a catalog table.
    session.sql(f"CREATE TABLE hudi_table USING hudi LOCATION '{tmp_path / 'trips_table'}'")
    rows = session.sql(f"SELECT * FROM hudi_table TIMESTAMP AS OF '{first}'").collect()
    assert len(rows) == len(DATA)
    latest = session.sql(
        "SELECT * FROM hudi_table_changes('hudi_table', 'latest_state', 'earliest')").collect()
    assert fares(latest)["rider-D"] == 339.0 and len(latest) == len(DATA)
