"""The HFile (version 3) writer and reader: layout, lookups, prefix scans, damage."""

from __future__ import annotations

import bisect
import random
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from hudisql.errors import CorruptTableError, UnsupportedFormatError
from hudisql.table.format.hfile import Codec, HFileReader
from hudisql.table.format.hfile.blocks import (
    HEADER_SIZE,
    BlockType,
    encode_block,
    parse_header,
    read_hadoop_vlong,
    write_hadoop_vlong,
)
from hudisql.table.format.hfile.trailer import TRAILER_SIZE, Trailer
from hudisql.table.format.hfile.writer import HFileWriter, write_hfile

# Hadoop WritableUtils.writeVLong, worked out by hand from its definition.
VLONGS = [
    (0, "00"), (127, "7f"), (-112, "90"), (128, "8f80"), (255, "8fff"), (256, "8e0100"),
    (-113, "8770"), (65535, "8effff"), (2**31, "8c80000000"),
]


@pytest.mark.parametrize(("value", "encoded"), VLONGS)
def test_index_key_lengths_are_hadoop_vlongs(value: int, encoded: str) -> None:
    assert write_hadoop_vlong(value).hex() == encoded
    assert read_hadoop_vlong(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


def _items(count: int, seed: int = 7) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    keys = {f"key-{rng.randrange(10**9):09d}" for _ in range(count)}
    keys |= {"", "é-accent", "z" * 200, "\u4e2d\u6587"}  # empty, non-ASCII, long (VLong > 127)
    # Byte order of UTF-8, which is what HFile readers compare.
    return [(k, rng.randbytes(rng.randrange(0, 60))) for k in
            sorted(keys, key=lambda k: k.encode("utf-8"))]


@pytest.fixture(scope="module")
def many() -> list[tuple[str, bytes]]:
    return _items(3000)


@pytest.mark.parametrize("codec", [Codec.GZ, Codec.NONE])
def test_written_files_read_back_by_key_and_by_prefix(
        many: list[tuple[str, bytes]], codec: Codec) -> None:
    data = write_hfile(many, file_info={"schema": b"{}"}, meta_blocks={"bloomFilter": b"bits"},
                       codec=codec, block_size=4096)
    reader = HFileReader(data, "t.hfile")
    assert len(reader.index) > 10 and len(reader) == len(many)
    assert list(reader.items()) == many
    assert reader.last_key == many[-1][0]
    assert reader.file_info["schema"] == b"{}" and reader.meta_block("bloomFilter") == b"bits"
    assert reader.meta_block("nothing") is None
    assert struct.unpack(">i", reader.file_info["KEY_VALUE_VERSION"]) == (1,)
    assert reader.file_info["MAX_MEMSTORE_TS_KEY"] == bytes(8)
    assert reader.trailer.compression_codec == codec
    for key, value in many[::37] + many[-3:]:
        assert reader.get(key) == value
    for missing in ("key-", "key-9999999999", "zz", "a", many[5][0] + "\x00"):
        assert reader.get(missing) is None
    for prefix in ("key-1", "key-00", "z", "", "nothing"):
        assert list(reader.scan_prefix(prefix)) == [i for i in many if i[0].startswith(prefix)]


def test_an_empty_file_is_written_as_hudi_writes_one() -> None:
    reader = HFileReader(write_hfile([]), "empty.hfile")
    assert len(reader) == 0 and reader.index == [] and list(reader.items()) == []
    assert reader.get("x") is None and reader.last_key is None
    assert reader.trailer.first_data_block_offset == 2**64 - 1  # Hudi's -1


def test_records_of_one_key_stay_in_one_block_and_order_is_enforced() -> None:
    writer = HFileWriter(Codec.NONE, block_size=64)
    for value in (b"a" * 50, b"b" * 50, b"c" * 50):
        writer.append("same", value)
    writer.append("tail", b"x" * 50)
    reader = HFileReader(writer.finish(), "dup.hfile")
    assert [len(reader.block_records(i)) for i in range(len(reader.index))] == [3, 1]
    with pytest.raises(UnsupportedFormatError, match="in order"):
        writer.append("before", b"")


def test_gz_blocks_never_end_where_readers_count_checksums_differently() -> None:
    """Readers size a block's checksum bytes from its on-disk size *with* them; a gzip
    payload ending just below a 16384 boundary would make them cut it short."""
    rng = random.Random(1)
    shifted = 0
    for length in range(16300, 16400):
        raw = rng.randbytes(length)  # incompressible: payload size follows the length
        block = encode_block(BlockType.DATA, raw, Codec.GZ)
        header = parse_header(block, 0, "b")
        on_disk = header.on_disk_size_with_header
        reader_checksums = 4 * -(-on_disk // 16384)
        assert header.on_disk_data_size_with_header + reader_checksums == on_disk
        shifted += header.on_disk_data_size_with_header in range(16384, 16390)
    assert shifted  # some payloads were moved past the boundary by a gzip comment


def test_damage_is_refused_by_name(many: list[tuple[str, bytes]]) -> None:
    data = write_hfile(many[:200], codec=Codec.GZ, block_size=2048)
    reader = HFileReader(data, "t.hfile")
    second = reader.index[1].offset
    flipped = bytearray(data)
    for i in range(second + HEADER_SIZE + 20, second + HEADER_SIZE + 60):
        flipped[i] ^= 0xFF
    damaged = HFileReader(bytes(flipped), "t.hfile")  # the load-on-open section is intact
    assert damaged.block_records(0) == reader.block_records(0)
    with pytest.raises(CorruptTableError, match=r"t\.hfile"):
        list(damaged.items())
    with pytest.raises(CorruptTableError, match="shorter than an HFile trailer"):
        HFileReader(data[:100], "t.hfile")
    with pytest.raises(CorruptTableError, match="trailer magic"):
        HFileReader(data[:-1], "t.hfile")
    with pytest.raises(CorruptTableError, match="block"):
        HFileReader(data[:second] + bytes(len(data) - second - TRAILER_SIZE)
                    + data[-TRAILER_SIZE:], "t.hfile")


@pytest.mark.parametrize(("change", "message"), [
    ({"compression_codec": Codec.SNAPPY}, "SNAPPY"),
    ({"num_data_index_levels": 2}, "2-level"),
])
def test_features_hudi_does_not_write_are_refused(change: dict[str, int], message: str) -> None:
    data = write_hfile([("k", b"v")], codec=Codec.NONE)
    trailer = Trailer.decode(data, "t")
    for name, value in change.items():
        setattr(trailer, name, value)
    with pytest.raises(UnsupportedFormatError, match=message):
        HFileReader(data[:-TRAILER_SIZE] + trailer.encode(), "t").get("k")
    version_2 = data[:-3] + (2).to_bytes(3, "big")
    with pytest.raises(UnsupportedFormatError, match="version 2"):
        HFileReader(version_2, "t")


class _CountingFile:
    """A random-access file (pyarrow's ``size``/``read_at``) that counts the bytes read."""

    def __init__(self, data: bytes) -> None:
        self.data, self.read = data, 0

    def size(self) -> int:
        return len(self.data)

    def read_at(self, nbytes: int, offset: int) -> bytes:
        self.read += nbytes
        return self.data[offset:offset + nbytes]


def test_a_lookup_reads_the_index_and_one_block(
        many: list[tuple[str, bytes]], tmp_path: Path) -> None:
    data = write_hfile(many, codec=Codec.GZ, block_size=4096)
    source = _CountingFile(data)
    reader = HFileReader(source, "t.hfile")
    key, value = many[1234]
    opened = source.read
    assert reader.get(key) == value
    block = bisect.bisect_right([e.first_key for e in reader.index], key.encode()) - 1
    assert source.read - opened == reader.index[block].size  # that one block, nothing else
    assert source.read < len(data) / 5
    path = tmp_path / "t.hfile"
    path.write_bytes(data)
    with pa.OSFile(str(path)) as native:
        assert list(HFileReader(native, str(path)).scan_prefix("key-12")) == [
            i for i in many if i[0].startswith("key-12")]


@pytest.mark.parametrize("codec", [Codec.GZ, Codec.NONE])
def test_column_wise_appends_write_the_same_file(
        many: list[tuple[str, bytes]], codec: Codec) -> None:
    one_by_one = HFileWriter(codec, block_size=2048, created_ms=1)
    for key, value in many:
        one_by_one.append(key, value)
    column_wise = HFileWriter(codec, block_size=2048, created_ms=1)
    column_wise.append_arrays(pa.array([k for k, _ in many[:1]], pa.string()),
                              pa.array([v for _, v in many[:1]], pa.binary()))
    column_wise.append_arrays(pa.array([k for k, _ in many[1:]], pa.string()),
                              pa.array([v for _, v in many[1:]], pa.binary()))
    mixed = HFileReader(column_wise.finish(), "t")
    assert list(mixed.items()) == many
    # Cut where one-by-one appends cut, except after the first call's single record.
    blocks = [len(mixed.block_records(i)) for i in range(len(mixed.index))]
    assert blocks[0] == 1
    whole = HFileWriter(codec, block_size=2048, created_ms=1)
    whole.append_arrays(pa.array([k for k, _ in many]), pa.array([v for _, v in many]))
    assert whole.finish() == one_by_one.finish()
    with pytest.raises(UnsupportedFormatError, match="strictly increase"):
        HFileWriter().append_arrays(pa.array(["b", "a"]), pa.array([b"", b""]))
    with pytest.raises(UnsupportedFormatError, match="in order"):
        column_wise.append_arrays(pa.array(["a"]), pa.array([b""]))
