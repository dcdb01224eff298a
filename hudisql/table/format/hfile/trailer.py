"""The HFile trailer (the file's last 4096 bytes) and the file info block's map.

Trailer: the magic ``TRABLK"$``, a length-delimited protobuf ``TrailerProto`` (HBase 2's
``HFile.proto``), zeros, and the version in the last four bytes (minor version byte, then
the major version, 3, in three bytes). File info: ``PBUF`` then a length-delimited
``InfoProto`` (``repeated BytesBytesPair map_entry = 1``). Both messages are small and
encoded here by hand: varint fields and length-delimited bytes only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from hudisql.errors import CorruptTableError, UnsupportedFormatError
from hudisql.table.format.hfile.blocks import Codec, read_varint, write_varint

__all__ = ["TRAILER_SIZE", "Trailer", "decode_file_info", "encode_file_info"]

TRAILER_SIZE = 4096
_MAGIC = b'TRABLK"$'
_PBUF = b"PBUF"
MAJOR_VERSION = 3
#: The comparator Hudi's native writer names (readers ignore it).
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"

_VARINT, _BYTES = 0, 2


@dataclass
class Trailer:
    """The fields of ``TrailerProto`` hudisql reads and writes (tag numbers as HBase's)."""

    file_info_offset: int = 0                  # 1
    load_on_open_data_offset: int = 0          # 2
    uncompressed_data_index_size: int = 0      # 3
    total_uncompressed_bytes: int = 0          # 4
    data_index_count: int = 0                  # 5
    meta_index_count: int = 0                  # 6
    entry_count: int = 0                       # 7
    num_data_index_levels: int = 1             # 8
    first_data_block_offset: int = 0           # 9
    last_data_block_offset: int = 0            # 10
    comparator_class_name: str = COMPARATOR    # 11
    compression_codec: int = Codec.NONE        # 12

    def encode(self) -> bytes:
        """The 4096 trailer bytes."""
        message = bytearray()
        for tag, f in enumerate(fields(self), start=1):
            value = getattr(self, f.name)
            if isinstance(value, str):
                raw = value.encode("utf-8")
                message += write_varint(tag << 3 | _BYTES) + write_varint(len(raw)) + raw
            else:
                message += write_varint(tag << 3 | _VARINT) + write_varint(int(value))
        body = _MAGIC + write_varint(len(message)) + bytes(message)
        if len(body) > TRAILER_SIZE - 4:
            raise UnsupportedFormatError("an HFile trailer does not fit in 4096 bytes")
        version = bytes([0]) + MAJOR_VERSION.to_bytes(3, "big")
        return body + bytes(TRAILER_SIZE - 4 - len(body)) + version

    @classmethod
    def decode(cls, data: bytes | memoryview, where: str) -> Trailer:
        """The trailer at the end of ``data`` (a whole file).

        Raises:
            CorruptTableError: no trailer (too short, wrong magic, bad protobuf).
            UnsupportedFormatError: an HFile major version other than 3.
        """
        if len(data) < TRAILER_SIZE:
            raise CorruptTableError(
                f"{where} is {len(data)} bytes, shorter than an HFile trailer (4096)")
        tail = bytes(data[len(data) - TRAILER_SIZE:])
        if tail[:8] != _MAGIC:
            raise CorruptTableError(f"{where} has no HFile trailer magic in its last 4096 bytes")
        major = int.from_bytes(tail[-3:], "big")
        if major != MAJOR_VERSION:
            raise UnsupportedFormatError(
                f"{where} is HFile version {major}; hudisql reads version 3 (Hudi 0.x, 1.x)")
        try:
            length, pos = read_varint(tail, 8)
            parsed = _parse_message(tail[pos:pos + length])
        except (IndexError, ValueError) as exc:
            raise CorruptTableError(f"{where}: the HFile trailer does not decode ({exc})") \
                from None
        trailer = cls()
        for tag, f in enumerate(fields(cls), start=1):
            for value in parsed.get(tag, ()):
                if isinstance(getattr(trailer, f.name), str):
                    setattr(trailer, f.name, bytes(value).decode("utf-8", "replace"))
                elif isinstance(value, int):
                    setattr(trailer, f.name, value)
        return trailer


def _parse_message(data: bytes) -> dict[int, list[int | bytes]]:
    """The fields of a protobuf message: tag -> values (varints and length-delimited)."""
    out: dict[int, list[int | bytes]] = {}
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        tag, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = read_varint(data, pos)
        elif wire == _BYTES:
            length, pos = read_varint(data, pos)
            if pos + length > len(data):
                raise ValueError("a field runs past the message")
            value = data[pos:pos + length]
            pos += length
        elif wire == 1:
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.setdefault(tag, []).append(value)
    return out


def encode_file_info(entries: Mapping[str, bytes]) -> bytes:
    """The file info block's payload: ``PBUF`` and a delimited ``InfoProto``, keys sorted."""
    message = bytearray()
    for name in sorted(entries):
        first = name.encode("utf-8")
        second = entries[name]
        pair = (write_varint(1 << 3 | _BYTES) + write_varint(len(first)) + first
                + write_varint(2 << 3 | _BYTES) + write_varint(len(second)) + second)
        message += write_varint(1 << 3 | _BYTES) + write_varint(len(pair)) + pair
    return _PBUF + write_varint(len(message)) + bytes(message)


def decode_file_info(raw: bytes, where: str) -> dict[str, bytes]:
    """The file info map from the file info block's payload.

    Raises:
        CorruptTableError: no ``PBUF`` magic or a malformed message.
    """
    if raw[:4] != _PBUF:
        raise CorruptTableError(f"{where}: the file info block has no PBUF magic")
    try:
        length, pos = read_varint(raw, 4)
        if pos + length > len(raw):
            raise ValueError("the message runs past the block")
        info: dict[str, bytes] = {}
        for entry in _parse_message(raw[pos:pos + length]).get(1, ()):
            pair = _parse_message(bytes(entry))  # type: ignore[arg-type]
            first, second = pair.get(1, [b""])[0], pair.get(2, [b""])[0]
            info[bytes(first).decode("utf-8")] = bytes(second)  # type: ignore[arg-type]
    except (IndexError, ValueError, TypeError) as exc:
        raise CorruptTableError(f"{where}: the file info does not decode ({exc})") from None
    return info
