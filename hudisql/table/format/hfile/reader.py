"""Reading an HFile (version 3) as Hudi writes them: sorted (key, value) pairs.

On open the reader reads and parses the trailer and the load-on-open section (root data
index, meta index, file info); data blocks are read and decoded only when a read reaches
them, so a lookup by key reads one block (found by binary search over the root index's
first keys) and a prefix scan the blocks whose key range can hold the prefix. The file is
either bytes in memory or a random-access file (``pyarrow.NativeFile``: local, S3, ...),
read by ranges.

Keys are HBase KeyValue keys (2-byte row length, row, family length 0, timestamp, type);
a key's *row* is what Hudi stores (the metadata record's key) and what this reader
compares and returns, as UTF-8 text, in byte order.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

import numpy as np

from hudisql.errors import CorruptTableError, UnsupportedFormatError
from hudisql.table.format.hfile.blocks import (
    BlockType,
    Codec,
    decode_block,
    read_hadoop_vlong,
)
from hudisql.table.format.hfile.trailer import TRAILER_SIZE, Trailer, decode_file_info

__all__ = ["HFileReader", "IndexEntry", "RandomAccessFile"]

_KV_HEAD = struct.Struct(">iih")
_KV_LENGTHS = struct.Struct(">ii")
_ROW = struct.Struct(">h")
_KEY_VALUE_VERSION = "KEY_VALUE_VERSION"
_MAX_MEMSTORE_TS = "MAX_MEMSTORE_TS_KEY"


class RandomAccessFile(Protocol):
    """What the reader needs of a file: ``pyarrow.NativeFile``'s ``size`` and ``read_at``."""

    def size(self) -> int: ...

    def read_at(self, nbytes: int, offset: int) -> bytes: ...


class _InMemory:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def size(self) -> int:
        return len(self.data)

    def read_at(self, nbytes: int, offset: int) -> bytes:
        return self.data[offset:offset + nbytes]


@dataclass(frozen=True)
class IndexEntry:
    """A block index entry: the block's first key (row, bytes), offset and on-disk size."""

    first_key: bytes
    offset: int
    size: int


