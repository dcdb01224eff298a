"""The server: a listening socket, a thread per connection, and the cancel keys.

One Spark application serves every connection; each connection gets its own Spark
session (``spark.newSession()``: its own temp views, current database and settings) with
hudisql connected to it, so statements of different clients run side by side. Queries
that read no table are answered without a Spark job (:mod:`hudisql.server.onerow`), so
they never wait for cores another client's query holds; the Spark application the server
starts itself schedules FAIR, each connection's jobs in a pool of their own
(``spark.scheduler.pool``, a session setting Spark hands to its jobs), so a new query gets
the next free core instead of queueing behind every task of a long one. A CancelRequest
interrupts the connection's Spark jobs (:mod:`hudisql.server.cancel`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import logging
import os
import secrets
import socket
import ssl
import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

from hudisql.errors import HudiSqlError
from hudisql.server.auth import User, load_users
from hudisql.server.connection import Connection
from hudisql.server.pgcatalog import Activity

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudisql.session import HudiSession

log = logging.getLogger("hudisql.server")


@dataclass
class ServerConfig:
    """How ``hudisql serve`` listens and whom it lets in.

    ``users_file``: SCRAM-SHA-256 users (see :mod:`hudisql.server.auth`); without one,
    anyone connecting may log in, which is only allowed on a loopback address.
    ``tls_cert``/``tls_key``: a PEM certificate and key; ``tls_required`` refuses clients
    that do not start TLS. ``read_only``: every user is read-only.
    """

    host: str = "127.0.0.1"
    port: int = 5433
    warehouse: str | None = None
    catalog: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    users_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_required: bool = False
    read_only: bool = False
    max_message_bytes: int = 16 << 20
    max_connections: int = 64


def is_loopback(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine."""
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        return False
    return all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


