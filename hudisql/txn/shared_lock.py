"""One lock per table: writers that use different locks are refused, not silently unsafe.

A lock only excludes writers that use the same one: an in-process lock excludes nothing in
another process, a file lock nothing on another machine, and two catalogs' locks nothing of
each other. So under its lock each writer checks the table's record of the lock its writers
use (``.hoodie/.aux/hudisql/lock.json``, the provider's
:meth:`~hudisql.txn.lock.LockProvider.identity`): when another lock is recorded and a writer
of the table is live (a pending instant with a fresh heartbeat), this writer is refused with
a :class:`~hudisql.errors.LockError` naming both locks; otherwise it records its own. The
check runs when a transaction starts and again before it completes, so of two overlapping
writers with different locks at least one is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from hudisql.errors import LockError
from hudisql.table.table import HudiTable
from hudisql.txn.heartbeat import heartbeat_settings, is_abandoned
from hudisql.txn.lock import LOCK_PROVIDER, LockProvider

__all__ = ["LOCK_RECORD", "check_shared_lock", "recorded_lock"]

#: Where a table records the lock its writers use (relative to its base path).
LOCK_RECORD = ".hoodie/.aux/hudisql/lock.json"


def recorded_lock(table: HudiTable) -> str | None:
    """The identity of the lock the table's writers last used, or None (none recorded)."""
    try:
        record = json.loads(table.storage.read_bytes(LOCK_RECORD))
    except FileNotFoundError:
        return None
    except ValueError:
        return None  # a torn or foreign file: the next writer rewrites it
    lock = record.get("lock") if isinstance(record, dict) else None
    return lock if isinstance(lock, str) else None


def check_shared_lock(table: HudiTable, provider: LockProvider, options: Mapping[str, str],
                      own_instant: str | None = None) -> None:
    """Refuse to write ``table`` under ``provider``'s lock while a writer with another is live.

    Called with the lock held and ``table`` freshly loaded; records this writer's lock when
    it differs from the recorded one.

    Raises:
        LockError: another lock is recorded and a pending instant other than
            ``own_instant`` has a fresh heartbeat.
    """
    mine = provider.identity(table.base_path)
    recorded = recorded_lock(table)
    if recorded == mine:
        return
    if recorded is not None:
        interval, misses = heartbeat_settings(options)
        live = [i.timestamp for i in table.timeline.pending()
                if i.timestamp != own_instant
                and not is_abandoned(table.storage, i.timestamp, interval, misses)]
        if live:
            raise LockError(
                f"table {table.name} at {table.base_path} is being written (instant "
                f"{live[0]}) by a writer holding the {recorded}, and this writer takes the "
                f"{mine}: the two do not exclude each other, so this write is refused. Give "
                f"every writer of the table the same {LOCK_PROVIDER} (a table in the catalog "
                "takes the catalog's lock by default, a table by path the file lock)"
            )
    record = {"lock": mine, "provider": f"{type(provider).__module__}."
              f"{type(provider).__qualname__}", "instant": own_instant}
    table.storage.write_atomic(LOCK_RECORD, json.dumps(record).encode("utf-8"))
