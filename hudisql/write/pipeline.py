"""Writes as Spark jobs: stage keys, tag records with file groups, write slices on executors.

The driver plans and commits; executors do everything per record, in two Spark jobs:

1. *stage*: each record gets its record key and partition path, as Spark expressions
   (:mod:`hudisql.write.staging`: string, integer, boolean and date fields, whose Spark
   text is the core's) or else with the table core's key generator code (``mapInArrow``,
   persisted for the second job). One job counts records per partition path and null or
   empty keys: the touched partitions, an upper bound of their inserts, and refusals
   before any instant exists;
2. *existing keys* (Hudi's simple index) of the latest slices of the touched partitions:
   base-file-only slices through Spark's parquet reader, slices with logs merged by the
   core on executors (``mapInArrow``); or, for a write of at most
   ``hudisql.write.driver.lookup.max.records`` records, read and joined on the driver
   (:mod:`hudisql.write.driver_lookup`), the matches broadcast to the next step;
3. *tag*: a Spark join of the two; records without a file group (inserts) fill the
   partition's small file groups first (:mod:`hudisql.table.write.small_files`, Hudi's
   ``hoodie.parquet.small.file.limit``), the rest go to new file groups (per partition,
   ``ceil(inserts / max records per file)`` ids), by key hash. The inserts are counted
   by the driver's lookup (distinct keys no group holds, as Hudi's partitioner counts
   them), else bounded by the partition's records. An upsert's partition whose
   smallest file takes all its inserts (an *insert sink*, ``SIMPLE`` and ``BLOOM``) has
   that file's keys left out of the lookup: its records no other group holds go to the
   sink, whose write task tells updates from inserts as it reads the file anyway (so one
   small file group per partition, the common case, needs no key read and no join);
4. *write* (``repartition`` by file group into at most twice the cores, then
   ``mapInArrow``): each task sorts its rows by file group and writes each contiguous run
   as one file slice with the core's per-slice functions, returning their write stats.
   Where every file group is known on the driver (all but ``BUCKET`` and overwrites), the
   groups are dealt out to the tasks by estimated work (:mod:`hudisql.write.task_balance`)
   and an upsert's or insert's records travel slim: a group number in place of their
   key, partition path and file id, which the task computes again (:func:`_restored`). A
   merge-on-read small file that inserts reach is rewritten as a new base file (with its
   updates), as Hudi's writers do; other merge-on-read groups get a log file, whose data
   block is parquet unless ``hoodie.logfile.data.block.format=avro`` (encoded by Arrow in
   bulk; docs/FORMAT.md says why hudisql departs from Hudi's Avro default).

An upsert whose DataFrame has Hudi's boolean ``_hoodie_is_deleted`` column treats rows
marked ``true`` as deletes of their keys (merge-on-read: a delete block in the same log
file as the updates; copy-on-write: the rows are dropped from the rewritten base file), so
a MERGE with update and delete clauses is one commit. ``insert_overwrite`` and
``insert_overwrite_table`` write every row to new file groups (no key lookup) and complete
as a replacecommit naming the file groups they replace.

A keyless table (no record key fields, Hudi 0.14+) is staged with the rows' own
``_hoodie_record_key`` where they carry one (rows read from the table: updates, deletes)
and each row's Spark partition and row number; once the instant is open, missing keys are
generated as Hudi does, ``<instant>_<partition>_<row>`` (:mod:`hudisql.write.staging`).

A DML statement of a few rows skips the jobs: its rows, collected once, are staged, tagged
and written by the driver with the same functions (:mod:`hudisql.write.local_write`). On a
local master, an upsert or insert of up to two million records skips steps 2 to 4: after
the staging count, the records are collected once and written by the driver's threads
(:mod:`hudisql.write.driver_write`).

The :class:`~hudisql.txn.transaction.Transaction` wraps it all in Hudi's commit protocol.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import itertools
import json
import pickle
import posixpath
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel, TaskContext
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from hudisql.errors import WriteError
from hudisql.metadata.column_stats import table_ranges
from hudisql.metadata.participant import (
    MetadataTableParticipant,
    file_stats_columns,
    participants_for,
    row_change_columns,
)
from hudisql.metadata.records import ColumnRange
from hudisql.metadata.row_changes import RowChanges, log_write_changes, replaced_rows
from hudisql.progress import Progress, ProgressSink, progress_sink
from hudisql.table.format.commit_metadata import WriteStat
from hudisql.table.format.filenames import LogFileName, write_token
from hudisql.table.format.fsview import FileSlice, LogFile
from hudisql.table.format.log.format import DeleteRecord
from hudisql.table.format.schema import META_COLUMNS, avro_to_arrow
from hudisql.table.io.heap import keep_freed_memory
from hudisql.table.read.merge import read_file_slice
from hudisql.table.services.clustering import clustered_groups
from hudisql.table.services.compaction import pending_compaction_bases
from hudisql.table.table import HudiTable
from hudisql.table.write.files import (
    DEFAULT_COMPRESSION,
    avro_text,
    data_block_format,
    parquet_codec,
    write_base_file,
    write_log_file,
)
from hudisql.table.write.plan import NATURAL_ORDER_BRANCH, SliceWrite
from hudisql.table.write.records import (
    PARTITION_PATH,
    RECORD_KEY,
    conform_records,
    partition_paths,
    precombine,
    record_keys,
)
from hudisql.table.write.slices import check_writable, copy_on_write_merge, writer_schema
from hudisql.table.write.small_files import (
    INSERT_SPLIT_SIZE,
    SmallFile,
    SmallFileSettings,
    average_record_size,
    insert_sinks,
    small_files,
)
from hudisql.txn.schema_evolution import evolve_on_write
from hudisql.txn.transaction import (
    OVERWRITE_PARTITIONS,
    OVERWRITE_TABLE,
    StepHook,
    Transaction,
)
from hudisql.write.driver_lookup import driver_lookup_max_records, fits_driver, stored_matches
from hudisql.write.driver_write import MAX_BYTES as DRIVER_MAX_BYTES
from hudisql.write.driver_write import OPERATIONS as DRIVER_OPERATIONS
from hudisql.write.driver_write import (
    collect_staged,
    driver_max_records,
    local_master,
    record_bytes,
    tag_matched,
)
from hudisql.write.index_settings import BLOOM, BUCKET, SIMPLE, IndexSettings
from hudisql.write.local_write import (
    LOCAL_OPERATIONS,
    insert_shares,
    local_max_records,
    place_inserts,
    slices_fit,
    stage_rows,
    tag_rows,
)
from hudisql.write.progress import MarkerWatch
from hudisql.write.staging import (
    check_partition_paths,
    stage_in_jvm,
    stage_keyless,
    with_generated_keys,
)
from hudisql.write.tagging import (
    FILE_ID,
    TagContext,
    Tagged,
    overwrite_buckets,
    tag_records,
)
from hudisql.write.task_balance import balanced_tasks, task_column
from hudisql.write.task_profile import profiled

#: Operations and their ``operationType`` in commit metadata.
OPERATIONS = {"insert": "INSERT", "bulk_insert": "BULK_INSERT", "upsert": "UPSERT",
              "delete": "DELETE", "insert_overwrite": "INSERT_OVERWRITE",
              "insert_overwrite_table": "INSERT_OVERWRITE_TABLE"}
#: The overwrite operations and what they replace (a replacecommit).
OVERWRITES = {"insert_overwrite": OVERWRITE_PARTITIONS,
              "insert_overwrite_table": OVERWRITE_TABLE}
#: Hudi's delete marker column: an upserted row with ``true`` here deletes its key (other
#: operations drop such rows).
IS_DELETED = "_hoodie_is_deleted"
#: Records per new file group (Hudi's option; parsed with the small-file settings).
MAX_RECORDS_PER_FILE = INSERT_SPLIT_SIZE
#: Fault injection for tests: the first attempt of every write task fails after this many
#: files (deterministic: Spark retries the task, the retry succeeds).
FAULT_AFTER_FILES = "hudisql.write.fault.first.attempt.after.files"

_FILE_ID = FILE_ID
#: True on records small-file handling placed (inserts): a merge-on-read small file is
#: rewritten only when some reach it.
_INSERTED = "_hudisql_inserted"
#: Each record's partition's insert shares (file ids and their bounds), while placing inserts.
_TARGET = "_hudisql_insert_target"
#: A record's file group as a number (an index into the write's layout), shuffled instead
#: of its key, partition path and file id (:func:`_restored`).
_GROUP = "_hudisql_group"
#: A record's write task's repartition key (:mod:`hudisql.write.task_balance`), when the
#: records are not slim.
_TASK = "_hudisql_task"
_STATS_SCHEMA = StructType([StructField("stat", StringType()), StructField("attempt", LongType()),
                            StructField("changes", BinaryType()),
                            StructField("ranges", StringType())])
_STATS_ARROW = pa.schema([("stat", pa.string()), ("attempt", pa.int64()),
                          ("changes", pa.binary()), ("ranges", pa.string())])


@dataclass(frozen=True)
class WriteResult:
    """A completed Spark write: its instant, action and write stats."""

    instant_time: str
    action: str
    stats: list[WriteStat]


@dataclass(frozen=True)
class _TableSpec:
    """What executors need to know about the table (small and picklable)."""

    path: str
    name: str
    key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    hive_style: bool
    labelled: bool
    precombine_field: str | None
    is_mor: bool
    schema_text: str
    arrow_schema: pa.Schema
    compression: str = DEFAULT_COMPRESSION
    #: No record key fields: keys are given (``_hoodie_record_key``) or generated per write.
    keyless: bool = False
    #: The log files' data block format (``hoodie.logfile.data.block.format``).
    block_format: str = "parquet"


def _spec(table: HudiTable, options: Mapping[str, str]) -> _TableSpec:
    props = table.properties
    labelled = check_writable(table)
    avro, arrow = writer_schema(table)
    return _TableSpec(table.base_path, table.name, tuple(props.record_key_fields),
                      tuple(props.partition_fields), props.hive_style_partitioning, labelled,
                      props.precombine_field, props.is_mor, avro_text(avro), arrow,
                      parquet_codec(options, props), props.keyless,
                      data_block_format(options, props, table.name))


def _check_columns(df: DataFrame, spec: _TableSpec, operation: str) -> None:
    """Refuse a DataFrame whose columns do not fit the table (before anything is written)."""
    columns = {f.name: f for f in df.schema.fields if not f.name.startswith("_hoodie_")}
    where = f"table {spec.name}"
    needed = (list(spec.key_fields) + [p for p in spec.partition_fields if p in columns]
              if operation == "delete" else spec.arrow_schema.names)
    missing = [n for n in needed if n not in columns]
    if missing:
        raise WriteError(f"{where}: the DataFrame lacks the column(s) {missing}; its columns "
                         f"are {sorted(columns)}")
    unknown = [n for n in columns if spec.arrow_schema.get_field_index(n) < 0]
    if unknown and operation != "delete":
        raise WriteError(f"{where}: the DataFrame has column(s) {unknown} the table does not "
                         f"have; the table's columns are {spec.arrow_schema.names}")
    marker = next((f for f in df.schema.fields if f.name == IS_DELETED), None)
    if marker is not None and not isinstance(marker.dataType, BooleanType):
        raise WriteError(f"{where}: column {IS_DELETED!r} marks deletes and must be boolean, "
                         f"not {marker.dataType.simpleString()}; cast it first")
    for name in needed:
        # Spark's timestamps are instants: UTC in Arrow (pyspark refuses them without a zone).
        have = to_arrow_type(columns[name].dataType, timezone="UTC")
        want = spec.arrow_schema.field(name).type
        if not _fits(have, want):
            raise WriteError(f"{where}: column {name!r} is {columns[name].dataType.simpleString()}"
                             f" ({have}) in the DataFrame but {want} in the table; cast it first")


def _fits(have: pa.DataType, want: pa.DataType) -> bool:
    if have.equals(want):
        return True
    kinds = (pa.types.is_integer, pa.types.is_floating, pa.types.is_string,
             pa.types.is_timestamp, pa.types.is_decimal, pa.types.is_binary)
    if pa.types.is_integer(have) and pa.types.is_floating(want):
        return True
    return any(k(have) and k(want) for k in kinds)


def _check_keys(df: DataFrame, spec: _TableSpec) -> None:
    """Refuse null or empty record keys (a Spark job that stops at the first bad row)."""
    bad = " OR ".join(f"`{k}` IS NULL OR CAST(`{k}` AS STRING) = ''" for k in spec.key_fields)
    found = df.where(bad).select(*[F.col(f"`{k}`") for k in spec.key_fields]).limit(1).collect()
    if found:
        raise WriteError(f"table {spec.name}: a record has a null or empty record key field "
                         f"({', '.join(spec.key_fields)}): {found[0].asDict()}; every record "
                         "needs a key")


# -- executor functions ---------------------------------------------------------------------


def _stage_batches(spec: _TableSpec, with_partition: bool) -> Any:
    def stage(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keep_freed_memory()
        for batch in batches:
            table = pa.Table.from_batches([batch])
            keys = record_keys(table, spec.key_fields, spec.name, spec.labelled)
            if with_partition:
                parts = partition_paths(table, spec.partition_fields, spec.hive_style, spec.name)
            else:
                parts = pa.nulls(table.num_rows, pa.string())
            out = table.append_column(RECORD_KEY, keys).append_column(PARTITION_PATH, parts)
            yield from out.to_batches()
    return stage


def _write_slices(spec: _TableSpec, operation: str, instant: str,
                  slices: Mapping[tuple[str, str], FileSlice], fault_after: int | None,
                  expressions: Mapping[str, str] | None = None,
                  rewrite: frozenset[tuple[str, str]] = frozenset(),
                  change_columns: tuple[str, ...] | None = None,
                  stats_columns: tuple[str, ...] | None = None,
                  compacting: Mapping[tuple[str, str], str] | None = None,
                  sinks: frozenset[tuple[str, str]] = frozenset(),
                  layout: Sequence[tuple[str, str]] = ()) -> Any:
    """The write task. With ``change_columns`` (the table keeps a record or secondary
    index), each file group's :class:`RowChanges` go back with its write stat; with
    ``stats_columns`` (column or partition stats), each log file's column ranges (the
    metadata participant would otherwise decode it), pickled. ``compacting``: the file
    groups in a pending compaction and its instant (their log files go on its new slice).
    ``sinks``: insert sinks (:func:`~hudisql.table.write.small_files.insert_sinks`), whose
    records were not looked up: the task tells their updates from their inserts.
    ``layout``: the (partition, file id) of each group number, for records that come with
    a ``_GROUP`` number instead of their key, partition path and file id (the task
    computes their keys again: :func:`_restored`)."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keep_freed_memory()
        rows = [b for b in batches if b.num_rows]
        if not rows:
            return
        ctx = TaskContext.get()
        # No task context: a driver write (hudisql.write.local_write), one attempt.
        token = write_token(0, 0, 0) if ctx is None else write_token(
            ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId())
        attempt = 0 if ctx is None else ctx.attemptNumber()
        # One reordering, then each file group is a contiguous slice (no per-group filter).
        data = pa.Table.from_batches(rows)
        if _TASK in data.column_names:
            data = data.drop_columns([_TASK])
        slim = _GROUP in data.column_names
        data, groups = _grouped_by(data, _GROUP if slim else _FILE_ID)
        table = HudiTable.open(spec.path)
        start = 0
        for written, (value, count) in enumerate(groups, 1):
            group = data.slice(start, count)
            start += count
            if slim:
                if value is None:  # every record was given a group: a bug if not
                    raise WriteError(f"table {spec.name}: {count} record(s) reached the "
                                     f"write of {instant} without a file group")
                partition, file_id = layout[int(value)]
                group = _restored(group, spec, partition, file_id)
            else:
                file_id, partition = str(value), group.column(PARTITION_PATH)[0].as_py()
            if (partition, file_id) in sinks:
                group = _resolve_sink(table, slices[(partition, file_id)], group)
                if not group.num_rows:
                    continue
            yield pa.RecordBatch.from_pylist([_stat_row(*_write_group(
                table, spec, operation, instant, token, attempt, group,
                slices.get((partition, file_id)), partition, file_id, expressions,
                (partition, file_id) in rewrite, change_columns, stats_columns,
                (compacting or {}).get((partition, file_id))), attempt)], schema=_STATS_ARROW)
            if fault_after is not None and attempt == 0 and written >= fault_after:
                raise RuntimeError(f"injected failure after {written} file(s) of {instant}")
    return profiled(write)


