"""Heartbeats of inflight instants: refreshed by a thread, expired when their writer died."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from hudisql.table.io.storage import Storage
from hudisql.txn.heartbeat import (
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_TOLERABLE_MISSES,
    Heartbeat,
    heartbeat_path,
    heartbeat_settings,
    is_abandoned,
    last_heartbeat,
)

INSTANT = "20240101000000000"


def test_beat_records_the_clock_in_milliseconds(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    Heartbeat(storage, INSTANT, clock=lambda: 1700000000.25).beat()
    assert (tmp_path / ".hoodie/.heartbeat" / INSTANT).read_text() == "1700000000250"
    assert last_heartbeat(storage, INSTANT) == 1700000000.25


def test_missing_heartbeat_means_abandoned(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    assert last_heartbeat(storage, INSTANT) is None
    assert is_abandoned(storage, INSTANT, interval=60)


def test_expiry_after_tolerable_misses(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    Heartbeat(storage, INSTANT, clock=lambda: 1000.0).beat()
    assert not is_abandoned(storage, INSTANT, interval=10, tolerable_misses=2, now=1020.0)
    assert is_abandoned(storage, INSTANT, interval=10, tolerable_misses=2, now=1020.5)


def test_empty_heartbeat_file_uses_its_modification_time(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    path = tmp_path / heartbeat_path(INSTANT)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")  # how Apache Hudi writes it
    os.utime(path, (5000.0, 5000.0))
    assert last_heartbeat(storage, INSTANT) == 5000.0
    assert is_abandoned(storage, INSTANT, interval=1, tolerable_misses=2, now=5002.5)


def test_thread_refreshes_until_stopped_then_file_is_gone(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    ticks = itertools.count(100)
    seen: list[float] = []
    three = threading.Event()

    def on_beat(at: float) -> None:
        seen.append(at)
        if len(seen) == 3:
            three.set()

    beat = Heartbeat(storage, INSTANT, interval=0.001, clock=lambda: float(next(ticks)),
                     on_beat=on_beat)
    with beat:
        assert three.wait(30)
        assert last_heartbeat(storage, INSTANT) is not None
        assert last_heartbeat(storage, INSTANT) >= 102  # type: ignore[operator]
    assert seen[:3] == [100.0, 101.0, 102.0]
    assert beat.error is None
    assert not (tmp_path / heartbeat_path(INSTANT)).exists()


def test_settings_from_hudi_options() -> None:
    assert heartbeat_settings({}) == (60.0, 2)
    assert heartbeat_settings({HEARTBEAT_INTERVAL_MS: "500", HEARTBEAT_TOLERABLE_MISSES: "4"}) == (
        0.5, 4)


_CHILD = """
import sys
from hudisql.table.io.storage import Storage
from hudisql.txn.heartbeat import Heartbeat
Heartbeat(Storage(sys.argv[1]), sys.argv[2], interval=3600).start()
print("beating", flush=True)
sys.stdin.read()
"""


def test_killed_writer_leaves_a_heartbeat_that_expires(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), INSTANT],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "beating"
    storage = Storage(str(tmp_path))
    beat = last_heartbeat(storage, INSTANT)
    assert beat is not None
    assert not is_abandoned(storage, INSTANT, interval=3600, now=beat + 1)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    # The dead writer never removed its heartbeat, and nothing refreshes it any more.
    assert last_heartbeat(storage, INSTANT) == beat
    assert is_abandoned(storage, INSTANT, interval=3600, tolerable_misses=2, now=beat + 7201)
