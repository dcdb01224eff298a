"""What a table's metadata table holds, as Arrow tables (for SHOW INDEXES and the procedures).

:func:`metadata_partitions` lists every metadata partition the table config or the
metadata table knows, with its state, file groups, index type and columns;
:func:`metadata_files` lists the data files the files partition records.
"""

from __future__ import annotations

import pyarrow as pa

from hudisql.metadata.config import (
    completed_partitions,
    inflight_partitions,
    load_index_definitions,
)
from hudisql.metadata.keys import partition_identifier
from hudisql.metadata.partitions import MetadataPartitionType
from hudisql.metadata.records import is_live, live_files
from hudisql.metadata.table import MetadataTable
from hudisql.table.format.properties import WRITABLE_VERSIONS
from hudisql.table.table import HudiTable

__all__ = ["metadata_files", "metadata_partitions"]

_PARTITIONS = pa.schema([
    ("partition", pa.string()), ("state", pa.string()), ("file_groups", pa.int32()),
    ("index_type", pa.string()), ("source_fields", pa.list_(pa.string())),
])
_FILES = pa.schema([("partition", pa.string()), ("file_name", pa.string()),
                    ("size", pa.int64())])


def metadata_partitions(table: HudiTable) -> pa.Table:
    """One row per metadata partition: ``completed``, ``inflight`` or ``orphaned`` (files only).

    Columns: partition, state, file_groups, index_type, source_fields.
    """
    props = table.properties
    done, building = completed_partitions(props), inflight_partitions(props)
    readable = props.version in WRITABLE_VERSIONS and MetadataTable.exists_for(table)
    mdt = MetadataTable(table) if readable else None
    on_disk = mdt.partitions() if mdt is not None else []
    definitions = load_index_definitions(table)
    rows = []
    for partition in sorted(set(done) | set(building) | set(on_disk)):
        state = "completed" if partition in done else "inflight" if partition in building \
            else "orphaned"
        found = definitions.get(partition)
        rows.append({
            "partition": partition, "state": state,
            "file_groups": len(mdt.file_group_ids(partition)) if mdt is not None else 0,
            "index_type": found.index_type if found is not None else partition,
            "source_fields": list(found.source_fields) if found is not None else [],
        })
    return pa.Table.from_pylist(rows, schema=_PARTITIONS)


def metadata_files(table: HudiTable, partition: str | None = None) -> pa.Table:
    """The data files the files partition lists (one data partition, or all).

    Raises:
        MetadataTableError: the files partition is not initialized.
    """
    keys = None if partition is None else [partition_identifier(partition)]
    records = MetadataTable(table).read_partition("files", keys=keys)
    rows = [{"partition": key, "file_name": name, "size": size}
            for key, record in sorted(records.items())
            if record["type"] == MetadataPartitionType.FILES.record_type and is_live(record)
            for name, size in sorted(live_files(record).items())]
    return pa.Table.from_pylist(rows, schema=_FILES)
