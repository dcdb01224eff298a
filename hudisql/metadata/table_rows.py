"""The metadata table read as a table: every built partition's merged records as rows.

What Hudi users do with ``spark.read.format("hudi").load(base + "/.hoodie/metadata")``:
look inside the indexes. The metadata table keeps no meta columns (``hoodie.populate.meta.
fields=false``) and its records merge by Hudi's ``HoodieMetadataPayload`` (a files record
adds and removes files; a deleted column-stats, bloom-filter or secondary-index entry is
gone), so the data table's generic merge cannot read it; these rows come from the metadata
table's own reader (:mod:`hudisql.metadata.reader`), one file group at a time.

Each row is a ``HoodieMetadataRecord`` in the shape Spark's Avro reader gives it (unions of
several types as ``member<i>`` structs, :func:`hudisql.metadata.schema.arrow_schema`), with
``_hoodie_record_key`` (the key) and ``_hoodie_partition_path`` (the metadata partition:
``files``, ``column_stats``, ...) filled in; the other meta columns are null.
"""

from __future__ import annotations

import posixpath

import pyarrow as pa

from hudisql.errors import MetadataTableError, ReadOptionError
from hudisql.metadata import schema as S
from hudisql.metadata.reader import KeyFilter, merge_slice
from hudisql.metadata.records import Record, is_live
from hudisql.metadata.table import METADATA_PATH, MetadataTable
from hudisql.table.format.schema import META_COLUMNS
from hudisql.table.read.merge import conform_table
from hudisql.table.table import HudiTable

__all__ = ["data_table_of", "file_group_rows", "metadata_file_groups", "read_metadata_table",
           "refuse_metadata_query"]

_KEY, _PARTITION = META_COLUMNS[2], META_COLUMNS[3]


def data_table_of(table: HudiTable) -> HudiTable:
    """The data table whose metadata table ``table`` is (its instants count only when the
    data timeline has them).

    Raises:
        MetadataTableError: ``table`` is not at ``<data table>/.hoodie/metadata``.
    """
    base = table.storage.base_uri.rstrip("/")
    if not base.endswith("/" + METADATA_PATH):
        raise MetadataTableError(
            f"metadata table {table.name} at {base} is not in a data table's "
            f"{METADATA_PATH} folder; read it at <data table>/{METADATA_PATH}")
    return HudiTable.open(base[: -len(METADATA_PATH) - 1])


def refuse_metadata_query(table: HudiTable, what: str) -> None:
    """Refuse a query a metadata table does not answer (time travel, incremental, read
    optimized): its records only mean something merged, as of the latest instant.

    Raises:
        ReadOptionError: always (naming ``what``).
    """
    raise ReadOptionError(
        f"{table.storage.base_uri} is a metadata table: {what} is not supported on it; read "
        "its latest snapshot (no as.of.instant, query type snapshot)")


def metadata_file_groups(data: HudiTable) -> list[tuple[str, int]]:
    """``(partition, file group index)`` of every file group of the built partitions."""
    if not MetadataTable.exists_for(data):
        return []
    mdt = MetadataTable(data)
    return [(partition, i) for partition in data.properties.metadata_partitions
            for i in range(len(mdt.require_groups(partition)))]


def file_group_rows(data: HudiTable, partition: str, index: int, schema: pa.Schema
                    ) -> pa.Table:
    """The live merged records of one file group of a metadata partition, by key, as rows
    of ``schema`` (the metadata table's, meta columns first).

    Raises:
        MetadataTableError: the partition is not initialized.
    """
    mdt = MetadataTable(data)
    ids = mdt.require_groups(partition)
    merged: dict[str, Record] = {}
    merge_slice(mdt, partition, mdt.latest_slices(partition, [ids[index]])[ids[index]],
                mdt.visible_instants(), KeyFilter(None, None), merged)
    records = [_without_deleted_files(r) for _, r in sorted(merged.items()) if is_live(r)]
    # In the table's own record shape (version 9's unions have branches hudisql's
    # records never take): built from the records, not cast, so a field they lack
    # holds no null under a non-nullable type, which Spark's cast would refuse.
    own = pa.schema([schema.field(n) for n in S.arrow_schema().names if n in schema.names])
    rows = S.to_parquet_rows(records, own)
    keys = rows.column("key")
    rows = rows.append_column(_KEY, keys).append_column(
        _PARTITION, pa.repeat(pa.scalar(posixpath.basename(partition)), rows.num_rows))
    return conform_table(rows, schema)


def read_metadata_table(table: HudiTable) -> pa.Table:
    """Every built partition of the metadata table ``table`` as rows (see the module notes).

    Raises:
        MetadataTableError: ``table`` is not in a data table's metadata folder.
    """
    data = data_table_of(table)
    schema = table.schema
    parts = [file_group_rows(data, p, i, schema) for p, i in metadata_file_groups(data)]
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _without_deleted_files(record: Record) -> Record:
    """A files record without the entries of deleted files (as Hudi's payload reads it)."""
    listed = record.get("filesystemMetadata")
    if not listed:
        return record
    return dict(record, filesystemMetadata={
        name: info for name, info in listed.items() if not info["isDeleted"]})
