"""The pass-through corpus: 200+ Spark SQL statements reach Spark exactly as written.

The expected statements come from a reference splitter written here, independently of
the parser (a character scanner over Spark's lexical rules). That Spark gives the same
result for each statement through hudisql as through ``spark.sql`` alone is tested once,
through the session, in ``tests/sql/test_passthrough.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

from hudisql.parser import DropTable, parse_script

CORPUS = Path(__file__).with_name("passthrough_corpus.sql")
TEXT = CORPUS.read_text(encoding="utf-8")


def _skip_quoted(text: str, i: int) -> int:
    """Return the index just past the quoted literal opening at ``text[i]``."""
    quote = text[i]
    before = text[i - 2 : i]
    raw = quote != "`" and before[-1:] in ("r", "R") and not before[:1].isalnum()
    j = i + 1
    while j < len(text):
        escaped = text[j] == "\\" and quote != "`" and not raw
        doubled = quote == "`" and text[j : j + 2] == "``"
        if escaped or doubled:
            j += 2
        elif text[j] == quote:
            return j + 1
        else:
            j += 1
    raise AssertionError(f"unterminated literal at {i}")


def _skip_block_comment(text: str, i: int) -> int:
    depth, j = 0, i
    while True:
        if text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if not depth:
                return j
        else:
            j += 1


def reference_split(text: str) -> list[str]:
    """Split a script at top-level semicolons by Spark's lexical rules, trimming each piece."""
    pieces: list[str] = []
    start, i, has_code = 0, 0, False
    while i < len(text):
        ch = text[i]
        if ch in "'\"`":
            i, has_code = _skip_quoted(text, i), True
        elif text.startswith("--", i):
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
        elif text.startswith("/*", i):
            i = _skip_block_comment(text, i)
        elif ch == ";":
            if has_code:
                pieces.append(text[start:i].strip())
            start, i, has_code = i + 1, i + 1, False
        else:
            has_code = has_code or not ch.isspace()
            i += 1
    if has_code:
        pieces.append(text[start:].strip())
    return pieces


def test_corpus_has_at_least_200_statements() -> None:
    assert len(reference_split(TEXT)) >= 200


def test_corpus_statements_are_byte_identical_source_slices() -> None:
    statements = parse_script(TEXT)
    assert [s.text for s in statements] == reference_split(TEXT)
    for s in statements:
        assert TEXT[s.start : s.end] == s.text
        assert TEXT.count("\n", 0, s.start) + 1 == s.line
        assert s.start - (TEXT.rfind("\n", 0, s.start) + 1) + 1 == s.column


def test_corpus_statements_all_reach_spark() -> None:
    """Pass-through, or DML/DDL on a parquet table of the corpus (the session sees it is
    not a hudi table and runs the statement's text through spark.sql)."""
    created = {m.lower() for m in re.findall(r"(?i)create table (?:if not exists )?(\w+)", TEXT)}
    created |= {m.lower() for m in re.findall(r"(?i)rename to (\w+)", TEXT)}
    routed = 0
    for s in parse_script(TEXT):
        if s.command is None:
            continue
        routed += 1
        assert type(s.command).spark_fallback, s.text
        table = s.command.table  # type: ignore[attr-defined]
        if not (isinstance(s.command, DropTable) and s.command.if_exists):
            assert table.name.lower() in created, s.text
    assert routed >= 15


def _normalize(value: str, roots: tuple[str, ...]) -> str:
    for root in roots:
        value = value.replace(root, "<location>")
    return re.sub(r"#\d+L?", "#N", value)
