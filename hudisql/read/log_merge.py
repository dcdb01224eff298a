"""File slices with log files merged by Spark: base rows through Spark's parquet reader.

A merged slice is its base file minus the rows its logs supersede, plus the log records
that win (:mod:`hudisql.table.read.log_changes`). The logs are small and decoded on the
driver into one outcome per record key; Spark does the rest in two steps, with no Python
in the way of the base rows:

1. *Find*: the base rows holding a touched key, by a broadcast semi-join of the base files'
   record keys (only the key, the ordering field, and each row's file name and position:
   Spark's ``_metadata.file_name`` and ``_metadata.row_index``) with the touched keys.
   These few rows are collected, and the table core decides on the driver, by the merge's
   own rules, which base positions lose and which log records are emitted (the first base
   row of a key takes its outcome; under event-time ordering a log record with a lower
   ordering value loses; keys the base file lacks are inserts).
2. *Scan*: the base files with a broadcast anti-join on (file name, position) of the
   losing rows, with column pruning and pushed filters, union the emitted log records (a
   local relation).

The second step is lazy; the first runs when the DataFrame is built (one Spark job), as
the snapshot is planned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from hudisql.read.datasource import conform
from hudisql.table.read.log_changes import POSITION_COLUMN, LogChanges
from hudisql.table.read.merge import RECORD_KEY_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_FILE = "_hudisql_base_file"


@dataclass
class MergedSlice:
    """A slice whose base file Spark reads (by ``uri``) and whose logs changed ``changes``."""

    uri: str
    changes: LogChanges

    @property
    def name(self) -> str:
        """The base file's name, as Spark's ``_metadata.file_name`` gives it."""
        return self.uri.rsplit("/", 1)[-1]


def merged_frames(spark: SparkSession, plain: StructType, columns: list[str],
                  slices: list[MergedSlice]) -> list[DataFrame]:
    """The merged rows of ``slices`` in ``columns`` of the table's Spark schema ``plain``
    (no field metadata), as DataFrames to union; runs the *find* job (module notes)."""
    touched = [s for s in slices if s.changes.outcome is not None]
    untouched = [s.uri for s in slices if s.changes.outcome is None]
    frames: list[DataFrame] = []
    if untouched:
        frames.append(spark.read.schema(plain).parquet(*untouched).select(*columns))
    if not touched:
        return frames
    found = _find(spark, plain, touched)
    target = to_arrow_schema(StructType([plain[c] for c in columns]), timezone="UTC")
    lost_names: list[pa.Array] = []
    lost_rows: list[np.ndarray] = []
    emitted: list[pa.Table] = []
    files = found.column(_FILE)
    for merged in touched:
        rows = found.filter(pc.equal(files, merged.name))
        positions, records = merged.changes.resolve(rows)
        if len(positions):
            lost_names.append(pa.repeat(pa.scalar(merged.name), len(positions)))
            lost_rows.append(positions)
        if records.num_rows:
            emitted.append(conform(records, target))
    with_lost = {n.as_py() for names in lost_names for n in names.unique()}
    plain_files = [s.uri for s in touched if s.name not in with_lost]
    if plain_files:
        frames.append(spark.read.schema(plain).parquet(*plain_files).select(*columns))
    if with_lost:
        lost = pa.table({_FILE: pa.concat_arrays(lost_names),
                         POSITION_COLUMN: pa.array(np.concatenate(lost_rows), pa.int64())})
        base = (spark.read.schema(plain)
                .parquet(*[s.uri for s in touched if s.name in with_lost])
                .select(*columns, F.col("_metadata.file_name").alias(_FILE),
                        F.col("_metadata.row_index").alias(POSITION_COLUMN)))
        frames.append(base.join(F.broadcast(spark.createDataFrame(lost)),
                                [_FILE, POSITION_COLUMN], "left_anti").select(*columns))
    if emitted:
        frames.append(spark.createDataFrame(pa.concat_tables(emitted),
                                            schema=StructType([plain[c] for c in columns])))
    return frames


def _find(spark: SparkSession, plain: StructType, touched: list[MergedSlice]) -> pa.Table:
    """The base rows of ``touched`` holding a touched key: file name, position, key and
    ordering value."""
    keys = pa.concat_tables([
        pa.table({_FILE: pa.repeat(pa.scalar(s.name), len(s.changes.keys)),
                  RECORD_KEY_COLUMN: s.changes.keys}) for s in touched])
    ordering = touched[0].changes.ordering
    wanted = [F.col("_metadata.file_name").alias(_FILE),
              F.col("_metadata.row_index").alias(POSITION_COLUMN), F.col(RECORD_KEY_COLUMN)]
    if ordering is not None:
        wanted.append(F.col(ordering))
    base = spark.read.schema(plain).parquet(*[s.uri for s in touched]).select(*wanted)
    return base.join(F.broadcast(spark.createDataFrame(keys)), [_FILE, RECORD_KEY_COLUMN],
                     "left_semi").toArrow()
