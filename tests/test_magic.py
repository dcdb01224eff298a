"""The %hudisql / %%hudisql magics in a real IPython shell (IPython's InteractiveShell)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from pyspark.sql import DataFrame, SparkSession

import hudisql
from hudisql.catalog import SqlCatalog
from hudisql.errors import HudiSqlError
from hudisql.magic import DEFAULT_ROWS, Options, ResultTable, parse_line


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
    assert "<td>3</td>" not in html and "showing the first 2 rows" in html
    stored = ipython.user_ns["df"]
    assert isinstance(stored, DataFrame) and stored.count() == 3
    line = ipython.run_cell("%hudisql SELECT count(*) AS n FROM magic_t").result
    assert isinstance(line, ResultTable) and line.rows == [["3"]] and not line.truncated
    assert "| n |\n+---+\n| 3 |" in repr(line)


@pytest.mark.spark
def test_errors_print_one_readable_line(
    ipython: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ipython.run_cell("%hudisql SELECT nope FROM range(1)").result is None
    err = capsys.readouterr().err.strip()
    assert err.startswith("AnalysisException: [UNRESOLVED_COLUMN")
    assert "\n" not in err
    assert ipython.run_cell("%%hudisql\nSELECT 1;\nSHOW TIMELINE").result is None
    err = capsys.readouterr().err.strip()
    assert err.startswith("SqlParseError: line 2, column 14: SHOW TIMELINE needs")
    assert "\n" not in err
