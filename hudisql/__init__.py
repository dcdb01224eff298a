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
    SqlParseError,
    TableNotFoundError,
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
    "SqlParseError",
    "TableNotFoundError",
    "UnsupportedTableVersionError",
    "connect",
    "load_ipython_extension",
    "read_table",
]


def read_table(path: str, as_of: str | None = None) -> pa.Table:
    """Read a Hudi table's snapshot (meta columns included) in pure Python, without Spark.

    Args:
        path: the table's base path (local path or ``scheme://`` URI).
        as_of: an instant time (``yyyyMMddHHmmssSSS``); read the table as of that instant.

    Returns:
        A ``pyarrow.Table`` with the merged rows of every latest file slice.

    Raises:
        TableNotFoundError: ``path`` is not a Hudi table.
        UnsupportedTableVersionError: the table version is not 6, 8 or 9.
    """
    from hudisql.table import HudiTable

    return HudiTable.open(path).read(as_of=as_of)


def connect(*args: Any, **kwargs: Any) -> Any:
    """Start or extend a Spark session with hudisql; see :func:`hudisql.session.connect`."""
    from hudisql.session import connect as _connect

    return _connect(*args, **kwargs)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext hudisql``: register the ``%hudisql`` and ``%%hudisql`` magics."""
    from hudisql.magic import load_ipython_extension as _load

    _load(ipython)
