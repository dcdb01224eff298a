"""SQL by name reads each hudi table reference through its own pruned, fast view.

Spark resolves a catalog table to one relation per reference and runs the ``hudi`` data
source for every file slice; a relation's plan is reused across its scans (Spark 4.3, see
``hudisql.read.datasource``), so pushed filters cannot prune. Before a query reaches Spark,
each reference to a hudi catalog table in it is replaced, in the statement's own text, by a
temporary view built as ``t.read(where=...)`` is (:func:`hudisql.read.frame.read_frame`):
base files alone by Spark's parquet reader, slices with log files by the data source, only
the slices that may hold rows matching the reference's own conjuncts. One view per reference
(a self-join or a union of one table gets two), made for this statement and dropped once
Spark analyzed it: nothing is reused, so nothing is lost.

A reference's conjuncts are the conjuncts of its SELECT's ``WHERE`` and of its inner joins'
``ON`` that name only its columns (qualified by its alias, or unqualified when no other
source of the SELECT has that column), made unqualified. Never from under an OR (an OR is
taken whole or not at all), never for a table on the null-supplying side of an outer join,
and only conjuncts of columns, literals, comparisons, ``IN`` lists, ``IS [NOT] NULL``,
``LIKE``, ``BETWEEN``, ``NOT``, ``AND`` and ``OR``: the query applies them again anyway.

Left to Spark as written: time travel (already a view, :mod:`hudisql.sql.time_travel`),
names a temporary view shadows, statements other than queries and ``INSERT`` (a view must
not refer to a dropped view), and text sqlglot cannot parse.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.optimizer.scope import Scope, traverse_scope

from hudisql.parser import commands as c
from hudisql.read.options import DATA_SKIPPING
from hudisql.sql import time_travel
from hudisql.sql.names import catalog_name
from hudisql.sql.spark_tables import quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.catalog import TableEntry
    from hudisql.sql.router import StatementContext

#: Views made for one statement are named with this prefix (and a random suffix).
VIEW_PREFIX = "hudi_scan_"
#: The expression kinds a conjunct may consist of to prune a reference.
_SIMPLE = (exp.Column, exp.Identifier, exp.Literal, exp.Boolean, exp.Null, exp.Paren,
           exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Is, exp.Not,
           exp.And, exp.Or, exp.Like, exp.Between, exp.Neg)


def sql(ctx: StatementContext, text: str) -> DataFrame:
    """``spark.sql`` of the query ``text`` with time travel rewritten and each hudi table
    reference read through its own pruned view (dropped again once Spark analyzed it).

    Raises:
        ReadOptionError: bad time travel (names line and column).
        HudiSqlError: a table that cannot be read.
    """
    text = time_travel.rewrite(ctx, text)
    edits, views = _plan(ctx, text)
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end + 1:]
    try:
        return ctx.spark.sql(text)
    finally:
        for view in views:
            ctx.spark.catalog.dropTempView(view)


@dataclass(frozen=True)
class _Reference:
    """One hudi table reference in a SELECT: its alias in the scope and catalog entry."""

    alias: str
    node: exp.Table
    entry: TableEntry


def _plan(ctx: StatementContext, text: str) -> tuple[list[tuple[int, int, str]], list[str]]:
    """The text edits (start, end inclusive, replacement) and the views they name."""
    if not ctx.entries:
        return [], []
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except (ParseError, TokenError):
        return [], []
    if not isinstance(tree, exp.Query | exp.Insert):
        return [], []
    edits: list[tuple[int, int, str]] = []
    views: list[str] = []
    shadowed: set[str] | None = None
    try:
        for scope in traverse_scope(tree):
            references = list(_references(ctx, scope))
            if any(len(r.node.parts) == 1 for r in references) and shadowed is None:
                shadowed = _temp_views(ctx)
            columns = {r.alias: _columns_of(r.entry) for r in references}
            for ref in references:
                if len(ref.node.parts) == 1 and ref.node.name.lower() in (shadowed or set()):
                    continue
                edit = _span(ref.node)
                if edit is None or _names_database(scope, ref):
                    continue
                where = _conjuncts(scope, ref, columns)
                view = _define_view(ctx, ref.entry, where)
                views.append(view)
                name = view if ref.node.args.get("alias") else (
                    f"{view} AS {quote_identifier(ref.node.name)}")
                edits.append((edit[0], edit[1], name))
    except Exception:
        for view in views:
            ctx.spark.catalog.dropTempView(view)
        raise
    return edits, views


def _references(ctx: StatementContext, scope: Scope) -> Iterator[_Reference]:
    """The hudi catalog tables among the sources ``scope`` selects from."""
    if not isinstance(scope.expression, exp.Select):
        return
    for alias, (node, source) in scope.selected_sources.items():
        if not isinstance(source, exp.Table) or node is not source:
            continue
        if source.args.get("version") is not None or not source.name:
            continue
        parts = tuple(p.name for p in source.parts)
        name = c.TableName(parts)
        found = catalog_name(name, ctx.router.current_database(ctx.spark, [name]))
        entry = ctx.entries.get(found) if found is not None else None
        if entry is not None:
            yield _Reference(alias.lower(), source, entry)


def _span(node: exp.Table) -> tuple[int, int] | None:
    """The characters of the table's name (all its parts) in the statement, or None."""
    metas = [p.meta for p in node.parts]
    if not metas or any("start" not in m or "end" not in m for m in metas):
        return None
    return min(m["start"] for m in metas), max(m["end"] for m in metas)


