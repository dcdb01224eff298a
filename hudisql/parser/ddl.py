"""DDL statements: CREATE TABLE ... USING hudi, DROP TABLE, ALTER TABLE ADD COLUMNS / RENAME TO."""

from __future__ import annotations

import typing as t

from sqlglot.tokenizer_core import Token, TokenType

from hudisql.parser.commands import (
    AlterTableAddColumns,
    AlterTableRename,
    ColumnSpec,
    CreateTable,
    DropTable,
)

if t.TYPE_CHECKING:
    from hudisql.parser.parser import HudiParser

CREATE_FORM = (
    "CREATE TABLE [IF NOT EXISTS] t [(col type, ...)] USING hudi [PARTITIONED BY (...)] "
    "[TBLPROPERTIES (...)] [LOCATION '...'] [COMMENT '...'] [AS SELECT ...]"
)
# TBLPROPERTIES hudisql reads (lower-cased key -> field); 'hoodie.*' keys pass as options.
KNOWN_PROPERTIES = {
    "primarykey": "primaryKey",
    "precombinefield": "preCombineField",
    "type": "type",
}
TABLE_TYPES = ("cow", "mor")
_CREATE_CLAUSES = ("PARTITIONED BY", "TBLPROPERTIES", "OPTIONS", "LOCATION", "COMMENT")
_NAME_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)


def is_hudi_create(p: HudiParser) -> bool:
    """Cheap check (tokens only): does this CREATE TABLE say ``USING hudi`` at top level?"""

    def using_hudi(index: int) -> bool:
        nxt = index + 1
        return (
            p.word_at(index) == "USING"
            and nxt < p._tokens_size
            and p._tokens[nxt].token_type in _NAME_TOKENS
            and p._tokens[nxt].text.lower() == "hudi"
        )

    return p.find_at_depth0(using_hudi, frozenset({"AS", "SELECT"})) >= 0


def parse_create_table(p: HudiParser) -> CreateTable | None:
    """``CREATE TABLE ... USING hudi ...``; any other CREATE TABLE passes through (None)."""
    if not is_hudi_create(p):
        return None
    if_not_exists = p.match_words("IF", "NOT", "EXISTS")
    table = p.parse_table_name("the name of the table to create")
    columns: tuple[ColumnSpec, ...] = ()
    if p._match(TokenType.L_PAREN):
        columns = p.parse_column_specs()
        p.expect_token(TokenType.R_PAREN, ")", "to close the column list")
    p.expect_words("USING", what=CREATE_FORM)
    if not (p._curr.token_type in _NAME_TOKENS and p._curr.text.lower() == "hudi"):
        raise p.error(f"expected hudi after USING, found {p.describe_current()}")
    p._advance()
    clauses = parse_create_clauses(p)
    query = None
    if p.match_words("AS") or (p._curr and p.is_query_start()):
        query = p.rest_text("a query after AS")
    p.expect_end("CREATE TABLE")
    return build_create(p, table, columns, clauses, query, if_not_exists)


def parse_replace_table(p: HudiParser) -> CreateTable | None:
    """``[CREATE OR] REPLACE TABLE ... USING hudi`` is refused; other formats pass through."""
    if not is_hudi_create(p):
        return None
    raise p.error(
        "CREATE OR REPLACE TABLE is not supported for hudi tables; DROP TABLE the table "
        "first, then CREATE TABLE",
        p._tokens[0],
    )


def parse_create_clauses(p: HudiParser) -> dict[str, tuple[t.Any, Token]]:
    """Consume the clauses after ``USING hudi``, in any order, each at most once.

    Returns:
        Clause name -> (value, token where the clause starts).
    """
    clauses: dict[str, tuple[t.Any, Token]] = {}
    while p._curr and not p.is_query_start() and not p.peek_words("AS"):
        token = p._curr
        name = next((c for c in _CREATE_CLAUSES if p.match_words(*c.split())), None)
        if name is None:
            raise p.error(
                f"{p.describe_current()} is not supported in CREATE TABLE ... USING hudi; "
                f"the clauses are {', '.join(_CREATE_CLAUSES)}, then AS SELECT"
            )
        if name in clauses or (name in ("TBLPROPERTIES", "OPTIONS") and "properties" in clauses):
            raise p.error(f"{name} is given twice; give it once", token)
        if name == "PARTITIONED BY":
            p.expect_token(TokenType.L_PAREN, "(", "after PARTITIONED BY")
            names = [p.parse_identifier("a partition column name")]
            while p._match(TokenType.COMMA):
                names.append(p.parse_identifier("a partition column name"))
            if p._curr and p._curr.token_type not in (TokenType.COMMA, TokenType.R_PAREN):
                raise p.error(
                    "PARTITIONED BY lists column names only; define the columns' types in "
                    "the column list"
                )
            p.expect_token(TokenType.R_PAREN, ")", "to close PARTITIONED BY")
            clauses[name] = (tuple(names), token)
        elif name in ("TBLPROPERTIES", "OPTIONS"):
            clauses["properties"] = (parse_properties(p), token)
        else:
            clauses[name] = (p.parse_string(f"the {name.lower()}"), token)
    return clauses


