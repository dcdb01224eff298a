"""SQL by name reads each hudi table reference through its own pruned, fast DataFrame.

Spark resolves a catalog table to one relation per reference and runs the ``hudi`` data
source for every file slice; a relation's plan is reused across its scans (Spark 4.3, see
``hudisql.read.datasource``), so pushed filters cannot prune. Before a query reaches Spark,
each reference to a hudi catalog table in it is replaced, in the statement's own text, by a
DataFrame built as ``t.read(where=...)`` is (:func:`hudisql.read.frame.read_frame`): base
files alone by Spark's parquet reader, slices with log files by the data source, only the
slices that may hold rows matching the reference's own conjuncts. One DataFrame per
reference (a self-join or a union of one table gets two), made for this statement and bound
as a ``spark.sql`` DataFrame parameter (:mod:`hudisql.sql.statement_frames`, no temporary
view of hudisql's; Spark Connect resolves them with the statement's plan): nothing is
reused, so nothing is lost.

A reference's conjuncts are the conjuncts of its SELECT's ``WHERE`` and of its inner joins'
``ON`` that name only its columns (qualified by its alias, or unqualified when no other
source of the SELECT has that column), made unqualified. Never from under an OR (an OR is
taken whole or not at all), never for a table on the null-supplying side of an outer join,
and only conjuncts of columns, literals, comparisons, ``IN`` lists, ``IS [NOT] NULL``,
``LIKE``, ``BETWEEN``, ``NOT``, ``AND`` and ``OR``: the query applies them again anyway.

Left to Spark as written: time travel (already a DataFrame, :mod:`hudisql.sql.time_travel`),
names a temporary view shadows, statements other than queries and ``INSERT`` (a view
defined by the statement must not refer to the statement's own DataFrames), and text
sqlglot cannot parse.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from pyspark.errors import AnalysisException
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.scope import Scope, traverse_scope

from hudisql.errors import HudiSqlError
from hudisql.parser import commands as c
from hudisql.sql import time_travel
from hudisql.sql.names import catalog_name
from hudisql.sql.spark_tables import quote_identifier, sql_string
from hudisql.sql.statement_frames import StatementFrames

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.catalog import TableEntry, TableName
    from hudisql.sql.router import StatementContext
    from hudisql.table.table import HudiTable

#: The expression kinds a conjunct may consist of to prune a reference.
_SIMPLE = (exp.Column, exp.Identifier, exp.Literal, exp.Boolean, exp.Null, exp.Paren,
           exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Is, exp.Not,
           exp.And, exp.Or, exp.Like, exp.Between, exp.Neg)


def sql(ctx: StatementContext, text: str) -> DataFrame:
    """``spark.sql`` of the query ``text`` with time travel rewritten and each hudi table
    reference read through its own pruned DataFrame (a DataFrame parameter of the
    statement, :mod:`hudisql.sql.statement_frames`); returns the statement's DataFrame.

    Raises:
        ReadOptionError: bad time travel (names line and column).
        HudiSqlError: a table that cannot be read.
        AnalysisException: Spark cannot analyze the statement as written.
    """
    travels = StatementFrames()
    text = time_travel.rewrite(ctx, text, travels)
    tables = _HudiTables(ctx)
    references = scan_references(text, tables.columns) if ctx.entries else []
    shadowed = _temp_views(ctx, {r.name.parts[0].lower() for r in references
                                 if len(r.name.parts) == 1})
    references = [r for r in references
                  if len(r.name.parts) > 1 or r.name.parts[0].lower() not in shadowed]
    if not references:
        return travels.sql(ctx.spark, text)
    scans = StatementFrames(dict(travels.frames))
    rewritten = text
    for ref in sorted(references, key=lambda r: r.start, reverse=True):
        table = tables.open(ref.name)
        try:
            frame = _scan_frame(ctx, table, ref.where)
        except HudiSqlError:
            if ref.where is None:
                raise
            frame = _scan_frame(ctx, table, None)  # conjuncts pruning cannot read
        name = scans.add(frame)
        named = name if ref.aliased else f"{name} AS {quote_identifier(ref.name.parts[-1])}"
        rewritten = rewritten[:ref.start] + named + rewritten[ref.end + 1:]
    try:
        return scans.sql(ctx.spark, rewritten)
    except AnalysisException:
        # The statement as written: Spark's own error at the user's line and column (the
        # placeholders moved them), or its rows unpruned.
        return travels.sql(ctx.spark, text)


@dataclass(frozen=True)
class ScanReference:
    """A hudi table reference in a query: where its name is in the text (``start..end``,
    inclusive), whether the query aliased it, and its own conjuncts (SQL, unqualified)."""

    start: int
    end: int
    name: c.TableName
    aliased: bool
    where: str | None


def scan_references(text: str, columns_of: Callable[[c.TableName], set[str] | None]
                    ) -> list[ScanReference]:
    """The references to hudi tables in the query ``text`` that can read through a view.

    Args:
        columns_of: a table name's column names, lower-cased; None when it is no hudi table.

    Returns:
        One entry per reference (none for text that is not a query or ``INSERT``, or that
        sqlglot cannot parse or scope).
    """
    try:
        tree = sqlglot.parse_one(text, read="spark")
        if not isinstance(tree, exp.Query | exp.Insert):
            return []
        scopes = traverse_scope(tree)
    except (ParseError, TokenError, OptimizeError):
        return []
    out: list[ScanReference] = []
    for scope in scopes:
        if not isinstance(scope.expression, exp.Select):
            continue
        references = list(_references(scope, columns_of))
        columns = {ref.alias: ref.columns for ref in references}
        for ref in references:
            span = _span(ref.node)
            if span is None or _names_database(scope, ref):
                continue
            out.append(ScanReference(span[0], span[1], ref.name,
                                     ref.node.args.get("alias") is not None,
                                     _conjuncts(scope, ref, columns)))
    return out


class _HudiTables:
    """The statement's hudi tables by name: opened once, their columns."""

    def __init__(self, ctx: StatementContext) -> None:
        self.ctx = ctx
        self._tables: dict[TableName, HudiTable] = {}

    def entry(self, name: c.TableName) -> TableEntry | None:
        found = catalog_name(name, self.ctx.router.current_database(self.ctx.spark, [name]))
        return self.ctx.entries.get(found) if found is not None else None

    def open(self, name: c.TableName) -> HudiTable:
        from hudisql.table.table import HudiTable

        entry = self.entry(name)
        assert entry is not None
        if entry.name not in self._tables:
            self._tables[entry.name] = HudiTable.open(entry.location)
        return self._tables[entry.name]

    def columns(self, name: c.TableName) -> set[str] | None:
        if self.entry(name) is None:
            return None
        return {n.lower() for n in self.open(name).schema.names}


