"""The metadata table itself: file groups, deltacommits, merged reads, visibility, rollback."""

from __future__ import annotations

import pytest

from hudisql.errors import MetadataTableError
from hudisql.metadata.formats import data_block_records
from hudisql.metadata.keys import RecordLocation, secondary_index_key, secondary_key_prefix
from hudisql.metadata.partitions import file_group_index
from hudisql.metadata.records import (
    PartitionUpdate,
    files_record,
    is_live,
    live_files,
    record_index_record,
    secondary_index_record,
)
from hudisql.metadata.table import MetadataTable, init_instant_time
from hudisql.table.format.filenames import LogFileName
from hudisql.table.format.instant import Action
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.table import HudiTable


def data_instant(table: HudiTable, complete: bool = True) -> str:
    """A data-table deltacommit (completed, or left inflight) to index at its instant time."""
    timeline = table.reload().timeline
    inflight = timeline.transition_to_inflight(timeline.create_requested(Action.DELTACOMMIT))
    if complete:
        timeline.complete(inflight, b"{}")
    return inflight.timestamp


def built(table: HudiTable, partition: str, count: int) -> MetadataTable:
    mdt = MetadataTable(table)
    mdt.build_partition(partition, [], table.timeline.last_completed().timestamp, count)
    return mdt.reload(table.reload())


def loc(fid: str = "f-0") -> RecordLocation:
    return RecordLocation("city=sf", fid, "20240101000000000")


def test_initialize_creates_every_file_group_up_front(mor_table: HudiTable) -> None:
    mdt = MetadataTable(mor_table)
    ts = init_instant_time(mor_table.timeline.last_completed().timestamp)
    ids = mdt.initialize_partition("record_index", 4, ts)
    assert ids == [f"record-index-000{i}-0" for i in range(4)] == mdt.file_group_ids("record_index")
    assert mdt.reload().timeline.get(ts).is_inflight
    assert mdt.storage.is_file("record_index/.hoodie_partition_metadata")
    props = mdt.properties
    assert props["hoodie.table.base.file.format"] == "HFILE" == mdt.base_format
    assert "hoodie.metadata.base.file.format" not in props
    assert props.record_key_fields == ["key"] and props.is_mor
    with pytest.raises(MetadataTableError, match="initialized already"):
        mdt.initialize_partition("record_index", 4, ts)


def test_records_go_to_the_file_group_of_their_key(mor_table: HudiTable) -> None:
    mdt = built(mor_table, "record_index", 3)
    ts = data_instant(mor_table)
    keys = [f"key{i}" for i in range(20)]
    mdt.reload(mor_table.reload()).write_deltacommit(
        ts, {"record_index": PartitionUpdate([record_index_record(k, loc()) for k in keys])})
    for status in mdt.storage.list_dir("record_index"):
        name = LogFileName.parse(status.name)
        if name is None:
            continue
        for block in scan_log_file(mdt.storage, status.path):
            if block.instant_time == ts and block.block_type.name == "HFILE_DATA":
                index = int(name.file_id.split("-")[2])
                data = mdt.storage.read_bytes(status.path)
                found = {file_group_index(r["key"], 3) for r in data_block_records(data, block)}
                assert found == {index}
    got = mdt.read_partition("record_index", keys=["key3", "key7", "nope"])
    assert set(got) == {"key3", "key7"}


def test_payload_merge_rules(mor_table: HudiTable) -> None:
    table = mor_table
    mdt = built(table, "files", 1)
    t1 = data_instant(table)
    mdt.reload(table.reload()).write_deltacommit(
        t1, {"files": PartitionUpdate([files_record("city=sf", {"a": 10, "b": 20})])})
    t2 = data_instant(table)
    mdt.reload(table.reload()).write_deltacommit(
        t2, {"files": PartitionUpdate([files_record("city=sf", {"b": 25, "c": 5}, ["a"])])})
    record = mdt.read_partition("files")["city=sf"]
    assert live_files(record) == {"b": 25, "c": 5}

    mdt2 = built(table.reload(), "secondary_index_idx", 2)
    t3 = data_instant(table)
    mdt2.reload(table.reload()).write_deltacommit(t3, {"secondary_index_idx": PartitionUpdate(
        [secondary_index_record("x", "k1"), secondary_index_record("y", "k2")])})
    t4 = data_instant(table)
    mdt2.reload(table.reload()).write_deltacommit(t4, {"secondary_index_idx": PartitionUpdate(
        [secondary_index_record("x", "k1", deleted=True)])})
    si = mdt2.read_partition("secondary_index_idx")
    assert {k for k, r in si.items() if is_live(r)} == {"y$k2"}
    assert mdt2.read_partition("secondary_index_idx", prefixes=["y$"]).keys() == {"y$k2"}


