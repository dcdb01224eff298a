"""The hudi stream reader's offsets without a running query: where it starts, how far one
micro-batch goes under each read limit (whole commits), Trigger.AvailableNow's fixed end,
and the options it refuses."""

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
    table = history.table()
    undone = table.timeline.rolled_back_instants()
    return [i.timestamp for i in table.timeline.completed(WRITE_ACTIONS)
            if i.timestamp not in undone]


def test_start_offsets(history: History) -> None:
    assert _reader(history).initialOffset() == {"commitTime": "00000000000000"}
    assert _reader(history, **{START: "latest"}).initialOffset() == {"commitTime": history.late}
    assert _reader(history, **{START: history.update}).initialOffset() == {
        "commitTime": history.update}
    with pytest.raises(ReadOptionError, match="earliest, latest or an instant"):
        _reader(history, **{START: "yesterday"}).initialOffset()
    missing = str(int(history.update) + 1)  # between two instants, on none
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
    assert reader.latestOffset(reader.initialOffset(), ReadAllAvailable()) == {
        "commitTime": history.late}
    assert _reader(history).latestOffset(reader.initialOffset(), ReadAllAvailable()) == {
        "commitTime": later}
    assert reader.partitions({"commitTime": history.late}, {"commitTime": history.late}) == []
