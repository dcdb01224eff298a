"""DML statements: INSERT INTO|OVERWRITE, UPDATE, DELETE FROM, MERGE INTO.

Each keeps the target's name and the pieces the write pipeline hands to Spark as their
original text. Forms hudisql does not model (``INSERT OVERWRITE DIRECTORY``, ``INSERT ...
REPLACE WHERE``, ``INSERT ... WITH (options)``) return None and pass through to Spark.
"""

from __future__ import annotations

import typing as t

from sqlglot.tokenizer_core import TokenType

from hudisql.parser.commands import (
    Assignment,
    Delete,
    Insert,
    Merge,
    MergeClause,
    Update,
)

if t.TYPE_CHECKING:
    from hudisql.parser.parser import HudiParser

MERGE_FORM = (
    "MERGE INTO t [AS a] USING <table | (query)> [AS s] ON <condition> "
    "WHEN [NOT] MATCHED [AND <condition>] THEN <action> ..."
)


def parse_insert_into(p: HudiParser) -> Insert | None:
    """``INSERT INTO [TABLE] t ...``."""
    return parse_insert_target(p, overwrite=False, cte="")


def parse_insert_overwrite(p: HudiParser) -> Insert | None:
    """``INSERT OVERWRITE [TABLE] t ...``; ``INSERT OVERWRITE [LOCAL] DIRECTORY`` passes."""
    if _writes_directory(p):
        return None
    return parse_insert_target(p, overwrite=True, cte="")


def _writes_directory(p: HudiParser) -> bool:
    return p.peek_words("DIRECTORY") or p.peek_words("LOCAL", "DIRECTORY")


def parse_with(p: HudiParser) -> Insert | None:
    """``WITH ... INSERT INTO|OVERWRITE t SELECT ...``; a plain WITH query passes through."""
    index = p.find_at_depth0(lambda i: p.word_at(i) == "INSERT", frozenset())
    if index < 0:
        return None
    cte = p.text_between(0, index - 1)
    p._retreat(index + 1)
    if p.match_words("INTO"):
        return parse_insert_target(p, overwrite=False, cte=cte)
    if p.match_words("OVERWRITE") and not _writes_directory(p):
        return parse_insert_target(p, overwrite=True, cte=cte)
    return None


def parse_insert_target(p: HudiParser, overwrite: bool, cte: str) -> Insert | None:
    """Parse from the optional ``TABLE`` keyword to the end; ``cte`` prefixes the query."""
    p.match_words("TABLE")
    table = p.parse_table_name("the name of the table to insert into")
    if p.peek_words("WITH") or p.peek_words("REPLACE"):
        return None
    partition: list[tuple[str, str | None]] = []
    if p.match_words("PARTITION"):
        p.expect_token(TokenType.L_PAREN, "(", "after PARTITION")
        while True:
            column = p.parse_identifier("a partition column name")
            value = p.parse_expression_text("a partition value") if p._match(TokenType.EQ) else None
            partition.append((column, value))
            if not p._match(TokenType.COMMA):
                break
        p.expect_token(TokenType.R_PAREN, ")", "to close PARTITION (...)")
    if_not_exists = p.match_words("IF", "NOT", "EXISTS")
    columns: list[str] = []
    by_name = p.match_words("BY", "NAME")
    if not by_name and p._curr.token_type == TokenType.L_PAREN and not _paren_query(p):
        p._advance()
        columns.append(p.parse_identifier("a column name"))
        while p._match(TokenType.COMMA):
            columns.append(p.parse_identifier("a column name"))
        p.expect_token(TokenType.R_PAREN, ")", "to close the column list")
    if p._curr and not p.is_query_start():
        raise p.error(
            f"expected the query to insert (SELECT ..., VALUES ..., TABLE t), found "
            f"{p.describe_current()}"
        )
    query = p.rest_text("the query to insert (SELECT ..., VALUES ...)")
    return Insert(
        table=table,
        query=f"{cte}\n{query}" if cte else query,
        overwrite=overwrite,
        columns=tuple(columns),
        by_name=by_name,
        partition=tuple(partition),
        if_not_exists=if_not_exists,
    )


def _paren_query(p: HudiParser) -> bool:
    """True when the ``(`` at the current token opens a query rather than a column list."""
    return p.word_at(p._index + 1) in ("SELECT", "WITH", "VALUES", "FROM", "TABLE") or (
        p._index + 1 < p._tokens_size and p._tokens[p._index + 1].token_type == TokenType.L_PAREN
    )


def parse_assignments(p: HudiParser, what: str) -> tuple[Assignment, ...]:
    """Consume ``col = value [, ...]`` (columns may be qualified, ``t.a`` or ``a.b``)."""
    assignments = []
    while True:
        column = ".".join(p.parse_dotted_name(f"a column to set in {what}"))
        p.expect_token(TokenType.EQ, "=", f"after column {column} in {what}")
        assignments.append(Assignment(column, p.parse_expression_text(f"the value of {column}")))
        if not p._match(TokenType.COMMA):
            return tuple(assignments)


