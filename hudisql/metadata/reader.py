"""Merged reads of metadata partitions: by key, by key prefix, or whole.

A file group's latest slice is its base file (an HFile looked up by key or scanned by
prefix through its block index; a parquet base file of an earlier hudisql read with the
wanted keys pushed into the scan) and its log files, whose blocks (HFILE_DATA, or Avro in
an earlier hudisql's metadata table) count only when the metadata instant is one a reader
sees (:class:`hudisql.metadata.table.MetadataTable`): completed here and valid on the data
timeline. Records merge by :func:`hudisql.metadata.records.merge_records`; a delete block
removes its keys.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import MetadataTableError
from hudisql.metadata.formats import base_file_records, data_block_records
from hudisql.metadata.partitions import (
    MetadataPartitionType,
    file_group_indexes,
    partition_spec,
    secondary_routing_keys,
)
from hudisql.metadata.records import Record, merge_records
from hudisql.table.format.fsview import VisibleInstants
from hudisql.table.format.log.format import BlockType, LogBlockInfo
from hudisql.table.format.log.reader import decode_delete_block, scan_blocks
from hudisql.table.read.merge import plan_log_blocks

if TYPE_CHECKING:
    from hudisql.metadata.table import MetadataTable, Slice

__all__ = ["KeyFilter", "merge_slice", "read_partition"]


class KeyFilter:
    """Which keys a read wants: given keys, keys with given prefixes, or all."""

    def __init__(self, keys: set[str] | None, prefixes: tuple[str, ...] | None) -> None:
        self.keys = keys
        self.prefixes = prefixes
        self._expression: pc.Expression | None = None

    def keep(self, key: str) -> bool:
        """Whether ``key`` is wanted."""
        if self.keys is not None and key not in self.keys:
            return False
        return self.prefixes is None or key.startswith(self.prefixes)

    def expression(self) -> pc.Expression | None:
        """The same test as a parquet filter (row groups are skipped by their key ranges).

        Built once per read: a lookup of many keys reads many file groups with it.
        """
        if self._expression is not None:
            return self._expression
        found: pc.Expression | None = None
        if self.keys is not None:
            found = pc.field("key").isin(pa.array(list(self.keys), pa.string()))
        if self.prefixes is not None:
            starts = [pc.starts_with(pc.field("key"), p) for p in self.prefixes]
            any_prefix = starts[0] if starts else pc.scalar(False)
            for more in starts[1:]:
                any_prefix = any_prefix | more
            found = any_prefix if found is None else found & any_prefix
        self._expression = found
        return found


def read_partition(
    mdt: MetadataTable, partition: str, keys: Iterable[str] | None = None,
    prefixes: Iterable[str] | None = None,
) -> dict[str, Record]:
    """The merged records of a metadata partition, by key (deletion markers included).

    Args:
        keys: only these keys (looked up in their file groups only).
        prefixes: only keys starting with one of these.

    Raises:
        MetadataTableError: the partition is not initialized.
    """
    ids = mdt.require_groups(partition)
    spec = partition_spec(partition)
    wanted = None if keys is None else set(keys)
    starts = None if prefixes is None else tuple(prefixes)
    groups: Iterable[int] = range(len(ids))
    by_group: dict[int, set[str]] = {}
    if wanted is not None:
        ordered = sorted(wanted)
        for key, index in zip(ordered, spec.route(ordered, len(ids)).tolist(), strict=True):
            by_group.setdefault(int(index), set()).add(key)
        groups = sorted(by_group)
    elif starts and spec.kind == MetadataPartitionType.SECONDARY_INDEX and all(
            _is_value_part(p) for p in starts):
        # All entries of one value live in the file group of its value part.
        groups = sorted({int(i) for i in file_group_indexes(list(starts), len(ids))})
    slices = mdt.latest_slices(partition, ids)
    visible = mdt.visible_instants()
    key_filter = KeyFilter(wanted, starts)
    merged: dict[str, Record] = {}
    for index in groups:
        # Each file group is asked only for the keys that route to it.
        here = key_filter if wanted is None else KeyFilter(by_group[index], starts)
        merge_slice(mdt, partition, slices[ids[index]], visible, here, merged)
    return merged


def _is_value_part(prefix: str) -> bool:
    """Whether ``prefix`` is a whole secondary value part ``escape(value)$``."""
    try:
        return bool(secondary_routing_keys([prefix + "x"]).to_pylist() == [prefix])
    except MetadataTableError:
        return False


def merge_slice(
    mdt: MetadataTable, partition: str, file_slice: Slice, visible: VisibleInstants,
    key_filter: KeyFilter, merged: dict[str, Record],
) -> None:
    """Merge one file slice's records (base file, then its visible log blocks in merge
    order) into ``merged``, by key; a delete removes the key."""
    keep = key_filter.keep
    storage = mdt.storage
    if file_slice.base_file is not None:
        rel = posixpath.join(partition, file_slice.base_file)
        for record in base_file_records(storage, rel, key_filter):
            merged[record["key"]] = record
    blocks: list[LogBlockInfo] = []
    contents: dict[str, bytes] = {}
    for name in file_slice.log_files:
        rel = posixpath.join(partition, name)
        contents[rel] = storage.read_bytes(rel)
        blocks.extend(scan_blocks(contents[rel], rel))
    report = plan_log_blocks(blocks, visible, reconcile="off")
    for block in report.merged:
        data = contents[block.log_file]
        if block.block_type == BlockType.DELETE:
            for deleted in decode_delete_block(data, block):
                if deleted.record_key is not None and keep(deleted.record_key):
                    merged.pop(deleted.record_key, None)
            continue
        for record in data_block_records(data, block, keep, key_filter.keys):
            key = record["key"]
            older = merged.get(key)
            merged[key] = record if older is None else merge_records(older, record)
