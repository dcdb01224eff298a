"""The ``hudi`` Python data source: ``spark.read.format("hudi")`` and ``USING hudi`` tables.

Planning (``schema``, ``pushFilters``, ``partitions``) runs in Spark's planning worker and
lists the table's latest file slices as of one snapshot instant; each slice (or a pack of
small ones) becomes one input partition, read on an executor and handed to Spark as Arrow
record batches in exactly the schema Spark expects. A slice without log files streams its
base file's row groups; a slice with log files goes through the table core's merged read.

How Spark 4.3 reuses a plan (found by ``tests/read/test_reuse.py``): the JVM keeps one
"read info" (the pickled reader and its input partitions) per relation, i.e. per
DataFrame made by ``load()``/``spark.table()`` and per temporary view, and re-plans it in
Python only when a query pushes at least one filter Python can receive. A query that pushes
none (``df.count()``, ``SELECT * FROM view``) runs the relation's last plan, whichever query
made it. Each ``spark.sql`` over a catalog table resolves a new relation, so it re-plans.
Hence:

* Pruning by pushed filters would leak into later filter-less queries on the same relation
  (rows lost), and no per-query state reaches the executors to undo it. Pushed filters
  therefore never prune; every one is handed back to Spark. Pruning comes only from a
  predicate fixed for the relation (``hudisql.read.where``, which ``t.read(where=...)`` and
  SQL on catalog tables through a hudisql session set): every plan of the relation prunes the
  same way, so a reused plan loses nothing.
* Snapshots: a ``load(path)`` DataFrame is pinned to the table's last completed instant at
  ``load()`` time (kept in the schema's metadata, :data:`SNAPSHOT_METADATA_KEY`), so every
  query on it reads that snapshot, re-planned or not; load again to see later commits. A
  catalog table's relation reads the latest snapshot as of its planning; a reused
  ``spark.table()`` DataFrame re-plans (and moves to the latest snapshot) only on queries
  that push a filter. Each plan reads exactly one snapshot: the instant travels in every
  input partition with the slice, and executors read as of it.

Spark's session catalog does not pass a table's LOCATION to a Python data source when it
reads the table, but it does keep the schema that :meth:`HudiDataSource.schema` returned at
``CREATE TABLE`` time, field metadata included. The base path therefore travels in the
metadata of the first column (:data:`PATH_METADATA_KEY`).

Small file slices share an input partition (:func:`pack_slices`, sized as Spark sizes its
file splits): each Python read task has a fixed cost (a Python worker, the reader unpickled,
the table opened), which dominated scans of tables of many small slices (100 slices of
10,000 rows: 100 tasks).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    Filter,
    InputPartition,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructField, StructType

from hudisql.errors import HudiSqlError, ReadOptionError, TableNotFoundError
from hudisql.read.nested_cast import cast_nested
from hudisql.read.options import (
    INCREMENTAL,
    PATH_METADATA_KEY,
    READ_OPTIMIZED,
    SNAPSHOT_METADATA_KEY,
    ReadOptions,
)
from hudisql.read.pruning import select_slices
from hudisql.table.format.fsview import base_files_only
from hudisql.table.io.heap import keep_freed_memory
from hudisql.table.read.cdc import CDC_SCHEMA
from hudisql.table.read.incremental import COMMIT_TIME_COLUMN, IncrementalRange

if TYPE_CHECKING:
    from hudisql.table.format.fsview import FileSlice
    from hudisql.table.read.cdc import CdcUnit
    from hudisql.table.table import HudiTable

#: Rows per Arrow batch handed to Spark.
BATCH_ROWS = 65536
#: The columns of a CDC query.
CDC_COLUMNS = CDC_SCHEMA.names
#: Bytes of file slices per input partition at most (Spark's
#: ``spark.sql.files.maxPartitionBytes`` default); a larger slice is a partition alone.
MAX_PARTITION_BYTES = 128 << 20
#: What opening a slice costs, in bytes of reading (Spark's ``spark.sql.files.openCostInBytes``
#: default): small slices are packed as if each were this much larger.
OPEN_COST_BYTES = 4 << 20


def spark_schema(table: HudiTable, path: str, arrow: pa.Schema | None = None) -> StructType:
    """The Spark schema of ``table`` (meta columns first), or of ``arrow``; returns it.

    The first column's metadata carries the base path and the last completed instant
    (the snapshot a ``load(path)`` DataFrame is pinned to).
    """
    schema = from_arrow_schema(table.schema if arrow is None else arrow,
                               prefer_timestamp_ntz=False)
    fields = list(schema.fields)
    if fields:
        first = fields[0]
        metadata = {**(first.metadata or {}), PATH_METADATA_KEY: path}
        head = table.timeline.last_completed()
        if head is not None:
            metadata[SNAPSHOT_METADATA_KEY] = head.timestamp
        fields[0] = StructField(first.name, first.dataType, first.nullable, metadata)
    return StructType(fields)


def conform(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` with exactly ``target``'s columns, order and types (absent columns null).

    Raises:
        HudiSqlError: a column cannot be cast to the type the Spark schema declares.
    """
    arrays = []
    for field in target:
        if field.name in table.column_names:
            column = table.column(field.name)
            if not column.type.equals(field.type):
                try:
                    column = cast_nested(column, field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise HudiSqlError(
                        f"column {field.name!r} holds {column.type}, which does not convert to "
                        f"the declared {field.type}: re-create the table's Spark definition "
                        f"(CREATE TABLE ... USING hudi LOCATION, without a column list): {exc}"
                    ) from exc
            arrays.append(column)
        else:
            # A column the catalog schema has and this slice lacks (schema evolution).
            arrays.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=target)


