"""Avro binary encoding of ``HoodieMetadataRecord``, written for its one fixed schema.

Also the content of the metadata table's Avro data blocks (:func:`data_block_content`,
:func:`block_records`).

A generic encoder (fastavro) spends most of its time choosing union branches for each of
the record's five payloads; here the branch is known from which payload is set, so a
record costs a few microseconds. Values take the same Python forms as fastavro's (wrapped
statistics as ``(full wrapper name, {"value": v})``, decimals as ``Decimal``), and the
bytes are the same as fastavro writes (the tests hold both to it).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.schema import WRAPPERS
from hudisql.table.format.log.format import LogBlockInfo

__all__ = ["block_records", "data_block_content", "decode_record", "encode_record"]

_NS = "org.apache.hudi.avro.model."
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")
_DECIMAL_SCALE = 15
_WRAPPER_INDEX = {_NS + name: i for i, (name, _) in enumerate(WRAPPERS)}
_WRAPPER_NAMES = [_NS + name for name, _ in WRAPPERS]


# ------------------------------------------------------------------------------ encoding


def _long(out: bytearray, value: int) -> None:
    n = (value << 1) ^ (value >> 63)
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _bytes(out: bytearray, raw: bytes) -> None:
    _long(out, len(raw))
    out += raw


def _string(out: bytearray, text: str) -> None:
    _bytes(out, text.encode("utf-8"))


def _opt(out: bytearray, value: Any, write: Callable[[bytearray, Any], None]) -> None:
    if value is None:
        out.append(0)
    else:
        out.append(2)
        write(out, value)


def _bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)


def _decimal(out: bytearray, value: Any) -> None:
    unscaled = int(Decimal(value).scaleb(_DECIMAL_SCALE).to_integral_value())
    _bytes(out, unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True))


_VALUE_WRITERS: list[Callable[[bytearray, Any], None]] = [
    _bool, _long, _long, lambda o, v: o.extend(_FLOAT.pack(v)),
    lambda o, v: o.extend(_DOUBLE.pack(v)), _bytes, _string, _long, _decimal, _long, _long,
]


def _wrapped(out: bytearray, value: Any) -> None:
    if value is None:
        out.append(0)
        return
    name, inner = value
    index = _WRAPPER_INDEX.get(name)
    if index is None:
        raise MetadataTableError(f"{name} is not a column statistics wrapper")
    _long(out, index + 1)
    _VALUE_WRITERS[index](out, inner["value"])


def _files(out: bytearray, entries: dict[str, dict[str, Any]]) -> None:
    if entries:
        _long(out, len(entries))
        for name, info in entries.items():
            _string(out, name)
            _long(out, info["size"])
            _bool(out, info["isDeleted"])
    out.append(0)


def _bloom(out: bytearray, b: dict[str, Any]) -> None:
    _string(out, b["type"])
    _string(out, b["timestamp"])
    _bytes(out, b["bloomFilter"])
    _bool(out, b["isDeleted"])


def _stats(out: bytearray, s: dict[str, Any]) -> None:
    _opt(out, s["fileName"], _string)
    _opt(out, s["columnName"], _string)
    _wrapped(out, s["minValue"])
    _wrapped(out, s["maxValue"])
    for name in ("valueCount", "nullCount", "totalSize", "totalUncompressedSize"):
        _opt(out, s[name], _long)
    _bool(out, s["isDeleted"])
    _bool(out, s.get("isTightBound", False))


def _location(out: bytearray, r: dict[str, Any]) -> None:
    _opt(out, r["partitionName"], _string)
    _opt(out, r["fileIdHighBits"], _long)
    _opt(out, r["fileIdLowBits"], _long)
    _opt(out, r["fileIndex"], _long)
    _opt(out, r["fileId"], _string)
    _opt(out, r["instantTime"], _long)
    _long(out, r.get("fileIdEncoding", 0))


def _secondary(out: bytearray, s: dict[str, Any]) -> None:
    _bool(out, s["isDeleted"])


_PAYLOADS: list[tuple[str, Callable[[bytearray, Any], None]]] = [
    ("filesystemMetadata", _files), ("BloomFilterMetadata", _bloom),
    ("ColumnStatsMetadata", _stats), ("recordIndexMetadata", _location),
    ("SecondaryIndexMetadata", _secondary),
]


def encode_record(record: dict[str, Any]) -> bytes:
    """The Avro binary form of one metadata record."""
    out = bytearray()
    _string(out, record["key"])
    out += _payload(record)
    return bytes(out)


def _payload(record: dict[str, Any]) -> bytes:
    """Everything after the record's key: its type and the five optional payloads."""
    out = bytearray()
    _long(out, record["type"])
    for name, write in _PAYLOADS:
        _opt(out, record.get(name), write)
    return bytes(out)


