"""Building the metadata table from a written table, keeping it exact on commits, validating it.

Tables are written with the pure-Python writer; after the build every commit carries its
metadata deltacommit (``participants_for``, called by the commit protocol under the lock).
``validate_metadata_table`` must find no difference after each, and must find them when a
commit skipped the metadata table.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiTable as RsTable

import hudisql
from hudisql.errors import MetadataTableError
from hudisql.metadata.build import build_partitions
from hudisql.metadata.builders import build_partition_records
from hudisql.metadata.commit_update import commit_updates
from hudisql.metadata.config import (
    IndexDefinition,
    completed_partitions,
    inflight_partitions,
    load_index_definitions,
    save_index_definitions,
    set_partition_state,
)
from hudisql.metadata.keys import RecordLocation, secondary_index_key
from hudisql.metadata.overview import metadata_files, metadata_partitions
from hudisql.metadata.participant import MetadataTableParticipant, participants_for
from hudisql.metadata.records import is_live
from hudisql.metadata.row_changes import RowChanges
from hudisql.metadata.table import MetadataTable, drop_index
from hudisql.metadata.validate import validate_metadata_table
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Instant
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.metadata.conftest import new_table, row

PARTITIONS = ("files", "column_stats", "record_index", "secondary_index_idx_rider",
              "partition_stats", "bloom_filters")


def index_all(table: HudiTable, partitions: tuple[str, ...] = PARTITIONS) -> HudiTable:
    """Build each partition from scratch and mark it built, as the indexer's end state."""
    return build_partitions(table, partitions, {"secondary_index_idx_rider": IndexDefinition(
        "secondary_index_idx_rider", "secondary_index", ("rider",))})


def assert_exact(table: HudiTable) -> None:
    result = validate_metadata_table(table)
    assert result.partitions and result.ok, str(result)


def read_both(path: str) -> list[dict[str, object]]:
    """Rows by key, after checking hudisql and the hudi (hudi-rs) reader agree."""
    ours = hudisql.read_table(path).sort_by("_hoodie_record_key").to_pylist()
    theirs = pa.Table.from_batches(RsTable(path).read()).sort_by("_hoodie_record_key").to_pylist()
    assert ours == theirs
    return ours


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
@pytest.mark.parametrize("partitioned", [True, False])
def test_build_then_commits_keep_it_exact(
    tmp_path: Path, table_type: str, partitioned: bool
) -> None:
    table = index_all(new_table(tmp_path / "t", table_type, partitioned))
    assert sorted(completed_partitions(table.properties)) == sorted(PARTITIONS)
    assert_exact(table)
    participants = participants_for(table)
    assert [type(p) for p in participants] == [MetadataTableParticipant]

    client = WriteClient(table, max_records_per_file=5, participants=participants)
    # Updates that change the indexed rider, and new keys.
    client.upsert([row(i, ts=5, rider="changed") for i in (1, 2, 7)] + [row(i) for i in (20, 21)])
    assert_exact(client.table)
    client.delete(["k002", "k020"])
    assert_exact(client.table)

    mdt = MetadataTable(client.table.reload())
    index = mdt.read_partition("record_index")
    assert "k002" not in index and "k020" not in index and "k021" in index
    si = {k for k, r in mdt.read_partition("secondary_index_idx_rider").items() if is_live(r)}
    assert secondary_index_key("changed", "k001") in si
    assert secondary_index_key("r1", "k001") not in si  # the old value is marked deleted
    assert secondary_index_key("changed", "k002") not in si
    rows = read_both(client.table.base_path)
    assert {r["id"] for r in rows} == {f"k{i:03d}" for i in (*range(12), 21)} - {"k002"}
    for r in rows:
        location = RecordLocation.from_avro(index[str(r["id"])]["recordIndexMetadata"])
        assert (location.partition_path, location.file_id) == (
            r["_hoodie_partition_path"], str(r["_hoodie_file_name"]).split("_")[0])


