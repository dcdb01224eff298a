"""DDL against the catalog, and other sessions' changes seen by the next statement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException

from hudisql.errors import TableAlreadyExistsError, TableNotFoundError, WriteError
from hudisql.session import HudiSession
from hudisql.table import HudiTable
from tests.fixtures import copy_table

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
CREATE = ("CREATE TABLE {name} (id INT, name STRING, ts BIGINT, part STRING) USING hudi "
          "PARTITIONED BY (part) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', "
          "type = '{kind}')")


def rows(session: HudiSession, sql: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in session.sql(sql).collect()]


def describe(session: HudiSession, name: str) -> dict[str, str]:
    return {r[0]: r[1] for r in session.sql(f"DESCRIBE EXTENDED {name}").collect()}


def test_create_managed_table_writes_a_hudi_table_at_the_default_location(
    session: HudiSession, tmp_path: Path
) -> None:
    session.sql(CREATE.format(name="wire_managed", kind="mor"))
    location = tmp_path / "warehouse" / "wire_managed"
    table = HudiTable.open(str(location))
    assert table.properties.table_type == "MERGE_ON_READ"
    assert table.properties.record_key_fields == ["id"]
    assert table.properties.partition_fields == ["part"]
    info = describe(session, "wire_managed")
    assert (info["Type"], info["Location"], info["id"], info["part"]) == (
        "MANAGED", str(location), "int", "string")
    assert rows(session, "SHOW TABLES LIKE 'wire_m*'") == [("default", "wire_managed", False)]
    with pytest.raises(TableAlreadyExistsError, match=r"default\.wire_managed already exists"):
        session.sql(CREATE.format(name="wire_managed", kind="cow"))
    session.sql(CREATE.format(name="IF NOT EXISTS wire_managed", kind="cow"))
    assert HudiTable.open(str(location)).properties.table_type == "MERGE_ON_READ"


def test_register_an_existing_hudi_table_as_external(session: HudiSession, tmp_path: Path) -> None:
    path = copy_table("v6_trips_8i1u", tmp_path)
    session.sql(f"CREATE TABLE wire_trips USING hudi LOCATION '{path}'")
    assert rows(session, "SELECT count(*) FROM wire_trips") == [(8,)]
    info = describe(session, "wire_trips")
    assert (info["Type"], info["Location"]) == ("EXTERNAL", str(path))
    with pytest.raises(TableNotFoundError):
        session.sql(f"CREATE TABLE wire_nothing USING hudi LOCATION '{tmp_path / 'none'}'")
    assert [t.table for t in session.catalog.list_tables()] == ["wire_trips"]


def test_a_failed_create_leaves_nothing(session: HudiSession, tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="hive_style_partitioning must be true or false"):
        session.sql("CREATE TABLE wire_bad (id INT) USING hudi TBLPROPERTIES (primaryKey = 'id', "
                    "'hoodie.datasource.write.hive_style_partitioning' = 'maybe')")
    with pytest.raises(WriteError, match="record key field"):
        session.sql("CREATE TABLE wire_bad (id ARRAY<INT>) USING hudi "
                    "TBLPROPERTIES (primaryKey = 'id')")
    with pytest.raises(WriteError, match="cannot be false"):  # keyless needs meta columns
        session.sql("CREATE TABLE wire_bad (id INT) USING hudi "
                    "TBLPROPERTIES ('hoodie.populate.meta.fields' = 'false')")
    assert session.catalog.list_tables() == []
    assert not (tmp_path / "warehouse" / "wire_bad").exists()


def test_drop_rename_and_show_tables(session: HudiSession, tmp_path: Path) -> None:
    session.sql(CREATE.format(name="wire_a", kind="cow"))
    session.sql("INSERT INTO wire_a VALUES (1, 'x', 1, 'p')")
    table_id = session.catalog.load_table("wire_a").table_id
    session.sql("ALTER TABLE wire_a RENAME TO wire_b")
    assert session.catalog.load_table("wire_b").table_id == table_id
    assert rows(session, "SELECT id, name FROM wire_b") == [(1, "x")]
    with pytest.raises(AnalysisException):
        session.sql("SELECT * FROM wire_a")
    names = [r[1] for r in rows(session, "SHOW TABLES") if r[1].startswith("wire_")]
    assert names == ["wire_b"]
    location = tmp_path / "warehouse" / "wire_a"
    session.sql("DROP TABLE wire_b")
    assert (location / ".hoodie" / "hoodie.properties").exists()
    session.sql(f"CREATE TABLE wire_c USING hudi LOCATION '{location}'")
    session.sql("DROP TABLE wire_c PURGE")  # external: PURGE leaves another engine's files
    assert (location / ".hoodie" / "hoodie.properties").exists()
    session.sql("DROP TABLE IF EXISTS wire_c")
    assert session.catalog.list_tables() == []


def test_purge_deletes_a_managed_tables_files(session: HudiSession, tmp_path: Path) -> None:
    session.sql(CREATE.format(name="wire_purge", kind="cow"))
    session.sql("DROP TABLE wire_purge PURGE")
    assert not (tmp_path / "warehouse" / "wire_purge").exists()


def test_other_sessions_changes_are_seen_by_the_next_statement(
    make_session: Callable[[], HudiSession],
) -> None:
    a, b = make_session(), make_session()
    assert a.catalog is not b.catalog
    a.sql(CREATE.format(name="wire_shared", kind="mor"))
    a.sql("INSERT INTO wire_shared VALUES (1, 'x', 1, 'p'), (2, 'y', 1, 'q')")
    assert rows(b, "SELECT id, name FROM wire_shared ORDER BY id") == [(1, "x"), (2, "y")]
    a.sql("UPDATE wire_shared SET name = 'z' WHERE id = 2")
    assert rows(b, "SELECT name FROM wire_shared WHERE id = 2") == [("z",)]
    a.sql("ALTER TABLE wire_shared ADD COLUMNS (note STRING)")
    assert describe(b, "wire_shared")["note"] == "string"  # b's catalog entry moved on
    a.sql("INSERT INTO wire_shared VALUES (3, 'w', 1, 'p', 'new')")
    assert rows(b, "SELECT id, note FROM wire_shared ORDER BY id") == [
        (1, None), (2, None), (3, "new")]
    a.sql("ALTER TABLE wire_shared RENAME TO wire_moved")
    assert rows(b, "SELECT count(*) FROM wire_moved") == [(3,)]
    a.sql("DROP TABLE wire_moved")
    with pytest.raises(AnalysisException):
        b.sql("SELECT * FROM wire_moved")
    assert b.catalog.stats().misses + b.catalog.stats().refreshes > 0


class Worker:
    """A hudisql session in another process (its own SparkSession and catalog instance)."""

    def __init__(self, warehouse: Path, catalog_url: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.sql.session_worker", str(warehouse), catalog_url],
            cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._line() == "READY"

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the worker process ended"
        return line.rstrip("\n")

    def sql(self, text: str) -> list[list[object]]:
        answer = self.ask(text)
        assert answer.startswith("OK "), answer
        return list(json.loads(answer[3:]))

    def ask(self, text: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.replace("\n", " ") + "\n")
        self.proc.stdin.flush()
        return self._line()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=120) == 0


@pytest.mark.slow
def test_a_session_in_another_process_sees_commits_schema_changes_and_drops(
    session: HudiSession, catalog_url: str, tmp_path: Path
) -> None:
    session.sql(CREATE.format(name="wire_proc", kind="cow"))
    session.sql("INSERT INTO wire_proc VALUES (1, 'x', 1, 'p')")
    worker = Worker(tmp_path / "warehouse", catalog_url)
    try:
        assert worker.sql("SELECT id, name FROM wire_proc") == [[1, "x"]]
        session.sql("INSERT INTO wire_proc VALUES (2, 'y', 1, 'q')")
        assert worker.sql("SELECT count(*) FROM wire_proc") == [[2]]
        session.sql("ALTER TABLE wire_proc ADD COLUMNS (note STRING)")
        session.sql("UPDATE wire_proc SET note = 'n' WHERE id = 2")
        assert worker.sql("SELECT id, note FROM wire_proc ORDER BY id") == [[1, None], [2, "n"]]
        session.sql("DROP TABLE wire_proc")
        answer = worker.ask("SELECT * FROM wire_proc")
        assert answer.startswith("ERR AnalysisException") and "wire_proc" in answer, answer
    finally:
        worker.close()


def test_table_handles_resolve_through_the_catalog_before_any_sql_names_them(
    make_session: Callable[[], HudiSession], tmp_path: Path,
) -> None:
    a, b = make_session(), make_session()
    location = copy_table("v6_trips_8i1u", tmp_path)
    a.catalog.register_table(("default", "handle_only"), str(location))  # no SQL, no Spark
    assert not b.spark.catalog.tableExists("handle_only")
    handle = b.table("handle_only")
    assert handle.path == str(location)
    assert handle.read().count() == 8
    assert b.spark.table("handle_only").count() == 8  # and Spark now knows it by name
    with pytest.raises(TableNotFoundError):
        b.table("no_such_table")
