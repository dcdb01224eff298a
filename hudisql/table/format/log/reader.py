"""Reading log files: a header-only block scan with corruption detection, and block decoding.

:func:`scan_blocks` walks a log file block by block reading only framing and headers (it
skips over content without looking at it). A damaged stretch (a block cut short, a wrong
trailing length, bytes that are not a block, a file cut inside a header) becomes one
``CORRUPT`` entry with its reason, and the scan goes on at the next magic, so the valid
blocks before and after it are all reported. Decoding happens only on request, per block.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Context, Decimal
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from hudisql.errors import CorruptLogBlockError, UnsupportedFormatError
from hudisql.table.format.log.avro_codec import AvroDecodeError, record_codec
from hudisql.table.format.log.avro_nodes import read_long as _read_long
from hudisql.table.format.log.format import (
    FORMAT_VERSION,
    MAGIC,
    ORDERING_DECIMAL_SCALE,
    ORDERING_TYPES,
    BlockType,
    DeleteRecord,
    HeaderKey,
    LogBlockInfo,
)
from hudisql.table.format.schema import avro_to_arrow
from hudisql.table.io.storage import Storage

__all__ = [
    "decode_data_block",
    "decode_delete_block",
    "read_block_content",
    "scan_blocks",
    "scan_log_file",
]

_PREFIX = struct.Struct(">6sqii")  # magic, blockSize, formatVersion, blockType
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
# version + type + header count + content length + footer count + trailing length
_MIN_BLOCK_SIZE = 4 + 4 + 4 + 8 + 4 + 8
_AVRO_BLOCK_VERSIONS = (2, 3)
_DELETE_BLOCK_VERSION = 3
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_DATE_EPOCH = dt.date(1970, 1, 1)
_WIDE = Context(prec=100)


class _Source(Protocol):
    size: int

    def window(self, pos: int, n: int) -> tuple[bytes, int]: ...

    def find(self, pattern: bytes, start: int) -> int: ...


class _BytesSource:
    """A log file held in memory."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    def window(self, pos: int, n: int) -> tuple[bytes, int]:
        """A buffer and offset holding bytes ``pos`` to ``pos + n`` (fewer at end of file)."""
        return self.data, pos

    def find(self, pattern: bytes, start: int) -> int:
        return self.data.find(pattern, start)


class _FileSource:
    """A log file read through positioned reads into two small windows, never whole."""

    WINDOW = 16 * 1024
    # A window starts a little before the byte asked for: a block's tail (footer, trailing
    # length) is read just before its end, and the same window then holds the next header.
    BACK = 512
    SEARCH_CHUNK = 1 << 20

    def __init__(self, f: Any, size: int) -> None:
        self.f = f
        self.size = size
        # Two windows (most recent first): a block's head and its tail.
        self.windows: list[tuple[int, bytes]] = []

    def window(self, pos: int, n: int) -> tuple[bytes, int]:
        """A buffer and offset holding bytes ``pos`` to ``pos + n`` (fewer at end of file)."""
        for i, (start, buf) in enumerate(self.windows):
            off = pos - start
            if off >= 0 and (off + n <= len(buf) or start + len(buf) >= self.size):
                if i:
                    self.windows.insert(0, self.windows.pop(i))
                return buf, off
        start = max(0, pos - self.BACK)
        buf = bytes(self.f.read_at(max(n + pos - start, self.WINDOW), start))
        self.windows = [(start, buf), *self.windows[:1]]
        return buf, pos - start

    def find(self, pattern: bytes, start: int) -> int:
        pos = start
        while pos < self.size:
            chunk = bytes(self.f.read_at(self.SEARCH_CHUNK + len(pattern) - 1, pos))
            i = chunk.find(pattern)
            if i >= 0:
                return pos + i
            pos += self.SEARCH_CHUNK
        return -1


class _Corrupt(Exception):
    """A block's framing is damaged (internal: becomes a CORRUPT entry)."""


