"""Keys of metadata records, as Apache Hudi forms them.

- column stats: ``b64(ColumnIndexID) + b64(PartitionIndexID) + b64(FileIndexID)``;
  bloom filters: ``b64(PartitionIndexID) + b64(FileIndexID)``; partition stats:
  ``b64(ColumnIndexID) + b64(PartitionIndexID)``. Column and partition ids are XXHash64 of
  the UTF-8 name with Hudi's seed, 8 bytes big-endian; file ids are the MD5 of the file
  name; ``b64`` is ``java.util.Base64`` (standard alphabet, with padding).
- record index: the record key; its value names the file group as the UUID's high and low
  64 bits plus the ``-<n>`` file index (``fileIdEncoding`` 0), or the raw file id (1).
- secondary index: ``escape(value) + "$" + escape(record key)``, where ``\\``, ``$`` and
  NUL are escaped with ``\\`` and a null value is a single NUL.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import xxhash

from hudisql.errors import MetadataTableError
from hudisql.metadata.partitions import NON_PARTITIONED_NAME

__all__ = [
    "FILE_ID_ENCODING_RAW",
    "FILE_ID_ENCODING_UUID",
    "RecordLocation",
    "bloom_filter_key",
    "column_index_id",
    "column_stats_key",
    "file_index_id",
    "partition_identifier",
    "partition_index_id",
    "partition_stats_key",
    "secondary_index_key",
    "secondary_key_prefix",
    "split_secondary_index_key",
]

#: Hudi's ``HashID`` seed: the Java int ``0xdabadaba`` widened to a long (sign-extended),
#: as the ``long seed`` parameter of lz4-java's XXHash64 receives it.
XXHASH_SEED = 0xFFFFFFFFDABADABA

FILE_ID_ENCODING_UUID = 0
FILE_ID_ENCODING_RAW = 1

_UUID_FILE_ID = re.compile(
    r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(\d+)$"
)
_NUL = "\0"
_ESCAPE = "\\"
_SEPARATOR = "$"


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def partition_identifier(partition_path: str) -> str:
    """The name metadata records use for a data partition (``.`` when non-partitioned)."""
    return partition_path or NON_PARTITIONED_NAME


def partition_index_id(partition_path: str) -> str:
    """Base64 of the 8-byte XXHash64 of the partition's identifier (Hudi's PartitionIndexID)."""
    digest = xxhash.xxh64(partition_identifier(partition_path).encode("utf-8"), seed=XXHASH_SEED)
    return _b64(digest.digest())


def column_index_id(column: str) -> str:
    """Base64 of the 8-byte XXHash64 of the column name (Hudi's ColumnIndexID)."""
    return _b64(xxhash.xxh64(column.encode("utf-8"), seed=XXHASH_SEED).digest())


def file_index_id(file_name: str) -> str:
    """Base64 of the MD5 of the data file's name (Hudi's FileIndexID)."""
    return _b64(hashlib.md5(file_name.encode("utf-8"), usedforsecurity=False).digest())


def column_stats_key(column: str, partition_path: str, file_name: str) -> str:
    """The column stats key of one column of one data file."""
    return column_index_id(column) + partition_index_id(partition_path) + file_index_id(file_name)


def bloom_filter_key(partition_path: str, file_name: str) -> str:
    """The bloom filter key of one data file."""
    return partition_index_id(partition_path) + file_index_id(file_name)


def partition_stats_key(column: str, partition_path: str) -> str:
    """The partition stats key of one column of one data partition."""
    return column_index_id(column) + partition_index_id(partition_path)


def _escape(text: str | None) -> str:
    if text is None:
        return _NUL
    if _ESCAPE not in text and _SEPARATOR not in text and _NUL not in text:
        return text  # the common case: nothing to escape
    out = []
    for c in text:
        if c in (_ESCAPE, _SEPARATOR, _NUL):
            out.append(_ESCAPE)
        out.append(c)
    return "".join(out)


def _unescape(text: str) -> str | None:
    if text == _NUL:
        return None
    out = []
    escaped = False
    for c in text:
        if escaped:
            out.append(c)
            escaped = False
        elif c == _ESCAPE:
            escaped = True
        else:
            out.append(c)
    return "".join(out)


def secondary_index_key(value: str | None, record_key: str) -> str:
    """``escape(value)$escape(record_key)``: the key of one secondary index entry."""
    return _escape(value) + _SEPARATOR + _escape(record_key)


def secondary_key_prefix(value: str | None) -> str:
    """``escape(value)$``: the prefix all entries of one secondary value share."""
    return _escape(value) + _SEPARATOR


def split_secondary_index_key(key: str) -> tuple[str | None, str]:
    """(value, record key) of a secondary index key.

    Raises:
        MetadataTableError: the key has no unescaped ``$``.
    """
    escaped = False
    for i, c in enumerate(key):
        if c == _ESCAPE and not escaped:
            escaped = True
        elif c == _SEPARATOR and not escaped:
            record_key = _unescape(key[i + 1:])
            if record_key is None:
                raise MetadataTableError(f"secondary index key {key!r} has a null record key")
            return _unescape(key[:i]), record_key
        else:
            escaped = False
    raise MetadataTableError(f"secondary index key {key!r} has no unescaped '$' separator")


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


@functools.lru_cache(maxsize=256)
def instant_epoch_millis(instant_time: str) -> int:
    """The epoch milliseconds of a ``yyyyMMddHHmmssSSS`` instant time (UTC), as Hudi stores it.

    Raises:
        MetadataTableError: not an instant time.
    """
    try:
        moment = datetime.strptime(instant_time[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        millis = int(instant_time[14:17] or 0)
    except ValueError as exc:
        raise MetadataTableError(f"{instant_time!r} is not an instant time") from exc
    return int(moment.timestamp()) * 1000 + millis


def millis_instant_time(epoch_millis: int) -> str:
    """The ``yyyyMMddHHmmssSSS`` instant time (UTC) of epoch milliseconds."""
    moment = datetime.fromtimestamp(epoch_millis / 1000, UTC)
    return moment.strftime("%Y%m%d%H%M%S") + f"{epoch_millis % 1000:03d}"


@dataclass(frozen=True)
class RecordLocation:
    """Where a record lives: the record index's value for one record key."""

    partition_path: str
    file_id: str
    instant_time: str

    def to_avro(self) -> dict[str, object]:
        """The ``HoodieRecordIndexInfo`` record (UUID file ids as bits, others raw)."""
        return dict(_location_avro(self))

    @classmethod
    def from_avro(cls, info: dict[str, object]) -> RecordLocation:
        """The location a ``HoodieRecordIndexInfo`` record names.

        Raises:
            MetadataTableError: an unknown file id encoding or missing fields.
        """
        encoding = info.get("fileIdEncoding", FILE_ID_ENCODING_UUID)
        millis = info.get("instantTime")
        instant = millis_instant_time(int(millis)) if isinstance(millis, int) else ""
        partition = str(info.get("partitionName") or "")
        if encoding == FILE_ID_ENCODING_RAW:
            return cls(partition, str(info.get("fileId")), instant)
        if encoding != FILE_ID_ENCODING_UUID:
            raise MetadataTableError(f"record index entry has unknown fileIdEncoding {encoding}")
        high, low, index = info.get("fileIdHighBits"), info.get("fileIdLowBits"), info.get(
            "fileIndex")
        if not isinstance(high, int) or not isinstance(low, int) or not isinstance(index, int):
            raise MetadataTableError("record index entry lacks its file id bits")
        bits = ((high & ((1 << 64) - 1)) << 64) | (low & ((1 << 64) - 1))
        return cls(partition, f"{uuid.UUID(int=bits)}-{index}", instant)


@functools.lru_cache(maxsize=4096)
def _location_avro(location: RecordLocation) -> dict[str, object]:
    """:meth:`RecordLocation.to_avro`, computed once per location (a commit writes many
    keys to one file group; callers get a copy)."""
    info: dict[str, object] = {
        "partitionName": location.partition_path,
        "fileIdHighBits": None,
        "fileIdLowBits": None,
        "fileIndex": None,
        "fileId": None,
        "instantTime": instant_epoch_millis(location.instant_time),
        "fileIdEncoding": FILE_ID_ENCODING_UUID,
    }
    m = _UUID_FILE_ID.match(location.file_id)
    if m is not None and int(m.group(2)) < 1 << 31:
        bits = uuid.UUID(m.group(1)).int
        info["fileIdHighBits"] = _signed64(bits >> 64)
        info["fileIdLowBits"] = _signed64(bits & ((1 << 64) - 1))
        info["fileIndex"] = int(m.group(2))
    else:
        info["fileId"] = location.file_id
        info["fileIdEncoding"] = FILE_ID_ENCODING_RAW
    return info
