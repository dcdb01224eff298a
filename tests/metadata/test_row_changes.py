"""RowChanges: what a commit did to one file group's rows, computed in Arrow."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from hudisql.metadata.row_changes import RowChanges


def rows(keys: list[str], values: list[object]) -> pa.Table:
    return pa.table({"_hoodie_record_key": keys, "n": values})


def test_keys_in_and_out_and_changed_values() -> None:
    before = rows(["a", "b", "c", "d", "e"], [1, None, 3, None, 5])
    after = rows(["a", "b", "c", "d", "f"], [1, None, 30, 4, 6])
    change = RowChanges.of(before, after, ["n"])
    assert change.inserted.to_pylist() == ["f"] and change.removed.to_pylist() == ["e"]
    gone, added = change.pairs("n")
    # Equal values and nulls on both sides are no change; int values become their text.
    assert sorted(gone, key=str) == sorted([("5", "e"), ("3", "c"), (None, "d")], key=str)
    assert sorted(added, key=str) == sorted([("6", "f"), ("30", "c"), ("4", "d")], key=str)


def test_a_file_group_created_or_replaced_whole() -> None:
    created = RowChanges.of(None, rows(["a"], [7]), ["n"])
    assert (created.inserted.to_pylist(), created.removed.to_pylist(), created.pairs("n")) == (
        ["a"], [], ([], [("7", "a")]))
    replaced = RowChanges.of(rows(["a"], [7]), None, ["n"])
    assert (replaced.inserted.to_pylist(), replaced.removed.to_pylist(),
            replaced.pairs("n")) == ([], ["a"], ([("7", "a")], []))
    assert RowChanges.of(None, None, []) == RowChanges()


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=3), st.one_of(st.none(), st.integers(0, 3)), max_size=12),
       st.dictionaries(st.text(max_size=3), st.one_of(st.none(), st.integers(0, 3)), max_size=12))
def test_changes_equal_a_plain_python_diff(old: dict[str, int | None],
                                           new: dict[str, int | None]) -> None:
    """Keys in, keys out and changed values, as sets, equal a dict-by-dict comparison."""
    change = RowChanges.of(rows(list(old), list(old.values())), rows(list(new), list(new.values())),
                           ["n"])
    text = {k: None if v is None else str(v) for k, v in {**old, **new}.items()}
    assert sorted(change.inserted.to_pylist()) == sorted(set(new) - set(old))
    assert sorted(change.removed.to_pylist()) == sorted(set(old) - set(new))
    changed = {k for k in set(old) & set(new) if old[k] != new[k]}
    gone, added = change.pairs("n")
    as_text = {k: None if v is None else str(v) for k, v in old.items()}
    assert set(gone) == {(as_text[k], k) for k in (set(old) - set(new)) | changed}
    assert set(added) == {(text[k], k) for k in (set(new) - set(old)) | changed}
    assert len(gone) == len(set(gone)) and len(added) == len(set(added))
    # The wire form (a write task's to the driver) gives the same changes back.
    assert RowChanges.from_ipc(change.to_ipc()) == change
