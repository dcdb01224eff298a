"""Statement text as clients send it: splitting, ``$n`` parameters, and PostgreSQL's SQL
translated to Spark's with sqlglot.

Analysts type Spark SQL and hudisql statements; tools generate PostgreSQL SQL (``::``
casts, catalog functions, ``LIMIT ALL``). A statement that names the emulated catalog or
its functions is translated before it runs; any other runs as written, and is translated
only when Spark cannot parse it, so an analyst's text reaches Spark byte for byte.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import sqlglot
import sqlglot.errors
from sqlglot import exp

from hudisql.server.pgcatalog import (
    ARRAY_COLUMNS,
    CATALOG_TABLES,
    DATABASE,
    INFORMATION_SCHEMA,
    PG_CATALOG_OID,
    proc_oid,
    regclass_oid,
)
from hudisql.server.types import DISPLAY_NAMES, sql_string

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")
_PARAM = re.compile(r"\$(\d+)")


def _scan(text: str) -> Iterator[tuple[int, int, bool]]:
    """Yield ``(start, end, is_code)`` spans: code, or quoted text and comments."""
    i, n, code_start = 0, len(text), 0
    while i < n:
        ch = text[i]
        end = -1
        if ch in "'\"`":
            j = i + 1
            while j < n:
                if text[j] == "\\" and ch != "`":
                    j += 2
                    continue
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            end = min(j + 1, n)
        elif text.startswith("--", i):
            nl = text.find("\n", i)
            end = n if nl < 0 else nl
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            end = n if close < 0 else close + 2
        elif ch == "$":
            match = _DOLLAR_TAG.match(text, i)
            if match and not text[i + 1:i + 2].isdigit():
                close = text.find(match.group(0), match.end())
                end = n if close < 0 else close + len(match.group(0))
        if end >= 0:
            if code_start < i:
                yield code_start, i, True
            yield i, end, False
            i = code_start = end
        else:
            i += 1
    if code_start < n:
        yield code_start, n, True


def split_statements(text: str) -> list[tuple[int, str]]:
    """The ``;``-separated statements of a simple query: ``(offset, text)``, trimmed, empty
    ones dropped. ``;`` inside strings, quoted names, comments and dollar quotes never
    splits."""
    cuts = [-1]
    for start, end, code in _scan(text):
        if code:
            cuts.extend(start + m.start() for m in re.finditer(";", text[start:end]))
    cuts.append(len(text))
    pieces = []
    for a, b in itertools.pairwise(cuts):
        piece = text[a + 1:b]
        stripped = piece.strip()
        if stripped and not _only_comments(stripped):
            pieces.append((a + 1 + (len(piece) - len(piece.lstrip())), stripped))
    return pieces


def _only_comments(text: str) -> bool:
    return all(not code or not text[s:e].strip() for s, e, code in _scan(text))


def parameter_count(text: str) -> int:
    """The highest ``$n`` the statement uses (0: none)."""
    numbers = [int(m.group(1)) for s, e, code in _scan(text) if code
               for m in _PARAM.finditer(text, s, e)]
    return max(numbers, default=0)


def bind_parameters(text: str, literals: list[str]) -> str:
    """``text`` with each ``$n`` outside strings and comments replaced by ``literals[n-1]``.

    Raises:
        ValueError: a ``$n`` with no bound value.
    """
    out = []
    for start, end, code in _scan(text):
        if not code:
            out.append(text[start:end])
            continue

        def replace(match: re.Match[str]) -> str:
            number = int(match.group(1))
            if not 1 <= number <= len(literals):
                raise ValueError(f"there is no parameter ${number}: {len(literals)} bound")
            return literals[number - 1]

        out.append(_PARAM.sub(replace, text[start:end]))
    return "".join(out)


def first_words(text: str, count: int = 3) -> list[str]:
    """The first ``count`` words of the statement's code, upper-cased (comments skipped)."""
    code = " ".join(text[s:e] for s, e, c in _scan(text) if c)
    return [w.upper() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\S", code)[:count]]


_POSTGRES_MARKERS = re.compile(
    r"pg_catalog|information_schema|\bpg_[a-z_]+|::|\bversion\s*\(|current_schema|"
    r"current_database|has_\w+_privilege|format_type|\bsession_user\b|\bcurrent_user\b|"
    r"\bLIMIT\s+ALL\b|\bILIKE\b", re.IGNORECASE)


def looks_postgres(text: str) -> bool:
    """True when the statement names the emulated catalog or PostgreSQL-only syntax."""
    return any(code and _POSTGRES_MARKERS.search(text, s, e) for s, e, code in _scan(text))


@dataclass
class TranslationContext:
    """What a translation fills in: the user, database, backend id and regclass lookups."""

    user: str
    current_schema: str
    pid: int
    version: str


@dataclass(frozen=True)
class Translation:
    """PostgreSQL SQL as Spark SQL, and the emulated views it reads."""

    sql: str
    views: frozenset[str]


def translate(text: str, ctx: TranslationContext) -> Translation:
    """``text`` (PostgreSQL) as Spark SQL with the catalog functions filled in.

    Raises:
        sqlglot.errors.ParseError: the text is not PostgreSQL SQL either.
    """
    text = _quote_keyword_labels(text)
    tree: exp.Expression = sqlglot.parse_one(text, read="postgres")  # type: ignore[assignment]
    _check_nothing_dropped(text, tree)
    views: set[str] = set()
    for limit in list(tree.find_all(exp.Limit)):
        if isinstance(limit.expression, exp.Var) and limit.expression.name.upper() == "ALL":
            limit.pop()  # LIMIT ALL: no limit
    for select in list(tree.find_all(exp.Select)):
        select.set("expressions", [_named(e) for e in select.expressions])
    tree = _post_order(tree, lambda node: _rewrite(node, ctx, views))
    return Translation(tree.sql(dialect="spark"), frozenset(views))


#: ``expr AS select``: PostgreSQL takes any keyword as a column label after AS (Metabase
#: names columns ``select``, ``insert``, ``update``, ``delete``); sqlglot does not, so these
#: labels are quoted first. Only where a label ends (``,``, ``)``, FROM, the end), so
#: ``CREATE TABLE t AS SELECT ...`` is left alone.
_KEYWORD_LABEL = re.compile(
    r"\bAS(\s+)(SELECT|INSERT|UPDATE|DELETE|TABLE|FROM|WHERE|ORDER|GROUP|LIMIT|OFFSET|"
    r"UNION|ALL|ANY|CHECK|COLUMN|DEFAULT|USER|ROLE|SCHEMA|TYPE|KEY|VALUE|NAME)"
    r"(?=\s*(?:,|\)|$|\bFROM\b))", re.I)


def _quote_keyword_labels(text: str) -> str:
    pieces = []
    for start, end, code in _scan(text):
        piece = text[start:end]
        if code:
            piece = _KEYWORD_LABEL.sub(lambda m: f'AS{m.group(1)}"{m.group(2).lower()}"', piece)
        pieces.append(piece)
    return "".join(pieces)


def _words(text: str) -> list[str]:
    from sqlglot.tokenizer_core import TokenType

    skip = {TokenType.SEMICOLON}
    return [t.text.upper() for t in sqlglot.tokenize(text, read="postgres")
            if t.token_type not in skip and (t.text[:1].isalnum() or t.text[:1] == "_")]


def _check_nothing_dropped(text: str, tree: exp.Expression) -> None:
    """Refuse a parse that lost words of the text: sqlglot forgives some malformed SQL
    (``SELECT * FROM t WHERE`` parses as ``SELECT * FROM t``), which must never run.

    Raises:
        sqlglot.errors.ParseError: a word of ``text`` is missing from the parsed statement.
    """
    kept = set(_words(tree.sql(dialect="postgres")))
    lost = [w for w in _words(text) if w not in kept and w not in _EQUIVALENT_WORDS]
    if lost:
        raise sqlglot.errors.ParseError(f"the statement does not parse near {lost[0]}")


#: Words sqlglot may legitimately spell differently when it writes PostgreSQL back.
_EQUIVALENT_WORDS = {"AS", "INNER", "OUTER", "ASC", "INT", "INT4", "INT8", "INT2", "FLOAT8",
                     "FLOAT4", "BOOL", "VARCHAR", "CHARACTER", "VARYING", "INTEGER", "ALL",
                     "E", "WORK", "TRANSACTION", "TEXT", "PRECISION", "DOUBLE"}


def _post_order(node: exp.Expression,
                fun: Callable[[exp.Expression], exp.Expression]) -> exp.Expression:
    """``node`` with ``fun`` applied to every node, children first (so a rewrite sees its
    arguments already rewritten, e.g. ``x::regtype::text``)."""
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, _post_order(value, fun))
        elif isinstance(value, list):
            node.set(key, [_post_order(v, fun) if isinstance(v, exp.Expression) else v
                           for v in value])
    return fun(node)


