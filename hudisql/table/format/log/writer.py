"""Writing log blocks (Avro data, delete, rollback command) and new log files.

Blocks are byte-compatible with Hudi's: the same framing, the same content layouts
(Avro data: int32 version 3, int32 count, per record int32 length + Avro binary; delete:
int32 version 3, int32 length, Avro ``HoodieDeleteRecordList``), the same headers.
A :class:`LogFileWriter` always starts a new log file (the next free version of the file
group), never appends to an existing one, and rolls over when a file outgrows its limit.
"""

from __future__ import annotations

import datetime as dt
import json
import posixpath
import re
import struct
from collections.abc import Iterable, Mapping
from decimal import Context, Decimal, InvalidOperation
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudisql.errors import WriteError
from hudisql.table.format.filenames import LogFileName
from hudisql.table.format.log.avro_codec import record_codec
from hudisql.table.format.log.avro_nodes import write_varint as _write_varint
from hudisql.table.format.log.format import (
    MAGIC,
    ORDERING_DECIMAL_PRECISION,
    ORDERING_DECIMAL_SCALE,
    ORDERING_TYPES,
    ROLLBACK_COMMAND,
    BlockType,
    DeleteRecord,
    HeaderKey,
    encode_block,
)
from hudisql.table.io.storage import Storage

__all__ = [
    "DEFAULT_MAX_LOG_FILE_SIZE",
    "LogFileWriter",
    "encode_avro_data_block",
    "encode_delete_block",
    "encode_parquet_data_block",
    "encode_rollback_block",
]

#: Hudi's default ``hoodie.logfile.max.size``: 1 GiB.
DEFAULT_MAX_LOG_FILE_SIZE = 1024 * 1024 * 1024
_CONTENT_VERSION = 3
_INSTANT = re.compile(r"^\d{8,}$")
_IDENTIFIER = re.compile(r"^\d+,\d+$")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_DATE_EPOCH = dt.date(1970, 1, 1)
_WIDE = Context(prec=100)


def _check_header(header: Mapping[HeaderKey, str]) -> dict[HeaderKey, str]:
    try:
        out = {HeaderKey(k): str(v) for k, v in header.items()}
    except ValueError as e:
        raise WriteError(f"not a log block header key: {e}") from None
    for key in (HeaderKey.INSTANT_TIME, HeaderKey.TARGET_INSTANT_TIME):
        if key in out and not _INSTANT.match(out[key]):
            raise WriteError(f"{key.name} {out[key]!r} is not an instant time (yyyyMMddHHmmssSSS)")
    ident = out.get(HeaderKey.BLOCK_IDENTIFIER)
    if ident is not None and not _IDENTIFIER.match(ident):
        raise WriteError(f"BLOCK_IDENTIFIER {ident!r} is not '<attempt>,<sequence>'")
    return out


def _with_schema(header: Mapping[HeaderKey, str], schema: str) -> dict[HeaderKey, str]:
    out = _check_header(header)
    if HeaderKey.INSTANT_TIME not in out:
        raise WriteError("a data or delete block needs an INSTANT_TIME header")
    given = out.get(HeaderKey.SCHEMA)
    if given is not None:
        if given != schema:
            raise WriteError("the SCHEMA header differs from the schema the block is written in")
        return out
    # Hudi writes INSTANT_TIME then SCHEMA; keep any other keys after them.
    ordered = {HeaderKey.INSTANT_TIME: out.pop(HeaderKey.INSTANT_TIME), HeaderKey.SCHEMA: schema}
    ordered.update(out)
    return ordered


def encode_avro_data_block(
    table: pa.Table, avro_schema: str | dict[str, Any], header: Mapping[HeaderKey, str]
) -> bytes:
    """An Avro data block holding the rows of ``table`` in ``avro_schema``.

    Args:
        table: the records; columns are matched to the schema's fields by name.
        avro_schema: the writer schema (JSON text is written to the SCHEMA header as is).
        header: at least INSTANT_TIME; BLOCK_IDENTIFIER (``"<attempt>,<seq>"``) when known.
            Keys are written in this order, with SCHEMA after INSTANT_TIME when absent.

    Returns:
        The whole block's bytes.

    Raises:
        WriteError: a bad header, or records that do not fit the schema.
    """
    text = avro_schema if isinstance(avro_schema, str) else json.dumps(avro_schema)
    full_header = _with_schema(header, text)
    body = record_codec(text).encode(table)
    content = _I32.pack(_CONTENT_VERSION) + _I32.pack(table.num_rows) + body
    return encode_block(BlockType.AVRO_DATA, full_header, content)


def encode_parquet_data_block(
    table: pa.Table, avro_schema: str, header: Mapping[HeaderKey, str],
    compression: str = "snappy", use_dictionary: bool | list[str] = True,
) -> bytes:
    """A parquet data block (Hudi's ``HoodieParquetDataBlock``): the rows of ``table`` as
    one parquet file, the Avro writer schema in the SCHEMA header. Readers decode it with
    Arrow in one pass (hudi-rs and Apache Hudi read these blocks too). ``use_dictionary``:
    as pyarrow's (the columns to dictionary-encode, or all / none).

    Raises:
        WriteError: a bad header.
    """
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression, use_dictionary=use_dictionary)
    return encode_block(BlockType.PARQUET_DATA, _with_schema(header, avro_schema),
                        sink.getvalue().to_pybytes())


