"""``handle.inspect``: read-only views of a table's state, without Spark.

Each view is a ``pyarrow.Table`` or a picture, computed from the table's files when asked
(the timeline is read afresh on every call). SQL's ``SHOW TIMELINE`` shows the same rows.
"""

from __future__ import annotations

import pyarrow as pa

from hudisql.sql.timeline import TIMELINE_COLUMNS, timeline_rows
from hudisql.sql.timeline_chart import TimelineChart, timeline_chart
from hudisql.table.table import HudiTable

#: Spark SQL type names of the views' columns -> Arrow types.
_ARROW_TYPES: dict[str, pa.DataType] = {
    "STRING": pa.string(),
    "BIGINT": pa.int64(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
}


def _schema(columns: tuple[tuple[str, str], ...]) -> pa.Schema:
    return pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in columns])


class TableInspector:
    """Read-only views of the Hudi table at ``path`` (what ``handle.inspect`` returns)."""

    def __init__(self, path: str, name: str | None = None) -> None:
        self.path = path
        self.name = name

    def _table(self) -> HudiTable:
        return HudiTable.open(self.path)

    def timeline(self, limit: int | None = None) -> pa.Table:
        """The active timeline, newest first, as SHOW TIMELINE shows it (at most ``limit``).

        Raises:
            TableNotFoundError: the table is gone.
            CorruptTableError: a completed write's commit metadata is malformed.
        """
        rows = [r.as_tuple() for r in timeline_rows(self._table(), limit)]
        schema = _schema(TIMELINE_COLUMNS)
        return pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows],
                                    schema=schema)

    def timeline_chart(self, title: str | None = None) -> TimelineChart:
        """The timeline (and the metadata table's) as a picture: shown inline in notebooks,
        ``.save("timeline.png" | "timeline.html")`` writes it.

        Raises:
            TableNotFoundError: the table is gone.
        """
        table = self._table()
        return timeline_chart(table, title or f"timeline of {self.name or table.name}")

    def __repr__(self) -> str:
        return f"TableInspector({self.name or self.path!r})"
