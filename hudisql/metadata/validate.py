"""Validating the metadata table: every built partition recomputed from the data table.

:func:`validate_metadata_table` (behind ``CALL validate_metadata_table`` and the suite's
fixture check) reads each partition hoodie.properties lists as built, rebuilds its records
from the data table (:func:`hudisql.metadata.builders.build_partition_records`) and
reports every key whose live record differs, is missing or is extra. Record index entries
are compared by location (partition and file id): the instant is informational.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudisql.errors import MetadataTableError
from hudisql.metadata.builders import build_partition_records
from hudisql.metadata.config import completed_partitions
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.records import Record, is_live, live_files, unwrap
from hudisql.metadata.table import MetadataTable
from hudisql.table.table import HudiTable

__all__ = ["Difference", "ValidationResult", "validate_metadata_table"]


@dataclass(frozen=True)
class Difference:
    """One key whose metadata record is not what the data table says."""

    partition: str
    key: str
    expected: Any
    actual: Any


@dataclass(frozen=True)
class ValidationResult:
    """What :func:`validate_metadata_table` compared and found."""

    table: str
    partitions: tuple[str, ...]
    differences: tuple[Difference, ...]
    #: Partitions hudisql cannot recompute (e.g. expression indexes), with the reason.
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        """True when every validated partition matches the data table."""
        return not self.differences

    def to_arrow(self) -> pa.Table:
        """The differences as a table (partition, key, expected, actual as text)."""
        rows = [{"partition": d.partition, "key": d.key, "expected": repr(d.expected),
                 "actual": repr(d.actual)} for d in self.differences]
        schema = pa.schema([("partition", pa.string()), ("key", pa.string()),
                            ("expected", pa.string()), ("actual", pa.string())])
        return pa.Table.from_pylist(rows, schema=schema)

    def __str__(self) -> str:
        skipped = "".join(f"\n  skipped {p}: {why}" for p, why in self.skipped)
        if self.ok:
            return (f"metadata table of {self.table}: {len(self.partitions)} partitions "
                    f"match{skipped}")
        lines = [f"metadata table of {self.table}: {len(self.differences)} differences"]
        lines += [f"  {d.partition} {d.key!r}: expected {d.expected!r}, got {d.actual!r}"
                  for d in self.differences[:20]]
        return "\n".join(lines) + skipped


def _comparable(record: Record) -> Any:
    """The part of a live record that must match a recomputation."""
    if record["filesystemMetadata"] is not None:
        return live_files(record)
    if record["recordIndexMetadata"] is not None:
        location = RecordLocation.from_avro(record["recordIndexMetadata"])
        return (location.partition_path, location.file_id)
    if record["ColumnStatsMetadata"] is not None:
        meta = dict(record["ColumnStatsMetadata"])
        meta.pop("isTightBound", None)
        return meta
    if record["BloomFilterMetadata"] is not None:
        meta = dict(record["BloomFilterMetadata"])
        meta.pop("timestamp", None)
        return meta
    return True  # secondary index: a live entry exists


def _empty(record: Record) -> bool:
    """A column stats entry of a file without values of its column (Hudi 1.x writes them
    for log files of deletes only; hudisql writes none): the same as no entry."""
    meta = record["ColumnStatsMetadata"]
    return meta is not None and not meta["valueCount"] and not meta["nullCount"] and (
        meta["minValue"] is None and meta["maxValue"] is None)


def _within(actual: Any, expected: Any) -> bool:
    """Whether a version 8/9 table's partition stats agree with the recomputation: bounds
    within the recomputed ones. Hudi 1.1 keeps a partition's bounds tight over its live
    rows and counts them its own way; hudisql's recomputation spans every value its file
    slices hold (superseded versions in log files too), so Hudi's may be narrower."""
    if not isinstance(actual, dict) or not isinstance(expected, dict):
        return False
    if actual["isDeleted"] != expected["isDeleted"]:
        return False
    lo, hi = unwrap(actual["minValue"]), unwrap(actual["maxValue"])
    elo, ehi = unwrap(expected["minValue"]), unwrap(expected["maxValue"])
    if lo is None or hi is None:
        return elo is None or bool(expected["nullCount"])
    return elo is not None and ehi is not None and elo <= lo and hi <= ehi


def validate_metadata_table(
    table: HudiTable, partitions: Sequence[str] | None = None
) -> ValidationResult:
    """Compare each built metadata partition (or ``partitions``) with the data table.

    Returns:
        The partitions compared, every difference found (none when exact), and the
        partitions hudisql cannot recompute (skipped, with the reason).
    """
    table = table.reload()
    wanted = list(partitions) if partitions is not None else completed_partitions(
        table.properties)
    mdt = MetadataTable(table)
    differences: list[Difference] = []
    skipped: list[tuple[str, str]] = []
    checked: list[str] = []
    for partition in wanted:
        try:
            built = build_partition_records(table, partition)
        except MetadataTableError as exc:
            skipped.append((partition, str(exc)))
            continue
        checked.append(partition)
        hudi_1x = table.properties.version >= 8
        expected = {r["key"]: _comparable(r) for r in built if is_live(r)}
        actual = {k: _comparable(r) for k, r in mdt.read_partition(partition).items()
                  if is_live(r) and (r["filesystemMetadata"] is None or live_files(r)
                                     or k in expected)
                  and (k in expected or not hudi_1x or not _empty(r))}
        within = partition == "partition_stats" and hudi_1x
        for key in sorted(set(expected) | set(actual)):
            if within and _within(actual.get(key), expected.get(key)):
                continue
            if expected.get(key) != actual.get(key):
                differences.append(Difference(partition, key, expected.get(key), actual.get(key)))
    return ValidationResult(table.name, tuple(checked), tuple(differences), tuple(skipped))
