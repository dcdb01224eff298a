"""Storage: atomic create-if-absent, atomic replace, listings relative to the base path."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

import pytest

from hudisql.table.io.storage import Storage


def test_create_if_absent_refuses_an_existing_file(tmp_path: Path) -> None:
    st = Storage(str(tmp_path))
    st.create_if_absent(".hoodie/1.commit", b"first")
    with pytest.raises(FileExistsError):
        st.create_if_absent(".hoodie/1.commit", b"second")
    assert st.read_bytes(".hoodie/1.commit") == b"first"
    assert [f.name for f in st.list_dir(".hoodie")] == ["1.commit"]  # no temp files left


def test_create_if_absent_has_exactly_one_winner_among_racing_threads(tmp_path: Path) -> None:
    st = Storage(str(tmp_path))
    n = 8
    barrier = threading.Barrier(n)
    outcomes: list[str] = []
    lock = threading.Lock()

    def race(i: int) -> None:
        barrier.wait()
        try:
            st.create_if_absent("x/instant", str(i).encode())
            result = "won"
        except FileExistsError:
            result = "lost"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("won") == 1
    assert outcomes.count("lost") == n - 1
    assert len(st.list_dir("x")) == 1


def test_write_atomic_replaces_content_and_leaves_no_temp_file(tmp_path: Path) -> None:
    st = Storage(str(tmp_path))
    st.write_atomic("a/p", b"one")
    st.write_atomic("a/p", b"two")
    assert st.read_bytes("a/p") == b"two"
    assert [f.name for f in st.list_dir("a")] == ["p"]


def test_listing_is_relative_to_the_base_path_and_missing_dirs_are_empty(tmp_path: Path) -> None:
    st = Storage(str(tmp_path))
    st.write_bytes("p1/f.parquet", b"x" * 3)
    assert st.list_dir("nope") == []
    files = {f.path: f.size for f in st.list_recursive() if not f.is_dir}
    assert files == {"p1/f.parquet": 3}
    assert st.size("p1/f.parquet") == 3
    assert st.is_file("p1/f.parquet") and not st.is_file("p1")


def test_storage_pickles_for_spark_executors(tmp_path: Path) -> None:
    st = Storage(str(tmp_path))
    st.write_bytes("f", b"data")
    clone = pickle.loads(pickle.dumps(st))
    assert clone.read_bytes("f") == b"data"
    assert clone.base_path == st.base_path


def test_file_uri_and_plain_path_are_the_same_place(tmp_path: Path) -> None:
    Storage(str(tmp_path)).write_bytes("f", b"1")
    assert Storage(f"file://{tmp_path}").read_bytes("f") == b"1"
