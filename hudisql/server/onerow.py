"""Queries that read no table, answered without a Spark job.

``SELECT 1``, ``SELECT version()``, ``SELECT current_schema(), session_user`` (a tool's
keep-alive and connect-time queries, and most statements after translation of a catalog
function) select from no table. Spark plans them as a scan of its one-row relation, which
runs a job; a job waits for free cores, so behind another client's long query a
``SELECT 1`` would wait for that query's tasks to finish. Two ways around it:

- a select list of plain literals (``SELECT 1``, ``SELECT 'x' AS a``, and what the
  translation makes of ``version()`` or ``current_schema()``) is answered here, from the
  literals, with Spark's types and column names (:func:`literal_row`);
- any other select list with no FROM runs over a one-row ``VALUES`` table, which Spark's
  optimizer folds into a local relation that ``collect()`` reads on the driver with no job
  (:func:`one_row_select`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hudisql.server.sqltext import _scan

#: The one-row table a select list with no FROM is evaluated over; its column's name is
#: one no statement uses, so it can never capture a name of the client's select list.
ONE_ROW_TABLE = "VALUES (0) AS __hudisql_one_row(__hudisql_one_row_column)"

#: Words that, anywhere in the statement, mean it is not a plain select list: clauses the
#: appended FROM would have to precede, a FROM of a subquery or function, set operations.
_CLAUSES = {"FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "WINDOW",
            "UNION", "INTERSECT", "EXCEPT", "MINUS", "QUALIFY", "CLUSTER", "DISTRIBUTE",
            "SORT", "LATERAL", "INTO", "FETCH", "SELECT", "TABLESAMPLE", "PIVOT", "UNPIVOT"}
#: Generators make many rows out of one: those results must stream, not be collected.
_GENERATORS = {"EXPLODE", "EXPLODE_OUTER", "POSEXPLODE", "POSEXPLODE_OUTER", "INLINE",
               "INLINE_OUTER", "STACK", "JSON_TUPLE", "VARIANT_EXPLODE",
               "VARIANT_EXPLODE_OUTER"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def one_row_select(text: str) -> str | None:
    """``text`` over a one-row ``VALUES`` table when it is a select list with no FROM
    (and no other clause, subquery or generator); None otherwise.

    The caller runs this only after ``text`` itself analyzed without error, so the
    rewritten statement means the same (one row of the same columns) and no error of the
    client's text is ever reported against the rewritten one.
    """
    code = " ".join(text[s:e] for s, e, c in _scan(text) if c)
    words = [w.upper() for w in _WORD.findall(code)]
    if not words or words[0] != "SELECT":
        return None
    if any(w in _CLAUSES or w in _GENERATORS for w in words[1:]):
        return None
    # A newline ends a trailing line comment before the appended FROM.
    return f"{text}\nFROM {ONE_ROW_TABLE}"


@dataclass(frozen=True)
class LiteralColumn:
    """One column of a literal answer: Spark's name for it, its PostgreSQL type OID, and
    its value (None: NULL)."""

    name: str
    oid: int
    value: str | int | bool | None


_INT_MAX = 2**31 - 1
_LITERAL = r"(?:\d+|'[^'\\]*'|TRUE|FALSE|NULL)"
_IDENTIFIER = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)"
_ITEM = rf"({_LITERAL})(?:\s+(?:AS\s+)?({_IDENTIFIER}))?"
_LITERAL_SELECT = re.compile(rf"\s*SELECT\s+{_ITEM}(?:\s*,\s*{_ITEM})*\s*", re.I)
_ITEMS = re.compile(rf"(?:SELECT\s+|\s*,\s*){_ITEM}", re.I)
#: Words Spark reads as the start of a clause or an operator, never as an alias.
_NOT_ALIASES = _CLAUSES | {"AS", "AND", "OR", "NOT", "IS", "IN", "LIKE", "ILIKE", "RLIKE",
                           "REGEXP", "BETWEEN", "CASE", "WHEN", "THEN", "ELSE", "END",
                           "NULL", "TRUE", "FALSE", "DISTINCT", "ALL", "ON", "JOIN",
                           "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "ANTI",
                           "SEMI", "USING", "OVER", "DIV", "COLLATE", "ESCAPE"}


def literal_row(text: str) -> list[LiteralColumn] | None:
    """The one row ``text`` selects when it is nothing but ``SELECT`` and a list of plain
    literals (integers Spark reads as INT, strings without quotes or escapes inside,
    ``TRUE``, ``FALSE``, ``NULL``), each maybe aliased; None for anything else (which
    Spark answers). The grammar is kept this narrow so that no text Spark would refuse is
    answered here.

    Names follow Spark's: an alias as written, else the literal's own text (``1``, ``x``,
    ``true``, ``NULL``); types follow Spark's (INT as int4, STRING and NULL as text).
    """
    if len(text) > 2000 or _LITERAL_SELECT.fullmatch(text) is None:
        return None
    columns = []
    for match in _ITEMS.finditer(text.strip()):
        literal, alias = match.groups()
        column = _literal(literal)
        if column is None:
            return None
        if alias is not None:
            if not alias.startswith("`") and alias.upper() in _NOT_ALIASES:
                return None
            column = LiteralColumn(alias.strip("`"), column.oid, column.value)
        columns.append(column)
    return columns


def _literal(text: str) -> LiteralColumn | None:
    upper = text.upper()
    if text.startswith("'"):
        return LiteralColumn(text[1:-1], 25, text[1:-1])
    if upper in ("TRUE", "FALSE"):
        return LiteralColumn(upper.lower(), 16, upper == "TRUE")
    if upper == "NULL":
        return LiteralColumn("NULL", 25, None)
    value = int(text)
    return LiteralColumn(str(value), 23, value) if value <= _INT_MAX else None
