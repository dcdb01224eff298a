"""A table lock kept in the catalog database, so writers on different machines share it.

The lock is a row of ``hudisql_locks`` keyed by the table key: inserting it takes the lock
(the primary key lets only one writer in), deleting it releases it. The row carries a lease
that a heartbeat thread renews while the lock is held; a holder that died stops renewing and
its lock may be taken over once the lease ran out. It is a ``hudisql.txn.lock``
:class:`LockProvider` like the in-process and file-based ones, which finds it by name
(``hoodie.write.lock.provider=catalog``) when a writer asks for it: writers then name the
catalog database with ``hudisql.catalog.url`` (or the ``HUDISQL_CATALOG_URL`` environment
variable).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from functools import cache

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from hudisql.catalog import db
from hudisql.errors import CatalogError, LockError
from hudisql.txn.lock import LockProvider

_MAX_BACKOFF = 0.05


class CatalogLockProvider(LockProvider):
    """Table locks in the catalog database (one holder per table key, across machines).

    Not reentrant: a holder asking again for the same key waits like anyone else.
    """

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> LockProvider:
        """The provider for ``hoodie.write.lock.provider=catalog`` (see
        :func:`provider_from_options`)."""
        return provider_from_options(options)

    def __init__(self, engine: Engine, lease: float = 60.0) -> None:
        if lease <= 0:
            raise LockError(f"lock lease must be positive, got {lease}")
        self.engine = engine
        self.lease = lease
        self.owner_prefix = f"{socket.gethostname()}:{os.getpid()}"

    @contextlib.contextmanager
    def lock(self, table_key: str, timeout: float) -> Iterator[None]:
        """Hold the lock of ``table_key`` for the ``with`` block.

        Raises:
            LockError: not acquired within ``timeout`` seconds (the message names the
                holder), or lost during the block because its lease was not renewed.
            CatalogUnavailableError: the catalog database is unreachable.
        """
        release = self.acquire(table_key, timeout)
        try:
            yield
        except BaseException:
            # The block's own error is what the caller needs; a lost lease adds nothing.
            with contextlib.suppress(LockError):
                release()
            raise
        release()

    def acquire(self, table_key: str, timeout: float) -> Callable[[], None]:
        """Take the lock of ``table_key`` and keep its lease renewed; returns the release.

        The release raises LockError when the lease was lost while the lock was held.
        """
        owner = f"{self.owner_prefix}:{uuid.uuid4().hex[:12]}"
        self._acquire(table_key, owner, timeout)
        stop = threading.Event()
        lost = threading.Event()
        beat = threading.Thread(
            target=self._heartbeat, args=(table_key, owner, stop, lost),
            name=f"hudisql-lock-heartbeat-{table_key}", daemon=True)
        beat.start()

        def release() -> None:
            stop.set()
            beat.join()
            released = self._release(table_key, owner)
            if lost.is_set() or not released:
                raise LockError(
                    f"the lock of table {table_key} was lost while held (its lease of "
                    f"{self.lease}s expired and another writer took it); the work done under "
                    "it may conflict: check the table's timeline and retry")

        return release

    def holder(self, table_key: str) -> str | None:
        """Who holds the lock of ``table_key`` now (``host:pid:token``), or None."""
        with db.read_connection(self.engine, f"reading the lock of {table_key}") as conn:
            row = conn.execute(sa.select(db.locks.c.owner, db.locks.c.expires_at)
                               .where(db.locks.c.lock_key == table_key)).first()
        if row is None or row.expires_at < time.time():
            return None
        return str(row.owner)

    def _acquire(self, key: str, owner: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        backoff = 0.005
        while True:
            holder = self._try_insert(key, owner)
            if holder is None:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LockError(
                    f"could not lock table {key} within {timeout}s: it is held by {holder}; "
                    "wait for that writer to finish, or raise the lock timeout")
            # A lock wait: nothing to be notified by across machines, so poll with backoff.
            time.sleep(min(backoff, remaining))
            backoff = min(backoff * 2, _MAX_BACKOFF)

    def _try_insert(self, key: str, owner: str) -> str | None:
        """Insert the lock row; returns None on success, else the current holder."""
        now = time.time()
        locks = db.locks
        try:
            with (
                db.translate_errors(self.engine, f"locking table {key}"),
                self.engine.connect().execution_options(hudisql_write=True) as conn,
                conn.begin(),
            ):
                conn.execute(sa.delete(locks).where(
                    locks.c.lock_key == key, locks.c.expires_at < now))
                conn.execute(sa.insert(locks).values(
                    lock_key=key, owner=owner, acquired_at=now, expires_at=now + self.lease))
            return None
        except sa.exc.IntegrityError:
            return self.holder(key) or "another writer"

    def _heartbeat(self, key: str, owner: str, stop: threading.Event,
                   lost: threading.Event) -> None:
        while not stop.wait(self.lease / 3):
            try:
                if not self._renew(key, owner):
                    lost.set()
                    return
            except CatalogError:
                continue  # the database is briefly away: the lease still covers us

    def _renew(self, key: str, owner: str) -> bool:
        locks = db.locks
        with (
            db.translate_errors(self.engine, f"renewing the lock of {key}"),
            self.engine.connect().execution_options(hudisql_write=True) as conn,
            conn.begin(),
        ):
            result = conn.execute(sa.update(locks).where(
                locks.c.lock_key == key, locks.c.owner == owner
            ).values(expires_at=time.time() + self.lease))
            return bool(result.rowcount)

    def _release(self, key: str, owner: str) -> bool:
        locks = db.locks
        with (
            db.translate_errors(self.engine, f"unlocking table {key}"),
            self.engine.connect().execution_options(hudisql_write=True) as conn,
            conn.begin(),
        ):
            result = conn.execute(sa.delete(locks).where(
                locks.c.lock_key == key, locks.c.owner == owner))
            return bool(result.rowcount)


#: The writer option naming the catalog database the ``catalog`` lock provider uses.
CATALOG_URL_OPTION = "hudisql.catalog.url"
#: The writer option setting the lock lease in seconds.
LEASE_OPTION = "hudisql.lock.lease.seconds"


@cache
def _engine_for(url: str) -> Engine:
    """One engine per catalog URL per process (its pool serves every lock taken here)."""
    engine = db.create_engine(db.normalize_url(url), busy_timeout=5.0, connect_timeout=10.0)
    db.initialize(engine, time.time())
    return engine


def provider_from_options(options: Mapping[str, str]) -> CatalogLockProvider:
    """The catalog lock provider for a writer's options (``hoodie.write.lock.provider=catalog``).

    Raises:
        LockError: no catalog URL in the options or the environment.
        CatalogError: the URL is malformed or its database unusable.
    """
    url = options.get(CATALOG_URL_OPTION) or os.environ.get("HUDISQL_CATALOG_URL")
    if not url:
        raise LockError(
            "hoodie.write.lock.provider=catalog needs the catalog database: set "
            f"{CATALOG_URL_OPTION} (e.g. postgresql://user@host/db) or HUDISQL_CATALOG_URL")
    return CatalogLockProvider(_engine_for(url), lease=float(options.get(LEASE_OPTION, 60.0)))

