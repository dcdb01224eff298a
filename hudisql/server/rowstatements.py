"""hudisql's row statements (``SHOW TIMELINE t``, ``SHOW INDEXES ON t``, ``CALL
show_data_skipping(...)``, ...) used as tables inside a query.

BI tools run an analyst's SQL wrapped in their own: Tableau's Custom SQL, Power BI's native
query and Superset's virtual datasets all send ``SELECT ... FROM (<the analyst's SQL>) AS q
...``. A hudisql statement there is no Spark SQL, so each parenthesized ``SHOW`` or ``CALL``
in a query's FROM is run first, its rows held as a temporary view of the connection's Spark
session, and the query reads that view::

    SELECT * FROM (SHOW TIMELINE trips) AS q WHERE action = 'commit' LIMIT 10
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hudisql.server.pgcatalog import HELD_ROWS_PREFIX
from hudisql.server.sqltext import _scan

#: ``(`` then SHOW or CALL: a hudisql row statement as a subquery.
_OPENING = re.compile(r"\(\s*(?:SHOW|CALL)\b", re.I)
#: The views the rows are held in, per connection; numbered within one statement.
VIEW_PREFIX = HELD_ROWS_PREFIX


def row_statements(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of ``text`` (parentheses excluded) that are parenthesized
    ``SHOW``/``CALL`` statements outside quotes and comments; [] when ``text`` starts with
    one (that statement runs as itself)."""
    code = bytearray(len(text))
    for start, end, is_code in _scan(text):
        if is_code:
            code[start:end] = b"\x01" * (end - start)
    found: list[tuple[int, int]] = []
    for match in _OPENING.finditer(text):
        opening = match.start()
        if not code[opening] or text[:opening].strip() == "":
            continue
        depth, i = 0, opening
        while i < len(text):
            if code[i] and text[i] == "(":
                depth += 1
            elif code[i] and text[i] == ")":
                depth -= 1
                if depth == 0:
                    found.append((opening + 1, i))
                    break
            i += 1
    # Outermost only: a row statement never holds another.
    return [s for s in found if not any(o[0] < s[0] and s[1] < o[1] for o in found)]


def inline_row_statements(text: str, hold: Callable[[str, str], None]) -> str | None:
    """``text`` with each parenthesized row statement replaced by a view of its rows; None
    when it holds none.

    Args:
        hold: runs a statement (its text) and keeps its rows as a temp view (the name).
    """
    spans = row_statements(text)
    if not spans:
        return None
    pieces, last = [], 0
    for number, (start, end) in enumerate(spans):
        view = f"{VIEW_PREFIX}{number}"
        hold(text[start:end], view)
        # "(SELECT * FROM view)": the parentheses and the alias that follows stay as written.
        pieces.append(f"{text[last:start]}SELECT * FROM {view}")
        last = end
    pieces.append(text[last:])
    return "".join(pieces)
