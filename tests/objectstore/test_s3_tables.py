"""Tables in S3 through a real S3 API server (moto's, on 127.0.0.1): the whole SQL flow on
a managed merge-on-read table in an ``s3://`` warehouse and an external copy-on-write table
at an ``s3://`` LOCATION, each read back through SQL, ``hudisql.read_table`` and hudi-rs.

One table per flavour for the module (several statements and assertions on each) keeps the
module to about a minute: every statement is a Spark job writing to the server.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

import hudisql
from hudisql.errors import HudiSqlError, StorageLocationError
from hudisql.metadata.validate import validate_metadata_table
from hudisql.table.table import HudiTable
from hudisql.txn.heartbeat import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES, is_abandoned
from tests.objectstore.conftest import HUDI_RS_OPTIONS, SECRET, S3Server, new_bucket

pytestmark = [pytest.mark.spark, pytest.mark.slow]

AFTER_MERGE = {1: (10.0, "sf"), 3: (30.0, "sf"), 4: (4.0, "la")}
FINAL = {**AFTER_MERGE, 5: (5.0, "la")}


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> str:
    return new_bucket(s3_server, "flow")


@pytest.fixture(scope="module")
def session(spark: Any, bucket: str, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[hudisql.HudiSession]:
    catalog = tmp_path_factory.mktemp("s3catalog") / "catalog.db"
    # Short heartbeats: the killed writer's instant is abandoned a second after it dies.
    hs = hudisql.connect(spark, warehouse=f"s3://{bucket}/wh", catalog=f"sqlite:///{catalog}",
                         conf={HEARTBEAT_INTERVAL_MS: "500", HEARTBEAT_TOLERABLE_MISSES: "2"})
    yield hs
    hs.close()


def rows(frame: Any) -> dict[int, tuple[float, str]]:
    return {r["id"]: (r["v"], r["city"]) for r in frame.collect()}


def arrow_rows(table: pa.Table) -> dict[int, tuple[float, str]]:
    got = table.select(["id", "v", "city"]).to_pylist()
    return {r["id"]: (r["v"], r["city"]) for r in got}


def last_instant(location: str) -> str:
    head = HudiTable.open(location).timeline.last_completed()
    assert head is not None
    return head.timestamp


def completed_at(location: str, instant: str) -> str:
    """When ``instant`` completed: where a version 9 table's incremental ranges end."""
    found = HudiTable.open(location).timeline.get(instant)
    assert found is not None
    return found.completion_time or instant


