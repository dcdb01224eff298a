"""A new SQLite catalog file switches to WAL mode even while another process holds it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hudisql.catalog.db import enable_wal


def _journal_mode(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


def test_wal_switch_is_retried_until_the_other_writer_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "catalog.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")  # another process in the middle of creating tables
    opener = sqlite3.connect(path, isolation_level=None, timeout=0.05)
    retries: list[int] = []

    def let_go() -> None:  # the first refusal has happened: the holder now commits
        retries.append(1)
        if holder.in_transaction:
            holder.execute("COMMIT")

    enable_wal(opener, busy_timeout=5.0, on_retry=let_go)
    assert retries, "the switch never met the lock, so the retry was not exercised"
    assert _journal_mode(path) == "wal"
    opener.close()
    holder.close()


def test_a_lock_held_past_the_busy_timeout_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "catalog.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    opener = sqlite3.connect(path, isolation_level=None, timeout=0.01)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        enable_wal(opener, busy_timeout=0.05)
    holder.execute("ROLLBACK")
    assert _journal_mode(path) != "wal"
    opener.close()
    holder.close()