def scan_blocks(data: bytes, log_file: str = "") -> list[LogBlockInfo]:
    """Scan a log file's bytes block by block, reading framing and headers only.

    Returns:
        One :class:`LogBlockInfo` per block in file order; each damaged stretch is one
        entry of type ``CORRUPT`` (with ``corrupt_reason``), and the scan resumes at the
        next magic after it.
    """
    return _scan(_BytesSource(bytes(data)), log_file)


def scan_log_file(storage: Storage, rel: str) -> list[LogBlockInfo]:
    """Scan the log file at ``rel`` like :func:`scan_blocks`, reading only what it needs.

    Content is skipped with positioned reads, so a file of large blocks is scanned without
    being read.

    Raises:
        FileNotFoundError: no file at ``rel``.
    """
    f = storage.open_input_file(rel)
    try:
        return _scan(_FileSource(f, int(f.size())), rel)
    finally:
        f.close()


def _scan(src: _Source, log_file: str) -> list[LogBlockInfo]:
    out: list[LogBlockInfo] = []
    pos = 0
    size = src.size
    while pos < size:
        buf, off = src.window(pos, _PREFIX.size)
        if buf[off : off + len(MAGIC)] != MAGIC:
            nxt = src.find(MAGIC, pos + 1)
            end = nxt if nxt >= 0 else size
            reason = f"{end - pos} bytes at {pos} are not a log block (no magic)"
            out.append(_corrupt(log_file, pos, end, reason))
            pos = end
            continue
        try:
            info = _read_block(src, pos, log_file)
        except _Corrupt as e:
            nxt = src.find(MAGIC, pos + len(MAGIC))
            end = nxt if nxt >= 0 else size
            out.append(_corrupt(log_file, pos, end, str(e)))
            pos = end
            continue
        out.append(info)
        pos = info.end
    return out


def _corrupt(log_file: str, start: int, end: int, reason: str) -> LogBlockInfo:
    return LogBlockInfo(
        log_file=log_file, position=start, length=end - start, block_type=BlockType.CORRUPT,
        header={}, footer={}, content_position=start, content_length=end - start,
        corrupt_reason=reason,
    )


_BLOCK_TYPES = {int(t): t for t in BlockType if t != BlockType.CORRUPT}
_HEADER_KEYS = {int(k): k for k in HeaderKey}
_PAIR = struct.Struct(">ii")


def _read_block(src: _Source, pos: int, log_file: str) -> LogBlockInfo:
    """The info of the block at ``pos`` (its magic already seen), or raise _Corrupt."""
    if pos + _PREFIX.size > src.size:
        raise _Corrupt(f"the file ends {src.size - pos} bytes into a block header")
    buf, off = src.window(pos, _PREFIX.size)
    _, block_size, version, type_code = _PREFIX.unpack_from(buf, off)
    end = pos + len(MAGIC) + 8 + block_size
    if block_size < _MIN_BLOCK_SIZE:
        raise _Corrupt(f"block size {block_size} is too small for a block")
    if end > src.size:
        raise _Corrupt(
            f"block of {block_size} bytes is cut short: the file ends "
            f"{src.size - pos - len(MAGIC) - 8} bytes into it"
        )
    buf, off = src.window(end - 8, 8)
    (trailing,) = _I64.unpack_from(buf, off)
    if trailing != block_size + len(MAGIC):
        raise _Corrupt(
            f"trailing length {trailing} does not match block size {block_size} (+6)"
        )
    if version != FORMAT_VERSION:
        raise _Corrupt(f"unsupported log format version {version}")
    block_type = _BLOCK_TYPES.get(type_code)
    if block_type is None:
        if type_code == BlockType.CORRUPT:
            raise _Corrupt("block is marked CORRUPT")
        raise _Corrupt(f"unknown block type {type_code}")
    limit = end - 8
    header, p = _read_metadata(src, pos + _PREFIX.size, limit, "header", _HEADER_KEYS)
    if p + 8 > limit:
        raise _Corrupt("block ends inside its content length")
    buf, off = src.window(p, 8)
    (content_length,) = _I64.unpack_from(buf, off)
    content_pos = p + 8
    if content_length < 0 or content_pos + content_length + 4 > limit:
        raise _Corrupt(f"content length {content_length} runs past the end of the block")
    footer, p = _read_metadata(src, content_pos + content_length, limit, "footer", None)
    if p != limit:
        raise _Corrupt(f"{limit - p} stray bytes between the footer and the trailing length")
    # Positional: keyword arguments cost twice as much, once per block.
    return LogBlockInfo(log_file, pos, end - pos, block_type, header, footer, content_pos,
                        content_length, None, version)


