"""Expression blocks on real MOR tables: written by ``write_log_file``, applied by the merge.

Each test builds a table with the core's writer, then commits expression blocks exactly as
a write task does (``write_log_file(..., expressions=...)`` inside a deltacommit whose
metadata records its committed log files), and reads it back through ``HudiTable.read``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudisql.errors import HudiSqlError, WriteError
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.filenames import write_token
from hudisql.table.format.instant import Action
from hudisql.table.read.expressions import (
    EXPRESSIONS_PROPERTY,
    apply_expressions,
    schema_expressions,
)
from hudisql.table.read.merge import read_file_slice
from hudisql.table.read.reconcile import record_committed_log_files, show_log_blocks
from hudisql.table.table import HudiTable
from hudisql.table.write.files import avro_text, write_log_file
from hudisql.table.write.slices import writer_schema
from hudisql.txn.writer import WriteClient, create_table

SCHEMA = pa.schema([("id", pa.string()), ("c", pa.int64()), ("name", pa.string())])
ROWS = [{"id": "k1", "c": 10, "name": "one"}, {"id": "k2", "c": 20, "name": "two"},
        {"id": "k3", "c": None, "name": "three"}]


def _table(root: Path) -> HudiTable:
    path = root / "t"
    create_table(str(path), "t", SCHEMA, ["id"], table_type="MERGE_ON_READ")
    WriteClient(HudiTable.open(path)).insert(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    return HudiTable.open(path)


def _records(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    full = [{"id": r["id"], "c": r.get("c"), "name": r.get("name"),
             "_hoodie_record_key": r["id"]} for r in rows]
    return pa.Table.from_pylist(full, schema=SCHEMA.append(pa.field("_hoodie_record_key",
                                                                    pa.string())))


def _commit(table: HudiTable, rows: Sequence[Mapping[str, Any]],
            ops: Mapping[str, str] | None, attempts: Sequence[int] = (0,),
            committed: int | None = None) -> str:
    """One deltacommit writing ``rows`` to the table's one file group once per attempt.

    Every attempt writes its own log file (a retried task); the commit keeps the stat of
    ``committed`` (default: the last attempt), as the driver does.
    """
    table = table.reload()
    [file_slice] = table.file_slices()
    timeline = table.timeline
    inflight = timeline.transition_to_inflight(timeline.create_requested(Action.DELTACOMMIT))
    ts = inflight.timestamp
    schema = avro_text(writer_schema(table)[0])
    stats = {}
    for attempt in attempts:
        stats[attempt] = write_log_file(
            table.storage, "", file_slice.file_id, file_slice.base_instant, ts,
            write_token(0, 1, 10 + attempt), _records(rows), schema, attempt=attempt,
            expressions=ops)
    meta = CommitMetadata(extra_metadata={"schema": schema}, operation_type="UPSERT")
    meta.add_write_stat(stats[attempts[-1] if committed is None else committed])
    record_committed_log_files(meta)
    timeline.complete(inflight, meta.to_json())
    return ts


def _read(
    table: HudiTable, reconcile: str | None = None, **kw: Any
) -> dict[str, tuple[Any, Any]]:
    table = table.reload()
    columns = ["id", "c", "name"]
    if reconcile is None:
        rows = table.read(columns=columns, **kw).to_pylist()
    else:  # one file slice, read with that reconciliation mode
        [file_slice] = table.file_slices()
        rows = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                               columns=columns, reconcile=reconcile).to_pylist()
    return {r["id"]: (r["c"], r["name"]) for r in rows}


def test_an_add_expression_applies_once_and_keeps_the_other_columns(tmp_path: Path) -> None:
    table = _table(tmp_path)
    ts = _commit(table, [{"id": "k1", "c": 5}, {"id": "k3", "c": 1}], {"c": "add"})
    assert _read(table) == {"k1": (15, "one"), "k2": (20, "two"), "k3": (None, "three")}
    # The changed row carries the instant that changed it.
    rows = table.reload().read(columns=["id", "_hoodie_commit_time"]).to_pylist()
    assert {r["id"]: r["_hoodie_commit_time"] for r in rows}["k1"] == ts
    # The block's header marks it; the table's schema (commit metadata) does not carry it.
    [block] = [b for b in show_log_blocks(table.reload()).to_pylist() if b["instant_time"] == ts]
    assert block["verdict"] == "valid"
    assert EXPRESSIONS_PROPERTY not in (table.reload().timeline.latest_schema() or "")


def test_expressions_apply_at_their_position_in_the_log(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _commit(table, [{"id": "k1", "c": 5}], {"c": "add"})
    _commit(table, [{"id": "k1", "c": 100, "name": "reset"}], None)  # a plain upsert
    _commit(table, [{"id": "k1", "c": 1}, {"id": "k2", "c": -20}], {"c": "add"})
    _commit(table, [{"id": "k2", "name": "renamed"}], {"name": "set"})
    assert _read(table) == {"k1": (101, "reset"), "k2": (0, "renamed"), "k3": (None, "three")}
    # Time travel sees the state at each instant.
    first = table.reload().timeline.completed()[1].timestamp
    assert _read(table, as_of=first)["k1"] == (15, "one")


def test_an_expression_never_inserts_a_key_without_a_current_row(tmp_path: Path) -> None:
    table = _table(tmp_path)
    WriteClient(table.reload()).delete(["k2"])
    _commit(table, [{"id": "k2", "c": 1}, {"id": "new", "c": 1}, {"id": "k1", "c": 1}],
            {"c": "add"})
    assert _read(table) == {"k1": (11, "one"), "k3": (None, "three")}


def test_records_of_one_key_in_one_block_apply_one_after_another(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _commit(table, [{"id": "k1", "c": 1}, {"id": "k1", "c": 2}, {"id": "k1", "c": 3}],
            {"c": "add"})
    assert _read(table)["k1"] == (16, "one")


def test_a_retried_attempts_expression_block_is_never_applied_twice(tmp_path: Path) -> None:
    table = _table(tmp_path)
    ts = _commit(table, [{"id": "k1", "c": 5}], {"c": "add"}, attempts=(0, 1))
    for mode in ("full", "sequence"):
        assert _read(table, reconcile=mode)["k1"] == (15, "one"), mode
        verdicts = [(b["attempt"], b["verdict"]) for b in
                    show_log_blocks(table.reload(), mode=mode).to_pylist()
                    if b["instant_time"] == ts]
        assert sorted(verdicts) == [(0, "spurious"), (1, "valid")], mode
    # Without reconciliation the duplicate adds twice: the protection is what keeps it exact.
    assert _read(table, reconcile="off")["k1"] == (20, "one")


def test_only_rule_a_keeps_an_earlier_committed_attempt_of_equal_length(tmp_path: Path) -> None:
    # Speculation: both attempts complete; the driver kept attempt 0, written first.
    table = _table(tmp_path)
    ts = _commit(table, [{"id": "k1", "c": 5}], {"c": "add"}, attempts=(0, 1), committed=0)
    assert _read(table)["k1"] == (15, "one")
    valid = [b["attempt"] for b in show_log_blocks(table.reload()).to_pylist()
             if b["instant_time"] == ts and b["verdict"] == "valid"]
    assert valid == [0]
    # Rule (b) picks the run written last: the same sum here, but from the other attempt's
    # block; with different operands only rule (a) would be right.
    seq = [b["attempt"] for b in show_log_blocks(table.reload(), mode="sequence").to_pylist()
           if b["instant_time"] == ts and b["verdict"] == "valid"]
    assert seq == [1]


def test_bad_expressions_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    table = _table(tmp_path)
    before = sorted(s.path for s in table.storage.list_recursive("") if not s.is_dir)
    for ops, message in (({"nope": "add"}, "not a data column"),
                         ({"_hoodie_commit_time": "set"}, "not a data column"),
                         ({"name": "add"}, "not a number"),
                         ({"c": "multiply"}, "unknown expression"),
                         ({}, "at least one")):
        with pytest.raises(WriteError, match=message):
            write_log_file(table.storage, "", table.file_slices()[0].file_id,
                           table.file_slices()[0].base_instant, "20990101000000000",
                           "0-1-1", _records([{"id": "k1", "c": 1}]),
                           table.avro_schema, expressions=ops)
    after = sorted(s.path for s in table.storage.list_recursive("") if not s.is_dir)
    assert after == before


def test_null_operands_and_overflow(tmp_path: Path) -> None:
    schema = pa.schema([("_hoodie_record_key", pa.string()), ("c", pa.int64())])
    state = pa.Table.from_pylist([{"_hoodie_record_key": "a", "c": 1},
                                  {"_hoodie_record_key": "b", "c": 2**63 - 1}], schema=schema)
    nulls = pa.Table.from_pylist([{"_hoodie_record_key": "a", "c": None}], schema=schema)
    assert apply_expressions(state, nulls, {"c": "add"}).to_pylist()[-1]["c"] is None
    over = pa.Table.from_pylist([{"_hoodie_record_key": "b", "c": 1}], schema=schema)
    with pytest.raises(HudiSqlError, match="does not fit"):
        apply_expressions(state, over, {"c": "add"})


def test_a_malformed_expressions_property_is_a_clear_error() -> None:
    bad = json.dumps({"type": "record", "name": "r", "fields": [],
                      EXPRESSIONS_PROPERTY: {"c": "divide"}})
    with pytest.raises(HudiSqlError, match="not a map of columns"):
        schema_expressions(bad, "log block at byte 0 of f.log.1")
    assert schema_expressions(json.dumps({"type": "record", "name": "r", "fields": []})) is None


def test_the_hudi_rs_reader_refuses_expression_blocks_until_compaction(tmp_path: Path) -> None:
    # hudi-rs does not know expression records: it would read the operand as the value and
    # nulls in the kept columns. The block's hudisql header key makes it fail instead; a
    # compaction folds the expressions into a base file, which it then reads exactly.
    import hudi
    from hudi import HudiTable as RsTable

    from hudisql.services.compaction import run_compaction

    table = _table(tmp_path)
    _commit(table, [{"id": "k1", "c": 5}], {"c": "add"})
    assert _read(table)["k1"] == (15, "one")
    with pytest.raises(Exception, match="Invalid metadata key: 1001"):
        RsTable(str(tmp_path / "t")).read()
    assert run_compaction(table.reload()) is not None
    rows = pa.Table.from_batches(hudi.HudiTable(str(tmp_path / "t")).read()).to_pylist()
    assert {r["id"]: (r["c"], r["name"]) for r in rows} == _read(table)
    assert _read(table)["k1"] == (15, "one")


def test_log_compaction_keeps_expression_blocks_exact_and_other_readers_refusing(
    tmp_path: Path,
) -> None:
    """A log compaction over a slice with expression blocks between plain ones gives the same
    rows as of every instant; consecutive expression blocks of one kind become one block,
    still marked, so hudi-rs still refuses the slice until a full compaction."""
    from hudi import HudiTable as RsTable

    from hudisql.services.compaction import run_compaction
    from hudisql.services.log_compaction import run_log_compaction
    from hudisql.table.format.log.format import HeaderKey
    from hudisql.table.format.log.reader import scan_log_file

    table = _table(tmp_path)
    times = [
        _commit(table, [{"id": "k1", "c": 1, "name": "a"}], None),
        _commit(table, [{"id": "k1", "c": 5}, {"id": "k2", "c": 1}], {"c": "add"}),
        # k4 has no row: an expression never inserts; k1 gets two adds in one run.
        _commit(table, [{"id": "k1", "c": 2}, {"id": "k4", "c": 9}], {"c": "add"}),
        _commit(table, [{"id": "k2", "c": 100, "name": "new"}], None),
        _commit(table, [{"id": "k2", "name": "renamed"}], {"name": "set"}),
        _commit(table, [{"id": "k1", "c": 3}, {"id": "k3", "c": 4}], {"c": "add"}),
    ]
    before = {t: _read(table, as_of=t) for t in times}
    assert before[times[-1]] == {"k1": (11, "a"), "k2": (100, "renamed"), "k3": (None, "three")}
    result = run_log_compaction(table.reload(), options={
        "hoodie.log.compaction.blocks.threshold": "2"})
    assert result is not None
    table = table.reload()
    assert {t: _read(table, as_of=t) for t in times} == before
    assert _read(table) == before[times[-1]]
    (stat,) = result.write_stats
    blocks = scan_log_file(table.storage, stat.path)
    kinds = [block.header.get(HeaderKey.HUDISQL_EXPRESSIONS) for block in blocks]
    # plain, the two adds as one block, plain, the set, the last add.
    assert kinds == [None, '{"c": "add"}', None, '{"name": "set"}', '{"c": "add"}']
    assert all(block.compacted_block_times == list(reversed(times)) for block in blocks)
    with pytest.raises(Exception, match="Invalid metadata key: 1001"):
        RsTable(str(tmp_path / "t")).read()
    assert run_compaction(table) is not None
    rows = pa.Table.from_batches(RsTable(str(tmp_path / "t")).read()).to_pylist()
    assert {r["id"]: (r["c"], r["name"]) for r in rows} == _read(table) == before[times[-1]]
