"""``spark.read.format("hudi").load(path)``: the snapshot read that ``t.read()`` plans.

Why. ``format("hudi")`` is a Python data source, and Spark gives a Python data source no
column pruning: every column of every row crosses from a Python worker into the JVM, which
alone costs about 1.4x Spark's scan of the same rows as plain parquet. Hudi's own
``format("hudi")`` resolves a snapshot or read-optimized load to a parquet file relation.
So does this one: ``load()`` of format ``hudi`` is intercepted on the driver
(:func:`install`, called by ``hudisql.connect()``) and, for a snapshot or read-optimized
query of a table path, returns the DataFrame :func:`hudisql.read.frame.read_frame` plans
(as for ``t.read()``, with ``hudisql.read.local.max.bytes=0``): base files through Spark's
vectorized parquet reader with column pruning and pushed filters, log files merged by
Spark (:mod:`hudisql.read.snapshot`).

The rows are the data source's, option for option: ``as.of.instant`` (time travel),
``hoodie.datasource.query.type`` ``snapshot``/``read_optimized``,
``hudisql.read.where`` (only the slices that may hold matching rows, their rows whole, as
the data source returns them: apply the predicate with ``.where()``),
``hoodie.enable.data.skipping`` (taken from the load's options only, as the data source
does, never from the session), and the snapshot is pinned at ``load()`` as the data
source pins it. Everything else is left to the data source itself, unchanged: incremental
and CDC queries, a schema given with ``.schema()``, a metadata table, several paths,
``hudisql.read.direct.parquet=false``, and every load the plan refuses (a malformed
instant, a path that is no table, a cleaned instant): the data source then gives its own
rows or its own error, at the moment it gives them.

Only loads on a SparkSession ``hudisql.connect()`` extended are routed (the data source is
registered on those); on Spark Connect, loads from this client are routed too (the plan is
built here and sent as DataFrame operations). The reader's ``format``/``schema``/
``option(s)`` calls are recorded on the Python object as they go on to Spark, so ``load``
knows them without asking Spark.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from hudisql.errors import HudiSqlError
from hudisql.read.local import LOCAL_MAX_BYTES
from hudisql.read.options import (
    AS_OF_INSTANT,
    DATA_SKIPPING,
    DIRECT_PARQUET,
    QUERY_TYPE,
    READ_OPTIMIZED,
    SLICES,
    SNAPSHOT,
    WHERE,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

_log = logging.getLogger(__name__)

#: The SparkSessions whose ``format("hudi")`` loads are routed (those hudisql extended).
_routed: weakref.WeakSet[Any] = weakref.WeakSet()
_guard = threading.Lock()
#: Set within :func:`data_source_only`.
_planning = threading.local()


def install(spark: SparkSession, connect: bool = False) -> None:
    """Route ``spark``'s ``load()`` of format ``hudi`` to the Spark-parquet snapshot plan
    (module notes; idempotent). ``connect``: ``spark`` is a Spark Connect session."""
    from pyspark.sql.readwriter import DataFrameReader

    with _guard:
        _routed.add(spark)
        _route_loads(DataFrameReader, "_spark")
        if connect:
            from pyspark.sql.connect.readwriter import DataFrameReader as ConnectReader

            _route_loads(ConnectReader, "_client")


@contextlib.contextmanager
def data_source_only() -> Iterator[None]:
    """Within this block, ``load()`` of format ``hudi`` on this thread goes to the data
    source (hudisql's own reads of the slices it leaves to the data source)."""
    before = getattr(_planning, "active", False)
    _planning.active = True
    try:
        yield
    finally:
        _planning.active = before


def routed_frame(spark: SparkSession, path: str, options: dict[str, str]) -> DataFrame | None:
    """The DataFrame of a ``load(path)`` of format ``hudi`` with ``options``, planned as
    ``t.read()`` plans it; None when the load is the data source's to make (module notes).
    """
    lowered = {k.lower(): v for k, v in options.items() if k.lower() != "path"}
    query_type = lowered.get(QUERY_TYPE.lower(), SNAPSHOT).strip().lower()
    if (query_type not in (SNAPSHOT, READ_OPTIMIZED) or SLICES in lowered
            or lowered.get(DIRECT_PARQUET, "true").strip().lower() == "false"):
        return None
    from hudisql.read.datasource import spark_schema
    from hudisql.read.frame import read_frame
    from hudisql.read.options import ReadOptions
    from hudisql.table import HudiTable

    as_of = lowered.pop(AS_OF_INSTANT, None) or None
    where = lowered.pop(WHERE, None) or None
    # The data source reads data skipping from the load's options alone, and returns the
    # kept slices' rows whole (no rows filtered on the driver).
    lowered.setdefault(DATA_SKIPPING, "true")
    lowered[LOCAL_MAX_BYTES] = "0"
    if path.startswith("file:/") and not path.startswith("file://"):
        path = path.removeprefix("file:")  # (as the data source reads such a path)
    try:
        # What the data source refuses, it refuses itself (at load or at the query).
        ReadOptions.parse({**options, "path": path}, None)
        table = HudiTable.open(path)
        if table.properties.is_metadata_table:
            return None
        frame = read_frame(spark, table, lowered, as_of, None, where, filter_rows=False)
        return _as_data_source(frame, spark_schema(table, path))
    except (HudiSqlError, OSError) as exc:
        # The data source gives its own error (or rows) for this load, when it gives it.
        _log.debug("format('hudi').load(%r) is left to the data source: %s", path, exc)
        return None


def _as_data_source(frame: DataFrame, schema: StructType) -> DataFrame:
    """``frame`` with the data source's field metadata (the base path and pinned snapshot
    on the first column), so its schema is the one ``load()`` of the data source gives."""
    from pyspark.sql import functions as F

    if not schema.fields or not schema.fields[0].metadata:
        return frame
    first = schema.fields[0].name
    if "." not in first and "`" not in first:
        return frame.withMetadata(first, schema.fields[0].metadata)  # (one JVM round trip)

    def column(name: str) -> Column:
        return F.col("`" + name.replace("`", "``") + "`")

    return frame.select(*(column(name).alias(name, metadata=schema.fields[0].metadata)
                          if name == first else column(name) for name in frame.columns))


def _route_loads(reader_class: Any, session_attribute: str) -> None:
    """Patch one ``DataFrameReader`` class (see :func:`install`; once per class)."""
    from hudisql.write.dataframe_writer import recording_methods

    if getattr(reader_class, "_hudisql_installed", False):
        return
    original = {name: getattr(reader_class, name)
                for name in ("format", "schema", "option", "options", "load")}

    def state(reader: Any) -> dict[str, Any]:
        if not hasattr(reader, "_hudisql_state"):
            reader._hudisql_state = {"format": None, "schema": False, "options": {}}
        found: dict[str, Any] = reader._hudisql_state
        return found

    def schema_(self: Any, schema: Any) -> Any:
        state(self)["schema"] = True
        return original["schema"](self, schema)

    def load_(self: Any, path: Any = None, format: str | None = None, schema: Any = None,
              **options: Any) -> Any:
        if format is not None:
            self.format(format)
        if schema is not None:
            self.schema(schema)
        self.options(**options)
        current = state(self)
        spark = getattr(self, session_attribute, None)
        given = current["options"]
        where = path if path is not None else next(
            (v for k, v in given.items() if k.lower() == "path"), None)
        if (str(current["format"] or "").lower() == "hudi" and not current["schema"]
                and isinstance(where, (str, os.PathLike)) and spark is not None
                and spark in _routed and not getattr(_planning, "active", False)):
            frame = routed_frame(spark, os.fspath(where), dict(given))
            if frame is not None:
                return frame
        return original["load"](self, path)

    patched = {**recording_methods(original, state), "schema": schema_, "load": load_}
    for name, method in patched.items():
        setattr(reader_class, name, method)
    reader_class._hudisql_installed = True