# ------------------------------------------------------------------------------ decoding


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def long(self) -> int:
        data, pos = self.data, self.pos
        shift = n = 0
        while True:
            byte = data[pos]
            pos += 1
            n |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
        self.pos = pos
        return (n >> 1) ^ -(n & 1)

    def raw(self) -> bytes:
        n = self.long()
        start = self.pos
        self.pos += n
        return self.data[start:self.pos]

    def string(self) -> str:
        return self.raw().decode("utf-8")

    def boolean(self) -> bool:
        self.pos += 1
        return self.data[self.pos - 1] != 0

    def fixed(self, s: struct.Struct) -> float:
        (value,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return float(value)

    def opt(self, read: Callable[[], Any]) -> Any:
        return read() if self.long() else None


def _read_value(r: _Reader, index: int) -> Any:
    if index == 0:
        return r.boolean()
    if index in (1, 2, 7, 9, 10):
        return r.long()
    if index == 3:
        return r.fixed(_FLOAT)
    if index == 4:
        return r.fixed(_DOUBLE)
    if index == 5:
        return r.raw()
    if index == 6:
        return r.string()
    return Decimal(int.from_bytes(r.raw(), "big", signed=True)).scaleb(-_DECIMAL_SCALE)


def _read_wrapped(r: _Reader) -> Any:
    branch = r.long()
    if branch == 0:
        return None
    if not 1 <= branch <= len(_WRAPPER_NAMES):
        raise MetadataTableError(f"column statistics union branch {branch} is unknown")
    return (_WRAPPER_NAMES[branch - 1], {"value": _read_value(r, branch - 1)})


def _read_files(r: _Reader) -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    while True:
        count = r.long()
        if count == 0:
            return entries
        if count < 0:
            count = -count
            r.long()  # the block's byte size
        for _ in range(count):
            name = r.string()
            entries[name] = {"size": r.long(), "isDeleted": r.boolean()}


def _read_bloom(r: _Reader) -> dict[str, Any]:
    return {"type": r.string(), "timestamp": r.string(), "bloomFilter": r.raw(),
            "isDeleted": r.boolean()}


def _read_stats(r: _Reader) -> dict[str, Any]:
    return {
        "fileName": r.opt(r.string), "columnName": r.opt(r.string),
        "minValue": _read_wrapped(r), "maxValue": _read_wrapped(r),
        "valueCount": r.opt(r.long), "nullCount": r.opt(r.long),
        "totalSize": r.opt(r.long), "totalUncompressedSize": r.opt(r.long),
        "isDeleted": r.boolean(), "isTightBound": r.boolean(),
    }


def _read_location(r: _Reader) -> dict[str, Any]:
    return {
        "partitionName": r.opt(r.string), "fileIdHighBits": r.opt(r.long),
        "fileIdLowBits": r.opt(r.long), "fileIndex": r.opt(r.long), "fileId": r.opt(r.string),
        "instantTime": r.opt(r.long), "fileIdEncoding": r.long(),
    }


def _read_secondary(r: _Reader) -> dict[str, Any]:
    return {"isDeleted": r.boolean()}


_PAYLOAD_READERS: list[tuple[str, Callable[[_Reader], Any]]] = [
    ("filesystemMetadata", _read_files), ("BloomFilterMetadata", _read_bloom),
    ("ColumnStatsMetadata", _read_stats), ("recordIndexMetadata", _read_location),
    ("SecondaryIndexMetadata", _read_secondary),
]


def decode_record(data: bytes) -> dict[str, Any]:
    """One metadata record from its Avro binary form (written in this schema).

    Raises:
        MetadataTableError: the bytes are not such a record.
    """
    r = _Reader(data)
    try:
        record: dict[str, Any] = {"key": r.string(), "type": r.long()}
        for name, read in _PAYLOAD_READERS:
            record[name] = read(r) if r.long() else None
    except (IndexError, UnicodeDecodeError, struct.error) as exc:
        raise MetadataTableError(f"a metadata record does not decode: {exc}") from None
    if r.pos != len(data):
        raise MetadataTableError(f"{len(data) - r.pos} bytes follow a metadata record")
    return record


# ---------------------------------------------------------------------------- data blocks

_CONTENT_VERSION = 3
_I32 = struct.Struct(">i")


def data_block_content(
    records: Sequence[dict[str, Any]],
    shared: Sequence[tuple[Sequence[str] | pa.Array, dict[str, Any]]] = (),
) -> bytes:
    """An Avro data block's content: version, count, then length-prefixed records.

    ``shared``: (keys, template) pairs, records that are ``template`` with each key; their
    payload (all but the key) is encoded once, and the records are assembled column-wise
    (Arrow) from the keys.
    """
    count = len(records) + sum(len(keys) for keys, _ in shared)
    out = bytearray(_I32.pack(_CONTENT_VERSION) + _I32.pack(count))
    for record in records:
        raw = encode_record(record)
        out += _I32.pack(len(raw))
        out += raw
    for keys, template in shared:
        out += _shared_records(keys, _payload(template))
    return bytes(out)


def _shared_records(keys: Sequence[str] | pa.Array, payload: bytes) -> bytes:
    """Length-prefixed records ``key + payload`` of each key, in order: each record is its
    length (int32), the key's Avro length prefix, the key and the payload. The first two
    depend on the key's byte length only: made once per length, then joined to the keys."""
    if not len(keys):
        return b""
    array = keys if isinstance(keys, pa.Array) else pa.array(list(keys), pa.string())
    raw = array.cast(pa.binary())
    lengths = np.asarray(pc.binary_length(raw).to_numpy(zero_copy_only=False))
    distinct = np.unique(lengths)
    heads = []
    for length in distinct.tolist():
        prefix = bytearray()
        _long(prefix, length)
        heads.append(_I32.pack(len(prefix) + length + len(payload)) + bytes(prefix))
    head = pa.array(heads, pa.binary()).take(pa.array(np.searchsorted(distinct, lengths)))
    joined = pc.binary_join_element_wise(head, raw, pa.scalar(payload, pa.binary()),
                                         pa.scalar(b"", pa.binary()))
    # The records lie one after the other in the joined array's data buffer.
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)
    start, end = int(offsets[joined.offset]), int(offsets[joined.offset + len(joined)])
    data = joined.buffers()[2]
    return data.to_pybytes()[start:end] if data is not None else b""