class HFileReader:
    """An HFile held in memory: its trailer, file info, meta blocks and records.

    Args:
        data: the whole file, or a random-access file to read ranges of.
        where: how messages name the file (its path).

    Raises:
        CorruptTableError: the trailer, index or file info is damaged.
        UnsupportedFormatError: a feature outside what Hudi writes (multi-level index,
            MVCC timestamps, a codec other than NONE or GZ).
    """

    def __init__(self, data: bytes | RandomAccessFile, where: str = "an HFile") -> None:
        self.file: RandomAccessFile = _InMemory(data) if isinstance(data, bytes) else data
        self.where = where
        size = self.file.size()
        tail_start = max(size - TRAILER_SIZE, 0)
        tail = self.file.read_at(size - tail_start, tail_start)
        self.trailer = Trailer.decode(tail, where)
        try:
            self.codec = Codec(self.trailer.compression_codec)
        except ValueError:
            raise UnsupportedFormatError(
                f"{where} names compression codec {self.trailer.compression_codec}, "
                "which hudisql does not know") from None
        if self.trailer.num_data_index_levels != 1:
            raise UnsupportedFormatError(
                f"{where} has a {self.trailer.num_data_index_levels}-level block index; "
                "hudisql reads the single-level index Hudi's writer makes")
        start = self.trailer.load_on_open_data_offset
        if not 0 <= start <= tail_start:
            raise CorruptTableError(f"{where}: the trailer's load-on-open offset {start} lies "
                                    "outside the file")
        # Root index, meta index and file info: one read, from the trailer's offset.
        section = self.file.read_at(tail_start - start, start)
        header, raw = decode_block(section, 0, self.codec, BlockType.ROOT_INDEX, where, start)
        self.index = _root_entries(raw, self.trailer.data_index_count, True, where)
        offset = header.on_disk_size_with_header
        header, raw = decode_block(section, offset, self.codec, BlockType.ROOT_INDEX, where,
                                   start)
        self.meta_index = {e.first_key.decode("utf-8"): e for e in _root_entries(
            raw, self.trailer.meta_index_count, False, where)}
        offset += header.on_disk_size_with_header
        _, raw = decode_block(section, offset, self.codec, BlockType.FILE_INFO, where, start)
        self.file_info = decode_file_info(raw, where)
        self._check_mvcc()
        self._first_keys = [e.first_key for e in self.index]

    def _check_mvcc(self) -> None:
        version = self.file_info.get(_KEY_VALUE_VERSION)
        stamp = self.file_info.get(_MAX_MEMSTORE_TS)
        if version is not None and int.from_bytes(version[:4], "big") == 1 and stamp \
                and int.from_bytes(stamp[:8], "big") > 0:
            raise UnsupportedFormatError(
                f"{self.where} holds MVCC timestamps; Hudi's HFiles (and hudisql) keep them 0")

    def __len__(self) -> int:
        return self.trailer.entry_count

    @property
    def last_key(self) -> str | None:
        """``hfile.LASTKEY`` (a 2-byte length and the row), as text."""
        raw = self.file_info.get("hfile.LASTKEY")
        if not raw:
            return None
        length = int.from_bytes(raw[:2], "big")
        return raw[2:2 + length].decode("utf-8")

    def meta_block(self, name: str) -> bytes | None:
        """The content of the meta block ``name`` (e.g. Hudi's ``bloomFilter``), or None."""
        entry = self.meta_index.get(name)
        if entry is None:
            return None
        return self._block(entry, BlockType.META)

    def _block(self, entry: IndexEntry, expected: BlockType) -> bytes:
        """The uncompressed payload of the block an index entry points to."""
        if entry.offset < 0 or entry.size < 0:
            raise CorruptTableError(f"{self.where}: an index entry points outside the file")
        data = self.file.read_at(entry.size, entry.offset)
        _, raw = decode_block(data, 0, self.codec, expected, self.where, entry.offset)
        return raw

    # ------------------------------------------------------------------------- records

    def block_records(self, block: int) -> list[tuple[bytes, bytes]]:
        """The (row, value) pairs of data block number ``block``, in order."""
        entry = self.index[block]
        raw = self._block(entry, BlockType.DATA)
        out: list[tuple[bytes, bytes]] = []
        pos, end = 0, len(raw)
        try:
            while pos < end:
                key_length, value_length, row_length = _KV_HEAD.unpack_from(raw, pos)
                if key_length < 2 + row_length or value_length < 0:
                    raise ValueError(f"key length {key_length}, row length {row_length}")
                row = raw[pos + 10:pos + 10 + row_length]
                value_start = pos + 8 + key_length
                value = raw[value_start:value_start + value_length]
                pos = value_start + value_length + 1  # the MVCC version byte, always 0
                if pos > end:
                    raise ValueError("a record runs past the block")
                out.append((row, value))
        except (struct.error, ValueError) as exc:
            raise CorruptTableError(
                f"{self.where}: the data block at byte {entry.offset} does not decode "
                f"({exc})") from None
        if out and out[0][0] < entry.first_key:
            raise CorruptTableError(f"{self.where}: the data block at byte {entry.offset} "
                                    "starts before its index key")
        return out

    def items(self) -> Iterator[tuple[str, bytes]]:
        """Every (key, value) pair, in key order."""
        for block in range(len(self.index)):
            for row, value in self.block_records(block):
                yield row.decode("utf-8"), value

    def get(self, key: str) -> bytes | None:
        """The value stored under ``key`` (the first, if several), or None.

        Binary search of the root index picks the one block that can hold the key.
        """
        wanted = key.encode("utf-8")
        block = bisect.bisect_right(self._first_keys, wanted) - 1
        if block < 0:
            return None
        for row, value in self.block_records(block):
            if row == wanted:
                return value
            if row > wanted:
                return None
        return None

    def get_many(self, keys: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """The (key, value) pairs of those ``keys`` the file holds, in key order.

        Each block is read and decoded once however many wanted keys it holds (a lookup
        of many keys, such as an upsert's tagging, walks the file once), and searched by
        bisection over its records' starts: only the wanted records are cut out.
        """
        wanted = sorted({k.encode("utf-8") for k in keys})
        current = -1
        raw: bytes = b""
        starts: Sequence[int] = []
        for row in wanted:
            block = bisect.bisect_right(self._first_keys, row) - 1
            if block < 0:
                continue
            if block != current:
                current = block
                raw, starts = self._block_starts(block)
            data = raw

            def row_at(start: int, data: bytes = data) -> bytes:
                return data[start + 10:start + 10 + _ROW.unpack_from(data, start + 8)[0]]

            i = bisect.bisect_left(starts, row, key=row_at)
            if i < len(starts) and row_at(starts[i]) == row:
                key_length, value_length = _KV_LENGTHS.unpack_from(raw, starts[i])
                value_start = starts[i] + 8 + key_length
                yield row.decode("utf-8"), raw[value_start:value_start + value_length]

    def _block_starts(self, block: int) -> tuple[bytes, Sequence[int]]:
        """Data block ``block`` uncompressed, and where each of its records starts (one
        pass reading only the two lengths of each record; checked as :meth:`block_records`
        checks them)."""
        entry = self.index[block]
        raw = self._block(entry, BlockType.DATA)
        uniform = _uniform_starts(raw)
        if uniform is not None:
            return raw, uniform
        starts: list[int] = []
        pos, end = 0, len(raw)
        unpack = _KV_LENGTHS.unpack_from
        try:
            while pos < end:
                starts.append(pos)
                key_length, value_length = unpack(raw, pos)
                if key_length < 12 or value_length < 0:
                    raise ValueError(f"key length {key_length}, value length {value_length}")
                pos += 9 + key_length + value_length
        except (struct.error, ValueError) as exc:
            raise CorruptTableError(
                f"{self.where}: the data block at byte {entry.offset} does not decode "
                f"({exc})") from None
        if pos != end:
            raise CorruptTableError(f"{self.where}: the data block at byte {entry.offset} "
                                    "does not decode (a record runs past the block)")
        return raw, starts

    def scan_prefix(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        """Every (key, value) pair whose key starts with ``prefix``, in key order.

        Starts at the block that can hold the first such key and stops at the first key
        past the prefix.
        """
        start = prefix.encode("utf-8")
        block = max(bisect.bisect_right(self._first_keys, start) - 1, 0)
        for number in range(block, len(self.index)):
            for row, value in self.block_records(number):
                if row.startswith(start):
                    yield row.decode("utf-8"), value
                elif row > start:
                    return


def _uniform_starts(raw: bytes) -> range | None:
    """The record starts of a block whose records all have the first one's key and value
    lengths (record and secondary index blocks often do), checked column-wise: every
    record's two lengths are read at once, which is exactly where a record-by-record walk
    would find them. None when the block is not uniform."""
    end = len(raw)
    if end < 8:
        return None
    key_length, value_length = _KV_LENGTHS.unpack_from(raw, 0)
    size = 9 + key_length + value_length
    if key_length < 12 or value_length < 0 or end % size:
        return None
    records = np.frombuffer(raw, dtype=np.uint8).reshape(end // size, size)
    if not (records[:, :8] == records[0, :8]).all():
        return None
    return range(0, end, size)


def _root_entries(raw: bytes, count: int, with_length: bool, where: str) -> list[IndexEntry]:
    """A root index block's entries: int64 offset, int32 size, VLong key length, key.

    Data index keys are HBase keys (2-byte row length first, perhaps the rest of the key
    after the row); meta index keys are the block names alone (``with_length`` False).
    """
    out: list[IndexEntry] = []
    pos = 0
    try:
        for _ in range(count):
            offset, size = struct.unpack_from(">qi", raw, pos)
            length, pos = read_hadoop_vlong(raw, pos + 12)
            key = raw[pos:pos + length]
            if len(key) != length or length < 0:
                raise ValueError("an index key runs past the block")
            pos += length
            if with_length:
                row_length = int.from_bytes(key[:2], "big")
                key = key[2:2 + row_length]
            out.append(IndexEntry(key, offset, size))
    except (struct.error, ValueError, IndexError) as exc:
        raise CorruptTableError(f"{where}: the block index does not decode ({exc})") from None
    if with_length and any(a.first_key > b.first_key for a, b in pairwise(out)):
        raise CorruptTableError(f"{where}: the block index is not sorted")
    return out
