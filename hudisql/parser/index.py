"""CREATE / DROP / SHOW / REFRESH INDEX, in Apache Hudi's grammar (``HoodieSqlCommon.g4``).

The vocabulary of index types, expression functions and index options is here too, so the
SQL statements and the Python API (``handle.indexes.create(...)``) check a definition the
same way (:func:`index_spec_problem`); what needs the table (column names, record key
fields) is checked when the statement runs.
"""

from __future__ import annotations

import typing as t

from sqlglot.tokenizer_core import Token, TokenType

from hudisql.parser.commands import (
    CreateIndex,
    DropIndex,
    IndexColumn,
    RefreshIndex,
    ShowIndexes,
)
from hudisql.parser.ddl import parse_properties

if t.TYPE_CHECKING:
    from hudisql.parser.parser import HudiParser

CREATE_INDEX_FORM = (
    "CREATE INDEX [IF NOT EXISTS] name ON [TABLE] t [USING column_stats | bloom_filters] "
    "(col [OPTIONS(...)], ...) [OPTIONS(...)]"
)
DROP_INDEX_FORM = "DROP INDEX [IF EXISTS] name ON [TABLE] t"
SHOW_INDEXES_FORM = "SHOW INDEXES (FROM | IN) [TABLE] t"
REFRESH_INDEX_FORM = "REFRESH INDEX name ON [TABLE] t"

#: The index types USING accepts (lower case); no USING means a record or secondary index.
INDEX_TYPES: tuple[str, ...] = ("column_stats", "bloom_filters")

#: The functions of an expression index (option ``expr``), as Hudi's
#: ``ExpressionIndexSparkFunctions`` names them; ``identity`` is the plain column.
EXPRESSION_FUNCTIONS: tuple[str, ...] = (
    "identity", "date_format", "day", "month", "year", "hour", "from_unixtime",
    "unix_timestamp", "to_date", "to_timestamp", "date_add", "date_sub", "substring", "upper",
    "lower", "trim", "ltrim", "rtrim", "length", "regexp_replace", "regexp_extract", "split",
)

#: Index options Hudi knows (``HoodieExpressionIndex``), lower-cased; ``hoodie.*`` keys pass.
INDEX_OPTIONS: tuple[str, ...] = (
    "expr", "format", "days", "pos", "len", "pattern", "replacement", "idx", "trimstring",
    "filtertype", "numentries", "fpp", "maxentries",
)


def index_spec_problem(
    using: str | None, columns: t.Sequence[str], options: t.Mapping[str, str]
) -> tuple[str, str | None] | None:
    """What is wrong with an index definition, before looking at the table.

    Returns:
        None when it is well formed, else (message, the option key it is about or None).
    """
    if using is not None and using not in INDEX_TYPES:
        return (f"unknown index type {using!r} after USING; hudisql builds USING "
                f"{' | '.join(INDEX_TYPES)} (an expression index), and a record or "
                "secondary index without USING", None)
    if not columns:
        return "an index needs at least one column", None
    lowered = {c.lower() for c in columns}
    if len(lowered) != len(columns):
        return "a column is listed twice; list each column once", None
    for key in options:
        if key.lower() not in INDEX_OPTIONS and not key.lower().startswith("hoodie."):
            return (f"unknown index option {key!r}; the options are "
                    f"{', '.join(INDEX_OPTIONS)}, or a 'hoodie.*' key", key)
    expr = next((v for k, v in options.items() if k.lower() == "expr"), None)
    if expr is not None:
        if using is None:
            return ("option expr makes an expression index: add USING column_stats or USING "
                    "bloom_filters", "expr")
        if expr.lower() not in EXPRESSION_FUNCTIONS:
            return (f"unknown expression function {expr!r} in option expr; use one of "
                    f"{', '.join(EXPRESSION_FUNCTIONS)}", "expr")
    identity = (expr or "identity").lower() == "identity"
    # Identity column stats take many columns; identity bloom filters the (composite)
    # record key; the service checks what the table needs.
    if using is not None and len(columns) != 1 and not identity:
        return (f"a {using} index with expression {expr or 'identity'} covers exactly one "
                "column; create one index per column", None)
    return None


def _index_and_table(p: HudiParser, form: str) -> tuple[str, t.Any]:
    name = p.parse_identifier(f"the index name ({form})")
    p.expect_words("ON", what=form)
    p.match_words("TABLE")
    return name, p.parse_table_name(f"the table name ({form})")


