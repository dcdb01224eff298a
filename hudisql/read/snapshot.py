"""Snapshot reads that leave the bulk of the rows to Spark's own parquet reader.

A merge-on-read snapshot is every base row whose key no visible log block touches, plus
the merged rows of the keys the logs do touch. Base rows are plain parquet: Spark's
vectorized reader scans them with column pruning and no Python in the way; only merged
rows need the table core. :func:`snapshot_frame` plans one snapshot instant and sorts its
file slices (:func:`plan_snapshot`):

* a slice that is a parquet base file alone: read by Spark's parquet reader (as Hudi's own
  Spark reader treats file groups without logs);
* a slice with log files: read whole by the ``hudi`` data source
  (:data:`hudisql.read.options.WHOLE`); or, with :data:`SPLIT_TOUCHED` ``=true``, split:
  its base file read by Spark's parquet reader minus the keys its logs touch (a broadcast
  anti-join on base file name and record key, which only these base files go through; the
  keys are decoded from the logs on the driver), and the data source reads the merged
  rows of those keys only (:data:`hudisql.read.options.TOUCHED`). Slices with expression
  blocks (applied to the whole slice), log files without a base file, or beyond
  :data:`MAX_TOUCHED_KEYS` touched keys in all are read whole.

Splitting is off by default because it does not pay on full scans: on the 5M-row
benchmark table (2% of each slice's keys updated), the anti-join costs Spark more than
reading those slices through Python (``benchmarks/bench_write_read.py``). It pays on
narrow projections of slices with few touched keys.

Both parts read the same snapshot: the data source is given the instant and the slices.
The rows are exactly the data source's; ``tests/read/test_snapshot.py`` checks that on
every fixture and on tables with updates, deletes, rollbacks and evolution.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from hudisql.read.datasource import spark_schema
from hudisql.read.local import LOCAL_MAX_BYTES, local_frame, max_bytes
from hudisql.read.options import (
    AS_OF_INSTANT,
    SLICES,
    TOUCHED,
    WHERE,
    WHOLE,
    data_skipping_enabled,
    normalize_instant,
)
from hudisql.read.pruning import SliceSelection, select_slices
from hudisql.read.spark_files import spark_opens
from hudisql.table.read.merge import RECORD_KEY_COLUMN, log_touched_keys

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudisql.table.format.fsview import FileSlice
    from hudisql.table.table import HudiTable

#: Above this many touched keys in all, further slices with logs are read whole by the data
#: source (the keys travel to every task in the broadcast).
MAX_TOUCHED_KEYS = 2_000_000
#: The read option that splits slices with log files (default ``false``; see above).
SPLIT_TOUCHED = "hudisql.read.split.touched.keys"
#: The populate-meta-fields property: without ``_hoodie_record_key`` in the base files the
#: anti-join has no key to go by.
_META_FIELDS = "hoodie.populate.meta.fields"
_FILE = "_hudisql_base_file"


@dataclass
class SnapshotPlan:
    """How one snapshot of a table is read: which base files by Spark, which slices by the
    data source (``(partition path, file id)`` lists), and the keys to leave to it."""

    snapshot: str
    #: Full paths of the base files Spark's parquet reader reads.
    base_files: list[str] = field(default_factory=list)
    touched: list[tuple[str, str]] = field(default_factory=list)
    whole: list[tuple[str, str]] = field(default_factory=list)
    #: (base file name, record key) of the base rows the data source reads instead.
    superseded: list[pa.Table] = field(default_factory=list)
    #: The slices kept by the read's fixed predicate (all of them without one).
    selection: SliceSelection | None = None

    def slices_option(self) -> str:
        """The data source's :data:`SLICES` option for this plan."""
        return json.dumps({TOUCHED: self.touched, WHOLE: self.whole})


