"""RowChanges: what a commit did to one file group's rows, computed in Arrow."""

from __future__ import annotations

import pyarrow as pa

from hudisql.metadata.row_changes import RowChanges


def rows(keys: list[str], values: list[object]) -> pa.Table:
    return pa.table({"_hoodie_record_key": keys, "n": values})


def test_keys_in_and_out_and_changed_values() -> None:
    before = rows(["a", "b", "c", "d", "e"], [1, None, 3, None, 5])
    after = rows(["a", "b", "c", "d", "f"], [1, None, 30, 4, 6])
    change = RowChanges.of(before, after, ["n"])
    assert change.inserted == ["f"] and change.removed == ["e"]
    gone, added = change.secondary["n"]
    # Equal values and nulls on both sides are no change; int values become their text.
    assert sorted(gone, key=str) == sorted([("5", "e"), ("3", "c"), (None, "d")], key=str)
    assert sorted(added, key=str) == sorted([("6", "f"), ("30", "c"), ("4", "d")], key=str)


def test_a_file_group_created_or_replaced_whole() -> None:
    created = RowChanges.of(None, rows(["a"], [7]), ["n"])
    assert (created.inserted, created.removed, created.secondary) == (
        ["a"], [], {"n": ([], [("7", "a")])})
    replaced = RowChanges.of(rows(["a"], [7]), None, ["n"])
    assert (replaced.inserted, replaced.removed, replaced.secondary) == (
        [], ["a"], {"n": ([("7", "a")], [])})
    assert RowChanges.of(None, None, []) == RowChanges()
