"""A throw-away PostgreSQL server for the catalog tests and benchmark.

Runs Debian's ``initdb``/``pg_ctl`` (installed by ``scripts/postgres.sh install``) on a
temporary data directory, listening on 127.0.0.1 at a free port. PostgreSQL refuses to run
as root, so as root the server runs as the ``postgres`` user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg


class PostgresUnavailable(RuntimeError):
    """The server could not be installed or started; the message says why."""


def _bindir() -> Path:
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(os.path.join(d, "initdb"), os.X_OK):
            return Path(d)
    raise PostgresUnavailable(
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run "
        "scripts/postgres.sh install")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One PostgreSQL server in a temporary directory; :meth:`start`, then :meth:`stop`."""

    def __init__(self) -> None:
        self.bindir = _bindir()
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="hudisql-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise PostgresUnavailable(
                f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}\n{log}")

    def start(self) -> PostgresServer:
        """Initialize the data directory and start the server; raises PostgresUnavailable."""
        if self._as_root:
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        os.chmod(self.root, 0o700)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--locale=C", "--no-sync")
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                "-c max_connections=200")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                  "-o", opts, "start")
        return self

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        """The catalog URL of ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        """An autocommit connection to the ``postgres`` database (for CREATE DATABASE...)."""
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname="postgres",
            autocommit=True)

    def empty_catalog(self) -> str:
        """The URL of the shared ``catalog`` database, emptied of every catalog table
        (much faster than a new database per test)."""
        with self.admin() as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = 'catalog'").fetchone()
            if exists is None:
                conn.execute("CREATE DATABASE catalog")
        with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres",
                             dbname="catalog", autocommit=True) as conn:
            conn.execute(
                "DROP TABLE IF EXISTS hudisql_databases, hudisql_tables, hudisql_write_ids, "
                "hudisql_notification_log, hudisql_sequences, hudisql_locks")
        return self.url("catalog")

    def new_database(self) -> str:
        """Create a fresh, empty database; returns its catalog URL."""
        name = "cat_" + uuid.uuid4().hex[:12]
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)
