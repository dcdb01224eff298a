"""Snapshot reads that leave the bulk of the rows to Spark's own parquet reader.

A merge-on-read snapshot is every base row whose key no visible log block touches, plus
the merged rows of the keys the logs do touch. Base rows are plain parquet: Spark's
vectorized reader scans them with column pruning and no Python in the way.
:func:`snapshot_frame` plans one snapshot instant and sorts its file slices (:func:`plan_snapshot`):

* a slice that is a parquet base file alone: read by Spark's parquet reader (as Hudi's own
  Spark reader treats file groups without logs);
* a slice with log files and a parquet base file: merged by Spark
  (:mod:`hudisql.read.log_merge`): its logs decoded on the driver into one outcome per
  record key, its base file read by Spark's parquet reader minus the rows the logs
  supersede (a broadcast anti-join on file name and row position), union the log records
  that win. Up to :data:`MAX_MERGED_KEYS` touched keys and :data:`MAX_MERGED_BYTES` of
  decoded log records in all; :data:`SPLIT_TOUCHED` ``=false`` turns it off;
* read whole by the ``hudi`` data source (named in :data:`hudisql.read.options.SLICES`):
  slices with expression blocks (applied to the whole slice), log files without a base
  file, the slices beyond those budgets, and every slice when Spark cannot open the
  table's files.

Both parts read the same snapshot: the data source is given the instant and the slices.
The rows are exactly the data source's; ``tests/read/test_snapshot.py`` checks that on
every fixture and on tables with updates, deletes, stale updates, rollbacks and evolution.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.types import StructField, StructType

from hudisql.read.dataframe_reader import data_source_only
from hudisql.read.datasource import spark_schema
from hudisql.read.local import LOCAL_MAX_BYTES, local_frame, max_bytes
from hudisql.read.log_merge import MergedSlice, base_read, merged_frames
from hudisql.read.options import (
    AS_OF_INSTANT,
    SLICES,
    WHERE,
    data_skipping_enabled,
    normalize_instant,
)
from hudisql.read.pruning import SliceSelection, select_slices
from hudisql.read.spark_files import spark_opens
from hudisql.table.format.fsview import base_files_only
from hudisql.table.read.log_changes import log_changes, touched_base_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudisql.table.format.fsview import FileSlice
    from hudisql.table.table import HudiTable

#: Above this many touched keys in all, further slices with logs are read whole by the data
#: source (the losing positions travel to every task in a broadcast).
MAX_MERGED_KEYS = 2_000_000
#: Above this many bytes of winning log records in all, likewise (they are held on the
#: driver and handed to Spark as a local relation).
MAX_MERGED_BYTES = 256 << 20
#: The read option that merges slices with log files by Spark (default ``true``; ``false``:
#: they are read whole by the data source).
SPLIT_TOUCHED = "hudisql.read.split.touched.keys"
#: The populate-meta-fields property: without ``_hoodie_record_key`` in the base files the
#: base rows cannot be matched to log records.
_META_FIELDS = "hoodie.populate.meta.fields"


@dataclass
class SnapshotPlan:
    """How one snapshot of a table is read: which base files by Spark alone, which slices
    merged by Spark, which read whole by the data source (``(partition path, file id)``)."""

    snapshot: str
    #: Full paths of the base files Spark's parquet reader reads as they are.
    base_files: list[str] = field(default_factory=list)
    #: Slices with log files merged by Spark (:mod:`hudisql.read.log_merge`).
    merged: list[MergedSlice] = field(default_factory=list)
    #: Slices read whole by the data source.
    whole: list[tuple[str, str]] = field(default_factory=list)
    #: Slices with log files not yet resolved (:func:`resolve_logs`).
    pending: list[FileSlice] = field(default_factory=list)
    #: The slices kept by the read's fixed predicate (all of them without one).
    selection: SliceSelection | None = None

    def slices_option(self) -> str:
        """The data source's :data:`SLICES` option for this plan: the slices it reads."""
        return json.dumps(self.whole)


