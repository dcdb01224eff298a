"""Upserts and inserts of up to two million records written by the driver, on a local master.

On a local master (``local``, ``local[N]``, ``local[*]``) Spark's executors are threads of
the driver's JVM on the driver's machine: the write tasks' Python workers and the driver
share its cores. The Spark pipeline (:mod:`hudisql.write.pipeline`) then pays for work that
buys no parallelism the driver lacks: a broadcast of the lookup's matches, a shuffle of
every record by file group, each record turned into Arrow again for the Python workers,
and their start-up. On the 5M-row upsert of 1M records of ``benchmarks/bench_write_read.py``
(two cores) the Spark tasks took 2.42 s (4.48 s of CPU), the driver 1.66 s (2.93 s).

So an upsert or insert with the ``SIMPLE`` index (or an upsert with ``BUCKET``) of at most
``hudisql.write.driver.max.records`` records (default
:data:`DEFAULT_MAX_RECORDS`; ``0``: never) whose records take at most :data:`MAX_BYTES`
(:func:`record_bytes`) and whose touched slices the driver's lookup may read
(:data:`hudisql.write.driver_lookup.MAX_SLICE_BYTES`) is collected once as Arrow (Spark's
only job after the staging count) while the driver reads the stored keys of the touched
partitions (:func:`hudisql.write.driver_lookup.stored_matches`); the records are tagged
with the file groups holding their keys, the inserts placed as the Spark writer places
them (small files first, Hudi's ``hoodie.parquet.small.file.limit``), and the file groups
written by a pool of threads (as many as Spark's cores) with the same per-slice functions
the write tasks run. Most of that time is in pyarrow's readers, writers and kernels,
which release the GIL, so the threads share the cores. The files, the commit and the
metadata table's records are the pipeline's; only where the work runs differs.

The Spark pipeline still writes: a cluster (the driver's cores are not the executors'),
more records, keyless tables, the ``BLOOM`` and ``RECORD_INDEX`` indexes (they read other
files than the stored keys), inserts into a ``BUCKET`` table (their duplicate check is a
Spark join), bulk inserts, overwrites, deletes, expression writes, and writes with
injected task failures (they test Spark's retries).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import TableServiceError, WriteError
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.service_plans import int_setting
from hudisql.table.write.records import (
    PARTITION_PATH,
    RECORD_KEY,
    partition_paths,
    record_keys,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["DEFAULT_MAX_RECORDS", "DRIVER_MAX_RECORDS", "MAX_BYTES", "OPERATIONS",
           "collect_staged", "driver_max_records", "local_master", "record_bytes", "records_option",
           "tag_matched"]

#: The write option: the most records an upsert or insert writes from the driver (0: never).
DRIVER_MAX_RECORDS = "hudisql.write.driver.max.records"
DEFAULT_MAX_RECORDS = 2_000_000
#: The most bytes of records a driver write collects (as :func:`record_bytes` estimates).
MAX_BYTES = 512 << 20
#: The bytes :func:`record_bytes` counts for a value of a type of no fixed width.
VARIABLE_WIDTH = 32
#: The operations a driver write runs.
OPERATIONS = ("upsert", "insert")


def driver_max_records(options: Mapping[str, str], table_name: str) -> int:
    """The ``hudisql.write.driver.max.records`` of ``options`` (its default when unset).

    Raises:
        WriteError: not a non-negative integer, naming the table.
    """
    return records_option(options, DRIVER_MAX_RECORDS, DEFAULT_MAX_RECORDS, table_name,
                          "always Spark's write tasks")


def records_option(options: Mapping[str, str], key: str, default: int, table_name: str,
                   zero: str) -> int:
    """The number of records option ``key`` of ``options`` gives (``default`` when unset),
    for the options that bound what the driver does (``zero`` says what ``0`` means).

    Raises:
        WriteError: not a non-negative integer, naming the table and the option.
    """
    try:
        return int_setting(options, key, default, 0)
    except TableServiceError:
        raise WriteError(f"table {table_name}: option {key}={options.get(key)!r} is not a "
                         f"number of records; give 0 ({zero}) or more") from None


def local_master(master: str | None) -> int | None:
    """The threads of a local Spark ``master`` (``local`` 1, ``local[N]`` N, ``local[*]``
    and ``local[*, retries]`` the machine's cores); None for any other master."""
    found = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", (master or "").strip())
    if found is None:
        return None
    threads = found.group(1)
    if threads is None:
        return 1
    return max(1, os.cpu_count() or 1) if threads == "*" else max(1, int(threads))


def record_bytes(schema: pa.Schema, stored: int) -> int:
    """The bytes of one record of ``schema`` in Arrow, estimated: its fixed-width fields'
    widths, :data:`VARIABLE_WIDTH` for other fields and for the staged key and partition
    path; or ``stored`` (the table's base files' bytes per record, compressed) when more."""
    width = 2 * VARIABLE_WIDTH
    for field in schema:
        try:
            width += max(1, field.type.bit_width // 8)
        except ValueError:  # strings, binaries, nested types
            width += VARIABLE_WIDTH
    return max(width, stored)


def collect_staged(staged: DataFrame, key_fields: Sequence[str],
                   partition_fields: Sequence[str], hive_style: bool, labelled: bool,
                   table_name: str, keyed_in_jvm: bool) -> pa.Table:
    """The staged records (with ``RECORD_KEY`` and ``PARTITION_PATH`` last) on the driver.

    ``keyed_in_jvm``: their keys and partition paths are Spark expressions
    (:func:`hudisql.write.staging.stage_in_jvm`), whose text is the table core's. Spark then
    computes and sends neither: they are formed again here from the records' own columns
    (1M records of ``benchmarks/bench_write_read.py`` came over in 0.30 s instead of 0.42 s,
    their keys formed in 0.03 s). Else (keys staged with Arrow, persisted) as they are.
    """
    if not keyed_in_jvm:
        return staged.toArrow()
    rows = staged.drop(RECORD_KEY, PARTITION_PATH).toArrow()
    # (The staging count refused null or empty keys and partition values with "/".)
    keys = record_keys(rows, key_fields, table_name, labelled)
    paths = partition_paths(rows, partition_fields, hive_style, table_name)
    return rows.append_column(RECORD_KEY, keys).append_column(PARTITION_PATH, paths)


def tag_matched(rows: pa.Table, found: Sequence[tuple[FileSlice, pa.Array]],
                file_id: str) -> pa.Table:
    """``rows`` with a ``file_id`` column: the file group of the slice in ``found`` that
    holds the row's (partition, key), else null, as the Spark join tags them.

    A key that ``found`` has twice (stored in two file groups, as a bulk insert may leave
    it) tags its rows once per group, as the join does: those tables are joined (Arrow's
    hash join); the rest take an index lookup, several times cheaper.
    """
    empty = pa.array([], pa.string())
    keys = pa.concat_arrays([m for _, m in found]) if found else empty
    parts = pa.concat_arrays([pa.repeat(pa.scalar(s.partition_path, pa.string()), len(m))
                              for s, m in found]) if found else empty
    ids = pa.concat_arrays([pa.repeat(pa.scalar(s.file_id, pa.string()), len(m))
                            for s, m in found]) if found else empty
    if len(pc.unique(keys)) != len(keys):
        stored = pa.table({PARTITION_PATH: parts, RECORD_KEY: keys, file_id: ids})
        return rows.join(stored, [PARTITION_PATH, RECORD_KEY], join_type="left outer")
    at = pc.index_in(rows.column(RECORD_KEY), value_set=keys)
    same = pc.fill_null(pc.equal(parts.take(at), rows.column(PARTITION_PATH)), False)
    return rows.append_column(file_id, pc.if_else(same, ids.take(at),
                                                  pa.scalar(None, pa.string())))