@dataclass(frozen=True)
class _Reference:
    """One hudi table reference among a SELECT's sources."""

    alias: str
    node: exp.Table
    name: c.TableName
    columns: set[str]


def _references(scope: Scope, columns_of: Callable[[c.TableName], set[str] | None]
                ) -> Iterator[_Reference]:
    """The hudi tables among the sources ``scope`` selects from."""
    for alias, (node, source) in scope.selected_sources.items():
        if not isinstance(source, exp.Table) or node is not source:
            continue
        if source.args.get("version") is not None or not source.name:
            continue
        name = c.TableName(tuple(p.name for p in source.parts))
        columns = columns_of(name)
        if columns is not None:
            yield _Reference(alias.lower(), source, name, columns)


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


def _temp_views(ctx: StatementContext, names: set[str]) -> set[str]:
    """The ``names`` (one-part, lower-cased) that are temporary views of the session: they
    shadow catalog names in Spark. Spark is asked only when there are names."""
    if not names:
        return set()
    # One SHOW VIEWS of just these names (``*`` and ``|`` in a name only widen the
    # pattern): a catalog look-up per name costs more (it resolves the table).
    pattern = sql_string("|".join(sorted(names)))
    rows = ctx.spark.sql(f"SHOW VIEWS LIKE {pattern}").collect()
    return names & {str(r["viewName"]).lower() for r in rows if r["isTemporary"]}


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
    """The aliases of ``select``'s sources on the null-supplying side of an outer join (all
    of them when a source is one this reading does not place)."""
    out: set[str] = set()
    seen: list[str] = []
    from_ = select.args.get("from_")
    if from_ is not None:
        seen.extend(_aliases(from_.this))
    for join in select.args.get("joins") or []:
        joined = _aliases(join.this)
        side = (join.side or "").upper()
        kind = (join.kind or "").upper()
        if kind in ("SEMI", "ANTI"):
            continue  # not a source of the SELECT's rows (sqlglot does not select it)
        if side in ("LEFT", "FULL"):
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


def _scan_frame(ctx: StatementContext, table: HudiTable, where: str | None) -> DataFrame:
    """``table`` read with only the slices that may hold rows matching ``where`` (the
    reference's own conjuncts, which the statement applies to the rows itself)."""
    from hudisql.read.frame import read_frame

    return read_frame(ctx.spark, table, ctx.session.options, where=where, filter_rows=False)
