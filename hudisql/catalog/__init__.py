"""The catalog: databases and tables in a real database, write ids, the notification log,
a synchronized metadata cache that is never stale for managed tables, and the table lock
kept in its database. May import SQLAlchemy, ``hudisql.table`` and ``hudisql.txn``.
"""

from __future__ import annotations

from hudisql.catalog.cache import CacheStats, MetastoreCache
from hudisql.catalog.catalog import Catalog, SqlCatalog, WriteTransaction
from hudisql.catalog.config import load_catalog
from hudisql.catalog.entry import (
    StatementSnapshot,
    TableEntry,
    TableIdentifier,
    TableName,
    TableSnapshot,
    TimelineSummary,
    normalize_name,
)
from hudisql.catalog.events import EventType, NotificationEvent
from hudisql.catalog.lock import CatalogLockProvider
from hudisql.catalog.store import CatalogStore, WriteId
from hudisql.catalog.write_ids import Comparison, ValidWriteIdList

__all__ = [
    "CacheStats",
    "Catalog",
    "CatalogLockProvider",
    "CatalogStore",
    "Comparison",
    "EventType",
    "MetastoreCache",
    "NotificationEvent",
    "SqlCatalog",
    "StatementSnapshot",
    "TableEntry",
    "TableIdentifier",
    "TableName",
    "TableSnapshot",
    "TimelineSummary",
    "ValidWriteIdList",
    "WriteId",
    "WriteTransaction",
    "load_catalog",
    "normalize_name",
]
