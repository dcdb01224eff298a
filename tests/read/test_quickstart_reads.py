"""The read side of Apache Hudi's Spark quickstart (Python tab), as published, unchanged.

Time travel, incremental query, point-in-time query and change data capture query, with
the quickstart's own options and values, on a table written with ``df.write.format("hudi")``.
Rows are checked against the pure-Python reader and hudi-rs, and are what Hudi 1.x gives on
the version 9 table it makes (incremental ranges by completion time).
"""

from __future__ import annotations

import json
from pathlib import Path

import hudi
import pyarrow as pa
import pytest

import hudisql
from hudisql.session import HudiSession

pytestmark = pytest.mark.spark

COLUMNS = ["ts", "uuid", "rider", "driver", "fare", "city"]
DATA = [
    (1695159649087, "334e26e9-8355-45cc-97c6-c31daf0df330", "rider-A", "driver-K", 19.10,
     "san_francisco"),
    (1695091554788, "e96c4396-3fad-413a-a942-4cb36106d721", "rider-C", "driver-M", 27.70,
     "san_francisco"),
    (1695046462179, "9909a8b1-2d15-4d3d-8ec9-efc48c536a00", "rider-D", "driver-L", 33.90,
     "san_francisco"),
    (1695516137016, "e3cf430c-889d-4015-bc98-59bdce1e530c", "rider-F", "driver-P", 34.15,
     "sao_paulo"),
    (1695115999911, "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa", "rider-J", "driver-T", 17.85,
     "chennai"),
]


def test_quickstart_time_travel_incremental_point_in_time_and_cdc(
        hudi_session: HudiSession, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    spark = hudi_session.spark
    for view in ("trips_table", "trips_incremental"):  # the quickstart's views, not left behind
        request.addfinalizer(lambda view=view: spark.catalog.dropTempView(view))  # type: ignore[misc]
    base_path = str(tmp_path / "trips_table")
    hudi_options = {
        "hoodie.table.name": "trips_table",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.precombine.field": "ts",
    }
    inserts = spark.createDataFrame(DATA).toDF(*COLUMNS)
    inserts.write.format("hudi").options(**hudi_options).mode("append").save(base_path)
    updates = spark.createDataFrame([(*r[:4], r[4] * 10, *r[5:]) for r in DATA
                                     if r[2] == "rider-D"]).toDF(*COLUMNS)
    updates.write.format("hudi").options(**hudi_options).mode("append").save(base_path)
    deletes = spark.createDataFrame([r for r in DATA if r[2] == "rider-F"]).toDF(*COLUMNS)
    (deletes.write.format("hudi").options(**hudi_options)
     .option("hoodie.datasource.write.operation", "delete").mode("append").save(base_path))

    # Time travel, in the three spellings the quickstart shows.
    first = hudisql.read_table(base_path).column("_hoodie_commit_time").to_pylist()
    timeline = [i.timestamp for i in hudi_session.table_at(base_path).core()
                .timeline.completed()]
    assert min(first) == timeline[0]
    t0 = timeline[0]
    spelled = f"{t0[:4]}-{t0[4:6]}-{t0[6:8]} {t0[8:10]}:{t0[10:12]}:{t0[12:14]}.{t0[14:]}"
    for as_of in (t0, spelled):
        old = spark.read.format("hudi").option("as.of.instant", as_of).load(base_path)
        assert sorted(r.fare for r in old.collect()) == sorted(r[4] for r in DATA)
    assert spark.read.format("hudi").option("as.of.instant", spelled[:10]).load(
        base_path).count() == 0  # a date alone: the start of the day, before the first commit

    # Incremental query: begin at the second-to-last commit the data shows.
    spark.read.format("hudi").load(base_path).createOrReplaceTempView("trips_table")
    commits = [row[0] for row in spark.sql(
        "SELECT DISTINCT(_hoodie_commit_time) AS commitTime FROM trips_table "
        "ORDER BY commitTime").limit(50).collect()]
    begin_time = commits[len(commits) - 2]
    incremental_read_options = {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": begin_time,
    }
    trips_incremental = spark.read.format("hudi").options(**incremental_read_options) \
        .load(base_path)
    trips_incremental.createOrReplaceTempView("trips_incremental")
    got = spark.sql("SELECT `_hoodie_commit_time`, fare, rider, driver, uuid, ts "
                    "FROM trips_incremental WHERE fare > 20.0").collect()
    # A version 9 table, as Hudi 1.x makes: the range is by completion time, and the commit
    # begin_time names completed after it, so its rows are in too (rider-C's insert, as
    # Hudi 1.x gives; version 6 would give rider-D's update alone).
    assert sorted((r.rider, r.fare) for r in got) == [
        ("rider-C", pytest.approx(27.7)), ("rider-D", pytest.approx(339.0))]
    last = max(i.completion_time or i.timestamp for i in hudi_session.table_at(base_path)
               .core().timeline.completed())
    oracle = pa.Table.from_batches(hudi.HudiTable(base_path).read(
        hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
        .with_start_timestamp(begin_time).with_end_timestamp(last)))
    assert sorted(oracle.column("rider").to_pylist()) == sorted(
        r.rider for r in trips_incremental.collect())

    # Point in time: from "000" to the second-to-last commit: nothing on version 9 (that
    # commit completed after the time it is named by), everything inserted by its end.
    point_in_time_read_options = {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.end.instanttime": begin_time,
        "hoodie.datasource.read.begin.instanttime": "000",
    }
    point = spark.read.format("hudi").options(**point_in_time_read_options).load(base_path)
    assert point.count() == 0
    done = hudi_session.table_at(base_path).core().timeline.get(begin_time).completion_time
    point = spark.read.format("hudi").options(**{**point_in_time_read_options,
                                                 "hoodie.datasource.read.end.instanttime": done})
    assert sorted(r.fare for r in point.load(base_path).collect()) == sorted(
        r[4] for r in DATA)

    # Change data capture from the start (begin 0, an int, as the quickstart passes it).
    cdc_read_options = {
        "hoodie.datasource.query.incremental.format": "cdc",
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": 0,
    }
    changes = spark.read.format("hudi").options(**cdc_read_options).load(base_path)
    ops = sorted((r.op, json.loads(r.before or r.after)["rider"]) for r in changes.collect())
    assert ops == sorted([("i", r[2]) for r in DATA] + [("u", "rider-D"), ("d", "rider-F")])
    pure = hudisql.read_table(base_path, query_type="incremental", begin="0",
                              incremental_format="cdc")
    assert sorted(pure.column("op").to_pylist()) == sorted(op for op, _ in ops)
