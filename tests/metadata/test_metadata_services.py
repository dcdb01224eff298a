"""The metadata table compacts, log-compacts and cleans itself as writers commit (issue 14,
item 6): Hudi's instant names, never past a pending data instant, exact after each commit,
a metadata compaction or log compaction killed in a real process is redone or rolled back
by the next writer, and a rollback after a metadata compaction keeps the indexes exact."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hudisql.errors import TableServiceError
from hudisql.metadata.participant import MetadataTableParticipant, participants_for
from hudisql.metadata.records import is_live
from hudisql.metadata.services import (
    MetadataServiceSettings,
    compose_records,
    covered_by_service,
    run_metadata_services,
)
from hudisql.metadata.table import MetadataTable
from hudisql.table.format.filenames import BaseFileName, LogFileName
from hudisql.table.format.instant import Action
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.metadata.conftest import new_table, row
from tests.metadata.test_build_validate import assert_exact, index_all, read_both

OPTIONS = {
    "hoodie.metadata.compact.max.delta.commits": "6",
    "hoodie.metadata.log.compaction.enable": "true",
    "hoodie.metadata.log.compaction.blocks.threshold": "3",
}


def _writer(table: HudiTable, options: dict[str, str] = OPTIONS) -> WriteClient:
    return WriteClient(table, max_records_per_file=5, participants=participants_for(table, options))


def _commit(client: WriteClient, n: int) -> None:
    """One upsert that moves riders (secondary index), updates fares (column stats) and
    adds a key (record index); every fourth also deletes a key."""
    client.upsert([row(i, ts=10 + n, rider=f"x{n % 3}", fare=n + 0.5)
                   for i in (n % 12, (n * 5) % 12)] + [row(30 + n)])
    if n % 4 == 3:
        client.delete([f"k{30 + n - 1:03d}"])


def _services(mdt: MetadataTable) -> dict[str, list[str]]:
    """The metadata table's completed services by kind, in time order."""
    timeline = mdt.reload().timeline
    found: dict[str, list[str]] = {"compaction": [], "logcompaction": [], "clean": []}
    for instant in timeline.completed():
        actions = {f.action for f in timeline.instant_files(instant.timestamp)}
        if Action.COMPACTION in actions:
            found["compaction"].append(instant.timestamp)
        elif Action.LOGCOMPACTION in actions:
            found["logcompaction"].append(instant.timestamp)
        elif instant.action == Action.CLEAN:
            found["clean"].append(instant.timestamp)
    return found


def test_the_metadata_table_compacts_log_compacts_and_cleans_itself(tmp_path: Path) -> None:
    table = index_all(new_table(tmp_path / "t", version=6))  # Hudi 0.x names
    client = _writer(table)
    for n in range(16):
        _commit(client, n)
        assert_exact(client.table)  # record index, secondary index, column stats, files...
    mdt = MetadataTable(client.table.reload())
    services = _services(mdt)
    assert len(services["compaction"]) >= 2 and services["logcompaction"] and services["clean"]
    timeline = mdt.timeline
    deltacommits = {i.timestamp for i in timeline.completed([Action.DELTACOMMIT])}
    # Hudi's names: <latest deltacommit> + 001 (compaction), 005 (log compaction), 002 (clean).
    for suffix, names in (("001", services["compaction"]), ("005", services["logcompaction"]),
                          ("002", services["clean"])):
        for name in names:
            assert name.endswith(suffix) and name[:-3] in deltacommits, name
    assert timeline.get(services["compaction"][-1]).action == Action.COMMIT
    # Compactions wrote new base files (the files partition's one group has logs each
    # commit); no latest slice keeps more logs than the deltacommits since a compaction.
    last = services["compaction"][-1]
    files_bases = {BaseFileName.parse(s.name).instant for s in mdt.storage.list_dir("files")
                   if BaseFileName.parse(s.name)}
    assert last in files_bases
    for partition in ("record_index", "secondary_index_idx_rider", "files", "column_stats"):
        slices = mdt.latest_slices(partition, mdt.file_group_ids(partition)).values()
        assert all(s.base_file is not None and len(s.log_files) <= 7 for s in slices)
    # The clean removed old slices: the build's files partition base file is gone.
    assert min(files_bases) >= services["compaction"][0]
    # A log compaction's blocks say which instants they replace.
    lc = services["logcompaction"][-1]
    blocks = [b for p in mdt.partitions() for s in mdt.storage.list_dir(p)
              if LogFileName.parse(s.name) for b in scan_log_file(mdt.storage, s.path)
              if b.instant_time == lc]
    assert blocks and all(b.compacted_block_times for b in blocks)
    assert all(t in deltacommits and t < lc for b in blocks for t in b.compacted_block_times)
    rows = read_both(client.table.base_path)  # hudi-rs reads the data table as hudisql does
    assert {r["id"] for r in rows} >= {f"k{30 + n:03d}" for n in (0, 1, 3, 15)}
    index = mdt.read_partition("record_index")
    assert "k032" not in index and "k045" in index
    assert lc > services["compaction"][0]


