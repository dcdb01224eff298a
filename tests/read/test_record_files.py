"""The log records a merged read emits reach Spark as a local parquet file on a local
master (hudisql.read.record_files): the same rows as the local relation they replace, one
file per distinct set of records, kept while the process lives, none past the cap. The
tests' tables are small: the floor below which records stay a local relation is 0 here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from hudisql.read import record_files
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.read.test_datasource import rows
from tests.read.test_snapshot import ONLY_SOURCE, _records, _same_rows, mor  # noqa: F401

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True)
def _every_set_in_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record_files, "MIN_BYTES", 0)


@pytest.fixture
def updated(hudi_session: HudiSession, mor: HudiTable  # noqa: F811
            ) -> tuple[WriteClient, HudiTableHandle]:
    """The ``mor`` table with 30 updates in logs, a writer of it and its handle."""
    client = WriteClient(mor)
    client.upsert(_records(range(0, 300, 10), ts=2, fare=500.0))
    return client, hudi_session.table_at(mor.base_path)


def _record_files(paths: list[str]) -> list[str]:
    return [p for p in paths if record_files._PREFIX in p]


def _source_rows(handle: HudiTableHandle) -> list[tuple[object, ...]]:
    """The table's rows as the data source alone reads them."""
    return rows(handle.read(**ONLY_SOURCE).toArrow())


def test_merged_records_come_from_one_file_per_snapshot(
    updated: tuple[WriteClient, HudiTableHandle], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, handle = updated
    expected = _source_rows(handle)
    first = handle.read()
    files = _record_files(first.inputFiles())
    assert len(files) == 1, "the 30 updates in logs are scanned from one local file"
    assert rows(first.toArrow()) == expected
    # The same snapshot again: the same file (its name is a digest of the records).
    assert _record_files(handle.read().inputFiles()) == files
    # A projection emits other records: a file of its own.
    projected = handle.read(columns=["uuid", "fare"])
    assert _record_files(projected.inputFiles()) not in ([], files)
    # A later write: another file; the first stays for DataFrames that may still run it.
    client.upsert(_records(range(5, 300, 10), ts=3, fare=700.0))
    later = handle.read()
    assert _record_files(later.inputFiles()) != files
    assert rows(first.toArrow()) == expected
    assert rows(later.toArrow()) == _source_rows(handle)
    # Past the cap, the records go as a local relation: the same rows, no file.
    monkeypatch.setattr(record_files, "MAX_BYTES", 0)
    client.upsert(_records(range(7, 300, 10), ts=4, fare=900.0))
    capped = handle.read()
    assert _record_files(capped.inputFiles()) == []
    assert rows(capped.toArrow()) == _source_rows(handle)


def test_every_fixture_reads_the_same_rows_through_record_files(
    hudi_session: HudiSession, fixture_table: Path
) -> None:
    # The split read (records from a file where slices have logs), the data source alone
    # and the split with slices read whole by the data source: the same rows.
    handle = hudi_session.table_at(fixture_table)
    _same_rows(handle)
    _same_rows(handle, columns=["_hoodie_commit_time", "_hoodie_record_key"])


def test_small_sets_stay_a_local_relation(
    updated: tuple[WriteClient, HudiTableHandle], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, handle = updated
    monkeypatch.setattr(record_files, "MIN_BYTES", 1 << 20)
    read = handle.read()
    assert _record_files(read.inputFiles()) == []
    assert rows(read.toArrow()) == _source_rows(handle)


def test_a_directory_taken_or_a_failed_write_leaves_the_rows_as_they_are(
    updated: tuple[WriteClient, HudiTableHandle], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, handle = updated
    first = _record_files(handle.read().inputFiles())
    # A cleaner of the temporary directory took this process's directory: made again.
    local = Path(first[0].removeprefix("file:"))
    shutil.rmtree(local.parent)
    again = handle.read()
    assert _record_files(again.inputFiles()) == first and local.exists()
    assert rows(again.toArrow()) == _source_rows(handle)
    # The file cannot be written (a full disk): the records go as a local relation.
    client.upsert(_records(range(5, 300, 10), ts=3, fare=700.0))

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    failed = handle.read()
    assert _record_files(failed.inputFiles()) == []
    assert rows(failed.toArrow()) == _source_rows(handle)


def test_the_file_name_follows_the_records_not_their_buffers(hudi_session: HudiSession) -> None:
    # Two slices of one Arrow table share its buffers: their records differ, so do their
    # files; the same records chunked otherwise make the same file.
    records = pa.table({"k": [f"k{i}" for i in range(100)], "v": list(range(100))})
    schema = StructType([StructField("k", StringType()), StructField("v", LongType())])
    spark = hudi_session.spark
    first, second = (record_files.records_file_frame(spark, records.slice(at, 50), schema)
                     for at in (0, 50))
    assert first is not None and second is not None
    assert first.inputFiles() != second.inputFiles()
    assert sorted(r.v for r in first.collect()) == list(range(50))
    assert sorted(r.v for r in second.collect()) == list(range(50, 100))
    rechunked = pa.concat_tables([records.slice(0, 20), records.slice(20, 30)])
    again = record_files.records_file_frame(spark, rechunked, schema)
    assert again is not None and again.inputFiles() == first.inputFiles()


def test_directories_of_processes_gone_are_removed(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # A process of this PID namespace that made its directory and was killed: the next
    # process's first record file removes it. A running process's directory stays, and so
    # does one from another PID namespace (a container sharing the directory), whatever
    # its pid.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = record_files._pid_namespace()
    dead = tmp_path / f"{record_files._PREFIX}{ours}-{gone}-x"
    live = tmp_path / f"{record_files._PREFIX}{ours}-{os.getppid()}-y"
    elsewhere = tmp_path / f"{record_files._PREFIX}{ours}0-{gone}-z"
    for directory in (dead, live, elsewhere):
        directory.mkdir()
        (directory / "r.parquet").write_bytes(b"")
    monkeypatch.setattr(record_files.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(record_files, "_state", record_files._Files())
    made = record_files._directory()
    assert made.parent == tmp_path and made.name.startswith(
        f"{record_files._PREFIX}{ours}-{os.getpid()}-")
    assert not dead.exists() and live.exists() and elsewhere.exists()
