"""HudiSession.sql / sql_script: scripts, pass-through, parse errors, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import AnalysisException

from hudisql.errors import SqlParseError, TableNotFoundError, WriteError
from hudisql.session import HudiSession

pytestmark = pytest.mark.spark

CREATE = ("CREATE TABLE {name} (id INT, name STRING, ts BIGINT) USING hudi "
          "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts')")


def test_sql_returns_the_last_statements_result_and_sql_script_all(session: HudiSession) -> None:
    last = session.sql("SELECT 1 AS a; SELECT 'x;y' AS b -- a ; in a comment\n")
    assert [tuple(r) for r in last.collect()] == [("x;y",)]
    frames = session.sql_script("SELECT 1 AS a;\n/* ; */ SELECT 2 AS b; SELECT 3 AS c")
    assert [f.columns for f in frames] == [["a"], ["b"], ["c"]]
    assert [f.collect()[0][0] for f in frames] == [1, 2, 3]


def test_pass_through_gives_what_spark_gives(session: HudiSession) -> None:
    text = ("-- leading comment\nSELECT id, id * 2 AS twice, 'it''s; fine' AS s "
            "FROM range(3) WHERE id > 0 ORDER BY id")
    assert session.sql(text).collect() == session.spark.sql(text).collect()


def test_a_script_that_does_not_parse_runs_nothing(session: HudiSession) -> None:
    script = CREATE.format(name="never_made") + ";\nSELECT 1;\nSELECT 'open"
    with pytest.raises(SqlParseError) as err:
        session.sql(script)
    assert err.value.line == 3
    assert err.value.column == 8
    assert "    SELECT 'open\n           ^" in str(err.value)
    assert session.catalog.list_tables() == []
    assert not session.spark.catalog.tableExists("never_made")


def test_hudisql_statement_errors_show_line_and_caret(session: HudiSession) -> None:
    with pytest.raises(SqlParseError) as err:
        session.sql("SELECT 1;\nCALL show_commits(tabel => 't')")
    assert (err.value.line, err.value.column) == (2, 19)
    assert "show_commits has no parameter 'tabel'" in str(err.value)


def test_unknown_table_says_which_and_what_to_do(session: HudiSession) -> None:
    with pytest.raises(TableNotFoundError, match=r"default\.nosuch .*SHOW TABLES IN default"):
        session.sql("SHOW TIMELINE nosuch")


def test_missing_column_names_it_and_the_statement(session: HudiSession) -> None:
    session.sql(CREATE.format(name="router_cols"))
    with pytest.raises(WriteError, match="has no column nope; its columns are id, name, ts"):
        session.sql("SELECT 1;\nUPDATE router_cols SET nope = 1 WHERE id = 1")
    with pytest.raises(AnalysisException) as err:
        session.sql("SELECT 1;\n  SELECT missing FROM router_cols")
    assert "missing" in str(err.value)
    assert "in statement 2 at line 2, column 3: SELECT missing FROM router_cols" in (
        err.value.__notes__)


def test_a_failing_statement_stops_the_script(session: HudiSession) -> None:
    with pytest.raises(AnalysisException):
        session.sql(CREATE.format(name="router_stop") + "; SELECT nope; "
                    + CREATE.format(name="router_after"))
    assert [t.table for t in session.catalog.list_tables()] == ["router_stop"]


def test_wrong_option_says_which_values_are_allowed(session: HudiSession) -> None:
    session.sql(CREATE.format(name="router_opt"))
    session.options["hoodie.spark.sql.insert.into.operation"] = "merge"
    try:
        with pytest.raises(WriteError, match=r"insert\.into\.operation='merge' .*bulk_insert"):
            session.sql("INSERT INTO router_opt VALUES (1, 'a', 1)")
    finally:
        del session.options["hoodie.spark.sql.insert.into.operation"]
    assert session.sql("SELECT count(*) FROM router_opt").collect()[0][0] == 0


def test_empty_script_is_an_error(session: HudiSession, tmp_path: Path) -> None:
    with pytest.raises(SqlParseError, match="holds no statement"):
        session.sql("  -- nothing\n")
    assert session.sql_script(";;") == []
