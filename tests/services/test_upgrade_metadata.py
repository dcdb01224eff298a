"""``CALL upgrade_table`` of a version-6 table with a metadata table: the metadata table is
rebuilt at the new version (HFile, layout 2), and a run killed at any step is finished by
the next one, every reader reading the same rows in between. Driver-level (no Spark): the
partitions are built with the metadata table's own builders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hudisql.errors import TableServiceError
from hudisql.metadata.build import build_partitions
from hudisql.metadata.config import IndexDefinition
from hudisql.metadata.participant import participants_for
from hudisql.metadata.table import MetadataTable
from hudisql.metadata.validate import validate_metadata_table
from hudisql.read.pruning import select_slices
from hudisql.services.upgrade import run_upgrade
from hudisql.services.upgrade_metadata import MARKER
from hudisql.table.format.instant import Action
from hudisql.table.format.properties import TableProperties
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.services.kit import (
    Crash,
    mor_table,
    rec,
    rows,
    rs_rows,
    rs_slices,
    slices,
    upgrade_refused_while_pending,
)

PARTITIONS = ["files", "column_stats", "record_index", "secondary_index_idx_v"]
SECONDARY = IndexDefinition("secondary_index_idx_v", "secondary_index", ("v",))



def write(root: Path, records: list[dict[str, object]]) -> None:
    table = HudiTable.open(root)
    WriteClient(table, participants=participants_for(table)).upsert(records)


def indexed_v6_table(tmp_path: Path) -> Path:
    """A version-6 merge-on-read table with the files partition, column stats, the record
    index and a secondary index on ``v``, and log files in both tables; two file groups
    per data partition (so the record index has some to skip)."""
    client = mor_table(tmp_path, keys=8, version=6)
    root = tmp_path / "t"
    build_partitions(client.table, PARTITIONS, {SECONDARY.index_name: SECONDARY})
    table = HudiTable.open(root)
    WriteClient(table, participants=participants_for(table)).insert(
        [rec(i, 1, "new") for i in range(8, 12)])
    for r in range(2):
        write(root, [rec(i, 2 + r, f"u{r}-{i % 3}") for i in range(0, 8, 2 - r)])
    props = TableProperties.load(HudiTable.open(root).storage)
    assert props.version == 6 and sorted(props.metadata_partitions) == sorted(PARTITIONS)
    return root


@pytest.fixture(scope="module")
def v6_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The indexed version-6 table, built once; each test upgrades a copy."""
    return indexed_v6_table(tmp_path_factory.mktemp("v6"))


def copy_of(v6_table: Path, tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(v6_table, root)
    return root


def readers_agree(root: Path, before: list[dict[str, object]]) -> None:
    """hudisql and hudi-rs read ``before``; a listed metadata table is exact."""
    assert rows(root) == before and rs_rows(root) == before
    table = HudiTable.open(root)
    if table.properties.metadata_partitions:
        result = validate_metadata_table(table)
        assert result.ok, str(result)


def test_upgrade_rebuilds_the_metadata_table_at_version_9(v6_table: Path,
                                                          tmp_path: Path) -> None:
    root = copy_of(v6_table, tmp_path)
    before = rows(root)
    # Refused before anything is written: a pending instant (its metadata table too).
    upgrade_refused_while_pending(root, 9)
    run_upgrade(HudiTable.open(root), 9)
    table = HudiTable.open(root)
    assert (table.properties.version, table.properties.timeline_layout) == (9, 2)
    assert sorted(table.properties.metadata_partitions) == sorted(PARTITIONS)
    assert not (root / MARKER).exists()
    mdt = TableProperties.load(MetadataTable(table).storage)
    assert (mdt.version, mdt.timeline_layout, mdt["hoodie.table.base.file.format"]) == (
        9, 2, "HFILE")
    definitions = json.loads((root / ".hoodie/.index_defs/index.json").read_text())
    assert definitions["indexDefinitions"]["secondary_index_idx_v"]["version"] == "V2"
    readers_agree(root, before)
    assert rs_slices(root) == slices(root)  # hudi-rs lists through the rebuilt files partition
    # A point lookup uses the rebuilt record index (the secondary index's exactness is the
    # validation's: its lookups need record keys that fix the partition, not these).
    view = table.file_system_view().latest_file_slices()
    steps = {s.index: s for s in select_slices(table, view, "id = 'k3'").steps}
    assert steps["record_index"].after < steps["record_index"].before == len(view)
    assert MetadataTable(table).read_partition("secondary_index_idx_v")
    # Writes after the upgrade keep it exact.
    write(root, [rec(i, 9, f"after-{i}") for i in range(3)])
    assert rs_rows(root) == rows(root) and rs_slices(root) == slices(root)
    assert validate_metadata_table(HudiTable.open(root)).ok


#: The step boundaries, in the order a run reaches them (the rebuild: one per partition).
STEPS = [("noted", ""), ("unlisted", ""), ("dropped", ""), ("timeline", ""),
         ("properties", ""), ("cleaned", ""), ("rebuilt", "files"),
         ("rebuilt", "record_index"), ("rebuilt", "column_stats"),
         ("rebuilt", "secondary_index_idx_v"), ("finished", "")]


def test_upgrade_killed_at_every_step_is_finished_by_the_next_run(v6_table: Path,
                                                                  tmp_path: Path) -> None:
    root = copy_of(v6_table, tmp_path)
    before = rows(root)
    seen: list[tuple[str, str]] = []
    for event, detail in STEPS:
        def crash(name: str, what: str, event: str = event, detail: str = detail) -> None:
            seen.append((name, what if name == "rebuilt" else ""))
            if name == event and (not detail or what == detail):
                raise Crash(f"{name} {what}")

        with pytest.raises(Crash):
            run_upgrade(HudiTable.open(root), 9, on_step=crash)
        readers_agree(root, before)
        version = TableProperties.load(HudiTable.open(root).storage).version
        assert version == (6 if event in ("noted", "unlisted", "dropped", "timeline") else 9)
        assert (root / MARKER).exists() == (event != "finished")
        if event == "cleaned":  # a write begun meanwhile holds the rebuild back
            pending = HudiTable.open(root).timeline.create_requested(Action.DELTACOMMIT)
            with pytest.raises(TableServiceError, match="began while its metadata table"):
                run_upgrade(HudiTable.open(root), 9)
            HudiTable.open(root).timeline.delete_pending(pending)
    assert [s for s in STEPS if s in seen] == STEPS  # each boundary was reached
    run_upgrade(HudiTable.open(root), 9)  # nothing left to do
    table = HudiTable.open(root)
    assert sorted(table.properties.metadata_partitions) == sorted(PARTITIONS)
    readers_agree(root, before)
    assert rs_slices(root) == slices(root)