def _options(p: HudiParser, what: str) -> tuple[dict[str, str], dict[str, Token]]:
    entries = parse_properties(p, what)
    options: dict[str, str] = {}
    tokens: dict[str, Token] = {}
    for key, value, token in entries:
        if key.lower() in {k.lower() for k in options}:
            raise p.error(f"option {key} is given twice; give it once", token)
        options[key] = value
        tokens[key] = token
    return options, tokens


def parse_create_index(p: HudiParser) -> CreateIndex:
    """``CREATE INDEX [IF NOT EXISTS] name ON [TABLE] t [USING type] (col [OPTIONS], ...)
    [OPTIONS(...)]``.

    Raises:
        SqlParseError: a malformed statement, an unknown index type, option or expression
            function, a column listed twice, or conflicting options.
    """
    start = p._tokens[0]
    if_not_exists = p.match_words("IF", "NOT", "EXISTS")
    name, table = _index_and_table(p, CREATE_INDEX_FORM)
    using, using_token = None, None
    if p.match_words("USING"):
        using_token = p._curr
        using = p.parse_identifier(f"an index type after USING ({CREATE_INDEX_FORM})").lower()
    p.expect_token(TokenType.L_PAREN, "(", f"to open the indexed columns ({CREATE_INDEX_FORM})")
    columns: list[IndexColumn] = []
    tokens: dict[str, Token] = {}
    column_tokens: list[Token] = []
    while True:
        column_tokens.append(p._curr)
        column_name = ".".join(p.parse_dotted_name("a column name to index"))
        col_options: dict[str, str] = {}
        if p.match_words("OPTIONS"):
            col_options, found = _options(p, f"the options of column {column_name}")
            tokens.update(found)
        columns.append(IndexColumn(column_name, col_options))
        if not p._match(TokenType.COMMA):
            break
    p.expect_token(TokenType.R_PAREN, ")", "to close the indexed columns")
    options: dict[str, str] = {}
    if p.match_words("OPTIONS"):
        options, found = _options(p, "the index options")
        tokens.update(found)
    p.expect_end(CREATE_INDEX_FORM)
    merged = dict(options)
    for column in columns:
        for key, value in column.options.items():
            other = next((k for k in merged if k.lower() == key.lower()), None)
            if other is not None and merged[other] != value:
                raise p.error(f"option {key} is {merged[other]!r} and {value!r}; give it once",
                              tokens[key])
            merged[key] = value
    problem = index_spec_problem(using, [c.name for c in columns], merged)
    if problem is not None:
        message, option = problem
        if "twice" in message:
            seen: set[str] = set()
            for column, token in zip(columns, column_tokens, strict=True):
                if column.name.lower() in seen:
                    raise p.error(f"column {column.name} is listed twice in index {name}; "
                                  "list each column once", token)
                seen.add(column.name.lower())
        at = tokens.get(option) if option else (using_token if "USING" in message else start)
        raise p.error(f"index {name} on table {table}: {message}", at or start)
    return CreateIndex(name=name, table=table, columns=tuple(columns), using=using,
                       options=options, if_not_exists=if_not_exists)


def parse_drop_index(p: HudiParser) -> DropIndex:
    """``DROP INDEX [IF EXISTS] name ON [TABLE] t``."""
    if_exists = p.match_words("IF", "EXISTS")
    name, table = _index_and_table(p, DROP_INDEX_FORM)
    p.expect_end(DROP_INDEX_FORM)
    return DropIndex(name, table, if_exists)


def parse_show_indexes(p: HudiParser) -> ShowIndexes:
    """``SHOW INDEXES (FROM | IN) [TABLE] t``."""
    if not (p.match_words("FROM") or p.match_words("IN")):
        raise p.error(f"expected FROM or IN, found {p.describe_current()}; the form is "
                      f"{SHOW_INDEXES_FORM}")
    p.match_words("TABLE")
    table = p.parse_table_name(f"the table name ({SHOW_INDEXES_FORM})")
    p.expect_end(SHOW_INDEXES_FORM)
    return ShowIndexes(table)


def parse_refresh_index(p: HudiParser) -> RefreshIndex:
    """``REFRESH INDEX name ON [TABLE] t``."""
    name, table = _index_and_table(p, REFRESH_INDEX_FORM)
    p.expect_end(REFRESH_INDEX_FORM)
    return RefreshIndex(name, table)
