"""Which conjuncts prune which hudi table reference of a SQL query (Spark-free).

Each case: a query over hudi tables ``t`` (columns a, b, k) and ``u`` (columns c, k) and a
table ``p`` that is not hudi's; the expected (reference text, its own conjuncts) pairs.
"""

from __future__ import annotations

import pytest

from hudisql.parser import commands as c
from hudisql.sql.reads import scan_references

COLUMNS = {"t": {"a", "b", "k"}, "u": {"c", "k"}}


def _columns(name: c.TableName) -> set[str] | None:
    return COLUMNS.get(name.parts[-1].lower())


def refs(text: str) -> list[tuple[str, str | None]]:
    return [(text[r.start:r.end + 1], r.where) for r in scan_references(text, _columns)]


@pytest.mark.parametrize(("text", "expected"), [
    ("SELECT * FROM t", [("t", None)]),
    ("SELECT * FROM t WHERE a = 1", [("t", "(a = 1)")]),
    ("SELECT * FROM default.t WHERE t.a = 1 AND b IN ('x', 'y')",
     [("default.t", "(a = 1) AND (b IN ('x', 'y'))")]),
    ("SELECT * FROM `t` x WHERE x.a < 3 AND (x.b IS NULL OR x.a > 9)",
     [("`t`", "(a < 3) AND (b IS NULL OR a > 9)")]),
    ("SELECT * FROM t WHERE a LIKE 'r%' AND b IS NOT NULL AND NOT a = 2",
     [("t", "(a LIKE 'r%') AND (NOT b IS NULL) AND (NOT a = 2)")]),
    # OR across tables, column-to-column, functions and subqueries prune nothing.
    ("SELECT * FROM t JOIN u ON t.k = u.k WHERE t.a = 1 OR u.c = 2",
     [("t", None), ("u", None)]),
    ("SELECT * FROM t WHERE a = b AND upper(b) = 'X' AND a IN (SELECT c FROM u)",
     [("t", "(a = b)"), ("u", None)]),
    # Unqualified columns: by the tables' columns; one both tables have decides nothing.
    ("SELECT * FROM t JOIN u ON t.k = u.k WHERE a = 1 AND c = 2 AND k = 3",
     [("t", "(a = 1)"), ("u", "(c = 2)")]),
    # Inner join ON conjuncts count; a table the session does not know blocks unqualified.
    ("SELECT * FROM t JOIN u ON t.k = u.k AND u.c > 5 JOIN p ON p.z = t.k WHERE a = 1",
     [("t", None), ("u", "(c > 5)")]),
    # Outer joins: nothing for the null-supplying side, nor from an outer join's ON.
    ("SELECT * FROM t LEFT JOIN u ON t.k = u.k AND u.c = 1 WHERE u.c IS NULL AND t.a = 2",
     [("t", "(a = 2)"), ("u", None)]),
    ("SELECT * FROM t RIGHT JOIN u ON t.k = u.k WHERE t.a = 1 AND u.c = 2",
     [("t", None), ("u", "(c = 2)")]),
    ("SELECT * FROM t FULL JOIN u ON t.k = u.k WHERE t.a = 1 AND u.c = 2",
     [("t", None), ("u", None)]),
    ("SELECT * FROM t LEFT SEMI JOIN u ON t.k = u.k AND u.c = 1 WHERE t.a = 1",
     [("t", "(a = 1)")]),  # a semi join's table is read as Spark resolves it
    # A self-join and a union of one table: one reference each, each with its own.
    ("SELECT * FROM t x JOIN t y ON x.k = y.k WHERE x.a = 1 AND y.b = 'q'",
     [("t", "(a = 1)"), ("t", "(b = 'q')")]),
    ("SELECT * FROM t WHERE a = 1 UNION ALL SELECT * FROM t",
     [("t", "(a = 1)"), ("t", None)]),
    # Subqueries and CTEs: each SELECT's own WHERE; a CTE's name is not the table.
    ("WITH t AS (SELECT * FROM u WHERE c = 1) SELECT * FROM t WHERE a = 2",
     [("u", "(c = 1)")]),
    ("SELECT * FROM (SELECT * FROM t WHERE a = 1) s WHERE s.b = 2", [("t", "(a = 1)")]),
    ("SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.c = 4)",
     [("t", None), ("u", "(c = 4)")]),
    ("INSERT INTO p SELECT * FROM t WHERE a = 1", [("t", "(a = 1)")]),
    # Only queries: a view must not name a view dropped after the statement.
    ("CREATE VIEW v AS SELECT * FROM t WHERE a = 1", []),
    ("SELECT * FROM p WHERE z = 1", []),
    ("SELECT * FROM", []),
])
def test_each_reference_gets_only_its_own_conjuncts(text: str,
                                                    expected: list[tuple[str, str | None]]
                                                    ) -> None:
    assert sorted(refs(text), key=str) == sorted(expected, key=str)


def test_time_travel_and_database_qualified_columns_stay_as_written() -> None:
    assert refs("SELECT * FROM t TIMESTAMP AS OF '20250101000000000'") == []
    assert refs("SELECT default.t.a FROM default.t") == []
