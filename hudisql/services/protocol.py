"""The commit protocol of a table service: lock, heartbeat, participants, step hooks.

A service's instant is requested with its plan (under the table lock), goes inflight,
keeps a heartbeat while its tasks run, and completes under the table lock after the
commit participants (the metadata table) took their part; a failure rolls it back. An
instant whose heartbeat expired was abandoned by a dead process: the next run of the same
service (or a writer) rolls it back. The path itself (and :func:`complete`) is
``hudisql.txn.table_service``; this module gives it the data table's lock and heartbeat.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from hudisql.table.table import HudiTable
from hudisql.txn.heartbeat import Heartbeat, heartbeat_settings, is_abandoned
from hudisql.txn.lock import lock_provider_for, lock_timeout
from hudisql.txn.table_service import StepHook, complete, no_step

__all__ = ["StepHook", "complete", "heartbeat", "is_abandoned_instant", "no_step",
           "table_lock"]


@contextlib.contextmanager
def table_lock(table: HudiTable, options: Mapping[str, str]) -> Iterator[None]:
    """Hold the table lock (``hoodie.write.lock.provider``) for the block."""
    with lock_provider_for(options).lock(table.base_path, lock_timeout(options)):
        yield


@contextlib.contextmanager
def heartbeat(table: HudiTable, instant_time: str, options: Mapping[str, str]) -> Iterator[None]:
    """Keep ``instant_time``'s heartbeat fresh for the block (removed after it)."""
    interval, _ = heartbeat_settings(options)
    with Heartbeat(table.storage, instant_time, interval):
        yield


def is_abandoned_instant(table: HudiTable, instant_time: str, options: Mapping[str, str]) -> bool:
    """True when the pending ``instant_time`` has no live heartbeat (its process died)."""
    interval, misses = heartbeat_settings(options)
    return is_abandoned(table.storage, instant_time, interval, misses)
