"""Reads of metadata partitions for data skipping (one place to cache them)."""

from __future__ import annotations

from collections.abc import Callable

from hudisql.metadata.records import Record
from hudisql.metadata.table import MetadataTable

__all__ = ["cached_reads"]

Reads = Callable[[str, "list[str] | None", "list[str] | None"], "dict[str, Record]"]


def cached_reads(mdt: MetadataTable) -> Reads:
    """A reader of ``mdt``'s partitions by key or prefix."""
    def read(partition: str, keys: list[str] | None, prefixes: list[str] | None
             ) -> dict[str, Record]:
        return mdt.read_partition(partition, keys, prefixes)
    return read
