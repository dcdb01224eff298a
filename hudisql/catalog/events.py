"""The notification log's events: their types and the row a poller reads.

Write events (``CREATE_TABLE``, ``ALTER_TABLE``, ``RENAME_TABLE``, ``WRITE_TABLE``) carry the
table's whole new entry and its ValidWriteIdList with the event's write id still open; the
``COMMIT_TXN`` event that follows makes it usable. ``ALLOC_WRITE_ID`` and ``ABORT_TXN`` carry
the new ValidWriteIdList only. External tables have no write ids: their events carry none and
apply at once.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any


class EventType(enum.StrEnum):
    """What a notification-log event records."""

    CREATE_DATABASE = "CREATE_DATABASE"
    DROP_DATABASE = "DROP_DATABASE"
    CREATE_TABLE = "CREATE_TABLE"
    DROP_TABLE = "DROP_TABLE"
    ALTER_TABLE = "ALTER_TABLE"
    RENAME_TABLE = "RENAME_TABLE"
    WRITE_TABLE = "WRITE_TABLE"
    ALLOC_WRITE_ID = "ALLOC_WRITE_ID"
    COMMIT_TXN = "COMMIT_TXN"
    ABORT_TXN = "ABORT_TXN"


#: Events whose message holds the table's new entry.
ENTRY_EVENTS = frozenset(
    {EventType.CREATE_TABLE, EventType.ALTER_TABLE, EventType.RENAME_TABLE, EventType.WRITE_TABLE}
)


@dataclass(frozen=True)
class NotificationEvent:
    """One row of the notification log."""

    event_id: int
    event_time: float
    event_type: EventType
    database: str | None
    table: str | None
    table_id: int | None
    write_id: int | None
    message: dict[str, Any]

    @classmethod
    def from_row(cls, row: Any) -> NotificationEvent:
        """The event of a ``hudisql_notification_log`` row."""
        return cls(
            event_id=int(row.event_id),
            event_time=float(row.event_time),
            event_type=EventType(row.event_type),
            database=row.db_name,
            table=row.table_name,
            table_id=None if row.table_id is None else int(row.table_id),
            write_id=None if row.write_id is None else int(row.write_id),
            message=json.loads(row.message),
        )