def encode_delete_block(
    records: Iterable[DeleteRecord], header: Mapping[HeaderKey, str]
) -> bytes:
    """A delete block (content version 3) for the given keys.

    Args:
        records: the keys; each ordering value is written in its ``ordering_type`` branch
            of the union, or one chosen from its Python type (int: ``int`` when it fits 32
            bits, else ``long``; float: ``double``; str, bytes, Decimal, date, datetime).
        header: at least INSTANT_TIME; Hudi also writes the table's SCHEMA.

    Returns:
        The whole block's bytes.

    Raises:
        WriteError: a bad header, or an ordering value that does not fit its branch.
    """
    full_header = _check_header(header)
    if HeaderKey.INSTANT_TIME not in full_header:
        raise WriteError("a delete block needs an INSTANT_TIME header")
    items = list(records)
    out = bytearray()
    if items:
        _write_long(out, len(items))
        for rec in items:
            _write_optional_string(out, rec.record_key)
            _write_optional_string(out, rec.partition_path)
            _write_ordering_value(out, rec)
    out.append(0)
    content = _I32.pack(_CONTENT_VERSION) + _I32.pack(len(out)) + bytes(out)
    return encode_block(BlockType.DELETE, full_header, content)


def encode_rollback_block(
    instant_time: str, target_instant_time: str, block_identifier: str | None = None
) -> bytes:
    """A rollback command block: the instant ``instant_time`` voids ``target_instant_time``.

    Headers as Hudi writes them: INSTANT_TIME, COMMAND_BLOCK_TYPE ``"0"``,
    TARGET_INSTANT_TIME (then BLOCK_IDENTIFIER when given); no content.

    Raises:
        WriteError: an instant time or identifier that is malformed.
    """
    header = {
        HeaderKey.INSTANT_TIME: instant_time,
        HeaderKey.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND,
        HeaderKey.TARGET_INSTANT_TIME: target_instant_time,
    }
    if block_identifier is not None:
        header[HeaderKey.BLOCK_IDENTIFIER] = block_identifier
    return encode_block(BlockType.COMMAND, _check_header(header), b"")


# --------------------------------------------------------------------------- delete lists


def _write_long(out: bytearray, v: int) -> None:
    _write_varint(out, (v << 1) ^ (v >> 63))


def _write_bytes(out: bytearray, raw: bytes) -> None:
    _write_long(out, len(raw))
    out += raw


def _write_optional_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    out.append(2)
    _write_bytes(out, str(value).encode("utf-8"))


def _infer_ordering_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int" if -(2**31) <= value < 2**31 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, dt.datetime):
        return "timestamp-micros"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, dt.time):
        return "time-micros"
    raise WriteError(f"ordering value {value!r} of type {type(value).__name__} has no branch")


def _write_ordering_value(out: bytearray, rec: DeleteRecord) -> None:
    name = rec.ordering_type or _infer_ordering_type(rec.ordering_value)
    if name not in ORDERING_TYPES:
        raise WriteError(f"ordering type {name!r} is not one of {ORDERING_TYPES}")
    value = rec.ordering_value
    _write_long(out, ORDERING_TYPES.index(name))
    try:
        _write_ordering_branch(out, name, value)
    except (TypeError, ValueError, OverflowError, AttributeError, struct.error) as e:
        raise WriteError(
            f"ordering value {value!r} of key {rec.record_key!r} does not fit {name}: {e}"
        ) from None


def _write_ordering_branch(out: bytearray, name: str, value: Any) -> None:
    if name == "null":
        if value is not None:
            raise ValueError("not None")
    elif name == "boolean":
        if not isinstance(value, bool):
            raise ValueError("not a bool")
        out.append(1 if value else 0)
    elif name in ("int", "long"):
        bits = 32 if name == "int" else 64
        v = int(value)
        if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1) or isinstance(value, bool):
            raise ValueError(f"out of {bits}-bit range")
        _write_long(out, v)
    elif name in ("float", "double"):
        out += struct.pack("<f" if name == "float" else "<d", float(value))
    elif name == "string":
        _write_bytes(out, str(value).encode("utf-8"))
    elif name == "bytes":
        _write_bytes(out, bytes(value))
    elif name == "decimal":
        _write_bytes(out, _ordering_decimal(value))
    else:
        _write_long(out, _ordering_int(name, value))