def _read_metadata(
    src: _Source, pos: int, limit: int, what: str, keys: dict[int, HeaderKey] | None
) -> tuple[dict[Any, str], int]:
    if pos + 4 > limit:
        raise _Corrupt(f"block ends inside its {what}")
    buf, off = src.window(pos, 4)
    (count,) = _I32.unpack_from(buf, off)
    pos += 4
    if count == 0:  # every footer Hudi writes
        return {}, pos
    if count < 0 or count * 8 > limit - pos:
        raise _Corrupt(f"{what} entry count {count} does not fit the block")
    entries: dict[Any, str] = {}
    for _ in range(count):
        if pos + 8 > limit:
            raise _Corrupt(f"block ends inside its {what}")
        buf, off = src.window(pos, 8)
        code, length = _PAIR.unpack_from(buf, off)
        pos += 8
        if length < 0 or pos + length > limit:
            raise _Corrupt(f"{what} entry {code} of {length} bytes runs past the block")
        key = code if keys is None else keys.get(code)
        if key is None:
            raise _Corrupt(f"unknown header key {code}")
        buf, off = src.window(pos, length)
        try:
            entries[key] = buf[off : off + length].decode("utf-8")
        except UnicodeDecodeError:
            raise _Corrupt(f"{what} entry {code} is not UTF-8") from None
        pos += length
    return entries, pos


# --------------------------------------------------------------------------- decoding


def read_block_content(storage: Storage, info: LogBlockInfo) -> bytes:
    """The content bytes of one scanned block, read from ``info.log_file``."""
    f = storage.open_input_file(info.log_file)
    try:
        return bytes(f.read_at(info.content_length, info.content_position))
    finally:
        f.close()


def _content(data: bytes, info: LogBlockInfo) -> bytes:
    # ``data`` is the whole log file, or just this block's content (read_block_content).
    if len(data) == info.content_length:
        return bytes(data)
    content = bytes(data[info.content_position : info.content_position + info.content_length])
    if len(content) != info.content_length:
        raise _block_error(info, "the data given is shorter than the block")
    return content


def _block_error(info: LogBlockInfo, detail: str) -> CorruptLogBlockError:
    where = info.log_file or "the log file"
    return CorruptLogBlockError(
        f"log block at byte {info.position} of {where} (instant {info.instant_time}) "
        f"cannot be decoded: {detail}. Readers skip it; if its instant completed, restore "
        "the file or roll the instant back"
    )


def decode_data_block(data: bytes, info: LogBlockInfo) -> pa.Table:
    """Decode the records of an Avro (or CDC) or parquet data block.

    Args:
        data: the whole log file's bytes (as scanned), or the block's content alone.
        info: the block, from :func:`scan_blocks` / :func:`scan_log_file`.

    Returns:
        The records, in the Arrow schema of the block's ``SCHEMA`` header.

    Raises:
        CorruptLogBlockError: a corrupt entry, or content that does not decode.
        UnsupportedFormatError: an HFile block, or an unknown data block version.
        ValueError: ``info`` is not a data block.
    """
    if info.is_corrupt:
        raise _block_error(info, f"it is corrupt ({info.corrupt_reason})")
    if info.block_type == BlockType.HFILE_DATA:
        raise UnsupportedFormatError(
            f"HFile log block at byte {info.position} of {info.log_file}: hudisql reads Avro "
            "and parquet data blocks only (HFile blocks appear in Hudi's metadata table)"
        )
    if info.block_type == BlockType.PARQUET_DATA:
        return _decode_parquet(_content(data, info), info)
    if info.block_type not in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        raise ValueError(f"{info.block_type.name} block at byte {info.position} holds no records")
    return _decode_avro(_content(data, info), info)


