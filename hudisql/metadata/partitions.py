"""The metadata table's partitions: their names, record types, file groups and key routing.

Each index of the data table is one partition of the metadata table (``files``,
``column_stats``, ``bloom_filters``, ``record_index``, ``partition_stats``,
``secondary_index_<name>``, ``expr_index_<name>``), split into a fixed number of file groups
named as Apache Hudi names them (``files-0000-0``, ``col-stats-0001-0``,
``secondary-index-idx-rider-0000-0``). A record goes to the file group Hudi's
``mapRecordKeyToFileGroupIndex`` picks: Java ``String.hashCode`` of the key, modulo the
group count (:func:`file_group_index`, vectorised in :func:`file_group_indexes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import MetadataTableError
from hudisql.metadata.strings import all_ascii, value_bytes, value_offsets

__all__ = [
    "ALL_PARTITIONS_KEY",
    "EXPR_INDEX_PREFIX",
    "NON_PARTITIONED_NAME",
    "SECONDARY_INDEX_PREFIX",
    "MetadataPartitionType",
    "PartitionSpec",
    "estimate_file_group_count",
    "file_group_id",
    "file_group_index",
    "file_group_indexes",
    "java_string_hash",
    "partition_spec",
    "secondary_routing_keys",
]

#: The key of the files partition's record listing every data partition.
ALL_PARTITIONS_KEY = "__all_partitions__"
#: How Hudi names the partition of a non-partitioned table in metadata records.
NON_PARTITIONED_NAME = "."
SECONDARY_INDEX_PREFIX = "secondary_index_"
EXPR_INDEX_PREFIX = "expr_index_"


class MetadataPartitionType(Enum):
    """Hudi's ``MetadataPartitionType``: partition name, file id prefix, record type code.

    The record type is the ``type`` field of every ``HoodieMetadataRecord`` in the
    partition (the files partition also holds the type-1 ``__all_partitions__`` record).
    """

    FILES = ("files", "files-", 2)
    COLUMN_STATS = ("column_stats", "col-stats-", 3)
    BLOOM_FILTERS = ("bloom_filters", "bloom-filters-", 4)
    RECORD_INDEX = ("record_index", "record-index-", 5)
    PARTITION_STATS = ("partition_stats", "partition-stats-", 6)
    SECONDARY_INDEX = ("secondary_index_", "secondary-index-", 7)
    EXPRESSION_INDEX = ("expr_index_", "expr-index-", -1)

    def __init__(self, partition_path: str, file_id_prefix: str, record_type: int) -> None:
        self.partition_path = partition_path
        self.file_id_prefix = file_id_prefix
        self.record_type = record_type

    @property
    def is_named(self) -> bool:
        """Whether partitions of this type carry an index name (secondary, expression)."""
        return self in (MetadataPartitionType.SECONDARY_INDEX,
                        MetadataPartitionType.EXPRESSION_INDEX)


#: The record type of the ``__all_partitions__`` record in the files partition.
ALL_PARTITIONS_RECORD_TYPE = 1

#: Hudi's default file group count per partition type (``hoodie.metadata.*`` configs);
#: record and secondary indexes are sized by :func:`estimate_file_group_count`.
DEFAULT_FILE_GROUP_COUNT = {
    MetadataPartitionType.FILES: 1,
    MetadataPartitionType.COLUMN_STATS: 2,
    MetadataPartitionType.BLOOM_FILTERS: 4,
    MetadataPartitionType.PARTITION_STATS: 1,
    MetadataPartitionType.EXPRESSION_INDEX: 2,
}


@dataclass(frozen=True)
class PartitionSpec:
    """One metadata partition: its folder name, type and (for named indexes) index name."""

    name: str
    kind: MetadataPartitionType

    @property
    def file_id_prefix(self) -> str:
        """The prefix of the partition's file group ids (``secondary-index-idx-rider-``)."""
        if self.kind.is_named:
            return self.name.replace("_", "-") + "-"
        return self.kind.file_id_prefix

    def file_group_ids(self, count: int) -> list[str]:
        """The ids of the partition's ``count`` file groups, in index order."""
        return [file_group_id(self, i) for i in range(count)]

    def route(self, keys: pa.Array | pa.ChunkedArray | list[str], count: int) -> np.ndarray:
        """The file group index of each key (see :func:`file_group_indexes`).

        Secondary index keys route by their value part ``escape(value)$`` (Hudi's secondary
        index V2, table version 9), so every entry of one value is in one file group and a
        lookup by value reads one file group.
        """
        if self.kind == MetadataPartitionType.SECONDARY_INDEX:
            return file_group_indexes(secondary_routing_keys(keys), count)
        return file_group_indexes(keys, count)


