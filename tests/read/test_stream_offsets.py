"""The hudi stream reader's offsets without a running query: where it starts, how far one
micro-batch goes under each read limit (whole commits), Trigger.AvailableNow's fixed end,
and the options it refuses. The tables are version 9: offsets are completion times."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
)

from hudisql.errors import ReadOptionError
from hudisql.read.datasource import spark_schema
from hudisql.read.stream_source import HudiStreamReader
from hudisql.table.format.instant import WRITE_ACTIONS
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.table.test_incremental import History, make_history, records

START = "hoodie.datasource.streaming.startOffset"


@pytest.fixture
def history(tmp_path: Path) -> History:
    return make_history(tmp_path, "MERGE_ON_READ")


def _reader(history: History, **options: str) -> HudiStreamReader:
    table = history.table()
    return HudiStreamReader({"path": history.path, **options},
                            spark_schema(table, history.path))


def _commits(history: History) -> list[str]:
    """The offsets the completed writes end at (their completion times), in order."""
    table = history.table()
    undone = table.timeline.rolled_back_instants()
    return sorted(i.completion_time or i.timestamp for i in table.timeline.completed(WRITE_ACTIONS)
                  if i.timestamp not in undone)


def test_start_offsets(history: History) -> None:
    assert _reader(history).initialOffset() == {"commitTime": "00000000000000"}
    assert _reader(history, **{START: "latest"}).initialOffset() == {
        "commitTime": history.at(history.late)}
    for start in (history.update, history.at(history.update)):  # requested or completed
        assert _reader(history, **{START: start}).initialOffset() == {"commitTime": start}
    with pytest.raises(ReadOptionError, match="earliest, latest or an instant"):
        _reader(history, **{START: "yesterday"}).initialOffset()
    timeline = history.table().timeline
    times = {t for i in timeline.instants for t in (i.timestamp, i.completion_time) if t}
    missing = next(str(int(t) + 1) for t in sorted(times)  # between two times, on none
                   if t >= history.update and str(int(t) + 1) not in times)
    with pytest.raises(ReadOptionError, match=f"no instant {missing}"):
        _reader(history, **{START: missing}).initialOffset()


def test_limits_admit_whole_commits(history: History) -> None:
    commits = _commits(history)
    reader = _reader(history)
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadAllAvailable()) == {"commitTime": commits[-1]}
    # One row, file or byte: still the first whole commit (20 rows, several files).
    for limit in (ReadMaxRows(1), ReadMaxFiles(1), ReadMaxBytes(1)):
        assert reader.latestOffset(start, limit) == {"commitTime": commits[0]}
    # 30 rows: the insert (20) and the update (10), not the delete after them.
    assert reader.latestOffset(start, ReadMaxRows(30)) == {"commitTime": commits[1]}
    at_end = {"commitTime": commits[-1]}
    assert reader.latestOffset(at_end, ReadMaxRows(1)) == at_end  # nothing new
    assert isinstance(_reader(history, maxRowsPerTrigger="30").getDefaultReadLimit(),
                      ReadMaxRows)
    with pytest.raises(ReadOptionError, match="both limit a trigger"):
        _reader(history, maxRowsPerTrigger="1", maxFilesPerTrigger="1")
    with pytest.raises(ReadOptionError, match="not a whole number > 0"):
        _reader(history, maxBytesPerTrigger="0")


def test_available_now_fixes_the_end(history: History) -> None:
    reader = _reader(history)
    reader.prepareForTriggerAvailableNow()
    later = WriteClient(HudiTable.open(history.path)).upsert(records([30], 9)).instant_time
    late = history.at(history.late)
    assert reader.latestOffset(reader.initialOffset(), ReadAllAvailable()) == {
        "commitTime": late}
    assert _reader(history).latestOffset(reader.initialOffset(), ReadAllAvailable()) == {
        "commitTime": history.at(later)}
    assert reader.partitions({"commitTime": late}, {"commitTime": late}) == []


def _streamed(reader: HudiStreamReader, start: dict[str, str], end: dict[str, str]
              ) -> list[tuple[object, ...]]:
    """The rows of the batch ``(start, end]``, read as Spark's tasks read them."""
    import pyarrow as pa

    batches = [b for p in reader.partitions(start, end) for b in reader.read(p)]
    rows = pa.Table.from_batches(batches).select(["uuid", "ts", "fare"]) if batches else None
    return [] if rows is None else sorted(zip(*rows.to_pydict().values(), strict=True))


def test_a_start_archived_or_cleaned(tmp_path: Path) -> None:
    """A start offset among archived instants reads them (from the archived timeline, or a
    full scan with the fallback), exactly; batches never end where a clean deleted the
    state; a CDC stream whose earlier state was cleaned fails naming the clean."""
    from hudisql.services.archive import run_archive
    from hudisql.services.clean import run_clean
    from hudisql.table.read.incremental import FULL_SCAN_FALLBACK, read_incremental

    history = make_history(tmp_path, "COPY_ON_WRITE")  # a clean deletes older base files
    client = WriteClient(history.table())
    for i in range(4):
        client.upsert(records([10 + i], 5 + i, 600.0 + i))
    clean = run_clean(history.table(), {"hoodie.cleaner.commits.retained": "2"})
    assert clean is not None
    retained = clean.earliest_commit_to_retain
    # Before archival the cleaned instants are still active: one row per trigger would end
    # the first batch at the update, whose file slices the clean deleted; it ends at the
    # earliest retained commit instead.
    after_insert = history.at(history.insert)
    reader = _reader(history, **{START: after_insert})
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadMaxRows(1)) == {"commitTime": history.at(retained)}
    run_archive(history.table(), {"hoodie.keep.min.commits": "2",
                                  "hoodie.keep.max.commits": "3"})
    table = history.table()
    assert table.timeline.get(history.insert) is None  # archived
    expected = sorted(zip(*read_incremental(table, after_insert).select(
        ["uuid", "ts", "fare"]).to_pydict().values(), strict=True))
    assert {r[0] for r in expected} >= {"k00", "k10", "k13", "k24"}
    for fallback in ("false", "true"):
        reader = _reader(history, **{START: after_insert, FULL_SCAN_FALLBACK: fallback})
        start = reader.initialOffset()
        assert start == {"commitTime": after_insert}
        assert _streamed(reader, start, reader.latestOffset(start, ReadAllAvailable())) \
            == expected
    cdc = _reader(history, **{START: after_insert,
                              "hoodie.datasource.query.type": "incremental",
                              "hoodie.datasource.query.incremental.format": "cdc"})
    start = cdc.initialOffset()
    with pytest.raises(ReadOptionError, match=f"cannot be read as of {history.update}: that "
                                              "instant was cleaned"):
        cdc.partitions(start, cdc.latestOffset(start, ReadAllAvailable()))
