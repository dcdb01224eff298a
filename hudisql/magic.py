"""IPython magics: ``%hudisql <sql>`` (line) and ``%%hudisql`` (cell) run SQL in a notebook.

Load with ``%load_ext hudisql`` (or ``%load_ext hudisql.magic``). The session used is the
last :class:`HudiSession` in the notebook's namespace, else one made by
:func:`hudisql.connect` (on the active SparkSession if there is one). The statements of a
cell run in order; the last one's result renders as an HTML table of at most ``-n`` rows
(20 by default, every value escaped) with its row count and the cell's time; ``-o name``
stores the last statement's DataFrame in ``name``. An error stops the cell and renders as
an :class:`ErrorView`: the error's class and message, and the cell's SQL with the position
at fault highlighted (the parse error's token, the fragment Spark names, else the failing
statement).
"""

from __future__ import annotations

import dataclasses
import html
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_cell_magic, magics_class

from hudisql.cli import cell as text_cell
from hudisql.cli import format_table, quiet_spark_error_logs
from hudisql.errors import HudiSqlError, SqlParseError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.parser import Statement
    from hudisql.session import HudiSession

DEFAULT_ROWS = 20
#: A cell longer than this many lines shows only the lines around an error.
ERROR_CONTEXT_LINES = 30


@dataclass(frozen=True)
class ResultTable:
    """A statement's result as a notebook shows it: columns, the first rows, how many in all.

    ``total_rows`` is the result's row count (None for a statement without columns),
    ``seconds`` how long the cell took (None: not timed), ``statements`` how many ran.
    """

    columns: list[str]
    rows: list[list[str]]
    truncated: bool
    total_rows: int | None = None
    seconds: float | None = None
    statements: int = 1

    @classmethod
    def of(cls, frame: DataFrame, limit: int) -> ResultTable:
        """The first ``limit`` rows of ``frame`` and its row count (counted only when there
        are more rows than shown: one more is fetched to tell)."""
        if not frame.columns:
            frame.collect()  # run it: a command's effect may be lazy
            return cls([], [], False)
        fetched = frame.limit(limit + 1).collect()
        rows = [[text_cell(v) for v in row] for row in fetched[:limit]]
        truncated = len(fetched) > limit
        total = frame.count() if truncated else len(fetched)
        return cls(list(frame.columns), rows, truncated, total)

    def summary(self) -> str:
        """``3 rows · 0.42 s`` (or ``showing the first 20 of 1234 rows · ...``, ``OK · ...``)."""
        if not self.columns:
            parts = ["OK"]
        elif self.truncated:
            parts = [f"showing the first {len(self.rows)} of {self.total_rows} rows"]
        else:
            n = len(self.rows) if self.total_rows is None else self.total_rows
            parts = [f"{n} row" + ("" if n == 1 else "s")]
        if self.statements > 1:
            parts.append(f"{self.statements} statements")
        if self.seconds is not None:
            parts.append(f"{self.seconds:.2f} s")
        return " · ".join(parts)

    def _repr_html_(self) -> str:
        note = f'<p class="hudisql-summary">{html.escape(self.summary())}</p>'
        if not self.columns:
            return note
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
            for row in self.rows)
        return (f'<table class="hudisql"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>{note}")

    def __repr__(self) -> str:
        if not self.columns:
            return self.summary()
        return format_table(self.columns, self.rows) + self.summary()


@dataclass(frozen=True)
class ErrorView:
    """A failed cell: the error, and the cell's SQL with ``span`` (character offsets of
    ``script``, end exclusive) highlighted; ``statement`` is the failing statement's number."""

    error_class: str
    message: str
    script: str
    span: tuple[int, int] | None = None
    statement: int | None = None

    def _shown_lines(self) -> tuple[int, int]:
        """The first and last line (0-based, inclusive) of the script to show."""
        lines = self.script.split("\n")
        if len(lines) <= ERROR_CONTEXT_LINES or self.span is None:
            return 0, len(lines) - 1
        first = self.script.count("\n", 0, self.span[0])
        last = self.script.count("\n", 0, max(self.span[0], self.span[1] - 1))
        return max(0, first - 2), min(len(lines) - 1, last + 2)

    def heading(self) -> str:
        """``<ErrorClass>: <message>`` (and where, when a statement of several failed)."""
        where = f" (statement {self.statement})" if self.statement else ""
        return f"{self.error_class}{where}: {self.message}"

    def _repr_html_(self) -> str:
        first, last = self._shown_lines()
        start, end = self.span if self.span is not None else (-1, -1)
        out: list[str] = []
        offset = 0
        for number, line in enumerate(self.script.split("\n")):
            line_start, line_end = offset, offset + len(line)
            offset = line_end + 1
            if not first <= number <= last:
                continue
            cut_from, cut_to = max(start, line_start), min(end, line_end)
            if self.span is not None and cut_from < cut_to:
                a, b = cut_from - line_start, cut_to - line_start
                text = (html.escape(line[:a]) + '<mark class="hudisql-error-at">'
                        + html.escape(line[a:b]) + "</mark>" + html.escape(line[b:]))
            elif self.span is not None and start == end == line_end and start >= line_start:
                text = html.escape(line) + '<mark class="hudisql-error-at">&nbsp;</mark>'
            else:
                text = html.escape(line)
            out.append(f'<span style="color:#888">{number + 1:>3} </span>{text}')
        listing = "\n".join(out)
        return ('<div class="hudisql-error" style="border-left:4px solid #c62828;'
                'padding:4px 8px;background:#fdecea">'
                f"<b>{html.escape(self.error_class)}</b>"
                + (f" in statement {self.statement}" if self.statement else "")
                + f": {html.escape(self.message)}"
                f'<pre style="margin:6px 0 0 0">{listing}</pre></div>')

    def __repr__(self) -> str:
        if self.span is None:
            return self.heading()
        line_start = self.script.rfind("\n", 0, self.span[0]) + 1
        line_end = self.script.find("\n", self.span[0])
        line = self.script[line_start:len(self.script) if line_end < 0 else line_end]
        width = max(1, min(self.span[1], line_start + len(line)) - self.span[0])
        pad = "".join("\t" if ch == "\t" else " " for ch in line[:self.span[0] - line_start])
        return f"{self.heading()}\n    {line}\n    {pad}{'^' * width}"


_OPTION = re.compile(r"^\s*-([on])\s+(\S+)")


@dataclass(frozen=True)
class Options:
    """A magic line's options: ``-o name`` (store the DataFrame), ``-n rows`` (rows shown)."""

    output: str | None = None
    rows: int = DEFAULT_ROWS


def parse_line(line: str) -> tuple[Options, str]:
    """Split a magic line into its leading options and the SQL after them.

    Raises:
        HudiSqlError: ``-o`` is not a Python name, or ``-n`` not a whole number >= 0.
    """
    output, rows, rest = None, DEFAULT_ROWS, line
    while match := _OPTION.match(rest):
        flag, value = match.groups()
        if flag == "o":
            if not value.isidentifier():
                raise HudiSqlError(f"-o {value}: give a Python variable name to store the result")
            output = value
        else:
            if not value.isdigit():
                raise HudiSqlError(f"-n {value}: give the number of rows to show, e.g. -n 50")
            rows = int(value)
        rest = rest[match.end():]
    return Options(output, rows), rest


def _offset(script: str, line: int, column: int) -> int:
    """The character offset of 1-based ``line`` and ``column`` in ``script``."""
    start = 0
    for _ in range(line - 1):
        found = script.find("\n", start)
        if found < 0:
            return len(script)
        start = found + 1
    return min(len(script), start + column - 1)


def _token_span(script: str, offset: int) -> tuple[int, int]:
    """The word (or the one character) at ``offset``; empty at the end of the script."""
    end = offset
    while end < len(script) and (script[end].isalnum() or script[end] == "_"):
        end += 1
    return offset, max(end, min(offset + 1, len(script)))


def _spark_fragment(exc: BaseException, statement: Statement) -> tuple[int, int] | None:
    """The statement's fragment Spark's error points at (its query context), as offsets."""
    contexts = getattr(exc, "getQueryContext", None)
    if contexts is None:
        return None
    try:
        found = contexts()
    except Exception:
        return None
    for context in found or []:
        try:
            start, stop, fragment = context.startIndex(), context.stopIndex(), context.fragment()
        except Exception:
            continue
        if 0 <= start <= stop < len(statement.text) and (
                statement.text[start:stop + 1] == fragment):
            return statement.start + start, statement.start + stop + 1
    return None


def error_view(exc: BaseException, script: str,
               statement: Statement | None = None, number: int | None = None) -> ErrorView:
    """The view of ``exc``, raised by ``statement`` (number ``number``) of ``script``."""
    message = one_line(exc).partition(": ")[2]
    span: tuple[int, int] | None = None
    if isinstance(exc, SqlParseError) and exc.line is not None and exc.column is not None:
        message = " ".join(str(exc).split("\n", 1)[0].split())  # the caret is the highlight
        span = _token_span(script, _offset(script, exc.line, exc.column))
    elif statement is not None:
        span = _spark_fragment(exc, statement) or (statement.start, statement.end)
    notes = [n for n in getattr(exc, "__notes__", []) if not n.startswith("in statement ")]
    if notes:
        message = " ".join([message, *notes])
    return ErrorView(type(exc).__name__, message, script, span, number)


@magics_class
class HudiMagics(Magics):
    """The ``%hudisql`` / ``%%hudisql`` magics."""

    _session: HudiSession | None = None

    def _namespace(self) -> dict[str, Any]:
        assert self.shell is not None, "the magics are registered with a shell"
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def session(self) -> HudiSession:
        """The last HudiSession in the user's namespace, else one this magic connects."""
        from hudisql.session import HudiSession

        found = [v for v in self._namespace().values() if isinstance(v, HudiSession)]
        if found:
            return found[-1]
        if HudiMagics._session is None:
            from pyspark.sql import SparkSession

            import hudisql

            HudiMagics._session = hudisql.connect(SparkSession.getActiveSession())
        return HudiMagics._session

    @line_cell_magic
    def hudisql(self, line: str, cell: str | None = None) -> ResultTable | ErrorView:
        """Run SQL: ``%hudisql [-o name] [-n rows] <sql>`` or a ``%%hudisql`` cell.

        Returns the last statement's result table (with row count and timing), or the
        view of the error that stopped the cell.
        """
        try:
            options, sql = parse_line(line)
        except HudiSqlError as exc:
            return error_view(exc, line)
        if cell is not None:
            sql = cell if not sql.strip() else sql + "\n" + cell
        started = time.monotonic()
        quiet_spark_error_logs()
        try:
            frame, count = self._run(sql)
        except _StatementFailed as failed:
            return error_view(failed.error, sql, failed.statement, failed.number)
        except Exception as exc:
            return error_view(exc, sql)
        if options.output:
            self._namespace()[options.output] = frame
        try:
            table = ResultTable.of(frame, options.rows)
        except Exception as exc:
            return error_view(exc, sql)
        return dataclasses.replace(table, seconds=time.monotonic() - started, statements=count)

    def _run(self, sql: str) -> tuple[DataFrame, int]:
        """Run the statements of ``sql``; returns the last one's result and how many ran.

        Raises:
            SqlParseError: the cell does not parse (nothing ran).
            _StatementFailed: a statement failed (the ones before it ran).
        """
        from hudisql.parser import parse_script
        from hudisql.sql import SqlRouter

        session = self.session()
        if not isinstance(session.router, SqlRouter):
            return session.sql(sql), 1
        statements = parse_script(sql)
        if not statements:
            return session.sql(sql), 1  # the router's error for an empty script
        frame: DataFrame | None = None
        for number, statement in enumerate(statements, start=1):
            try:
                frame = session.router.run_statement(session, statement)
            except Exception as exc:
                raise _StatementFailed(exc, statement,
                                       number if len(statements) > 1 else None) from exc
        assert frame is not None
        return frame, len(statements)


class _StatementFailed(Exception):
    """A statement of a cell failed: its error, the statement and its number in the cell."""

    def __init__(self, error: BaseException, statement: Statement, number: int | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.statement = statement
        self.number = number


def one_line(exc: BaseException) -> str:
    """``<ErrorClass>: <message>`` on one line (Spark's plan and stack trace left out)."""
    text = str(exc).strip()
    if type(exc).__module__.startswith(("pyspark", "py4j")):
        text = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {' '.join(text.split())}"


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics with an IPython shell (``%load_ext hudisql.magic``)."""
    ipython.register_magics(HudiMagics)
