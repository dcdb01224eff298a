"""Positions in a script: offsets to line and column, and parse errors that show a caret.

Every :class:`~hudisql.errors.SqlParseError` the parser raises is built here, so each one
names the line and column (1-based, counted in characters of the whole script) and shows
the offending line with a caret under the column.
"""

from __future__ import annotations

from hudisql.errors import SqlParseError


def line_and_column(script: str, offset: int) -> tuple[int, int]:
    """Return the 1-based (line, column) of character ``offset`` in ``script``.

    An offset at or past the end points just after the last character, where a missing
    token would have been.
    """
    offset = max(0, min(offset, len(script)))
    line_start = script.rfind("\n", 0, offset) + 1
    return script.count("\n", 0, offset) + 1, offset - line_start + 1


def error_at(script: str, offset: int, message: str) -> SqlParseError:
    """Build the :class:`SqlParseError` for ``message`` at character ``offset`` of ``script``.

    Returns:
        The error (the caller raises it), whose text is ``line L, column C: message``
        followed by the offending line and a caret under column C.
    """
    line, column = line_and_column(script, offset)
    line_start = script.rfind("\n", 0, min(offset, len(script))) + 1
    line_end = script.find("\n", line_start)
    shown = script[line_start : len(script) if line_end < 0 else line_end].rstrip("\r")
    # Tabs stay tabs under the text so the caret lines up however the terminal expands them.
    pad = "".join("\t" if ch == "\t" else " " for ch in shown[: column - 1])
    text = f"line {line}, column {column}: {message}\n    {shown}\n    {pad}^"
    return SqlParseError(text, line=line, column=column)
