"""Which tables a statement names (no Spark needed)."""

from __future__ import annotations

import pytest

from hudisql.catalog import TableName
from hudisql.parser import commands as c
from hudisql.parser import parse_script
from hudisql.sql.names import catalog_name, command_tables, statement_tables


def parts(text: str) -> list[tuple[str, ...]]:
    return sorted(n.parts for n in statement_tables(text))


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1", []),
        ("SELECT * FROM t JOIN db.u ON t.a = u.a", [("db", "u"), ("t",)]),
        ("WITH c AS (SELECT * FROM src) SELECT * FROM c, t", [("src",), ("t",)]),
        ("SELECT * FROM spark_catalog.db.t", [("spark_catalog", "db", "t")]),
        ("SELECT /*+ BROADCAST(t) */ * FROM t TABLESAMPLE (10 PERCENT)", [("t",)]),
        ("SELECT * FROM `we;ird`.`na me`", [("we;ird", "na me")]),
        ("INSERT INTO p SELECT * FROM t WHERE x IN (SELECT y FROM q)", [("p",), ("q",), ("t",)]),
        ("DESCRIBE TABLE EXTENDED db.t", [("db", "t")]),
        ("CACHE TABLE t", [("t",)]),
        # sqlglot reads these as opaque commands: the token scan finds the name.
        ("SHOW COLUMNS IN db.t", [("db", "t")]),
        ("SHOW TBLPROPERTIES t", [("t",)]),
        ("SHOW PARTITIONS default.t", [("default", "t")]),
        ("DESCRIBE EXTENDED db.t c", [("db", "t")]),
        ("SELECT 'FROM x' AS s", []),
        ("SELECT * FROM range(10)", []),
    ],
)
def test_statement_tables(sql: str, expected: list[tuple[str, ...]]) -> None:
    assert parts(sql) == expected


def test_unreadable_text_yields_what_the_token_scan_finds() -> None:
    assert parts("SELECT * FROM t WHERE ((") == [("t",)]
    assert parts("'unterminated") == []


def test_catalog_names() -> None:
    assert catalog_name(c.TableName(("t",)), "sales") == TableName("sales", "t")
    assert catalog_name(c.TableName(("db", "t")), "sales") == TableName("db", "t")
    assert catalog_name(c.TableName(("spark_catalog", "db", "t")), "x") == TableName("db", "t")
    assert catalog_name(c.TableName(("other", "db", "t")), "x") is None


def test_command_tables() -> None:
    rename = parse_script("ALTER TABLE a RENAME TO db.b")[0].command
    assert rename is not None
    assert [n.parts for n in command_tables(rename)] == [("a",), ("db", "b")]
    timeline = parse_script("SHOW TIMELINE '/x/y'")[0].command
    assert timeline is not None
    assert command_tables(timeline) == []
