"""Clean and archival after every SQL write by default, with Hudi's option names (issue 28):
the archived timeline through SHOW TIMELINE ... ARCHIVED and CALL show_archived_commits,
time travel refused for a cleaned instant, both services switched off, and the clean run
off the writer's critical path (``hoodie.clean.async.enabled``)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiTable as RsTable
from pyspark.sql import SparkSession

import hudisql
from hudisql.catalog import SqlCatalog
from hudisql.errors import LockError, ReadOptionError, TableServiceError
from hudisql.table import HudiTable
from hudisql.table.format.archive_format import archive_files
from hudisql.txn.lock import lock_provider_for

SMALL = {"hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2",
         "hoodie.keep.max.commits": "3"}


def _session(spark: SparkSession, tmp_path: Path, conf: dict[str, str]) -> hudisql.HudiSession:
    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=str(tmp_path / "warehouse"), poll_interval=0)
    return hudisql.connect(spark, warehouse=tmp_path / "warehouse", catalog=catalog, conf=conf)


def _writes(session: hudisql.HudiSession, name: str) -> list[str]:
    session.sql(f"CREATE TABLE {name} (id INT, v STRING, ts BIGINT) USING hudi "
                "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts')")
    session.sql(f"INSERT INTO {name} VALUES (1, 'a', 1), (2, 'b', 1)")
    for n in range(2, 7):
        session.sql(f"UPDATE {name} SET v = 'v{n}', ts = {n} WHERE id = 1")
    table = HudiTable.open(session.table(name).path)
    return [i.timestamp for i in table.timeline.completed(["commit"])]


@pytest.mark.slow
def test_sql_writes_clean_and_archive_by_default(spark: SparkSession, tmp_path: Path) -> None:
    session = _session(spark, tmp_path, SMALL)
    active = _writes(session, "t")
    path = session.table("t").path
    table = HudiTable.open(path)
    # Archival at the 4th and 6th writes (4 > keep.max 3), each down to keep.min 2.
    assert len(active) == 2 and table.timeline.completed(["clean"])
    archived = [r["commit_time"] for r in
                session.sql("CALL show_archived_commits(table => 't', limit => 10)").collect()]
    assert len(archived) == 4 and max(archived) < min(active)
    shown = session.sql("SHOW TIMELINE t ARCHIVED").collect()
    assert {r["instant_time"] for r in shown if r["timeline_type"] == "ARCHIVED"} >= set(archived)
    got = sorted((r["id"], r["v"]) for r in session.sql("SELECT id, v FROM t").collect())
    assert got == [(1, "v6"), (2, "b")]
    theirs = pa.Table.from_batches(RsTable(path).read()).sort_by("id")
    assert list(zip(theirs["id"].to_pylist(), theirs["v"].to_pylist(), strict=True)) == got
    with pytest.raises(ReadOptionError, match="that instant was cleaned"):
        session.sql(f"SELECT * FROM t TIMESTAMP AS OF '{archived[-1]}'").collect()


@pytest.mark.slow
def test_both_services_switch_off(spark: SparkSession, tmp_path: Path) -> None:
    session = _session(spark, tmp_path, {**SMALL, "hoodie.clean.automatic": "false",
                                         "hoodie.archive.automatic": "false"})
    assert len(_writes(session, "quiet")) == 6
    table = HudiTable.open(session.table("quiet").path)
    assert not table.timeline.completed(["clean"])
    # Nothing archived: version 6 archives into .hoodie/archived, 8/9 into the LSM history.
    history = "timeline/history" if table.properties.version >= 8 else "archived"
    assert not any((Path(table.base_path) / ".hoodie" / history).iterdir())


def _gate(session: hudisql.HudiSession) -> threading.Event:
    """Keep the session's background worker busy until the event is set."""
    gate = threading.Event()
    assert session.background.submit("gate", "a test's gate", gate.wait)
    return gate


@pytest.mark.slow
def test_async_clean_runs_in_the_background_after_the_write(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    session = _session(spark, tmp_path, {**SMALL, "hoodie.clean.async.enabled": "true",
                                         "hoodie.write.lock.wait_time_ms": "200"})
    gate = _gate(session)
    assert len(_writes(session, "t")) == 6  # the writes return while the worker is busy
    path = session.table("t").path
    table = HudiTable.open(path)
    assert not table.timeline.completed(["clean"])
    assert not archive_files(table.storage, ".hoodie/archived")
    gate.set()
    session.wait_for_services()  # then clean, and the archival after it
    table = HudiTable.open(path)
    assert len(table.timeline.completed(["clean"])) == 1
    assert len(table.timeline.completed(["commit"])) == 2  # archived down to keep.min
    got = sorted((r["id"], r["v"]) for r in session.sql("SELECT id, v FROM t").collect())
    theirs = pa.Table.from_batches(RsTable(path).read()).sort_by("id")
    assert list(zip(theirs["id"].to_pylist(), theirs["v"].to_pylist(), strict=True)) == got
    # A background failure (the table lock held elsewhere) is logged at once and raised
    # by the next wait, naming the table; the write itself completed.
    gate = _gate(session)
    session.sql("UPDATE t SET v = 'late', ts = 7 WHERE id = 2")
    with lock_provider_for(session.write_options(path)).lock(path, 30):
        gate.set()
        with caplog.at_level(logging.ERROR, "hudisql.services.background"), \
                pytest.raises(TableServiceError, match=f"automatic clean of the table at {path}"
                              ) as failed:
            session.wait_for_services()
    assert isinstance(failed.value.__cause__, LockError)
    assert any("failed in the background" in r.getMessage() for r in caplog.records)
    assert len(HudiTable.open(path).timeline.completed(["clean"])) == 1
    # Closing the session waits for what is queued.
    gate = _gate(session)
    session.sql("UPDATE t SET v = 'last', ts = 8 WHERE id = 2")
    gate.set()
    session.close()
    assert len(HudiTable.open(path).timeline.completed(["clean"])) == 2
    got = sorted((r["id"], r["v"]) for r in spark.read.format("hudi").load(path).collect())
    assert got == [(1, "v6"), (2, "last")]