_COLUMN_NAMES: dict[type[exp.Expression], str] = {
    exp.CurrentVersion: "version", exp.CurrentSchema: "current_schema",
    exp.CurrentSchemas: "current_schemas", exp.CurrentUser: "current_user",
    exp.SessionUser: "session_user",
}


def _named(node: exp.Expression) -> exp.Expression:
    """A function call in a select list named as PostgreSQL names its column."""
    target = node.expression if isinstance(node, exp.Dot) else node
    name = _COLUMN_NAMES.get(type(target))
    if name is None and isinstance(target, exp.Anonymous):
        name = target.name.lower()
    if name is None and isinstance(target, exp.Bracket) and type(target.this) in _COLUMN_NAMES:
        name = _COLUMN_NAMES[type(target.this)]
    return exp.alias_(node, name) if name else node  # type: ignore[return-value]


def _rewrite(node: exp.Expression, ctx: TranslationContext, views: set[str]) -> exp.Expression:
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
        name, db = node.name.lower(), node.db.lower()
        view = None
        if db in ("", "pg_catalog") and name in CATALOG_TABLES:
            view = CATALOG_TABLES[name]
        elif db == "information_schema" and name in INFORMATION_SCHEMA:
            view = INFORMATION_SCHEMA[name]
        if view is not None:
            views.add(view)
            # In place: a parenthesized join hangs its joins on the table node.
            node.set("this", exp.to_identifier(view))
            node.set("db", None)
            node.set("catalog", None)
        return node
    if isinstance(node, exp.Column) and node.args.get("db") is not None:
        db, table = node.args["db"].name.lower(), node.table.lower()
        if db in ("pg_catalog", "information_schema"):
            node.set("db", None)
            if db == "information_schema" and table in INFORMATION_SCHEMA:
                node.set("table", exp.to_identifier(INFORMATION_SCHEMA[table]))
        return node
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) \
            and node.this.name.lower() == "pg_catalog":
        expression: exp.Expression = node.expression
        return expression
    if isinstance(node, exp.Cast):
        return _cast(node, ctx)
    if isinstance(node, exp.Collate):
        collated: exp.Expression = node.this  # Spark's collations are not PostgreSQL's
        return collated
    if isinstance(node, exp.Operator):
        return _operator(node)
    if isinstance(node, (exp.EQ, exp.NEQ)):
        return _array_literals(node)
    if isinstance(node, exp.Array) and len(node.expressions) == 1 \
            and isinstance(node.expressions[0], exp.Select):
        return _array_of_subquery(node.expressions[0])
    return _function(node, ctx)


