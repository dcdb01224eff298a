"""Rolling back the latest completed write (Hudi's rollback_to_instant), MOR and COW.

Its data files go (a log file shared with other instants gets a rollback command block), a
rollback instant records it, its own instant files leave the timeline, and every reader
sees the table as it was before that write. A write that later writes build on is refused.
"""

from __future__ import annotations

from pathlib import Path

import hudi
import pyarrow as pa
import pytest

import hudisql
from hudisql.errors import WriteError
from hudisql.table.format.commit_metadata import RollbackMetadata
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient, create_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string()),
                    ("city", pa.string())])


class Crash(Exception):
    """The failure injected into a rollback."""


def _rows(path: Path) -> dict[str, str]:
    return {r["id"]: r["v"] for r in hudisql.read_table(str(path)).to_pylist()}


def _hudi_rows(path: Path) -> dict[str, str]:
    table = pa.Table.from_batches(hudi.HudiTable(str(path)).read())
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def _client(tmp_path: Path, table_type: str) -> WriteClient:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", "city", "ts", table_type)
    client = WriteClient(table)
    client.insert(pa.table({"id": ["a", "b"], "ts": [1, 1], "v": ["a0", "b0"],
                            "city": ["sf", "la"]}))
    return client


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_the_latest_completed_write_rolls_back_for_every_reader(
    tmp_path: Path, table_type: str
) -> None:
    client = _client(tmp_path, table_type)
    path = tmp_path / "t"
    before = _rows(path)
    upsert = client.upsert(pa.table({"id": ["a", "c"], "ts": [2, 2], "v": ["a1", "c1"],
                                     "city": ["sf", "sf"]}))
    client.delete(["b"])
    delete = client.table.timeline.last_completed()
    assert delete is not None
    client.rollback(delete.timestamp)
    rollback = client.rollback(upsert.instant_time)
    assert _rows(path) == before == _hudi_rows(path)
    timeline = HudiTable.open(str(path)).timeline
    assert timeline.get(upsert.instant_time) is None  # its instant files are gone
    assert not list((path / ".hoodie").glob(f"{upsert.instant_time}.*"))
    metadata = RollbackMetadata.parse(timeline.read_content(timeline.get(rollback)))
    assert metadata.commits_rollback == [upsert.instant_time]
    assert metadata.total_files_deleted >= 1
    # The table goes on: a new write after the rollbacks reads back everywhere.
    client.upsert(pa.table({"id": ["d"], "ts": [3], "v": ["d3"], "city": ["la"]}))
    assert _rows(path) == {**before, "d": "d3"} == _hudi_rows(path)


def test_a_completed_write_that_later_writes_build_on_is_refused(tmp_path: Path) -> None:
    client = _client(tmp_path, "MERGE_ON_READ")
    first = client.upsert(pa.table({"id": ["a"], "ts": [2], "v": ["a1"], "city": ["sf"]}))
    latest = client.upsert(pa.table({"id": ["a"], "ts": [3], "v": ["a2"], "city": ["sf"]}))
    files = sorted(p for p in (tmp_path / "t").rglob("*") if p.is_file())
    with pytest.raises(WriteError, match=f"the latest is {latest.instant_time}"):
        client.rollback(first.instant_time)
    assert sorted(p for p in (tmp_path / "t").rglob("*") if p.is_file()) == files
    assert _rows(tmp_path / "t")["a"] == "a2"


@pytest.mark.parametrize("crash_at", ["rollback_inflight", "delete", "rollback_completed"])
def test_a_rollback_of_a_completed_write_cut_short_finishes_when_run_again(
    tmp_path: Path, crash_at: str
) -> None:
    client = _client(tmp_path, "COPY_ON_WRITE")
    before = _rows(tmp_path / "t")
    upsert = client.upsert(pa.table({"id": ["a"], "ts": [2], "v": ["a1"], "city": ["sf"]}))

    def crash(event: str, detail: str) -> None:
        if event == crash_at:
            raise Crash(detail)

    client.on_step = crash
    with pytest.raises(Crash):
        client.rollback(upsert.instant_time)
    client.on_step = lambda event, detail: None
    client.rollback(upsert.instant_time)
    assert _rows(tmp_path / "t") == before == _hudi_rows(tmp_path / "t")
    timeline = HudiTable.open(str(tmp_path / "t")).timeline
    assert timeline.get(upsert.instant_time) is None
    assert len(timeline.completed(["rollback"])) == 1