@pytest.mark.metadata_stale
def test_validation_finds_a_commit_that_skipped_the_metadata_table(tmp_path: Path) -> None:
    table = index_all(new_table(tmp_path / "t"))
    client = WriteClient(table)
    client.upsert([row(30), row(1, ts=9, rider="moved")])
    result = validate_metadata_table(client.table)
    assert not result.ok
    found = {(d.partition, d.key) for d in result.differences}
    assert ("record_index", "k030") in found
    assert ("secondary_index_idx_rider", secondary_index_key("moved", "k001")) in found
    assert any(p == "files" for p, _ in found) and any(p == "column_stats" for p, _ in found)
    assert result.to_arrow().num_rows == len(result.differences)


class Crash(Exception):
    """A failure injected at one step of a commit."""


def test_a_commit_failing_under_the_lock_rolls_its_metadata_back(tmp_path: Path) -> None:
    table = index_all(new_table(tmp_path / "t"))
    written: list[str] = []

    class Refuse:
        """A later participant that fails after the metadata deltacommit was written."""

        def on_commit(self, table: HudiTable, instant: Instant, metadata: object) -> None:
            written.append(instant.timestamp)
            assert MetadataTable(table).has_completed(instant.timestamp)
            raise Crash("refused after the metadata update")

        def on_rollback(self, table: HudiTable, instant: Instant) -> None:
            return None

    client = WriteClient(table, participants=[*participants_for(table), Refuse()])
    with pytest.raises(Crash):
        client.upsert([row(40)])
    table = client.table.reload()
    assert written and written[0] in table.timeline.rolled_back_instants()
    assert MetadataTable(table).timeline.get(written[0]) is None
    assert_exact(table)
    assert "k040" not in MetadataTable(table).read_partition("record_index")


KILLED_WRITER = """
import os, signal, sys
from hudisql.metadata.participant import participants_for
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.metadata.conftest import row


class KillSelf:
    def on_commit(self, table, instant, metadata):
        os.kill(os.getpid(), signal.SIGKILL)  # after the metadata deltacommit, before completion

    def on_rollback(self, table, instant):
        pass


table = HudiTable.open(sys.argv[1])
WriteClient(table, participants=[*participants_for(table), KillSelf()]).upsert(
    [row(41), row(3, ts=7, rider="lost")])
"""


def test_a_writer_killed_after_its_metadata_update_is_rolled_back_whole(tmp_path: Path) -> None:
    """A writer process dies (SIGKILL) between its metadata deltacommit and its completed
    instant; the deltacommit stays invisible, and the rollback of the instant removes it."""
    table = index_all(new_table(tmp_path / "t"))
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, table.base_path],
                          cwd=Path(__file__).parents[2], capture_output=True, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    table = table.reload()
    (pending,) = table.timeline.pending()
    mdt = MetadataTable(table)
    assert mdt.has_completed(pending.timestamp)
    assert_exact(table)  # its data instant is pending: readers skip the deltacommit
    WriteClient(table, participants=participants_for(table)).rollback(pending.timestamp)
    table = table.reload()
    assert mdt.reload(table).timeline.get(pending.timestamp) is None
    assert_exact(table)
    MetadataTableParticipant().on_rollback(table, pending)  # idempotent
    assert_exact(table.reload())
    assert "k041" not in MetadataTable(table).read_partition("record_index")


