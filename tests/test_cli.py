"""The ``hudisql`` command: a shell through a real pseudo-terminal, -e and -f as subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from hudisql.cli import cell, format_table, parse_args, statement_complete

REPO = Path(__file__).resolve().parents[1]
STARTUP = 240  # seconds: a fresh SparkSession on a shared 2-core machine


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "HUDISQL_CONFIG",
                                                         "HUDISQL_CATALOG_URL")}
    env.update(HOME=str(tmp_path), HUDISQL_HISTORY=str(tmp_path / "history"),
               PYTHONPATH=str(REPO))
    return env


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hudisql.cli", "--warehouse", str(tmp_path / "wh"), *args],
        cwd=tmp_path, env=env_for(tmp_path), capture_output=True, text=True, timeout=STARTUP)


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        ("SELECT 1;", True),
        ("SELECT 1", False),
        ("SELECT ';", False),  # the string is still open
        ("SELECT ';'", False),
        ("SELECT 1 -- note;", False),
        ("SELECT 1 /* ; */", False),
        ("SELECT 1; SELECT 2;", True),
        ("SELECT 'a\nb';", True),
        ("/* open\n;", False),
    ],
)
def test_statement_complete(text: str, complete: bool) -> None:
    assert statement_complete(text) is complete


def test_tables_and_cells() -> None:
    assert format_table(["id", "name"], [["1", "a"], ["22", "NULL"]]) == (
        "+----+------+\n| id | name |\n+----+------+\n| 1  | a    |\n| 22 | NULL |\n"
        "+----+------+\n")
    assert [cell(v) for v in (None, True, b"\x01\xff", 1.5)] == ["NULL", "true", "X'01FF'", "1.5"]


def test_bad_arguments_exit_with_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(["--conf", "novalue"])
    assert exc.value.code == 2
    assert "--conf 'novalue' is not KEY=VALUE" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["-e", "SELECT 1", "-f", "x.sql"])
    args = parse_args(["--conf", "spark.sql.shuffle.partitions=3", "--conf", "a.b=c=d"])
    assert args.conf == {"spark.sql.shuffle.partitions": "3", "a.b": "c=d"}


def test_missing_file_exits_with_1(tmp_path: Path) -> None:
    proc = run(tmp_path, "-f", str(tmp_path / "none.sql"))
    assert proc.returncode == 1
    assert "Error: cannot read" in proc.stderr


@pytest.mark.slow
def test_a_script_that_does_not_parse_fails_before_spark_starts(tmp_path: Path) -> None:
    result = run(tmp_path, "-e", "SELECT 1;\nSHOW TIMELINE ON;")
    assert result.returncode == 1
    assert "line 2, column 17: SHOW TIMELINE needs a table name" in result.stderr
    assert "log4j" not in result.stderr and "Spark" not in result.stderr  # no JVM was started
    assert not (tmp_path / "wh").exists()


def test_execute_prints_tables_and_timing(tmp_path: Path) -> None:
    proc = run(tmp_path, "--conf", "spark.sql.shuffle.partitions=2", "-e",
               "CREATE TABLE t (id INT, v STRING) USING hudi TBLPROPERTIES (primaryKey='id'); "
               "INSERT INTO t VALUES (1, 'a'), (2, NULL); SELECT id, v FROM t ORDER BY id; "
               "SET spark.sql.shuffle.partitions")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| id | v    |\n+----+------+\n| 1  | a    |\n| 2  | NULL |\n" in proc.stdout
    assert "| spark.sql.shuffle.partitions | 2     |" in proc.stdout
    assert proc.stderr.count("Time taken: ") == 4
    assert "Fetched 2 row(s)" in proc.stderr
    assert (tmp_path / "wh" / "t" / ".hoodie" / "hoodie.properties").exists()


@pytest.mark.slow
def test_file_stops_at_the_first_error_with_status_1(tmp_path: Path) -> None:
    script = tmp_path / "script.sql"
    script.write_text("-- a comment; with a semicolon\nSELECT 'x;y' AS s;\n\n"
                      "SELECT nope\nFROM range(1);\nSELECT 'never' AS n;\n")
    proc = run(tmp_path, "-f", str(script))
    assert proc.returncode == 1
    assert "| x;y |" in proc.stdout
    assert "never" not in proc.stdout
    assert "Error: [UNRESOLVED_COLUMN" in proc.stderr
    assert "(statement at line 4, column 1 of the script)" in proc.stderr
    assert "SQLQueryContextLogger" not in proc.stderr  # no JSON log on top of the error
    parse_error = run(tmp_path, "-e", "SELECT 1; SHOW TIMELINE")
    assert parse_error.returncode == 1
    assert "line 1, column 24: SHOW TIMELINE needs a table name" in parse_error.stderr
    assert "| 1 |" not in parse_error.stdout  # nothing ran


@pytest.mark.slow
def test_interactive_shell_through_a_pseudo_terminal(tmp_path: Path) -> None:
    shell = pexpect.spawn(
        sys.executable, ["-m", "hudisql.cli", "--warehouse", str(tmp_path / "wh"),
                         "--conf", "hudisql.progress.display=terminal"],  # CI would turn it off
        cwd=str(tmp_path), env=env_for(tmp_path), encoding="utf-8", timeout=STARTUP,
        dimensions=(40, 200))
    try:
        shell.expect_exact("hudisql> ")
        shell.sendline("SELECT 1 AS a,")
        shell.expect_exact("       > ")
        shell.sendline("  'x;y' AS b;")
        shell.expect(r"\| a \| b   \|\r\n\+---\+-----\+\r\n\| 1 \| x;y \|")
        shell.expect(r"Time taken: [0-9.]+ seconds, Fetched 1 row\(s\)")
        shell.expect_exact("hudisql> ")
        shell.sendline("SELECT nope;")
        shell.expect_exact("Error: [UNRESOLVED_COLUMN")
        shell.expect_exact("hudisql> ")
        shell.sendline("SHOW TIMELINE;")
        shell.expect_exact("SHOW TIMELINE needs a table name")
        shell.expect_exact("hudisql> ")
        # A write shows its progress on one line, rewritten in place, erased at the end.
        shell.sendline("CREATE TABLE p (id INT) USING hudi TBLPROPERTIES (primaryKey='id');")
        shell.expect_exact("hudisql> ")
        shell.sendline("INSERT INTO p VALUES (1), (2);")
        shell.expect(r"\r\x1b\[K\w+ p · step 1/3 staging records · [0-9.]+ s")
        shell.expect(r"\r\x1b\[K\w+ p · step 2/3 writing file slices · [0-9]+/[0-9]+ slices")
        shell.expect(r"\r\x1b\[K\w+ p · step 3/3 committing")
        shell.expect(r"\r\x1b\[K\+-+\+\r\n\| num_affected_rows")  # erased, then the result
        shell.expect_exact("Time taken: ")
        shell.expect_exact("hudisql> ")
        shell.sendline("exit;")
        shell.expect(pexpect.EOF)
    finally:
        shell.close()
    assert shell.exitstatus == 0
    history = (tmp_path / "history").read_text()
    assert "SELECT nope;" in history and "  'x;y' AS b;" in history


def test_demo_takes_its_own_arguments(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "hudisql.cli", "demo", "--help"],
                          cwd=tmp_path, env=env_for(tmp_path), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: hudisql demo") and "--fresh" in proc.stdout