def parse_properties(
    p: HudiParser, what: str = "the table properties"
) -> list[tuple[str, str, Token]]:
    """Consume ``(key [=] value, ...)``: keys are names, dotted names or strings.

    Returns:
        (key, value as text, token of the value) in order.
    """
    p.expect_token(TokenType.L_PAREN, "(", f"to open {what}")
    entries: list[tuple[str, str, Token]] = []
    while True:
        if p._match(TokenType.STRING):
            key = p._prev.text
        else:
            key = ".".join(p.parse_dotted_name("a property name"))
        p._match(TokenType.EQ)
        value_token = p._curr
        if p._match_set((TokenType.STRING, TokenType.NUMBER)):
            value = p._prev.text
        elif p.match_words("TRUE") or p.match_words("FALSE"):
            value = p._prev.text.lower()
        else:
            raise p.error(
                f"expected a value for property {key} (a quoted string, number, true or "
                f"false), found {p.describe_current()}"
            )
        entries.append((key, value, value_token))
        if not p._match(TokenType.COMMA):
            break
    p.expect_token(TokenType.R_PAREN, ")", f"to close {what}")
    return entries


def _check_column(p: HudiParser, names: set[str], column: str, role: str, at: Token) -> None:
    if names and column.lower() not in names:
        raise p.error(
            f"{role} column {column} is not among the table's columns "
            f"({', '.join(sorted(names))}); add it to the column list or fix the name",
            at,
        )


def build_create(
    p: HudiParser,
    table: t.Any,
    columns: tuple[ColumnSpec, ...],
    clauses: dict[str, tuple[t.Any, Token]],
    query: str | None,
    if_not_exists: bool,
) -> CreateTable:
    """Check the clauses against each other and build the :class:`CreateTable`.

    Raises:
        SqlParseError: a property is unknown or has a bad value, a key column is missing,
            or the statement has neither columns, a query nor a location.
    """
    start = p._tokens[0]
    location = clauses.get("LOCATION", (None, start))[0]
    if query is not None and columns:
        raise p.error(
            "CREATE TABLE ... AS SELECT takes its columns from the query; remove the column list",
            start,
        )
    if not columns and query is None and location is None:
        raise p.error(
            f"CREATE TABLE {table} USING hudi needs column definitions, AS SELECT, "
            "or the LOCATION of an existing hudi table",
            start,
        )
    names = {c.name.lower() for c in columns}
    partitioned, part_token = clauses.get("PARTITIONED BY", ((), start))
    for column in partitioned:
        _check_column(p, names, column, "partition", part_token)
    properties: dict[str, str] = {}
    fields: dict[str, t.Any] = {}
    for key, value, token in clauses.get("properties", ([], start))[0]:
        known = KNOWN_PROPERTIES.get(key.lower())
        if known is None and not key.startswith("hoodie."):
            raise p.error(
                f"unknown table property {key!r}; use primaryKey, preCombineField, "
                "type, or a 'hoodie.*' key",
                token,
            )
        properties[key] = value
        if known == "type":
            if value.lower() not in TABLE_TYPES:
                raise p.error(f"table type must be 'cow' or 'mor', not {value!r}", token)
            fields["table_type"] = value.lower()
        elif known == "primaryKey":
            keys = tuple(k.strip() for k in value.split(","))
            if not all(keys):
                raise p.error(f"primaryKey {value!r} has an empty column name", token)
            for column in keys:
                _check_column(p, names, column, "primaryKey", token)
            fields["primary_key"] = keys
        elif known == "preCombineField":
            _check_column(p, names, value.strip(), "preCombineField", token)
            fields["precombine_field"] = value.strip()
    return CreateTable(
        table=table,
        columns=columns,
        partitioned_by=partitioned,
        properties=properties,
        location=location,
        comment=clauses.get("COMMENT", (None, start))[0],
        if_not_exists=if_not_exists,
        query=query,
        **fields,
    )


def parse_drop_table(p: HudiParser) -> DropTable:
    """``DROP TABLE [IF EXISTS] t [PURGE]``."""
    if_exists = p.match_words("IF", "EXISTS")
    table = p.parse_table_name("the name of the table to drop")
    purge = p.match_words("PURGE")
    p.expect_end("DROP TABLE [IF EXISTS] t [PURGE]")
    return DropTable(table, if_exists, purge)


def parse_alter_table(p: HudiParser) -> AlterTableAddColumns | AlterTableRename | None:
    """``ALTER TABLE t ADD COLUMNS (...)`` / ``RENAME TO u``; other forms pass through."""
    table = p.parse_table_name("the name of the table to alter")
    if p.match_words("RENAME", "TO"):
        new_name = p.parse_table_name("the new table name after RENAME TO")
        p.expect_end("ALTER TABLE t RENAME TO u")
        return AlterTableRename(table, new_name)
    if not (p.match_words("ADD", "COLUMNS") or p.match_words("ADD", "COLUMN")):
        return None
    wrapped = p._match(TokenType.L_PAREN)
    columns = p.parse_column_specs(allow_position=True)
    if wrapped:
        p.expect_token(TokenType.R_PAREN, ")", "to close the column list")
    p.expect_end("ALTER TABLE t ADD COLUMNS (col type, ...)")
    return AlterTableAddColumns(table, columns)
