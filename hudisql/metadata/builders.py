"""Metadata records built from the data table as it is (a partition's from-scratch build).

Each builder is a pure function of the data table (and, per file or file slice, of one
piece of it, so the indexer's Spark jobs can run the pieces on executors): the files
partition from the committed files, column stats per data file, record index and secondary
index entries per latest file slice, partition stats per data partition. Only committed
files count: a base file or log file that no completed write names (a failed or duplicate
task attempt) is left out, as Hudi's files partition leaves it out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from hudisql.errors import MetadataTableError
from hudisql.metadata.arrow_records import (
    record_index_rows,
    secondary_index_rows,
    secondary_strings,
)
from hudisql.metadata.bloom import (
    DEFAULT_FPP,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_NUM_ENTRIES,
    DYNAMIC_V0,
    BloomFilter,
)
from hudisql.metadata.column_stats import (
    base_file_ranges,
    default_stats_columns,
    log_file_ranges,
    log_file_rows,
    table_ranges,
)
from hudisql.metadata.config import IndexDefinition, load_index_definitions
from hudisql.metadata.expressions import IndexExpression
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.partitions import (
    DEFAULT_FILE_GROUP_COUNT,
    MetadataPartitionType,
    estimate_file_group_count,
    partition_spec,
)
from hudisql.metadata.records import (
    ColumnRange,
    Record,
    all_partitions_record,
    bloom_filter_record,
    column_stats_record,
    files_record,
    partition_stats_record,
    record_index_record,
    secondary_index_record,
    secondary_value,
)
from hudisql.metadata.value_types import secondary_source
from hudisql.table.format.filenames import BaseFileName, LogFileName
from hudisql.table.format.fsview import FileSlice, FileSystemView
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.format.schema import META_COLUMNS
from hudisql.table.format.timeline import Timeline
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable

__all__ = [
    "DataFile",
    "IndexSpec",
    "bloom_filter_records",
    "build_partition_records",
    "committed_files",
    "expression_index_records",
    "file_group_count",
    "index_spec",
    "record_index_records",
    "record_index_slice_rows",
    "secondary_index_records",
    "secondary_index_slice_rows",
    "slice_columns",
]

RECORD_KEY, PARTITION_PATH = META_COLUMNS[2], META_COLUMNS[3]


@dataclass(frozen=True)
class DataFile:
    """One committed data file: partition, name, size and whether it is a log file."""

    partition_path: str
    name: str
    size: int
    is_log: bool
    instant_time: str

    @property
    def path(self) -> str:
        """Path relative to the table."""
        return posixpath.join(self.partition_path, self.name) if self.partition_path else self.name


@dataclass(frozen=True)
class IndexSpec:
    """What one metadata partition indexes: its columns (``source_fields``); for an
    expression index also its type (``column_stats`` or ``bloom_filters``) and function."""

    partition: str
    kind: MetadataPartitionType
    source_fields: tuple[str, ...] = field(default=())
    options: Mapping[str, str] = field(default_factory=dict)
    index_type: str = ""
    function: str = "identity"
    #: The index version of its definition (``V2``: Hudi 1.1's secondary keys of dates
    #: are day numbers; see :func:`hudisql.metadata.value_types.secondary_source`).
    version: str | None = None

    def expression(self) -> IndexExpression:
        """The function of an expression index, its options checked.

        Raises:
            MetadataTableError: a function or option hudisql does not compute.
        """
        try:
            return IndexExpression.of(self.function, self.options)
        except MetadataTableError as exc:
            raise MetadataTableError(f"expression index {self.partition}: {exc}") from None

    def bloom_filter(self) -> BloomFilter:
        """An empty bloom filter as this index's options (Hudi's names) ask for."""
        o = {k.lower(): v for k, v in self.options.items()}
        try:
            return BloomFilter(
                o.get("filtertype", DYNAMIC_V0).upper(),
                int(o.get("numentries", DEFAULT_NUM_ENTRIES)),
                float(o.get("fpp", DEFAULT_FPP)),
                int(o.get("maxentries", DEFAULT_MAX_ENTRIES)),
            )
        except ValueError as exc:
            raise MetadataTableError(
                f"index {self.partition}: bad bloom filter option ({exc}); use filtertype, "
                "numentries, fpp and maxentries"
            ) from None


def index_spec(
    table: HudiTable, partition: str, definitions: Mapping[str, IndexDefinition] | None = None
) -> IndexSpec:
    """The columns ``partition`` indexes, from index.json (or Hudi's defaults).

    Raises:
        MetadataTableError: a secondary index without a definition, or a source column the
            table does not have.
    """
    spec = partition_spec(partition)
    defs = load_index_definitions(table) if definitions is None else definitions
    found = defs.get(partition)
    data_columns = [f.name for f in table.schema if f.name not in META_COLUMNS]
    if found is not None and found.source_fields:
        fields = found.source_fields
    elif spec.kind == MetadataPartitionType.SECONDARY_INDEX:
        raise MetadataTableError(
            f"secondary index {partition} of table {table.name} has no definition in "
            "index.json; drop it and create it again"
        )
    elif (spec.kind == MetadataPartitionType.PARTITION_STATS and table.properties.version >= 8
          and defs.get("column_stats") is not None and defs["column_stats"].source_fields):
        # Hudi 1.x keeps partition stats of the columns its column stats index.
        fields = defs["column_stats"].source_fields
    elif spec.kind in (MetadataPartitionType.COLUMN_STATS, MetadataPartitionType.PARTITION_STATS):
        fields = tuple(default_stats_columns(table.schema))
    else:
        fields = ()
    # Hudi 1.x's column stats also cover the meta columns it populates (commit time,
    # partition path, record key): every data file has them.
    missing = [f for f in fields if f not in data_columns and f not in META_COLUMNS]
    if missing:
        raise MetadataTableError(
            f"index {partition} of table {table.name} names columns {missing} the table does "
            f"not have (columns: {data_columns})"
        )
    if spec.kind == MetadataPartitionType.EXPRESSION_INDEX and (found is None or len(fields) != 1):
        raise MetadataTableError(
            f"expression index {partition} of table {table.name} needs a definition in "
            "index.json naming one column; drop it and create it again")
    options = dict(found.index_options) if found is not None else {}
    if found is None:
        return IndexSpec(partition, spec.kind, tuple(fields), options)
    return IndexSpec(partition, spec.kind, tuple(fields), options,
                     found.index_type.lower(), found.index_function.lower(), found.version)


def partition_stats_follow(table: HudiTable,
                           definitions: Mapping[str, IndexDefinition]) -> bool:
    """Whether the partition stats of a version 8/9 table would cover other columns under
    ``definitions`` than under its index.json now.

    Hudi 1.x keeps partition stats of the columns its column stats index, and only beside
    column stats (apache/hudi#14165, #14138): a change of the column stats' columns changes
    what the built partition stats must hold. Always False below version 8.
    """
    if table.properties.version < 8:
        return False
    partition = MetadataPartitionType.PARTITION_STATS.partition_path
    now = index_spec(table, partition).source_fields
    return index_spec(table, partition, definitions).source_fields != now


def file_group_count(kind: MetadataPartitionType, record_count: int = 0) -> int:
    """How many file groups a new partition of ``kind`` gets (Hudi's defaults)."""
    if kind in (MetadataPartitionType.RECORD_INDEX, MetadataPartitionType.SECONDARY_INDEX):
        return estimate_file_group_count(record_count)
    return DEFAULT_FILE_GROUP_COUNT.get(kind, 1)


# ------------------------------------------------------------------------ committed files


class _Commits:
    """Which files each completed write instant committed (cached per instant)."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self._files: dict[str, set[str] | None] = {}

    def committed(self, instant_time: str) -> set[str] | None:
        """Names of files a completed write's stats list; None: not a write on the timeline."""
        if instant_time not in self._files:
            instant = self.timeline.get(instant_time)
            if instant is None or not instant.is_completed or not instant.is_write:
                # Archived, or a rollback's command-block log file: counted as it is.
                self._files[instant_time] = None
            else:
                names: set[str] = set()
                for stat in self.timeline.commit_metadata(instant).write_stats():
                    if stat.path:
                        names.add(posixpath.basename(stat.path))
                    names.update(stat.log_files or ())
                self._files[instant_time] = names
        return self._files[instant_time]


def committed_files(
    table: HudiTable, partitions: Iterable[str] | None = None, as_of: str | None = None
) -> list[DataFile]:
    """Every committed data file of the table (all slices, until cleaned), by partition.

    A base file counts when its instant is visible and (if the instant is on the active
    timeline) its commit lists it; a log file likewise by the instant of its first block.
    """
    view = FileSystemView(table.storage, table.properties, table.timeline, as_of)
    commits = _Commits(table.timeline)
    wanted = view.partitions() if partitions is None else list(partitions)
    out: list[DataFile] = []
    for partition in wanted:
        for status in table.storage.list_dir(partition) if table.storage.exists(partition) else []:
            if status.is_dir:
                continue
            base = BaseFileName.parse(status.name)
            instant: str | None = None
            if base is not None:
                instant = base.instant
            elif LogFileName.parse(status.name) is not None:
                blocks = [b for b in scan_log_file(table.storage, status.path)
                          if not b.is_corrupt and b.instant_time]
                instant = blocks[0].instant_time if blocks else None
            if instant is None or instant not in view.visible:
                continue
            listed = commits.committed(instant)
            if listed is not None and status.name not in listed:
                continue
            out.append(DataFile(partition, status.name, status.size, base is None, instant))
    return out


# ------------------------------------------------------------------------- per partition


def files_records(files: Sequence[DataFile], partitions: Iterable[str] = ()) -> list[Record]:
    """The files partition: one record per data partition with files, and
    ``__all_partitions__`` listing those and ``partitions`` (data partitions that exist but
    hold no committed file any more, e.g. after a clean of replaced file groups: Hudi lists a
    partition until it is dropped)."""
    by_partition: dict[str, dict[str, int]] = {}
    for f in files:
        by_partition.setdefault(f.partition_path, {})[f.name] = f.size
    records = [files_record(p, added) for p, added in sorted(by_partition.items())]
    records.append(all_partitions_record(sorted(set(by_partition) | set(partitions))))
    return records


def file_ranges(table: HudiTable, f: DataFile, columns: Sequence[str]) -> list[ColumnRange]:
    """Column statistics of one committed data file."""
    if f.is_log:
        return log_file_ranges(table.storage, f.path, columns, f.instant_time)
    return base_file_ranges(table.storage, f.path, columns)


def column_stats_records(
    table: HudiTable, files: Sequence[DataFile], columns: Sequence[str]
) -> list[Record]:
    """Column stats of every committed data file."""
    return [column_stats_record(f.partition_path, f.name, r)
            for f in files for r in file_ranges(table, f, columns)]


def partition_ranges(
    ranges: Iterable[tuple[str, ColumnRange]]
) -> dict[tuple[str, str], ColumnRange]:
    """Per (partition, column), the merge of the files' ranges."""
    out: dict[tuple[str, str], ColumnRange] = {}
    for partition, r in ranges:
        key = (partition, r.column)
        out[key] = r if key not in out else out[key].merged(r)
    return out


def partition_stats_records(
    table: HudiTable, files: Sequence[DataFile], columns: Sequence[str]
) -> list[Record]:
    """Partition stats: each partition's column ranges over its committed files."""
    merged = partition_ranges(
        (f.partition_path, r) for f in files for r in file_ranges(table, f, columns)
    )
    return [partition_stats_record(p, r) for (p, _), r in sorted(merged.items())]


def bloom_filter_records(
    table: HudiTable, files: Sequence[DataFile], spec: IndexSpec
) -> list[Record]:
    """A bloom filter of the record keys of every committed base file (log files have none)."""
    out = []
    for f in files:
        if f.is_log:
            continue
        keys = pq.read_table(table.storage.open_input_file(f.path), columns=[RECORD_KEY])
        bloom = spec.bloom_filter().add(keys.column(RECORD_KEY).to_pylist())
        out.append(bloom_filter_record(f.partition_path, f.name, f.instant_time,
                                       bloom.filter_type, bloom.to_bytes()))
    return out


def _file_values(table: HudiTable, f: DataFile, column: str) -> pa.Array | None:
    """The values of ``column`` in one committed data file, as Hudi's file reader gives them
    for an expression index (a base file without the column: nulls); None when the file has
    no data records, or its records hold operands of ``column`` (expression blocks)."""
    if f.is_log:
        rows, operands = log_file_rows(table.storage, f.path, f.instant_time)
        if rows is None or column in operands:
            return None
        if column not in rows.column_names:
            return pa.nulls(rows.num_rows, table.schema.field(column).type)
        return rows.column(column).combine_chunks()
    parquet = pq.ParquetFile(table.storage.open_input_file(f.path))
    if parquet.schema_arrow.get_field_index(column) < 0:
        return pa.nulls(parquet.metadata.num_rows, table.schema.field(column).type)
    return parquet.read(columns=[column]).column(column).combine_chunks()


def expression_index_records(
    table: HudiTable, files: Sequence[DataFile], spec: IndexSpec
) -> list[Record]:
    """An expression index's records of committed data files (base and log files alike).

    As Hudi's ``SparkMetadataWriterUtils``: per file with records, ``column_stats`` keeps
    the range of the expression's values under the source column's name (sizes: the file's,
    and twice that uncompressed); ``bloom_filters`` a bloom filter of their text (Java
    ``toString``; nulls left out), keyed like the column_stats / bloom_filters partitions.
    """
    column = spec.source_fields[0]
    expression = spec.expression()
    out: list[Record] = []
    for f in files:
        values = _file_values(table, f, column)
        if values is None or not len(values):
            continue
        result = expression.apply(values)
        if spec.index_type == "bloom_filters":
            text = secondary_strings(result.drop_null())
            bloom = spec.bloom_filter().add(text.to_pylist())
            out.append(bloom_filter_record(f.partition_path, f.name, f.instant_time,
                                           bloom.filter_type, bloom.to_bytes()))
            continue
        for found in table_ranges(pa.table({column: result}), [column]):
            sized = ColumnRange(found.column, found.kind, found.min_value, found.max_value,
                                found.null_count, found.value_count, f.size, 2 * f.size)
            out.append(column_stats_record(f.partition_path, f.name, sized))
    return out


def _latest_slices(table: HudiTable, as_of: str | None = None) -> list[FileSlice]:
    view = FileSystemView(table.storage, table.properties, table.timeline, as_of)
    return view.latest_file_slices()


def _slice_rows(
    table: HudiTable, file_slice: FileSlice, columns: Sequence[str], as_of: str | None = None
) -> pa.Table:
    return read_file_slice(table.storage, table.properties, table.timeline, file_slice, as_of,
                           columns=[RECORD_KEY, *columns], schema=table.schema)


def slice_columns(
    table: HudiTable, file_slice: FileSlice, columns: Sequence[str], as_of: str | None = None
) -> pa.Table:
    """The record keys and ``columns`` of one file slice's merged rows (an indexer task's
    read)."""
    return _slice_rows(table, file_slice, columns, as_of)


def record_index_records(
    table: HudiTable, file_slice: FileSlice, as_of: str | None = None
) -> list[Record]:
    """Record index entries of one latest file slice (instant: the slice's base instant)."""
    keys = _slice_rows(table, file_slice, [], as_of).column(RECORD_KEY).to_pylist()
    location = RecordLocation(file_slice.partition_path, file_slice.file_id,
                              file_slice.base_instant)
    return [record_index_record(k, location) for k in keys]


def secondary_index_records(
    table: HudiTable, file_slice: FileSlice, column: str, as_of: str | None = None,
    version: str | None = None,
) -> list[Record]:
    """Secondary index entries (value -> record key) of one latest file slice
    (``version``: the index version, see :func:`secondary_source`)."""
    rows = _slice_rows(table, file_slice, [column], as_of)
    values = secondary_source(rows.column(column), version)
    return [secondary_index_record(secondary_value(v), k) for k, v in
            zip(rows.column(RECORD_KEY).to_pylist(), values.to_pylist(), strict=True)]


def record_index_slice_rows(
    table: HudiTable, file_slice: FileSlice, as_of: str | None = None
) -> pa.Table:
    """:func:`record_index_records` of one slice as base-file rows (Arrow, column-wise)."""
    keys = _slice_rows(table, file_slice, [], as_of).column(RECORD_KEY)
    location = RecordLocation(file_slice.partition_path, file_slice.file_id,
                              file_slice.base_instant)
    return record_index_rows(keys, location)


def secondary_index_slice_rows(
    table: HudiTable, file_slice: FileSlice, column: str, as_of: str | None = None
) -> pa.Table:
    """:func:`secondary_index_records` of one slice as base-file rows (Arrow, column-wise)."""
    rows = _slice_rows(table, file_slice, [column], as_of)
    return secondary_index_rows(rows.column(column), rows.column(RECORD_KEY))


def build_partition_records(
    table: HudiTable,
    partition: str,
    definitions: Mapping[str, IndexDefinition] | None = None,
    as_of: str | None = None,
) -> list[Record]:
    """Every record of metadata partition ``partition``, computed from the data table.

    Args:
        as_of: build as of this data instant; default: the table as it is (what the
            indexer's build wants: see docs/METADATA.md, "Building a partition").

    Raises:
        MetadataTableError: an index hudisql does not build (expression, bloom filters), or
            a bad definition.
    """
    spec = index_spec(table, partition, definitions)
    kind = spec.kind
    if kind == MetadataPartitionType.FILES:
        view = FileSystemView(table.storage, table.properties, table.timeline, as_of)
        return files_records(committed_files(table, as_of=as_of), view.partitions())
    if kind == MetadataPartitionType.COLUMN_STATS:
        return column_stats_records(table, committed_files(table, as_of=as_of),
                                    spec.source_fields)
    if kind == MetadataPartitionType.PARTITION_STATS:
        return partition_stats_records(table, committed_files(table, as_of=as_of),
                                       spec.source_fields)
    if kind == MetadataPartitionType.BLOOM_FILTERS:
        return bloom_filter_records(table, committed_files(table, as_of=as_of), spec)
    if kind == MetadataPartitionType.EXPRESSION_INDEX:
        return expression_index_records(table, committed_files(table, as_of=as_of), spec)
    slices = _latest_slices(table, as_of)
    if kind == MetadataPartitionType.RECORD_INDEX:
        return [r for s in slices for r in record_index_records(table, s, as_of)]
    if kind == MetadataPartitionType.SECONDARY_INDEX:
        column = spec.source_fields[0]
        return [r for s in slices
                for r in secondary_index_records(table, s, column, as_of, spec.version)]
    raise MetadataTableError(
        f"hudisql does not build metadata partition {partition} ({kind.name.lower()}) yet"
    )