def _stat_row(stat: WriteStat, changes: RowChanges | None, ranges: list[ColumnRange] | None,
              attempt: int) -> dict[str, Any]:
    """A written group's result row (:data:`_STATS_ARROW`), as :meth:`SparkWriter._results`
    reads it."""
    return {"stat": json.dumps(stat.to_dict()), "attempt": attempt,
            "changes": None if changes is None else changes.to_ipc(),
            "ranges": None if ranges is None else base64.b64encode(
                pickle.dumps(ranges)).decode("ascii")}


def _grouped_by(data: pa.Table, column: str) -> tuple[pa.Table, list[tuple[Any, int]]]:
    """``data``'s rows ordered by ``column`` (the file id or the group number; stably, as
    ``sort_by``), and each value with its row count, in that order.

    The values are few: their dictionary codes are sorted as integers and the rows taken
    once, about half the CPU of sorting the strings of every row (``Table.sort_by``).
    """
    data = data.combine_chunks()
    encoded = pc.dictionary_encode(data.column(column), null_encoding="encode").chunk(0)
    # Each code's place among the sorted values (nulls last, as sort_by puts them).
    rank = pc.rank(encoded.dictionary, sort_keys="ascending", tiebreaker="first").to_numpy() - 1
    codes = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=len(rank))
    values = pc.take(encoded.dictionary, pa.array(np.argsort(rank))).to_pylist()
    return data.take(pa.array(order)), [(v, int(n)) for v, n in zip(values, counts, strict=True)
                                        if n]


