"""The server's Spark-free parts, one line per form: statement splitting, ``$n`` binding,
PostgreSQL-to-Spark translation, the guard, SCRAM and binary numerics."""

from __future__ import annotations

import base64
import decimal
import hashlib
import hmac
import struct

import pytest
import sqlglot.errors

from hudisql.server import guard
from hudisql.server.auth import ScramExchange, parse_user, scram_verifier
from hudisql.server.sqlstate import ServerError
from hudisql.server.sqltext import (
    TranslationContext,
    bind_parameters,
    parameter_count,
    split_statements,
    translate,
)
from hudisql.server.types import _binary_numeric, parameter_literal

CTX = TranslationContext("ana", "default", 7, "PostgreSQL 16.0 (hudisql)")


@pytest.mark.parametrize(("text", "pieces"), [
    ("SELECT 1; SELECT 2", [(0, "SELECT 1"), (10, "SELECT 2")]),
    ("SELECT ';'; -- a;b\n SELECT 2;", [(0, "SELECT ';'"), (12, "-- a;b\n SELECT 2")]),
    ("SELECT $$a;b$$ ; /* ; */ ;", [(0, "SELECT $$a;b$$")]),
    ("  ; ;", []),
])
def test_split_statements(text: str, pieces: list[tuple[int, str]]) -> None:
    assert split_statements(text) == pieces


def test_bind_parameters() -> None:
    text = "SELECT $1, '$2', \"$1\", $2 -- $3"
    assert parameter_count(text) == 2  # not the $1 of a quoted name, nor a comment's $3
    assert bind_parameters("SELECT $1, '$2', $2", ["1", "'it''s'"]) == "SELECT 1, '$2', 'it''s'"
    with pytest.raises(ValueError, match=r"no parameter \$2"):
        bind_parameters("SELECT $2", ["1"])
    assert parameter_literal(b"it's\\", 25, 0) == "'it''s\\\\'"
    assert parameter_literal(struct.pack("!q", -5), 20, 1) == "-5"
    assert parameter_literal(None, 23, 0) == "NULL"


@pytest.mark.parametrize(("postgres", "spark"), [
    ("SELECT version()", "SELECT 'PostgreSQL 16.0 (hudisql)' AS version"),
    ("SELECT * FROM pg_catalog.pg_class c LIMIT ALL", "SELECT * FROM pg_class AS c"),
    ("SELECT 'pg_class'::regclass", "SELECT 1259"),
    ("SELECT typinput = 'array_in'::regproc FROM pg_type",
     "SELECT typinput = CAST('array_in' AS STRING) FROM pg_type"),
    ("SELECT x::text FROM t", "SELECT CAST(x AS STRING) FROM t"),
    ("SELECT 1 WHERE n.nspname OPERATOR(pg_catalog.~) '^a$' COLLATE pg_catalog.default",
     "SELECT 1 WHERE n.nspname RLIKE '^a$'"),
    ("SELECT has_table_privilege('t', 'SELECT'), pg_table_is_visible(1)",
     "SELECT TRUE AS has_table_privilege, TRUE AS pg_table_is_visible"),
    ("SELECT information_schema.tables.table_name FROM information_schema.tables",
     "SELECT information_schema_tables.table_name FROM information_schema_tables"),
    ("SELECT current_user, current_schema()",
     "SELECT 'ana' AS current_user, 'default' AS current_schema"),
])
def test_translate(postgres: str, spark: str) -> None:
    assert translate(postgres, CTX).sql == spark


def test_translate_refuses_what_it_would_drop() -> None:
    with pytest.raises(sqlglot.errors.SqlglotError):
        translate("SELECT * FROM trips WHERE", CTX)


@pytest.mark.parametrize("text", [
    "SELECT TRANSFORM(a) USING 'cat /etc/passwd' FROM t",
    "SELECT reflect('java.lang.System', 'exit', 1)",
    "ADD JAR /tmp/x.jar",
    "LOAD DATA LOCAL INPATH '/etc/passwd' INTO TABLE t",
    "SELECT * FROM csv.`/etc/passwd`",
    "CREATE TEMPORARY FUNCTION f AS 'x.Y'",
])
def test_guard_refuses(text: str) -> None:
    with pytest.raises(ServerError) as caught:
        guard.check_allowed(text)
    assert caught.value.sqlstate == "42501"


@pytest.mark.parametrize(("text", "allowed"), [
    ("SELECT 1", True), ("WITH a AS (SELECT 1) SELECT * FROM a", True),
    ("SHOW TIMELINE t", True), ("CALL show_commits(table => 't')", True),
    ("INSERT INTO t VALUES (1)", False), ("CREATE INDEX i ON t (a)", False),
    ("CALL run_clean(table => 't')", False),
])
def test_read_only(text: str, allowed: bool) -> None:
    if allowed:
        guard.check_read_only(text)
    else:
        with pytest.raises(ServerError):
            guard.check_read_only(text)


def test_scram_round_trip() -> None:
    user = parse_user("ana readwrite " + scram_verifier("pw"), "users")
    exchange = ScramExchange(user, "ana")
    first_bare = "n=,r=clientnonce"
    server_first = exchange.first("n,," + first_bare)
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", b"pw", base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth, hashlib.sha256).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True)))
    assert exchange.final(f"{without_proof},p={proof.decode()}").startswith("v=")
    wrong = ScramExchange(user, "ana")
    nonce = dict(a.split("=", 1) for a in wrong.first("n,," + first_bare).split(","))["r"]
    with pytest.raises(Exception, match="password authentication failed"):
        wrong.final(f"c=biws,r={nonce},p={base64.b64encode(b'x' * 32).decode()}")


@pytest.mark.parametrize(("value", "expected"), [
    ("0", (0, 0, 0, 0, [])), ("12345.678", (3, 1, 0, 3, [1, 2345, 6780])),
    ("-0.01", (1, -1, 0x4000, 2, [100])),
])
def test_binary_numeric(value: str, expected: tuple[int, int, int, int, list[int]]) -> None:
    data = _binary_numeric(decimal.Decimal(value))
    count, weight, sign, scale = struct.unpack("!hhHh", data[:8])
    digits = list(struct.unpack(f"!{count}h", data[8:]))
    assert (count, weight, sign, scale, digits) == expected