def _decode_avro(content: bytes, info: LogBlockInfo) -> pa.Table:
    schema = info.schema
    if schema is None:
        raise _block_error(info, "an Avro data block without a SCHEMA header")
    if len(content) < 8:
        raise _block_error(info, "content shorter than its version and record count")
    version, count = struct.unpack_from(">ii", content, 0)
    if version not in _AVRO_BLOCK_VERSIONS:
        if version == 1:
            raise UnsupportedFormatError(
                f"Avro data block version 1 at byte {info.position} of {info.log_file} "
                f"(Hudi before 0.5) is not supported, only versions {_AVRO_BLOCK_VERSIONS}"
            )
        raise _block_error(info, f"unknown data block version {version}")
    if count < 0 or count * 4 > len(content) - 8:
        raise _block_error(info, f"record count {count} does not fit the content")
    try:
        codec = record_codec(schema)
    except (UnsupportedFormatError, ValueError, KeyError, TypeError) as e:
        raise _block_error(info, f"its SCHEMA header is not usable: {e}") from None
    try:
        table, pos = codec.decode(content, 8, count, len(content))
    except AvroDecodeError as e:
        raise _block_error(info, str(e)) from None
    if pos != len(content):
        raise _block_error(info, f"{len(content) - pos} bytes follow the last record")
    try:
        # Damaged bytes can still decode to values Arrow cannot hold (invalid UTF-8, a time
        # outside a day); such a block is corrupt, not a source of undefined values.
        table.validate(full=True)
    except pa.ArrowInvalid as e:
        raise _block_error(info, f"it decodes to invalid values: {e}") from None
    return table


def _decode_parquet(content: bytes, info: LogBlockInfo) -> pa.Table:
    try:
        table = pq.read_table(pa.BufferReader(content))
    except (pa.ArrowException, OSError) as e:
        raise _block_error(info, f"its parquet content does not read: {e}") from None
    if info.schema is None:
        return table
    # Spark's parquet names list elements differently; present the SCHEMA header's shape.
    target = avro_to_arrow(info.schema)
    columns = []
    for f in target:
        if f.name in table.column_names:
            col = table.column(f.name)
            try:
                columns.append(col.cast(f.type) if col.type != f.type else col)
            except (pa.ArrowException, ValueError) as e:
                raise _block_error(info, f"column {f.name!r} does not match SCHEMA: {e}") from None
        elif f.nullable:
            columns.append(pa.nulls(table.num_rows, f.type))
        else:
            raise _block_error(info, f"required column {f.name!r} is missing")
    return pa.Table.from_arrays(columns, schema=target)


def decode_delete_block(data: bytes, info: LogBlockInfo) -> list[DeleteRecord]:
    """Decode the keys of a delete block (content version 3: Avro ``HoodieDeleteRecordList``).

    Returns:
        The deleted keys in block order, with ordering values as Python values
        (int, float, str, bytes, Decimal, date, time, UTC datetime) and their union branch.

    Raises:
        CorruptLogBlockError: a corrupt entry, or content that does not decode.
        UnsupportedFormatError: delete block versions 1-2 (Java-serialized keys).
        ValueError: ``info`` is not a delete block.
    """
    if info.is_corrupt:
        raise _block_error(info, f"it is corrupt ({info.corrupt_reason})")
    if info.block_type != BlockType.DELETE:
        raise ValueError(f"{info.block_type.name} block at byte {info.position} is not a delete")
    content = _content(data, info)
    if len(content) < 8:
        raise _block_error(info, "content shorter than its version and length")
    version, length = struct.unpack_from(">ii", content, 0)
    if version not in (1, 2, _DELETE_BLOCK_VERSION):
        raise _block_error(info, f"unknown delete block version {version}")
    if version != _DELETE_BLOCK_VERSION:
        raise UnsupportedFormatError(
            f"delete block version {version} at byte {info.position} of {info.log_file} "
            "holds Java-serialized keys, which hudisql cannot read (only version 3)"
        )
    if length != len(content) - 8:
        raise _block_error(info, f"delete list length {length} != {len(content) - 8} bytes")
    try:
        records, pos = _decode_delete_list(content, 8)
    except (IndexError, struct.error, UnicodeDecodeError, ValueError, OverflowError) as e:
        raise _block_error(info, f"delete list does not decode: {e}") from None
    if pos != len(content):
        raise _block_error(info, f"{len(content) - pos} bytes follow the delete list")
    return records


