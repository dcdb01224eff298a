"""The hudisql tokenizer: Spark's, made strict about where strings and comments end.

Spark's lexer and sqlglot's differ in three ways that matter for splitting scripts, and
this module closes each gap:

- sqlglot turns ``SHOW ...``, ``CALL ...`` and a few other statements into one opaque
  string token; hudisql needs their words, so ``COMMANDS`` is empty.
- sqlglot does not report an unterminated ``/* ...`` comment as such (it fails on an
  index past the end); Spark rejects it ("Unclosed bracketed comment"), and so do we,
  naming where it opened.
- sqlglot reads ``{# ... #}`` as a Jinja comment; Spark has no such thing, and treating
  it as a comment would hide semicolons from the splitter.
"""

from __future__ import annotations

import typing as t

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenizerCore
from sqlglot.tokens import Tokenizer

from hudisql.parser.position import error_at

# Kinds of unterminated literals, by their opening character, for error messages.
_QUOTED_KINDS = {"'": "string", '"': "string", "`": "quoted identifier"}


class Unterminated(Exception):
    """A string, quoted identifier or comment opened at ``offset`` never closes."""

    def __init__(self, offset: int, kind: str, closer: str) -> None:
        super().__init__(f"unterminated {kind}")
        self.offset = offset
        self.kind = kind
        self.closer = closer


def block_comment_end(sql: str, start: int, opener: str, closer: str) -> int:
    """Return the offset just past the comment opened at ``start``, or -1 if it never closes.

    Block comments nest, as in Spark's lexer (``/* a /* b */ c */`` is one comment).
    """
    depth = 1
    pos = start + len(opener)
    while depth:
        close = sql.find(closer, pos)
        if close < 0:
            return -1
        nested = sql.find("/*", pos, close)
        if nested >= 0:
            depth += 1
            pos = nested + 2
        else:
            depth -= 1
            pos = close + len(closer)
    return pos


class StrictTokenizerCore(TokenizerCore):
    """sqlglot's tokenizer core that raises :class:`Unterminated` instead of running on."""

    __slots__ = ()

    @classmethod
    def from_core(cls, core: TokenizerCore) -> StrictTokenizerCore:
        """Return a strict core with every setting of ``core`` (built by sqlglot)."""
        strict = cls.__new__(cls)
        for name in TokenizerCore.__slots__:
            setattr(strict, name, getattr(core, name))
        strict.comments = {k: v for k, v in core.comments.items() if k != "{#"}
        return strict

    def tokenize(self, sql: str) -> list[Token]:
        """Return the tokens of ``sql``; raise :class:`Unterminated` for an open literal."""
        self.reset()
        self.sql = sql
        self.size = len(sql)
        try:
            self._scan()
        except Unterminated:
            raise
        except TokenError as exc:
            opener = sql[self._start : self._start + 1]
            kind = _QUOTED_KINDS.get(opener)
            if kind is None and str(exc).startswith("Missing"):
                kind, opener = "string", str(exc).split()[1]
            if kind is None:
                raise
            raise Unterminated(self._start, kind, opener) from exc
        except Exception as exc:  # sqlglot's own core wraps every failure the same way
            raise TokenError(f"cannot tokenize the text at offset {self._start}") from exc
        return self.tokens

    def _scan_comment(self, comment_start: str) -> bool:
        closer = self.comments.get(comment_start)
        if closer and block_comment_end(self.sql, self._start, comment_start, closer) < 0:
            raise Unterminated(self._start, "comment", closer)
        return bool(super()._scan_comment(comment_start))


class HudiTokenizer(Spark.Tokenizer):
    """Spark's tokenizer with every statement tokenized word by word and strict literals."""

    COMMANDS: t.ClassVar[set[t.Any]] = set()

    def _init_core(self) -> TokenizerCore:
        return StrictTokenizerCore.from_core(super()._init_core())


def tokenize(tokenizer: Tokenizer, script: str) -> list[Token]:
    """Return the tokens of ``script``.

    Raises:
        SqlParseError: a string, quoted identifier or comment is never closed, or a
            literal is malformed; the error points at where it starts.
    """
    try:
        return tokenizer.tokenize(script)
    except Unterminated as exc:
        raise error_at(
            script,
            exc.offset,
            f"unterminated {exc.kind}: it opens here and is never closed; "
            f"add the closing {exc.closer}",
        ) from None
    except TokenError as exc:
        core = tokenizer._core
        raise error_at(
            script, core._start, f"malformed literal ({exc.__cause__ or exc}); fix or quote it"
        ) from None
