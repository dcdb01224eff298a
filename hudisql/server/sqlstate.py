"""Errors as PostgreSQL reports them: SQLSTATE, message, detail and position.

hudisql's errors map by class; Spark's carry their own SQLSTATE (``getSqlState()``) and a
position (a parse error's ``line, pos``, an analysis error's query context). A position is
reported only when the text that failed is the text the client sent, counted from the
start of the client's query string (1-based characters, as psql draws its caret).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hudisql import errors as e
from hudisql.errors import HudiSqlError


class ServerError(HudiSqlError):
    """An error the server itself raises with a SQLSTATE (refusals, unsupported commands,
    cancelled statements, transaction states)."""

    def __init__(self, sqlstate: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.hint = hint


@dataclass
class PgError:
    """The fields of an ErrorResponse."""

    sqlstate: str
    message: str
    detail: str | None = None
    hint: str | None = None
    position: int | None = None  # 0-based offset into the statement's text
    severity: str = "ERROR"

    def fields(self, offset: int = 0) -> dict[str, str]:
        """The ErrorResponse fields, the position moved by the statement's ``offset``."""
        out = {"S": self.severity, "V": self.severity, "C": self.sqlstate, "M": self.message}
        if self.detail:
            out["D"] = self.detail
        if self.hint:
            out["H"] = self.hint
        if self.position is not None:
            out["P"] = str(self.position + offset + 1)
        return out


#: hudisql's error classes, most specific first.
_BY_CLASS: list[tuple[type[BaseException], str]] = [
    (e.SqlParseError, "42601"),
    (e.TableNotFoundError, "42P01"),
    (e.TableAlreadyExistsError, "42P07"),
    (e.IndexExistsError, "42710"),
    (e.IndexNotFoundError, "42704"),
    (e.CommitConflictError, "40001"),
    (e.LockError, "55P03"),
    (e.CatalogUnavailableError, "57P03"),
    (e.CatalogError, "42000"),
    (e.WriteError, "22023"),
    (e.ReadOptionError, "22023"),
    (e.CorruptTableError, "XX001"),
    (e.HudiSqlError, "XX000"),
]

_SQLSTATE = re.compile(r"SQLSTATE: (\w{5})")
_LINE_POS = re.compile(r"\(line (\d+), pos (\d+)\)")


def offset_of(text: str, line: int, column0: int) -> int:
    """The 0-based offset of ``line`` (1-based) and ``column0`` (0-based) in ``text``."""
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[:max(line - 1, 0)]) + column0


def to_pg_error(exc: BaseException, text: str | None) -> PgError:
    """``exc`` as an ErrorResponse; ``text`` is the statement that ran as the client sent it
    (None when it was translated, so positions would not match)."""
    sqlstate = getattr(exc, "sqlstate", None)
    message = str(exc).strip() or type(exc).__name__
    detail = None
    position = None
    if isinstance(exc, e.SqlParseError) and text is not None and exc.line and exc.column:
        position = offset_of(text, exc.line, exc.column - 1)
    if sqlstate is None:
        sqlstate = next((code for cls, code in _BY_CLASS if isinstance(exc, cls)), None)
    if type(exc).__module__.startswith(("pyspark", "py4j")):
        message, detail, sqlstate, position = _spark_fields(exc, message, text)
    notes = getattr(exc, "__notes__", None)
    if notes:
        detail = "\n".join([*([detail] if detail else []), *notes])
    hint = getattr(exc, "hint", None)
    return PgError(sqlstate or "XX000", message, detail, hint, position)


def _spark_fields(exc: BaseException, message: str,
                  text: str | None) -> tuple[str, str | None, str | None, int | None]:
    lines = message.splitlines()
    first = lines[0] if lines else type(exc).__name__
    if first.startswith("An error occurred while calling"):
        # A JVM error reached Python unconverted (e.g. a task failing while rows stream):
        # the innermost cause names what happened.
        causes = [x.split(": ", 1)[1] for x in lines if x.startswith("Caused by: ") and ": " in x]
        if causes:
            first = causes[-1].strip()
            found = _SQLSTATE.search(first)
            if found and not callable(getattr(exc, "getSqlState", None)):
                return first, None, found.group(1), None
    detail = "\n".join(x for x in lines[1:] if x.strip())[:2000] or None
    get_state = getattr(exc, "getSqlState", None)
    sqlstate = get_state() if callable(get_state) else None
    position = None
    if text is not None:
        match = _LINE_POS.search(message)
        if match:
            position = offset_of(text, int(match.group(1)), int(match.group(2)))
        else:
            get_context = getattr(exc, "getQueryContext", None)
            contexts = get_context() if callable(get_context) else []
            for context in contexts or []:
                start = getattr(context, "startIndex", None)
                fragment = getattr(context, "fragment", None)
                if callable(start) and start() >= 0:
                    position = int(start())
                    break
                if callable(fragment) and fragment() and fragment() in text:
                    position = text.index(fragment())
                    break
    if position is not None and not 0 <= position <= len(text or ""):
        position = None
    if sqlstate is None:
        name = type(exc).__name__
        sqlstate = "42601" if "Parse" in name else "42000" if "Analysis" in name else "XX000"
    return first, detail, sqlstate, position