def _record_key(raw: bytes) -> str:
    """The ``key`` of an Avro-encoded metadata record (its first field) without decoding it."""
    shift = value = pos = 0
    while True:
        byte = raw[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            break
        shift += 7
    length = (value >> 1) ^ -(value & 1)
    return raw[pos:pos + length].decode("utf-8")


def block_records(
    data: bytes, block: LogBlockInfo, keep: Callable[[str], bool] | None = None
) -> list[dict[str, Any]]:
    """The records of an Avro data block (only those whose key ``keep`` accepts)."""
    content = data[block.content_position:block.content_position + block.content_length]
    version, count = struct.unpack_from(">ii", content, 0)
    if version != _CONTENT_VERSION:
        raise MetadataTableError(
            f"metadata data block at byte {block.position} of {block.log_file} has version "
            f"{version}; hudisql reads version {_CONTENT_VERSION}"
        )
    schema = S.parsed_schema()
    # Blocks hudisql wrote decode with the schema's own decoder; others through fastavro.
    writer = None
    if block.schema and block.schema != S.schema_text():
        writer = fastavro.parse_schema(json.loads(block.schema))
    out: list[dict[str, Any]] = []
    pos = 8
    for _ in range(count):
        (length,) = _I32.unpack_from(content, pos)
        pos += 4
        raw = content[pos:pos + length]
        pos += length
        if keep is not None and not keep(_record_key(raw)):
            continue
        if writer is None:
            out.append(decode_record(raw))
            continue
        record = fastavro.schemaless_reader(
            io.BytesIO(raw), writer, schema,
            return_record_name=True, return_record_name_override=True,
        )
        out.append(record)  # type: ignore[arg-type]  # a record schema gives a dict
    return out
