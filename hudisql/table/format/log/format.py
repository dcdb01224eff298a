"""Hudi's log block framing: magic, block types, header keys, and what a scan reports.

Binary layout of one block (integers big-endian; see docs/FORMAT.md)::

    magic "#HUDI#" | int64 blockSize | int32 formatVersion | int32 blockType
    | header (int32 count, count x {int32 key, int32 length, UTF-8}) | int64 contentLength
    | content | footer (as header) | int64 totalLength (= blockSize + 6)

``blockSize`` counts every byte after itself, the trailing ``totalLength`` included.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "ORDERING_TYPES",
    "ROLLBACK_COMMAND",
    "BlockType",
    "DeleteRecord",
    "HeaderKey",
    "LogBlockInfo",
    "block_identifier",
    "encode_block",
    "encode_metadata",
]

MAGIC = b"#HUDI#"
#: The log format version Hudi 0.x and 1.x write in every block.
FORMAT_VERSION = 1
#: ``COMMAND_BLOCK_TYPE`` value of a rollback command block.
ROLLBACK_COMMAND = "0"

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class BlockType(IntEnum):
    """The ``blockType`` field of a log block."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    """Keys of a log block's header map (Hudi's ``HeaderMetadataType`` ordinals)."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8
    #: hudisql's own key, on expression blocks only (value: the expressions JSON). No Hudi
    #: reader knows it, so they refuse the block instead of taking operands for values
    #: (hudi-rs: "Invalid metadata key"); far above Hudi's keys so none will clash.
    HUDISQL_EXPRESSIONS = 1001


#: Block types whose content is records (decoded by ``decode_data_block``).
DATA_BLOCK_TYPES = frozenset(
    {BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA, BlockType.CDC_DATA}
)

#: The branches of a delete record's ``orderingVal`` union, in the order of Hudi's schema
#: (0.14/0.15): null, then the wrapper records ``BooleanWrapper``, ``IntWrapper``,
#: ``LongWrapper``, ``FloatWrapper``, ``DoubleWrapper``, ``BytesWrapper``, ``StringWrapper``,
#: ``DateWrapper``, ``DecimalWrapper``, ``TimeMicrosWrapper``, ``TimestampMicrosWrapper``.
#: Each wrapper has one field ``value`` and so encodes exactly as the bare type; ``"decimal"``
#: is bytes with precision 30, scale 15. Spark's "no ordering value" is IntWrapper(0): the
#: bytes ``04 00`` in the fixtures. (``tests/data/hudi/HoodieDeleteRecordList.avsc``
#: lists bare types without the boolean branch; the fixture bytes and Hudi's code disagree
#: with it.)
ORDERING_TYPES: tuple[str, ...] = (
    "null", "boolean", "int", "long", "float", "double", "bytes", "string", "date",
    "decimal", "time-micros", "timestamp-micros",
)
#: Scale of the decimal branch of ``orderingVal``.
ORDERING_DECIMAL_SCALE = 15
#: Precision of the decimal branch of ``orderingVal``.
ORDERING_DECIMAL_PRECISION = 30


@dataclass(frozen=True)
class LogBlockInfo:
    """What a header-only scan learns about one block (or one corrupt stretch) of a log file.

    ``position`` and ``length`` cover the whole block, magic to trailing length included;
    ``content_position`` is the absolute offset of the content in the file. A corrupt
    stretch has ``block_type`` CORRUPT, its ``corrupt_reason``, and empty header and footer.
    """

    log_file: str
    position: int
    length: int
    block_type: BlockType
    header: dict[HeaderKey, str]
    footer: dict[int, str]
    content_position: int
    content_length: int
    corrupt_reason: str | None = None
    format_version: int = FORMAT_VERSION

    @property
    def is_corrupt(self) -> bool:
        """True for a corrupt stretch: readers skip it and never merge it."""
        return self.block_type == BlockType.CORRUPT

    @property
    def instant_time(self) -> str | None:
        """The ``INSTANT_TIME`` header: the instant that wrote the block."""
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        """The ``TARGET_INSTANT_TIME`` header (the instant a rollback command voids)."""
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        """The ``SCHEMA`` header: the Avro writer schema of a data or delete block."""
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_rollback_command(self) -> bool:
        """True for a command block that rolls back ``target_instant_time``."""
        return (
            self.block_type == BlockType.COMMAND
            and self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND
        )

    @property
    def is_data(self) -> bool:
        """True for a block of records (Avro, parquet, HFile or CDC data)."""
        return self.block_type in DATA_BLOCK_TYPES

    @property
    def block_identifier(self) -> tuple[int, int] | None:
        """``(attempt, sequence)`` from ``BLOCK_IDENTIFIER``; None when absent or malformed.

        Old tables have no identifier: that is "unknown", never an error.
        """
        raw = self.header.get(HeaderKey.BLOCK_IDENTIFIER)
        if raw is None:
            return None
        attempt, sep, seq = raw.partition(",")
        try:
            return (int(attempt), int(seq)) if sep else None
        except ValueError:
            return None

    @property
    def compacted_block_times(self) -> list[str]:
        """The instants of the blocks a log-compacted block replaces ([] for other blocks)."""
        raw = self.header.get(HeaderKey.COMPACTED_BLOCK_TIMES, "")
        return [t.strip() for t in raw.split(",") if t.strip()]

    @property
    def end(self) -> int:
        """The position just after the block."""
        return self.position + self.length


@dataclass(frozen=True)
class DeleteRecord:
    """One key of a delete block.

    ``ordering_type`` names the branch of the ``orderingVal`` union the value is (or is to
    be) written as, one of :data:`ORDERING_TYPES`; None lets the encoder choose from the
    Python type. It takes no part in equality: ``0`` as int and as long order the same.
    """

    record_key: str | None
    partition_path: str | None
    ordering_value: Any = 0
    ordering_type: str | None = field(default=None, compare=False)


def block_identifier(attempt: int, sequence: int) -> str:
    """The ``BLOCK_IDENTIFIER`` header value: ``"<attempt>,<sequence>"``.

    Raises:
        ValueError: a negative attempt or sequence number.
    """
    if attempt < 0 or sequence < 0:
        raise ValueError(f"block identifier parts must be non-negative: {attempt}, {sequence}")
    return f"{int(attempt)},{int(sequence)}"


def encode_metadata(entries: Mapping[HeaderKey, str] | Mapping[int, str]) -> bytes:
    """A header or footer map in its binary form (entries in the mapping's order)."""
    parts = [_I32.pack(len(entries))]
    for key, value in entries.items():
        raw = value.encode("utf-8")
        parts.append(_I32.pack(int(key)) + _I32.pack(len(raw)) + raw)
    return b"".join(parts)


def encode_block(
    block_type: BlockType,
    header: Mapping[HeaderKey, str],
    content: bytes,
    footer: Mapping[int, str] | None = None,
) -> bytes:
    """One whole log block: magic, sizes, header, content, footer and trailing length.

    The header is written in the mapping's order (Hudi's order varies by writer; readers
    do not depend on it).
    """
    body = b"".join(
        (
            _I32.pack(FORMAT_VERSION),
            _I32.pack(int(block_type)),
            encode_metadata(header),
            _I64.pack(len(content)),
            content,
            encode_metadata(footer or {}),
        )
    )
    block_size = len(body) + 8
    return MAGIC + _I64.pack(block_size) + body + _I64.pack(block_size + len(MAGIC))
