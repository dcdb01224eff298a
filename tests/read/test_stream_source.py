"""``spark.readStream.format("hudi")``: a version 9 table that receives upserts, deletes, a
compaction and a rolled-back write, streamed one commit per micro-batch, returns every
committed row version once (each batch is the incremental query of its commit), and in CDC
format the union of the batches is the one CDC read of the whole range. Offsets are
completion times: ``startOffset`` latest/a time start where they say, and a write that
completes after a later-requested one is read once, by the batch after (checkpointed).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pyarrow as pa
import pytest

from hudisql.services.compaction import run_compaction, schedule_compaction
from hudisql.table.format.instant import WRITE_ACTIONS
from hudisql.table.read.cdc import read_cdc
from hudisql.table.read.incremental import read_incremental
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.table.test_incremental import History, make_history, records

pytestmark = [pytest.mark.slow]
_names = itertools.count()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """insert, update, delete, a rolled-back write, a late upsert, a compaction, an upsert."""
    made = make_history(tmp_path_factory.mktemp("stream"), "MERGE_ON_READ")
    table = made.table()
    planned = schedule_compaction(table)
    assert planned is not None
    run_compaction(table.reload(), planned)
    WriteClient(HudiTable.open(made.path)).upsert(records([11, 12], 5, 700.0))
    return made


def _stream(spark, path: str | None, table: str | None = None,  # type: ignore[no-untyped-def]
            **options: str) -> list[dict[str, object]]:
    name = f"hudi_stream_{next(_names)}"
    reader = spark.readStream.options(**options)
    frame = reader.table(table) if table else reader.format("hudi").load(path)
    query = (frame.writeStream.format("memory").queryName(name).trigger(availableNow=True)
             .start())
    query.awaitTermination()
    rows = [r.asDict() for r in spark.table(name).collect()]
    spark.sql(f"DROP VIEW IF EXISTS {name}")
    return rows


def _data_commits(table: HudiTable) -> list[str]:
    """Where each completed write ends a range: its completion time, in that order."""
    undone = table.timeline.rolled_back_instants()
    return sorted(i.completion_time or i.timestamp for i in table.timeline.completed(WRITE_ACTIONS)
                  if i.timestamp not in undone)


def _checkpointed(spark, path: str, root: Path, **options: str  # type: ignore[no-untyped-def]
                  ) -> list[tuple[int, str, str]]:
    """Runs (or resumes) the query checkpointed under ``root``, Trigger.AvailableNow; returns
    ``(batch id, uuid, commit time)`` of every row its sink received so far."""
    out = root / "rows.jsonl"

    def sink(frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        with out.open("a") as f:
            for row in frame.select("uuid", "_hoodie_commit_time").collect():
                f.write(json.dumps([batch_id, row[0], row[1]]) + "\n")

    query = (spark.readStream.options(**options).format("hudi").load(path).writeStream
             .foreachBatch(sink).option("checkpointLocation", str(root / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return [tuple(json.loads(line)) for line in out.read_text().splitlines()] \
        if out.exists() else []


def _versions(rows: list[dict[str, object]] | pa.Table) -> list[tuple[object, ...]]:
    listed = rows.to_pylist() if isinstance(rows, pa.Table) else rows
    return sorted((r["uuid"], r["fare"], r["_hoodie_commit_time"]) for r in listed)


def test_every_committed_row_version_once(spark, history: History) -> None:  # type: ignore[no-untyped-def]
    table = history.table()
    commits = _data_commits(table)
    expected: list[dict[str, object]] = []
    for begin, end in zip(["earliest", *commits], commits, strict=False):
        expected += read_incremental(table, begin, end).to_pylist()
    got = _stream(spark, history.path, maxFilesPerTrigger="1")
    assert _versions(got) == _versions(expected)
    assert {r["uuid"]: r["fare"] for r in got if r["_hoodie_commit_time"] == history.late} \
        == {"k10": 510.0}
    assert not [r for r in got if r["_hoodie_commit_time"] == history.rolled_back]
    # By table name, without a limit: one batch, the latest state of the whole range.
    name = f"streamed_source_{next(_names)}"
    spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{history.path}'")
    try:
        assert _versions(_stream(spark, None, name)) == _versions(
            read_incremental(table, "earliest"))
    finally:
        spark.sql(f"DROP TABLE {name}")


def test_cdc_batches_add_up_to_one_cdc_read(spark, history: History) -> None:  # type: ignore[no-untyped-def]
    got = _stream(spark, history.path, maxRowsPerTrigger="3",
                  **{"hoodie.datasource.query.type": "incremental",
                     "hoodie.datasource.query.incremental.format": "cdc"})
    whole = read_cdc(history.table(), "earliest").to_pylist()

    def changes(rows: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return sorted((r["op"], r["ts_ms"], r["before"] or "", r["after"] or "") for r in rows)

    assert changes(got) == changes(whole) and len(got) == len(whole)


def test_start_offsets_and_writes_completing_out_of_order(  # type: ignore[no-untyped-def]
    spark, history: History, tmp_path: Path,
) -> None:
    table = history.table()
    assert _stream(spark, history.path, **{"hoodie.datasource.streaming.startOffset": "latest"}) \
        == []
    late = history.at(history.late)
    after = _stream(spark, history.path, **{"hoodie.datasource.streaming.startOffset": late})
    assert _versions(after) == _versions(read_incremental(table, late))
    # Write B is requested first and held at its validation step while C commits and the
    # query reads up to C's completion; B then completes after C, and the resumed query
    # reads it in its next batch: each row once, B never skipped.
    options = {"hoodie.datasource.streaming.startOffset": _data_commits(table)[-1]}
    seen: list[list[tuple[int, str, str]]] = []

    def commit_c_and_stream(event: str, _: str) -> None:
        if event == "validating" and not seen:
            WriteClient(HudiTable.open(history.path)).upsert(records([13], 6, 800.0))
            seen.append(_checkpointed(spark, history.path, tmp_path, **options))

    b = WriteClient(HudiTable.open(history.path), on_step=commit_c_and_stream).upsert(
        records([14], 6, 900.0)).instant_time
    c = next(r[2] for r in seen[0])
    assert b < c and history.at(c) < history.at(b)  # requested first, completed last
    assert [r[1:] for r in seen[0]] == [("k13", c)]
    rows = _checkpointed(spark, history.path, tmp_path, **options)
    assert sorted(r[1:] for r in rows) == [("k13", c), ("k14", b)]
    assert rows[-1][0] > rows[0][0]  # B in a later batch
