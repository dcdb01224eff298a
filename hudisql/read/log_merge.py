"""File slices with log files merged by Spark: base rows through Spark's parquet reader.

A merged slice is its base file minus the rows its logs supersede, plus the log records
that win (:mod:`hudisql.table.read.log_changes`). The logs are small: they are decoded on
the driver into one outcome per record key, and the base file's key and ordering columns
are read there (only those) to find the rows holding a touched key; the table core then
decides by the merge's own rules which base positions lose and which log records are
emitted (the first base row of a key takes its outcome; under event-time ordering a log
record with a lower ordering value loses; keys the base file lacks are inserts).
:func:`merged_frames` leaves the rest to Spark, with no Python in the way of the base
rows: the base files through Spark's parquet reader (column pruning, pushed filters) with
a broadcast anti-join of the losing positions (``_metadata.row_index``, the file name
compared only where a position matches), union the emitted records (a local relation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from hudisql.read.datasource import conform

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_FILE, _ROW = "_hudisql_base_file", "_hudisql_row"
_LOST_FILE, _LOST_ROW = "_hudisql_lost_file", "_hudisql_lost_row"


@dataclass
class MergedSlice:
    """A slice whose base file Spark reads (by ``uri``) minus the rows at ``positions``,
    plus ``records`` (its log records that are rows of the merged slice)."""

    uri: str
    positions: np.ndarray
    records: pa.Table

    @property
    def name(self) -> str:
        """The base file's name, as Spark's ``_metadata.file_name`` gives it."""
        return self.uri.rsplit("/", 1)[-1]


def merged_frames(spark: SparkSession, plain: StructType, columns: list[str],
                  base_files: list[str], slices: list[MergedSlice]) -> list[DataFrame]:
    """The rows of ``base_files`` (read as they are) and of the merged ``slices``, in
    ``columns`` of the table's Spark schema ``plain`` (no field metadata), as DataFrames
    to union."""
    files = base_files + [s.uri for s in slices]
    frames: list[DataFrame] = []
    lost = [s for s in slices if len(s.positions)]
    if files:
        rows = spark.read.schema(plain).parquet(*files)
        if lost:
            rows = _without(spark, rows, lost, columns)
        # (Each select is one more analysis of the plan: none when nothing changes.)
        frames.append(rows if columns == plain.fieldNames() else rows.select(*columns))
    emitted = [s.records for s in slices if s.records.num_rows]
    if emitted:
        schema = StructType([plain[c] for c in columns])
        target = to_arrow_schema(schema, timezone="UTC")
        frames.append(spark.createDataFrame(
            pa.concat_tables([conform(r, target) for r in emitted]), schema=schema))
    return frames


def _without(spark: SparkSession, rows: DataFrame, lost: list[MergedSlice],
             columns: list[str]) -> DataFrame:
    """``rows`` (a parquet read) minus the rows at the ``lost`` slices' positions."""
    table = pa.table({
        _FILE: pa.concat_arrays([pa.repeat(pa.scalar(s.name), len(s.positions)) for s in lost]),
        _ROW: pa.array(np.concatenate([s.positions for s in lost]), pa.int64())})
    losing = spark.createDataFrame(table).withColumnsRenamed({_FILE: _LOST_FILE, _ROW: _LOST_ROW})
    rows = rows.select(*columns, F.col("_metadata.file_name").alias(_FILE),
                       F.col("_metadata.row_index").alias(_ROW))
    # The position alone is the hash key (a long: Spark's fastest broadcast lookup); the
    # file name, as two comparisons Spark does not turn into a second key, is checked only
    # for the few rows whose position some losing row has.
    name, other = F.col(_FILE), F.col(_LOST_FILE)
    condition = (F.col(_ROW) == F.col(_LOST_ROW)) & (name >= other) & (name <= other)
    return rows.join(F.broadcast(losing), condition, "left_anti").select(*columns)
