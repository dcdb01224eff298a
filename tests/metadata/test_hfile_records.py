"""Metadata records in the HFiles of a real Hudi 1.1 metadata table, read, rewritten by
hudisql, and read again by hudisql and by hudi-rs (the ``hudi`` package)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiTable as RsTable

from hudisql.errors import CorruptTableError, MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.formats import hfile_base_file, record_schema_text
from hudisql.metadata.hfile_records import HFileRecords, encode_hfile
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.records import Record
from hudisql.table.format.hfile import Codec
from tests.fixtures import table_path

TABLE = "v9_txns_complex_meta"
TYPES = {"files": {1, 2}, "column_stats": {3}, "partition_stats": {6}, "record_index": {5},
         "secondary_index_merchant_idx": {7}, "secondary_index_txn_date_idx": {7}}


def _hfiles(root: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted((root / ".hoodie" / "metadata").glob("*/*.hfile")):
        yield path.parent.name, path


@pytest.fixture(scope="module")
def fixture() -> dict[str, list[Record]]:
    """Every record of every base HFile of the fixture's metadata table, by file name."""
    return {path.name: list(HFileRecords(path.read_bytes(), str(path)))
            for _, path in _hfiles(table_path(TABLE))}


def _rs_view(path: Path) -> tuple[list[tuple[str, str, tuple[str, ...]]], list[str]]:
    table = RsTable(str(path), {"hoodie.metadata.enable": "true"})
    slices = sorted((s.partition_path, s.base_file_name, tuple(s.log_file_names))
                    for s in table.get_file_slices())
    rows = pa.Table.from_batches(table.read()).column("_hoodie_record_key").to_pylist()
    return slices, sorted(rows)


def test_every_partition_decodes_to_records_that_name_real_files(
        fixture: dict[str, list[Record]]) -> None:
    root = table_path(TABLE)
    on_disk = {p.name for p in root.glob("region=*/*")}
    seen = set()
    for partition, path in _hfiles(root):
        records = fixture[path.name]
        keys = [r["key"] for r in records]
        assert keys == sorted(keys, key=lambda k: k.encode("utf-8"))
        assert len(set(keys)) == len(keys)
        assert {r["type"] for r in records} <= TYPES[partition], path
        seen.add(partition)
        for record in records:
            if record["type"] == 2:
                assert set(record["filesystemMetadata"]) <= on_disk
            elif record["type"] == 3:
                assert record["ColumnStatsMetadata"]["fileName"] in on_disk
            elif record["type"] == 5:
                location = RecordLocation.from_avro(record["recordIndexMetadata"])
                assert list(root.glob(f"{location.partition_path}/*{location.file_id}*"))
            elif record["type"] == 7:
                assert record["key"].split("$")[1].startswith("txn_id:TXN-")
    assert seen == set(TYPES)
    listing = {r["key"]: r for r in fixture["files-0000-0_13-170-402_20260307162643148.hfile"]}
    assert set(listing["__all_partitions__"]["filesystemMetadata"]) == {
        "region=us", "region=eu", "region=apac"}


def test_records_round_trip_and_are_found_by_key_and_prefix(
        fixture: dict[str, list[Record]]) -> None:
    for name, records in fixture.items():
        for codec in (Codec.GZ, Codec.NONE):
            ours = HFileRecords(encode_hfile(records, codec, block_size=256), name)
            assert list(ours) == records
            for record in records:
                assert ours.get(record["key"]) == record
            assert ours.get("not-a-key") is None
    stats = fixture["col-stats-0000-0_11-170-400_20260307162643148.hfile"]
    prefix = stats[0]["key"][:12]  # one column's hash: column stats are looked up by it
    found = list(HFileRecords(encode_hfile(stats, block_size=512), "c").with_prefix(prefix))
    assert found == [r for r in stats if r["key"].startswith(prefix)] and found