def _restored(group: pa.Table, spec: _TableSpec, partition: str, file_id: str) -> pa.Table:
    """A slim group's records with the columns the Spark stages dropped before the shuffle:
    their keys (the core's key generator, as the Arrow staging computes them; the JVM's
    staging is used only where it gives the same text), partition path and file id."""
    n = group.num_rows
    keys = record_keys(group, spec.key_fields, spec.name, spec.labelled)
    return group.drop_columns([_GROUP]).append_column(RECORD_KEY, keys).append_column(
        PARTITION_PATH, pa.repeat(pa.scalar(partition, pa.string()), n)).append_column(
        _FILE_ID, pa.repeat(pa.scalar(file_id, pa.string()), n))


def _resolve_sink(table: HudiTable, file_slice: FileSlice, group: pa.Table) -> pa.Table:
    """An insert sink's records, as tagging by lookup would have given them: its stored
    keys read (the slice is a base file alone), a record it does not hold is an insert
    (``_INSERTED``), and a delete of such a key is dropped (nothing to delete)."""
    stored = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                             columns=[RECORD_KEY]).column(RECORD_KEY).cast(pa.string())
    new = pc.invert(pc.is_in(group.column(RECORD_KEY), value_set=stored.combine_chunks()))
    if IS_DELETED in group.column_names:
        marked = pc.fill_null(group.column(IS_DELETED), False)
        keep = pc.invert(pc.and_(new, marked))
        group, new = group.filter(keep), new.filter(keep)
    if _INSERTED in group.column_names:
        group = group.drop_columns([_INSERTED])
    return group.append_column(_INSERTED, new)


def _write_group(table: HudiTable, spec: _TableSpec, operation: str, instant: str, token: str,
                 attempt: int, group: pa.Table, file_slice: FileSlice | None, partition: str,
                 file_id: str, expressions: Mapping[str, str] | None = None,
                 rewrite: bool = False, change_columns: tuple[str, ...] | None = None,
                 stats_columns: tuple[str, ...] | None = None,
                 new_slice: str | None = None,
                 ) -> tuple[WriteStat, RowChanges | None, list[ColumnRange] | None]:
    """Write one file group's part of the write in this task; returns its write stat,
    with ``change_columns`` its rows' changes, and with ``stats_columns`` the column
    ranges of the log file it wrote (None for base files: their footers have them).

    ``rewrite``: a merge-on-read small file, rewritten as a new base file (as
    copy-on-write slices always are) instead of getting a log file when inserts reach it.
    ``new_slice``: the instant of a pending compaction of the group: its log files go on
    the slice that compaction starts, as Hudi writes them (the compaction cannot hide them).
    """
    if _INSERTED in group.column_names:
        rewrite = rewrite and bool(pc.any(group.column(_INSERTED)).as_py())
        group = group.drop_columns([_INSERTED])
    storage = table.storage
    if operation == "delete":
        assert file_slice is not None
        keys = pc.unique(group.column(RECORD_KEY)).to_pylist()
        deletes = [DeleteRecord(k, partition, 0, NATURAL_ORDER_BRANCH) for k in keys]
        work = SliceWrite(partition, file_id, file_slice, deletes=deletes)
        records = None
    else:
        data = conform_records(group.drop_columns([RECORD_KEY, PARTITION_PATH, _FILE_ID]),
                               spec.arrow_schema, spec.name)
        n = data.num_rows
        nulls = pa.nulls(n, pa.string())
        marker = (group.column(IS_DELETED) if IS_DELETED in group.column_names
                  else pa.repeat(pa.scalar(False), n))
        staged = pa.Table.from_arrays(
            [nulls, nulls, group.column(RECORD_KEY), group.column(PARTITION_PATH), nulls,
             *data.columns, marker], names=[*META_COLUMNS, *data.column_names, IS_DELETED])
        combined = precombine(staged, spec.precombine_field, spec.name)
        # The batch's winner per key decides: a row marked deleted deletes the stored key.
        dead = pc.fill_null(combined.column(IS_DELETED), False)
        records = combined.filter(pc.invert(dead)).drop_columns([IS_DELETED])
        deletes = [DeleteRecord(k, partition, 0, NATURAL_ORDER_BRANCH)
                   for k in combined.filter(dead).column(RECORD_KEY).to_pylist()]
        if file_slice is None:
            deletes = []  # the driver drops deletes of absent keys: none reach new groups
        # Records of an existing group are updates, bar the inserts small-file handling
        # routes to it; only a log file needs the count (a rewrite counts for itself).
        updates = records.num_rows if file_slice is not None else 0
        work = SliceWrite(partition, file_id, file_slice, records=records, updates=updates,
                          deletes=deletes)
        if not records.num_rows:
            records = None
    cols = list(change_columns or ())
    if file_slice is None:
        assert records is not None
        changes = None if change_columns is None else RowChanges.of(
            None, records.select([RECORD_KEY, *cols]), cols)
        return write_base_file(storage, partition, file_id, instant, token, records,
                               spec.schema_text, compression=spec.compression), changes, None
    if spec.is_mor and not rewrite:
        base_file = file_slice.base_file.name if file_slice.base_file is not None else None
        if new_slice is not None:
            base_file = None  # the compaction's base file is not written yet
        stat = write_log_file(storage, partition, file_id, new_slice or file_slice.base_instant,
                              instant, token, records, spec.schema_text, deletes=work.deletes,
                              attempt=attempt, base_file=base_file, num_updates=work.updates,
                              expressions=expressions, block_format=spec.block_format,
                              compression=spec.compression,
                              named_by_instant=table.properties.version >= 8)
        ranges = None
        if (stats_columns is not None and len(stat.log_files or ()) == 1
                and not set(stats_columns) & set(META_COLUMNS)):
            # The data block's columns (an expression block's operands get no statistics).
            ranges = [] if records is None else table_ranges(
                records, [c for c in stats_columns if c not in (expressions or {})])
        if change_columns is None:
            return stat, None, ranges
        # The group's rows after the log, as the merged reader sees them (never decoded).
        return stat, log_write_changes(
            table, file_slice, instant, cols, records, [str(d.record_key) for d in work.deletes],
            _written_logs(stat, file_slice, token), expressions is not None), ranges
    merge = copy_on_write_merge(table, work)
    changes = None
    if change_columns is not None:
        # Only the rows the merge replaced, removed or added are compared.
        changes = replaced_rows(merge.stored, merge.replaced, merge.winners, merge.removed,
                                merge.inserts, cols)
    return write_base_file(storage, partition, file_id, instant, token, merge.rows,
                           spec.schema_text, prev_commit=file_slice.base_instant,
                           num_updates=merge.updated, num_deletes=merge.deleted,
                           compression=spec.compression), changes, None


