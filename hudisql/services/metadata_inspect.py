"""What the metadata table holds, as rows: Hudi's ``show_metadata_table_partitions``,
``show_metadata_table_files``, ``show_metadata_table_column_stats`` and
``validate_metadata_table`` procedures (no Spark: the SQL executors turn rows into frames).

Only built partitions (``hoodie.table.metadata.partitions``) are read, merged as readers
merge them.
"""

from __future__ import annotations

from collections.abc import Sequence

from hudisql.errors import IndexNotFoundError
from hudisql.metadata.keys import partition_identifier
from hudisql.metadata.partitions import ALL_PARTITIONS_KEY
from hudisql.metadata.records import column_range, is_live, live_files
from hudisql.metadata.table import MetadataTable
from hudisql.metadata.validate import validate_metadata_table
from hudisql.table.table import HudiTable

Rows = tuple[list[tuple[object, ...]], tuple[tuple[str, str], ...]]


def _built(table: HudiTable, partition: str, procedure: str) -> MetadataTable:
    if partition not in table.properties.metadata_partitions:
        kind = partition.upper()
        raise IndexNotFoundError(
            f"{procedure}: table {table.name} has no built {partition} index in its metadata "
            f"table; build it with CALL run_indexer(table => '{table.name}', mode => "
            f"'scheduleAndExecute', index_types => '{kind}')")
    return MetadataTable(table)


def partitions(path: str, partition: str | None = None, columns: Sequence[str] = ()) -> Rows:
    """The data partitions the files index lists (``.`` for a non-partitioned table)."""
    table = HudiTable.open(path)
    mdt = _built(table, "files", "show_metadata_table_partitions")
    record = mdt.read_partition("files", keys=[ALL_PARTITIONS_KEY]).get(ALL_PARTITIONS_KEY)
    names = sorted(live_files(record)) if record is not None else []
    return [(n,) for n in names], (("partition", "STRING"),)


def files(path: str, partition: str | None = None, columns: Sequence[str] = ()) -> Rows:
    """The data files the files index lists (of one data partition, or of all)."""
    table = HudiTable.open(path)
    mdt = _built(table, "files", "show_metadata_table_files")
    keys = None if partition is None else [partition_identifier(partition)]
    rows: list[tuple[object, ...]] = []
    for key, record in sorted(mdt.read_partition("files", keys=keys).items()):
        if key == ALL_PARTITIONS_KEY:
            continue
        rows += [(key, name, size) for name, size in sorted(live_files(record).items())]
    return rows, (("partition", "STRING"), ("file_name", "STRING"), ("file_size", "BIGINT"))


def column_stats(path: str, partition: str | None = None, columns: Sequence[str] = ()) -> Rows:
    """Per data file and column: min, max, null count and value count (``column_stats``)."""
    table = HudiTable.open(path)
    mdt = _built(table, "column_stats", "show_metadata_table_column_stats")
    wanted = {c.lower() for c in columns}
    in_partition: set[str] | None = None
    if partition is not None:
        key = partition_identifier(partition)
        listed = _built(table, "files", "show_metadata_table_column_stats").read_partition(
            "files", keys=[key]).get(key)
        in_partition = set(live_files(listed)) if listed is not None else set()
    rows: list[tuple[object, ...]] = []
    for record in mdt.read_partition("column_stats").values():
        if not is_live(record):
            continue
        meta = record["ColumnStatsMetadata"]
        stats = column_range(record)
        if wanted and stats.column.lower() not in wanted:
            continue
        file_name = meta["fileName"] or ""
        if in_partition is not None and file_name not in in_partition:
            continue
        rows.append((file_name, stats.column, _text(stats.min_value), _text(stats.max_value),
                     stats.null_count, stats.value_count))
    rows.sort(key=lambda r: (str(r[0]), str(r[1])))
    return rows, (("file_name", "STRING"), ("column_name", "STRING"), ("min_value", "STRING"),
                  ("max_value", "STRING"), ("null_count", "BIGINT"), ("value_count", "BIGINT"))


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def validate(path: str) -> Rows:
    """Every difference between the built partitions and a recomputation from the data."""
    result = validate_metadata_table(HudiTable.open(path))
    rows: list[tuple[object, ...]] = [
        (d.partition, d.key, repr(d.expected), repr(d.actual)) for d in result.differences]
    return rows, (("partition", "STRING"), ("key", "STRING"), ("expected", "STRING"),
                  ("actual", "STRING"))
