"""Writing an HFile (version 3) in the layout Apache Hudi's native writer produces.

Layout, in file order::

    data blocks        DATABLK*: sorted key-values, about ``block_size`` uncompressed each
    meta blocks        METABLKc: one per named meta entry (Hudi: ``bloomFilter``)
    root data index    IDXROOT2: per data block its offset, on-disk size and first key
    meta index         IDXROOT2: per meta block its offset, size and name (may be empty)
    file info          FILEINF2: PBUF + InfoProto (hfile.LASTKEY, KEY_VALUE_VERSION, ...)
    trailer            4096 bytes, TrailerProto, major version 3

A key-value in a data block: int32 key length, int32 value length, the key (int16 row
length, row, family length 0, timestamp Long.MAX_VALUE, type 4 = Put), the value, and
the MVCC version byte 0. The index is single-level, as Hudi writes it for every size:
a million metadata keys make about 1,500 blocks, a root index of some 60 KB.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import UnsupportedFormatError
from hudisql.table.format.hfile.blocks import (
    BlockType,
    Codec,
    encode_block,
    write_hadoop_vlong,
)
from hudisql.table.format.hfile.trailer import Trailer, encode_file_info

__all__ = ["DEFAULT_BLOCK_SIZE", "HFileWriter", "write_hfile"]

#: Uncompressed bytes per data block (Hudi's ``hoodie.hfile.block.size`` default, 64 KiB).
DEFAULT_BLOCK_SIZE = 64 * 1024
_KEY_TAIL = b"\x00" + struct.pack(">q", 2**63 - 1) + b"\x04"  # family 0, max timestamp, Put
_KV_HEAD = struct.Struct(">iih")
_KV_HEAD_DTYPE = np.dtype([("key", ">i4"), ("value", ">i4"), ("row", ">i2")])
_MAX_ROW = 32767


class HFileWriter:
    """Builds an HFile in memory from key-value pairs appended in key order.

    Args:
        codec: NONE or GZ (the metadata table's base files use GZ).
        block_size: uncompressed bytes after which a data block is closed; records of one
            key stay in one block.
        created_ms: ``hfile.CREATE_TIME_TS`` (epoch milliseconds; default now).
    """

    def __init__(self, codec: Codec = Codec.GZ, block_size: int = DEFAULT_BLOCK_SIZE,
                 created_ms: int | None = None) -> None:
        if codec not in (Codec.NONE, Codec.GZ):
            raise UnsupportedFormatError(
                f"hudisql writes HFiles compressed with NONE or GZ, not {codec.name}")
        self.codec = codec
        self.block_size = block_size
        self.created_ms = int(time.time() * 1000) if created_ms is None else created_ms
        self._out: list[bytes] = []
        self._offset = 0
        self._block: list[bytes] = []
        self._block_bytes = 0
        self._block_first: bytes | None = None
        self._last: bytes | None = None
        self._index: list[tuple[int, int, bytes]] = []
        self._meta: dict[str, bytes] = {}
        self._info: dict[str, bytes] = {}
        self._count = 0
        self._key_bytes = 0
        self._value_bytes = 0
        self._data_bytes = 0

    def append(self, key: str | bytes, value: bytes) -> None:
        """Add a key-value pair; keys must come in non-decreasing byte order.

        Raises:
            UnsupportedFormatError: a key out of order or longer than 32767 bytes.
        """
        row = key.encode("utf-8") if isinstance(key, str) else key
        if self._last is not None and row < self._last:
            raise UnsupportedFormatError(
                f"HFile keys must be appended in order: {row!r} follows {self._last!r}")
        if len(row) > _MAX_ROW:
            raise UnsupportedFormatError(f"an HFile key is at most {_MAX_ROW} bytes")
        size = len(row) + len(value) + 21
        if self._block and row != self._last and self._block_bytes + size > self.block_size:
            self._flush_block()
        if not self._block:
            self._block_first = row
        self._block.append(_KV_HEAD.pack(len(row) + 12, len(value), len(row)) + row
                           + _KEY_TAIL + value + b"\x00")
        self._block_bytes += size
        self._last = row
        self._count += 1
        self._key_bytes += len(row)
        self._value_bytes += len(value)

    def append_arrays(self, keys: pa.Array, values: pa.Array) -> None:
        """Add many key-value pairs at once, column-wise (Arrow builds the records' bytes).

        ``keys`` (string or binary) must be strictly increasing and all greater than the
        keys appended before; ``values`` are binary. Blocks are cut as :meth:`append` cuts
        them. A million record-index pairs take about a second this way.

        Raises:
            UnsupportedFormatError: keys out of order, repeated, or too long; lengths differ.
        """
        count = len(keys)
        if count != len(values):
            raise UnsupportedFormatError(f"{count} HFile keys but {len(values)} values")
        if not count:
            return
        rows = keys.cast(pa.binary()) if not pa.types.is_binary(keys.type) else keys
        raw_values = values.cast(pa.binary()) if not pa.types.is_binary(values.type) else values
        if rows.null_count or raw_values.null_count:
            raise UnsupportedFormatError("HFile keys and values cannot be null")
        if count > 1 and pc.any(pc.less_equal(rows.slice(1), rows.slice(0, count - 1))).as_py():
            raise UnsupportedFormatError("HFile keys given column-wise must strictly increase")
        first = rows[0].as_py()
        if self._last is not None and first <= self._last:
            raise UnsupportedFormatError(
                f"HFile keys must be appended in order: {first!r} follows {self._last!r}")
        key_lengths = np.asarray(pc.binary_length(rows).to_numpy(zero_copy_only=False),
                                 dtype=np.int64)
        value_lengths = np.asarray(
            pc.binary_length(raw_values).to_numpy(zero_copy_only=False), dtype=np.int64)
        if int(key_lengths.max()) > _MAX_ROW:
            raise UnsupportedFormatError(f"an HFile key is at most {_MAX_ROW} bytes")
        heads = np.empty(count, dtype=_KV_HEAD_DTYPE)
        heads["key"], heads["value"], heads["row"] = key_lengths + 12, value_lengths, key_lengths
        head_array = pa.Array.from_buffers(
            pa.binary(_KV_HEAD_DTYPE.itemsize), count, [None, pa.py_buffer(heads.tobytes())],
        ).cast(pa.binary())
        # large_binary: 64-bit offsets, so a file's records may exceed 2 GiB together.
        large = pa.large_binary()
        joined = pc.binary_join_element_wise(
            head_array.cast(large), rows.cast(large), pa.scalar(_KEY_TAIL, large),
            raw_values.cast(large), pa.scalar(b"\x00", large), pa.scalar(b"", large))
        sizes = key_lengths + value_lengths + 21
        ends = np.cumsum(sizes)
        self._flush_block()
        start = 0
        while start < count:
            before = int(ends[start - 1]) if start else 0
            stop = max(int(np.searchsorted(ends, before + self.block_size, side="right")),
                       start + 1)
            piece = joined.slice(start, stop - start)
            self._block = [_joined_bytes(piece)]
            self._block_first = rows[start].as_py()
            self._flush_block()
            start = stop
        self._last = rows[count - 1].as_py()
        self._count += count
        self._key_bytes += int(key_lengths.sum())
        self._value_bytes += int(value_lengths.sum())

    def add_meta_block(self, name: str, content: bytes) -> None:
        """A named meta block (written after the data blocks, found through the meta index)."""
        self._meta[name] = content

    def add_file_info(self, name: str, value: bytes) -> None:
        """A file info entry (Hudi's: ``schema``, ``minRecordKey``, ``maxRecordKey``, ...)."""
        self._info[name] = value

    def _write(self, raw: bytes) -> int:
        offset = self._offset
        self._out.append(raw)
        self._offset += len(raw)
        return offset

    def _flush_block(self) -> None:
        if not self._block:
            return
        raw = b"".join(self._block)
        self._data_bytes += len(raw)
        encoded = encode_block(BlockType.DATA, raw, self.codec)
        assert self._block_first is not None
        self._index.append((self._write(encoded), len(encoded), self._block_first))
        self._block = []
        self._block_bytes = 0

    def finish(self) -> bytes:
        """The whole file."""
        self._flush_block()
        meta_index = bytearray()
        for name in sorted(self._meta):
            block = encode_block(BlockType.META, self._meta[name], self.codec)
            offset = self._write(block)
            raw_name = name.encode("utf-8")
            meta_index += struct.pack(">qi", offset, len(block)) \
                + write_hadoop_vlong(len(raw_name)) + raw_name
        load_on_open = self._offset
        root = bytearray()
        for offset, size, first in self._index:
            # The whole KeyValue key, as HBase writes it (Hudi's native writer stops after
            # the row; its reader and hudi-rs read the row by its length and ignore the rest).
            root += struct.pack(">qi", offset, size) + write_hadoop_vlong(len(first) + 12) \
                + struct.pack(">h", len(first)) + first + _KEY_TAIL
        self._write(encode_block(BlockType.ROOT_INDEX, bytes(root), self.codec))
        self._write(encode_block(BlockType.ROOT_INDEX, bytes(meta_index), self.codec))
        file_info_offset = self._offset
        self._write(encode_block(BlockType.FILE_INFO, encode_file_info(self._file_info()),
                                 self.codec))
        first_block = self._index[0][0] if self._index else 2**64 - 1  # Hudi's -1
        trailer = Trailer(
            file_info_offset=file_info_offset,
            load_on_open_data_offset=load_on_open,
            uncompressed_data_index_size=len(root),
            total_uncompressed_bytes=self._data_bytes,
            data_index_count=len(self._index),
            meta_index_count=len(self._meta),
            entry_count=self._count,
            num_data_index_levels=1,
            first_data_block_offset=first_block,
            last_data_block_offset=self._index[-1][0] if self._index else 0,
            compression_codec=int(self.codec),
        )
        self._write(trailer.encode())
        return b"".join(self._out)

    def _file_info(self) -> dict[str, bytes]:
        count = self._count
        last = self._last or b""
        info = {
            "hfile.LASTKEY": struct.pack(">h", len(last)) + last + _KEY_TAIL if last else b"",
            "hfile.AVG_KEY_LEN": struct.pack(">i", self._key_bytes // count if count else 0),
            "hfile.AVG_VALUE_LEN": struct.pack(
                ">i", self._value_bytes // count if count else 0),
            "hfile.CREATE_TIME_TS": struct.pack(">q", self.created_ms),
            # MVCC version byte present after each value, every timestamp 0 (as Hudi).
            "KEY_VALUE_VERSION": struct.pack(">i", 1),
            "MAX_MEMSTORE_TS_KEY": struct.pack(">q", 0),
        }
        info.update(self._info)
        return info


def _joined_bytes(array: pa.Array) -> bytes:
    """The bytes of a binary array's values, one after the other (its data buffer's span)."""
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)  # large_binary
    start, end = int(offsets[array.offset]), int(offsets[array.offset + len(array)])
    data = array.buffers()[2]
    return b"" if data is None else data.slice(start, end - start).to_pybytes()


def write_hfile(
    items: Iterable[tuple[str | bytes, bytes]],
    file_info: Mapping[str, bytes] | None = None,
    meta_blocks: Mapping[str, bytes] | None = None,
    codec: Codec = Codec.GZ,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> bytes:
    """An HFile of ``items`` (sorted by key), with extra file info and meta blocks."""
    writer = HFileWriter(codec, block_size)
    for key, value in items:
        writer.append(key, value)
    for name, value in (file_info or {}).items():
        writer.add_file_info(name, value)
    for name, content in (meta_blocks or {}).items():
        writer.add_meta_block(name, content)
    return writer.finish()
