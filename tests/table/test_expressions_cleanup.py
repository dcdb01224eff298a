"""Spurious log files are removed after completing, and only this instant's own files."""

from __future__ import annotations

import posixpath
from pathlib import Path

from hudisql.table.table import HudiTable
from hudisql.table.write.files import avro_text, marker_path, write_log_file
from hudisql.table.write.slices import writer_schema
from hudisql.table.write.spurious_files import remove_spurious_log_files, spurious_log_files
from tests.table.test_expressions import _commit, _read, _records, _table


def test_only_the_instants_uncommitted_log_files_are_removed(tmp_path: Path) -> None:
    table = _table(tmp_path)
    ts = _commit(table, [{"id": "k1", "c": 5}], {"c": "add"}, attempts=(0, 1))
    table = table.reload()
    [file_slice] = table.file_slices()
    # A marker of this instant naming a file another write created (it took that version).
    other = write_log_file(table.storage, "", file_slice.file_id, file_slice.base_instant,
                           "20000101000000000", "0-9-99", _records([{"id": "k2", "c": 1}]),
                           avro_text(writer_schema(table)[0]))
    other_name = posixpath.basename(other.path or "")
    table.storage.write_bytes(marker_path(ts, "", other_name, "APPEND"), b"")
    completed = table.timeline.get(ts)
    assert completed is not None
    meta = table.timeline.commit_metadata(completed)
    committed = {posixpath.basename(s.path or "") for s in meta.write_stats()}
    before = {p.name for p in (tmp_path / "t").glob("*.log.*")}

    found = spurious_log_files(table.storage, ts, meta)
    assert [posixpath.basename(f) for f in found] == sorted(
        before - committed - {other_name})
    assert len(found) == 1  # attempt 0's file: not the committed one, not the other writer's
    assert _read(table)["k1"] == (15, "one")  # exact before the removal
    assert remove_spurious_log_files(table.storage, ts, meta) == found
    after = {p.name for p in (tmp_path / "t").glob("*.log.*")}
    assert after == before - {posixpath.basename(f) for f in found}
    assert _read(HudiTable.open(tmp_path / "t"))["k1"] == (15, "one")
    assert spurious_log_files(table.storage, ts, meta) == []
