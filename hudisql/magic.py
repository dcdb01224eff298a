"""IPython magics: ``%hudisql <sql>`` (line) and ``%%hudisql`` (cell) run SQL in a notebook.

Load with ``%load_ext hudisql.magic`` (or ``%load_ext hudisql`` once the package delegates
to :func:`load_ipython_extension`). The session used is the last :class:`HudiSession` in
the notebook's namespace, else one made by :func:`hudisql.connect` (on the active
SparkSession if there is one). Results render as HTML tables of at most ``-n`` rows (20 by
default) with every value escaped; ``-o name`` stores the last statement's DataFrame in
``name``. An error prints as one line, ``<ErrorClass>: <message>``, and returns nothing.
"""

from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_cell_magic, magics_class

from hudisql.cli import cell as text_cell
from hudisql.cli import format_table, quiet_spark_error_logs
from hudisql.errors import HudiSqlError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.session import HudiSession

DEFAULT_ROWS = 20


@dataclass(frozen=True)
class ResultTable:
    """A statement's result as a notebook shows it: columns, the first rows, and whether more."""

    columns: list[str]
    rows: list[list[str]]
    truncated: bool

    @classmethod
    def of(cls, frame: DataFrame, limit: int) -> ResultTable:
        """The first ``limit`` rows of ``frame`` (one more is fetched to tell if there are more)."""
        fetched = frame.limit(limit + 1).collect() if frame.columns else frame.collect()
        rows = [[text_cell(v) for v in row] for row in fetched[:limit]]
        return cls(list(frame.columns), rows, len(fetched) > limit)

    def _repr_html_(self) -> str:
        if not self.columns:
            return "<p>OK</p>"
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
            for row in self.rows)
        note = (f"<p>showing the first {len(self.rows)} rows</p>" if self.truncated else "")
        return (f'<table class="hudisql"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>{note}")

    def __repr__(self) -> str:
        if not self.columns:
            return "OK"
        more = f"(showing the first {len(self.rows)} rows)\n" if self.truncated else ""
        return format_table(self.columns, self.rows) + more


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
    def hudisql(self, line: str, cell: str | None = None) -> ResultTable | None:
        """Run SQL: ``%hudisql [-o name] [-n rows] <sql>`` or a ``%%hudisql`` cell.

        Returns the last statement's result table; None after an error (printed in one line).
        """
        try:
            options, sql = parse_line(line)
            if cell is not None:
                sql = cell if not sql.strip() else sql + "\n" + cell
            quiet_spark_error_logs()
            frame = self.session().sql(sql)
            if options.output:
                self._namespace()[options.output] = frame
            return ResultTable.of(frame, options.rows)
        except Exception as exc:
            print(one_line(exc), file=sys.stderr)
            return None


def one_line(exc: BaseException) -> str:
    """``<ErrorClass>: <message>`` on one line (Spark's plan and stack trace left out)."""
    text = str(exc).strip()
    if type(exc).__module__.startswith(("pyspark", "py4j")):
        text = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {' '.join(text.split())}"


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics with an IPython shell (``%load_ext hudisql.magic``)."""
    ipython.register_magics(HudiMagics)
