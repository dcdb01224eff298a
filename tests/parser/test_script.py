"""Script splitting: original text byte for byte, positions, and the cheap classification."""

from __future__ import annotations

import doctest
from dataclasses import dataclass
from typing import Any

import pytest
from sqlglot.dialects.dialect import Dialect

import hudisql.parser.parser
import hudisql.parser.script
from hudisql.parser import Command, Hudi, HudiParser, ShowTimeline, TableName, parse_script

# fmt: off
SPLITS: list[tuple[str, list[str]]] = [
    ("SELECT 1; SELECT 2", ["SELECT 1", "SELECT 2"]),
    ("SELECT 1;", ["SELECT 1"]),
    (";;SELECT 1;;;", ["SELECT 1"]),
    ("", []),
    ("  \n\t ", []),
    ("-- only a comment", []),
    ("/* only; a comment */;", []),
    ("SELECT 1; -- trailing; comment\n", ["SELECT 1"]),
    ("SELECT ';'; SELECT \";\"", ["SELECT ';'", 'SELECT ";"']),
    ("SELECT `a;b` FROM t; SELECT 2", ["SELECT `a;b` FROM t", "SELECT 2"]),
    ("SELECT `a``;` FROM t; SELECT 2", ["SELECT `a``;` FROM t", "SELECT 2"]),
    ("SELECT 1 -- ; no split\n; SELECT 2", ["SELECT 1 -- ; no split", "SELECT 2"]),
    ("SELECT /* ; */ 1; SELECT 2", ["SELECT /* ; */ 1", "SELECT 2"]),
    ("SELECT /* a /* ; */ ; */ 1; SELECT 2", ["SELECT /* a /* ; */ ; */ 1", "SELECT 2"]),
    ("SELECT /*+ REPARTITION(2) */ 1; SELECT 2", ["SELECT /*+ REPARTITION(2) */ 1", "SELECT 2"]),
    ("SELECT 'it\\'s;'; SELECT 2", ["SELECT 'it\\'s;'", "SELECT 2"]),
    ("SELECT 'a\\\\'; SELECT 2", ["SELECT 'a\\\\'", "SELECT 2"]),
    ("SELECT r'\\'; SELECT 2", ["SELECT r'\\'", "SELECT 2"]),
    ("SELECT 'a''b;c'; SELECT 2", ["SELECT 'a''b;c'", "SELECT 2"]),
    ("SELECT \"it's; fine\"; SELECT 2", ["SELECT \"it's; fine\"", "SELECT 2"]),
    ("-- lead\nSELECT 1", ["-- lead\nSELECT 1"]),
    ("/* lead */ SELECT 1;\n/* next */\nSELECT 2", ["/* lead */ SELECT 1", "/* next */\nSELECT 2"]),
    ("SELECT 1 /* tail */;", ["SELECT 1 /* tail */"]),
    ("SELECT 1--glued\n;", ["SELECT 1--glued"]),
    ("SELECT\n  1\n;\n\n  SELECT 2  ", ["SELECT\n  1", "SELECT 2"]),
    ("SELECT 1\r\n;\r\nSELECT 2\r\n", ["SELECT 1", "SELECT 2"]),
    ("SELECT 1 {# not a comment ; SELECT 2", ["SELECT 1 {# not a comment", "SELECT 2"]),
    ("SELECT 'héllo;' AS 日本; SELECT '🙂'", ["SELECT 'héllo;' AS 日本", "SELECT '🙂'"]),
    ("SHOW TIMELINE t; SELECT 'SHOW TIMELINE;'", ["SHOW TIMELINE t", "SELECT 'SHOW TIMELINE;'"]),
    ("CALL show_commits(table => '`a;b`')", ["CALL show_commits(table => '`a;b`')"]),
]
# fmt: on


@pytest.mark.parametrize(("script", "texts"), SPLITS, ids=[s for s, _ in SPLITS])
def test_split(script: str, texts: list[str]) -> None:
    statements = parse_script(script)
    assert [s.text for s in statements] == texts
    for s in statements:
        assert script[s.start : s.end] == s.text


# fmt: off
POSITIONS: list[tuple[str, list[tuple[int, int]]]] = [
    ("SELECT 1;\n  SELECT 2;\n\tSELECT 3", [(1, 1), (2, 3), (3, 2)]),
    ("SELECT 1; SELECT 2", [(1, 1), (1, 11)]),
    ("\n\n-- c\nSELECT 1", [(3, 1)]),
    ("SELECT 'a\nb'; SELECT 2", [(1, 1), (2, 5)]),
    ("SELECT 1;\r\nSELECT 2", [(1, 1), (2, 1)]),
]
# fmt: on


@pytest.mark.parametrize(("script", "positions"), POSITIONS, ids=[s for s, _ in POSITIONS])
def test_statement_positions(script: str, positions: list[tuple[int, int]]) -> None:
    assert [(s.line, s.column) for s in parse_script(script)] == positions


def test_hudi_dialect_is_registered_with_sqlglot() -> None:
    assert isinstance(Dialect.get_or_raise("hudi"), Hudi)
    assert Hudi.parser_class is HudiParser


class CountingParser(HudiParser):
    """Counts statements that reach the full statement parser."""

    parsed: list[str] = []

    def parse_statement(self, tokens: list[Any], script: str, parse: Any, skip: int) -> Any:
        self.parsed.append(script[tokens[0].start : tokens[-1].end + 1])
        return super().parse_statement(tokens, script, parse, skip)


def test_pass_through_statements_never_reach_the_statement_parser() -> None:
    CountingParser.parsed = []
    script = (
        "SELECT 1; SHOW TABLES; EXPLAIN SELECT 'SHOW TIMELINE t'; CREATE VIEW v AS SELECT 1;"
        "DESCRIBE t; SHOW TIMELINE t"
    )
    statements = parse_script(script, parser=CountingParser)
    assert CountingParser.parsed == ["SHOW TIMELINE t"]
    assert [s.command for s in statements][-1] == ShowTimeline(TableName(("t",)))


@dataclass(frozen=True)
class RunLogClustering(Command):
    table: TableName


def _parse_run_log_clustering(p: HudiParser) -> RunLogClustering:
    p.expect_words("ON", what="RUN LOG CLUSTERING ON <table>")
    command = RunLogClustering(p.parse_table_name("the table to cluster"))
    p.expect_end("RUN LOG CLUSTERING ON <table>")
    return command


class ExtendedParser(HudiParser):
    STATEMENTS = {**HudiParser.STATEMENTS, ("RUN", "LOG", "CLUSTERING"): _parse_run_log_clustering}


def test_a_new_statement_is_one_table_entry_and_one_command_class() -> None:
    statements = parse_script("RUN LOG CLUSTERING ON db.t; RUN LOG", parser=ExtendedParser)
    assert [s.command for s in statements] == [RunLogClustering(TableName(("db", "t"))), None]
    assert parse_script("RUN LOG CLUSTERING ON db.t")[0].command is None


@pytest.mark.parametrize("module", [hudisql.parser.parser, hudisql.parser.script])
def test_docstring_examples_run(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
