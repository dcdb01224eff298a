"""Pass-through stays total: a DML/DDL statement hudisql's grammar cannot parse goes to
Spark unchanged when its target is not a hudi table; on a hudi table hudisql's parse error
stands, before any statement of the script runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudisql.errors import SqlParseError
from hudisql.parser import Unparsed, parse_script
from hudisql.session import HudiSession
from hudisql.table import HudiTable

pytestmark = pytest.mark.spark


def test_a_statement_hudisql_cannot_parse_reaches_spark_for_a_spark_table(
        session: HudiSession, tmp_path: Path) -> None:
    spark = session.spark
    spark.sql("DROP TABLE IF EXISTS plain_defaults")
    spark.sql(f"CREATE TABLE plain_defaults (id INT) USING parquet "
              f"LOCATION '{tmp_path / 'plain'}'")
    try:
        session.sql("ALTER TABLE plain_defaults ADD COLUMN c INT DEFAULT 10")
        session.sql("INSERT INTO plain_defaults (id) VALUES (1)")
        assert [tuple(r) for r in spark.sql("SELECT id, c FROM plain_defaults").collect()] == [
            (1, 10)]
    finally:
        spark.sql("DROP TABLE IF EXISTS plain_defaults")


def test_on_a_hudi_table_the_parse_error_stands_and_nothing_runs(
        session: HudiSession) -> None:
    session.sql("CREATE TABLE unparsed_hudi (id INT, v STRING) USING hudi "
                "TBLPROPERTIES (primaryKey = 'id')")
    path = session.table("unparsed_hudi").path
    with pytest.raises(SqlParseError, match="line 2, column 44") as caught:
        session.sql("INSERT INTO unparsed_hudi VALUES (1, 'a');\n"
                    "ALTER TABLE unparsed_hudi ADD COLUMN c INT DEFAULT 10")
    assert "DEFAULT" in str(caught.value)
    assert HudiTable.open(path).timeline.completed() == []  # the INSERT never ran


def test_the_parser_defers_only_errors_after_a_readable_target() -> None:
    [stmt] = parse_script("UPDATE db.t SET", defer_target_errors=True)
    assert isinstance(stmt.command, Unparsed)
    assert stmt.command.table.parts == ("db", "t")
    with pytest.raises(SqlParseError):
        parse_script("UPDATE db.t SET")  # by default the error is raised
    with pytest.raises(SqlParseError, match="expected the name of the table to update"):
        parse_script("UPDATE", defer_target_errors=True)
