"""The hudisql parser: Spark's sqlglot parser plus a table of hudisql statements.

A statement is ours when its leading words match a key of :attr:`HudiParser.STATEMENTS`
(a trie lookup over at most a few tokens, so pass-through statements never reach the
full parser). The entry's function then parses the rest with the helpers below, which
wrap sqlglot's own sub-parsers (names, types, expressions) and keep SQL fragments as
their original text. A function may still return None ("not ours after all", e.g.
``CREATE TABLE ... USING parquet``), and the statement passes through to Spark.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokenizer_core import Token, TokenType
from sqlglot.trie import new_trie

from hudisql.errors import SqlParseError
from hudisql.parser.commands import ColumnSpec, Command, TableName
from hudisql.parser.position import error_at
from hudisql.parser.statements import STATEMENTS

StatementParser = t.Callable[["HudiParser"], Command | None]
"""Parses one hudisql statement, the parser standing just after its key words."""

# Tokens whose text is delimited source text (strings, quoted names): never a keyword.
_LITERAL_TOKENS = SparkParser.TEXT_MATCH_EXCLUDED_TOKENS | {TokenType.STRING}
_QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "FROM", "TABLE", "MAP", "REDUCE"})
_NAME_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER})


def words_of(token: Token) -> list[str]:
    """Return the upper-cased words of a keyword-like token (``PARTITIONED BY`` is two)."""
    if token.token_type in _LITERAL_TOKENS:
        return []
    return token.text.upper().split()


class HudiParser(SparkParser):
    """Spark's parser extended with hudisql's statements (see :attr:`STATEMENTS`).

    Adding a statement is one entry here (or in a subclass) and one command class:

    >>> from dataclasses import dataclass
    >>> from hudisql.parser import Command, TableName, parse_script
    >>> @dataclass(frozen=True)
    ... class RunLogCompaction(Command):
    ...     table: TableName
    >>> def parse_run_log_compaction(p: HudiParser) -> RunLogCompaction:
    ...     p.expect_words("ON", what="RUN LOG COMPACTION ON <table>")
    ...     command = RunLogCompaction(p.parse_table_name("the table to compact"))
    ...     p.expect_end("RUN LOG COMPACTION")
    ...     return command
    >>> class MyParser(HudiParser):
    ...     STATEMENTS = {**HudiParser.STATEMENTS,
    ...                   ("RUN", "LOG", "COMPACTION"): parse_run_log_compaction}
    >>> parse_script("RUN LOG COMPACTION ON db.t", parser=MyParser)[0].command
    RunLogCompaction(table=TableName(parts=('db', 't')))
    """

    STATEMENTS: t.ClassVar[dict[tuple[str, ...], StatementParser]] = STATEMENTS
    STATEMENT_TRIE: t.ClassVar[dict[t.Any, t.Any]] = new_trie(STATEMENTS)

    def __init_subclass__(cls, **kwargs: t.Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.STATEMENT_TRIE = new_trie(cls.STATEMENTS)

    # -- dispatch ------------------------------------------------------------------------

    @classmethod
    def match_statement(
        cls, tokens: list[Token]
    ) -> tuple[tuple[str, ...], StatementParser, int] | None:
        """Find the statement whose key words lead ``tokens`` (longest key wins).

        Returns:
            ``(key, parse function, number of tokens the key spans)``, or None for a
            statement that passes through to Spark.
        """
        node = cls.STATEMENT_TRIE
        words: list[str] = []
        best = None
        for used, token in enumerate(tokens, start=1):
            parts = words_of(token)
            for word in parts:
                node = node.get(word)  # type: ignore[assignment]
                if node is None:
                    return best
            words.extend(parts)
            if not parts:
                return best
            if 0 in node:
                key = tuple(words)
                best = (key, cls.STATEMENTS[key], used)
        return best

    def parse_statement(
        self, tokens: list[Token], script: str, parse: StatementParser, skip: int
    ) -> Command | None:
        """Run ``parse`` over one statement's ``tokens`` (offsets into ``script``).

        Raises:
            SqlParseError: the statement is malformed; the error points into ``script``.
        """
        self.reset()
        self.sql = script
        self._tokens = [tok for tok in tokens if tok.token_type != TokenType.HINT]
        self._tokens_size = len(self._tokens)
        self._index = -1
        self._advance(1 + skip)
        try:
            return parse(self)
        except ParseError as exc:
            description = exc.errors[0].get("description") if exc.errors else str(exc)
            raise self.error(f"cannot parse this statement ({description})") from None

    # -- positions and errors ------------------------------------------------------------

    def offset(self) -> int:
        """The script offset of the current token, or just past the statement at its end."""
        if self._curr:
            return self._curr.start
        return self._tokens[-1].end + 1 if self._tokens else 0

    def error(self, message: str, token: Token | None = None) -> SqlParseError:
        """Build the error for ``message`` at ``token`` (default: the current position)."""
        offset = token.start if token is not None else self.offset()
        return error_at(self.sql, offset, message)

    def describe_current(self) -> str:
        """Name the current token for a message: ``'x'`` or ``the end of the statement``."""
        if not self._curr:
            return "the end of the statement"
        return repr(self.sql[self._curr.start : self._curr.end + 1])

    def text_between(self, first: int, last: int) -> str:
        """Return the original text from token index ``first`` through ``last``."""
        return self.sql[self._tokens[first].start : self._tokens[last].end + 1]

    def rest_text(self, what: str) -> str:
        """Consume and return the text from the current token to the statement's end.

        Raises:
            SqlParseError: nothing is left, naming ``what`` was expected.
        """
        if not self._curr:
            raise self.error(f"expected {what}")
        first = self._index
        self._advance(self._tokens_size - self._index)
        return self.text_between(first, self._tokens_size - 1)

    # -- words ---------------------------------------------------------------------------

    def at_end(self) -> bool:
        """True when every token of the statement is consumed."""
        return not self._curr

    def peek_words(self, *words: str) -> bool:
        """True when the next tokens spell ``words`` (nothing is consumed)."""
        index = self._index
        matched = self.match_words(*words)
        self._retreat(index)
        return matched

    def match_words(self, *words: str) -> bool:
        """Consume the next tokens if they spell ``words`` exactly; else consume nothing."""
        index = self._index
        i = 0
        while i < len(words):
            parts = words_of(self._curr) if self._curr else []
            if not parts or tuple(words[i : i + len(parts)]) != tuple(parts):
                self._retreat(index)
                return False
            i += len(parts)
            self._advance()
        return True

    def expect_words(self, *words: str, what: str) -> None:
        """Consume ``words``.

        Raises:
            SqlParseError: they are not next; ``what`` shows the expected form.
        """
        if not self.match_words(*words):
            raise self.error(
                f"expected {' '.join(words)} here, found {self.describe_current()}; "
                f"the form is {what}"
            )

    def expect_end(self, statement: str) -> None:
        """Raise unless every token is consumed.

        Raises:
            SqlParseError: pointing at the first unexpected token.
        """
        if self._curr:
            raise self.error(
                f"unexpected {self.describe_current()} in {statement}; remove it or "
                "check the statement's form"
            )

    def expect_token(self, token_type: TokenType, text: str, what: str) -> Token:
        """Consume a token of ``token_type`` (shown as ``text`` in the error) and return it.

        Raises:
            SqlParseError: the next token is something else.
        """
        if not self._match(token_type):
            raise self.error(f"expected {text} {what}, found {self.describe_current()}")
        return self._prev

    # -- names and literals --------------------------------------------------------------

    def parse_identifier(self, what: str) -> str:
        """Consume one identifier (plain, a non-reserved keyword, or back-quoted).

        Raises:
            SqlParseError: no identifier is next.
        """
        node = self._parse_id_var(any_token=False)
        if not isinstance(node, exp.Identifier):
            raise self.error(f"expected {what}, found {self.describe_current()}")
        return node.name

    def parse_dotted_name(self, what: str) -> tuple[str, ...]:
        """Consume ``a.b.c`` (each part an identifier) and return its parts."""
        parts = [self.parse_identifier(what)]
        while self._match(TokenType.DOT):
            parts.append(self.parse_identifier(what))
        return tuple(parts)

    def parse_table_name(self, what: str) -> TableName:
        """Consume a table name such as ``t``, ``db.t`` or ```my db`.`t```."""
        return TableName(self.parse_dotted_name(what))

    def parse_optional_alias(self, *stop_words: str) -> str | None:
        """Consume ``[AS] alias`` if present; a word in ``stop_words`` is never an alias."""
        if self.match_words("AS"):
            return self.parse_identifier("an alias after AS")
        token = self._curr
        # Spark takes non-reserved keywords as aliases too (``t first``); sqlglot knows which.
        named = token.token_type in _NAME_TOKENS or token.token_type in self.ID_VAR_TOKENS
        if token and named and token.text.upper() not in stop_words:
            return self.parse_identifier("an alias")
        return None

    def parse_string(self, what: str) -> str:
        """Consume a string literal and return its value.

        Raises:
            SqlParseError: the next token is not a quoted string.
        """
        if not self._match_set((TokenType.STRING, TokenType.RAW_STRING)):
            raise self.error(f"expected {what} as a quoted string, found {self.describe_current()}")
        return self._prev.text

    def parse_count(self, what: str) -> int:
        """Consume a whole number >= 0 (a LIMIT), rejecting signs, fractions and words.

        Raises:
            SqlParseError: naming ``what`` and what was found instead.
        """
        token = self._curr
        if token and token.token_type == TokenType.NUMBER and token.text.isdigit():
            self._advance()
            return int(token.text)
        found = self.describe_current()
        if token and token.token_type == TokenType.DASH and self._next:
            found = repr(self.sql[token.start : self._next.end + 1])
        raise self.error(f"{what} must be a whole number of 0 or more, found {found}")

    def is_query_start(self) -> bool:
        """True when the current token starts a query (``SELECT``, ``VALUES``, ``(``...)."""
        if self._curr.token_type == TokenType.L_PAREN:
            return True
        words = words_of(self._curr) if self._curr else []
        return bool(words) and words[0] in _QUERY_STARTS

    # -- SQL fragments -------------------------------------------------------------------

    def parse_expression_text(self, what: str) -> str:
        """Consume one boolean or scalar expression and return its original text.

        sqlglot's Spark expression parser decides where the expression ends (so commas,
        ``WHERE`` or ``WHEN`` inside parentheses and CASE never end it early).

        Raises:
            SqlParseError: no expression is there, or it is malformed.
        """
        first = self._index
        try:
            node = self._parse_disjunction()
        except ParseError:
            raise self.error(f"{what} is malformed near {self.describe_current()}") from None
        if node is None or self._index == first:
            raise self.error(f"expected {what}, found {self.describe_current()}")
        return self.text_between(first, self._index - 1)

    def skip_parenthesized(self, what: str) -> str:
        """Consume a balanced ``( ... )`` group and return its text, parentheses included.

        Raises:
            SqlParseError: the group is not opened or never closed.
        """
        opener = self.expect_token(TokenType.L_PAREN, "(", f"to open {what}")
        first = self._index - 1
        depth = 1
        while self._curr and depth:
            if self._curr.token_type == TokenType.L_PAREN:
                depth += 1
            elif self._curr.token_type == TokenType.R_PAREN:
                depth -= 1
            self._advance()
        if depth:
            raise self.error(f"the ( opening {what} is never closed", opener)
        return self.text_between(first, self._index - 1)

    def find_at_depth0(self, found: t.Callable[[int], bool], stop: frozenset[str]) -> int:
        """Scan ahead (consuming nothing) for a top-level token where ``found(index)``.

        Parentheses nest; the scan gives up at a top-level word in ``stop``.

        Returns:
            The token index, or -1.
        """
        depth = 0
        for index in range(max(self._index, 0), self._tokens_size):
            token = self._tokens[index]
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
            elif depth == 0:
                if found(index):
                    return index
                words = words_of(token)
                if words and words[0] in stop:
                    return -1
        return -1

    def word_at(self, index: int) -> str:
        """The first word of token ``index`` (empty for literals or past the end)."""
        if index >= self._tokens_size:
            return ""
        words = words_of(self._tokens[index])
        return words[0] if words else ""

    # -- column definitions --------------------------------------------------------------

    def parse_column_specs(self, allow_position: bool = False) -> tuple[ColumnSpec, ...]:
        """Consume ``col type [NOT NULL] [COMMENT '...'] [FIRST | AFTER c]`` items, by commas.

        Raises:
            SqlParseError: a type is missing or unknown, or an option is not supported.
        """
        specs: list[ColumnSpec] = []
        seen: set[str] = set()
        while True:
            start = self._curr
            spec = self.parse_column_spec(allow_position)
            if spec.name.lower() in seen:
                raise self.error(
                    f"column {spec.name} is defined twice; give each column once", start
                )
            seen.add(spec.name.lower())
            specs.append(spec)
            if not self._match(TokenType.COMMA):
                return tuple(specs)

    def parse_column_spec(self, allow_position: bool) -> ColumnSpec:
        """Consume one column definition (see :meth:`parse_column_specs`)."""
        name = ".".join(self.parse_dotted_name("a column name"))
        first = self._index
        try:
            kind = self._parse_types(check_func=False, schema=True, allow_identifiers=False)
        except ParseError:
            kind = None
        if kind is None:
            raise self.error(
                f"expected a data type for column {name} (e.g. INT, STRING, DECIMAL(10,2)), "
                f"found {self.describe_current()}"
            )
        type_text = self.text_between(first, self._index - 1)
        nullable, comment, position = True, None, None
        while self._curr and self._curr.token_type not in (TokenType.COMMA, TokenType.R_PAREN):
            if self.match_words("NOT", "NULL"):
                nullable = False
            elif self.match_words("NULL"):
                nullable = True
            elif self.match_words("COMMENT"):
                comment = self.parse_string(f"the comment of column {name}")
            elif allow_position and self.match_words("FIRST"):
                position = "FIRST"
            elif allow_position and self.match_words("AFTER"):
                position = "AFTER " + ".".join(self.parse_dotted_name("a column after AFTER"))
            else:
                raise self.error(
                    f"column option {self.describe_current()} of column {name} is not "
                    "supported here; use NOT NULL, COMMENT '...'"
                    + (", FIRST or AFTER <column>" if allow_position else "")
                )
        return ColumnSpec(name, type_text, nullable, comment, position)
