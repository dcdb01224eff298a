"""Real PostgreSQL clients against ``hudisql serve``: psql, psycopg, SQLAlchemy + pandas,
pgjdbc and psqlODBC each list hudi tables, filter, CREATE INDEX, SHOW TIMELINE, and get a
parse error with its position."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.server.conftest import PASSWORD, Served

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_psql(served: Served) -> None:
    script = "\n".join([
        r"\dt default.*",
        r"\d",
        r"\dn",
        r"\l",
        "SELECT uuid, fare FROM trips WHERE fare > 20 ORDER BY uuid;",
        "CREATE INDEX idx_psql ON trips (city);",
        "SELECT count(*) AS instants FROM (SELECT 1) x;",
        "SHOW TIMELINE trips;",
        "SELECT uuid\n  FORM trips;",
    ])
    env = {**os.environ, "PGPASSWORD": PASSWORD}
    done = subprocess.run(
        ["psql", "-X", "-h", "127.0.0.1", "-p", str(served.port), "-U", "alice", "-d",
         "hudisql", "-v", "ON_ERROR_STOP=0", "-f", "-"],
        input=script, capture_output=True, text=True, env=env, timeout=300, check=False)
    out, err = done.stdout, done.stderr
    # Other tests of this process may have left tables in default: the columns widen.
    assert re.search(r"\|\s*trips\s*\|\s*table\s*\|", out), out
    assert out.count("List of relations") == 2  # \dt and \d
    assert re.search(r"List of schemas\n.*\n-+\+-+\n(.*\n)*\s*default\s*\|", out), out
    assert re.search(r"List of databases\n(.*\n)*\s*hudisql\s*\| alice\s*\| UTF8", out), out
    assert " b    | 27.7\n c    |   33" in out
    assert "CREATE INDEX" in out
    assert "deltacommit" in out or "commit" in out
    # Spark reads FORM as an alias; the caret points into the client's text, under trips.
    assert "ERROR:  [PARSE_SYNTAX_ERROR] Syntax error at or near 'trips'" in err
    assert "LINE 2:   FORM trips;\n               ^" in err


def test_psycopg(served: Served) -> None:
    import psycopg

    with psycopg.connect(served.dsn(), autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            ["default"]).fetchall()
        assert ("trips",) in tables
        rows = conn.execute("SELECT uuid, fare, ts FROM trips WHERE fare > %s AND city = %s",
                            [20.0, "sf"]).fetchall()
        assert rows == [("c", 33.0, 3)]
        binary = conn.cursor(binary=True).execute(
            "SELECT uuid, fare, ts, ts > 2 AS late FROM trips WHERE uuid = %s", ["c"])
        assert binary.fetchall() == [("c", 33.0, 3, True)]
        cur = conn.execute("CREATE INDEX idx_psycopg ON trips USING bloom_filters (uuid)")
        assert cur.statusmessage == "CREATE INDEX"
        timeline = conn.execute("SHOW TIMELINE trips").fetchall()
        assert len(timeline) >= 2
        # As a tool wraps custom SQL: the statement's rows read as a table.
        wrapped = conn.execute("SELECT count(*) FROM (SHOW TIMELINE trips) AS q "
                               "WHERE q.action IS NOT NULL LIMIT 10").fetchall()
        assert wrapped == [(len(timeline),)]
        listed = conn.execute("SELECT table_name FROM information_schema.tables").fetchall()
        assert not [t for t in listed if t[0].startswith("__hudisql")]  # held rows: unlisted
        with pytest.raises(psycopg.errors.SyntaxError) as caught:
            conn.execute("SELECT * FROM trips WHERE )")
        assert caught.value.diag.statement_position == "27"


def test_psycopg_transactions_and_cursors(served: Served) -> None:
    import psycopg

    with psycopg.connect(served.dsn()) as conn:  # not autocommit: psycopg sends BEGIN
        assert conn.execute("SELECT count(*) FROM trips").fetchone() == (4,)
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT * FROM no_such_table")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            conn.execute("SELECT 1")
        conn.rollback()
        assert conn.execute("SELECT 1").fetchone() == (1,)
        with conn.cursor(name="big") as named:  # DECLARE ... CURSOR / FETCH
            named.itersize = 250
            named.execute("SELECT id FROM range(0, 1000, 1, 4)")
            assert sum(r[0] for r in named) == sum(range(1000))
        conn.commit()
    with psycopg.connect(served.dsn(), autocommit=True) as conn:
        conn.execute("DECLARE held CURSOR WITH HOLD FOR SELECT id FROM range(10)")
        assert conn.execute("FETCH 3 FROM held").fetchall() == [(0,), (1,), (2,)]
        assert conn.execute("FETCH ALL IN held").rowcount == 7
        conn.execute("CLOSE held")
        with pytest.raises(psycopg.errors.InvalidCursorName):
            conn.execute("FETCH 1 FROM held")


def test_security(served: Served) -> None:
    import psycopg

    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(served.dsn(password="wrong"))
    with psycopg.connect(served.dsn(sslmode="require")) as conn:
        assert conn.pgconn.ssl_in_use
        assert conn.execute("SELECT 1").fetchone() == (1,)
    with psycopg.connect(served.dsn("reader"), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM trips").fetchone() == (4,)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("INSERT INTO trips VALUES (9, 'z', 1.0, 'sf')")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("CREATE INDEX idx_reader ON trips (city)")
    with psycopg.connect(served.dsn(), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="TRANSFORM"):
            conn.execute("SELECT TRANSFORM(uuid) USING 'cat /etc/passwd' FROM trips")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="file path"):
            conn.execute("SELECT * FROM text.`/etc/passwd`")
        assert conn.execute("SELECT count(*) FROM trips").fetchone() == (4,)


def test_tls_required(served: Served) -> None:
    import dataclasses

    import psycopg

    from hudisql.server import PgServer

    # A second server on the same session, configured to require TLS.
    config = dataclasses.replace(served.server.config, port=0,  # type: ignore[attr-defined]
                                 tls_required=True)
    with psycopg.connect(served.dsn(), autocommit=True) as other, PgServer(
            config, hudi=served.hudi) as strict:
        port = str(strict.port)
        with pytest.raises(psycopg.OperationalError,
                           match="this server requires TLS: connect with sslmode=require"):
            psycopg.connect(served.dsn(port=port))  # sslmode=disable
        with psycopg.connect(served.dsn(port=port, sslmode="require")) as conn:
            assert conn.pgconn.ssl_in_use
            assert conn.execute("SELECT 1").fetchone() == (1,)
        # The refusal reached only that client: this server and the other one still answer.
        assert other.execute("SELECT 2").fetchone() == (2,)
        assert strict.running_statements() == {}


def test_sqlalchemy_inspector_and_pandas(served: Served) -> None:
    import pandas as pd
    import sqlalchemy as sa

    engine = sa.create_engine(
        f"postgresql+psycopg://alice:{PASSWORD}@127.0.0.1:{served.port}/hudisql")
    try:
        inspector = sa.inspect(engine)
        assert "default" in inspector.get_schema_names()
        assert "trips" in inspector.get_table_names(schema="default")
        columns = {c["name"]: str(c["type"]) for c in
                   inspector.get_columns("trips", schema="default")}
        assert columns["fare"] == "DOUBLE PRECISION" and columns["ts"] == "BIGINT"
        frame = pd.read_sql("SELECT uuid, fare FROM trips WHERE city = 'sf' ORDER BY uuid",
                            engine)
        assert frame["uuid"].tolist() == ["a", "c"]
    finally:
        engine.dispose()


def test_pgjdbc(served: Served, tmp_path: Path) -> None:
    from tests.server.test_serve_faults import LONG_QUERY, wait_until

    jar = Path("/usr/share/java/postgresql.jar")
    source = Path(__file__).with_name("PgJdbcClient.java")
    assert jar.exists(), "scripts/clients.sh install puts the JDBC driver there"
    subprocess.run(["javac", "-cp", str(jar), "-d", str(tmp_path), str(source)], check=True,
                   timeout=120)
    client = subprocess.Popen(
        ["java", "-cp", f"{jar}:{tmp_path}", "PgJdbcClient", str(served.port), "alice",
         PASSWORD, LONG_QUERY], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None and client.stdin is not None
        printed = []
        for line in client.stdout:
            printed.append(line)
            if line.startswith("long query: "):
                break
        assert printed and printed[-1].startswith("long query: "), client.communicate()
        # Statement.cancel() once the server runs the long query (it would run for hours).
        running = served.server.running_statements  # type: ignore[attr-defined]
        wait_until(lambda: LONG_QUERY in running().values())
        client.stdin.write("cancel\n")
        client.stdin.flush()
        out, err = client.communicate(timeout=120)
    finally:
        client.kill()
    assert client.returncode == 0, err
    lines = dict(line.split(": ", 1) for line in "".join([*printed, out]).splitlines()
                 if ": " in line)
    assert "trips," in lines["tables"]
    assert "fare:float8" in lines["columns"] and "uuid:text" in lines["columns"]
    assert lines["filtered"] == "b=27.7,c=33.0,"
    assert lines["streamed"] == f"1000 {sum(range(1000))}"
    assert lines["create index"] == "ok"
    assert int(lines["timeline"]) >= 2
    assert lines["parse error"] == "42601 at 18"
    assert lines["cancel"] == "57014"
    assert lines["after cancel"] == "1"


def test_psqlodbc(served: Served) -> None:
    pyodbc = pytest.importorskip("pyodbc")
    assert shutil.which("odbcinst"), "scripts/clients.sh install puts unixODBC there"
    conn = pyodbc.connect(
        f"DRIVER={{PostgreSQL Unicode}};SERVER=127.0.0.1;PORT={served.port};"
        f"DATABASE=hudisql;UID=alice;PWD={PASSWORD};SSLmode=disable;UseDeclareFetch=1;"
        "Fetch=2", autocommit=True)
    try:
        cur = conn.cursor()
        assert "trips" in [t.table_name for t in cur.tables(schema="default")]
        assert {c.column_name for c in cur.columns(table="trips", schema="default")} >= {
            "uuid", "fare", "ts", "city"}
        rows = cur.execute("SELECT uuid FROM trips WHERE fare > ? ORDER BY uuid", 20.0)
        assert [r[0] for r in rows.fetchall()] == ["b", "c"]
        cur.execute("CREATE INDEX idx_odbc ON trips (fare)")
        assert len(cur.execute("SHOW TIMELINE trips").fetchall()) >= 2
        with pytest.raises(pyodbc.Error, match="42601"):
            cur.execute("SELECT uuid FORM trips")
    finally:
        conn.close()