_ARRAY_TEXT = re.compile(r"^\{([^{}\"]*)\}$")


def _array_literals(node: exp.Expression) -> exp.Expression:
    """``col = '{0}'`` for an array column of the emulated catalog: PostgreSQL reads the
    array's text form; Spark needs an array (of numbers when every element is one)."""
    for side, other in (("this", "expression"), ("expression", "this")):
        value, column = node.args.get(side), node.args.get(other)
        if not (isinstance(column, exp.Column) and column.name.lower() in ARRAY_COLUMNS):
            continue  # a text column compared with text that looks like an array
        if isinstance(value, exp.Literal) and value.is_string:
            match = _ARRAY_TEXT.match(value.name)
            if match is None:
                continue
            items = [i.strip() for i in match.group(1).split(",") if i.strip()]
            numeric = all(re.fullmatch(r"-?\d+", i) for i in items)
            node.set(side, exp.Array(expressions=[
                exp.Literal.number(i) if numeric else exp.Literal.string(i) for i in items]))
    return node


def _array_of_subquery(select: exp.Select) -> exp.Expression:
    """``ARRAY(SELECT x FROM ... [ORDER BY 1])`` (psql's ``\\d``), which Spark lacks, as the
    scalar subquery ``(SELECT [array_sort](collect_list(x)) FROM ...)``. Only an order by the
    collected value itself (ascending) is kept; any other order has no Spark equivalent
    here, so the statement is left for Spark to refuse."""
    if len(select.expressions) != 1 or select.args.get("limit") or select.args.get("group"):
        return exp.Array(expressions=[select])
    item = select.expressions[0].unalias()
    collected: exp.Expression = exp.Anonymous(this="collect_list", expressions=[item.copy()])
    order = select.args.get("order")
    if order is not None:
        keys = order.expressions
        by_item = all(not k.args.get("desc") and (
            k.this == item or (isinstance(k.this, exp.Literal) and k.this.name == "1"))
            for k in keys)
        if not by_item:
            return exp.Array(expressions=[select])
        collected = exp.Anonymous(this="array_sort", expressions=[collected])
        select.set("order", None)
    select.set("expressions", [collected])
    return exp.Subquery(this=select)


