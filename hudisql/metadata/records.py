"""Metadata records (``HoodieMetadataRecord`` dicts) of each partition, and how they merge.

Builders make one record each; :func:`merge_records` applies Hudi's payload rules
(``HoodieMetadataPayload``) when a newer record of a key meets an older one:

- files: the file maps merge; a newer ``isDeleted`` entry removes the file, other entries
  add it (the larger size wins); a deleted entry with nothing before it stays as a marker.
- column stats, bloom filters, partition stats, secondary index: the newer record wins;
  ``isDeleted`` records are kept (readers skip them with :func:`is_live`).
- record index: the newer record wins; a delete (in a delete block) removes the key.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa

from hudisql.errors import MetadataTableError
from hudisql.metadata.keys import (
    RecordLocation,
    bloom_filter_key,
    column_stats_key,
    partition_identifier,
    partition_stats_key,
    secondary_index_key,
)
from hudisql.metadata.partitions import (
    ALL_PARTITIONS_KEY,
    ALL_PARTITIONS_RECORD_TYPE,
    MetadataPartitionType,
)

__all__ = [
    "ColumnRange",
    "PartitionUpdate",
    "all_partitions_record",
    "bloom_filter_record",
    "column_stats_record",
    "compose_records",
    "files_record",
    "is_live",
    "merge_records",
    "partition_stats_record",
    "record_index_record",
    "secondary_index_record",
    "secondary_value",
    "unwrap",
    "wrap",
]

_NS = "org.apache.hudi.avro.model."
Record = dict[str, Any]


@dataclass
class PartitionUpdate:
    """What one deltacommit writes to one metadata partition: records and deleted keys.

    ``shared`` holds records by the thousand that differ only in their key (the record
    index entries of one file group, the secondary index entries of one kind): the writer
    encodes their payload once.
    """

    records: list[Record] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    shared: list[SharedRecords] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.records or self.deletes or any(len(s.keys) for s in self.shared))

    def extend(self, other: PartitionUpdate) -> None:
        """Append another update's records and deletes (later ones win on merge)."""
        self.records.extend(other.records)
        self.deletes.extend(other.deletes)
        self.shared.extend(other.shared)

    def all_records(self) -> list[Record]:
        """Every record, the shared ones as records of their own."""
        return self.records + [{**s.template, "key": k} for s in self.shared
                               for k in s.key_array().to_pylist()]


@dataclass
class SharedRecords:
    """Records of many keys with one payload: ``template`` with each of ``keys`` (a list,
    or an Arrow string array: written without a Python object per key)."""

    keys: Sequence[str] | pa.Array
    template: Record

    def key_array(self) -> pa.Array:
        """The keys as an Arrow string array."""
        if isinstance(self.keys, pa.Array):
            return self.keys
        return pa.array(list(self.keys), pa.string())


def _base(key: str, record_type: int) -> Record:
    return {"key": key, "type": record_type, "filesystemMetadata": None,
            "BloomFilterMetadata": None, "ColumnStatsMetadata": None,
            "recordIndexMetadata": None, "SecondaryIndexMetadata": None}


# ------------------------------------------------------------------------------ files


def files_record(
    partition_path: str, added: Mapping[str, int], deleted: Iterable[str] = ()
) -> Record:
    """The files-partition record of one data partition: files added (name -> size), deleted."""
    record = _base(partition_identifier(partition_path), MetadataPartitionType.FILES.record_type)
    entries = {name: {"size": int(size), "isDeleted": False} for name, size in added.items()}
    for name in deleted:
        entries[name] = {"size": 0, "isDeleted": True}
    record["filesystemMetadata"] = entries
    return record


def all_partitions_record(partitions: Iterable[str], deleted: Iterable[str] = ()) -> Record:
    """The ``__all_partitions__`` record: data partitions added (and deleted)."""
    record = _base(ALL_PARTITIONS_KEY, ALL_PARTITIONS_RECORD_TYPE)
    entries = {partition_identifier(p): {"size": 0, "isDeleted": False} for p in partitions}
    for p in deleted:
        entries[partition_identifier(p)] = {"size": 0, "isDeleted": True}
    record["filesystemMetadata"] = entries
    return record


# ------------------------------------------------------------------------ column stats

