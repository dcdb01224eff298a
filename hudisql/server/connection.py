"""One client connection: startup (TLS, authentication), then the simple and extended
query protocols, in the connection's own thread.

Errors in a statement go to that client as ErrorResponse (with the position in the text
it sent); errors in the protocol itself (a truncated or unknown message, one over the size
limit) end that connection only. In the extended protocol an error skips messages until
the next Sync, as PostgreSQL does.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hudisql.server import wire
from hudisql.server.auth import MECHANISM, AuthenticationError, ScramExchange
from hudisql.server.pgsession import STARTUP_SETTINGS, Outcome, PgSession, cancelled_error
from hudisql.server.results import RowSource
from hudisql.server.sqlstate import PgError, ServerError, to_pg_error
from hudisql.server.sqltext import bind_parameters, parameter_count, split_statements
from hudisql.server.types import TEXT_FORMAT, parameter_literal

if TYPE_CHECKING:
    from hudisql.server.server import PgServer

log = logging.getLogger("hudisql.server")
_FLUSH_AT = 1 << 18


@dataclass
class Prepared:
    """A parsed statement: its text and parameter type OIDs (0: unspecified)."""

    text: str
    oids: list[int]


@dataclass
class Portal:
    """A bound statement, ready to execute (possibly a few rows at a time)."""

    text: str
    formats: list[int]
    outcome: Outcome | None = None
    #: The text as the client sent it (None when parameters were bound into it, so error
    #: positions in the bound text would not match the client's).
    client_text: str | None = None
    rows_sent: int = 0
    done: bool = False
    extra: dict[str, object] = field(default_factory=dict)


class Connection:
    """The protocol state machine of one client socket."""

    def __init__(self, server: PgServer, sock: socket.socket, pid: int, secret: int) -> None:
        self.server = server
        self.sock: socket.socket = sock
        self.pid = pid
        self.secret = secret
        self.session: PgSession | None = None
        #: The FAIR scheduler pool of this connection's Spark jobs (once logged in).
        self.pool: str | None = None
        self.tls = False
        self._out: list[bytes] = []
        self._out_size = 0
        self.statements: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.skipping = False
        #: A portal Described and not yet Executed: its statement stays "running" between
        #: the two messages (a client's cancel in that gap would otherwise find no
        #: statement and be lost, and the Execute would run to its end).
        self._described: tuple[str, contextlib.ExitStack] | None = None

    # ------------------------------------------------------------------ output

    def emit(self, data: bytes) -> None:
        """Queue bytes for the client, flushing once enough are queued."""
        self._out.append(data)
        self._out_size += len(data)
        if self._out_size >= _FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        """Send everything queued."""
        if self._out:
            data = b"".join(self._out)
            self._out, self._out_size = [], 0
            self.sock.sendall(data)

    def send_error(self, error: PgError, offset: int = 0) -> None:
        """Queue an ErrorResponse."""
        self.emit(wire.notice_or_error(b"E", error.fields(offset)))

    def notice(self, text: str, severity: str = "WARNING") -> None:
        """Queue a NoticeResponse."""
        self.emit(wire.notice_or_error(
            b"N", {"S": severity, "V": severity, "C": "01000", "M": text}))

    # ------------------------------------------------------------------ lifecycle

    def run(self) -> None:
        """Serve the client until it leaves or breaks the protocol."""
        try:
            if self.startup():
                self.loop()
        except (wire.ClientGone, ConnectionError, ssl.SSLError, OSError) as exc:
            log.info("connection %d closed: %s", self.pid, exc)
        except wire.ProtocolError as exc:
            self._fatal(PgError(getattr(exc, "sqlstate", "08P01"), str(exc), severity="FATAL"))
        except Exception as exc:  # never let one client take the server down
            log.exception("connection %d failed", self.pid)
            self._fatal(to_pg_error(exc, None))
        finally:
            self._end_described()
            if self.session is not None:
                self.session.close()
            with contextlib.suppress(OSError):
                self.sock.close()

    def _fatal(self, error: PgError) -> None:
        error.severity = "FATAL"
        try:
            self.send_error(error)
            self.flush()
        except OSError:
            pass

    def startup(self) -> bool:
        """SSL negotiation, the startup packet, authentication and the session's settings;
        returns False when the connection was a CancelRequest or was refused."""
        config = self.server.config
        while True:
            code, body = wire.read_startup(self.sock)
            if code == wire.SSL_REQUEST and not self.tls:
                context = self.server.tls_context
                self.sock.sendall(b"S" if context else b"N")
                if context:
                    self.sock = context.wrap_socket(self.sock, server_side=True)
                    self.tls = True
                continue
            if code == wire.GSSENC_REQUEST:
                self.sock.sendall(b"N")
                continue
            if code == wire.CANCEL_REQUEST:
                pid, secret = struct.unpack("!ii", body[:8])
                self.server.cancel(pid, secret)
                return False
            break
        if code >> 16 != 3:
            self._fatal(PgError("0A000", f"unsupported frontend protocol {code >> 16}."
                                         f"{code & 0xFFFF}: hudisql serve speaks 3.0"))
            return False
        parameters = wire.parse_parameters(body)
        if code != wire.PROTOCOL_V3 or any(k.startswith("_pq_.") for k in parameters):
            options = [k for k in parameters if k.startswith("_pq_.")]
            self.sock.sendall(wire.message(b"v", struct.pack("!ii", wire.PROTOCOL_V3,
                                                             len(options))
                                           + b"".join(wire.cstr(o) for o in options)))
        if config.tls_required and not self.tls:
            self._fatal(PgError("28000", "this server requires TLS: connect with "
                                         "sslmode=require"))
            return False
        user = parameters.get("user", "")
        if not user:
            self._fatal(PgError("28000", "no user name in the startup packet"))
            return False
        read_only = self.authenticate(user)
        if read_only is None:
            return False
        hudi = self.server.new_hudi_session(self.server.scheduler_pool(self))
        self.session = PgSession(hudi, user, read_only or config.read_only, self.pid,
                                 parameters.get("application_name", ""))
        self.session.activity = self.server.activity
        database = parameters.get("database", "")
        if database and hudi.spark.catalog.databaseExists(database):
            hudi.spark.catalog.setCurrentDatabase(database)
        for name in STARTUP_SETTINGS:
            self.emit(wire.parameter_status(name, self.session.settings[name]))
        self.emit(wire.parameter_status("session_authorization", user))
        self.emit(wire.backend_key_data(self.pid, self.secret))
        self.ready()
        return True

    def authenticate(self, user: str) -> bool | None:
        """Authenticate ``user``; returns whether the user is read-only, None when refused."""
        users = self.server.users
        if users is None:
            self.emit(wire.authentication(0))
            return False
        self.emit(wire.authentication(10, wire.cstr(MECHANISM) + b"\x00"))
        self.flush()
        exchange = ScramExchange(users.get(user), user)
        try:
            first = self._sasl_message()
            reader = wire.Reader(first)
            mechanism = reader.cstring()
            if mechanism != MECHANISM:
                raise AuthenticationError(f"SASL mechanism {mechanism!r} is not supported; "
                                          f"use {MECHANISM}")
            data = reader.value() or b""
            self.emit(wire.authentication(11, exchange.first(data.decode()).encode()))
            self.flush()
            final = exchange.final(self._sasl_message().decode())
        except (AuthenticationError, UnicodeDecodeError, ValueError) as exc:
            self._fatal(PgError("28P01", str(exc)))
            return None
        self.emit(wire.authentication(12, final.encode()))
        self.emit(wire.authentication(0))
        return exchange.user.read_only

    def _sasl_message(self) -> bytes:
        msg = wire.read_message(self.sock, 10000)
        if msg.kind != b"p":
            raise AuthenticationError(f"expected a SASL response, got message {msg.kind!r}")
        return msg.body

    def ready(self) -> None:
        """ReadyForQuery with the transaction status, then flush."""
        assert self.session is not None
        self.emit(wire.ready_for_query(self.session.status.encode()))
        self.flush()

    # ------------------------------------------------------------------ messages

    def loop(self) -> None:
        """Read and answer messages until Terminate or the client leaves."""
        limit = self.server.config.max_message_bytes
        while True:
            msg = wire.read_message(self.sock, limit)
            if msg.kind == b"X":
                return
            if self.skipping and msg.kind != b"S":
                continue
            handler = _HANDLERS.get(msg.kind)
            if handler is None:
                raise wire.ProtocolError(f"invalid frontend message type {msg.kind!r}")
            try:
                handler(self, wire.Reader(msg.body))
            except wire.ProtocolError:
                raise
            except Exception as exc:
                self.fail(exc, None, 0)
                self.skipping = True

    def fail(self, exc: BaseException, text: str | None, offset: int) -> None:
        """Report a failed statement; a transaction block becomes failed."""
        assert self.session is not None
        if self.session.statement.cancelled.is_set():
            exc = cancelled_error()  # a Spark job's interruption, or the rows' stop
        if not isinstance(exc, ServerError) and not type(exc).__module__.startswith(
                ("hudisql", "pyspark", "py4j")):
            log.warning("statement failed on connection %d", self.pid, exc_info=exc)
        translated = self.session.hudi is not None and getattr(self.session, "translated",
                                                                 False)
        error = to_pg_error(exc, None if translated else text)
        log.info("connection %d: %s %s (statement: %s)", self.pid, error.sqlstate,
                 error.message, (text or self.session.running or "")[:2000])
        self.send_error(error, offset + getattr(exc, "position_offset", 0))
        if self.session.status == "T":
            self.session.status = "E"

    def send_outcome(self, outcome: Outcome, describe: bool, limit: int = 0) -> bool:
        """Send a statement's notices, rows and tag; returns False when rows remain (the
        portal is suspended)."""
        for text in outcome.notices:
            self.notice(text)
        for name, value in outcome.statuses:
            self.emit(wire.parameter_status(name, value))
        sent = 0
        source = outcome.source
        if source is not None:
            if describe:
                self.emit(source.description())
            wanted = outcome.limit if limit == 0 else limit
            sent = source.fetch(wanted, self.emit)
            if limit and not source.exhausted:
                return False
            if not outcome.keep:
                source.close()
        self.emit(wire.command_complete(outcome.command_tag(sent)))
        return True

    def simple_query(self, reader: wire.Reader) -> None:
        """A Query message: each statement in turn, stopping at the first error."""
        assert self.session is not None
        text = reader.cstring()
        statements = split_statements(text)
        if not statements:
            self.emit(wire.EMPTY_QUERY)
        for offset, statement in statements:
            self.session.translated = False
            with self.session.statement.run(statement):
                try:
                    outcome = self.session.execute(statement)
                    self.send_outcome(outcome, describe=True)
                except Exception as exc:
                    self.fail(exc, statement, offset)
                    break
        self.ready()

    def parse(self, reader: wire.Reader) -> None:
        """Parse: remember a statement and its parameter types."""
        name, text = reader.cstring(), reader.cstring()
        oids = [reader.int32() for _ in range(reader.int16())]
        if name and name in self.statements:
            raise ServerError("42P05", f'prepared statement "{name}" already exists')
        pieces = split_statements(text)
        if len(pieces) > 1:
            raise ServerError("42601", "cannot insert multiple commands into a prepared "
                                       "statement")
        body = pieces[0][1] if pieces else ""
        count = max(parameter_count(body), len(oids))
        self.statements[name] = Prepared(body, oids + [0] * (count - len(oids)))
        self.emit(wire.PARSE_COMPLETE)

    def bind(self, reader: wire.Reader) -> None:
        """Bind: a portal from a statement and parameter values."""
        portal_name, statement_name = reader.cstring(), reader.cstring()
        formats = [reader.int16() for _ in range(reader.int16())]
        values = [reader.value() for _ in range(reader.int16())]
        result_formats = [reader.int16() for _ in range(reader.int16())]
        prepared = self.statements.get(statement_name)
        if prepared is None:
            raise ServerError("26000", f'prepared statement "{statement_name}" does not exist')
        if len(values) != len(prepared.oids):
            raise wire.ProtocolError(f"Bind gives {len(values)} parameters, the statement "
                                     f"needs {len(prepared.oids)}")
        if portal_name and portal_name in self.portals:
            raise ServerError("42P03", f'portal "{portal_name}" already exists')
        if len(formats) not in (0, 1, len(values)):
            raise wire.ProtocolError("Bind's parameter format count fits no parameter count")
        literals = []
        for i, value in enumerate(values):
            fmt = formats[0] if len(formats) == 1 else formats[i] if formats else TEXT_FORMAT
            literals.append(parameter_literal(value, prepared.oids[i], fmt))
        text = bind_parameters(prepared.text, literals) if literals else prepared.text
        old = self.portals.pop(portal_name, None)
        if old is not None and old.outcome and old.outcome.source and not old.outcome.keep:
            old.outcome.source.close()
        self.portals[portal_name] = Portal(text, result_formats,
                                           client_text=None if literals else text)
        self.emit(wire.BIND_COMPLETE)

    def _start(self, portal: Portal) -> Outcome:
        assert self.session is not None
        if portal.outcome is None:
            self.session.translated = False
            portal.outcome = self.session.execute(portal.text)
            if portal.outcome.source is not None:
                portal.outcome.source.set_formats(portal.formats)
        return portal.outcome

    def describe(self, reader: wire.Reader) -> None:
        """Describe a statement (parameter types, columns) or a portal (columns)."""
        assert self.session is not None
        kind, name = reader.byte(), reader.cstring()
        if kind == b"S":
            prepared = self.statements.get(name)
            if prepared is None:
                raise ServerError("26000", f'prepared statement "{name}" does not exist')
            self.emit(wire.parameter_description([o or 25 for o in prepared.oids]))
            nulls = ["NULL"] * len(prepared.oids)
            text = bind_parameters(prepared.text, nulls) if nulls else prepared.text
            source = self.session.describe(text) if text else None
            self.emit(source.description() if source is not None else wire.NO_DATA)
            return
        portal = self.portals.get(name)
        cursor = self.session.cursors.get(name)
        if portal is None and cursor is not None:  # a DECLAREd cursor is a portal too
            self.emit(cursor.source.description())
            return
        if portal is None:
            raise ServerError("34000", f'portal "{name}" does not exist')
        if not portal.text:
            self.emit(wire.NO_DATA)
            return
        self._end_described()
        running = contextlib.ExitStack()  # commands run here: cancellable
        running.enter_context(self.session.statement.run(portal.text))
        try:
            outcome = self._start(portal)
        except Exception as exc:
            self.fail(exc, portal.client_text, 0)
            running.close()
            self.skipping = True
            return
        self._described = (name, running)
        self.emit(outcome.source.description() if outcome.source is not None else wire.NO_DATA)

    def _end_described(self, portal: str | None = None) -> contextlib.ExitStack | None:
        """The running statement a Describe of ``portal`` left open (for its Execute to
        carry on); any other portal's is ended."""
        described, self._described = self._described, None
        if described is None:
            return None
        if described[0] == portal:
            return described[1]
        described[1].close()
        return None

    def execute(self, reader: wire.Reader) -> None:
        """Execute a portal, up to a number of rows (0: all)."""
        name, limit = reader.cstring(), reader.int32()
        portal = self.portals.get(name)
        if portal is None:
            raise ServerError("34000", f'portal "{name}" does not exist')
        if not portal.text:
            self.emit(wire.EMPTY_QUERY)
            return
        assert self.session is not None
        with self._end_described(name) or self.session.statement.run(portal.text):
            try:
                outcome = self._start(portal)
                if portal.done:
                    self.emit(wire.command_complete(outcome.command_tag(0)))
                    return
                if self.send_outcome(outcome, describe=False, limit=max(limit, 0)):
                    portal.done = True
                else:
                    self.emit(wire.PORTAL_SUSPENDED)
            except Exception as exc:
                self.fail(exc, portal.client_text, 0)
                self.skipping = True

    def sync(self, reader: wire.Reader) -> None:
        """Sync: end of an extended-protocol batch; the implicit transaction's portals end."""
        assert self.session is not None
        self._end_described()
        self.skipping = False
        if self.session.status == "I":
            for portal in self.portals.values():
                if portal.outcome and portal.outcome.source and not portal.outcome.keep:
                    portal.outcome.source.close()
            self.portals.clear()
        self.ready()

    def close(self, reader: wire.Reader) -> None:
        """Close a statement or portal."""
        kind, name = reader.byte(), reader.cstring()
        if kind == b"S":
            self.statements.pop(name, None)
        else:
            portal = self.portals.pop(name, None)
            if portal and portal.outcome and portal.outcome.source and not portal.outcome.keep:
                portal.outcome.source.close()
        self.emit(wire.CLOSE_COMPLETE)

    def flush_message(self, reader: wire.Reader) -> None:
        """Flush: send what is queued."""
        self.flush()

    def unsupported(self, reader: wire.Reader) -> None:
        """COPY data and function calls are not served."""
        raise ServerError("0A000", "COPY and the function-call protocol are not supported "
                                   "by hudisql serve")


_HANDLERS = {
    b"Q": Connection.simple_query, b"P": Connection.parse, b"B": Connection.bind,
    b"D": Connection.describe, b"E": Connection.execute, b"S": Connection.sync,
    b"C": Connection.close, b"H": Connection.flush_message, b"d": Connection.unsupported,
    b"c": Connection.unsupported, b"f": Connection.unsupported, b"F": Connection.unsupported,
}
__all__ = ["Connection", "RowSource"]
