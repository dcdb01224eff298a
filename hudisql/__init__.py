"""hudisql: Apache Hudi's table services as a Spark SQL extension, in Python.

Public entry points: :func:`read_table` (pure Python snapshot read), :func:`connect`
(a :class:`HudiSession` over Spark), and the errors in :mod:`hudisql.errors`.
Only ``session`` sees every subpackage; ``table`` never imports Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hudisql.errors import (
    CommitConflictError,
    ConcurrentSchemaEvolutionError,
    CorruptTableError,
    HudiSqlError,
    MetadataTableError,
    ReadOptionError,
    SqlParseError,
    StorageLocationError,
    StreamingCheckpointError,
    StreamingWriteError,
    TableNotFoundError,
    TableServiceError,
    UnsupportedTableVersionError,
)

if TYPE_CHECKING:
    import pyarrow as pa

__version__ = "0.1.0"

__all__ = [
    "CommitConflictError",
    "ConcurrentSchemaEvolutionError",
    "CorruptTableError",
    "HudiSqlError",
    "MetadataTableError",
    "ReadOptionError",
    "SqlParseError",
    "StorageLocationError",
    "StreamingCheckpointError",
    "StreamingWriteError",
    "TableNotFoundError",
    "TableServiceError",
    "UnsupportedTableVersionError",
    "connect",
    "load_ipython_extension",
    "read_table",
]


def read_table(path: str, as_of: str | None = None, *, query_type: str = "snapshot",
               begin: str | None = None, end: str | None = None,
               incremental_format: str = "latest_state") -> pa.Table:
    """Read a Hudi table (meta columns included) in pure Python, without Spark.

    Args:
        path: the table's base path (local path or ``scheme://`` URI); a metadata table
            (``<table>/.hoodie/metadata``) reads as its merged records, one row per key of
            each built partition (:mod:`hudisql.metadata.table_rows`).
        as_of: an instant time (``yyyyMMddHHmmssSSS``); read the table as of that instant.
        query_type: Hudi's query types: ``snapshot`` (default), ``read_optimized`` (base
            files only, log files ignored) or ``incremental`` (the changes of
            ``(begin, end]``; see :mod:`hudisql.table.read.incremental`).
        begin, end: an incremental query's range (``begin``: an instant, a time or
            ``earliest``; ``end`` defaults to the latest commit); completion times on
            version 8/9 tables, instant times on version 6.
        incremental_format: ``latest_state`` (the records as last written in the range) or
            ``cdc`` (``op``, ``ts_ms``, ``before``, ``after`` per change).

    Returns:
        A ``pyarrow.Table``.

    Raises:
        TableNotFoundError: ``path`` is not a Hudi table.
        UnsupportedTableVersionError: the table version is not 6, 8 or 9.
        ReadOptionError: an unknown query type or format, or a bad range.
    """
    from hudisql.table import HudiTable

    table = HudiTable.open(path)
    kind = query_type.strip().lower()
    if table.properties.is_metadata_table:
        from hudisql.metadata.table_rows import read_metadata_table, refuse_metadata_query

        if kind != "snapshot" or as_of is not None:
            refuse_metadata_query(table, f"query_type={query_type!r}" if kind != "snapshot"
                                  else "time travel (as_of)")
        return read_metadata_table(table)
    if kind == "snapshot":
        return table.read(as_of=as_of)
    if kind == "read_optimized":
        return table.read(as_of=as_of, base_files_only=True)
    if kind != "incremental":
        raise ReadOptionError(
            f"query_type={query_type!r} is not one of snapshot, read_optimized, incremental")
    if as_of is not None:
        raise ReadOptionError("an incremental read takes end=, not as_of=")
    fmt = incremental_format.strip().lower()
    if fmt == "cdc":
        from hudisql.table.read.cdc import read_cdc

        return read_cdc(table, begin, end)
    if fmt != "latest_state":
        raise ReadOptionError(
            f"incremental_format={incremental_format!r} is not one of latest_state, cdc")
    from hudisql.table.read.incremental import read_incremental

    return read_incremental(table, begin, end)


def connect(*args: Any, **kwargs: Any) -> Any:
    """Start or extend a Spark session with hudisql; see :func:`hudisql.session.connect`."""
    from hudisql.session import connect as _connect

    return _connect(*args, **kwargs)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext hudisql``: register the ``%hudisql`` and ``%%hudisql`` magics."""
    from hudisql.magic import load_ipython_extension as _load

    _load(ipython)