def plan_snapshot(table: HudiTable, as_of: str | None = None, split_touched: bool = True,
                  where: str | None = None, data_skipping: bool = True,
                  spark_files: bool = True, columns: Sequence[str] | None = None,
                  resolve: bool = True, read_optimized: bool = False) -> SnapshotPlan | None:
    """Sort the file slices of ``table`` as of ``as_of`` (default: latest) by how each is
    read; returns None when this plan does not apply (see :func:`snapshot_frame`).

    ``split_touched``: slices with log files are merged by Spark (module notes); their logs
    are resolved here (unless not ``resolve``: :func:`resolve_logs` then), into records of
    ``columns`` (default all). ``where``: only the slices that may hold rows matching this
    SQL predicate (:func:`hudisql.read.pruning.select_slices`, with the metadata table's
    indexes when ``data_skipping``). ``read_optimized``: Hudi's read-optimized view (each
    slice's base file alone, log files ignored). ``spark_files``: Spark can
    open the table's files by path (:func:`hudisql.read.spark_files.spark_opens`); when
    not, every slice is read whole by the data source.

    Raises:
        HudiSqlError: a malformed ``as_of`` or ``where``.
    """
    if table.properties.get(_META_FIELDS, "true").strip().lower() != "true":
        return None
    head = table.timeline.last_completed()
    snapshot = normalize_instant(as_of) if as_of else (head.timestamp if head else None)
    if snapshot is None:
        return None
    if as_of:
        table.check_readable_as_of(snapshot)
    plan = SnapshotPlan(snapshot)
    slices = table.file_slices(as_of=snapshot)
    if read_optimized:
        slices = base_files_only(slices)
    plan.selection = select_slices(table, slices, where, snapshot, data_skipping)
    for file_slice in plan.selection.kept:
        base = file_slice.base_file
        if not spark_files or base is None or not base.path.endswith(".parquet"):
            plan.whole.append((file_slice.partition_path, file_slice.file_id))
        elif not file_slice.log_files:
            plan.base_files.append(table.storage.uri(base.path))
        elif not split_touched:
            plan.whole.append((file_slice.partition_path, file_slice.file_id))
        else:
            plan.pending.append(file_slice)
    if resolve:
        resolve_logs(table, plan, columns)
    return plan


def resolve_logs(table: HudiTable, plan: SnapshotPlan, columns: Sequence[str] | None = None
                 ) -> None:
    """Move the plan's pending slices (with log files) to those merged by Spark, their logs
    resolved here into records of ``columns`` (default all), or to those read whole."""
    pending, plan.pending = plan.pending, []
    if not pending:
        return
    schema = table.schema_as_of(plan.snapshot)
    merge = functools.partial(_merge_slice, table, schema, plan.snapshot, columns)
    # Decoding logs and reading key columns are mostly pyarrow work, which frees the GIL.
    with ThreadPoolExecutor(max_workers=min(len(pending), os.cpu_count() or 1)) as pool:
        outcomes = list(pool.map(merge, pending))
    keys, size = MAX_MERGED_KEYS, MAX_MERGED_BYTES
    for file_slice, outcome in zip(pending, outcomes, strict=True):
        if outcome is None or outcome[1] > keys or outcome[2] > size:
            plan.whole.append((file_slice.partition_path, file_slice.file_id))
            continue
        merged, touched, held = outcome
        keys, size = keys - touched, size - held
        plan.merged.append(merged)


def _merge_slice(table: HudiTable, schema: pa.Schema, snapshot: str,
                 columns: Sequence[str] | None, file_slice: FileSlice
                 ) -> tuple[MergedSlice, int, int] | None:
    """A slice with logs resolved for Spark to merge (:mod:`hudisql.read.log_merge`), its
    touched keys and bytes of log records held; None when it is merged whole (expression
    blocks)."""
    changes = log_changes(table.storage, table.properties, table.timeline, file_slice,
                          schema, snapshot, columns)
    if changes is None:
        return None
    base = file_slice.base_file
    assert base is not None
    positions, records = changes.resolve(touched_base_rows(table.storage, changes))
    return (MergedSlice(table.storage.uri(base.path), positions, records), len(changes.keys),
            records.nbytes)