def test_no_metadata_compaction_while_an_older_data_instant_is_pending(tmp_path: Path) -> None:
    table = index_all(new_table(tmp_path / "t", version=6))  # <latest>001
    client = _writer(table, {"hoodie.metadata.compact.max.delta.commits": "3"})
    for n in range(2):
        _commit(client, n)
    data = client.table.reload()
    mdt = MetadataTable(data)
    before = _services(mdt)["compaction"]
    latest = mdt.timeline.last_completed([Action.DELTACOMMIT]).timestamp
    # A data instant older than the latest metadata deltacommit, still pending.
    pending_time = str(int(latest[:17]) - 1)
    assert data.timeline.get(pending_time) is None
    pending = data.timeline.create_requested(Action.DELTACOMMIT, pending_time)
    assert run_metadata_services(data.reload(), {"hoodie.metadata.compact.max.delta.commits":
                                                 "1"}) == []
    assert _services(mdt)["compaction"] == before
    data.reload().timeline.delete_pending(pending)
    done = run_metadata_services(data.reload(), {"hoodie.metadata.compact.max.delta.commits":
                                                 "1"})
    assert done == [latest + "001"]
    assert_exact(data.reload())


def test_a_rollback_after_a_metadata_compaction_keeps_the_indexes_exact(tmp_path: Path) -> None:
    """A completed write whose metadata deltacommit a compaction merged is rolled back: the
    built partitions are rebuilt without it (its files alone cannot be taken out)."""
    table = index_all(new_table(tmp_path / "t"))
    client = _writer(table, {"hoodie.metadata.compact.max.delta.commits": "2"})
    for n in range(3):
        _commit(client, n)
    client.upsert([row(77, rider="gone")])
    target = client.table.reload().timeline.completed()[-1].timestamp
    client.upsert([row(78)])  # compacts the metadata table (merging target) first
    latest = client.table.reload().timeline.completed()[-1].timestamp
    mdt = MetadataTable(client.table.reload())
    assert covered_by_service(mdt, target) and not covered_by_service(mdt, latest)
    client.rollback(latest)
    assert_exact(client.table.reload())
    client = _writer(client.table.reload(), {"hoodie.metadata.compact.max.delta.commits": "2"})
    client.rollback(target)
    table = client.table.reload()
    assert_exact(table)
    index = MetadataTable(table).read_partition("record_index")
    assert "k077" not in index and "k078" not in index and "k031" in index
    secondary = MetadataTable(table).read_partition("secondary_index_idx_rider")
    assert not any(k.startswith("gone$") and is_live(r) for k, r in secondary.items())
    assert {r["id"] for r in read_both(table.base_path)} >= {"k031"}
    # Writers go on, and the metadata table compacts again.
    for n in range(3, 7):
        _commit(client, n)
        assert_exact(client.table)


KILLED_SERVICE = """
import os, signal, sys
from hudisql.metadata.participant import MetadataTableParticipant
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.metadata.conftest import row

action, step = sys.argv[2], sys.argv[3]
options = {"hoodie.metadata.compact.max.delta.commits": "2" if action == "compaction" else "50",
           "hoodie.metadata.log.compaction.enable": "true",
           "hoodie.metadata.log.compaction.blocks.threshold": "2"}
suffix = "001" if action == "compaction" else "005"


def kill(event, instant):
    if event == step and instant.endswith(suffix):
        os.kill(os.getpid(), signal.SIGKILL)


table = HudiTable.open(sys.argv[1])
participant = MetadataTableParticipant(options=options, on_service_step=kill)
WriteClient(table, participants=[participant]).upsert([row(60, rider="killed")])
"""