#: Wrapper of each value kind (see :func:`wrap`).
_WRAPPER_OF = {
    "bool": "BooleanWrapper", "int": "IntWrapper", "long": "LongWrapper",
    "float": "FloatWrapper", "double": "DoubleWrapper", "bytes": "BytesWrapper",
    "string": "StringWrapper", "date": "DateWrapper", "decimal": "DecimalWrapper",
    "time": "TimeMicrosWrapper", "timestamp": "TimestampMicrosWrapper",
}
_EPOCH = dt.date(1970, 1, 1)
_EPOCH_TS = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def value_kind(dtype: pa.DataType) -> str | None:
    """The wrapper kind of an Arrow type's statistics, or None when Hudi keeps none for it."""
    checks = [
        (pa.types.is_boolean, "bool"), (pa.types.is_int64, "long"),
        (pa.types.is_integer, "int"), (pa.types.is_float32, "float"),
        (pa.types.is_float64, "double"), (pa.types.is_decimal, "decimal"),
        (pa.types.is_date, "date"), (pa.types.is_time, "time"),
        (pa.types.is_timestamp, "timestamp"),
        (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), "string"),
        (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t), "bytes"),
    ]
    for check, kind in checks:
        if check(dtype):
            return kind
    return None


def stored_value(kind: str, value: Any) -> Any:
    """A statistic in the form Hudi's wrapper stores it (dates as days, times as micros)."""
    if value is None:
        return None
    if kind == "date" and isinstance(value, dt.date):
        value = (value - _EPOCH).days
    elif kind == "timestamp" and isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        delta = moment - _EPOCH_TS
        value = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    elif kind == "time" and isinstance(value, dt.time):
        value = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 \
            + value.microsecond
    elif kind == "decimal":
        value = Decimal(value)
    elif kind in ("int", "long"):
        value = int(value)
    elif kind in ("float", "double"):
        value = float(value)
    return value


def wrap(kind: str, value: Any) -> tuple[str, dict[str, Any]] | None:
    """A statistic as its wrapper union value (see :func:`stored_value`)."""
    if value is None:
        return None
    return (_NS + _WRAPPER_OF[kind], {"value": stored_value(kind, value)})


def unwrap(wrapped: Any) -> Any:
    """The plain value of a wrapper union value (None stays None)."""
    if wrapped is None:
        return None
    _, inner = wrapped
    return inner["value"]


@dataclass(frozen=True)
class ColumnRange:
    """The statistics of one column in one data file (or partition).

    Bounds are kept in their stored form (:func:`stored_value`), so ranges read back from
    the metadata table and ranges computed from files compare and merge.
    """

    column: str
    kind: str
    min_value: Any
    max_value: Any
    null_count: int
    value_count: int
    total_size: int = 0
    total_uncompressed_size: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "min_value", stored_value(self.kind, self.min_value))
        object.__setattr__(self, "max_value", stored_value(self.kind, self.max_value))

    def merged(self, other: ColumnRange) -> ColumnRange:
        """The range covering both (counts and sizes added)."""
        lo = [v for v in (self.min_value, other.min_value) if v is not None]
        hi = [v for v in (self.max_value, other.max_value) if v is not None]
        # A range read back without bounds (all nulls) has no kind of its own ("long").
        bounded = self.min_value is not None or self.max_value is not None
        return ColumnRange(
            self.column, self.kind if bounded else other.kind,
            min(lo) if lo else None, max(hi) if hi else None,
            self.null_count + other.null_count, self.value_count + other.value_count,
            self.total_size + other.total_size,
            self.total_uncompressed_size + other.total_uncompressed_size,
        )


def _stats(file_name: str | None, stats: ColumnRange, deleted: bool, tight: bool) -> Record:
    return {
        "fileName": file_name, "columnName": stats.column,
        "minValue": wrap(stats.kind, stats.min_value),
        "maxValue": wrap(stats.kind, stats.max_value),
        "valueCount": stats.value_count, "nullCount": stats.null_count,
        "totalSize": stats.total_size, "totalUncompressedSize": stats.total_uncompressed_size,
        "isDeleted": deleted, "isTightBound": tight,
    }


def column_stats_record(
    partition_path: str, file_name: str, stats: ColumnRange, *, deleted: bool = False
) -> Record:
    """The column-stats record of one column of one data file (``deleted``: the file is gone)."""
    record = _base(column_stats_key(stats.column, partition_path, file_name),
                   MetadataPartitionType.COLUMN_STATS.record_type)
    record["ColumnStatsMetadata"] = _stats(file_name, stats, deleted, True)
    return record


def column_stats_delete(partition_path: str, file_name: str, column: str) -> Record:
    """The record saying a data file's column stats are gone (its file was deleted)."""
    return column_stats_record(
        partition_path, file_name, ColumnRange(column, "long", None, None, 0, 0), deleted=True
    )


