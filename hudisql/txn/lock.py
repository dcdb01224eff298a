"""Table locks for the commit protocol, chosen by ``hoodie.write.lock.provider``.

A writer holds the table lock while it checks for conflicts and completes its instant, so
that two writers never both pass the check. Providers: :class:`InProcessLockProvider`
(threads of one process), :class:`FileLockProvider` (processes of one machine, ``flock`` on
a lock file) and ``hudisql.catalog.lock.CatalogLockProvider`` (many machines, a row in the
catalog database). Providers are named by a short name or a dotted path and imported only
when a writer asks for one: nothing registers itself on import, so this module knows the
catalog's provider by name only. :func:`lock_provider_for` picks one from a writer's options.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import importlib
import os
import socket
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import IO, ClassVar

from hudisql.errors import LockError
from hudisql.table.io.locations import is_remote, redact

#: The option naming the lock provider (Hudi's own key).
LOCK_PROVIDER = "hoodie.write.lock.provider"
#: How long a writer waits for the lock, in milliseconds (Hudi's own key).
LOCK_WAIT_MS = "hoodie.write.lock.wait_time_ms"
#: The directory of lock files for :class:`FileLockProvider` (Hudi's own key).
LOCK_FILESYSTEM_PATH = "hoodie.write.lock.filesystem.path"

DEFAULT_LOCK_WAIT_MS = 60_000
#: The provider of writers that name none: processes of one machine exclude each other
#: (sessions give a table in their catalog the catalog's lock instead).
DEFAULT_LOCK_PROVIDER = "file"


class LockProvider(ABC):
    """Grants one holder at a time the lock of a table, named by its key (its base path)."""

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> LockProvider:
        """The provider for a writer's options (subclasses read their own keys).

        The default constructs ``cls(options)``.
        """
        return cls(options)  # type: ignore[call-arg]

    def identity(self, table_key: str) -> str:
        """What this provider's lock of ``table_key`` is: two providers with one identity
        exclude each other; writers of one table must all use one (see
        :mod:`hudisql.txn.shared_lock`). The default is the class's dotted path."""
        return f"{type(self).__module__}.{type(self).__qualname__}"

    @contextlib.contextmanager
    def lock(self, table_key: str, timeout: float) -> Iterator[None]:
        """Hold the lock of ``table_key`` for the ``with`` block.

        Args:
            table_key: names the table (its base path, or ``database.table``).
            timeout: seconds to wait for the lock.

        Raises:
            LockError: the lock was not granted within ``timeout`` seconds.
        """
        release = self.acquire(table_key, timeout)
        try:
            yield
        finally:
            release()

    @abstractmethod
    def acquire(self, table_key: str, timeout: float) -> Callable[[], None]:
        """Take the lock of ``table_key``; returns the function that releases it.

        Raises:
            LockError: the lock was not granted within ``timeout`` seconds.
        """

    @staticmethod
    def timed_out(table_key: str, timeout: float, holder: str) -> LockError:
        """The error for a lock not granted in time (``holder`` says where it is held)."""
        return LockError(
            f"could not lock table {table_key} within {timeout:g}s: another writer holds it "
            f"({holder}); retry later, or raise {LOCK_WAIT_MS} if writers commit slowly"
        )


class InProcessLockProvider(LockProvider):
    """Locks shared by every thread of this process (one lock per table key)."""

    _locks: ClassVar[dict[str, threading.Lock]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, options: Mapping[str, str] | None = None) -> None:
        """The process-wide locks need no options; ``options`` is accepted and ignored."""

    def identity(self, table_key: str) -> str:
        """This process's lock: it excludes no other process."""
        return f"in-process lock of process {os.getpid()} on {socket.gethostname()}"

    def acquire(self, table_key: str, timeout: float) -> Callable[[], None]:
        """Take the process-wide lock of ``table_key``; returns its release function.

        Raises:
            LockError: not granted within ``timeout`` seconds.
        """
        with self._guard:
            table_lock = self._locks.setdefault(table_key, threading.Lock())
        if not table_lock.acquire(timeout=max(timeout, 0.0)):
            raise self.timed_out(table_key, timeout, "another thread of this process")
        return table_lock.release