def test_record_index_delete_removes_the_key(mor_table: HudiTable) -> None:
    mdt = built(mor_table, "record_index", 2)
    t1 = data_instant(mor_table)
    mdt.reload(mor_table.reload()).write_deltacommit(t1, {"record_index": PartitionUpdate(
        [record_index_record(k, loc()) for k in ("a", "b", "c")])})
    t2 = data_instant(mor_table)
    mdt.reload(mor_table.reload()).write_deltacommit(t2, {"record_index": PartitionUpdate(
        [record_index_record("a", loc("g-1"))], deletes=["b"])})
    got = mdt.read_partition("record_index")
    assert set(got) == {"a", "c"}
    assert RecordLocation.from_avro(got["a"]["recordIndexMetadata"]).file_id == "g-1"


def test_only_instants_completed_on_the_data_timeline_are_read(mor_table: HudiTable) -> None:
    mdt = built(mor_table, "record_index", 1)
    pending = data_instant(mor_table, complete=False)
    mdt.reload(mor_table.reload()).write_deltacommit(
        pending, {"record_index": PartitionUpdate([record_index_record("a", loc())])})
    assert mdt.reload(mor_table.reload()).read_partition("record_index") == {}
    timeline = mor_table.reload().timeline
    timeline.complete(timeline.get(pending), b"{}")
    assert set(mdt.reload(mor_table.reload()).read_partition("record_index")) == {"a"}


def test_rollback_removes_the_deltacommit_and_is_idempotent(mor_table: HudiTable) -> None:
    mdt = built(mor_table, "record_index", 2)
    before = sorted(s.path for s in mdt.storage.list_recursive("record_index"))
    ts = data_instant(mor_table, complete=False)
    mdt.reload(mor_table.reload()).write_deltacommit(
        ts, {"record_index": PartitionUpdate([record_index_record("a", loc())], ["zz"])})
    assert sorted(s.path for s in mdt.storage.list_recursive("record_index")) != before
    assert mdt.rollback(ts)
    assert sorted(s.path for s in mdt.storage.list_recursive("record_index")) == before
    assert mdt.reload().timeline.get(ts) is None
    assert not mdt.rollback(ts)