@pytest.mark.metadata_stale  # it ends with an HFile of the metadata table damaged
def test_hudi_rs_reads_the_table_through_hudisql_hfiles_and_refuses_a_damaged_one(
        fixture: dict[str, list[Record]], tmp_path: Path) -> None:
    expected = _rs_view(table_path(TABLE))
    rewritten = shutil.copytree(table_path(TABLE), tmp_path / "rewritten")
    for _, path in _hfiles(rewritten):
        source = HFileRecords(path.read_bytes(), str(path))
        schema = source.hfile.file_info["schema"].decode("utf-8")
        # What hudisql writes into a version 8/9 metadata table: Hudi 1.1's schema, the
        # values made from base-file rows (once per distinct payload).
        assert schema == record_schema_text(9) == record_schema_text(8)
        data = hfile_base_file(S.to_parquet_rows(fixture[path.name]), record_schema_text(9))
        assert list(HFileRecords(data, str(path))) == fixture[path.name]
        assert HFileRecords(encode_hfile(fixture[path.name], schema_text=schema),
                            str(path)).hfile.file_info["schema"] == schema.encode()
        path.write_bytes(data)
    # Every HFILE_DATA log block too, as hudisql's deltacommits write them (the header kept).
    from hudisql.metadata.formats import HFILE, data_block_records, encode_data_block
    from hudisql.table.format.log.reader import scan_blocks

    rewritten_blocks = 0
    for log in sorted((rewritten / ".hoodie" / "metadata").glob("*/.*.log.*")):
        data = log.read_bytes()
        parts = []
        for block in scan_blocks(data, log.name):
            raw = data[block.position:block.position + block.length]
            if block.block_type.name == "HFILE_DATA":
                records = data_block_records(data, block)
                raw = encode_data_block(HFILE, dict(block.header), records)
                rewritten_blocks += 1
            parts.append(raw)
        log.write_bytes(b"".join(parts))
    assert rewritten_blocks > 10
    assert _rs_view(rewritten) == expected
    assert len(expected[1]) == 12

    damaged = shutil.copytree(table_path(TABLE), tmp_path / "damaged")
    files = next(p for _, p in _hfiles(damaged) if p.name.startswith("files-0000-0_13"))
    data = bytearray(files.read_bytes())
    for i in range(60, 200):  # inside the only data block's gzip stream
        data[i] ^= 0xFF
    files.write_bytes(bytes(data))
    with pytest.raises(Exception, match=r"HFile|GZIP|hfile"):
        _rs_view(damaged)
    with pytest.raises(CorruptTableError, match=r"files-0000-0_13"):
        list(HFileRecords(bytes(data), str(files)))


def test_duplicate_keys_and_files_without_a_schema_are_refused() -> None:
    record: Record = {"key": "k", "type": 7, "filesystemMetadata": None,
                      "BloomFilterMetadata": None, "ColumnStatsMetadata": None,
                      "recordIndexMetadata": None, "SecondaryIndexMetadata": {"isDeleted": False}}
    with pytest.raises(MetadataTableError, match="share the key"):
        encode_hfile([record, dict(record)])
    from hudisql.table.format.hfile.writer import write_hfile

    with pytest.raises(MetadataTableError, match="no Avro schema"):
        HFileRecords(write_hfile([("k", b"")]), "bare.hfile")
    from hudisql.metadata import schema as S
    from hudisql.metadata.avro import encode_record

    schema = {"schema": S.schema_text().encode()}
    kept = HFileRecords(write_hfile([("k", encode_record(record))], schema), "kept.hfile")
    assert list(kept) == [record]  # a value that keeps its key (Hudi puts it back if empty)
    other = write_hfile([("j", encode_record(record))], schema)
    with pytest.raises(MetadataTableError, match="record of key 'k'"):
        list(HFileRecords(other, "other.hfile"))


def test_hfile_data_log_blocks_decode_and_merge_over_their_base_file(
        fixture: dict[str, list[Record]]) -> None:
    """The files partition as Hudi 1.1 left it: the compacted base file, then its later
    deltacommits' HFILE_DATA blocks, merged by the metadata payload's rules."""
    from hudisql.metadata.hfile_records import hfile_block_records
    from hudisql.metadata.records import merge_records
    from hudisql.table.format.log.format import BlockType
    from hudisql.table.format.log.reader import scan_blocks

    folder = table_path(TABLE) / ".hoodie" / "metadata" / "files"
    base = "files-0000-0_13-170-402_20260307162643148.hfile"
    merged = {r["key"]: r for r in fixture[base]}
    timeline = folder.parent / ".hoodie" / "timeline"
    completion = dict(p.name.split(".")[0].split("_") for p in timeline.glob("*_*.deltacommit"))
    # A version-9 log joins the slice of the latest base instant at or before its
    # deltacommit's completion, so 643123 (completed after 643148 was requested) is in.
    logs = sorted((p for p in folder.glob(".files-0000-0_*.log.*")
                   if completion[p.name.split("_")[1].split(".")[0]] > "20260307162643148"),
                  key=lambda p: completion[p.name.split("_")[1].split(".")[0]])
    assert len(logs) == 7
    for log in logs:
        data = log.read_bytes()
        for block in scan_blocks(data, log.name):
            if block.block_type != BlockType.HFILE_DATA:
                continue
            for record in hfile_block_records(data, block):
                older = merged.get(record["key"])
                merged[record["key"]] = record if older is None else merge_records(older, record)
    root = table_path(TABLE)
    for partition in ("region=us", "region=eu", "region=apac"):
        listed = {n for n, f in merged[partition]["filesystemMetadata"].items()
                  if not f["isDeleted"]}
        assert listed == {p.name for p in (root / partition).iterdir()
                          if not p.name.startswith(".hoodie_partition")}
