"""RowChanges: what a commit did to one file group's rows, computed in Arrow."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from hudisql.metadata.row_changes import RowChanges, replaced_rows
from hudisql.table.format.log.format import DeleteRecord
from hudisql.table.format.schema import META_COLUMNS
from hudisql.table.write.create import create_table
from hudisql.table.write.plan import NATURAL_ORDER_BRANCH, SliceWrite
from hudisql.table.write.slices import copy_on_write_merge
from hudisql.txn.writer import WriteClient
from tests.metadata.conftest import SCHEMA, row


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


_KEYS = st.integers(0, 9)
#: (precombine value, rider) of a record.
_VALUES = st.tuples(st.integers(0, 3), st.sampled_from(["r0", "r1", "r2"]))


def _staged(records: dict[int, tuple[int, str]]) -> pa.Table | None:
    """Records as a write hands them to a slice write: meta columns (the key set), data."""
    if not records:
        return None
    data = pa.Table.from_pylist([row(k, ts, rider) for k, (ts, rider) in records.items()],
                                schema=SCHEMA)
    nulls = pa.nulls(data.num_rows, pa.string())
    return pa.Table.from_arrays(
        [nulls, nulls, data.column("id"), pa.array([""] * data.num_rows), nulls, *data.columns],
        names=[*META_COLUMNS, *data.column_names])


def _as_sets(change: RowChanges) -> tuple[set[str], set[str], set[object], set[object]]:
    gone, added = change.pairs("rider")
    return (set(change.inserted.to_pylist()), set(change.removed.to_pylist()), set(gone),
            set(added))


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=8),
       st.dictionaries(_KEYS, _VALUES, max_size=8), st.sets(_KEYS, max_size=3))
def test_a_copy_on_write_merge_hands_the_changes_a_full_comparison_finds(
        stored: dict[int, tuple[int, str]], incoming: dict[int, tuple[int, str]],
        deletes: set[int]) -> None:
    """A rewritten file group's index changes come from its merge (only the rows it
    replaced, removed or added are compared): equal to comparing the whole group before
    and after, and the merged rows follow the precombine and delete rules."""
    with tempfile.TemporaryDirectory() as tmp:
        table = create_table(Path(tmp) / "t", "trips", SCHEMA, "id", (), "ts", "COPY_ON_WRITE")
        client = WriteClient(table)
        client.insert([row(k, ts, rider) for k, (ts, rider) in stored.items()])
        (file_slice,) = client.table.file_slices()
        work = SliceWrite("", file_slice.file_id, file_slice, records=_staged(incoming),
                          updates=len(incoming),
                          deletes=[DeleteRecord(f"k{k:03d}", "", 0, NATURAL_ORDER_BRANCH)
                                   for k in sorted(deletes)])
        merge = copy_on_write_merge(client.table, work)
    found = replaced_rows(merge.stored, merge.replaced, merge.winners, merge.removed,
                          merge.inserts, ["rider"])
    # The merge: a stored row loses to a record with an equal or greater ts; a delete
    # removes a stored key no record replaces.
    wins = {k: v for k, v in incoming.items() if k not in stored or v[0] >= stored[k][0]}
    expected = {k: v for k, v in stored.items() if k not in deletes or k in wins}
    expected.update(wins)
    assert {r["id"]: (r["ts"], r["rider"]) for r in merge.rows.to_pylist()} == {
        f"k{k:03d}": v for k, v in expected.items()}
    # The changes: those of a plain comparison of the group's keys and riders.
    old = {f"k{k:03d}": rider for k, (_, rider) in stored.items()}
    new = {f"k{k:03d}": rider for k, (_, rider) in expected.items()}
    changed = {k for k in set(old) & set(new) if old[k] != new[k]}
    assert _as_sets(found) == (
        set(new) - set(old), set(old) - set(new),
        {(old[k], k) for k in (set(old) - set(new)) | changed},
        {(new[k], k) for k in (set(new) - set(old)) | changed})
    assert merge.updated == len([k for k in wins if k in stored])
    assert merge.deleted == len([k for k in deletes if k in stored and k not in wins])
