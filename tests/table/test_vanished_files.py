"""Readers survive concurrent rollbacks (issue #18, failure 2).

A reader lists a slice's files, then reads them (on a Spark executor, later). A failed
write's rollback deleting its log file in between made the read fail with
FileNotFoundError; such a file (no visible commit names it) is now skipped, which changes
no row. A committed file that vanishes is an error naming it and its commit.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from hudisql.errors import CorruptTableError
from hudisql.table.format.fsview import FileSystemView
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient, create_table
from tests.fixtures import VERSION_6

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string())])


class Crash(RuntimeError):
    """The writer dies."""


def _table(tmp_path: Path) -> tuple[HudiTable, WriteClient]:
    # Version 6: its file listing holds a pending write's log files (versions 8/9 leave
    # them out of the slices by completion time), the case these tests are about.
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", precombine_field="ts",
                         table_type="MERGE_ON_READ", options=VERSION_6)
    client = WriteClient(table)
    client.insert(pa.table({"id": ["a", "b"], "ts": [1, 1], "v": ["a0", "b0"]}))
    return table.reload(), client


def _crash_at_validating(event: str, detail: str) -> None:
    if event == "validating":
        raise Crash("the writer died with its files written")


def _values(table: HudiTable, slices: list, timeline) -> dict[str, str]:  # type: ignore[no-untyped-def]
    rows: dict[str, str] = {}
    for file_slice in slices:
        merged = read_file_slice(table.storage, table.properties, timeline, file_slice)
        rows.update({r["id"]: r["v"] for r in merged.to_pylist()})
    return rows


def test_a_failed_writes_log_file_removed_after_listing_is_skipped(tmp_path: Path) -> None:
    table, client = _table(tmp_path)
    client.on_step = _crash_at_validating
    with pytest.raises(Crash):
        client.upsert(pa.table({"id": ["a"], "ts": [2], "v": ["failed"]}))
    (failed,) = table.reload().timeline.pending()
    # The reader's snapshot: the listing includes the failed write's log file.
    snapshot = table.reload()
    slices = FileSystemView(snapshot.storage, snapshot.properties,
                            snapshot.timeline).latest_file_slices()
    logs = [log.path for s in slices for log in s.log_files]
    assert logs and all(snapshot.storage.exists(p) for p in logs)
    # Another writer rolls the failed write back, deleting its log file.
    client.on_step = lambda event, detail: None
    client.rollback(failed.timestamp)
    assert not any(snapshot.storage.exists(p) for p in logs)
    # The read of the listed slices goes on, with the rows of the snapshot.
    assert _values(snapshot, slices, snapshot.timeline) == {"a": "a0", "b": "b0"}


def test_a_committed_log_file_that_vanishes_is_an_error_naming_it(tmp_path: Path) -> None:
    table, client = _table(tmp_path)
    done = client.upsert(pa.table({"id": ["a"], "ts": [2], "v": ["a1"]}))
    snapshot = table.reload()
    slices = FileSystemView(snapshot.storage, snapshot.properties,
                            snapshot.timeline).latest_file_slices()
    (log,) = [log for s in slices for log in s.log_files]
    snapshot.storage.delete(log.path)
    with pytest.raises(CorruptTableError) as info:
        _values(snapshot, slices, snapshot.timeline)
    assert log.path in str(info.value) and done.instant_time in str(info.value)
    assert "rerun the query" in str(info.value)


def test_a_base_file_that_vanishes_is_an_error_naming_it(tmp_path: Path) -> None:
    table, _ = _table(tmp_path)
    slices = FileSystemView(table.storage, table.properties, table.timeline).latest_file_slices()
    base = slices[0].base_file
    assert base is not None
    table.storage.delete(base.path)
    with pytest.raises(CorruptTableError, match=base.path.replace(".", r"\.")):
        _values(table, slices, table.timeline)