@pytest.mark.parametrize("action", ["compaction", "logcompaction"])
@pytest.mark.parametrize("step", ["inflight", "written", "completing"])
def test_a_killed_metadata_service_is_redone_or_rolled_back_by_the_next_writer(
    tmp_path: Path, action: str, step: str
) -> None:
    table = index_all(new_table(tmp_path / "t", version=6))  # kills at 001/005
    options = {"hoodie.metadata.compact.max.delta.commits": "50"}
    client = _writer(table, options)
    for n in range(2):
        _commit(client, n)
    done = subprocess.run(
        [sys.executable, "-c", KILLED_SERVICE, table.base_path, action, step],
        cwd=Path(__file__).parents[2], capture_output=True, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    table = table.reload()
    mdt = MetadataTable(table)
    (dead,) = mdt.timeline.pending([action])
    (writer,) = table.timeline.pending()  # the killed writer's data instant
    assert_exact(table)  # readers skip the dead service's output
    # The next writer (services off but for finishing what was left) carries on.
    client = _writer(table, options)
    client.upsert([row(61, rider="next")])
    timeline = mdt.reload().timeline
    if action == "compaction":  # re-run to completion, as Hudi does
        assert timeline.get(dead.timestamp).is_completed
        assert timeline.get(dead.timestamp).action == Action.COMMIT
    else:  # rolled back, plan and all
        assert timeline.get(dead.timestamp) is None
        assert not [s for p in mdt.partitions() for s in mdt.storage.list_dir(p)
                    if dead.timestamp in s.name]
    assert_exact(client.table.reload())
    client.rollback(writer.timestamp)
    table = client.table.reload()
    assert_exact(table)
    index = MetadataTable(table).read_partition("record_index")
    assert "k061" in index and "k060" not in index
    assert {r["id"] for r in read_both(table.base_path)} >= {"k061"}


def test_settings_and_file_listing_composition() -> None:
    assert MetadataServiceSettings.parse({}) == MetadataServiceSettings(10, False, 5, 10)
    assert MetadataServiceSettings.parse({"hoodie.cleaner.commits.retained": "50"}
                                         ).commits_retained == 20
    # As in Hudi, enabling log compaction enables it on the metadata table too.
    assert MetadataServiceSettings.parse({"hoodie.log.compaction.enable": "true"}).log_compaction
    with pytest.raises(TableServiceError, match=r"max\.delta\.commits"):
        MetadataServiceSettings.parse({"hoodie.metadata.compact.max.delta.commits": "0"})
    older = {"key": "p", "type": 2, "filesystemMetadata": {
        "a": {"size": 5, "isDeleted": False}, "b": {"size": 3, "isDeleted": False}}}
    newer = {"key": "p", "type": 2, "filesystemMetadata": {
        "a": {"size": 9, "isDeleted": False}, "b": {"size": 0, "isDeleted": True},
        "c": {"size": 1, "isDeleted": False}}}
    # A deletion survives the composition, so it still removes "b" from an older listing.
    assert compose_records(older, newer)["filesystemMetadata"] == {
        "a": {"size": 9, "isDeleted": False}, "b": {"size": 0, "isDeleted": True},
        "c": {"size": 1, "isDeleted": False}}
    assert MetadataTableParticipant().options == {}


def test_a_parquet_metadata_table_is_converted_to_hfile_by_the_next_write(
        tmp_path: Path) -> None:
    """A metadata table earlier hudisql wrote (parquet base files, Avro data blocks) reads
    as before; the next commit converts it (a compaction of every file group to HFile,
    then its properties say HFILE), and it stays exact."""
    from hudisql.metadata.formats import HFILE, PARQUET
    from hudisql.table.format.log.format import BlockType

    table = new_table(tmp_path / "t", version=6)  # 0.x-era hudisql tables
    MetadataTable(table).create_if_absent(base_format=PARQUET)
    table = index_all(table)
    mdt = MetadataTable(table)
    assert mdt.base_format == PARQUET
    assert mdt.properties["hoodie.metadata.base.file.format"] == "parquet"
    bases = [s.name for p in mdt.partitions() for s in mdt.storage.list_dir(p)
             if BaseFileName.parse(s.name)]
    assert bases and all(n.endswith(".parquet") for n in bases)
    assert_exact(table)

    client = _writer(table, {})
    _commit(client, 0)  # converts first, then writes its deltacommit
    mdt = MetadataTable(client.table.reload())
    assert mdt.base_format == HFILE and "hoodie.metadata.base.file.format" not in mdt.properties
    assert len(_services(mdt)["compaction"]) == 1
    kinds: set[BlockType] = set()
    for partition in mdt.partitions():
        for found in mdt.latest_slices(partition, mdt.file_group_ids(partition)).values():
            assert found.base_file is not None and found.base_file.endswith(".hfile")
            for name in found.log_files:
                kinds |= {b.block_type for b in scan_log_file(
                    mdt.storage, f"{partition}/{name}")}
    assert BlockType.HFILE_DATA in kinds and BlockType.AVRO_DATA not in kinds
    assert_exact(client.table)
    _commit(client, 1)  # the suite's validation checks the table after the test
    read_both(str(client.table.base_path))
