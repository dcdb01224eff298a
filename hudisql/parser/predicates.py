"""SQL predicate text (Spark's dialect) to the conjuncts data-skipping indexes can use.

``rider = 'x' AND fare >= 10 AND city IN ('sf', 'la') AND note IS NOT NULL`` gives one
:class:`Predicate` per usable conjunct: ``col op literal`` in either orientation (``=``,
``<=>`` with a non-null literal, ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``), ``IN (...)``
of literals, ``IS [NOT] NULL``, ``col LIKE 'abc%'`` (``starts_with``; ``LIKE 'abc'``
without wildcards is ``=``) and ``startswith(col, 'abc')``, over back-quoted or plain
column names, through nested ANDs and parentheses. Every other conjunct (OR, NOT,
functions of columns, qualified or nested names, subqueries) is left out: it prunes
nothing, and the caller applies the whole filter to the rows anyway.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from hudisql.errors import SqlParseError

#: The operators a :class:`Predicate` may have.
OPERATORS = ("=", "<", "<=", ">", ">=", "in", "is_null", "is_not_null", "starts_with")


@dataclass(frozen=True)
class Predicate:
    """One conjunct of a filter: ``column op values`` (``values`` holds one literal for the
    comparisons and ``starts_with``, the list for ``in``, nothing for the null tests)."""

    column: str
    op: str
    values: tuple[Any, ...] = ()

    def __str__(self) -> str:
        if self.op in ("is_null", "is_not_null"):
            return f"{self.column} {self.op.replace('_', ' ').upper()}"
        if self.op == "in":
            return f"{self.column} IN ({', '.join(repr(v) for v in self.values)})"
        if self.op == "starts_with":
            return f"startswith({self.column}, {self.values[0]!r})"
        return f"{self.column} {self.op} {self.values[0]!r}"


__all__ = ["OPERATORS", "Predicate", "parse_predicates"]

_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=", exp.NullSafeEQ: "=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
}
#: Top-level statements that are not predicates.
_STATEMENTS = tuple(getattr(exp, name) for name in (
    "Query", "Create", "Drop", "Insert", "Update", "Delete", "Merge", "Command", "Alter",
    "Use", "Set", "Describe", "Show", "Cache", "Uncache", "Refresh") if hasattr(exp, name))
_INTEGER = re.compile(r"^\d+$")
_DECIMAL = re.compile(r"^(\d+\.\d*|\.\d+)$")
_ZONED = re.compile(r"(Z|[+-]\d{2}:?\d{2})$")
_INTEGER_TYPES = {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT,
                  exp.DataType.Type.BIGINT}
_FLOAT_TYPES = {exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE}
_TIMESTAMP_TYPES = {exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ,
                    exp.DataType.Type.TIMESTAMPLTZ, exp.DataType.Type.TIMESTAMPNTZ}
_EXAMPLE = "rider = 'rider-A' AND fare >= 10"
_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*\.(\w+)'>")


class _NoValue:
    """The marker of an expression that is not a literal this module reads."""


_NOT_LITERAL: Any = _NoValue()


def parse_predicates(text: str) -> list[Predicate]:
    """The conjuncts of a SQL predicate that indexes can use (see the module docstring).

    Raises:
        SqlParseError: ``text`` is empty, does not parse, or is a statement rather than a
            predicate; the message names the text, line and column.
    """
    expression = _parse(text)
    out: list[Predicate] = []
    _conjuncts(expression, out)
    return out


def _parse(text: str) -> exp.Expression:
    if not text or not text.strip():
        raise SqlParseError(f"the filter is empty; give a SQL predicate such as {_EXAMPLE}")
    try:
        parsed = sqlglot.parse(text, read="spark")
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        line, column = first.get("line"), first.get("col")
        why = _readable(str(first.get("description") or "it does not parse"))
        raise SqlParseError(
            f"filter {text!r} is not a SQL predicate: {why} at line {line}, column {column}; "
            f"write it as a WHERE clause's condition, such as {_EXAMPLE}", line, column,
        ) from None
    except TokenError as exc:
        raise SqlParseError(
            f"filter {text!r} is not a SQL predicate: {exc}; check its quotes, such as "
            f"{_EXAMPLE}") from None
    statements = [p for p in parsed if p is not None]
    if len(statements) != 1 or isinstance(statements[0], _STATEMENTS):
        what = "several statements" if len(statements) > 1 else "a statement"
        raise SqlParseError(
            f"filter {text!r} is {what}, not a predicate; give one condition, such as "
            f"{_EXAMPLE}", 1, 1)
    found = statements[0]
    assert isinstance(found, exp.Expression)
    return found


def _readable(description: str) -> str:
    """sqlglot's "Required keyword: 'expression' missing for <class '...LT'>" in words."""
    found = _MISSING.search(description)
    if found is None:
        return description
    return f"an operand of {found.group(2).upper()} is missing"