def run_flow(hs: hudisql.HudiSession, name: str, location: str, mor: bool) -> None:
    """The statements of issue 27's flow on table ``name`` at ``location``, checking rows."""
    hs.sql(f"INSERT INTO {name} VALUES (1, 1.0, 'sf'), (2, 2.0, 'la'), (3, 3.0, 'sf')")
    inserted = last_instant(location)
    hs.sql(f"UPDATE {name} SET v = 10.0 WHERE id = 1")
    updated = last_instant(location)
    hs.sql(f"DELETE FROM {name} WHERE id = 2")
    hs.sql(f"""MERGE INTO {name} t USING (SELECT 3 AS id, 30.0 AS v, 'sf' AS city
               UNION ALL SELECT 4, 4.0, 'la') s ON t.id = s.id
               WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    assert rows(hs.sql(f"SELECT id, v, city FROM {name}")) == AFTER_MERGE

    # Time travel and incremental reads before the clean removes the older slices.
    first = {1: (1.0, "sf"), 2: (2.0, "la"), 3: (3.0, "sf")}
    as_of = hs.sql(f"SELECT id, v, city FROM {name} TIMESTAMP AS OF '{inserted}'")
    assert rows(as_of) == first
    assert arrow_rows(hudisql.read_table(location, as_of=inserted)) == first
    changes = hs.sql(f"SELECT id, v, city FROM hudi_table_changes('{name}', 'latest_state', "
                     f"'{completed_at(location, inserted)}', "
                     f"'{completed_at(location, updated)}')")
    assert rows(changes) == {1: (10.0, "sf")}

    hs.sql(f"CREATE INDEX record_index ON {name} (id)")
    assert hs.sql(f"SELECT id, v FROM {name} WHERE id = 3").collect() == [(3, 30.0)]
    if mor:
        hs.sql(f"RUN LOG COMPACTION ON {name}")
        assert rows(hs.sql(f"SELECT id, v, city FROM {name}")) == AFTER_MERGE
        hs.sql(f"RUN COMPACTION ON {name}")
    hs.sql(f"CALL run_clean(table => '{name}', options => 'hoodie.cleaner.commits.retained=1')")
    assert rows(hs.sql(f"SELECT id, v, city FROM {name}")) == AFTER_MERGE

    timeline = hs.sql(f"SHOW TIMELINE {name}").collect()
    actions = {r["action"] for r in timeline}
    assert ("deltacommit" if mor else "commit") in actions
    assert {"clean", "indexing"} <= actions
    assert all(r["state"] == "COMPLETED" for r in timeline)


    extra = hs.spark.createDataFrame([(5, 5.0, "la")], "id INT, v DOUBLE, city STRING")
    extra.write.format("hudi").mode("append").save(location)
    # On a local master the append is a driver write (hudisql.write.driver_write): its files
    # carry the driver's write token, on s3:// as on a local disk.
    timeline = HudiTable.open(location).timeline
    written = timeline.commit_metadata(timeline.completed(["commit", "deltacommit"])[-1])
    assert [s.path for s in written.write_stats() if "0-0-0" not in (s.path or "")] == []
    assert rows(hs.sql(f"SELECT id, v, city FROM {name}")) == FINAL
    assert arrow_rows(hudisql.read_table(location)) == FINAL
    # format("hudi").load of an s3:// path: planned as t.read() plans it, same rows.
    assert rows(hs.spark.read.format("hudi").load(location).select("id", "v", "city")) == FINAL
    assert arrow_rows(pa.Table.from_batches(
        hudi.HudiTable(location, options=HUDI_RS_OPTIONS).read())) == FINAL
    result = validate_metadata_table(HudiTable.open(location))  # (the suite's check is local)
    assert result.ok, result.differences[:5]


def test_managed_mor_table_in_an_s3_warehouse(session: hudisql.HudiSession, bucket: str,
                                               s3_server: S3Server) -> None:
    session.sql("CREATE TABLE trips_mor (id INT, v DOUBLE, city STRING) USING hudi "
                "PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', type = 'mor')")
    location = f"s3://{bucket}/wh/trips_mor"
    assert session.catalog.load_table("trips_mor").location == location
    run_flow(session, "trips_mor", location, mor=True)
    keys = s3_server.keys(bucket, "wh/trips_mor/")
    assert "wh/trips_mor/.hoodie/hoodie.properties" in keys
    assert any(k.startswith("wh/trips_mor/city=sf/") and k.endswith(".parquet") for k in keys)
    assert not any(k.endswith(".tmp") for k in keys)


def test_external_cow_table_at_an_s3_location(session: hudisql.HudiSession, bucket: str,
                                               s3_server: S3Server) -> None:
    location = f"s3://{bucket}/external/trips_cow"
    session.sql("CREATE TABLE trips_cow (id INT, v DOUBLE, city STRING) USING hudi "
                f"PARTITIONED BY (city) LOCATION '{location}' "
                "TBLPROPERTIES (primaryKey = 'id', type = 'cow')")
    run_flow(session, "trips_cow", location, mor=False)
    assert HudiTable.open(location).properties.get("hoodie.table.type") == "COPY_ON_WRITE"
    assert "external/trips_cow/.hoodie/hoodie.properties" in s3_server.keys(bucket, "external/")


def test_nothing_is_written_under_the_working_directory(
        spark: Any, s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    bucket = new_bucket(s3_server, "cwd")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    hs = hudisql.connect(spark, warehouse=f"s3://{bucket}/wh")
    try:
        hs.sql("CREATE TABLE t (id INT, v DOUBLE) USING hudi TBLPROPERTIES (primaryKey = 'id')")
        hs.sql("INSERT INTO t VALUES (1, 1.0), (2, 2.0)")
        assert hs.sql("SELECT id, v FROM t ORDER BY id").collect() == [(1, 1.0), (2, 2.0)]
    finally:
        hs.close()
    assert list(work.iterdir()) == []
    catalogs = list((home / ".hudisql" / "catalogs").iterdir())
    assert [p.name for p in catalogs if p.suffix == ".db"] == [f"s3-{bucket}-wh.db"]
    assert any("local SQLite file" in r.getMessage() for r in caplog.records)
    assert "wh/t/.hoodie/hoodie.properties" in s3_server.keys(bucket)


@pytest.mark.parametrize("location", ["s3://no-such-bucket-hudisql/t", "nosuchfs://b/t"])
def test_a_bad_location_leaves_no_catalog_entry(session: hudisql.HudiSession,
                                                location: str) -> None:
    with pytest.raises(StorageLocationError, match=location.split("/")[2]):
        session.sql(f"CREATE TABLE bad (id INT) USING hudi LOCATION '{location}' "
                    "TBLPROPERTIES (primaryKey = 'id')")
    assert "bad" not in [t.table for t in session.catalog.list_tables("default")]


_KILLED_WRITER = """
import sys
import pyarrow as pa
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient

def hook(event, detail):
    if event == "file":  # a data file is written, the instant is inflight: wait to be killed
        print("written", flush=True)
        sys.stdin.read()

options = {"hoodie.write.lock.provider": "catalog", "hudisql.catalog.url": sys.argv[2],
           "hoodie.client.heartbeat.interval_in_ms": "500"}
client = WriteClient(HudiTable.open(sys.argv[1]), on_step=hook, options=options)
client.insert(pa.table({"id": pa.array([9], pa.int32()), "v": [9.0], "city": ["ny"]}))
"""


def test_a_writer_killed_mid_commit_is_rolled_back_by_the_next(
        session: hudisql.HudiSession, bucket: str, s3_server: S3Server) -> None:
    location = f"s3://{bucket}/external/killed"
    session.sql("CREATE TABLE killed (id INT, v DOUBLE, city STRING) USING hudi "
                f"PARTITIONED BY (city) LOCATION '{location}' "
                "TBLPROPERTIES (primaryKey = 'id', type = 'mor')")
    session.sql("INSERT INTO killed VALUES (1, 1.0, 'sf')")
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, location, session.catalog.uri],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "written"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    table = HudiTable.open(location)
    dead = [i for i in table.timeline.instants if not i.is_completed]
    assert len(dead) == 1
    def ny_files() -> list[str]:  # its data files (partition metadata stays, as in Hudi)
        return [k for k in s3_server.keys(bucket, "external/killed/city=ny/")
                if not k.endswith(("/", ".hoodie_partition_metadata"))]

    assert ny_files()
    deadline = time.monotonic() + 30  # its heartbeat stops: abandoned after two misses
    while not is_abandoned(table.storage, dead[0].timestamp, 0.5, 2):
        assert time.monotonic() < deadline
        time.sleep(0.2)

    session.sql("INSERT INTO killed VALUES (2, 2.0, 'la')")
    timeline = HudiTable.open(location).timeline
    assert not any(i.timestamp == dead[0].timestamp for i in timeline.instants)
    assert any(i.action == "rollback" and i.is_completed for i in timeline.instants)
    assert ny_files() == []
    want = {1: (1.0, "sf"), 2: (2.0, "la")}
    assert rows(session.sql("SELECT id, v, city FROM killed")) == want
    assert arrow_rows(pa.Table.from_batches(
        hudi.HudiTable(location, options=HUDI_RS_OPTIONS).read())) == want


def test_credentials_appear_nowhere(session: hudisql.HudiSession, bucket: str,
                                    s3_server: S3Server, caplog: pytest.LogCaptureFixture,
                                    capfd: pytest.CaptureFixture[str]) -> None:
    """The secret of the environment and one given in a location: not in any object the
    tables wrote, the catalog database, SHOW / DESCRIBE output, errors or logs."""
    caplog.set_level(logging.DEBUG)
    shown = []
    for statement in ("SHOW TIMELINE trips_mor", f"SHOW TIMELINE ON 's3://{bucket}/wh/trips_mor'",
                      "DESCRIBE TABLE EXTENDED trips_cow",
                      "SHOW TBLPROPERTIES trips_mor", "SHOW TABLES",
                      "CALL show_commits(table => 'trips_mor')"):
        shown.extend(str(row) for row in session.sql(statement).collect())
    by_path = session.sql(f"SHOW TIMELINE ON 's3://{bucket}/wh/trips_mor'").collect()
    assert by_path == session.sql("SHOW TIMELINE trips_mor").collect()
    with pytest.raises(HudiSqlError) as refused:
        session.sql("CREATE TABLE leak (id INT) USING hudi "
                    f"LOCATION 's3://{bucket}/leak?secret_key={SECRET}' "
                    "TBLPROPERTIES (primaryKey = 'id')")
    client = s3_server.client()
    stored = b"".join(client.get_object(Bucket=bucket, Key=key)["Body"].read()
                      for key in s3_server.keys(bucket))
    catalog = Path(session.catalog.uri.removeprefix("sqlite:///"))
    files = b"".join(p.read_bytes() for p in catalog.parent.glob(catalog.name + "*"))
    out, err = capfd.readouterr()
    secret = SECRET.encode()
    assert stored and secret not in stored
    assert secret not in files
    assert SECRET not in "\n".join(shown)
    assert SECRET not in str(refused.value)
    assert SECRET not in caplog.text
    assert SECRET not in out + err