class SliceInput(InputPartition):
    """One input partition: one file slice of the table, read as of the snapshot instant.

    Carries the snapshot and timeline head itself: Spark pickles the reader for the read
    tasks before it calls ``partitions()``, so state set while planning never reaches them.
    """

    def __init__(self, file_slice: FileSlice | None, snapshot: str | None,
                 head: str | None,
                 commit_range: IncrementalRange | None = None,
                 cdc: CdcUnit | None = None,
                 metadata_group: tuple[str, int] | None = None,
                 more: Sequence[FileSlice] = ()) -> None:
        super().__init__(file_slice)
        self.file_slice = file_slice
        #: Every slice this partition reads, ``file_slice`` first (small slices are packed,
        #: :func:`pack_slices`); empty without a file slice.
        self.file_slices: tuple[FileSlice, ...] = (
            () if file_slice is None else (file_slice, *more))
        self.snapshot = snapshot
        self.head = head
        #: An incremental query's range: only rows whose commit time lies in it.
        self.commit_range = commit_range
        #: A CDC query's unit of work (``file_slice`` is None then).
        self.cdc = cdc
        #: A metadata table's (partition, file group index), read by its own merge
        #: (:mod:`hudisql.metadata.table_rows`; ``file_slice`` is None then).
        self.metadata_group = metadata_group


@functools.lru_cache(maxsize=8)
def _open_table(path: str, head: str | None) -> HudiTable:
    """The table at ``path``, loaded once per executor process per planned timeline head.

    A new commit or rollback moves the head (the last completed instant), so a cached
    table is only reused by reads planned against the same timeline.
    """
    return _open_path(path)