_OPERATORS: dict[str, Callable[[exp.Expression, exp.Expression], exp.Expression]] = {
    "~": lambda a, b: exp.RegexpLike(this=a, expression=b),
    "~*": lambda a, b: exp.RegexpILike(this=a, expression=b),
    "!~": lambda a, b: exp.Not(this=exp.RegexpLike(this=a, expression=b)),
    "!~*": lambda a, b: exp.Not(this=exp.RegexpILike(this=a, expression=b)),
    "=": lambda a, b: exp.EQ(this=a, expression=b),
    "<>": lambda a, b: exp.NEQ(this=a, expression=b),
    "~~": lambda a, b: exp.Like(this=a, expression=b),
    "!~~": lambda a, b: exp.Not(this=exp.Like(this=a, expression=b)),
}


def _operator(node: exp.Operator) -> exp.Expression:
    """``a OPERATOR(pg_catalog.~) b`` (psql's form) as Spark's operator."""
    symbol = str(node.args.get("operator", "")).removeprefix("pg_catalog.")
    make = _OPERATORS.get(symbol)
    right = node.expression.this if isinstance(node.expression, exp.Collate) else \
        node.expression
    return make(node.this, right) if make else node


def _cast(node: exp.Cast, ctx: TranslationContext) -> exp.Expression:
    target = node.to
    name = target.sql("postgres").upper().removeprefix("PG_CATALOG.").strip('"')
    if name in _SPARK_TYPES:
        return exp.cast(node.this, _SPARK_TYPES[name])
    if name == "REGCLASS":
        if isinstance(node.this, exp.Literal) and node.this.is_string:
            text = node.this.name
            qualified = text if "." in text or text.startswith("pg_") else \
                f"{ctx.current_schema}.{text}"
            return exp.Literal.number(regclass_oid(qualified) or 0)
        return exp.cast(node.this, "INT")
    if name in ("REGPROC", "REGPROCEDURE") and isinstance(node.this, exp.Literal) \
            and node.this.is_string:
        return exp.Literal.number(proc_oid(node.this.name.split("(")[0]))
    if name in ("REGPROC", "REGPROCEDURE", "NAME", "REGNAMESPACE", "REGROLE"):
        return exp.cast(node.this, "STRING")
    if name == "REGTYPE":
        return _format_type(node.this, exp.Literal.number(-1))
    if name in ("OID", "XID", "CID", "TID"):
        return exp.cast(node.this, "BIGINT")
    return node


