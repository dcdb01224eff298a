"""The streamed merge (``stream_file_slice``): exact rows against a model of the rules.

Slices are real v6 MOR tables (``SliceTable`` of ``test_merge.py``). The model applies
docs/FORMAT.md's rules key by key in plain Python: a natural-order delete wipes every earlier
item of its key, then the greatest (tier, ordering value, is delete, log position) wins,
where the tier is 2 for an ordering value, 1 for none and 0 for a natural-order delete.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudisql.table.read.log_changes import log_changes, touched_base_rows
from hudisql.table.read.merge import conform_table, read_file_slice, stream_file_slice
from tests.table.test_merge import BASE, SliceTable

KEYS = [f"k{i}" for i in range(8)]
# One log block: ("data", [(key, ord, val)]) or ("delete", [(key, ordering value)]).
_ord = st.one_of(st.none(), st.integers(1, 4))
_data = st.tuples(st.just("data"), st.lists(
    st.tuples(st.sampled_from(KEYS), _ord, st.text("xyz", min_size=1, max_size=3)),
    min_size=1, max_size=5))
_delete = st.tuples(st.just("delete"), st.lists(
    st.tuples(st.sampled_from(KEYS), st.sampled_from([0, 1, 2, 3])), min_size=1, max_size=3))


def _model(base: list[tuple[str, Any, str]], blocks: list[Any]) -> dict[str, tuple[Any, str]]:
    """Per key: (ord, val) of the winner under docs/FORMAT.md's rules; deleted keys absent."""
    items: dict[str, list[tuple[int, Any, int, int, tuple[Any, str] | None]]] = {}
    pos = 0
    for key, ord_, val in base:
        items.setdefault(key, []).append((1 if ord_ is None else 2, ord_, 0, -1, (ord_, val)))
    for kind, records in blocks:
        for record in records:
            pos += 1
            if kind == "data":
                key, ord_, val = record
                tier = 1 if ord_ is None else 2
                items.setdefault(key, []).append((tier, ord_, 0, pos, (ord_, val)))
            else:
                key, ord_ = record
                tier = 0 if ord_ == 0 else 2
                items.setdefault(key, []).append((tier, ord_ or None, 1, pos, None))
    result = {}
    for key, entries in items.items():
        natural = [e[3] for e in entries if e[0] == 0]
        if natural:
            entries = [e for e in entries if e[3] >= max(natural)]
        best = max(entries, key=lambda e: (e[0], e[1] if e[0] == 2 else 0, e[2], e[3]))
        if best[4] is not None:
            result[key] = best[4]
    return result


def _slice(root: Path, base: list[tuple[str, Any, str]], blocks: list[Any]) -> SliceTable:
    table = SliceTable(root)
    table.instant(BASE)
    table.write_base(list(base))
    for i, (kind, records) in enumerate(blocks):
        ts = f"2024010100{i + 1:03d}0000"
        table.instant(ts)
        if kind == "data":
            table.write_log(table.data(ts, list(records)))
        else:
            table.write_log(table.delete(ts, list(records)))
    return table


def _resolved(table: SliceTable, batch_rows: int) -> list[dict[str, Any]]:
    """The slice's rows as Spark's merged scan (``hudisql.read.log_merge``) builds them: the
    base file minus the positions :meth:`LogChanges.resolve` says lose, plus its records."""
    file_slice, timeline = table.slice(), table.timeline.reload()
    whole = read_file_slice(table.storage, table.props, timeline, file_slice)
    changes = log_changes(table.storage, table.props, timeline, file_slice, whole.schema)
    assert changes is not None and file_slice.base_file is not None
    positions, records = changes.resolve(touched_base_rows(table.storage, changes, batch_rows))
    with table.storage.open_input_file(file_slice.base_file.path) as f:
        base = conform_table(pq.read_table(f), whole.schema)
    keep = np.ones(base.num_rows, bool)
    keep[positions] = False
    rows = pa.concat_tables([base.filter(pa.array(keep)), conform_table(records, whole.schema)])
    return list(rows.to_pylist())


def _stream(table: SliceTable, batch_rows: int) -> list[Any]:
    chunks, _ = stream_file_slice(table.storage, table.props, table.timeline.reload(),
                                  table.slice(), batch_rows=batch_rows)
    return list(chunks)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    base_keys=st.lists(st.sampled_from(KEYS), unique=True, max_size=6),
    base_ord=_ord,
    blocks=st.lists(st.one_of(_data, _delete), min_size=1, max_size=4),
    batch_rows=st.integers(1, 4),
)
def test_streamed_merge_gives_the_rules_rows_at_any_batch_size(
    tmp_path_factory: pytest.TempPathFactory, base_keys: list[str], base_ord: Any,
    blocks: list[Any], batch_rows: int,
) -> None:
    base = [(k, base_ord, f"base-{k}") for k in base_keys]
    table = _slice(tmp_path_factory.mktemp("s"), base, blocks)
    chunks = _stream(table, batch_rows)
    rows = [r for chunk in chunks for r in chunk.to_pylist()]
    got = {r["id"]: (r["ord"], r["val"]) for r in rows}
    assert len(got) == len(rows), "one row per key"
    assert got == _model(base, blocks)
    whole = read_file_slice(table.storage, table.props, table.timeline.reload(), table.slice())
    assert sorted(whole.to_pylist(), key=str) == sorted(rows, key=str)
    assert sorted(_resolved(table, batch_rows), key=str) == sorted(rows, key=str)


def test_batches_no_log_touches_pass_and_log_inserts_come_last(tmp_path: Path) -> None:
    base = [(f"b{i}", 5, f"base-{i}") for i in range(6)]
    table = _slice(tmp_path / "t", base, [("data", [("b4", 6, "new-4"), ("z", 1, "ins")])])
    chunks = _stream(table, 2)
    assert [c.column("val").to_pylist() for c in chunks] == [
        ["base-0", "base-1"], ["base-2", "base-3"], ["base-5", "new-4"], ["ins"],
    ]


def test_a_key_held_twice_by_the_base_merges_into_its_first_row(tmp_path: Path) -> None:
    # As in Hudi's merged reader: the log record replaces the first base row of its key,
    # a later duplicate passes as it is.
    base = [("a", 5, "base-a1"), ("b", 5, "base-b"), ("a", 5, "base-a2")]
    table = _slice(tmp_path / "t", base, [("data", [("a", 6, "new-a")])])
    rows = [r for c in _stream(table, 1) for r in c.to_pylist()]
    assert [r["val"] for r in rows] == ["new-a", "base-b", "base-a2"]
    assert sorted(r["val"] for r in _resolved(table, 1)) == ["base-a2", "base-b", "new-a"]
