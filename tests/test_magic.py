"""The %hudisql / %%hudisql magics in a real IPython shell (IPython's InteractiveShell)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from pyspark.sql import DataFrame, SparkSession

import hudisql
from hudisql.catalog import SqlCatalog
from hudisql.errors import HudiSqlError, SqlParseError
from hudisql.magic import DEFAULT_ROWS, ErrorView, Options, ResultTable, error_view, parse_line
from hudisql.parser import parse_script


@pytest.fixture
def ipython(spark: SparkSession, tmp_path: Path) -> Iterator[InteractiveShell]:
    """An IPython shell with the extension loaded and a HudiSession named ``s`` in it."""
    shell = InteractiveShell.instance()
    catalog = SqlCatalog("magic", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=str(tmp_path / "wh"), poll_interval=0)
    shell.user_ns["s"] = hudisql.connect(spark, warehouse=tmp_path / "wh", catalog=catalog)
    shell.run_line_magic("load_ext", "hudisql")  # what users type: the package-level hook
    yield shell
    shell.user_ns.pop("s", None)
    catalog.close()


def test_parse_line() -> None:
    assert parse_line("-o df -n 5 SELECT '-o x'") == (Options("df", 5), " SELECT '-o x'")
    assert parse_line("SELECT 1")[0].rows == DEFAULT_ROWS
    with pytest.raises(HudiSqlError, match="-o 1x: give a Python variable name"):
        parse_line("-o 1x SELECT 1")
    with pytest.raises(HudiSqlError, match="-n many"):
        parse_line("-n many SELECT 1")


def test_result_summary_counts_rows_and_time() -> None:
    shown = ResultTable(["id"], [["1"], ["2"]], truncated=True, total_rows=25, seconds=0.5,
                        statements=3)
    assert shown.summary() == "showing the first 2 of 25 rows · 3 statements · 0.50 s"
    assert '<p class="hudisql-summary">showing the first 2 of 25 rows' in shown._repr_html_()
    assert ResultTable(["n"], [["7"]], False, 1).summary() == "1 row"
    assert ResultTable([], [], False, seconds=1.25).summary() == "OK · 1.25 s"
    assert repr(ResultTable([], [], False)) == "OK"


def test_parse_error_view_highlights_the_token() -> None:
    script = "SELECT 1;\nSHOW TIMELINE trips LIMIT many"
    with pytest.raises(SqlParseError) as caught:
        parse_script(script)
    view = error_view(caught.value, script)
    assert view.error_class == "SqlParseError" and view.message.startswith("line 2, column")
    assert view.span is not None
    assert script[view.span[0]:view.span[1]] == "many"
    html = view._repr_html_()
    assert '<mark class="hudisql-error-at">many</mark>' in html
    assert "  1 </span>SELECT 1;" in html
    assert repr(view).endswith("SHOW TIMELINE trips LIMIT many\n" + " " * 30 + "^^^^")


def test_error_view_at_the_end_of_the_script_marks_the_missing_token() -> None:
    script = "SELECT 1;\nSHOW TIMELINE"
    with pytest.raises(SqlParseError) as caught:
        parse_script(script)
    view = error_view(caught.value, script)
    assert view.span == (len(script), len(script))
    assert 'SHOW TIMELINE<mark class="hudisql-error-at">&nbsp;</mark>' in view._repr_html_()


def test_long_cells_show_only_the_lines_around_the_error() -> None:
    script = "\n".join(f"SELECT {n};" for n in range(50)) + "\nSELECT FROM WHERE"
    view = ErrorView("X", "bad", script, (script.rindex("FROM"), script.rindex("FROM") + 4))
    html = view._repr_html_()
    assert " 51 </span>SELECT <mark" in html and " 49 </span>" in html
    assert "  1 </span>" not in html


def test_bad_magic_options_render_as_an_error() -> None:
    from hudisql.magic import HudiMagics

    view = HudiMagics(shell=None).hudisql("-n many SELECT 1")
    assert isinstance(view, ErrorView) and view.message.startswith("-n many")


@pytest.mark.spark
def test_cell_magic_renders_escaped_html_and_stores_the_frame(ipython: InteractiveShell) -> None:
    result = ipython.run_cell(
        "%%hudisql -o df -n 2\n"
        "CREATE TABLE magic_t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey = 'id');\n"
        "INSERT INTO magic_t VALUES (1, '<b>&'), (2, NULL), (3, 'c');\n"
        "SELECT id, v FROM magic_t ORDER BY id")
    table = result.result
    assert isinstance(table, ResultTable)
    html = table._repr_html_()
    assert "<th>id</th><th>v</th>" in html
    assert "<td>1</td><td>&lt;b&gt;&amp;</td>" in html and "<b>&" not in html
    assert "<td>2</td><td>NULL</td>" in html
    assert "<td>3</td>" not in html and "showing the first 2 of 3 rows · 3 statements" in html
    assert table.seconds is not None and table.seconds > 0
    stored = ipython.user_ns["df"]
    assert isinstance(stored, DataFrame) and stored.count() == 3
    line = ipython.run_cell("%hudisql SELECT count(*) AS n FROM magic_t").result
    assert isinstance(line, ResultTable) and line.rows == [["3"]] and not line.truncated
    assert line.total_rows == 1 and line.statements == 1
    assert "| n |\n+---+\n| 3 |" in repr(line) and repr(line).endswith(" s")


@pytest.mark.spark
def test_errors_render_with_the_failing_statement_highlighted(ipython: InteractiveShell) -> None:
    cell = "SELECT 1;\nSELECT 2;\nSELECT id, nope FROM range(1)"
    view = ipython.run_cell("%%hudisql\n" + cell).result
    assert isinstance(view, ErrorView)
    assert view.error_class == "AnalysisException" and view.statement == 3
    assert view.message.startswith("[UNRESOLVED_COLUMN") and "\n" not in view.message
    assert view.span is not None and cell[view.span[0]:view.span[1]] == "nope"
    assert '<mark class="hudisql-error-at">nope</mark>' in view._repr_html_()
    assert "in statement 3" in view._repr_html_()
    # A hudisql error without a Spark position highlights its whole statement.
    cell = "SELECT 1;\nSHOW TIMELINE no_such_table"
    view = ipython.run_cell("%%hudisql\n" + cell).result
    assert isinstance(view, ErrorView) and view.error_class == "TableNotFoundError"
    assert view.span is not None and cell[view.span[0]:view.span[1]] == (
        "SHOW TIMELINE no_such_table")
    # A parse error runs nothing: the first statement's table is not created.
    view = ipython.run_cell("%%hudisql\nCREATE TABLE never_t (id INT) USING parquet;\n"
                            "SHOW TIMELINE").result
    assert isinstance(view, ErrorView) and view.error_class == "SqlParseError"
    assert not ipython.user_ns["s"].spark.catalog.tableExists("never_t")