#: PostgreSQL type names Spark does not know, as Spark's (``::text``, ``::pg_catalog.int4``).
_SPARK_TYPES = {"TEXT": "STRING", "VARCHAR": "STRING", "NAME": "STRING", "BPCHAR": "STRING",
                "CHAR": "STRING", "CHARACTER VARYING": "STRING", "INT2": "SMALLINT",
                "INT4": "INT", "INT8": "BIGINT", "FLOAT4": "FLOAT", "FLOAT8": "DOUBLE",
                "BOOL": "BOOLEAN", "INT": "INT", "INTEGER": "INT", "SMALLINT": "SMALLINT",
                "BIGINT": "BIGINT", "BOOLEAN": "BOOLEAN", "DOUBLE PRECISION": "DOUBLE",
                "REAL": "FLOAT", "CHAR[]": "ARRAY<STRING>", "TEXT[]": "ARRAY<STRING>",
                "NAME[]": "ARRAY<STRING>", "OID[]": "ARRAY<BIGINT>", "INT2[]": "ARRAY<SMALLINT>",
                "INT4[]": "ARRAY<INT>", "INT8[]": "ARRAY<BIGINT>"}

_CONSTANT_FUNCTIONS: dict[str, Callable[[TranslationContext], exp.Expression]] = {
    "version": lambda c: exp.Literal.string(c.version),
    "current_database": lambda c: exp.Literal.string(DATABASE),
    "current_catalog": lambda c: exp.Literal.string(DATABASE),
    "current_schema": lambda c: exp.Literal.string(c.current_schema),
    "pg_backend_pid": lambda c: exp.Literal.number(c.pid),
    "pg_postmaster_start_time": lambda c: exp.CurrentTimestamp(),
    "inet_server_addr": lambda c: exp.Null(),
    "inet_server_port": lambda c: exp.Null(),
    "txid_current": lambda c: exp.Literal.number(1),
    "pg_is_in_recovery": lambda c: exp.false(),
}
_TRUE_FUNCTIONS = {"pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible"}
_NULL_FUNCTIONS = {"obj_description", "col_description", "shobj_description", "pg_get_expr",
                   "pg_get_constraintdef", "pg_get_indexdef", "pg_get_viewdef",
                   "pg_get_triggerdef", "pg_get_function_result",
                   "pg_get_function_arguments", "pg_get_partkeydef",
                   "pg_get_statisticsobjdef_columns", "pg_get_statisticsobjdef",
                   "pg_get_ruledef", "pg_get_partition_constraintdef",
                   "pg_relation_size", "pg_total_relation_size", "pg_get_serial_sequence"}