def _names_database(scope: Scope, ref: _Reference) -> bool:
    """True when a column of ``scope`` is qualified with the reference's database
    (``db.t.c``): the view's alias could not answer it, so the reference stays as written."""
    return any(col.args.get("db") is not None and col.table.lower() == ref.alias
               for col in scope.expression.find_all(exp.Column))


def _temp_views(ctx: StatementContext) -> set[str]:
    """The session's temporary views (lower-cased): they shadow catalog names in Spark."""
    rows = ctx.spark.sql("SHOW VIEWS").collect()
    return {str(r["viewName"]).lower() for r in rows if r["isTemporary"]}


def _columns_of(entry: TableEntry) -> set[str]:
    """The column names (lower-cased) of a hudi table, meta columns included."""
    from hudisql.table.table import HudiTable

    return {n.lower() for n in HudiTable.open(entry.location).schema.names}


def _conjuncts(scope: Scope, ref: _Reference, columns: dict[str, set[str]]) -> str | None:
    """The SQL text of ``ref``'s own conjuncts in ``scope`` (unqualified), or None."""
    select = scope.expression
    assert isinstance(select, exp.Select)
    if ref.alias in _null_supplying(select, scope):
        return None
    candidates: list[exp.Expr] = []
    where = select.args.get("where")
    if where is not None:
        candidates.extend(_split(where.this))
    for join in select.args.get("joins") or []:
        if _is_inner(join) and join.args.get("on") is not None:
            candidates.extend(_split(join.args["on"]))
    others = {a.lower() for a in scope.selected_sources} - {ref.alias}
    own = [conj for conj in candidates if _belongs(conj, ref.alias, others, columns)]
    if not own:
        return None
    texts = []
    for conj in own:
        copy = conj.copy()
        for col in copy.find_all(exp.Column):
            col.set("table", None)
        texts.append(f"({copy.sql(dialect='spark')})")
    return " AND ".join(texts)


def _split(condition: exp.Expr) -> Iterator[exp.Expr]:
    """The conjuncts of ``condition`` (ANDs split, parentheses around them removed)."""
    node = condition.unnest()
    if isinstance(node, exp.And):
        yield from _split(node.left)
        yield from _split(node.right)
    else:
        yield node


def _is_inner(join: exp.Join) -> bool:
    return not join.side and (join.kind or "INNER").upper() in ("INNER", "CROSS")


def _null_supplying(select: exp.Select, scope: Scope) -> set[str]:
    """The aliases of ``select``'s sources on the null-supplying side of an outer join (and
    of semi and anti joins, whose rows the query does not return)."""
    out: set[str] = set()
    seen: list[str] = []
    from_ = select.args.get("from_")
    if from_ is not None:
        seen.extend(_aliases(from_.this))
    for join in select.args.get("joins") or []:
        joined = _aliases(join.this)
        side = (join.side or "").upper()
        kind = (join.kind or "").upper()
        if side in ("LEFT", "FULL") or kind in ("SEMI", "ANTI"):
            out.update(joined)
        if side in ("RIGHT", "FULL"):
            out.update(seen)
        seen.extend(joined)
    known = {a.lower() for a in scope.selected_sources}
    if not set(seen) <= known:  # a source this reading does not understand: prune nothing
        return known
    return out


def _aliases(node: exp.Expr) -> list[str]:
    return [node.alias_or_name.lower()]


def _belongs(conj: exp.Expr, alias: str, others: set[str],
             columns: dict[str, set[str]]) -> bool:
    """True when ``conj`` is simple and every column in it is one of ``alias``'s."""
    if any(not isinstance(node, _SIMPLE) for node in conj.walk()):
        return False
    cols = list(conj.find_all(exp.Column))
    if not cols:
        return False
    mine = columns.get(alias)
    for col in cols:
        qualifier = col.table.lower()
        if qualifier:
            if qualifier != alias:
                return False
            continue
        # Unqualified: it must be ours and no other source's (whose columns are known).
        if mine is None or col.name.lower() not in mine:
            return False
        if any(other not in columns or col.name.lower() in columns[other] for other in others):
            return False
    return True


def _define_view(ctx: StatementContext, entry: TableEntry, where: str | None) -> str:
    """A temporary view reading ``entry``'s table pruned by ``where``; returns its name."""
    from hudisql.read.frame import read_frame
    from hudisql.table.table import HudiTable

    options = dict(ctx.session.options)
    configured = ctx.spark.conf.get(DATA_SKIPPING, None)
    if configured is not None:
        options[DATA_SKIPPING] = configured
    frame = read_frame(ctx.spark, HudiTable.open(entry.location), options, where=where)
    view = VIEW_PREFIX + uuid.uuid4().hex[:16]
    frame.createOrReplaceTempView(view)
    return view