class FileLockProvider(LockProvider):
    """Locks shared by every process of one machine: ``flock`` on one file per table key.

    Lock files live in ``lock_dir`` (default ``<tmp>/hudisql-locks``), named by a hash of
    the table key, and are never deleted: removing a lock file while another process waits
    on it would let two processes hold "the" lock at once.
    """

    #: How often a waiting writer retries, in seconds (flock has no timed wait).
    poll_interval: float = 0.01

    def __init__(self, lock_dir: str | os.PathLike[str] | None = None) -> None:
        self.lock_dir = os.fspath(lock_dir or os.path.join(tempfile.gettempdir(), "hudisql-locks"))

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> LockProvider:
        """The provider keeping its lock files in ``hoodie.write.lock.filesystem.path``."""
        return cls(options.get(LOCK_FILESYSTEM_PATH) or None)

    def identity(self, table_key: str) -> str:
        """The lock file on this machine: it excludes no process of another machine."""
        return f"file lock {self.lock_file(table_key)} on {socket.gethostname()}"

    def lock_file(self, table_key: str) -> str:
        """The path of the lock file of ``table_key``."""
        digest = hashlib.sha256(table_key.encode("utf-8")).hexdigest()[:32]
        return os.path.join(self.lock_dir, f"{digest}.lock")

    def acquire(self, table_key: str, timeout: float) -> Callable[[], None]:
        """Take the machine-wide lock of ``table_key``; returns its release function.

        Raises:
            LockError: not granted within ``timeout`` seconds, or the lock file is unusable.
        """
        if is_remote(table_key):
            raise LockError(
                f"the file lock (flock) excludes only the processes of one machine and cannot "
                f"guard table {redact(table_key)} in an object store, which has no atomic "
                f"rename: set {LOCK_PROVIDER}=catalog (hudisql.catalog.url=<the catalog "
                "database URL>; a hudisql session's tables take it by default)")
        path = self.lock_file(table_key)
        try:
            os.makedirs(self.lock_dir, exist_ok=True)
            handle: IO[bytes] = open(path, "ab")  # noqa: SIM115 - held until release
        except OSError as exc:
            raise LockError(
                f"cannot open lock file {path} for table {table_key}: {exc}; set "
                f"{LOCK_FILESYSTEM_PATH} to a writable local directory"
            ) from exc
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    handle.close()
                    raise LockError(f"cannot lock {path} for table {table_key}: {exc}") from exc
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                handle.close()
                raise self.timed_out(table_key, timeout, f"lock file {path}")
            time.sleep(min(self.poll_interval, remaining))

        def release() -> None:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            finally:
                handle.close()

        return release


#: Short names of the providers, each the dotted path of its :class:`LockProvider` class.
LOCK_PROVIDERS: dict[str, str] = {
    "in-process": "hudisql.txn.lock.InProcessLockProvider",
    "file": "hudisql.txn.lock.FileLockProvider",
    "catalog": "hudisql.catalog.lock.CatalogLockProvider",
}
#: Apache Hudi's class names and other spellings of the short names.
_ALIASES = {
    "org.apache.hudi.client.transaction.lock.InProcessLockProvider": "in-process",
    "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider": "file",
    "inprocess": "in-process",
    "filesystem": "file",
}


def provider_path(name: str) -> str:
    """The dotted path of the provider class ``name`` stands for (a short name or a path)."""
    name = _ALIASES.get(name.strip(), name.strip())
    return LOCK_PROVIDERS.get(name, name)


def lock_provider_for(options: Mapping[str, str]) -> LockProvider:
    """The lock provider a writer's options name (default: the file lock).

    ``hoodie.write.lock.provider`` is a short name (``in-process``, ``file``, ``catalog``),
    one of Hudi's provider class names, or the dotted path of a :class:`LockProvider`
    subclass; the class is imported now and built with its ``from_options(options)``.

    Raises:
        LockError: the name is unknown or does not lead to a LockProvider.
    """
    name = (options.get(LOCK_PROVIDER) or DEFAULT_LOCK_PROVIDER).strip()
    path = provider_path(name)
    module_name, _, class_name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name) if module_name else None
    except (ImportError, AttributeError):
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, LockProvider)):
        known = ", ".join(sorted(LOCK_PROVIDERS))
        raise LockError(
            f"unknown {LOCK_PROVIDER}={name!r}: use one of {known}, or the dotted path of a "
            "hudisql LockProvider subclass"
        )
    return cls.from_options(options)


def lock_timeout(options: Mapping[str, str]) -> float:
    """The lock wait of a writer's options in seconds (``hoodie.write.lock.wait_time_ms``).

    Raises:
        LockError: the value is not a non-negative number.
    """
    raw = options.get(LOCK_WAIT_MS)
    if raw is None:
        return DEFAULT_LOCK_WAIT_MS / 1000.0
    try:
        millis = float(raw)
    except ValueError:
        millis = -1.0
    if millis < 0:
        raise LockError(f"{LOCK_WAIT_MS}={raw!r} is not a non-negative number of milliseconds")
    return millis / 1000.0
