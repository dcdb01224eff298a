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
from hudisql.server.pgcatalog import PROC_OIDS
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
    ("SELECT typinput = 'pg_catalog.array_in'::regproc FROM pg_type",
     f"SELECT typinput = {PROC_OIDS['array_in']} FROM pg_type"),
    ("SELECT x::text FROM t", "SELECT CAST(x AS STRING) FROM t"),
    ("SELECT 1 WHERE n.nspname OPERATOR(pg_catalog.~) '^a$' COLLATE pg_catalog.default",
     "SELECT 1 WHERE n.nspname RLIKE '^a$'"),
    ("SELECT has_table_privilege('t', 'SELECT'), pg_table_is_visible(1)",
     "SELECT TRUE AS has_table_privilege, TRUE AS pg_table_is_visible"),
    ("SELECT information_schema.tables.table_name FROM information_schema.tables",
     "SELECT information_schema_tables.table_name FROM information_schema_tables"),
    ("SELECT current_user, current_schema()",
     "SELECT 'ana' AS current_user, 'default' AS current_schema"),
    ("SELECT (pg_catalog.current_schemas(true))[1]",
     "SELECT (ARRAY('pg_catalog', 'default'))[0]"),
    ("SELECT 1 FROM pg_policy p WHERE p.polroles = '{0}' AND p.polname <> '{0}'",
     "SELECT 1 FROM pg_policy AS p WHERE p.polroles = ARRAY(0) AND p.polname <> '{0}'"),
    ("SELECT array(select rolname from pg_roles where oid = any (p.polroles) order by 1)",
     "SELECT (SELECT ARRAY_SORT(COLLECT_LIST(rolname)) FROM pg_roles "
     "WHERE EXISTS(p.polroles, x -> oid = x))"),
    ("SELECT 1 AS select, 2 AS delete FROM t", 'SELECT 1 AS `select`, 2 AS `delete` FROM t'),
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


@pytest.mark.parametrize(("text", "row"), [
    ("SELECT 1", [("1", 23, 1)]),
    ("select 1 AS n, 'x y' b, true `c d`, null", [("n", 23, 1), ("b", 25, "x y"),
                                                 ("c d", 16, True), ("NULL", 25, None)]),
    ("SELECT 'PostgreSQL 16.0' AS version", [("version", 25, "PostgreSQL 16.0")]),
    ("SELECT 1,", None), ("SELECT 1 AS", None), ("SELECT 1 where", None),
    ("SELECT 2147483648", None), ("SELECT 'a\\nb'", None), ("SELECT 1 + 1", None),
    ("SELECT 1 FROM t", None),
])
def test_literal_row(text: str, row: list[tuple[str, int, object]] | None) -> None:
    from hudisql.server.onerow import literal_row

    found = literal_row(text)
    assert (None if found is None else [(c.name, c.oid, c.value) for c in found]) == row


@pytest.mark.parametrize(("text", "one_row"), [
    ("SELECT 1 + 1 -- c", True), ("SELECT upper('a'), now()", True),
    ("SELECT 1 FROM t", False), ("SELECT (SELECT max(x) FROM t)", False),
    ("SELECT explode(array(1, 2))", False), ("SELECT 1 LIMIT 0", False),
    ("SHOW TABLES", False), ("SELECT 'FROM'", True),
])
def test_one_row_select(text: str, one_row: bool) -> None:
    from hudisql.server.onerow import ONE_ROW_TABLE, one_row_select

    rewritten = one_row_select(text)
    assert (rewritten is not None) == one_row
    assert rewritten is None or rewritten == f"{text}\nFROM {ONE_ROW_TABLE}"


def test_cancel_interrupts_until_the_statement_ends() -> None:
    import threading

    from hudisql.server.cancel import RunningStatement

    interrupts: list[int] = []
    second = threading.Event()

    def interrupt() -> None:
        interrupts.append(1)
        if len(interrupts) == 2:
            second.set()

    statement = RunningStatement(interrupt)
    assert not statement.cancel()  # nothing runs: nothing to cancel
    with statement.run("SELECT slow"):
        assert statement.cancel() and statement.cancelled.is_set()
        assert second.wait(10)  # interrupted again: a job started after the first try
    assert not statement.cancelled.is_set()
    count = len(interrupts)
    with statement.run("SELECT next"):  # the next statement is never interrupted
        assert len(interrupts) == count


@pytest.mark.parametrize(("text", "inner"), [
    ("SELECT * FROM (SHOW TIMELINE t) AS q LIMIT 10", ["SHOW TIMELINE t"]),
    ("SELECT count(*) FROM ( call show_commits(table => 't', limit => 5) ) q",
     [" call show_commits(table => 't', limit => 5) "]),
    ("SELECT a.x FROM (SHOW INDEXES ON a) a JOIN (SHOW TIMELINE b) b ON a.x = b.x",
     ["SHOW INDEXES ON a", "SHOW TIMELINE b"]),
    ("SELECT '(SHOW TIMELINE t)' FROM t -- (SHOW TIMELINE t)", []),
    ("(SHOW TIMELINE t)", []),  # the statement itself: runs as it is
    ("SELECT * FROM (SELECT 1) q", []),
])
def test_row_statements_in_subqueries(text: str, inner: list[str]) -> None:
    from hudisql.server.rowstatements import inline_row_statements, row_statements

    assert [text[s:e] for s, e in row_statements(text)] == inner
    held: list[tuple[str, str]] = []
    rewritten = inline_row_statements(text, lambda s, v: held.append((s, v)))
    assert [s for s, _ in held] == inner
    if inner:
        assert rewritten is not None and "SELECT * FROM __hudisql_rows_0" in rewritten
        assert rewritten.startswith(text[:row_statements(text)[0][0]])
    else:
        assert rewritten is None


@pytest.mark.parametrize("fmt", [0, 1])
def test_encode_rows_matches_row_by_row(fmt: int) -> None:
    import datetime as dt

    import pyarrow as pa

    from hudisql.server import wire
    from hudisql.server.datarows import encode_rows
    from hudisql.server.types import encode_column

    batch = pa.RecordBatch.from_arrays([
        pa.array([1, None, -3, 2**40]), pa.array([1.5, None, float("nan"), float("-inf")]),
        pa.array(["a", None, "", "héllo"]), pa.array([True, False, None, True]),
        pa.array([dt.date(2020, 1, 2), None, dt.date(1999, 1, 1), dt.date(2000, 1, 1)]),
        pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-2"), decimal.Decimal("0")]),
        pa.array([1, 2, None, 4], pa.int32()), pa.array([b"\x00x", None, b"", b"z"]),
        pa.array([0.5, 33.0, None, -0.25], pa.float32()),
    ], names=list("abcdefghi"))
    oids = [20, 701, 25, 16, 1082, 1700, 23, 17, 700]
    for part in (batch, batch.slice(1, 2)):
        columns = [encode_column(part.column(i), oid, fmt) for i, oid in enumerate(oids)]
        expected = b"".join(wire.data_row(list(row)) for row in zip(*columns, strict=True))
        assert encode_rows(part, oids, [fmt] * len(oids)) == expected