def _decode_delete_list(data: bytes, pos: int) -> tuple[list[DeleteRecord], int]:
    out: list[DeleteRecord] = []
    n, pos = _read_long(data, pos)
    while n:
        if n < 0:
            n = -n
            _, pos = _read_long(data, pos)
        if n > len(data) - pos:
            raise ValueError(f"item count {n} exceeds the remaining bytes")
        for _ in range(n):
            key, pos = _read_optional_string(data, pos)
            partition, pos = _read_optional_string(data, pos)
            branch, pos = _read_long(data, pos)
            if not 0 <= branch < len(ORDERING_TYPES):
                raise ValueError(f"orderingVal union index {branch}")
            name = ORDERING_TYPES[branch]
            value, pos = _read_ordering_value(data, pos, name)
            out.append(DeleteRecord(key, partition, value, name))
        n, pos = _read_long(data, pos)
    return out, pos


def _read_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = _read_long(data, pos)
    if n < 0 or pos + n > len(data):
        raise ValueError(f"length {n} runs past the content")
    return data[pos : pos + n], pos + n


def _read_optional_string(data: bytes, pos: int) -> tuple[str | None, int]:
    branch, pos = _read_long(data, pos)
    if branch == 0:
        return None, pos
    if branch != 1:
        raise ValueError(f"union index {branch} of a ['null', 'string'] field")
    raw, pos = _read_bytes(data, pos)
    return raw.decode("utf-8"), pos


def _read_ordering_value(data: bytes, pos: int, name: str) -> tuple[Any, int]:
    if name == "null":
        return None, pos
    if name == "boolean":
        if pos >= len(data):
            raise ValueError("boolean runs past the content")
        return data[pos] != 0, pos + 1
    if name == "float":
        return struct.unpack_from("<f", data, pos)[0], pos + 4
    if name == "double":
        return struct.unpack_from("<d", data, pos)[0], pos + 8
    if name in ("bytes", "string", "decimal"):
        raw, pos = _read_bytes(data, pos)
        if name == "string":
            return raw.decode("utf-8"), pos
        if name == "decimal":
            unscaled = int.from_bytes(raw, "big", signed=True)
            return Decimal(unscaled).scaleb(-ORDERING_DECIMAL_SCALE, _WIDE), pos
        return raw, pos
    v, pos = _read_long(data, pos)
    return _ordering_from_int(name, v), pos


def _ordering_from_int(name: str, v: int) -> Any:
    if name == "date":
        return _DATE_EPOCH + dt.timedelta(days=v)
    if name in ("time-millis", "time-micros"):
        micros = v * 1000 if name == "time-millis" else v
        if not 0 <= micros < 86_400_000_000:
            raise ValueError(f"{name} value {v} is outside a day")
        return (dt.datetime.min + dt.timedelta(microseconds=micros)).time()
    if name == "timestamp-millis":
        return _EPOCH + dt.timedelta(milliseconds=v)
    if name == "timestamp-micros":
        return _EPOCH + dt.timedelta(microseconds=v)
    return v  # int, long
