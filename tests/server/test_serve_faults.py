"""``hudisql serve`` under load and bad input: a long query does not hold up another
connection; broken messages, oversized queries and failures in the
middle of a result reach only the client that caused them."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from tests.server.conftest import Served

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: Runs for hours on 2 cores: the test ends it by cancelling it.
LONG_QUERY = "SELECT count(*) FROM range(0, 1000000000000, 1, 2)"


def wait_until(condition, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Wait for ``condition()`` to hold (checked every 10 ms), or fail."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def answer_within(conn, query: str, seconds: float) -> tuple:  # type: ignore[no-untyped-def,type-arg]
    """``query``'s first row on ``conn``; fails when it takes longer than ``seconds``."""
    answers: list[tuple] = []  # type: ignore[type-arg]
    thread = threading.Thread(target=lambda: answers.append(conn.execute(query).fetchone()),
                              daemon=True)
    thread.start()
    thread.join(seconds)
    assert answers, f"{query} did not answer within {seconds} s"
    return answers[0]


def test_long_query_blocks_no_one_and_cancel_stops_it(served: Served) -> None:
    import psycopg

    long_conn = psycopg.connect(served.dsn(), autocommit=True)
    other = psycopg.connect(served.dsn(), autocommit=True)
    other.execute("SELECT 1")  # this connection's first statement warms its session
    failure: list[BaseException] = []
    server = served.server

    def run_long() -> None:
        try:
            long_conn.execute(LONG_QUERY)
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run_long, name="long-query")
    thread.start()
    try:
        wait_until(lambda: LONG_QUERY in server.running_statements().values())  # type: ignore[attr-defined]
        # The long query's tasks hold both cores: a SELECT 1 answers all the same.
        started = time.monotonic()
        assert other.execute("SELECT 1").fetchone() == (1,)
        assert time.monotonic() - started < 1.0
        assert thread.is_alive()
        # psycopg's cancel: the query ends with 57014 and its Spark job stops (the query
        # would run for hours; the connection answers again at once).
        started = time.monotonic()
        # cancel_safe: psycopg's cancel() holds the GIL while libpq waits for the server,
        # which runs in this very process.
        long_conn.cancel_safe()
        thread.join(60)
        assert not thread.is_alive() and time.monotonic() - started < 30
        assert isinstance(failure[0], psycopg.errors.QueryCanceled), failure
        assert not server.running_statements()  # type: ignore[attr-defined]
        # A Spark job of its own runs at once: the long query's tasks no longer hold the
        # cores (were they still running, this job would wait for hours).
        assert answer_within(long_conn, "SELECT count(*) FROM range(10)", 30) == (10,)
    finally:
        if thread.is_alive():
            long_conn.cancel_safe()
        thread.join(120)
        long_conn.close()
        other.close()


def _startup(served: Served) -> socket.socket:
    """A raw socket past authentication (SCRAM through psycopg is not reusable raw, so
    this logs in with the protocol by hand as user ``alice``)."""
    import base64
    import hashlib
    import hmac
    import secrets

    from tests.server.conftest import PASSWORD

    sock = socket.create_connection(("127.0.0.1", served.port), timeout=60)
    params = b"user\x00alice\x00database\x00hudisql\x00\x00"
    sock.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
    read_message(sock)  # AuthenticationSASL
    nonce = base64.b64encode(secrets.token_bytes(18)).decode()
    first_bare = f"n=,r={nonce}"
    data = ("n,," + first_bare).encode()
    body = b"SCRAM-SHA-256\x00" + struct.pack("!i", len(data)) + data
    sock.sendall(b"p" + struct.pack("!i", len(body) + 4) + body)
    _, server_first = read_message(sock)
    server_first_text = server_first[4:].decode()
    attrs = dict(a.split("=", 1) for a in server_first_text.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", PASSWORD.encode(), base64.b64decode(attrs["s"]),
                                 int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{first_bare},{server_first_text},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth, hashlib.sha256).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True)))
    final = f"{without_proof},p={proof.decode()}".encode()
    sock.sendall(b"p" + struct.pack("!i", len(final) + 4) + final)
    while read_message(sock)[0] != b"Z":
        pass
    return sock