class HudiReader(DataSourceReader):
    """Plans one input partition per latest file slice and reads each as Arrow batches."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.snapshot: str | None = None
        self.head: str | None = None
        self._slices: list[FileSlice] | None = None
        self._range: IncrementalRange | None = None
        self._cdc_units: list[CdcUnit] = []
        self._metadata_groups: list[tuple[str, int]] | None = None

    def __getstate__(self) -> dict[str, object]:
        # Spark pickles the reader into the read function before partitions(): the slice
        # list is planning state the read tasks never need.
        state = dict(self.__dict__)
        state.update(_slices=None, _cdc_units=[], _metadata_groups=None)
        return state

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Yield every filter back: Spark applies them all.

        Pushed filters never prune (see the module notes on plan reuse): only a predicate
        fixed for the relation does (:data:`hudisql.read.options.WHERE`). Kept so that a
        query pushing a filter re-plans the relation (and reads the latest snapshot).
        """
        yield from filters

    def partitions(self) -> Sequence[InputPartition]:
        """One :class:`SliceInput` per latest file slice kept by the relation's predicate."""
        if self._slices is None:
            self._plan()
        slices = self._slices or []
        self._slices = None
        if self._metadata_groups is not None:
            groups, self._metadata_groups = self._metadata_groups, None
            return [SliceInput(None, self.snapshot, self.head, metadata_group=g)
                    for g in groups] or [SliceInput(None, self.snapshot, self.head)]
        if self._cdc_units:
            return [SliceInput(None, self.snapshot, self.head, cdc=unit)
                    for unit in self._cdc_units]
        named = self.options.slices
        if named is not None:
            slices = [s for s in slices if (s.partition_path, s.file_id) in named]
        if not slices:
            return [SliceInput(None, self.snapshot, self.head)]
        return [SliceInput(group[0], self.snapshot, self.head, commit_range=self._range,
                           more=group[1:])
                for group in pack_slices(slices)]

    def _plan(self) -> HudiTable:
        """Load the table fresh (planning workers are reused across queries) and list slices.

        One listing per plan: ``pushFilters`` and ``partitions`` share it.
        """
        table = _open_path(self.options.path)
        head = table.timeline.last_completed()
        self.head = head.timestamp if head is not None else None
        if table.properties.is_metadata_table:
            self._plan_metadata(table)
            return table
        if self.options.query_type == INCREMENTAL:
            self._plan_incremental(table)
            return table
        if self.options.as_of:
            table.check_readable_as_of(self.options.as_of)
        self.snapshot = self.options.as_of or self.options.pinned or self.head
        self._slices = [] if self.snapshot is None else list(table.file_slices(as_of=self.snapshot))
        if self.options.query_type == READ_OPTIMIZED:
            # Base files alone: log files are ignored, and slices of logs only hold no rows.
            self._slices = base_files_only(self._slices)
        if self.options.where is not None and self.options.slices is None:
            self._slices = select_slices(table, self._slices, self.options.where,
                                         self.snapshot, self.options.data_skipping).kept
        return table

    def _plan_metadata(self, table: HudiTable) -> None:
        """A metadata table: one input partition per file group of its built partitions,
        its latest snapshot only."""
        from hudisql.metadata.table_rows import (
            data_table_of,
            metadata_file_groups,
            refuse_metadata_query,
        )

        if self.options.query_type != "snapshot":
            refuse_metadata_query(table, f"query type {self.options.query_type}")
        if self.options.as_of is not None:
            refuse_metadata_query(table, f"time travel (as.of.instant={self.options.as_of})")
        self.snapshot = self.head
        self._slices = []
        self._metadata_groups = metadata_file_groups(data_table_of(table))

    def _plan_incremental(self, table: HudiTable) -> None:
        from hudisql.table.read.cdc import cdc_range, cdc_units
        from hudisql.table.read.incremental import incremental_slices, resolve_range

        options = self.options
        if options.is_cdc:
            rng = cdc_range(table, options.begin, options.end, options.pinned or self.head)
        else:
            rng = resolve_range(table, options.begin, options.end,
                                full_scan_fallback=options.full_scan_fallback,
                                latest=options.pinned or self.head)
        self.snapshot = rng.as_of
        if options.is_cdc:
            self._slices = []
            self._cdc_units = cdc_units(table, rng)
        else:
            # Each input partition carries the bounds only, not the range's file groups.
            self._range = rng.for_rows()
            self._slices = incremental_slices(table, rng)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The merged rows of one file slice as Arrow batches in Spark's schema."""
        assert isinstance(partition, SliceInput)
        keep_freed_memory()
        target = to_arrow_schema(self.schema, timezone="UTC")
        if partition.cdc is not None:
            from hudisql.table.read.cdc import read_cdc_unit

            changes = read_cdc_unit(_open_table(self.options.path, partition.head), partition.cdc)
            yield from conform(changes, target).to_batches(max_chunksize=BATCH_ROWS)
            return
        if partition.metadata_group is not None:
            from hudisql.metadata.table_rows import data_table_of, file_group_rows

            table = _open_table(self.options.path, partition.head)
            name, index = partition.metadata_group
            rows = file_group_rows(data_table_of(table), name, index, table.schema)
            yield from conform(rows, target).to_batches(max_chunksize=BATCH_ROWS)
            return
        if partition.file_slice is None:
            return
        table = _open_table(self.options.path, partition.head)
        for file_slice in partition.file_slices:
            yield from read_slice_batches(table, file_slice, partition.snapshot, target,
                                          commit_range=partition.commit_range)