def _written_logs(stat: WriteStat, file_slice: FileSlice, token: str) -> list[LogFile]:
    """The log files a write stat names, as the file-system view would list them."""
    out = []
    for name in stat.log_files or ():
        parsed = LogFileName.parse(name)
        assert parsed is not None
        path = posixpath.join(file_slice.partition_path, name) if file_slice.partition_path \
            else name
        out.append(LogFile(path, file_slice.file_id, parsed.base_instant, parsed.version,
                           parsed.write_token or token, 0))
    return out


# -- the driver -----------------------------------------------------------------------------


class SparkWriter:
    """Writes DataFrames to one Hudi table (version 6) as Spark jobs, one commit per call.

    Each write reports its progress (steps, file slices started) to ``progress``, else to
    the sink the ``hudisql.progress.display`` option picks (:func:`hudisql.progress.progress_sink`).
    """

    def __init__(self, spark: SparkSession, path: str, options: Mapping[str, str] | None = None,
                 on_step: StepHook | None = None, progress: ProgressSink | None = None) -> None:
        self.spark = spark
        self.path = path
        self.options = dict(options or {})
        self.on_step = on_step
        self.progress = progress
        self._index = IndexSettings()
        #: Column ranges of the log files the last write's tasks wrote, by path.
        self._file_stats: dict[str, list[ColumnRange]] = {}
        #: The records of the write in progress (from the staging job's counts), and the
        #: most records whose SIMPLE lookup joins on the driver (hudisql.write.driver_lookup).
        self._records = 0
        self._driver_lookup = 0

    def write(self, df: DataFrame, operation: str,
              expressions: Mapping[str, str] | None = None,
              rows: pa.Table | None = None) -> WriteResult:
        """Write ``df`` with ``operation`` as one commit; returns its instant, action and stats.

        Operations: ``insert``, ``bulk_insert``, ``upsert`` (rows whose boolean
        ``_hoodie_is_deleted`` is true delete their key, in the same commit), ``delete``,
        ``insert_overwrite`` (a replacecommit replacing the partitions ``df`` writes) and
        ``insert_overwrite_table`` (replacing every partition).

        ``expressions`` (column -> ``add`` | ``set``; an ``upsert`` on a merge-on-read
        table only) writes expression blocks (``hudisql.table.read.expressions``): each row
        carries its key and the named columns' operands, readers apply them to the stored
        row, and rows whose key the table does not hold are dropped (they update only).

        ``rows``: ``df``'s rows already collected, for a write :meth:`local_max_records`
        allows: staged, tagged and written by the driver (:mod:`hudisql.write.local_write`),
        no Spark job; ``df`` then only gives the schema.

        Raises:
            WriteError: unknown operation, or records that do not fit the table (nothing
                is written then).
            CommitConflictError: a concurrent write touched the same file groups.
        """
        op = operation.lower()
        if op not in OPERATIONS:
            raise WriteError(f"unknown write operation {operation!r}: use one of "
                             f"{', '.join(OPERATIONS)}")
        table = HudiTable.open(self.path)
        spec = _spec(table, self.options)
        evolved = None if op == "delete" else evolve_on_write(
            json.loads(spec.schema_text), None, spec.name, self.options,
            incoming=to_arrow_schema(df.schema, timezone="UTC"))
        if evolved is not None:  # the DataFrame adds columns: they are the writer schema's
            spec = dataclasses.replace(spec, schema_text=avro_text(evolved),
                                       arrow_schema=avro_to_arrow(evolved))
        _check_columns(df, spec, op)
        sizing = SmallFileSettings.parse(self.options, spec.name)  # refused before any instant
        self._driver_lookup = driver_lookup_max_records(self.options, spec.name)  # so is this
        driver_max = driver_max_records(self.options, spec.name)  # and this
        self._index = IndexSettings.resolve(  # so is a bad index type
            self.options, table, lookup=op != "bulk_insert" and op not in OVERWRITES)
        if expressions is not None and (op != "upsert" or not spec.is_mor):
            raise WriteError(f"table {spec.name}: expression writes are upserts to "
                             f"merge-on-read tables; this is {op} to a "
                             f"{'merge-on-read' if spec.is_mor else 'copy-on-write'} table")
        progress = Progress(f"{op} {spec.name}", self.progress or progress_sink(self.options),
                            steps=3)
        with progress:
            # Staging and its checks run before the instant opens: a refusal leaves no trace.
            progress.stage("staging records")
            local: pa.Table | None = None
            if rows is not None:
                local, counts = self._stage_local(rows, df, op, spec)
                staged, persisted = df, None
            else:
                staged, counts, persisted = self._stage(df, op, spec)
            try:
                # The metadata table (when the table has one) commits with the data instant.
                txn = Transaction(table, self.options, OPERATIONS[op],
                                  overwrite=OVERWRITES.get(op),
                                  participants=participants_for(table, self.options))
                if self.on_step is not None:
                    txn.on_step = self.on_step
                instant = txn.start()
                try:
                    if spec.keyless:
                        staged = with_generated_keys(staged, instant)
                    listed = None if local is not None else self._driver_slices(
                        op, spec, txn.table, counts, expressions, sizing, driver_max)
                    if local is not None:
                        stats, changes = self._tag_and_write_local(
                            local, counts, op, spec, txn.table, instant, expressions, sizing,
                            progress)
                    elif listed is not None:
                        stats, changes = self._tag_and_write_driver(
                            staged, counts, op, spec, txn.table, instant, sizing, progress, listed,
                            keyed_in_jvm=persisted is None)
                    else:
                        stats, changes = self._tag_and_write(
                            staged, counts, op, spec, txn.table, instant, expressions,
                            sizing, progress)
                    for participant in txn.participants:
                        if isinstance(participant, MetadataTableParticipant):
                            participant.changes = changes
                            participant.file_stats = self._file_stats
                    progress.stage("committing")
                    done = txn.commit(stats, spec.schema_text)
                except BaseException:
                    txn.abort()
                    raise
            finally:
                if persisted is not None:
                    persisted.unpersist()
        return WriteResult(done.timestamp, done.action, stats)

    def _stage(self, df: DataFrame, op: str, spec: _TableSpec
               ) -> tuple[DataFrame, dict[str | None, int], DataFrame | None]:
        """Key every record; one job counts records per partition and checks keys.

        Returns the staged frame, the record count of every partition path it touches (the
        partitions to look keys up in, an upper bound of their inserts) and the persisted
        frame to release after the write (Arrow staging: computed once for both jobs).

        Raises:
            WriteError: a null or empty record key, a partition value with ``/``.
        """
        with_partition = op != "delete" or all(p in df.columns for p in spec.partition_fields)
        persisted: DataFrame | None = None
        staged: DataFrame | None
        if spec.keyless:
            staged = persisted = stage_keyless(df, spec.partition_fields, spec.hive_style,
                                               with_partition, op, spec.name).persist(
                                                   StorageLevel.MEMORY_AND_DISK)
        else:
            # Keys and partition paths as Spark expressions when exact; else staged with Arrow.
            staged = stage_in_jvm(df, spec.key_fields, spec.partition_fields, spec.hive_style,
                                  spec.labelled, with_partition)
        in_jvm = staged is not None
        if staged is None:
            _check_keys(df, spec)  # the Arrow staging fails on a bad key: check first
            staged_schema = StructType([*df.schema.fields,
                                        StructField(RECORD_KEY, StringType()),
                                        StructField(PARTITION_PATH, StringType())])
            staged = persisted = df.mapInArrow(
                _stage_batches(spec, with_partition), staged_schema).persist(
                    StorageLevel.MEMORY_AND_DISK)
        if IS_DELETED in df.columns and op not in ("upsert", "delete"):
            # Only an upsert deletes; elsewhere a marked row is void.
            staged = staged.where(~F.coalesce(F.col(IS_DELETED), F.lit(False)))
        bad = F.lit(False)
        for key in spec.key_fields:
            bad = bad | F.col(f"`{key}`").isNull() | (F.col(f"`{key}`").cast("string") == "")
        try:
            rows = staged.groupBy(PARTITION_PATH).agg(
                F.count(F.lit(1)).alias("n"), F.sum(bad.cast("long")).alias("bad")).collect()
            if any(r["bad"] for r in rows):
                _check_keys(df, spec)  # raises, naming a bad record
            counts = {r[PARTITION_PATH]: int(r["n"]) for r in rows}
            self._records = sum(counts.values())
            if in_jvm and with_partition:
                check_partition_paths(counts, spec.partition_fields, spec.name)
        except BaseException:
            if persisted is not None:
                persisted.unpersist()
            raise
        return staged, counts, persisted

    def _tag_and_write(self, staged: DataFrame, counts: Mapping[str | None, int], op: str,
                       spec: _TableSpec, table: HudiTable, instant: str,
                       expressions: Mapping[str, str] | None, sizing: SmallFileSettings,
                       progress: Progress
                       ) -> tuple[list[WriteStat], dict[tuple[str, str], RowChanges]]:
        with_partition = op != "delete" or all(
            p in staged.columns for p in spec.partition_fields)
        marked = IS_DELETED in staged.columns and op != "delete"
        tagging: Tagged | None = None
        bucketed = self._index.index_type == BUCKET
        compacting = pending_compaction_bases(table.timeline) if spec.is_mor else {}
        sinks: dict[str, SmallFile] = {}
        sunk: frozenset[tuple[str, str]] = frozenset()
        small: dict[str, list[SmallFile]] = {}
        if op in OVERWRITES and bucketed:  # new file groups, one per bucket
            tagged = overwrite_buckets(staged, self._index, [str(p) for p in counts])
            slices: dict[tuple[str, str], FileSlice] = {}
        elif op in OVERWRITES or (op == "bulk_insert" and not bucketed):
            tagged = staged.withColumn(_FILE_ID, F.lit(None).cast("string"))
            slices = {}
        else:
            touched = [str(p) for p in counts] if with_partition else None
            listed = table.file_slices(partitions=touched) if touched is not None else (
                table.file_slices())
            if op in ("upsert", "insert") and not bucketed:
                small = self._small_files(listed, table, spec, sizing)
            if (op == "upsert" and expressions is None and touched is not None
                    and self._index.index_type in (SIMPLE, BLOOM)):
                sinks = insert_sinks(counts, small)
            sunk = frozenset((p, f.file_slice.file_id) for p, f in sinks.items())
            tagging = self._tag(staged, spec, table, touched, listed, sunk)
            tagged, slices = tagging.frame, tagging.slices
            if sinks:  # the records of a sink's partition that no other group holds
                tagged = tagged.withColumn(_FILE_ID, F.coalesce(F.col(_FILE_ID), F.create_map(
                    *[F.lit(v) for p, f in sinks.items() for v in (p, f.file_slice.file_id)]
                )[F.col(PARTITION_PATH)]))
        if op == "insert":
            stored = (tagging.stored() if tagging is not None and tagging.stored is not None
                      else tagged.where(F.col(_FILE_ID).isNotNull()))
            dup = stored.select(RECORD_KEY).limit(1).collect()
            if dup:
                raise WriteError(f"table {spec.name}: record key {dup[0][0]!r} is already in "
                                 "the table; insert adds new records only: use upsert")
        new_groups = 0
        shares: dict[tuple[str, str], int] = {}  # inserts each group takes (expected)
        rewrite: frozenset[tuple[str, str]] = frozenset()
        if op == "delete" or expressions is not None:  # an expression updates stored keys only
            tagged = tagged.where(F.col(_FILE_ID).isNotNull())
        else:
            if marked:  # deletes of keys the table does not hold: nothing to do
                tagged = tagged.where(F.col(_FILE_ID).isNotNull()
                                      | ~F.coalesce(F.col(IS_DELETED), F.lit(False)))
            if tagging is not None and tagging.place is not None:
                # The index places inserts (BUCKET): no small-file handling, as in Hudi.
                tagged, new_groups = tagging.place(tagged)
            else:
                if spec.is_mor:  # in a sink's partition, only the sink takes inserts
                    rewrite = frozenset((p, f.file_slice.file_id)
                                        for p, files in small.items() for f in files
                                        if p not in sinks or f == sinks[p])
                if rewrite - sunk:  # sinks' tasks tell their inserts themselves
                    tagged = tagged.withColumn(_INSERTED, F.col(_FILE_ID).isNull())
                # A sink's partition has no record left without a file group. The lookup's
                # count of inserts where it made one, else the records (updates included).
                inserts = (tagging.inserts if tagging is not None
                           and tagging.inserts is not None else counts)
                tagged, new_groups, shares = self._assign_new_groups(
                    tagged, {p: n for p, n in inserts.items() if p not in sinks}, small,
                    sizing.insert_split_size)
                shares.update({(p, f.file_slice.file_id): counts.get(p, 0)
                               for p, f in sinks.items()})
        # Every file group in one task; no more tasks than groups or than twice the cores
        # (a task writes its groups one after the other: per-task start-up is the cost).
        groups = max(1, min(len(slices) + new_groups, 2 * self._parallelism()))
        key = F.col(_FILE_ID)
        layout: list[tuple[str, str]] = []
        numbered = self._numbered(op, tagging, slices, counts, shares, rewrite, spec,
                                  average_record_size(table.timeline, sizing))
        if numbered is not None:
            # Every file group is known here: each has a number, the groups are dealt out
            # to the tasks by their estimated work (hudisql.write.task_balance), and the
            # records of upserts and inserts go to them slim: the group's number instead
            # of their key, partition path and file id (a third less to shuffle and hand
            # to Python on the benchmark).
            layout, number, work = numbered
            placed = balanced_tasks({i: work[g] for i, g in enumerate(layout)}, groups)
            if op != "delete" and expressions is None and not spec.keyless:
                tagged = tagged.withColumn(_GROUP, number).drop(
                    RECORD_KEY, PARTITION_PATH, _FILE_ID)
                key = task_column(placed, groups, F.col(_GROUP))
            else:  # a column of its own: Spark refuses a lambda in a repartition key
                layout = []
                tagged = tagged.withColumn(_TASK, task_column(placed, groups, number))
                key = F.col(_TASK)
        fault = self.options.get(FAULT_AFTER_FILES)
        writer = _write_slices(spec, op, instant, slices, int(fault) if fault else None,
                               expressions, rewrite, row_change_columns(table),
                               file_stats_columns(table), compacting, sunk, layout)
        out = tagged.repartition(groups, key).mapInArrow(writer, _STATS_SCHEMA)
        # At most this many file groups: the touched partitions' slices and the new ids.
        progress.stage("writing file slices", total=len(slices) + new_groups)
        with MarkerWatch(progress, table.storage, instant):
            rows = out.collect()
        return self._results([r.asDict() for r in rows], progress)

    def _numbered(self, op: str, tagging: Tagged | None,
                  slices: Mapping[tuple[str, str], FileSlice], counts: Mapping[str | None, int],
                  shares: Mapping[tuple[str, str], int], rewrite: frozenset[tuple[str, str]],
                  spec: _TableSpec, record_size: float
                  ) -> tuple[list[tuple[str, str]], Column, dict[tuple[str, str], float]] | None:
        """The file groups a write's records can go to, when all are known on the driver:
        their (partition, file id) in number order, each record's group number, and each
        group's estimated work. None for overwrites and bulk inserts (new groups made in
        Spark), and when two partitions share a file id (a number per file id would merge
        them)."""
        if op not in ("upsert", "insert", "delete") or tagging is None:
            return None
        if tagging.numbered is not None:  # the index names every group (BUCKET)
            layout, number = tagging.numbered
            return layout, number, _group_work(layout, slices, counts, shares, tagging.held,
                                               rewrite, not spec.is_mor, record_size)
        if tagging.place is not None:  # the index names new groups in Spark alone
            return None
        layout = sorted({*slices, *shares})
        if len({fid for _, fid in layout}) != len(layout):
            return None
        number = F.create_map(*[v for i, (_, fid) in enumerate(layout)
                                for v in (F.lit(fid), F.lit(i))])[F.col(_FILE_ID)]
        return layout, number, _group_work(layout, slices, counts, shares, tagging.held,
                                           rewrite, not spec.is_mor, record_size)

    def _results(self, rows: list[dict[str, Any]], progress: Progress
                 ) -> tuple[list[WriteStat], dict[tuple[str, str], RowChanges]]:
        """The write stats and row changes of the write tasks' result rows."""
        stats = [WriteStat.from_dict(json.loads(r["stat"])) for r in rows]
        # Row changes computed in the tasks, for the metadata participant (none: it reads).
        changes = {(s.partition_path or "", s.file_id): RowChanges.from_ipc(bytes(r["changes"]))
                   for s, r in zip(stats, rows, strict=True) if r["changes"] is not None}
        # Log files' column ranges computed in the tasks (the participant reads the others).
        self._file_stats = {s.path: pickle.loads(base64.b64decode(r["ranges"]))
                            for s, r in zip(stats, rows, strict=True)
                            if r["ranges"] is not None and s.path}
        written = len({(s.partition_path, s.file_id) for s in stats})
        progress.update(written, total=written)
        return stats, changes

    # -- small writes in the driver (hudisql.write.local_write) -----------------------------

    def local_max_records(self, operation: str,
                          expressions: Mapping[str, str] | None = None) -> int:
        """The most records a write of ``operation`` may write from the driver (pass them
        to :meth:`write` as ``rows``); 0 when this write must run as Spark jobs: the
        option says so, a keyless table, the ``BUCKET`` index, an operation other than
        insert, upsert (expression writes too) and delete, injected task faults, or a table
        whose latest slices are too large for the driver to read their keys."""
        op = operation.lower()
        if op not in LOCAL_OPERATIONS or self.options.get(FAULT_AFTER_FILES):
            return 0
        table = HudiTable.open(self.path)
        limit = local_max_records(self.options, table.name)
        if not limit or table.properties.keyless:
            return 0
        try:
            index = IndexSettings.resolve(self.options, table)
        except WriteError:
            return 0  # the Spark write refuses it, naming why
        if index.index_type == BUCKET or not slices_fit(table.file_slices()):
            return 0
        return limit

    def _stage_local(self, rows: pa.Table, df: DataFrame, op: str, spec: _TableSpec
                     ) -> tuple[pa.Table, dict[str | None, int]]:
        """``rows`` staged in the driver as :meth:`_stage` stages them in Spark."""
        with_partition = op != "delete" or all(p in df.columns for p in spec.partition_fields)
        if IS_DELETED in rows.column_names and op not in ("upsert", "delete"):
            rows = rows.filter(pc.invert(pc.fill_null(rows.column(IS_DELETED), False)))
        return stage_rows(rows, spec.key_fields, spec.partition_fields, spec.hive_style,
                          spec.labelled, with_partition, spec.name)

    def _tag_and_write_local(self, staged: pa.Table, counts: Mapping[str | None, int],
                             op: str, spec: _TableSpec, table: HudiTable, instant: str,
                             expressions: Mapping[str, str] | None,
                             sizing: SmallFileSettings, progress: Progress
                             ) -> tuple[list[WriteStat], dict[tuple[str, str], RowChanges]]:
        """:meth:`_tag_and_write` in the driver, with the same tags, placement and files."""
        with_partition = op != "delete" or all(
            p in staged.column_names for p in spec.partition_fields)
        head = table.timeline.last_completed()
        touched = [str(p) for p in counts] if with_partition else None
        tagged, slices = tag_rows(table, staged, touched, head.timestamp if head else None)
        return self._write_from_driver(tagged, slices, op, spec, table, instant, expressions,
                                       sizing, progress)

    def _driver_slices(self, op: str, spec: _TableSpec, table: HudiTable,
                       counts: Mapping[str | None, int], expressions: Mapping[str, str] | None,
                       sizing: SmallFileSettings, limit: int) -> list[FileSlice] | None:
        """The touched partitions' latest slices when the driver writes this write's
        records (:mod:`hudisql.write.driver_write`), else None: the Spark tasks write."""
        records = sum(counts.values())
        if (not limit or records > limit or op not in DRIVER_OPERATIONS
                or expressions is not None or spec.keyless
                or self._index.index_type not in (SIMPLE, BUCKET)
                or (self._index.index_type == BUCKET and op != "upsert")
                or self.options.get(FAULT_AFTER_FILES)
                or any(p is None for p in counts)
                or local_master(self.spark.conf.get("spark.master", None)) is None):
            return None
        # What the base files hold per record (no estimate: 0 when none was written).
        stored = average_record_size(table.timeline, dataclasses.replace(
            sizing, limit=0, record_size_estimate=0))
        if records * record_bytes(spec.arrow_schema, stored) > DRIVER_MAX_BYTES:
            return None
        listed = table.file_slices(partitions=[str(p) for p in counts])
        # BUCKET reads no stored key: only SIMPLE's lookup is bounded by the slices' bytes.
        return listed if self._index.index_type == BUCKET or fits_driver(
            records, limit, listed) else None

    def _tag_and_write_driver(self, staged: DataFrame, counts: Mapping[str | None, int],
                              op: str, spec: _TableSpec,
                              table: HudiTable, instant: str, sizing: SmallFileSettings,
                              progress: Progress, listed: list[FileSlice], keyed_in_jvm: bool
                              ) -> tuple[list[WriteStat], dict[tuple[str, str], RowChanges]]:
        """The staged records collected (Spark's one job) while the driver reads the stored
        keys of ``listed``, tagged and written by the driver (:mod:`hudisql.write.driver_write`).
        ``BUCKET`` reads no key: the records come with their group's number, computed by
        Spark as its tasks' map stage would. ``keyed_in_jvm``: ``staged`` has its keys as
        Spark expressions (:func:`~hudisql.write.driver_write.collect_staged`)."""

        def collect(frame: DataFrame) -> pa.Table:
            return collect_staged(frame, spec.key_fields, spec.partition_fields,
                                  spec.hive_style, spec.labelled, spec.name, keyed_in_jvm)

        if self._index.index_type == BUCKET:
            tagging = self._tag(staged, spec, table, [str(p) for p in counts], listed)
            assert tagging.numbered is not None
            layout, number = tagging.numbered
            # The group number alone (one bucket hash per record): the driver knows which
            # numbered groups are stored.
            return self._write_from_driver(
                collect(staged.withColumn(_GROUP, number)), tagging.slices, op, spec,
                table, instant, None, sizing, progress, layout)
        rows, inserts, found = stored_matches(table, listed, lambda: collect(staged))
        return self._write_from_driver(
            tag_matched(rows, found, _FILE_ID),
            {(s.partition_path, s.file_id): s for s in listed}, op, spec, table, instant, None,
            sizing, progress, inserts=inserts)

    def _write_from_driver(self, tagged: pa.Table, slices: dict[tuple[str, str], FileSlice],
                           op: str, spec: _TableSpec, table: HudiTable, instant: str,
                           expressions: Mapping[str, str] | None,
                           sizing: SmallFileSettings, progress: Progress,
                           layout: Sequence[tuple[str, str]] | None = None,
                           inserts: Mapping[str, int] | None = None,
                           ) -> tuple[list[WriteStat], dict[tuple[str, str], RowChanges]]:
        """Tagged records (``_FILE_ID`` null: no group holds the key) placed and written by
        the driver, each file group by one of a pool of threads (as many as Spark's cores).

        ``layout``: the index placed every record (``BUCKET``): its group is
        ``layout[_GROUP]`` (no small-file handling, as in Hudi), stored or new.
        ``inserts``: per partition, the distinct keys of ``tagged`` no group holds, as the
        lookup counted them (counted here when not given, or when rows mark deletes)."""
        if layout is not None:  # the records' stored groups: the numbered ones that exist
            ids = _numbered_ids(layout, tagged)
            held = pc.is_in(ids, value_set=pa.array([g[1] for g in layout if g in slices],
                                                     pa.string()))
            tagged = tagged.append_column(_FILE_ID,
                                          pc.if_else(held, ids, pa.scalar(None, pa.string())))
        stored = pc.is_valid(tagged.column(_FILE_ID))
        if op == "insert" and pc.any(stored).as_py():
            key = tagged.filter(stored).column(RECORD_KEY)[0].as_py()
            raise WriteError(f"table {spec.name}: record key {key!r} is already in "
                             "the table; insert adds new records only: use upsert")
        rewrite: frozenset[tuple[str, str]] = frozenset()
        new_groups = 0
        if op == "delete" or expressions is not None:  # an expression updates stored keys
            tagged = tagged.filter(stored)
        else:
            if IS_DELETED in tagged.column_names:  # deletes of absent keys: nothing to do
                marked = pc.fill_null(tagged.column(IS_DELETED), False)
                tagged = tagged.filter(pc.or_kleene(stored, pc.invert(marked)))
        if layout is not None:
            tagged = tagged.set_column(tagged.schema.get_field_index(_FILE_ID), _FILE_ID,
                                       _numbered_ids(layout, tagged)).drop_columns([_GROUP])
            new_groups = len({g for g in layout if g not in slices})
        elif op != "delete" and expressions is None:
            small = self._small_files(list(slices.values()), table, spec, sizing)
            if spec.is_mor:
                rewrite = frozenset((p, f.file_slice.file_id)
                                    for p, files in small.items() for f in files)
            if rewrite:
                tagged = tagged.append_column(_INSERTED, pc.is_null(tagged.column(_FILE_ID)))
            if inserts is None or IS_DELETED in tagged.column_names:
                # The inserts, counted as the Spark writer's lookup counts them: distinct
                # keys that no file group holds, per partition (without the absent keys'
                # deletes dropped above).
                counted = tagged.filter(pc.is_null(tagged.column(_FILE_ID))).group_by(
                    PARTITION_PATH).aggregate([(RECORD_KEY, "count_distinct")])
                inserts = dict(zip(counted.column(PARTITION_PATH).to_pylist(),
                                   counted.column(f"{RECORD_KEY}_count_distinct").to_pylist(),
                                   strict=True))
            tagged, new_groups = place_inserts(tagged, inserts, small, sizing.insert_split_size)
        progress.stage("writing file slices", total=len(slices) + new_groups)
        compacting = pending_compaction_bases(table.timeline) if spec.is_mor else {}
        change_columns, stats_columns = row_change_columns(table), file_stats_columns(table)
        # Each group's rows, taken by the thread that writes it: (partition, file id) ->
        # the rows' positions, from one stable sort of the groups' numbers.
        encoded = pc.dictionary_encode(tagged.column(_FILE_ID)).combine_chunks()
        if encoded.indices.null_count:  # every record was given a group: a bug if not
            raise WriteError(f"table {spec.name}: {encoded.indices.null_count} record(s) "
                             f"reached the write of {instant} without a file group")
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        order = np.argsort(codes, kind="stable")
        ends = np.cumsum(np.bincount(codes, minlength=len(encoded.dictionary)))
        paths = tagged.column(PARTITION_PATH).combine_chunks()
        groups = []
        for code, file_id in enumerate(encoded.dictionary.to_pylist()):
            at = order[ends[code - 1] if code else 0:ends[code]]
            groups.append(((paths[int(at[0])].as_py(), file_id), at))
        # Heaviest first (the work estimate the Spark writer deals tasks by), so that no
        # thread is left with a large group at the end.
        record_size = average_record_size(table.timeline, sizing)
        groups.sort(key=lambda g: -_work(slices.get(g[0]), len(g[1]),
                                         not spec.is_mor or g[0] in rewrite, record_size))
        token = write_token(0, 0, 0)  # a driver write: one attempt
        opened = threading.local()  # each thread's own table, opened once, as a task's

        def write(group: tuple[tuple[str, str], np.ndarray]) -> dict[str, Any]:
            (partition, file_id), at = group
            key = (partition, file_id)
            if not hasattr(opened, "table"):
                opened.table = HudiTable.open(spec.path)
            return _stat_row(*_write_group(
                opened.table, spec, op, instant, token, 0,
                tagged.take(pa.array(at)), slices.get(key), partition, file_id, expressions,
                key in rewrite, change_columns, stats_columns, compacting.get(key)), 0)

        threads = min(len(groups), self._parallelism())
        with MarkerWatch(progress, table.storage, instant):
            if threads <= 1:
                written = [write(g) for g in groups]
            else:
                with ThreadPoolExecutor(threads, thread_name_prefix="hudisql-write") as pool:
                    written = list(pool.map(write, groups))
        return self._results(written, progress)

    def _tag(self, staged: DataFrame, spec: _TableSpec, table: HudiTable,
             touched: list[str] | None, listed: list[FileSlice] | None = None,
             skip: frozenset[tuple[str, str]] = frozenset()) -> Tagged:
        """The records tagged by the write's index (:mod:`hudisql.write.tagging`)."""
        return tag_records(self._index, TagContext(
            self.spark, table, self._parallelism(), self._records, self._driver_lookup),
            staged, touched, listed, skip)

    @staticmethod
    def _small_files(slices: list[FileSlice], table: HudiTable, spec: _TableSpec,
                     sizing: SmallFileSettings) -> dict[str, list[SmallFile]]:
        """The small files among ``slices`` that take inserts, never a group being
        clustered or compacted (as Hudi's small files)."""
        held = clustered_groups(table.timeline) | set(
            pending_compaction_bases(table.timeline) if spec.is_mor else {})
        return small_files([s for s in slices if (s.partition_path, s.file_id) not in held],
                           spec.is_mor, sizing, average_record_size(table.timeline, sizing))

    def _parallelism(self) -> int:
        """Spark's default parallelism, from the session's configuration (no SparkContext,
        so that it works on Spark Connect): ``spark.default.parallelism``; else a local
        master's threads (``local[N]``, ``local[*]``: the cores); else a cluster's
        ``spark.executor.instances`` x ``spark.executor.cores``; else
        ``spark.sql.shuffle.partitions``."""
        conf = self.spark.conf
        configured = conf.get("spark.default.parallelism", None)
        if configured:
            return max(1, int(configured))
        threads = local_master(conf.get("spark.master", None))
        if threads is not None:
            return threads
        instances = conf.get("spark.executor.instances", None)
        cores = conf.get("spark.executor.cores", None)
        if instances and cores:
            return max(2, int(instances) * int(cores))
        return max(2, int(conf.get("spark.sql.shuffle.partitions", None) or "200"))

    def _assign_new_groups(self, tagged: DataFrame, counts: Mapping[str | None, int],
                           small: Mapping[str, list[SmallFile]], per_file: int
                           ) -> tuple[DataFrame, int, dict[tuple[str, str], int]]:
        """Untagged records (inserts) to small file groups, then to new ones, per partition.

        ``counts``: an upper bound of each partition's inserts (distinct keys found in no
        file group, when the lookup counted them; else its records, updates included),
        known without another job. Each of the partition's ``small`` files
        (:mod:`hudisql.table.write.small_files`) gets a share of that bound up to its
        capacity, the rest is spread over new file ids of ``per_file`` records; a record's
        share is picked by the hash of its key. A small file thus takes about its share of
        the actual inserts (fewer than its capacity when the bound exceeds them; above it
        only by hash variance, as with Hudi's weighted buckets); new ids that get no record
        write nothing. A partition with no insert is left out (its records all have groups).
        Returns the tagged frame, how many new file ids it may use and each (partition,
        file id)'s share.
        """
        plans: list[tuple[str | None, list[str], list[int]]] = []
        total = 0
        taken: dict[tuple[str, str], int] = {}
        for partition, count in counts.items():
            if count <= 0:
                continue
            # Ordered shares: (file id, records); a record's hash slot below the running
            # sum of the shares picks the file id.
            shares, new_ids = insert_shares(
                count, small.get(partition, []) if partition is not None else [], per_file)
            total += new_ids
            if partition is not None:  # (records of no partition are deletes: no share)
                taken.update(((partition, fid), n) for fid, n in shares)
            plans.append((partition, [fid for fid, _ in shares],
                          list(itertools.accumulate(size for _, size in shares))))
        if not plans:
            return tagged, 0, taken
        # Every partition's ids and bounds padded to one width (the last repeated), so that
        # the share's index is a sum of comparisons: plain expressions Spark compiles. (A
        # higher-order function such as filter() is interpreted: about 0.15 s more per
        # million records.)
        width = max(len(ids) for _, ids, _ in plans)
        pairs: list[Any] = []
        for partition, ids, bounds in plans:
            pad = width - len(ids)
            pairs += [F.lit(partition), F.struct(
                F.array(*[F.lit(fid) for fid in ids + ids[-1:] * pad]).alias("ids"),
                F.array(*[F.lit(b) for b in bounds + bounds[-1:] * pad]).alias("bounds"))]
        target = F.col(_TARGET)
        if width == 1:
            chosen = target["ids"][0]
        else:
            slot = F.pmod(F.xxhash64(F.col(RECORD_KEY)), target["bounds"][width - 1])
            # 0-based index of the first bound above the record's slot.
            index = sum(((slot >= target["bounds"][i]).cast("int") for i in range(width - 1)),
                        F.lit(0))
            chosen = F.element_at(target["ids"], index + 1)
        return tagged.withColumn(_TARGET, F.create_map(*pairs)[F.col(PARTITION_PATH)]).withColumn(
            _FILE_ID, F.coalesce(F.col(_FILE_ID), chosen)).drop(_TARGET), total, taken