def _conjuncts(node: exp.Expression, out: list[Predicate]) -> None:
    if isinstance(node, exp.Paren):
        _conjuncts(node.this, out)
    elif isinstance(node, exp.And):
        _conjuncts(node.this, out)
        _conjuncts(node.expression, out)
    else:
        out.extend(_predicates(node))


def _column(node: exp.Expression | None) -> str | None:
    """The name of an unqualified column (``a`` or ```a b```); None for anything else."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier):
        return str(node.this.this)
    return None


def _predicates(node: exp.Expression) -> list[Predicate]:
    """The predicates one conjunct stands for ([] when it prunes nothing)."""
    if type(node) in _COMPARISONS:
        return _comparison(node, _COMPARISONS[type(node)])
    if isinstance(node, exp.Between):
        column = _column(node.this)
        low, high = _literal(node.args.get("low")), _literal(node.args.get("high"))
        if column is None:
            return []
        return [Predicate(column, op, (v,)) for op, v in ((">=", low), ("<=", high))
                if v is not _NOT_LITERAL and v is not None]
    if isinstance(node, exp.In):
        return _in(node)
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        column = _column(node.this)
        return [Predicate(column, "is_null")] if column is not None else []
    if isinstance(node, exp.Not) and isinstance(node.this, exp.Is) and isinstance(
            node.this.expression, exp.Null):
        column = _column(node.this.this)
        return [Predicate(column, "is_not_null")] if column is not None else []
    if isinstance(node, exp.Like):
        return _like(node)
    if isinstance(node, exp.StartsWith):
        column, prefix = _column(node.this), _literal(node.expression)
        if column is not None and isinstance(prefix, str):
            return [Predicate(column, "starts_with", (prefix,))]
    return []


def _comparison(node: exp.Expression, op: str) -> list[Predicate]:
    left, right = node.this, node.expression
    column, value = _column(left), _literal(right)
    if column is None:
        column, value, op = _column(right), _literal(left), _FLIPPED[op]
    if column is None or value is _NOT_LITERAL or value is None:
        return []  # column-to-column, functions, or ``= NULL`` (never true: kept simple)
    return [Predicate(column, op, (value,))]


def _in(node: exp.In) -> list[Predicate]:
    column = _column(node.this)
    if column is None or node.args.get("query") is not None or node.args.get("unnest"):
        return []
    values = [_literal(v) for v in node.expressions]
    if not values or any(v is _NOT_LITERAL for v in values):
        return []
    present = tuple(dict.fromkeys(v for v in values if v is not None))
    # NULL in the list never matches; an all-NULL list is left to the caller's filter.
    return [Predicate(column, "in", present)] if present else []


def _like(node: exp.Like) -> list[Predicate]:
    column, pattern = _column(node.this), _literal(node.expression)
    if column is None or not isinstance(pattern, str) or "\\" in pattern:
        return []
    stem = pattern.rstrip("%")
    if "%" in stem or "_" in stem:
        return []
    if stem == pattern:
        return [Predicate(column, "=", (pattern,))]
    return [Predicate(column, "starts_with", (stem,))] if stem else []


def _number(text: str) -> Any:
    if _INTEGER.match(text):
        return int(text)
    if _DECIMAL.match(text):
        return Decimal(text)
    try:
        return float(text)
    except ValueError:
        return _NOT_LITERAL


def _literal(node: exp.Expression | None) -> Any:
    """The Python value of a literal (None for NULL), or ``_NOT_LITERAL``."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        return str(node.this) if node.is_string else _number(str(node.this))
    if isinstance(node, exp.Neg):
        inner = _literal(node.this)
        if isinstance(inner, int | float | Decimal) and not isinstance(inner, bool):
            return -inner
        return _NOT_LITERAL
    if isinstance(node, exp.Cast | exp.TryCast):
        return _typed(node)
    return _NOT_LITERAL


def _typed(node: exp.Cast) -> Any:
    """``DATE '...'``, ``TIMESTAMP '...'``, ``1L``, ``1.5BD``, ``CAST(<literal> AS <type>)``."""
    inner = node.this
    if not isinstance(inner, exp.Literal):
        return _NOT_LITERAL
    text = str(inner.this).strip()
    kind = node.to.this
    try:
        if kind == exp.DataType.Type.DATE:
            return dt.date.fromisoformat(text) if len(text) == 10 else _NOT_LITERAL
        if kind in _TIMESTAMP_TYPES:
            moment = dt.datetime.fromisoformat(text)
            zoned = _ZONED.search(text) is not None
            return moment if zoned or moment.tzinfo is None else _NOT_LITERAL
        if kind in _INTEGER_TYPES and _INTEGER.match(text.lstrip("-")):
            return int(text)
        if kind in _FLOAT_TYPES:
            return float(text)
        if kind == exp.DataType.Type.DECIMAL:
            return Decimal(text)
        if kind in (exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT) and inner.is_string:
            return text
    except (ValueError, InvalidOperation):
        return _NOT_LITERAL
    return _NOT_LITERAL