def partition_spec(name: str) -> PartitionSpec:
    """The metadata partition named ``name`` (``files``, ``secondary_index_idx_rider``, ...).

    Raises:
        MetadataTableError: not a metadata partition name hudisql knows.
    """
    for kind in MetadataPartitionType:
        if kind.is_named:
            if name.startswith(kind.partition_path) and len(name) > len(kind.partition_path):
                return PartitionSpec(name, kind)
        elif name == kind.partition_path:
            return PartitionSpec(name, kind)
    raise MetadataTableError(
        f"{name!r} is not a metadata table partition: use files, column_stats, bloom_filters, "
        f"record_index, partition_stats, {SECONDARY_INDEX_PREFIX}<name> or "
        f"{EXPR_INDEX_PREFIX}<name>"
    )


def file_group_id(spec: PartitionSpec, index: int) -> str:
    """Hudi's file id of file group ``index`` of a partition: ``<prefix><index:04d>-0``."""
    if index < 0:
        raise MetadataTableError(f"file group index {index} of {spec.name} is negative")
    return f"{spec.file_id_prefix}{index:04d}-0"


def estimate_file_group_count(
    record_count: int,
    *,
    average_record_size: int = 48,
    min_count: int = 10,
    max_count: int = 10_000,
    growth_factor: float = 2.0,
    max_file_group_size: int = 1 << 30,
) -> int:
    """Hudi's file group count for a record or secondary index of ``record_count`` keys.

    The expected records (``record_count`` times the growth factor) over the records one
    file group holds (its maximum size over the average record size), clamped to
    ``[min_count, max_count]`` (``hoodie.metadata.record.index.*`` defaults).
    """
    if record_count <= 0:
        return min_count
    expected = math.ceil(float(np.float32(record_count) * np.float32(growth_factor)))
    per_group = max_file_group_size // average_record_size
    estimated = expected // per_group
    if estimated >= max_count:
        return max_count
    if estimated <= min_count:
        return min_count
    return max(1, estimated)


_MASK32 = 0xFFFFFFFF
#: A secondary index key's value part: up to and including its first unescaped ``$``.
_VALUE_PART = r"^(?P<value>(?:[^\\$]|\\.)*\$)"