def read_message(sock: socket.socket) -> tuple[bytes, bytes]:
    """One backend message: (type, body); (b"", b"") when the server closed."""
    header = b""
    while len(header) < 5:
        chunk = sock.recv(5 - len(header))
        if not chunk:
            return b"", b""
        header += chunk
    kind, length = header[:1], struct.unpack("!i", header[1:])[0]
    body = b""
    while len(body) < length - 4:
        body += sock.recv(length - 4 - len(body))
    return kind, body


def error_fields(body: bytes) -> dict[str, str]:
    """An ErrorResponse's fields by code letter."""
    return {part[:1].decode(): part[1:].decode() for part in body.split(b"\x00") if part}


def test_bad_protocol_input(served: Served) -> None:
    import psycopg

    # Out of order: Bind names a statement never parsed; the error, then Sync recovers.
    sock = _startup(served)
    bind = b"\x00nope\x00" + struct.pack("!hhh", 0, 0, 0)
    sock.sendall(b"B" + struct.pack("!i", len(bind) + 4) + bind + b"S\x00\x00\x00\x04")
    kind, body = read_message(sock)
    assert kind == b"E" and error_fields(body)["C"] == "26000"
    assert read_message(sock)[0] == b"Z"
    query = b"SELECT 41 + 1\x00"
    sock.sendall(b"Q" + struct.pack("!i", len(query) + 4) + query)
    kinds = []
    while not kinds or kinds[-1] != b"Z":
        kinds.append(read_message(sock)[0])
    assert kinds == [b"T", b"D", b"C", b"Z"]
    # Unknown message type: FATAL protocol violation, this connection closed.
    sock.sendall(b"?" + struct.pack("!i", 4))
    kind, body = read_message(sock)
    assert kind == b"E" and error_fields(body)["C"] == "08P01"
    assert read_message(sock) == (b"", b"")
    sock.close()
    # Truncated: a message that promises more bytes than arrive before the client leaves.
    sock = _startup(served)
    sock.sendall(b"Q" + struct.pack("!i", 1000) + b"SELECT")
    sock.close()
    # Oversized: a 2 MiB query against the 1 MiB limit.
    with psycopg.connect(served.dsn(), autocommit=True) as conn, pytest.raises(
            psycopg.OperationalError, match="exceeds the server's limit"):
        conn.execute("SELECT 1 -- " + "x" * (2 << 20))
    # None of it touched the server or the table.
    with psycopg.connect(served.dsn(), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM trips").fetchone() == (4,)


def test_failure_mid_stream(served: Served) -> None:
    import psycopg

    with psycopg.connect(served.dsn(), autocommit=True) as conn:
        with pytest.raises(psycopg.Error, match="id < 2500"):
            # The first partition's rows go out before the second partition fails.
            conn.execute("SELECT id, assert_true(id < 2500, 'id < 2500') AS ok "
                         "FROM range(0, 10000, 1, 4)").fetchall()
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_describe_a_row_statement_subquery(served: Served) -> None:
    # A prepared statement's Describe (pgjdbc's getMetaData) of a query reading SHOW's rows.
    sock = _startup(served)
    parse = b"\x00SELECT instant_time FROM (SHOW TIMELINE trips) AS q\x00\x00\x00"
    describe = b"S\x00"
    sock.sendall(b"P" + struct.pack("!i", len(parse) + 4) + parse
                 + b"D" + struct.pack("!i", len(describe) + 4) + describe
                 + b"S\x00\x00\x00\x04")
    kinds = []
    while not kinds or kinds[-1][0] != b"Z":
        kinds.append(read_message(sock))
    assert [k for k, _ in kinds] == [b"1", b"t", b"T", b"Z"], kinds
    assert b"instant_time" in kinds[2][1]
    sock.close()
