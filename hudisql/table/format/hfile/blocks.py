"""HFile blocks: the 33-byte header, compression, and the integer encodings blocks use.

One block on disk (HFile version 3, integers big-endian)::

    magic                       8 bytes  DATABLK*, IDXROOT2, FILEINF2, METABLKc, ...
    onDiskSizeWithoutHeader     int32    payload on disk + checksum bytes
    uncompressedSizeWithoutHeader int32  payload once decompressed
    prevBlockOffset             int64    -1 (Hudi's writer; readers ignore it)
    checksumType                byte     0: NULL (no checksums are computed)
    bytesPerChecksum            int32    16384 (readers divide by it)
    onDiskDataSizeWithHeader    int32    33 + payload on disk
    payload                              compressed with the file's codec (NONE or GZ)
    checksum                             4 zero bytes per started 16384 of the block

Every block of a file, index and file info blocks included, uses the codec the trailer
names, as Apache Hudi's native writer and reader (hudi-io) and hudi-rs expect.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import cast

from isal import isal_zlib

from hudisql.errors import CorruptTableError, UnsupportedFormatError

__all__ = [
    "BYTES_PER_CHECKSUM",
    "HEADER_SIZE",
    "BlockHeader",
    "BlockType",
    "Codec",
    "decode_block",
    "encode_block",
    "read_hadoop_vlong",
    "read_varint",
    "write_hadoop_vlong",
    "write_varint",
]

HEADER_SIZE = 33
BYTES_PER_CHECKSUM = 16384
_CHECKSUM_SIZE = 4
_CHECKSUM_NULL = 0
_HEADER = struct.Struct(">8siiqBii")
#: What a damaged deflate stream raises (ISA-L's stubs type its error class as an instance).
_INFLATE_ERRORS: tuple[type[Exception], ...] = (
    zlib.error, cast("type[Exception]", isal_zlib.error))


class BlockType(Enum):
    """Block types by their 8-byte magic (HBase's ``BlockType``)."""

    DATA = b"DATABLK*"
    ENCODED_DATA = b"DATABLKE"
    LEAF_INDEX = b"IDXLEAF2"
    BLOOM_CHUNK = b"BLMFBLK2"
    META = b"METABLKc"
    INTERMEDIATE_INDEX = b"IDXINTE2"
    ROOT_INDEX = b"IDXROOT2"
    FILE_INFO = b"FILEINF2"
    GENERAL_BLOOM_META = b"BLMFMET2"
    DELETE_FAMILY_BLOOM_META = b"DFBLMET2"


class Codec(IntEnum):
    """Compression codec ids of the trailer (HBase's ``Compression.Algorithm`` ordinals).

    hudisql reads and writes NONE and GZ, the two Hudi's metadata table uses and hudi-rs
    reads; the others are named so that a file using one is refused by name.
    """

    LZO = 0
    GZ = 1
    NONE = 2
    SNAPPY = 3
    LZ4 = 4
    BZIP2 = 5
    ZSTD = 6


@dataclass(frozen=True)
class BlockHeader:
    """A parsed block header."""

    block_type: BlockType
    on_disk_size_without_header: int
    uncompressed_size_without_header: int
    prev_block_offset: int
    checksum_type: int
    bytes_per_checksum: int
    on_disk_data_size_with_header: int

    @property
    def on_disk_size_with_header(self) -> int:
        """Bytes from this block's magic to the next block's."""
        return HEADER_SIZE + self.on_disk_size_without_header


# ------------------------------------------------------------------------ integer codings


def write_varint(value: int) -> bytes:
    """Protobuf's unsigned varint (7 bits a byte, low first)."""
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A protobuf varint at ``pos``: (value, position after it)."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def write_hadoop_vlong(value: int) -> bytes:
    """Hadoop's ``WritableUtils.writeVLong``: what HFile index entries use for key lengths.

    One byte for -112..127; else a length byte then the big-endian magnitude. Both readers
    (hudi-io's ``IOUtils.readVarLong``, hudi-rs ``read_var_long``) decode this form, which
    matches protobuf's varint only below 128.
    """
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value = ~value
        length = -120
    size = (value.bit_length() + 7) // 8
    return struct.pack(">b", length - size) + value.to_bytes(size, "big")


def read_hadoop_vlong(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A Hadoop VLong at ``pos``: (value, position after it)."""
    first = struct.unpack_from(">b", data, pos)[0]
    if first >= -112:
        return first, pos + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    value = int.from_bytes(bytes(data[pos + 1:pos + size]), "big")
    return (~value if negative else value), pos + size


# ---------------------------------------------------------------------------- compression


def _gzip_member(raw: bytes, comment_bytes: int = 0) -> bytes:
    """One gzip member (RFC 1952) of ``raw``, optionally with a comment of that many bytes
    (a space run and its NUL) to move the member's size off a checksum-chunk boundary."""
    flags = 0x10 if comment_bytes else 0
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\x00\x00\x00\x00\x00\xff"
    if comment_bytes:
        head += b" " * (comment_bytes - 1) + b"\x00"
    # ISA-L's deflate at level 1: five times zlib's speed at level 1 (a metadata base
    # file of 500k record-index keys: 0.06 s against 0.3 s of CPU), as small as zlib's
    # level 6. Any deflate stream reads alike (Hudi's and hudi-rs's readers inflate).
    deflate = isal_zlib.compressobj(1, isal_zlib.DEFLATED, -15)
    body = deflate.compress(raw) + deflate.flush()
    return head + body + struct.pack("<II", zlib.crc32(raw), len(raw) & 0xFFFFFFFF)


def _checksum_bytes(size: int) -> int:
    return -(-size // BYTES_PER_CHECKSUM) * _CHECKSUM_SIZE


def _compress(raw: bytes, codec: Codec) -> bytes:
    if codec == Codec.NONE:
        return raw
    if codec != Codec.GZ:
        raise UnsupportedFormatError(
            f"hudisql writes HFiles compressed with NONE or GZ, not {codec.name}")
    member = _gzip_member(raw)
    # Writers count checksum chunks over the block without its checksum bytes, readers
    # (hudi-rs, hudi-io) over the block with them; the counts differ, and a reader cuts
    # the payload short, when the block ends within 4 bytes per chunk below a multiple of
    # 16384. Such a member gets a comment that moves its end past the boundary.
    size = HEADER_SIZE + len(member)
    if _checksum_bytes(size) != _checksum_bytes(size + _checksum_bytes(size)):
        boundary = -(-size // BYTES_PER_CHECKSUM) * BYTES_PER_CHECKSUM
        member = _gzip_member(raw, boundary - size + 2)
    return member


def _decompress(payload: bytes, codec: Codec, expected: int, where: str) -> bytes:
    if codec == Codec.NONE:
        return payload[:expected]
    if codec != Codec.GZ:
        raise UnsupportedFormatError(
            f"{where} is compressed with {codec.name}; hudisql reads HFiles compressed with "
            "NONE or GZ (Hudi's metadata table uses GZ)")
    try:
        decoder = isal_zlib.decompressobj(16 + isal_zlib.MAX_WBITS)
        raw = decoder.decompress(payload, expected + 1)
    except _INFLATE_ERRORS as exc:
        raise CorruptTableError(f"{where} does not decompress (GZ): {exc}") from None
    if len(raw) != expected or not decoder.eof:
        raise CorruptTableError(
            f"{where} decompresses to {len(raw)} bytes, its header says {expected}")
    return raw


# --------------------------------------------------------------------------------- blocks


def encode_block(block_type: BlockType, raw: bytes, codec: Codec) -> bytes:
    """A whole block: header, ``raw`` compressed with ``codec``, zeroed checksum bytes."""
    payload = _compress(raw, codec)
    data_size = HEADER_SIZE + len(payload)
    checksums = _checksum_bytes(data_size)
    header = _HEADER.pack(block_type.value, len(payload) + checksums, len(raw), -1,
                          _CHECKSUM_NULL, BYTES_PER_CHECKSUM, data_size)
    return header + payload + bytes(checksums)


def parse_header(data: bytes | memoryview, offset: int, where: str, base: int = 0) -> BlockHeader:
    """The header of the block at ``offset`` of ``data`` (a range of the file from ``base``).

    Raises:
        CorruptTableError: no block header there, or sizes that leave the file.
    """
    at = base + offset
    if offset < 0 or offset + HEADER_SIZE > len(data):
        raise CorruptTableError(f"{where}: a block at byte {at} lies outside the file")
    magic, on_disk, uncompressed, prev, checksum, per_checksum, data_size = (
        _HEADER.unpack_from(data, offset))
    try:
        block_type = BlockType(bytes(magic))
    except ValueError:
        raise CorruptTableError(
            f"{where}: no HFile block magic at byte {at} ({bytes(magic)!r})") from None
    if (on_disk < 0 or uncompressed < 0 or data_size < HEADER_SIZE
            or data_size > HEADER_SIZE + on_disk or offset + HEADER_SIZE + on_disk > len(data)
            or per_checksum <= 0):
        raise CorruptTableError(f"{where}: the {block_type.name} block at byte {at} has "
                                "sizes that do not fit the file")
    return BlockHeader(block_type, on_disk, uncompressed, prev, checksum, per_checksum,
                       data_size)


def decode_block(
    data: bytes | memoryview, offset: int, codec: Codec, expected: BlockType, where: str,
    base: int = 0,
) -> tuple[BlockHeader, bytes]:
    """The header and the uncompressed payload of the block at ``offset`` of ``data`` (a
    range of the file that starts at byte ``base``, for messages).

    Raises:
        CorruptTableError: the block is not of the ``expected`` type or does not decode.
    """
    header = parse_header(data, offset, where, base)
    at = base + offset
    if header.block_type != expected:
        raise CorruptTableError(
            f"{where}: expected a {expected.name} block at byte {at}, found "
            f"{header.block_type.name}")
    start = offset + HEADER_SIZE
    payload = bytes(data[start:offset + header.on_disk_data_size_with_header])
    if codec == Codec.NONE and len(payload) < header.uncompressed_size_without_header:
        raise CorruptTableError(f"{where}: the {expected.name} block at byte {at} is "
                                "shorter than its header says")
    raw = _decompress(payload, codec, header.uncompressed_size_without_header,
                      f"{where}: the {expected.name} block at byte {at}")
    return header, raw