def secondary_routing_keys(keys: pa.Array | pa.ChunkedArray | list[str]) -> pa.Array:
    """The value parts (``escape(value)$``) secondary index keys are routed by.

    Raises:
        MetadataTableError: a key without an unescaped ``$``.
    """
    array = keys if isinstance(keys, pa.Array | pa.ChunkedArray) else pa.array(keys, pa.string())
    parts = pc.struct_field(pc.extract_regex(array, _VALUE_PART), "value")
    if parts.null_count:
        raise MetadataTableError(
            "a secondary index key has no unescaped '$' between its value and record key")
    return parts.combine_chunks() if isinstance(parts, pa.ChunkedArray) else parts


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``31*h + c`` over UTF-16 code units, as a signed int32."""
    h = 0
    raw = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + (raw[i] << 8 | raw[i + 1])) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def file_group_index(key: str, count: int) -> int:
    """The file group (of ``count``) a key goes to: ``abs(abs(hashCode) % count)`` as in Java.

    Java's ``Math.abs(Integer.MIN_VALUE)`` stays negative and its ``%`` truncates; both
    abs calls together make the result ``abs(h) % count`` in exact arithmetic.
    """
    if count < 1:
        raise MetadataTableError(f"a metadata partition needs at least one file group, not {count}")
    return abs(java_string_hash(key)) % count


def file_group_indexes(keys: pa.Array | pa.ChunkedArray | list[str], count: int) -> np.ndarray:
    """:func:`file_group_index` of many keys at once (an int64 numpy array, in key order).

    ASCII keys (UTF-16 code units = bytes) are hashed from Arrow's buffers in numpy; the
    others one by one. A dictionary array's keys are hashed once per dictionary entry; a
    chunked array's chunks one by one (no copy into one array).
    """
    if count < 1:
        raise MetadataTableError(f"a metadata partition needs at least one file group, not {count}")
    array = keys if isinstance(keys, pa.Array | pa.ChunkedArray) else pa.array(keys, pa.string())
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks != 1:
            return np.concatenate([np.zeros(0, dtype=np.int64)] + [
                file_group_indexes(chunk, count) for chunk in array.chunks])
        array = array.chunk(0)
    if isinstance(array, pa.DictionaryArray):  # each distinct key hashed once
        if array.indices.null_count:
            raise MetadataTableError("a metadata record key is null")
        hashed = file_group_indexes(array.dictionary, count)
        picked: np.ndarray = hashed[array.indices.to_numpy(zero_copy_only=False)]
        return picked
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        array = array.cast(pa.large_string())
    n = len(array)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    if array.null_count:
        raise MetadataTableError("a metadata record key is null")
    if all_ascii(array):
        out[:] = _ascii_hashes(array)
    else:
        ascii_mask = pc.string_is_ascii(array).to_numpy(zero_copy_only=False)
        idx = np.nonzero(ascii_mask)[0]
        if len(idx):
            out[idx] = _ascii_hashes(array.take(pa.array(idx)))
        for i in np.nonzero(~ascii_mask)[0]:
            out[i] = java_string_hash(array[int(i)].as_py())
    return np.abs(out) % count


def _ascii_hashes(array: pa.Array) -> np.ndarray:
    """Signed int32 Java hash codes of ASCII strings (a ``string`` or ``large_string``
    array), from the array's buffers.

    Keys of one length are hashed together, Horner's rule over their character columns
    (``h = 31 * h + c`` in uint32, which wraps as Java's int does). When the keys of one
    length are one run of rows (all keys, when they have one length), their bytes are a
    dense matrix read column by column; otherwise each column is gathered.
    """
    offsets = value_offsets(array).astype(np.int64, copy=False)
    data = value_bytes(array)
    n = len(array)
    lengths = np.diff(offsets)
    result = np.zeros(n, dtype=np.uint32)
    if n == 0:
        return result.view(np.int32).astype(np.int64)
    present = np.flatnonzero(np.bincount(lengths))
    if len(present) == 1:
        runs: list[tuple[int, np.ndarray]] = [(int(present[0]), np.arange(n))]
    else:  # rows by length: small lengths get numpy's radix sort
        small = int(present[-1]) <= np.iinfo(np.int16).max
        order = np.argsort(lengths.astype(np.int16) if small else lengths, kind="stable")
        cuts = np.r_[np.searchsorted(lengths[order], present), n]
        runs = [(int(length), order[cuts[i]:cuts[i + 1]]) for i, length in enumerate(present)]
    thirty_one = np.uint32(31)
    for length, rows in runs:
        if length == 0:
            continue
        h = np.zeros(len(rows), dtype=np.uint32)
        if int(rows[-1]) - int(rows[0]) + 1 == len(rows):  # one run: a dense matrix
            first = int(offsets[rows[0]])
            matrix = data[first:first + len(rows) * length].reshape(len(rows), length)
            for column in range(length):
                h *= thirty_one
                h += matrix[:, column]
        else:
            starts = offsets[rows]
            for column in range(length):
                h *= thirty_one
                h += data[starts + column]
        result[rows] = h
    return result.view(np.int32).astype(np.int64)
