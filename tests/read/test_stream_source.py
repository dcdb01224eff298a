"""``spark.readStream.format("hudi")``: a table that receives upserts, deletes, a compaction
and a rolled-back write, streamed one commit per micro-batch, returns every committed row
version once (each batch is the incremental query of its commit), and in CDC format the
union of the batches is the one CDC read of the whole range. A pending write holds the end
back; ``startOffset`` latest/instant start where they say.
"""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest

from hudisql.services.compaction import run_compaction, schedule_compaction
from hudisql.table.format.instant import WRITE_ACTIONS
from hudisql.table.read.cdc import read_cdc
from hudisql.table.read.incremental import read_incremental
from hudisql.table.table import HudiTable
from hudisql.txn.transaction import Transaction
from hudisql.txn.writer import WriteClient
from tests.fixtures import VERSION_6
from tests.table.test_incremental import History, make_history, records

pytestmark = [pytest.mark.slow]
_names = itertools.count()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """insert, update, delete, a rolled-back write, a late upsert, a compaction, an upsert."""
    made = make_history(tmp_path_factory.mktemp("stream"), "MERGE_ON_READ", VERSION_6)
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
    undone = table.timeline.rolled_back_instants()
    return [i.timestamp for i in table.timeline.completed(WRITE_ACTIONS)
            if i.timestamp not in undone]


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


def test_start_offsets_and_a_pending_write_holds_the_end(spark, history: History) -> None:  # type: ignore[no-untyped-def]
    table = history.table()
    commits = _data_commits(table)
    assert _stream(spark, history.path, **{"hoodie.datasource.streaming.startOffset": "latest"}) \
        == []
    after = _stream(spark, history.path,
                    **{"hoodie.datasource.streaming.startOffset": history.late})
    assert _versions(after) == _versions(read_incremental(table, history.late))
    # A write left pending before a completed one: the stream stops before it.
    pending = Transaction(table, {}, "UPSERT")
    held = pending.start()
    try:
        WriteClient(HudiTable.open(history.path)).upsert(records([13], 6, 800.0))
        got = _stream(spark, history.path, **{"hoodie.datasource.streaming.startOffset":
                                              commits[-1]})
        assert got == []  # the upsert after the pending write is not read yet
    finally:
        pending.abort()
    assert held in HudiTable.open(history.path).timeline.rolled_back_instants()
    got = _stream(spark, history.path, **{"hoodie.datasource.streaming.startOffset": commits[-1]})
    assert [r["uuid"] for r in got] == ["k13"]