def test_rollback_of_a_deltacommit_that_crashed_midway(
    mor_table: HudiTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    mdt = built(mor_table, "record_index", 4)
    before = sorted(s.path for s in mdt.storage.list_recursive("record_index"))
    ts = data_instant(mor_table, complete=False)
    calls = []
    import hudisql.metadata.table as module

    real = module.create_log_files

    def crash_on_second(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args[2])
        if len(calls) == 2:
            raise OSError("disk went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "create_log_files", crash_on_second)
    with pytest.raises(OSError):
        mdt.reload(mor_table.reload()).write_deltacommit(ts, {"record_index": PartitionUpdate(
            [record_index_record(f"k{i}", loc()) for i in range(40)])})
    assert mdt.reload().timeline.get(ts).is_inflight
    assert mdt.rollback(ts)
    assert sorted(s.path for s in mdt.storage.list_recursive("record_index")) == before


def test_a_retried_deltacommit_replaces_the_first(mor_table: HudiTable) -> None:
    mdt = built(mor_table, "record_index", 1)
    ts = data_instant(mor_table)
    mdt.reload(mor_table.reload()).write_deltacommit(
        ts, {"record_index": PartitionUpdate([record_index_record("a", loc())])})
    mdt.reload(mor_table.reload()).write_deltacommit(
        ts, {"record_index": PartitionUpdate([record_index_record("b", loc())])})
    assert set(mdt.read_partition("record_index")) == {"b"}


def test_writes_to_unknown_or_uninitialized_partitions_are_refused(mor_table: HudiTable) -> None:
    mdt = MetadataTable(mor_table).create_if_absent()
    with pytest.raises(MetadataTableError, match="no file groups"):
        mdt.write_deltacommit(data_instant(mor_table), {"files": PartitionUpdate()})
    with pytest.raises(MetadataTableError, match="not a metadata table partition"):
        mdt.initialize_partition("nonsense", 1, init_instant_time(None))


def test_drop_partition_removes_its_folder(mor_table: HudiTable) -> None:
    mdt = built(mor_table, "files", 1)
    assert mdt.partitions() == ["files"]
    mdt.drop_partition("files")
    mdt.drop_partition("files")
    assert mdt.partitions() == [] and mdt.file_group_ids("files") == []


def test_partitions_built_on_one_base_instant_get_successive_instants(
    mor_table_v6: HudiTable,
) -> None:
    base = mor_table_v6.timeline.last_completed().timestamp
    mdt = MetadataTable(mor_table_v6)
    first = mdt.build_partition("files", [], base, 1)
    second = mdt.reload().build_partition("column_stats", [], base, 2)
    assert (first, second) == (base + "010", base + "011")


def test_secondary_lookup_by_value_reads_the_value_file_group(mor_table: HudiTable) -> None:
    mdt = built(mor_table, "secondary_index_idx", 4)
    ts = data_instant(mor_table)
    pairs = [(f"v{i % 5}", f"k{i}") for i in range(60)] + [("a$b", "k$1"), (None, "k0")]
    mdt.reload(mor_table.reload()).write_deltacommit(ts, {"secondary_index_idx": PartitionUpdate(
        [secondary_index_record(v, k) for v, k in pairs])})
    for value in ("v3", "a$b", None):
        prefix = secondary_key_prefix(value)
        found = mdt.read_partition("secondary_index_idx", prefixes=[prefix])
        assert sorted(found) == sorted(secondary_index_key(v, k) for v, k in pairs if v == value)
    # Every entry of one value sits in one file group's log.
    owners: dict[str, set[str]] = {}
    for status in mdt.storage.list_dir("secondary_index_idx"):
        name = LogFileName.parse(status.name)
        if name is None:
            continue
        data = mdt.storage.read_bytes(status.path)
        for block in scan_log_file(mdt.storage, status.path):
            if block.block_type.name == "HFILE_DATA":
                for r in data_block_records(data, block):
                    owners.setdefault(r["key"].split("$")[0], set()).add(name.file_id)
    assert all(len(groups) == 1 for groups in owners.values())


def test_a_damaged_hfile_is_refused_naming_it(mor_table: HudiTable) -> None:
    """The negative control of the HFile path: a damaged base file or HFILE_DATA block makes
    a read fail with CorruptTableError naming the file, never a silent miss."""
    from hudisql.errors import CorruptTableError

    mdt = MetadataTable(mor_table)
    keys = [f"key{i:03d}" for i in range(300)]
    mdt.build_partition("record_index", [record_index_record(k, loc()) for k in keys],
                        mor_table.timeline.last_completed().timestamp, 1)
    mdt.reload(mor_table.reload())
    ts = data_instant(mor_table)
    mdt.reload(mor_table.reload()).write_deltacommit(
        ts, {"record_index": PartitionUpdate([record_index_record("new", loc("g-0"))])})
    assert set(mdt.read_partition("record_index", keys=["key007", "new"])) == {"key007", "new"}
    (base,) = [s for s in mdt.storage.list_dir("record_index") if s.name.endswith(".hfile")]
    (log, block), = [(s, b) for s in mdt.storage.list_dir("record_index")
                     if LogFileName.parse(s.name) is not None
                     for b in scan_log_file(mdt.storage, s.path)
                     if b.block_type.name == "HFILE_DATA"]
    # Inside the base file's first data block; inside the HFile a log block holds (the
    # log block's own framing intact: a damaged frame makes a corrupt block, skipped).
    for status, at in ((base, 60), (log, block.content_position + 60)):
        saved = mdt.storage.read_bytes(status.path)
        damaged = bytearray(saved)
        damaged[at:at + 40] = bytes(b ^ 0xFF for b in damaged[at:at + 40])
        mdt.storage.write_atomic(status.path, bytes(damaged))
        with pytest.raises(CorruptTableError, match=status.name):
            mdt.read_partition("record_index")
        mdt.storage.write_atomic(status.path, saved)
    assert len(mdt.read_partition("record_index")) == 301
