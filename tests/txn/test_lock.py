"""Table locks: mutual exclusion across threads and processes, timeouts, provider choice."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from hudisql.errors import LockError
from hudisql.txn.lock import (
    LOCK_FILESYSTEM_PATH,
    LOCK_PROVIDER,
    LOCK_WAIT_MS,
    FileLockProvider,
    InProcessLockProvider,
    lock_provider_for,
    lock_timeout,
)

SPAWN = mp.get_context("spawn")


def _hold_file_lock(lock_dir: str, key: str, held: object, release: object) -> None:
    """Child process: take the lock, say so, and keep it until told to release."""
    with FileLockProvider(lock_dir).lock(key, timeout=30):
        held.set()  # type: ignore[attr-defined]
        release.wait(30)  # type: ignore[attr-defined]


def _count_under_file_lock(lock_dir: str, key: str, counter: str, n: int, barrier: object) -> None:
    """Child process: n read-modify-write increments of a counter file, each under the lock."""
    provider = FileLockProvider(lock_dir)
    barrier.wait()  # type: ignore[attr-defined]
    for _ in range(n):
        with provider.lock(key, timeout=60):
            value = int(Path(counter).read_text())
            Path(counter).write_text(str(value + 1))


def test_file_lock_excludes_another_process(tmp_path: Path) -> None:
    held, release = SPAWN.Event(), SPAWN.Event()
    child = SPAWN.Process(target=_hold_file_lock, args=(str(tmp_path), "/t/a", held, release))
    child.start()
    try:
        assert held.wait(60)
        provider = FileLockProvider(tmp_path)
        with pytest.raises(LockError, match=r"could not lock table /t/a within 0.05s"):
            provider.acquire("/t/a", timeout=0.05)
        # Another table's lock is independent.
        with provider.lock("/t/b", timeout=0.05):
            pass
    finally:
        release.set()
        child.join(60)
    assert child.exitcode == 0
    with FileLockProvider(tmp_path).lock("/t/a", timeout=5):
        pass


def test_file_lock_serializes_increments_of_many_processes(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    barrier = SPAWN.Barrier(3)
    procs = [
        SPAWN.Process(target=_count_under_file_lock,
                      args=(str(tmp_path / "locks"), "/t", str(counter), 40, barrier))
        for _ in range(3)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert int(counter.read_text()) == 120


def test_file_lock_excludes_threads_of_one_process(tmp_path: Path) -> None:
    provider = FileLockProvider(tmp_path)
    release = provider.acquire("/t", timeout=1)
    errors: list[BaseException] = []

    def contender() -> None:
        try:
            FileLockProvider(tmp_path).acquire("/t", timeout=0.05)
        except LockError as exc:
            errors.append(exc)

    thread = threading.Thread(target=contender)
    thread.start()
    thread.join()
    release()
    assert len(errors) == 1
    with provider.lock("/t", timeout=1):
        pass


def test_in_process_lock_excludes_other_threads_and_times_out() -> None:
    provider = InProcessLockProvider()
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        # A second provider instance shares the process-wide lock of the key.
        with InProcessLockProvider().lock("/in/process", timeout=1):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(30)
    with pytest.raises(LockError, match="another thread of this process"):
        provider.acquire("/in/process", timeout=0.02)
    release.set()
    thread.join()
    with provider.lock("/in/process", timeout=1):
        pass


def test_in_process_lock_serializes_increments_of_many_threads() -> None:
    provider = InProcessLockProvider()
    state = {"n": 0}
    barrier = threading.Barrier(4)
    switch = threading.Event()

    def worker() -> None:
        barrier.wait()
        for _ in range(200):
            with provider.lock("/counter", timeout=30):
                value = state["n"]
                switch.wait(0)  # yields the GIL between read and write
                state["n"] = value + 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["n"] == 800


def test_lock_is_released_when_the_block_raises(tmp_path: Path) -> None:
    for provider in (InProcessLockProvider(), FileLockProvider(tmp_path)):
        with pytest.raises(RuntimeError), provider.lock("/raise", timeout=1):
            raise RuntimeError("boom")
        with provider.lock("/raise", timeout=0.05):
            pass


def test_file_lock_in_unwritable_place_names_the_option(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(LockError, match=LOCK_FILESYSTEM_PATH):
        FileLockProvider(blocker / "locks").acquire("/t", timeout=0.01)


class _RecordingProvider(InProcessLockProvider):
    """A provider built from options (for the dotted-path form)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)


def test_lock_provider_chosen_by_option(tmp_path: Path) -> None:
    assert type(lock_provider_for({})) is InProcessLockProvider
    assert type(lock_provider_for({LOCK_PROVIDER: "in-process"})) is InProcessLockProvider
    hudi_name = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
    provider = lock_provider_for({LOCK_PROVIDER: hudi_name, LOCK_FILESYSTEM_PATH: str(tmp_path)})
    assert isinstance(provider, FileLockProvider)
    assert provider.lock_dir == str(tmp_path)
    dotted = f"{__name__}._RecordingProvider"
    built = lock_provider_for({LOCK_PROVIDER: dotted, "k": "v"})
    assert isinstance(built, _RecordingProvider) and built.options["k"] == "v"
    with pytest.raises(LockError, match=r"unknown hoodie\.write\.lock\.provider='zookeeper'"):
        lock_provider_for({LOCK_PROVIDER: "zookeeper"})
    with pytest.raises(LockError, match="unknown"):
        lock_provider_for({LOCK_PROVIDER: "hudisql.errors.LockError"})


def test_short_names_are_dotted_paths_imported_only_when_asked_for() -> None:
    # Nothing registers itself on import: the txn layer knows the catalog's provider by
    # name, and importing it does not pull in the catalog (a layer above it).
    code = (
        "import sys\n"
        "from hudisql.txn.lock import LOCK_PROVIDERS, provider_path\n"
        "assert 'hudisql.catalog' not in sys.modules, 'imported on import'\n"
        "assert provider_path('catalog') == 'hudisql.catalog.lock.CatalogLockProvider'\n"
        "assert provider_path('org.apache.hudi.client.transaction.lock."
        "FileSystemBasedLockProvider') == LOCK_PROVIDERS['file']\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert isinstance(lock_provider_for({LOCK_PROVIDER: "in-process"}), InProcessLockProvider)
    built = lock_provider_for({LOCK_PROVIDER: "file", LOCK_FILESYSTEM_PATH: "/tmp/x-locks"})
    assert isinstance(built, FileLockProvider) and built.lock_dir == "/tmp/x-locks"


def test_lock_timeout_option() -> None:
    assert lock_timeout({}) == 60.0
    assert lock_timeout({LOCK_WAIT_MS: "250"}) == 0.25
    with pytest.raises(LockError, match=LOCK_WAIT_MS):
        lock_timeout({LOCK_WAIT_MS: "soon"})