class PgServer:
    """A PostgreSQL-protocol server over hudisql; use as a context manager or call
    :meth:`start` and :meth:`stop`.

    Args:
        config: where to listen and whom to admit.
        hudi: the hudisql session whose Spark application serves the connections (its
            warehouse and catalog); None: :func:`hudisql.connect` with the config's.

    Raises:
        HudiSqlError: a non-loopback address without a users file, TLS required without a
            certificate, or a malformed users file.
    """

    def __init__(self, config: ServerConfig, hudi: HudiSession | None = None) -> None:
        if not is_loopback(config.host) and config.users_file is None:
            raise HudiSqlError(
                f"refusing to listen on {config.host} without authentication: give "
                "--users FILE (make it with hudisql serve --add-user NAME --users FILE), "
                "or listen on 127.0.0.1")
        if config.tls_required and not config.tls_cert:
            raise HudiSqlError("--tls-required needs --tls-cert and --tls-key")
        self.config = config
        self.users: dict[str, User] | None = (
            load_users(config.users_file) if config.users_file else None)
        self.tls_context: ssl.SSLContext | None = None
        if config.tls_cert:
            self.tls_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.tls_context.load_cert_chain(config.tls_cert, config.tls_key)
        self._hudi = hudi
        self._owns_hudi = hudi is None
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._connections: dict[int, tuple[Connection, threading.Thread]] = {}
        self._lock = threading.Lock()
        self._pids = itertools.count(os.getpid() * 100 % 1_000_000 + 1)
        self._stopping = threading.Event()

    @property
    def port(self) -> int:
        """The port listened on (the OS's choice when the config said 0)."""
        if self._listener is None:
            return self.config.port
        return int(self._listener.getsockname()[1])

    @property
    def hudi(self) -> HudiSession:
        """The server's own hudisql session (started on first use)."""
        if self._hudi is None:
            import hudisql

            conf = {"spark.scheduler.mode": "FAIR", **self.config.conf}
            self._hudi = hudisql.connect(warehouse=self.config.warehouse,
                                         conf=conf, catalog=self.config.catalog)
        return self._hudi

    def new_hudi_session(self, pool: str | None = None) -> HudiSession:
        """A connection's hudisql session on a new Spark session of the server's
        application (files by path may not be queried; its jobs go to scheduler pool
        ``pool``, which only FAIR scheduling tells apart)."""
        import hudisql

        base = self.hudi
        spark: SparkSession = base.spark.newSession()
        spark.conf.set("spark.sql.runSQLOnFiles", "false")
        if pool is not None:
            spark.conf.set("spark.scheduler.pool", pool)
        session: HudiSession = hudisql.connect(
            spark, warehouse=base.warehouse, conf=dict(base.options),
            catalog=self.config.catalog)
        return session

    def start(self) -> PgServer:
        """Listen and accept connections in the background; returns self."""
        _ = self.hudi
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.config.host, self.config.port))
        listener.listen(64)
        self._listener = listener
        self._accept_thread = threading.Thread(target=self._accept, daemon=True,
                                               name=f"hudisql-serve-accept-{self.port}")
        self._accept_thread.start()
        log.info("hudisql serve listening on %s:%d", self.config.host, self.port)
        return self

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pid = next(self._pids)
            connection = Connection(self, sock, pid, secrets.randbits(31))
            with self._lock:
                self._connections = {p: (c, t) for p, (c, t) in self._connections.items()
                                     if t.is_alive()}
                if len(self._connections) >= self.config.max_connections:
                    sock.close()
                    continue
                thread = threading.Thread(target=self._serve, args=(connection,),
                                          daemon=True, name=f"hudisql-serve-conn-{pid}")
                self._connections[pid] = (connection, thread)
            thread.start()

    def _serve(self, connection: Connection) -> None:
        try:
            connection.run()
        finally:
            with self._lock:
                self._connections.pop(connection.pid, None)

    def cancel(self, pid: int, secret: int) -> bool:
        """Cancel the statement running on connection ``pid`` if ``secret`` is its key;
        returns whether one was asked to stop."""
        with self._lock:
            found = self._connections.get(pid)
        if found is None or found[0].secret != secret or found[0].session is None:
            return False
        return found[0].session.cancel()

    def running_statements(self) -> dict[int, str]:
        """The statement each connection is running, by backend id (those running one)."""
        with self._lock:
            sessions = [c.session for c, _ in self._connections.values()]
        return {s.pid: s.running for s in sessions if s is not None and s.running}

    def activity(self) -> list[Activity]:
        """Every logged-in connection: who, from which application, running what."""
        with self._lock:
            sessions = [c.session for c, _ in self._connections.values()]
        found = []
        for s in sessions:
            if s is None:
                continue
            statement = s.statement
            found.append(Activity(s.pid, s.user, s.settings.get("application_name", ""),
                                  statement.text, statement.started))
        return found

    def scheduler_pool(self, connection: Connection) -> str:
        """Give ``connection`` its FAIR scheduler pool: the lowest slot no other
        connection holds, so pools are reused rather than one made per connection ever."""
        with self._lock:
            taken = {c.pool for p, (c, t) in self._connections.items()
                     if c is not connection and t.is_alive()}
            slot = next(i for i in itertools.count() if f"hudisql-serve-{i}" not in taken)
            connection.pool = f"hudisql-serve-{slot}"
            return connection.pool

    @property
    def connection_count(self) -> int:
        """How many clients are connected."""
        with self._lock:
            return sum(1 for c, t in self._connections.values() if t.is_alive())

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, cancel running statements, close every connection."""
        self._stopping.set()
        if self._listener is not None:
            # close() alone does not wake a thread blocked in accept() on Linux; shutdown does.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        with self._lock:
            connections = list(self._connections.values())
        for connection, _ in connections:
            if connection.session is not None:
                connection.session.cancel()
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)
        for _, thread in connections:
            thread.join(timeout)
        if self._accept_thread is not None:
            self._accept_thread.join(timeout)
        if self._owns_hudi and self._hudi is not None:
            self._hudi.stop()
            self._hudi = None

    def serve_forever(self) -> None:
        """Block until the server is stopped (Ctrl-C stops it)."""
        try:
            while not self._stopping.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def __enter__(self) -> PgServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
