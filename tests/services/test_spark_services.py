"""The table services through SQL, procedures and ``handle.maintenance``, run as Spark jobs
(one task per file slice) on the shared SparkSession."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import hudisql
from hudisql.catalog import SqlCatalog
from hudisql.errors import SqlParseError, TableServiceError
from hudisql.session import HudiSession
from hudisql.sql.timeline import timeline_rows
from hudisql.table.table import HudiTable
from tests.services.kit import files, rows, rs_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CREATE = ("CREATE TABLE {name} (id INT, v STRING, ts BIGINT, city STRING) USING hudi "
          "PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', "
          "type = '{kind}')")


@pytest.fixture
def session(spark: SparkSession, tmp_path: Path) -> Iterator[HudiSession]:
    """A HudiSession on the shared SparkSession with a catalog of its own."""
    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=str(tmp_path / "warehouse"), poll_interval=0)
    yield hudisql.connect(spark, warehouse=tmp_path / "warehouse", catalog=catalog)
    catalog.close()


def _mor(session: HudiSession, tmp_path: Path, name: str = "t", updates: int = 5) -> Path:
    session.sql(CREATE.format(name=name, kind="mor"))
    session.sql(f"INSERT INTO {name} VALUES (1, 'a', 1, 'sf'), (2, 'b', 1, 'la'), "
                "(3, 'c', 1, 'sf')")
    for i in range(updates):
        session.sql(f"UPDATE {name} SET v = 'u{i}', ts = {i + 2} WHERE id IN (1, 2)")
    return tmp_path / "warehouse" / name


def test_run_log_compaction_sql_and_show(session: HudiSession, tmp_path: Path) -> None:
    path = _mor(session, tmp_path)
    before = rows(path)
    assert session.sql("SCHEDULE LOG COMPACTION ON t").collect() != []
    shown = session.sql("SHOW LOG COMPACTION ON t").collect()
    assert [r["state"] for r in shown] == ["REQUESTED"]
    instant = shown[0]["timestamp"]
    done = session.sql(f"RUN LOG COMPACTION ON t AT {instant}").collect()
    assert [(r["timestamp"], r["state"]) for r in done] == [(instant, "COMPLETED")]
    assert rows(path) == before == rs_rows(path)
    got = session.sql("SELECT id, v FROM t ORDER BY id").collect()
    assert [(r["id"], r["v"]) for r in got] == [(1, "u4"), (2, "u4"), (3, "c")]
    # SHOW TIMELINE shows the log compaction: requested, inflight, completed as deltacommit.
    [row] = [r for r in timeline_rows(HudiTable.open(str(path))) if r.instant_time == instant]
    assert (row.action, row.state, row.operation) == ("logcompaction", "COMPLETED", "LOG_COMPACT")
    assert session.sql("CALL show_log_compaction(table => 't')").collect()[0]["state"] == (
        "COMPLETED")


def test_compaction_and_clean_procedures_and_handle(session: HudiSession, tmp_path: Path) -> None:
    path = _mor(session, tmp_path)
    before = rows(path)
    out = session.sql("CALL run_compaction(op => 'schedule', table => 't')").collect()
    assert [r["state"] for r in out] == ["REQUESTED"]
    out = session.sql(f"CALL run_compaction(op => 'execute', path => '{path}')").collect()
    assert [r["state"] for r in out] == ["COMPLETED"]
    assert [r["state"] for r in session.sql(f"SHOW COMPACTION ON '{path}'").collect()] == [
        "COMPLETED"]
    assert rows(path) == before == rs_rows(path)
    session.sql("UPDATE t SET v = 'later', ts = 50 WHERE id = 3")
    result = session.table("t").maintenance.run_compaction()
    assert result is not None and result.file_groups == 1
    cleaned = session.sql("CALL run_clean(table => 't', options => "
                          "'hoodie.cleaner.commits.retained=1')").collect()
    assert cleaned and cleaned[0]["total_files_deleted"] > 0
    got = session.sql("SELECT id, v FROM t ORDER BY id").collect()
    assert [(r["id"], r["v"]) for r in got] == [(1, "u4"), (2, "u4"), (3, "later")]
    assert rows(path) == rs_rows(path)


def test_bad_input_is_refused_and_leaves_the_table_unchanged(
    session: HudiSession, tmp_path: Path,
) -> None:
    path = _mor(session, tmp_path, updates=2)
    session.sql(CREATE.format(name="c", kind="cow"))
    session.sql("INSERT INTO c VALUES (1, 'a', 1, 'sf')")
    untouched = files(path)
    with pytest.raises(TableServiceError, match="copy-on-write"):
        session.sql("RUN LOG COMPACTION ON c")
    with pytest.raises(TableServiceError, match="not a pending logcompaction plan"):
        session.sql("RUN LOG COMPACTION ON t AT 20200101000000000")
    with pytest.raises(TableServiceError, match="latest file slices"):
        session.sql("CALL run_clean(table => 't', options => "
                    "'hoodie.cleaner.commits.retained=0')")
    with pytest.raises(SqlParseError, match="takes a table name, not a path"):
        session.sql(f"RUN LOG COMPACTION ON '{path}'")
    assert files(path) == untouched


def test_inline_log_compaction_and_compaction_after_writes(
    spark: SparkSession, tmp_path: Path,
) -> None:
    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=str(tmp_path / "warehouse"), poll_interval=0)
    conf = {"hoodie.log.compaction.inline": "true",
            "hoodie.log.compaction.blocks.threshold": "3",
            "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "6"}
    session = hudisql.connect(spark, warehouse=tmp_path / "warehouse", catalog=catalog,
                              conf=conf)
    try:
        path = _mor(session, tmp_path, updates=3)
        assert [r["state"] for r in session.sql("SHOW LOG COMPACTION ON t").collect()] == [
            "COMPLETED"]
        assert session.sql("SHOW COMPACTION ON t").collect() == []
        for i in range(3):
            session.sql(f"UPDATE t SET v = 'w{i}', ts = {20 + i} WHERE id = 3")
        assert [r["state"] for r in session.sql("SHOW COMPACTION ON t").collect()] == [
            "COMPLETED"]
        got = session.sql("SELECT id, v FROM t ORDER BY id").collect()
        assert [(r["id"], r["v"]) for r in got] == [(1, "u2"), (2, "u2"), (3, "w2")]
        assert rows(path) == rs_rows(path)
    finally:
        catalog.close()