def test_writers_update_a_partition_being_indexed(tmp_path: Path) -> None:
    """RFC-45 with the lock: file groups are initialized at schedule and every later commit
    logs into them; the build writes base files from the table as it is when it runs. An
    instant that completed before the schedule without a deltacommit (after a hole) is in
    the base files; later commits touching the same keys replay on top of them exactly."""
    table = index_all(new_table(tmp_path / "t"), ("files",))
    # Completed before the schedule: it updates the built files partition only.
    client = WriteClient(table, participants=participants_for(table))
    client.upsert([row(50), row(2, ts=8, rider="early")])
    table = client.table.reload()
    mdt = MetadataTable(table)
    init = mdt.new_init_instant(table.timeline.last_completed().timestamp)
    mdt.initialize_partition("record_index", 3, init)
    mdt.initialize_partition("secondary_index_idx_rider", 2, init)
    table = save_index_definitions(table, {"secondary_index_idx_rider": IndexDefinition(
        "secondary_index_idx_rider", "secondary_index", ("rider",))})
    for partition in ("record_index", "secondary_index_idx_rider"):
        table = set_partition_state(table, partition, "inflight")
    assert inflight_partitions(table.properties) == ["record_index", "secondary_index_idx_rider"]

    client = WriteClient(table, participants=participants_for(table))
    client.upsert([row(51), row(2, ts=9, rider="later")])
    client.delete(["k004", "k050"])
    table = client.table.reload()

    mdt.reload(table)
    stats = []
    for partition in ("record_index", "secondary_index_idx_rider"):
        stats += mdt.write_base_files(partition, build_partition_records(table, partition), init)
    mdt.complete_instant(init, stats)
    for partition in ("record_index", "secondary_index_idx_rider"):
        table = set_partition_state(table, partition, "completed")
    assert_exact(table)
    keys = set(MetadataTable(table).read_partition("record_index"))
    assert {"k050", "k004"}.isdisjoint(keys) and "k051" in keys


def test_tables_without_indexes_have_no_participants(tmp_path: Path) -> None:
    assert participants_for(new_table(tmp_path / "t", rows=0)) == []


def test_data_table_with_a_metadata_table_reads_the_same_through_hudi_rs(tmp_path: Path) -> None:
    table = new_table(tmp_path / "t", rows=20)
    before = read_both(table.base_path)
    index_all(table)
    assert MetadataTable.exists_for(table.reload())
    assert read_both(table.base_path) == before


def test_row_changes_from_the_writer_drive_record_and_secondary_updates(tmp_path: Path) -> None:
    table = index_all(new_table(tmp_path / "t"), ("record_index", "secondary_index_idx_rider"))
    cols = ["rider"]
    rows = {
        ("city=sf", "fg-b"): RowChanges.of(
            pa.table({"_hoodie_record_key": ["k1", "k2"], "rider": ["x", "y"]}), None, cols),
        ("city=sf", "fg-a"): RowChanges.of(
            None, pa.table({"_hoodie_record_key": ["k1", "k3"], "rider": ["x", "z"]}), cols),
    }
    updates = commit_updates(table, "20300101000000000", CommitMetadata(),
                             ["record_index", "secondary_index_idx_rider"], changes=rows)
    index = {r["key"]: RecordLocation.from_avro(r["recordIndexMetadata"]).file_id
             for r in updates["record_index"].all_records()}
    # k1 moved from fg-b to fg-a: a new location and no delete; k2 is gone; k3 is new.
    assert index == {"k1": "fg-a", "k3": "fg-a"}
    assert updates["record_index"].deletes == ["k2"]
    si = {(r["key"], r["SecondaryIndexMetadata"]["isDeleted"])
          for r in updates["secondary_index_idx_rider"].all_records()}
    # k1 keeps value x (no entry); y$k2 is voided; z$k3 is new.
    assert si == {("y$k2", True), ("z$k3", False)}


def test_drop_index_removes_config_definition_and_files(tmp_path: Path) -> None:
    table = index_all(new_table(tmp_path / "t"))
    table = drop_index(table, "secondary_index_idx_rider")
    assert "secondary_index_idx_rider" not in completed_partitions(table.properties)
    assert load_index_definitions(table) == {}
    assert "secondary_index_idx_rider" not in MetadataTable(table).partitions()
    assert drop_index(table, "secondary_index_idx_rider").properties == table.properties
    # Later commits leave the dropped partition alone and keep the others exact.
    WriteClient(table, participants=participants_for(table)).upsert([row(70)])
    assert_exact(table.reload())