def pack_slices(slices: Sequence[FileSlice], parallelism: int | None = None
                ) -> list[list[FileSlice]]:
    """``slices`` in groups, each read by one task: as Spark packs files into splits.

    A group holds at most ``max(OPEN_COST_BYTES, min(MAX_PARTITION_BYTES, (bytes + slices *
    OPEN_COST_BYTES) / (2 * parallelism)))`` bytes, each slice counted with the open cost
    (two groups per core, so a slow slice leaves the other cores work); a larger slice is a
    group alone. ``parallelism``: the cores expected to read (default: this machine's, as
    ``local[*]``; the planning worker has no view of the cluster).
    Biggest slices first, each into the group it fits (first fit), so groups come out
    near even and in a stable order.
    """
    if len(slices) <= 1:
        return [list(slices)] if slices else []
    cores = max(1, parallelism or os.cpu_count() or 1)
    total = sum(s.total_size + OPEN_COST_BYTES for s in slices)
    limit = max(OPEN_COST_BYTES, min(MAX_PARTITION_BYTES, total // (2 * cores)))
    groups: list[list[FileSlice]] = []
    sizes: list[int] = []
    for file_slice in sorted(slices, key=lambda s: (-s.total_size, s.partition_path,
                                                    s.file_id)):
        cost = file_slice.total_size + OPEN_COST_BYTES
        for i, size in enumerate(sizes):
            if size + cost <= limit:
                groups[i].append(file_slice)
                sizes[i] += cost
                break
        else:
            groups.append([file_slice])
            sizes.append(cost)
    return groups


def read_slice_batches(table: HudiTable, file_slice: FileSlice, snapshot: str | None,
                       target: pa.Schema,
                       commit_range: IncrementalRange | None = None
                       ) -> Iterator[pa.RecordBatch]:
    """The rows of ``file_slice`` as of ``snapshot`` as batches of ``target``'s columns.

    A slice without log files needs no merge: its base file is streamed row group by row
    group, reading only the columns ``target`` names. Otherwise the table core's streamed
    merge reads the same way (plus the record key and ordering field), batch by batch.
    ``commit_range``: only the rows whose ``_hoodie_commit_time`` lies in it.

    Raises:
        HudiSqlError: a column does not convert to the type Spark declares.
    """
    base = file_slice.base_file
    if not file_slice.log_files and base is not None and base.path.endswith(".parquet"):
        with table.storage.open_input_file(base.path) as f:
            parquet = pq.ParquetFile(f)
            present = set(parquet.schema_arrow.names)
            columns = _with_commit_time([n for n in target.names if n in present], commit_range)
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns,
                                              use_threads=False):
                rows = _in_range(pa.Table.from_batches([batch]), commit_range)
                yield from conform(rows, target).to_batches()
        return
    from hudisql.table.read.merge import stream_file_slice

    schema = table.schema_as_of(snapshot)
    columns = _with_commit_time([n for n in target.names if n in schema.names], commit_range)
    # The logs are decoded up front; the base file then streams batch by batch, so the
    # first merged rows reach Spark before the slice is read to its end.
    chunks, _ = stream_file_slice(table.storage, table.properties, table.timeline, file_slice,
                                  as_of=snapshot, columns=columns, schema=schema,
                                  batch_rows=BATCH_ROWS,
                                  visible=None if commit_range is None
                                  else commit_range.visible(table))
    for chunk in chunks:
        yield from conform(_in_range(chunk, commit_range),
                           target).to_batches(max_chunksize=BATCH_ROWS)


def _with_commit_time(columns: list[str], commit_range: IncrementalRange | None) -> list[str]:
    """``columns``, plus the commit time when an incremental range is decided by it."""
    if commit_range is None or COMMIT_TIME_COLUMN in columns:
        return columns
    return [*columns, COMMIT_TIME_COLUMN]


def _in_range(rows: pa.Table, commit_range: IncrementalRange | None) -> pa.Table:
    """The rows of ``rows`` written in ``commit_range`` (all of them without one)."""
    if commit_range is None:
        return rows
    return rows.filter(commit_range.row_filter(rows.column(COMMIT_TIME_COLUMN)))


class HudiDataSource(DataSource):
    """The ``hudi`` format: reads Hudi tables (v6, v8, v9) by base path or catalog name.

    Options: ``path`` (the base path, or LOCATION), ``as.of.instant`` (time travel),
    Hudi's ``hoodie.datasource.query.type`` (``snapshot``, ``read_optimized``,
    ``incremental`` with ``hoodie.datasource.read.begin.instanttime``, ``...end.instanttime``
    and ``hoodie.datasource.query.incremental.format`` ``latest_state`` or ``cdc``),
    ``hudisql.read.where`` (a SQL predicate fixed for the relation: only the file slices that
    may hold matching rows are read, by partition paths and, unless
    ``hoodie.enable.data.skipping=false``, the metadata table's indexes; the rows of kept
    slices come back whole, so apply the same predicate with ``.where()``).
    """

    @classmethod
    def name(cls) -> str:
        """The format name, ``hudi``."""
        return "hudi"

    def schema(self) -> StructType:
        """The table's schema, meta columns first (a CDC query: Hudi's CDC columns).

        Raises:
            TableNotFoundError: no table at the path.
            ReadOptionError: a bad query type or incremental range (checked here, at
                ``load()``, so that nothing is planned for it). ``as.of.instant`` is not
                held to the timeline here: hudisql's own reads pass it the snapshot they
                planned (SQL's ``TIMESTAMP AS OF`` is checked before it gets here).
        """
        options = ReadOptions.parse(self.options, None)
        table = _open_path(options.path)
        if table.properties.is_metadata_table and options.query_type == INCREMENTAL:
            from hudisql.metadata.table_rows import refuse_metadata_query

            refuse_metadata_query(table, "an incremental query")
        if options.query_type == INCREMENTAL:
            from hudisql.table.read.incremental import resolve_range

            if options.begin is not None:  # a stream read has none (its offsets are the range)
                resolve_range(table, options.begin, options.end,
                              full_scan_fallback=options.full_scan_fallback)
            if options.is_cdc:
                return spark_schema(table, options.path, CDC_SCHEMA)
        return spark_schema(table, options.path)

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader of this table in ``schema`` (the catalog's or the table's own).

        Raises:
            ReadOptionError: a CDC query on a relation whose schema is the table's (a catalog
                table's ``WITH (...)`` options): its rows would not fit.
        """
        options = ReadOptions.parse(self.options, schema)
        if options.is_cdc and schema.fieldNames() != CDC_COLUMNS:
            raise ReadOptionError(
                f"a CDC query returns the columns {', '.join(CDC_COLUMNS)}, not the table's: "
                f"query it with hudi_table_changes('<table>', 'cdc', '<begin>') or "
                f"spark.read.format('hudi').load('{options.path}'), not with a catalog "
                "table's options")
        return HudiReader(options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``spark.readStream.format("hudi")``: each micro-batch an incremental query of the
        commits it covers (:mod:`hudisql.read.stream_source`)."""
        from hudisql.read.stream_source import HudiStreamReader

        return HudiStreamReader(self.options, schema)


def _open_path(path: str) -> HudiTable:
    from hudisql.table import HudiTable

    try:
        return HudiTable.open(path)
    except TableNotFoundError as exc:
        raise TableNotFoundError(
            f"{path} is not a Hudi table (no .hoodie/hoodie.properties); check the path given "
            f"to load() or LOCATION: {exc}"
        ) from exc