def partition_stats_record(partition_path: str, stats: ColumnRange) -> Record:
    """The partition-stats record of one column of one data partition."""
    record = _base(partition_stats_key(stats.column, partition_path),
                   MetadataPartitionType.PARTITION_STATS.record_type)
    record["ColumnStatsMetadata"] = _stats(partition_identifier(partition_path), stats, False,
                                           False)
    return record


def column_range(record: Record) -> ColumnRange:
    """The statistics a column-stats or partition-stats record holds."""
    meta = record["ColumnStatsMetadata"]
    wrapped = meta["minValue"] or meta["maxValue"]
    kind = "long"
    if wrapped is not None:
        name = wrapped[0].rsplit(".", 1)[-1]
        kind = next(k for k, w in _WRAPPER_OF.items() if w == name)
    return ColumnRange(
        meta["columnName"], kind, unwrap(meta["minValue"]), unwrap(meta["maxValue"]),
        int(meta["nullCount"] or 0), int(meta["valueCount"] or 0),
        int(meta["totalSize"] or 0), int(meta["totalUncompressedSize"] or 0),
    )


# ------------------------------------------------------------------------ bloom filters


def bloom_filter_record(
    partition_path: str, file_name: str, instant_time: str, bloom_type: str, bloom: bytes,
    *, deleted: bool = False,
) -> Record:
    """The bloom-filter record of one data file."""
    record = _base(bloom_filter_key(partition_path, file_name),
                   MetadataPartitionType.BLOOM_FILTERS.record_type)
    record["BloomFilterMetadata"] = {"type": bloom_type, "timestamp": instant_time,
                                     "bloomFilter": bloom, "isDeleted": deleted}
    return record


# ---------------------------------------------------------------- record / secondary index


def record_index_record(record_key: str, location: RecordLocation) -> Record:
    """The record-index record of one record key."""
    record = _base(record_key, MetadataPartitionType.RECORD_INDEX.record_type)
    record["recordIndexMetadata"] = location.to_avro()
    return record


def secondary_value(value: object) -> str | None:
    """A column value as the secondary index stores it (Java's ``toString``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def secondary_index_record(value: str | None, record_key: str, *, deleted: bool = False) -> Record:
    """The secondary-index record of one (value, record key) pair."""
    record = _base(secondary_index_key(value, record_key),
                   MetadataPartitionType.SECONDARY_INDEX.record_type)
    record["SecondaryIndexMetadata"] = {"isDeleted": deleted}
    return record


# ------------------------------------------------------------------------------ merging


def merge_records(older: Record, newer: Record) -> Record:
    """The record a reader sees when ``newer`` follows ``older`` for one key (Hudi's rules).

    Raises:
        MetadataTableError: the two records are of different types.
    """
    if older["type"] != newer["type"]:
        raise MetadataTableError(
            f"metadata key {newer['key']!r} has records of types {older['type']} and "
            f"{newer['type']}; a metadata partition holds one record type"
        )
    if newer["type"] in (ALL_PARTITIONS_RECORD_TYPE, MetadataPartitionType.FILES.record_type):
        combined = dict(older["filesystemMetadata"] or {})
        for name, info in (newer["filesystemMetadata"] or {}).items():
            previous = combined.get(name)
            if previous is None:
                combined[name] = info
            elif info["isDeleted"]:
                del combined[name]
            else:
                combined[name] = {"size": max(previous["size"], info["size"]),
                                  "isDeleted": False}
        return dict(newer, filesystemMetadata=combined)
    return newer


def compose_records(older: Record, newer: Record) -> Record:
    """Two records of one key as one that, merged over any older record, gives what
    merging both would: as :func:`merge_records`, but a file listing keeps the files a
    newer entry deletes as deletions (the older record may list them)."""
    if newer["filesystemMetadata"] is None or older["filesystemMetadata"] is None:
        return merge_records(older, newer)
    combined = dict(older["filesystemMetadata"])
    for name, info in newer["filesystemMetadata"].items():
        previous = combined.get(name)
        if previous is None or info["isDeleted"]:
            combined[name] = info
        else:
            combined[name] = {"size": max(previous["size"], info["size"]), "isDeleted": False}
    return dict(newer, filesystemMetadata=combined)


def is_live(record: Record) -> bool:
    """Whether a merged record says something exists (not a deletion marker)."""
    for name in ("BloomFilterMetadata", "ColumnStatsMetadata", "SecondaryIndexMetadata"):
        payload = record.get(name)
        if payload is not None:
            return not payload["isDeleted"]
    return True


def live_files(record: Record) -> dict[str, int]:
    """The files (name -> size) a merged files-partition record lists as present."""
    return {name: info["size"] for name, info in (record["filesystemMetadata"] or {}).items()
            if not info["isDeleted"]}
