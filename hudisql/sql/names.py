"""Table names in statements: which tables a statement names, as catalog names.

hudisql's own commands carry their table names; a pass-through statement's names come
from sqlglot's parse of that one statement (CTE names left out). Statements sqlglot only
reads as an opaque command (``SHOW COLUMNS IN t``, ...) fall back to a token scan for the
names after ``FROM``, ``IN``, ``JOIN``, ``TABLE``, ``INTO``, ``UPDATE``, ``PARTITIONS``,
``TBLPROPERTIES`` and ``DESC[RIBE] [EXTENDED|FORMATTED]``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from hudisql.catalog import TableName
from hudisql.errors import SqlParseError
from hudisql.parser import Hudi
from hudisql.parser import commands as c
from hudisql.parser.tokens import HudiTokenizer, tokenize

#: Spark's own name for the session catalog; a three-part name in it is ``db.table``.
SESSION_CATALOG = "spark_catalog"
#: Words after which a token scan expects a table name.
_NAME_LEADERS = frozenset({"FROM", "IN", "JOIN", "TABLE", "INTO", "UPDATE", "PARTITIONS",
                           "TBLPROPERTIES", "DESC", "DESCRIBE", "EXTENDED", "FORMATTED"})
# `default` (a keyword to the tokenizer) is the usual database name.
_NAME_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER, TokenType.DEFAULT})
_DIALECT = Hudi()

# sqlglot logs a warning for every statement it falls back to reading as a Command.
logging.getLogger("sqlglot").setLevel(logging.ERROR)


def catalog_name(name: c.TableName, current_database: str) -> TableName | None:
    """The catalog name of a parsed table name; None for a name outside the session catalog."""
    parts = name.parts
    if len(parts) == 3 and parts[0].lower() == SESSION_CATALOG:
        parts = parts[1:]
    if len(parts) == 1:
        return TableName(current_database, parts[0])
    if len(parts) == 2:
        return TableName(parts[0], parts[1])
    return None


def command_tables(command: c.Command) -> list[c.TableName]:
    """The table names a hudisql command names (its target; SHOW TIMELINE's table)."""
    names: list[c.TableName] = []
    for attr in ("table", "new_name"):
        value = getattr(command, attr, None)
        if isinstance(value, c.TableName):
            names.append(value)
    return names


def statement_tables(text: str) -> list[c.TableName]:
    """The table names a pass-through statement names, each once.

    Never raises: text sqlglot cannot read yields the names a token scan finds.
    """
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except (ParseError, TokenError, ValueError):
        return _scan_tokens(text)
    if isinstance(tree, exp.Command):
        return _scan_tokens(text)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    found: list[c.TableName] = []
    for table in tree.find_all(exp.Table):
        parts = tuple(p for p in (table.catalog, table.db, table.name) if p)
        if not table.name or (len(parts) == 1 and parts[0].lower() in ctes):
            continue
        if isinstance(table.this, exp.Identifier):
            found.append(c.TableName(parts))
    return _unique(found)


def words(text: str) -> list[Token]:
    """The tokens of ``text`` word by word (no opaque command tokens); [] when unreadable."""
    try:
        return tokenize(HudiTokenizer(dialect=_DIALECT), text)
    except (SqlParseError, TokenError, ValueError):
        return []


def _scan_tokens(text: str) -> list[c.TableName]:
    tokens = words(text)
    found: list[c.TableName] = []
    i = 0
    while i < len(tokens) - 1:
        if (tokens[i].text.upper() in _NAME_LEADERS and tokens[i + 1].token_type in _NAME_TOKENS
                and tokens[i + 1].text.upper() not in _NAME_LEADERS):
            parts = [tokens[i + 1].text]
            j = i + 2
            while (j + 1 < len(tokens) and tokens[j].token_type == TokenType.DOT
                   and tokens[j + 1].token_type in _NAME_TOKENS):
                parts.append(tokens[j + 1].text)
                j += 2
            found.append(c.TableName(tuple(parts)))
            i = j
        else:
            i += 1
    return _unique(found)


def _unique(names: Iterable[c.TableName]) -> list[c.TableName]:
    seen: set[c.TableName] = set()
    out = []
    for name in names:
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out