def test_partition_stats_over_columns_column_stats_does_not_index(tmp_path: Path) -> None:
    table = save_index_definitions(new_table(tmp_path / "t"), {
        "column_stats": IndexDefinition("column_stats", "column_stats", ("fare",)),
        "partition_stats": IndexDefinition("partition_stats", "partition_stats",
                                           ("fare", "rider", "day")),
    })
    table = index_all(table, ("files", "column_stats", "partition_stats"))
    client = WriteClient(table, participants=participants_for(table))
    client.upsert([row(1, ts=4, rider="zzz", fare=1000.0), row(80)])
    assert_exact(client.table)
    stats = MetadataTable(client.table).read_partition("partition_stats")
    maxima = {r["ColumnStatsMetadata"]["columnName"]: r["ColumnStatsMetadata"]["maxValue"]
              for r in stats.values() if r["ColumnStatsMetadata"]["fileName"] == "city=la"}
    assert maxima["rider"][1]["value"] == "zzz" and maxima["fare"][1]["value"] == 1000.0
    assert {r["ColumnStatsMetadata"]["columnName"] for r in
            MetadataTable(client.table).read_partition("column_stats").values()} == {"fare"}


def test_commits_refuse_to_leave_an_unkept_partition_stale(tmp_path: Path) -> None:
    table = index_all(new_table(tmp_path / "t"), ("files",))
    # An expression index Apache Hudi made on a function hudisql does not compute.
    table = save_index_definitions(table, {"expr_index_day": IndexDefinition(
        "expr_index_day", "column_stats", ("rider",), "regexp_extract",
        {"expr": "regexp_extract", "pattern": "(a)", "idx": "1"})})
    table = set_partition_state(table, "expr_index_day", "completed")
    MetadataTable(table).build_partition("expr_index_day", [], None, 1)
    with pytest.raises(MetadataTableError, match="does not keep metadata partition"):
        WriteClient(table, participants=participants_for(table)).upsert([row(90)])
    table = table.reload()
    assert table.timeline.rolled_back_instants() and not table.timeline.pending()
    assert "k090" not in {r["id"] for r in read_both(table.base_path)}
    result = validate_metadata_table(table)
    assert result.ok and result.partitions == ("files",)
    assert [p for p, _ in result.skipped] == ["expr_index_day"] and "skipped" in str(result)


def test_overview_of_partitions_and_files(tmp_path: Path) -> None:
    table = index_all(new_table(tmp_path / "t"), ("files", "record_index",
                                                    "secondary_index_idx_rider"))
    table = set_partition_state(table, "column_stats", "inflight")
    parts = metadata_partitions(table).to_pylist()
    assert [(p["partition"], p["state"]) for p in parts] == [
        ("column_stats", "inflight"), ("files", "completed"), ("record_index", "completed"),
        ("secondary_index_idx_rider", "completed")]
    si = parts[-1]
    assert (si["index_type"], si["source_fields"], si["file_groups"]) == (
        "secondary_index", ["rider"], 10)
    files = metadata_files(table, "city=sf").to_pylist()
    on_disk = {s.name: s.size for s in table.storage.list_dir("city=sf")
               if not s.name.startswith(".hoodie_partition")}
    assert {f["file_name"]: f["size"] for f in files} == on_disk
    assert {f["partition"] for f in metadata_files(table).to_pylist()} == {
        "city=sf", "city=la", "city=ny"}


def test_concurrent_writers_keep_the_metadata_table_exact(tmp_path: Path) -> None:
    """Two writers (threads) write their files at once and then commit one after the other
    under the table lock; each logs its own deltacommit and the result is exact."""
    table = index_all(new_table(tmp_path / "t"))
    both_written = threading.Barrier(2, timeout=60)
    errors: list[BaseException] = []

    def wait_for_the_other(event: str, detail: str) -> None:
        if event == "validating":  # files written, before the lock
            both_written.wait()

    def write(records: list[dict[str, object]]) -> None:
        try:
            WriteClient(table, on_step=wait_for_the_other,
                        participants=participants_for(table)).upsert(records)
        except BaseException as exc:  # reported below
            errors.append(exc)

    # New keys only: each writer starts new file groups, so neither conflicts.
    threads = [threading.Thread(target=write, args=([row(i) for i in range(100, 110)],)),
               threading.Thread(target=write, args=([row(i) for i in range(200, 210)],))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    table = table.reload()
    assert len(table.timeline.completed()) == 3
    assert_exact(table)
    index = MetadataTable(table).read_partition("record_index")
    assert {f"k{i:03d}" for i in (*range(100, 110), *range(200, 210))} <= set(index)