def _function(node: exp.Expression, ctx: TranslationContext) -> exp.Expression:
    if isinstance(node, exp.CurrentSchemas) or (  # pg_catalog.current_schemas(): Anonymous
            isinstance(node, exp.Anonymous) and node.name.lower() == "current_schemas"):
        schemas = ["pg_catalog", ctx.current_schema]
        return exp.Array(expressions=[exp.Literal.string(s) for s in schemas])
    if isinstance(node, exp.CurrentVersion):
        return exp.Literal.string(ctx.version)
    if isinstance(node, exp.CurrentSchema):
        return exp.Literal.string(ctx.current_schema)
    if isinstance(node, (exp.CurrentUser, exp.SessionUser)):
        return exp.Literal.string(ctx.user)
    if isinstance(node, exp.Column) and not node.table and \
            node.name.lower() in ("session_user", "current_user", "user", "current_role"):
        return exp.Literal.string(ctx.user)
    if not isinstance(node, exp.Anonymous):
        return node
    name = node.name.lower()
    args = node.expressions
    if name in _CONSTANT_FUNCTIONS:
        return _CONSTANT_FUNCTIONS[name](ctx)
    if name in _TRUE_FUNCTIONS or name.endswith("_is_visible") or (
            name.startswith("has_") and name.endswith("_privilege")):
        return exp.true()
    if name in _NULL_FUNCTIONS:
        return exp.cast(exp.Null(), "STRING")
    if name == "format_type" and len(args) == 2:
        return _format_type(args[0], args[1])
    if name == "pg_encoding_to_char":
        return exp.Literal.string("UTF8")
    if name == "pg_get_userbyid":
        return exp.Literal.string(ctx.user)
    if name in ("json_build_object", "jsonb_build_object") and len(args) % 2 == 0:
        return exp.Anonymous(this="to_json", expressions=[
            exp.Anonymous(this="named_struct", expressions=list(args))])
    if name == "array_to_string" and len(args) >= 2:
        return exp.Anonymous(this="concat_ws", expressions=[args[1], args[0]])
    if name == "array_lower" and args:
        return exp.Literal.number(1)
    if name == "array_upper" and args:
        return exp.Anonymous(this="size", expressions=[args[0]])
    if name == "pg_my_temp_schema":
        return exp.Literal.number(0)
    if name == "to_regtype":
        wanted = args[0].name.lower() if args and isinstance(args[0], exp.Literal) else ""
        found = _TYPE_OIDS.get(wanted.removeprefix("pg_catalog."))
        return exp.Literal.number(found) if found else exp.cast(exp.Null(), "INT")
    if name == "to_regclass" and args and isinstance(args[0], exp.Literal):
        return exp.Literal.number(regclass_oid(args[0].name) or 0)
    return node


def _format_type(oid: exp.Expression, typmod: exp.Expression) -> exp.Expression:
    """``format_type(oid, typmod)`` as a Spark CASE over the built-in types."""
    cases = [
        "WHEN {o} = 1700 AND {m} >= 4 THEN concat('numeric(', "
        "shiftright({m} - 4, 16), ',', ({m} - 4) & 65535, ')')",
        "WHEN {o} = 1043 AND {m} >= 4 THEN concat('character varying(', {m} - 4, ')')",
        "WHEN {o} = 1042 AND {m} >= 4 THEN concat('character(', {m} - 4, ')')",
    ]
    cases += [f"WHEN {{o}} = {oid_} THEN {sql_string(name)}"
              for oid_, name in DISPLAY_NAMES.items()]
    cases += [f"WHEN {{o}} = {t} THEN {sql_string(name + '[]')}"
              for t, name in _ARRAY_NAMES.items()]
    template = "CASE " + " ".join(cases) + " WHEN {o} IS NULL THEN NULL ELSE '???' END"
    sql = template.format(o=f"({oid.sql('spark')})", m=f"({typmod.sql('spark')})")
    parsed: exp.Expression = sqlglot.parse_one(sql, read="spark")  # type: ignore[assignment]
    return parsed


def _array_names() -> dict[int, str]:
    from hudisql.server.types import PG_TYPES

    return {t.array_oid: DISPLAY_NAMES.get(t.oid, t.name) for t in PG_TYPES}


_ARRAY_NAMES = _array_names()


def _type_oids() -> dict[str, int]:
    from hudisql.server.types import PG_TYPES

    oids = {t.name: t.oid for t in PG_TYPES}
    oids.update({DISPLAY_NAMES[t.oid]: t.oid for t in PG_TYPES if t.oid in DISPLAY_NAMES})
    oids.update({"_" + t.name: t.array_oid for t in PG_TYPES})
    oids.update({DISPLAY_NAMES.get(t.oid, t.name) + "[]": t.array_oid for t in PG_TYPES})
    return oids


_TYPE_OIDS = _type_oids()
__all__ = ["PG_CATALOG_OID", "Translation", "TranslationContext", "bind_parameters",
           "looks_postgres", "parameter_count", "split_statements", "translate"]