def parse_update(p: HudiParser) -> Update:
    """``UPDATE t [[AS] a] SET col = value, ... [WHERE condition]``."""
    table = p.parse_table_name("the name of the table to update")
    alias = p.parse_optional_alias("SET")
    p.expect_words("SET", what="UPDATE t SET col = value, ... [WHERE condition]")
    assignments = parse_assignments(p, "UPDATE ... SET")
    where = p.parse_expression_text("the WHERE condition") if p.match_words("WHERE") else None
    p.expect_end("UPDATE t SET col = value, ... [WHERE condition]")
    return Update(table, assignments, alias, where)


def parse_delete(p: HudiParser) -> Delete:
    """``DELETE FROM t [[AS] a] [WHERE condition]``."""
    table = p.parse_table_name("the name of the table to delete from")
    alias = p.parse_optional_alias("WHERE")
    where = p.parse_expression_text("the WHERE condition") if p.match_words("WHERE") else None
    p.expect_end("DELETE FROM t [WHERE condition]")
    return Delete(table, alias, where)


def parse_merge(p: HudiParser) -> Merge:
    """``MERGE INTO t [[AS] a] USING source [[AS] s] ON condition WHEN ...``."""
    table = p.parse_table_name("the name of the table to merge into")
    alias = p.parse_optional_alias("USING")
    p.expect_words("USING", what=MERGE_FORM)
    if p._curr.token_type == TokenType.L_PAREN:
        source = p.skip_parenthesized("the source query")
    else:
        first = p._index
        p.parse_table_name("the source table or (query) after USING")
        source = p.text_between(first, p._index - 1)
    source_alias = p.parse_optional_alias("ON")
    p.expect_words("ON", what=MERGE_FORM)
    on = p.parse_expression_text("the ON condition")
    clauses = []
    while p._curr:
        start = p._curr
        clauses.append((parse_merge_clause(p), start))
    if not clauses:
        raise p.error(f"MERGE needs at least one WHEN clause; the form is {MERGE_FORM}")
    for index, (clause, start) in enumerate(clauses):
        later = any(other.kind == clause.kind for other, _ in clauses[index + 1 :])
        if clause.condition is None and later:
            # Spark's rule too: an unconditional clause would make the later ones unreachable.
            raise p.error(
                "only the last WHEN clause of its kind may omit its AND condition; add a "
                "condition or move this clause last",
                start,
            )
    return Merge(table, source, on, tuple(c for c, _ in clauses), alias, source_alias)


def parse_merge_clause(p: HudiParser) -> MergeClause:
    """Consume one ``WHEN [NOT] MATCHED [BY SOURCE|TARGET] [AND cond] THEN action``."""
    start = p._curr
    p.expect_words("WHEN", what=MERGE_FORM)
    kind: t.Literal["matched", "not_matched", "not_matched_by_source"] = "matched"
    if p.match_words("NOT"):
        kind = "not_matched"
    p.expect_words("MATCHED", what=MERGE_FORM)
    if kind == "not_matched" and p.match_words("BY", "SOURCE"):
        kind = "not_matched_by_source"
    elif kind == "not_matched":
        p.match_words("BY", "TARGET")
    condition = p.parse_expression_text("the clause condition") if p.match_words("AND") else None
    p.expect_words("THEN", what=MERGE_FORM)
    action_token = p._curr
    if kind == "not_matched":
        p.expect_words("INSERT", what="WHEN NOT MATCHED THEN INSERT * | INSERT (cols) VALUES (...)")
        clause = parse_merge_insert(p, condition)
    elif p.match_words("DELETE"):
        clause = MergeClause(kind, "delete", condition)
    elif p.match_words("UPDATE", "SET"):
        if p._match(TokenType.STAR):
            clause = MergeClause(kind, "update", condition, star=True)
        else:
            clause = MergeClause(kind, "update", condition, parse_assignments(p, "UPDATE SET"))
    else:
        raise p.error(
            f"expected UPDATE SET ... or DELETE after THEN, found {p.describe_current()}",
            action_token if action_token else None,
        )
    if clause.star and kind == "not_matched_by_source":
        raise p.error("WHEN NOT MATCHED BY SOURCE cannot UPDATE SET *; name the columns", start)
    return clause


def parse_merge_insert(p: HudiParser, condition: str | None) -> MergeClause:
    """Consume ``* | (cols) VALUES (values)`` after ``THEN INSERT``."""
    if p._match(TokenType.STAR):
        return MergeClause("not_matched", "insert", condition, star=True)
    opener = p.expect_token(TokenType.L_PAREN, "(", "to open the INSERT column list")
    columns = [".".join(p.parse_dotted_name("a column name"))]
    while p._match(TokenType.COMMA):
        columns.append(".".join(p.parse_dotted_name("a column name")))
    p.expect_token(TokenType.R_PAREN, ")", "to close the INSERT column list")
    p.expect_words("VALUES", what="THEN INSERT (cols) VALUES (values)")
    p.expect_token(TokenType.L_PAREN, "(", "to open the VALUES list")
    values = [p.parse_expression_text("a value")]
    while p._match(TokenType.COMMA):
        values.append(p.parse_expression_text("a value"))
    p.expect_token(TokenType.R_PAREN, ")", "to close the VALUES list")
    if len(values) != len(columns):
        raise p.error(
            f"INSERT names {len(columns)} columns but gives {len(values)} values; give one "
            "value per column",
            opener,
        )
    return MergeClause(
        "not_matched",
        "insert",
        condition,
        insert_columns=tuple(columns),
        insert_values=tuple(values),
    )
