"""Scanning log files: the fixtures Hudi wrote, block info, and every kind of corruption."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudisql.errors import CorruptLogBlockError, UnsupportedFormatError
from hudisql.table.format.log import (
    MAGIC,
    BlockType,
    DeleteRecord,
    HeaderKey,
    LogBlockInfo,
    decode_data_block,
    decode_delete_block,
    encode_avro_data_block,
    encode_delete_block,
    encode_rollback_block,
    read_block_content,
    scan_blocks,
    scan_log_file,
)
from hudisql.table.format.log.format import encode_block
from hudisql.table.io.storage import Storage
from tests.fixtures import LOG_FILES, TABLE_ZIPS, table_path

UUID_A = "334e26e9-8355-45cc-97c6-c31daf0df330"
SCHEMA = ('{"type":"record","name":"t_record","namespace":"hoodie.t","fields":['
          '{"name":"k","type":["null","string"],"default":null},'
          '{"name":"v","type":["null","long"],"default":null}]}')


# --------------------------------------------------------------------------- fixtures


def test_fixture_avro_data_block_scans_and_decodes() -> None:
    data = LOG_FILES["valid_log_avro_data"].read_bytes()
    [info] = scan_blocks(data, "f")
    assert info.block_type == BlockType.AVRO_DATA
    assert (info.position, info.length, info.content_length) == (0, len(data), 240)
    assert list(info.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    assert info.instant_time == "20250316025828811"
    assert info.schema is not None and '"name":"trips_quickstart_mor_avro_record"' in info.schema
    assert info.footer == {} and info.block_identifier is None
    table = decode_data_block(data, info)
    assert table.num_rows == 1
    [row] = table.to_pylist()
    assert row["_hoodie_record_key"] == UUID_A
    assert row["_hoodie_commit_seqno"] == "20250316025828811_0_2"
    assert (row["ts"], row["rider"], row["driver"], row["fare"]) == (
        1695159649088, "rider-A", "driver-K", 29.1)
    assert table.schema.field("ts").type == pa.int64()


def test_fixture_delete_block_scans_and_decodes() -> None:
    data = LOG_FILES["valid_log_delete"].read_bytes()
    [info] = scan_blocks(data)
    assert info.block_type == BlockType.DELETE
    assert list(info.header) == [HeaderKey.SCHEMA, HeaderKey.INSTANT_TIME]
    assert info.instant_time == "20250618054714114"  # as datagen.sql says
    deletes = decode_delete_block(data, info)
    assert [d.record_key for d in deletes] == [
        "e96c4396-3fad-413a-a942-4cb36106d721", "9909a8b1-2d15-4d3d-8ec9-efc48c536a00", UUID_A]
    assert {d.partition_path for d in deletes} == {"city=san_francisco"}
    # Spark wrote the default ordering value 0 in the union's long branch.
    # Spark's "no ordering value" is IntWrapper(0): union branch 2, value 0.
    assert [(d.ordering_value, d.ordering_type) for d in deletes] == [(0, "int")] * 3


def test_fixture_parquet_data_block_scans_and_decodes() -> None:
    data = LOG_FILES["valid_log_parquet_data"].read_bytes()
    [info] = scan_blocks(data)
    assert info.block_type == BlockType.PARQUET_DATA
    assert info.instant_time == "20250113230424191"
    assert data[info.content_position:info.content_position + 4] == b"PAR1"
    table = decode_data_block(data, info)
    [row] = table.to_pylist()
    assert (row["_hoodie_record_key"], row["rider"], row["fare"], row["ts"]) == (
        UUID_A, "rider-A", 29.1, 1695159649088)


def test_fixture_rollback_block_scans() -> None:
    data = LOG_FILES["valid_log_rollback"].read_bytes()
    [info] = scan_blocks(data)
    assert info.block_type == BlockType.COMMAND and info.is_rollback_command
    assert list(info.header) == [HeaderKey.INSTANT_TIME, HeaderKey.COMMAND_BLOCK_TYPE,
                                 HeaderKey.TARGET_INSTANT_TIME]
    assert (info.instant_time, info.target_instant_time) == (
        "20250126040936578", "20250126040826878")  # as datagen.sql says
    assert info.content_length == 0 and info.length == len(data) == 105
    with pytest.raises(ValueError, match="COMMAND block"):
        decode_data_block(data, info)


@pytest.mark.parametrize("kind", sorted(LOG_FILES))
def test_fixture_log_files_scan_the_same_from_storage(kind: str) -> None:
    path = LOG_FILES[kind]
    storage = Storage(str(path.parent))
    from_file = scan_log_file(storage, path.name)
    assert from_file == scan_blocks(path.read_bytes(), path.name)
    for info in from_file:
        content = read_block_content(storage, info)
        assert len(content) == info.content_length
        if info.is_data:
            assert decode_data_block(content, info) == decode_data_block(path.read_bytes(), info)


# Every log file inside the fixture tables, with what it holds.
TABLE_LOGS: dict[str, list[tuple[BlockType, str, str | None, list[str]]]] = {
    "v6_trips_8i1u": [(BlockType.AVRO_DATA, "20250331030645735", None,
                       ["9909a8b1-2d15-4d3d-8ec9-efc48c536a00"])],
    "v6_trips_8i3d": [(BlockType.DELETE, "20250618054714114", None, [])],
    "v8_trips_8i1u": [(BlockType.AVRO_DATA, "20250713011914363", None,
                       ["9909a8b1-2d15-4d3d-8ec9-efc48c536a00"])],
    "v6_nonpartitioned_rollback": [
        (BlockType.PARQUET_DATA, "20250126040826878", None, ["1"]),
        (BlockType.COMMAND, "20250126040936578", "20250126040826878", []),
        (BlockType.PARQUET_DATA, "20250126060846931", None, ["2"]),
    ],
    "v6_simplekeygen_nonhivestyle": [(BlockType.PARQUET_DATA, "20250121000557095", None, ["1"])],
    "v6_nonpartitioned": [],
    "v8_nonpartitioned": [],
}


@pytest.mark.parametrize("name", sorted(TABLE_ZIPS))
def test_log_files_inside_fixture_tables_scan_and_decode(name: str) -> None:
    root = table_path(name)
    storage = Storage(str(root))
    seen = []
    logs = sorted(root.rglob(".*.log.*"), key=lambda p: p.name.split(".log.")[1])
    for path in logs:
        rel = str(path.relative_to(root))
        data = path.read_bytes()
        for info in scan_log_file(storage, rel):
            assert not info.is_corrupt
            assert info.log_file == rel
            keys = []
            if info.is_data:
                keys = decode_data_block(data, info).column("_hoodie_record_key").to_pylist()
            seen.append((info.block_type, info.instant_time, info.target_instant_time, keys))
    assert seen == TABLE_LOGS[name]


def test_parquet_block_of_sample_table_decodes_every_type() -> None:
    root = table_path("v6_nonpartitioned_rollback")
    [path] = root.glob(".*.log.3_*")
    data = path.read_bytes()
    [info] = scan_blocks(data)
    [row] = decode_data_block(data, info).to_pylist()
    assert row["decimalField"] == Decimal("67890.12345")
    assert row["dateField"] == dt.date(2023, 4, 2)
    assert row["timestampField"] == dt.datetime(2023, 4, 2, 13, 2, tzinfo=dt.UTC)
    assert row["binaryField"] == b"more binary data"
    assert row["arrayField"] == [{"arr_struct_f1": "yellow", "arr_struct_f2": 400},
                                 {"arr_struct_f1": "purple", "arr_struct_f2": 500}]
    assert row["mapField"] == [
        ("key3", {"map_field_value_struct_f1": 234.567, "map_field_value_struct_f2": True}),
        ("key4", {"map_field_value_struct_f1": 567.89, "map_field_value_struct_f2": False})]
    assert row["structField"] == {"field1": "Bob", "field2": 40,
                                  "child_struct": {"child_field1": 789.012, "child_field2": False}}


# --------------------------------------------------------------------------- block info


def _info(
    header: dict[HeaderKey, str], block_type: BlockType = BlockType.AVRO_DATA
) -> LogBlockInfo:
    return LogBlockInfo("f", 0, 10, block_type, header, {}, 0, 0)


def test_block_identifier_is_attempt_and_sequence_or_unknown() -> None:
    assert _info({HeaderKey.BLOCK_IDENTIFIER: "2,7"}).block_identifier == (2, 7)
    assert _info({}).block_identifier is None  # old tables: unknown, not an error
    assert _info({HeaderKey.BLOCK_IDENTIFIER: "x,1"}).block_identifier is None
    assert _info({HeaderKey.BLOCK_IDENTIFIER: "3"}).block_identifier is None


def test_compacted_block_times_and_rollback_flag() -> None:
    info = _info({HeaderKey.COMPACTED_BLOCK_TIMES: "001, 002,,003"})
    assert info.compacted_block_times == ["001", "002", "003"]
    assert _info({}).compacted_block_times == []
    assert not info.is_rollback_command
    assert _info({HeaderKey.COMMAND_BLOCK_TYPE: "0"}, BlockType.COMMAND).is_rollback_command
    assert not _info({HeaderKey.COMMAND_BLOCK_TYPE: "1"}, BlockType.COMMAND).is_rollback_command


# --------------------------------------------------------------------------- corruption


def _data_block(key: str, instant: str = "20250101000000001") -> bytes:
    table = pa.table({"k": [key, key + "2"], "v": [1, 2]})
    return encode_avro_data_block(table, SCHEMA, {HeaderKey.INSTANT_TIME: instant})


A = _data_block("a", "20250101000000001")
B = encode_delete_block([DeleteRecord("a", "p", 5)], {HeaderKey.INSTANT_TIME: "20250101000000002"})
C = encode_rollback_block("20250101000000003", "20250101000000001")

Scanner = Callable[[bytes, Path], list[LogBlockInfo]]


def _scan_bytes(data: bytes, tmp: Path) -> list[LogBlockInfo]:
    return scan_blocks(data, "log")


def _scan_file(data: bytes, tmp: Path) -> list[LogBlockInfo]:
    (tmp / "log").write_bytes(data)
    return scan_log_file(Storage(str(tmp)), "log")


@pytest.fixture(params=[_scan_bytes, _scan_file], ids=["bytes", "file"])
def scan(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[bytes], list[LogBlockInfo]]:
    fn: Scanner = request.param
    return lambda data: fn(data, tmp_path)


def _kinds(infos: list[LogBlockInfo]) -> list[tuple[BlockType, int, int]]:
    return [(i.block_type, i.position, i.length) for i in infos]


def test_valid_blocks_scan_back_to_back(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    infos = scan(A + B + C)
    assert _kinds(infos) == [(BlockType.AVRO_DATA, 0, len(A)), (BlockType.DELETE, len(A), len(B)),
                             (BlockType.COMMAND, len(A) + len(B), len(C))]
    assert [i.instant_time for i in infos] == ["20250101000000001", "20250101000000002",
                                               "20250101000000003"]


def test_truncated_block_at_end_of_file(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    cut = B[:-10]
    infos = scan(A + cut)
    assert _kinds(infos) == [(BlockType.AVRO_DATA, 0, len(A)),
                             (BlockType.CORRUPT, len(A), len(cut))]
    assert "cut short" in str(infos[1].corrupt_reason)


def test_truncated_block_between_valid_blocks(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    # A partial write followed by later blocks: its declared size overlaps the next block.
    cut = B[: len(B) // 2]
    infos = scan(A + cut + C)
    assert _kinds(infos) == [(BlockType.AVRO_DATA, 0, len(A)),
                             (BlockType.CORRUPT, len(A), len(cut)),
                             (BlockType.COMMAND, len(A) + len(cut), len(C))]
    assert infos[1].corrupt_reason
    assert decode_data_block(A + cut + C, infos[0]).column("k").to_pylist() == ["a", "a2"]


def test_wrong_trailing_length(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    bad = B[:-8] + struct.pack(">q", len(B) + 1)
    infos = scan(A + bad + C)
    assert _kinds(infos) == [(BlockType.AVRO_DATA, 0, len(A)),
                             (BlockType.CORRUPT, len(A), len(bad)),
                             (BlockType.COMMAND, len(A) + len(bad), len(C))]
    assert "trailing length" in str(infos[1].corrupt_reason)


def test_garbage_between_blocks(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    garbage = b"\x00garbage between blocks\xff" * 3
    infos = scan(A + garbage + B)
    assert _kinds(infos) == [(BlockType.AVRO_DATA, 0, len(A)),
                             (BlockType.CORRUPT, len(A), len(garbage)),
                             (BlockType.DELETE, len(A) + len(garbage), len(B))]
    assert "no magic" in str(infos[1].corrupt_reason)
    assert decode_delete_block(A + garbage + B, infos[2]) == [DeleteRecord("a", "p", 5)]


def test_garbage_at_start_and_end(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    infos = scan(b"junk" + A + b"tail")
    assert _kinds(infos) == [(BlockType.CORRUPT, 0, 4), (BlockType.AVRO_DATA, 4, len(A)),
                             (BlockType.CORRUPT, 4 + len(A), 4)]


def test_file_cut_mid_header(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    # 40 bytes: past the prefix, inside the SCHEMA header entry.
    infos = scan(A + A[:40])
    assert _kinds(infos) == [(BlockType.AVRO_DATA, 0, len(A)), (BlockType.CORRUPT, len(A), 40)]
    assert "cut short" in str(infos[1].corrupt_reason)


def test_file_cut_inside_block_prefix(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    infos = scan(A + B[:10])
    assert _kinds(infos) == [(BlockType.AVRO_DATA, 0, len(A)), (BlockType.CORRUPT, len(A), 10)]
    assert "into a block header" in str(infos[1].corrupt_reason)


def test_cut_header_followed_by_a_valid_block(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    infos = scan(A + B[:40] + C)
    assert _kinds(infos) == [(BlockType.AVRO_DATA, 0, len(A)), (BlockType.CORRUPT, len(A), 40),
                             (BlockType.COMMAND, len(A) + 40, len(C))]


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        # header entry length past the block
        (lambda b: b[:26] + struct.pack(">ii", 0, 10**6) + b[34:], "runs past"),
        # unknown header key
        (lambda b: b[:26] + struct.pack(">i", 42) + b[30:], "unknown header key"),
        # unknown block type
        (lambda b: b[:18] + struct.pack(">i", 9) + b[22:], "unknown block type 9"),
        # a CORRUPT block type on disk
        (lambda b: b[:18] + struct.pack(">i", 2) + b[22:], "marked CORRUPT"),
        # another format version
        (lambda b: b[:14] + struct.pack(">i", 7) + b[18:], "format version 7"),
        # negative header count
        (lambda b: b[:22] + struct.pack(">i", -1) + b[26:], "entry count -1"),
    ],
)
def test_damaged_framing_inside_a_block(
    scan: Callable[[bytes], list[LogBlockInfo]], mutate: Callable[[bytes], bytes], reason: str
) -> None:
    bad = mutate(A)
    assert len(bad) == len(A)
    infos = scan(C + bad + C)
    assert _kinds(infos) == [(BlockType.COMMAND, 0, len(C)),
                             (BlockType.CORRUPT, len(C), len(A)),
                             (BlockType.COMMAND, len(C) + len(A), len(C))]
    assert reason in str(infos[1].corrupt_reason)


def test_corrupt_entries_are_never_decoded() -> None:
    data = A + b"garbage"
    corrupt = scan_blocks(data, "x.log")[1]
    with pytest.raises(CorruptLogBlockError, match="it is corrupt"):
        decode_data_block(data, corrupt)
    with pytest.raises(CorruptLogBlockError, match=r"x\.log"):
        decode_delete_block(data, corrupt)


def test_empty_file_has_no_blocks(scan: Callable[[bytes], list[LogBlockInfo]]) -> None:
    assert scan(b"") == []


# --------------------------------------------------------------------------- header-only


def test_scan_reads_headers_only_not_content() -> None:
    # Content that is not Avro at all: a scan reports the block, only decoding fails.
    junk = encode_block(BlockType.AVRO_DATA,
                        {HeaderKey.INSTANT_TIME: "20250101000000009", HeaderKey.SCHEMA: SCHEMA},
                        b"\xff" * 64)
    data = A + junk + C
    infos = scan_blocks(data, "the.log")
    assert [i.block_type for i in infos] == [BlockType.AVRO_DATA, BlockType.AVRO_DATA,
                                             BlockType.COMMAND]
    with pytest.raises(CorruptLogBlockError,
                       match=r"byte \d+ of the\.log \(instant 20250101000000009"):
        decode_data_block(data, infos[1])


class _CountingFile:
    """A random-access file that records every byte range read."""

    def __init__(self, inner: Any, reads: list[tuple[int, int]]) -> None:
        self.inner, self.reads = inner, reads

    def size(self) -> int:
        return int(self.inner.size())

    def read_at(self, n: int, pos: int) -> bytes:
        self.reads.append((pos, n))
        return bytes(self.inner.read_at(n, pos))

    def close(self) -> None:
        self.inner.close()


class _CountingStorage(Storage):
    reads: list[tuple[int, int]]

    def open_input_file(self, rel: str) -> Any:
        return _CountingFile(super().open_input_file(rel), self.reads)


def test_scan_log_file_skips_content_with_positioned_reads(tmp_path: Path) -> None:
    big = encode_block(BlockType.AVRO_DATA,
                       {HeaderKey.INSTANT_TIME: "20250101000000009", HeaderKey.SCHEMA: SCHEMA},
                       b"\x00" * (4 << 20))
    data = big + C + big + big
    (tmp_path / "big.log").write_bytes(data)
    storage = _CountingStorage(str(tmp_path))
    storage.reads = []
    infos = scan_log_file(storage, "big.log")
    assert [i.block_type for i in infos] == [BlockType.AVRO_DATA, BlockType.COMMAND,
                                             BlockType.AVRO_DATA, BlockType.AVRO_DATA]
    read = sum(n for _, n in storage.reads)
    assert read < 120_000 < len(data) // 100  # about one window per block, not 12 MiB
    # no read touches the middle of any content
    for info in infos:
        middle = info.content_position + info.content_length // 2
        assert not any(p <= middle < p + n for p, n in storage.reads) or info.content_length < 64


def test_hfile_blocks_scan_but_do_not_decode() -> None:
    block = encode_block(BlockType.HFILE_DATA, {HeaderKey.INSTANT_TIME: "20250101000000009"},
                         b"HFILE")
    [info] = scan_blocks(block, "m.log")
    assert info.is_data
    with pytest.raises(UnsupportedFormatError, match="HFile"):
        decode_data_block(block, info)


def test_magic_is_hudis() -> None:
    assert MAGIC == b"#HUDI#"
