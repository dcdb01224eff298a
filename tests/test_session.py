"""hudisql.connect() and HudiSession: Spark configured for Hudi tables, handles by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

import hudisql
from hudisql.errors import HudiSqlError, TableNotFoundError
from hudisql.session import HudiSession, HudiTableHandle
from tests.fixtures import table_path

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]

_NEW_SESSION = """
import json, sys
sys.path.insert(0, sys.argv[3])  # the driver finds hudisql; workers must get it from connect()
import hudisql
s = hudisql.connect(warehouse=sys.argv[1], conf={"hoodie.write.lock.provider": "file",
                                                 "spark.sql.shuffle.partitions": "3"})
c = s.spark.conf
out = {k: c.get(k) for k in ["spark.pyspark.python", "spark.sql.python.filterPushdown.enabled",
       "spark.sql.session.timeZone", "spark.sql.warehouse.dir", "spark.sql.shuffle.partitions"]}
out["master"] = s.spark.sparkContext.master
out["options"] = s.options
out["rows"] = s.spark.read.format("hudi").load(sys.argv[2]).count()
s.stop()
print("RESULT" + json.dumps(out))
"""


def test_connect_starts_a_configured_local_session(tmp_path: Path) -> None:
    # A fresh process: the test process already has its one SparkSession.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    proc = subprocess.run(
        [sys.executable, "-c", _NEW_SESSION, str(tmp_path / "wh"),
         str(table_path("v6_trips_8i1u")), str(REPO)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    out = json.loads(line.removeprefix("RESULT"))
    assert out["spark.pyspark.python"] == sys.executable
    assert out["spark.sql.python.filterPushdown.enabled"] == "true"
    assert out["spark.sql.session.timeZone"] == "UTC"
    assert out["spark.sql.warehouse.dir"].endswith(str(tmp_path / "wh"))
    assert out["spark.sql.shuffle.partitions"] == "3"
    assert out["master"] == "local[2]"
    assert out["options"] == {"hoodie.write.lock.provider": "file"}
    # The hudi data source ran in workers that imported hudisql from this checkout.
    assert out["rows"] == 8


def test_connect_extends_a_given_session(spark: SparkSession) -> None:
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    session = hudisql.connect(spark, conf={"hoodie.write.lock.wait_time_ms": "10",
                                           "spark.sql.shuffle.partitions": "5"})
    try:
        assert session.spark is spark
        # The user's time zone stays (issue 26); only filter pushdown is turned on.
        assert spark.conf.get("spark.sql.session.timeZone") == "America/New_York"
        assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
        assert spark.conf.get("spark.sql.shuffle.partitions") == "5"
        # No lock provider named: writes pick the catalog's lock or the file lock per table.
        assert session.options == {"hoodie.write.lock.wait_time_ms": "10"}
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "4")
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_table_by_name_after_register(spark: SparkSession) -> None:
    session = hudisql.connect(spark)
    path = str(table_path("v6_trips_8i3d"))
    handle = session.register_table("trips_8i3d", path)
    try:
        assert isinstance(handle, HudiTableHandle)
        assert session.table("trips_8i3d").path == path
        assert handle.core().properties.table_name == "v6_trips_8i3d"
        assert handle.read().count() == 5
        assert session.sql("SELECT count(*) AS n FROM trips_8i3d").collect()[0].n == 5
        assert session.table_at(path).read(as_of="20000101000000000").count() == 0
    finally:
        spark.sql("DROP TABLE trips_8i3d")


def test_unknown_and_non_hudi_tables_are_refused(spark: SparkSession, tmp_path: Path) -> None:
    session = hudisql.connect(spark)
    with pytest.raises(TableNotFoundError, match="'no_such_table' does not exist"):
        session.table("no_such_table")
    spark.sql("CREATE TABLE plain_parquet (a INT) USING parquet")
    try:
        with pytest.raises(TableNotFoundError, match=r"not a hudi table \(its provider is parquet"):
            session.table("plain_parquet")
    finally:
        spark.sql("DROP TABLE plain_parquet")
    with pytest.raises(TableNotFoundError, match="is not a Hudi table"):
        session.register_table("not_hudi", tmp_path)
    assert not spark.catalog.tableExists("not_hudi")
    with pytest.raises(TableNotFoundError, match="is not a Hudi table"):
        session.table_at(tmp_path)


def test_sql_goes_to_the_router_when_one_is_installed(spark: SparkSession) -> None:
    seen: list[str] = []

    def router(session: HudiSession, text: str) -> DataFrame:
        seen.append(text)
        return session.spark.sql("SELECT 42 AS answer")

    session = hudisql.connect(spark)
    assert session.sql("SELECT 1 AS one").collect()[0].one == 1
    session.router = router
    assert session.sql("SHOW TIMELINE FOR t").collect()[0].answer == 42
    assert seen == ["SHOW TIMELINE FOR t"]


def test_read_of_some_columns_reads_just_them(spark: SparkSession) -> None:
    session = hudisql.connect(spark)
    path = str(table_path("v6_trips_8i1u"))  # one slice has log files, two have none
    df = session.table_at(path).read(columns=["rider", "fare", "city"])
    assert df.columns == ["rider", "fare", "city"]
    got = sorted(tuple(r) for r in df.collect())
    expected = hudisql.read_table(path).select(["rider", "fare", "city"]).to_pylist()
    assert got == sorted(tuple(r.values()) for r in expected)
    assert {r[0]: r[1] for r in got}["rider-D"] == 25.0  # the merged update
    with pytest.raises(HudiSqlError, match=r"has no column\(s\) \['nope'\]"):
        session.table_at(path).read(columns=["rider", "nope"])