def _ordering_decimal(value: Any) -> bytes:
    try:
        scaled = Decimal(value).scaleb(ORDERING_DECIMAL_SCALE, _WIDE)
        unscaled = int(scaled)
    except (InvalidOperation, ValueError) as e:
        raise ValueError(str(e)) from None
    if scaled != unscaled:
        raise ValueError(f"needs more than {ORDERING_DECIMAL_SCALE} decimal places")
    if abs(unscaled) >= 10**ORDERING_DECIMAL_PRECISION:
        raise ValueError(f"needs more than {ORDERING_DECIMAL_PRECISION} digits")
    bits = (unscaled if unscaled >= 0 else ~unscaled).bit_length() + 1
    return unscaled.to_bytes((bits + 7) // 8, "big", signed=True)


def _ordering_int(name: str, value: Any) -> int:
    if name == "date":
        if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
            raise ValueError("not a date")
        return (value - _DATE_EPOCH).days
    if name in ("time-millis", "time-micros"):
        if not isinstance(value, dt.time):
            raise ValueError("not a time")
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000
        micros += value.microsecond
        return micros // 1000 if name == "time-millis" else micros
    if not isinstance(value, dt.datetime):
        raise ValueError("not a datetime")
    aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    delta = aware - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros // 1000 if name == "timestamp-millis" else micros


# --------------------------------------------------------------------------- log files


class LogFileWriter:
    """Writes log blocks to new log files of one file slice, rolling over by size.

    The first :meth:`append` creates ``.<fileId>_<baseInstant>.log.<version>_<writeToken>``
    with the next version no file of the file group has yet; an existing file is never
    appended to. Before a block is appended to a file already larger than
    ``max_file_size``, the writer rolls over to the next version (as Hudi does).
    """

    def __init__(
        self,
        storage: Storage,
        partition_path: str,
        file_id: str,
        base_instant: str,
        write_token: str,
        max_file_size: int = DEFAULT_MAX_LOG_FILE_SIZE,
    ) -> None:
        name = LogFileName(file_id, base_instant, 1, write_token)
        if LogFileName.parse(name.format()) != name:
            raise WriteError(
                f"file id {file_id!r}, base instant {base_instant!r} and write token "
                f"{write_token!r} do not make a log file name"
            )
        if max_file_size <= 0:
            raise WriteError(f"max_file_size must be positive, got {max_file_size}")
        self.storage = storage
        self.partition_path = partition_path.strip("/")
        self.file_id = file_id
        self.base_instant = base_instant
        self.write_token = write_token
        self.max_file_size = max_file_size
        self._written: list[tuple[str, int]] = []
        self._stream: Any = None
        self._rel: str | None = None
        self._version = 0
        self._size = 0
        self._closed = False

    def __enter__(self) -> LogFileWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def files(self) -> list[tuple[str, int]]:
        """The files written so far (relative paths and sizes), the open one included."""
        current = [(self._rel, self._size)] if self._rel is not None else []
        return self._written + current

    def _next_version(self) -> int:
        latest = self._version
        for status in self.storage.list_dir(self.partition_path):
            parsed = LogFileName.parse(status.name)
            if (
                parsed is not None and parsed.file_id == self.file_id
                and parsed.base_instant == self.base_instant and parsed.extension == "log"
            ):
                latest = max(latest, parsed.version)
        return latest + 1

    def _open(self) -> None:
        version = self._next_version()
        while True:
            name = LogFileName(self.file_id, self.base_instant, version, self.write_token)
            rel = posixpath.join(self.partition_path, name.format())
            if not self.storage.exists(rel):
                break
            version += 1
        if self.partition_path:
            self.storage.makedirs(self.partition_path)
        self._stream = self.storage.fs.open_output_stream(self.storage.full_path(rel))
        self._rel, self._version, self._size = rel, version, 0

    def _finish_file(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._written.append((str(self._rel), self._size))
        self._stream, self._rel, self._size = None, None, 0

    def append(self, block: bytes) -> tuple[str, int]:
        """Append one encoded block.

        Returns:
            The relative path of the file it went to and its position there.

        Raises:
            WriteError: the writer is closed or ``block`` is not one whole log block
                (nothing is written then).
        """
        if self._closed:
            raise WriteError(f"log file writer of file group {self.file_id} is closed")
        _check_block(block)
        if self._stream is not None and self._size > self.max_file_size:
            self._finish_file()
        if self._stream is None:
            self._open()
        position = self._size
        try:
            self._stream.write(block)
        except BaseException:
            self._finish_file()
            self._closed = True
            raise
        self._size += len(block)
        return str(self._rel), position

    def close(self) -> list[tuple[str, int]]:
        """Close the open file.

        Returns:
            Every file written (relative paths and sizes), in version order; [] when
            nothing was appended (no file is created then).
        """
        self._finish_file()
        self._closed = True
        return list(self._written)


def _check_block(block: bytes) -> None:
    if len(block) < 46 or block[:6] != MAGIC:
        raise WriteError("not a log block: it does not start with the magic #HUDI#")
    (size,) = _I64.unpack_from(block, 6)
    (trailing,) = _I64.unpack_from(block, len(block) - 8)
    if size != len(block) - 14 or trailing != size + 6:
        raise WriteError(f"not one whole log block: sizes {size}/{trailing} for {len(block)} bytes")
