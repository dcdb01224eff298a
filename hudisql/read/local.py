"""Tiny reads on the driver: a point lookup's kept file slices as a local relation.

When a read's fixed predicate (``t.read(where=...)``, SQL by name) keeps a few small file
slices, the rows left to read are often one row group, or a handful of rows: Spark's own
parquet reader costs a file listing when the DataFrame is built and a job when it runs, and
the ``hudi`` data source a Python planning worker and a job, fixed costs much larger than
the read. :func:`local_frame` reads those slices here instead (a base file alone with
pyarrow, only the row groups whose statistics may match the predicate; a slice with log
files merged by the table core), keeps only the rows that may match, and hands Spark the
rows as a local relation, which Spark filters and returns without a job (``createDataFrame``
of Arrow data under ``spark.sql.execution.arrow.localRelationThreshold``; a local relation
on Spark Connect).

Exact by construction: the rows are read as the ``hudi`` data source reads slices
(:func:`hudisql.read.datasource.read_slice_batches` and its ``conform``, in the table's
Spark schema), and the row tests
(:func:`row_tests`) only drop rows the predicate cannot be true for: ``=``, ``IN``, ``<``,
``<=``, ``>``, ``>=`` and ``starts with`` on string and integer columns, with literals that
convert exactly (:func:`hudisql.metadata.skipping_values.column_value`), compared as Spark
compares them (strings as bytes, integers as numbers). The caller still applies the whole
predicate to the rows. Anything else tests nothing and keeps the row. Over a budget
(:data:`LOCAL_MAX_BYTES`: uncompressed bytes of the row groups to read, and the log files)
or :data:`MAX_FILES` slices, the caller reads through Spark as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import to_arrow_schema

from hudisql.errors import ReadOptionError
from hudisql.metadata.skipping_values import INEXACT, column_value
from hudisql.read.datasource import conform, read_slice_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from hudisql.parser.predicates import Predicate
    from hudisql.table.format.fsview import FileSlice
    from hudisql.table.table import HudiTable

#: The read option: at most this many uncompressed bytes of row groups are read on the
#: driver (default :data:`DEFAULT_MAX_BYTES`); ``0`` always reads through Spark.
LOCAL_MAX_BYTES = "hudisql.read.local.max.bytes"
DEFAULT_MAX_BYTES = 4 << 20
#: At most this many kept slices are read on the driver (each costs a footer read).
MAX_FILES = 8

_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "=": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
    ">=": pc.greater_equal,
}


@dataclass(frozen=True)
class RowTest:
    """One test a row must pass to possibly match: ``column op values`` (exact values)."""

    column: str
    op: str
    values: tuple[Any, ...]

    def mask(self, column: pa.ChunkedArray) -> pa.ChunkedArray:
        """True where the row may match (null rows fail: no comparison is true on null)."""
        if self.op == "in":
            return pc.is_in(column, value_set=pa.array(self.values, column.type))
        if self.op == "starts_with":
            return pc.starts_with(column, pattern=self.values[0])
        return _COMPARE[self.op](column, pa.scalar(self.values[0], column.type))

    def may_match(self, low: Any, high: Any) -> bool:
        """Whether a row group whose column lies in ``[low, high]`` may hold a match."""
        if self.op == "starts_with":
            prefix = self.values[0]
            return bool(high >= prefix and low[:len(prefix)] <= prefix)
        if self.op in ("=", "in"):
            return any(low <= v <= high for v in self.values)
        value = self.values[0]
        return bool({"<": low < value, "<=": low <= value, ">": high > value,
                     ">=": high >= value}[self.op])


def max_bytes(options: Mapping[str, str]) -> int:
    """The :data:`LOCAL_MAX_BYTES` option (default :data:`DEFAULT_MAX_BYTES`).

    Raises:
        ReadOptionError: not a whole number of bytes, or negative.
    """
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    text = lowered.get(LOCAL_MAX_BYTES)
    if text is None:
        return DEFAULT_MAX_BYTES
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise ReadOptionError(
            f"option {LOCAL_MAX_BYTES}={text!r} is not a number of bytes; give one "
            f"(0 reads every file through Spark, default {DEFAULT_MAX_BYTES})")
    return value


def row_tests(predicates: Sequence[Predicate], schema: pa.Schema,
              time_zone: str | None = None) -> list[RowTest]:
    """The predicates that can drop rows exactly, as tests on ``schema``'s columns (names as
    it spells them, matched without regard to case as Spark does)."""
    by_name: dict[str, list[pa.Field]] = {}
    for f in schema:
        by_name.setdefault(f.name.lower(), []).append(f)
    out = []
    for p in predicates:
        fields = by_name.get(p.column.lower(), [])
        if len(fields) != 1 or p.op not in (*_COMPARE, "in", "starts_with") or not p.values:
            continue
        field = fields[0]
        kind = _kind(field.type)
        if kind is None or (p.op == "starts_with" and kind is not str):
            continue
        values = tuple(column_value(v, field.type, time_zone) for v in p.values)
        if all(v is not INEXACT and type(v) is kind for v in values):
            out.append(RowTest(field.name, p.op, values))
    return out


def _kind(dtype: pa.DataType) -> type | None:
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return str
    if pa.types.is_integer(dtype):
        return int
    return None


def local_frame(spark: SparkSession, table: HudiTable, slices: Sequence[FileSlice],
                snapshot: str, schema: StructType, predicates: Sequence[Predicate],
                budget: int) -> DataFrame | None:
    """The rows of ``slices`` (kept slices of ``table``'s snapshot ``snapshot``) that may
    match ``predicates``, in the Spark ``schema`` (the table's, without field metadata), as
    a DataFrame of a local relation; None when more than ``budget`` bytes, or more than
    :data:`MAX_FILES` slices, would be read.

    A base file alone: only its row groups whose statistics may match are read (and
    counted). A slice with log files: read whole and merged as the ``hudi`` data source
    reads it (:func:`hudisql.read.datasource.read_slice_batches`), counted as its base
    file's uncompressed row groups plus its log files; the row tests apply after the merge.
    """
    if len(slices) > MAX_FILES or budget <= 0:
        return None
    target = to_arrow_schema(schema, timezone="UTC")
    tests = row_tests(predicates, target)
    reads: list[Callable[[], pa.Table]] = []
    size = 0
    for file_slice in slices:
        base = file_slice.base_file
        parquet = None
        if base is not None and base.path.endswith(".parquet"):
            parquet = pq.ParquetFile(table.storage.open_input_file(base.path))
        if parquet is not None and not file_slice.log_files:
            groups = row_groups(parquet, tests)
            size += sum(parquet.metadata.row_group(i).total_byte_size for i in groups)
            reads.append(functools.partial(_read_groups, parquet, groups, target))
        else:
            size += sum(log.size for log in file_slice.log_files) + (
                parquet.metadata.serialized_size + sum(
                    parquet.metadata.row_group(i).total_byte_size
                    for i in range(parquet.metadata.num_row_groups))
                if parquet is not None else (base.size if base is not None else 0))
            reads.append(functools.partial(_read_merged, table, file_slice, snapshot, target))
        if size > budget:
            return None
    parts = []
    for read in reads:
        rows = read()
        for test in tests:
            rows = rows.filter(test.mask(rows.column(test.column)))
        parts.append(rows)
    # One chunk: PySpark 4.3's createDataFrame drops the rows of an Arrow table whose
    # first batches are empty (two empty slices before the one holding the row: no rows).
    rows = pa.concat_tables(parts).combine_chunks() if parts else target.empty_table()
    return spark.createDataFrame(rows, schema=schema)


def _read_groups(parquet: pq.ParquetFile, groups: list[int], target: pa.Schema) -> pa.Table:
    if not groups:
        return target.empty_table()
    present = set(parquet.schema_arrow.names)
    return conform(parquet.read_row_groups(
        groups, columns=[n for n in target.names if n in present], use_threads=False), target)


def _read_merged(table: HudiTable, file_slice: FileSlice, snapshot: str, target: pa.Schema
                 ) -> pa.Table:
    return pa.Table.from_batches(
        list(read_slice_batches(table, file_slice, snapshot, target)), schema=target)


def row_groups(parquet: pq.ParquetFile, tests: Sequence[RowTest]) -> list[int]:
    """The row groups whose statistics do not rule out every row (all without tests)."""
    meta = parquet.metadata
    if not tests or meta.num_row_groups == 0:
        return list(range(meta.num_row_groups))
    leaves = {meta.row_group(0).column(i).path_in_schema: i
              for i in range(meta.row_group(0).num_columns)}
    kept = []
    for index in range(meta.num_row_groups):
        group = meta.row_group(index)
        if all(_may_match(group, leaves, test) for test in tests):
            kept.append(index)
    return kept


def _may_match(group: pq.RowGroupMetaData, leaves: Mapping[str, int], test: RowTest) -> bool:
    leaf = leaves.get(test.column)
    if leaf is None:
        return True  # a column the file lacks reads as nulls: decided by the rows
    stats = group.column(leaf).statistics
    if stats is None or not stats.has_min_max:
        return True
    low, high = stats.min, stats.max
    kind = type(test.values[0])
    if type(low) is not kind or type(high) is not kind:
        return True  # statistics of another physical type: not compared
    return test.may_match(low, high)