def plan_snapshot(table: HudiTable, as_of: str | None = None, split_touched: bool = False,
                  where: str | None = None, data_skipping: bool = True,
                  spark_files: bool = True) -> SnapshotPlan | None:
    """Sort the file slices of ``table`` as of ``as_of`` (default: latest) by how each is
    read; returns None when the split does not apply (see :func:`snapshot_frame`).

    ``split_touched``: slices with log files are split by touched keys (module notes).
    ``where``: only the slices that may hold rows matching this SQL predicate
    (:func:`hudisql.read.pruning.select_slices`, with the metadata table's indexes when
    ``data_skipping``). ``spark_files``: Spark can open the table's files by path
    (:func:`hudisql.read.spark_files.spark_opens`); when not, every slice is read whole by
    the data source.

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
    budget = MAX_TOUCHED_KEYS if split_touched else 0
    plan.selection = select_slices(table, table.file_slices(as_of=snapshot), where, snapshot,
                                   data_skipping)
    for file_slice in plan.selection.kept:
        kind = _kind(table, file_slice, snapshot, budget) if spark_files else WHOLE
        ident = (file_slice.partition_path, file_slice.file_id)
        if kind == WHOLE:
            plan.whole.append(ident)
            continue
        assert file_slice.base_file is not None
        plan.base_files.append(table.storage.uri(file_slice.base_file.path))
        if isinstance(kind, pa.Table):
            budget -= kind.num_rows
            plan.superseded.append(kind)
            plan.touched.append(ident)
    return plan


def snapshot_frame(spark: SparkSession, table: HudiTable, options: Mapping[str, str],
                   as_of: str | None = None, schema: StructType | None = None,
                   where: str | None = None) -> DataFrame | None:
    """The table's snapshot as of ``as_of`` (default: its latest) as a Spark DataFrame.

    Args:
        options: further ``hudi`` data source options for the merged part, and
            :data:`SPLIT_TOUCHED`.
        schema: the columns to return (the table's Spark schema, or a projection of it with
            the base path in its first field's metadata); default all.

    Returns:
        The DataFrame, or None when this plan does not apply (no completed instant, or base
        files without meta fields): read through the data source alone then.

    Raises:
        HudiSqlError: a malformed ``as_of``.
    """
    options = dict(options)
    split = options.pop(SPLIT_TOUCHED, "false").strip().lower() == "true"
    budget = max_bytes(options)
    options = {k: v for k, v in options.items() if k.lower() != LOCAL_MAX_BYTES}
    plan = plan_snapshot(table, as_of, split, where, data_skipping_enabled(options),
                         spark_opens(spark, table.base_path))
    if plan is None:
        return None
    path = table.base_path
    full = spark_schema(table, path)
    columns = (schema or full).fieldNames()
    parts: list[DataFrame] = []
    if not plan.touched and plan.selection is not None and plan.selection.predicates:
        # A few small slices kept by the predicate: read here, no Spark job.
        local = local_frame(spark, table, plan.selection.kept, plan.snapshot, _plain(full),
                            plan.selection.predicates, budget)
        if local is not None:
            return local if columns == full.fieldNames() else local.select(*columns)
    if plan.base_files:
        rows = _base_rows(spark, full, plan)
        # (Each select is one more analysis of the plan: none when nothing changes.)
        parts.append(rows if columns == full.fieldNames() else rows.select(*columns))
    if plan.touched or plan.whole or not parts:
        reader = spark.read.format("hudi")
        for key, value in options.items():
            if key.lower() != WHERE:  # the slices were chosen here
                reader = reader.option(key, value)
        reader = reader.option(AS_OF_INSTANT, plan.snapshot).option(SLICES, plan.slices_option())
        # Given the schema, Spark needs no Python worker to ask the data source for it.
        reader = reader.schema(schema or full)
        parts.append(reader.load(path).select(*columns))
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.unionByName(part)
    return frame


def _kind(table: HudiTable, file_slice: FileSlice, snapshot: str, budget: int
          ) -> str | pa.Table:
    """How a slice is read: ``plain`` (its base file alone), WHOLE, or the (base file name,
    record key) table of the keys its logs touch."""
    base = file_slice.base_file
    if base is None or not base.path.endswith(".parquet"):
        return WHOLE
    if not file_slice.log_files:
        return "plain"
    if budget <= 0:
        return WHOLE
    keys = log_touched_keys(table.storage, table.properties, table.timeline, file_slice,
                            as_of=snapshot)
    if keys is None or len(keys) > budget:
        return WHOLE
    return pa.table({_FILE: pa.repeat(pa.scalar(base.name), len(keys)),
                     RECORD_KEY_COLUMN: keys})


def _plain(full: StructType) -> StructType:
    """The table's Spark schema without field metadata (columns a file lacks read as
    nulls)."""
    return StructType([StructField(f.name, f.dataType, f.nullable) for f in full.fields])


def _base_rows(spark: SparkSession, full: StructType, plan: SnapshotPlan) -> DataFrame:
    """The rows of the plan's base files through Spark's parquet reader (in the table's
    Spark schema ``full``), minus superseded ones: only the files with superseded rows go
    through the anti-join."""
    plain = _plain(full)
    keys = pa.concat_tables(plan.superseded) if plan.superseded else None
    if keys is None or not keys.num_rows:
        return spark.read.schema(plain).parquet(*plan.base_files)
    touched = set(pc.unique(keys.column(_FILE)).to_pylist())
    split = [p for p in plan.base_files if p.rsplit("/", 1)[-1] in touched]
    rest = [p for p in plan.base_files if p.rsplit("/", 1)[-1] not in touched]
    superseded = spark.createDataFrame(keys)
    rows = (spark.read.schema(plain).parquet(*split)
            .withColumn(_FILE, F.col("_metadata.file_name"))
            .join(F.broadcast(superseded), [_FILE, RECORD_KEY_COLUMN], "left_anti")
            .drop(_FILE))
    if rest:
        rows = spark.read.schema(plain).parquet(*rest).unionByName(rows)
    return rows
