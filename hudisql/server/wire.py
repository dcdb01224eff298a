"""The PostgreSQL v3 wire format: reading frontend messages and building backend ones.

Written here rather than taken from PyPI: ``pg-mimic`` (0.1.3) is asyncio-only with no TLS
and no cursors, ``pygwire`` is a beta codec, ``riffq`` has no Linux wheel and
``buenavista`` is unmaintained. The format itself is small (a type byte, a big-endian
length, fields), and owning it lets a blocking socket per connection thread carry TLS,
cursors and cancel keys without an event loop between Spark and the client.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from hudisql.errors import HudiSqlError

PROTOCOL_V3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")
_HEADER = struct.Struct("!ci")


class ProtocolError(HudiSqlError):
    """A client broke the protocol (bad length, unknown or out-of-order message); SQLSTATE
    ``08P01``. The connection is closed after the error is sent."""

    sqlstate = "08P01"


class MessageTooLarge(ProtocolError):
    """A message longer than the server's limit; SQLSTATE ``54000``."""

    sqlstate = "54000"


class ClientGone(Exception):
    """The client closed the connection (possibly in the middle of a message)."""


@dataclass(frozen=True)
class Message:
    """One frontend message: its type byte (``b"Q"``, ``b"P"``, ...) and its body."""

    kind: bytes
    body: bytes


def recv_exact(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes from ``sock``.

    Raises:
        ClientGone: the client closed the connection first (a truncated message).
    """
    chunks = []
    remaining = size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ClientGone(f"connection closed with {remaining} of {size} bytes unread")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_startup(sock: socket.socket, limit: int = 10000) -> tuple[int, bytes]:
    """The untyped first message: ``(code, body)`` (a protocol version or a request code).

    Raises:
        ProtocolError: a length below 8 or above ``limit``.
    """
    (length,) = _I32.unpack(recv_exact(sock, 4))
    if length < 8 or length > limit:
        raise ProtocolError(f"invalid startup packet length {length}")
    body = recv_exact(sock, length - 4)
    (code,) = _I32.unpack(body[:4])
    return code, body[4:]


def read_message(sock: socket.socket, limit: int) -> Message:
    """One typed frontend message.

    Raises:
        MessageTooLarge: the message is longer than ``limit`` bytes (its body is not read).
        ProtocolError: a length below 4.
        ClientGone: the connection closed.
    """
    kind, length = _HEADER.unpack(recv_exact(sock, 5))
    if length < 4:
        raise ProtocolError(f"invalid length {length} in message {kind!r}")
    if length > limit:
        raise MessageTooLarge(
            f"message {kind.decode('latin-1')!r} of {length} bytes exceeds the server's limit "
            f"of {limit} bytes (hudisql serve --max-message-bytes); send a shorter statement")
    return Message(kind, recv_exact(sock, length - 4))


def parse_parameters(body: bytes) -> dict[str, str]:
    """The ``name\\0value\\0...\\0`` pairs of a startup message."""
    parts = body.split(b"\x00")
    pairs = {}
    for i in range(0, len(parts) - 1, 2):
        if not parts[i]:
            break
        pairs[parts[i].decode("utf-8", "replace")] = parts[i + 1].decode("utf-8", "replace")
    return pairs


class Reader:
    """Fields of one message body read in order (C strings, integers, byte strings)."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.at = 0

    def cstring(self) -> str:
        """A NUL-terminated UTF-8 string.

        Raises:
            ProtocolError: no terminating NUL.
        """
        end = self.body.find(b"\x00", self.at)
        if end < 0:
            raise ProtocolError("a string field has no terminating NUL: the message is truncated")
        text = self.body[self.at:end].decode("utf-8")
        self.at = end + 1
        return text

    def int16(self) -> int:
        """A signed 16-bit integer."""
        return int(_I16.unpack(self._take(2))[0])

    def int32(self) -> int:
        """A signed 32-bit integer."""
        return int(_I32.unpack(self._take(4))[0])

    def byte(self) -> bytes:
        """One byte."""
        return self._take(1)

    def value(self) -> bytes | None:
        """A length-prefixed value; None for length -1 (NULL)."""
        length = self.int32()
        return None if length < 0 else self._take(length)

    def _take(self, size: int) -> bytes:
        if self.at + size > len(self.body):
            raise ProtocolError("the message is shorter than its fields: it is truncated")
        data = self.body[self.at:self.at + size]
        self.at += size
        return data


def message(kind: bytes, body: bytes = b"") -> bytes:
    """A backend message: type byte, length, body."""
    return kind + _I32.pack(len(body) + 4) + body


def cstr(text: str) -> bytes:
    """``text`` as a NUL-terminated UTF-8 string."""
    return text.encode("utf-8") + b"\x00"


def authentication(code: int, data: bytes = b"") -> bytes:
    """An Authentication message (0: ok, 10: SASL, 11: SASL continue, 12: SASL final)."""
    return message(b"R", _I32.pack(code) + data)


def parameter_status(name: str, value: str) -> bytes:
    """A ParameterStatus message."""
    return message(b"S", cstr(name) + cstr(value))


def backend_key_data(pid: int, secret: int) -> bytes:
    """The BackendKeyData message: the process id and secret a CancelRequest must quote."""
    return message(b"K", _I32.pack(pid) + _I32.pack(secret))


def ready_for_query(status: bytes) -> bytes:
    """ReadyForQuery with the transaction status: ``I`` idle, ``T`` in a block, ``E`` failed."""
    return message(b"Z", status)


def command_complete(tag: str) -> bytes:
    """CommandComplete with its tag (``SELECT 3``, ``BEGIN``, ...)."""
    return message(b"C", cstr(tag))


def row_description(fields: list[tuple[str, int, int, int, int]]) -> bytes:
    """RowDescription: per column ``(name, type oid, type size, typmod, format)``."""
    body = [_I16.pack(len(fields))]
    for name, oid, size, typmod, fmt in fields:
        body.append(cstr(name) + struct.pack("!ihihih", 0, 0, oid, size, typmod, fmt))
    return message(b"T", b"".join(body))


def parameter_description(oids: list[int]) -> bytes:
    """ParameterDescription: the type oid of each ``$n``."""
    return message(b"t", _I16.pack(len(oids)) + b"".join(_I32.pack(o) for o in oids))


def data_row(values: list[bytes | None]) -> bytes:
    """One DataRow of already encoded values (None: NULL)."""
    parts = [_I16.pack(len(values))]
    for value in values:
        if value is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            parts.append(_I32.pack(len(value)))
            parts.append(value)
    return message(b"D", b"".join(parts))


def notice_or_error(kind: bytes, fields: dict[str, str]) -> bytes:
    """An ErrorResponse (``E``) or NoticeResponse (``N``) from its one-letter fields."""
    body = b"".join(code.encode() + cstr(value) for code, value in fields.items())
    return message(kind, body + b"\x00")


NO_DATA = message(b"n")
PARSE_COMPLETE = message(b"1")
BIND_COMPLETE = message(b"2")
CLOSE_COMPLETE = message(b"3")
PORTAL_SUSPENDED = message(b"s")
EMPTY_QUERY = message(b"I")
