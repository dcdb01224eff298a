"""The log records a merged read emits, handed to Spark as a local parquet file.

Why. A merged snapshot (:mod:`hudisql.read.log_merge`) unions the base rows Spark reads
with the log records that win, resolved on the driver. Handed over as a local relation,
those records live in the plan: Spark turns them into rows on the driver, then ships them
to its tasks inside each task, at every query. On the full scan of
``benchmarks/bench_write_read.py`` (5M rows, 100,000 updated records in logs) that cost
about 0.1 s to hand over and 0.12 to 0.2 s of task time, and the scan took 2.74 s (best of
nine) against 2.43 s with the records in a parquet file that Spark's vectorized reader
scans like any other.

So where Spark's tasks run on this machine (a local master, not Spark Connect, whose
server may be elsewhere), the records are written to a parquet file in this process's
own temporary directory, named by a digest of the file: a read of the same
snapshot again finds its file. The files stay until the process exits (a DataFrame may be
run again at any time, or cached and evicted; a file it reads never disappears under it),
up to :data:`MAX_BYTES` in all; past that, and on a cluster, the records go as a local
relation as before (and so do sets of records under :data:`MIN_BYTES`). Directories that
processes no longer running left behind are removed when a process makes its own (those of
its own PID namespace only: a container sharing the directory numbers its processes
otherwise).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from hudisql.write.driver_write import local_master

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["MAX_BYTES", "records_file_frame"]

#: The most bytes of record files one process keeps (past it: local relations).
MAX_BYTES = 2 << 30
#: Fewer bytes of records than this go as a local relation: a file costs a write, a
#: listing and a task of its own, about what shipping that many records costs.
MIN_BYTES = 1 << 20
_PREFIX = "hudisql-records-"
#: A directory's name: the prefix, the PID namespace and the pid of the process that made it.
_DIRECTORY = re.compile(re.escape(_PREFIX) + r"(\w+)-(\d+)-")

#: The types parquet holds as they are (no intervals, variants or nulls).
_ATOMIC = (BooleanType, ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType,
           DecimalType, StringType, BinaryType, DateType, TimestampType, TimestampNTZType)

_log = logging.getLogger(__name__)
_lock = threading.Lock()


@dataclass
class _Files:
    """This process's record files: their directory (once made) and bytes written."""

    directory: Path | None = None
    bytes: int = 0


_state = _Files()


def records_file_frame(spark: SparkSession, records: pa.Table, schema: StructType
                       ) -> DataFrame | None:
    """``records`` (conformed to the Arrow form of the Spark ``schema``) as a DataFrame
    reading them from a local parquet file; None where Spark's tasks may not see this
    machine's files, where a type could read back otherwise than it went in, below
    :data:`MIN_BYTES` of records, or past :data:`MAX_BYTES` (module notes)."""
    if (records.nbytes < MIN_BYTES
            or type(spark).__module__.startswith("pyspark.sql.connect")
            or local_master(spark.conf.get("spark.master", None)) is None
            or not all(_plain_type(f.dataType) for f in schema.fields)):
        return None
    # Named by a digest of the file's bytes: the same records (values, order and types)
    # make the same file, however their Arrow arrays were sliced or chunked.
    sink = pa.BufferOutputStream()
    pq.write_table(records, sink, compression="none")
    data = sink.getvalue()
    name = f"{hashlib.blake2b(data, digest_size=16).hexdigest()}.parquet"
    with _lock:
        try:
            directory = _directory()
            path = directory / name
            if not path.exists():
                if _state.bytes + data.size > MAX_BYTES:
                    return None
                written = directory / f".{name}.{threading.get_ident()}"
                written.write_bytes(data)
                written.rename(path)  # (whole or not at all, for a later read of the same)
                _state.bytes += data.size
        except OSError as exc:  # (a full disk, a cleaner that took the directory)
            _log.debug("log records go as a local relation: %s", exc)
            return None
    return spark.read.schema(schema).parquet(str(path))


def _plain_type(data_type: DataType) -> bool:
    """Whether Spark reads ``data_type`` back from pyarrow's parquet as it was (the
    :data:`_ATOMIC` types, and structs, arrays and maps of them)."""
    if isinstance(data_type, StructType):
        return all(_plain_type(f.dataType) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return _plain_type(data_type.elementType)
    if isinstance(data_type, MapType):
        return _plain_type(data_type.keyType) and _plain_type(data_type.valueType)
    return isinstance(data_type, _ATOMIC)


def _directory() -> Path:
    """This process's directory of record files (made on first use, removed at exit);
    called under ``_lock``."""
    if _state.directory is not None:
        _state.directory.mkdir(exist_ok=True)  # (gone if a temporary-files cleaner took it)
        return _state.directory
    base = Path(tempfile.gettempdir())
    namespace = _pid_namespace()
    for stale in base.glob(_PREFIX + "*"):
        # (Only a process of our PID namespace is known gone: a container sharing this
        # directory numbers its processes otherwise.)
        match = _DIRECTORY.match(stale.name)
        if match and match.group(1) == namespace and not _running(int(match.group(2))):
            shutil.rmtree(stale, ignore_errors=True)
    made = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{namespace}-{os.getpid()}-"))
    atexit.register(shutil.rmtree, made, True)
    _state.directory = made
    return made


def _pid_namespace() -> str:
    """This process's PID namespace (its inode on Linux; ``host`` where there is none)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "host"


def _running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one we may signal, or another
    user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
