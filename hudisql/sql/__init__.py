"""The SQL front end: routes each statement of a script to hudisql or to Spark.

:class:`SqlRouter` is what :func:`hudisql.connect` installs as the session's router; it
owns the session's catalog. One executor per command kind lives in
:mod:`hudisql.sql.executors` (DDL in :mod:`~hudisql.sql.ddl`, DML in :mod:`~hudisql.sql.dml`,
SHOW TIMELINE rows in :mod:`~hudisql.sql.timeline`). The top layer with
``session``, ``cli`` and ``magic``: may import every package below it.
"""

from __future__ import annotations

from hudisql.sql.router import SqlRouter, StatementContext
from hudisql.sql.timeline import TIMELINE_COLUMNS, timeline_rows

__all__ = ["TIMELINE_COLUMNS", "SqlRouter", "StatementContext", "timeline_rows"]
