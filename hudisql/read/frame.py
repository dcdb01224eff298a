"""A table's read as a Spark DataFrame, pruned by a predicate fixed up front.

One door for ``t.read(...)`` and for SQL on catalog tables through a hudisql session
(:mod:`hudisql.sql.reads`): a snapshot or read-optimized read is planned once
(:func:`snapshot_frame`): base files go to Spark's parquet reader (those of slices with log
files merged by Spark, or such slices read whole by the ``hudi`` data source); every other
read goes through the data source. With ``where``, only the file slices
that may hold matching rows are read (:func:`hudisql.read.pruning.select_slices`) and the
predicate is applied to the rows. The predicate is part of the DataFrame, not of a query, so
Spark's reuse of a relation's plan cannot lose rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from hudisql.read.dataframe_reader import data_source_only
from hudisql.read.local import LOCAL_MAX_BYTES
from hudisql.read.options import (
    AS_OF_INSTANT,
    DATA_SKIPPING,
    DIRECT_PARQUET,
    QUERY_TYPE,
    READ_OPTIMIZED,
    SNAPSHOT,
    WHERE,
)
from hudisql.read.snapshot import snapshot_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from hudisql.table.table import HudiTable


def read_frame(spark: SparkSession, table: HudiTable, options: Mapping[str, str],
               as_of: str | None = None, schema: StructType | None = None,
               where: str | None = None, filter_rows: bool = True) -> DataFrame:
    """``table`` read with the ``hudi`` data source ``options``; returns the DataFrame.

    Args:
        as_of: an instant; read the table as of it (time travel).
        schema: the columns to read (the table's Spark schema, or a projection of it with
            the base path in its first field's metadata); default all.
        where: a SQL predicate: only slices that may hold matching rows are read (partition
            paths, then the metadata table's indexes unless ``hoodie.enable.data.skipping``
            is ``false`` in ``options`` or, without it there, in the Spark session's
            configuration), and the rows are filtered by it. A few small kept slices are
            read on the driver (:mod:`hudisql.read.local`, unless
            ``hudisql.read.local.max.bytes`` is ``0`` in ``options`` or the session).
        filter_rows: ``False``: the rows of the kept slices are returned whole, for a caller
            that applies ``where`` itself (a SQL statement's own conjuncts).

    Raises:
        HudiSqlError: a malformed ``as_of`` or ``where``.
    """
    where = where if where is not None and where.strip() else None
    if where is not None and schema is not None and not _columns(where) <= {
            f.name.lower() for f in schema.fields}:
        # The predicate needs columns the projection leaves out: filter, then project.
        return read_frame(spark, table, options, as_of, None, where, filter_rows).select(
            *schema.fieldNames())
    merged = dict(options)
    for setting in (DATA_SKIPPING, LOCAL_MAX_BYTES):
        if not any(key.lower() == setting for key in merged):
            # ``SET hoodie.enable.data.skipping=false`` in the Spark session, as Hudi reads
            # it (and ``SET hudisql.read.local.max.bytes=0``).
            configured = spark.conf.get(setting, None)
            if configured is not None:
                merged[setting] = configured
    direct = merged.pop(DIRECT_PARQUET, "true").strip().lower() != "false"
    query_type = merged.get(QUERY_TYPE, SNAPSHOT).strip().lower()
    frame = None
    if direct and query_type in (SNAPSHOT, READ_OPTIMIZED):
        frame = snapshot_frame(spark, table, merged, as_of, schema, where,
                               read_optimized=query_type == READ_OPTIMIZED)
    if frame is None:
        reader = spark.read.format("hudi")
        for key, value in merged.items():
            reader = reader.option(key, value)
        if as_of is not None:
            reader = reader.option(AS_OF_INSTANT, as_of)
        if where is not None:
            reader = reader.option(WHERE, where)
        if schema is not None:
            reader = reader.schema(schema)
        with data_source_only():
            frame = reader.load(table.base_path)
    return frame if where is None or not filter_rows else frame.where(where)


def _columns(where: str) -> set[str]:
    """The (lower-cased) column names ``where`` refers to; unparsable text names none (the
    slice selection reports its error)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    try:
        tree = sqlglot.parse_one(where, read="spark")
    except (ParseError, TokenError):
        return set()
    return {c.name.lower() for c in tree.find_all(exp.Column)}
