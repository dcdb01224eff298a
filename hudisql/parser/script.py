"""Scripts: split into statements (each its original text and position), then classify.

Splitting works on the hudisql tokenizer's tokens, so a ``;`` inside a string, a quoted
identifier or a comment never splits. Each statement's text is the exact slice of the
script between two semicolons, trimmed of surrounding whitespace; comments stay in it
(a comment before a statement belongs to that statement). Empty statements are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sqlglot.tokenizer_core import Token, TokenType

from hudisql.errors import SqlParseError
from hudisql.parser.commands import Command, Unparsed
from hudisql.parser.dialect import Hudi
from hudisql.parser.parser import HudiParser
from hudisql.parser.tokens import tokenize

_DIALECT = Hudi()
_WHITESPACE = " \t\r\n\f\v"


@dataclass(frozen=True)
class Statement:
    """One statement of a script.

    ``text`` is its original text, byte for byte (``script[start:start + len(text)]``);
    ``line`` and ``column`` (1-based) are where it starts; ``command`` is its hudisql
    command, or None when it passes through to Spark as ``text``.
    """

    text: str
    line: int
    column: int
    command: Command | None
    start: int

    @property
    def end(self) -> int:
        """The script offset just past the statement's text."""
        return self.start + len(self.text)


def split_tokens(script: str, tokens: list[Token]) -> Iterator[tuple[int, int, list[Token]]]:
    """Yield ``(start, end, tokens)`` per non-empty statement, whitespace trimmed off."""
    begin = 0
    current: list[Token] = []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                yield _trimmed(script, begin, token.start, current)
                current = []
            begin = token.end + 1
        else:
            current.append(token)
    if current:
        yield _trimmed(script, begin, len(script), current)


def _trimmed(
    script: str, begin: int, end: int, tokens: list[Token]
) -> tuple[int, int, list[Token]]:
    chunk = script[begin:end]
    start = begin + len(chunk) - len(chunk.lstrip(_WHITESPACE))
    return start, begin + len(chunk.rstrip(_WHITESPACE)), tokens


#: Statements whose target table decides who runs them, and the optional words between
#: their key words and the target's name.
_TARGET_DECIDED: dict[tuple[str, ...], tuple[str, ...]] = {
    ("ALTER", "TABLE"): (), ("DROP", "TABLE"): ("IF", "EXISTS"),
    ("INSERT", "INTO"): ("TABLE",), ("INSERT", "OVERWRITE"): ("TABLE",), ("UPDATE",): (),
    ("DELETE", "FROM"): (), ("MERGE", "INTO"): (),
}


def _unparsed(instance: HudiParser, segment: list[Token], text: str, key: tuple[str, ...],
              used: int, error: SqlParseError) -> Unparsed | None:
    """The statement as :class:`Unparsed` when its target table's name can be read."""
    if key not in _TARGET_DECIDED:
        return None
    optional = _TARGET_DECIDED[key]

    def target(p: HudiParser) -> Unparsed:
        if optional:
            p.match_words(*optional)
        return Unparsed(p.parse_table_name("the target table"), error)

    try:
        found = instance.parse_statement(segment, text, target, used)
    except SqlParseError:
        return None
    return found if isinstance(found, Unparsed) else None


def parse_script(text: str, parser: type[HudiParser] = HudiParser,
                 defer_target_errors: bool = False) -> list[Statement]:
    """Split ``text`` into statements and parse hudisql's own into commands.

    Args:
        text: a script of ``;``-separated statements.
        parser: the parser class (a subclass adds statements, see :class:`HudiParser`).
        defer_target_errors: a DML/DDL statement whose target table can be read but whose
            rest hudisql's grammar cannot becomes an :class:`Unparsed` command holding the
            error, instead of raising it: only the session knows whether the target is a
            hudi table (the error stands) or Spark's (the text goes to Spark).

    Returns:
        The statements in order; nothing is returned unless the whole script parses.

    Raises:
        SqlParseError: an unterminated string, quoted identifier or comment anywhere, or
            a malformed hudisql statement; the message names line and column.

    >>> for s in parse_script("SELECT ';' AS x; -- note\\nSHOW TIMELINE ON db.t LIMIT 5"):
    ...     print(s.line, s.column, repr(s.text), type(s.command).__name__)
    1 1 "SELECT ';' AS x" NoneType
    1 18 '-- note\\nSHOW TIMELINE ON db.t LIMIT 5' ShowTimeline
    """
    tokens = tokenize(Hudi.tokenizer_class(dialect=_DIALECT), text)
    statements = []
    instance: HudiParser | None = None
    # Lines are counted from the previous statement on, so a long script costs linear time.
    line, counted = 1, 0
    for start, end, segment in split_tokens(text, tokens):
        command = None
        match = parser.match_statement(segment)
        if match is not None:
            key, parse, used = match
            instance = instance or parser(dialect=_DIALECT)
            try:
                command = instance.parse_statement(segment, text, parse, used)
            except SqlParseError as error:
                deferred = (_unparsed(instance, segment, text, key, used, error)
                            if defer_target_errors else None)
                if deferred is None:
                    raise
                command = deferred
        line += text.count("\n", counted, start)
        counted = start
        column = start - text.rfind("\n", 0, start)
        statements.append(Statement(text[start:end], line, column, command, start))
    return statements