def _group_work(groups: Sequence[tuple[str, str]], slices: Mapping[tuple[str, str], FileSlice],
                counts: Mapping[str | None, int], shares: Mapping[tuple[str, str], int],
                held: Mapping[tuple[str, str], int] | None,
                rewrite: frozenset[tuple[str, str]], copy_on_write: bool,
                record_size: float) -> dict[tuple[str, str], float]:
    """Each of the (partition, file id) ``groups``' estimated write work, in bytes
    (:mod:`hudisql.write.task_balance`): the records it gets, times ``record_size`` (its
    updates as the lookup counted them, else an even part of its partition's records,
    none for a new group that takes a share of the inserts; plus that share); plus its
    base file when the task rewrites it (copy-on-write, or a small file taking inserts)."""
    per_partition = collections.Counter(partition for partition, _ in groups)
    work: dict[tuple[str, str], float] = {}
    for group in groups:
        file_slice = slices.get(group)
        inserts = shares.get(group, 0)
        if held is not None:
            updates: float = held.get(group, 0)
        elif file_slice is None and group in shares:  # a new group takes inserts only
            updates = 0
        else:
            updates = counts.get(group[0], 0) / per_partition[group[0]]
        work[group] = _work(file_slice, updates + inserts,
                            copy_on_write or (group in rewrite and inserts > 0), record_size)
    return work


def _numbered_ids(layout: Sequence[tuple[str, str]], records: pa.Table) -> pa.Array:
    """The file id of each record's ``_GROUP`` number in ``layout``."""
    return pa.array([fid for _, fid in layout], pa.string()).take(
        records.column(_GROUP).combine_chunks())


def _work(file_slice: FileSlice | None, records: float, rewritten: bool,
          record_size: float) -> float:
    """A file group's estimated write work, in bytes: its records times ``record_size``,
    plus its base file when the write rewrites it."""
    base = file_slice.base_file if file_slice is not None else None
    return (base.size if rewritten and base is not None else 0) + records * record_size