def snapshot_frame(spark: SparkSession, table: HudiTable, options: Mapping[str, str],
                   as_of: str | None = None, schema: StructType | None = None,
                   where: str | None = None, read_optimized: bool = False
                   ) -> DataFrame | None:
    """The table's snapshot as of ``as_of`` (default: its latest) as a Spark DataFrame.

    Args:
        options: further ``hudi`` data source options for the merged part, and
            :data:`SPLIT_TOUCHED`.
        schema: the columns to return (the table's Spark schema, or a projection of it with
            the base path in its first field's metadata); default all.
        read_optimized: Hudi's read-optimized query (base files alone) instead of the
            snapshot; ``options`` name that query type for the data source's part.

    Returns:
        The DataFrame, or None when this plan does not apply (no completed instant, or base
        files without meta fields): read through the data source alone then. Slices with
        log files merged by Spark cost one Spark job here (:mod:`hudisql.read.log_merge`).

    Raises:
        HudiSqlError: a malformed ``as_of``.
    """
    options = dict(options)
    split = options.pop(SPLIT_TOUCHED, "true").strip().lower() != "false"
    budget = max_bytes(options)
    options = {k: v for k, v in options.items() if k.lower() != LOCAL_MAX_BYTES}
    path = table.base_path
    full = spark_schema(table, path)
    columns = (schema or full).fieldNames()
    if any(name.lower() == "_metadata" for name in full.fieldNames()):
        # A data column named _metadata hides Spark's file metadata column, whose row
        # positions the Spark-side merge needs: such a table's logs are merged in Python.
        split = False
    plan = plan_snapshot(table, as_of, split, where, data_skipping_enabled(options),
                         spark_opens(spark, table.base_path), columns, resolve=False,
                         read_optimized=read_optimized)
    if plan is None:
        return None
    parts: list[DataFrame] = []
    if plan.selection is not None and plan.selection.predicates:
        # A few small slices kept by the predicate: read here, no Spark job.
        local = local_frame(spark, table, plan.selection.kept, plan.snapshot, _plain(full),
                            plan.selection.predicates, budget)
        if local is not None:
            return local if columns == full.fieldNames() else local.select(*columns)
    ahead = None
    if plan.pending:
        # The logs are resolved (pyarrow work, mostly free of the GIL) while Spark analyses
        # the read of the base files they will most likely all be merged with.
        files = plan.base_files + [table.storage.uri(s.base_file.path)
                                   for s in plan.pending if s.base_file is not None]
        with ThreadPoolExecutor(max_workers=1) as background:
            resolving = background.submit(resolve_logs, table, plan, columns)
            try:
                ahead = base_read(spark, _plain(full), columns, files)
            finally:
                resolving.result()
    parts += merged_frames(spark, _plain(full), columns, plan.base_files, plan.merged, ahead)
    if plan.whole or not parts:
        reader = spark.read.format("hudi")
        for key, value in options.items():
            if key.lower() != WHERE:  # the slices were chosen here
                reader = reader.option(key, value)
        reader = reader.option(AS_OF_INSTANT, plan.snapshot).option(SLICES, plan.slices_option())
        # Given the schema, Spark needs no Python worker to ask the data source for it.
        reader = reader.schema(schema or full)
        with data_source_only():
            parts.append(reader.load(path).select(*columns))
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.unionByName(part)
    return frame


def _plain(full: StructType) -> StructType:
    """The table's Spark schema without field metadata (columns a file lacks read as
    nulls)."""
    return StructType([StructField(f.name, f.dataType, f.nullable) for f in full.fields])
