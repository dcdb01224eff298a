"""The ``SIMPLE`` index's key lookup joined in Arrow on the driver, for upserts that fit there.

The Spark lookup (:func:`hudisql.write.tagging.existing_keys` joined to the records) shuffles
every incoming record, all its columns, and every stored key of the touched partitions,
only to find the few file groups that hold some of the keys; the writer then shuffles the
records again, by file group. When the write has at most
``hudisql.write.driver.lookup.max.records`` records (default :data:`DEFAULT_MAX_RECORDS`;
``0``: never) and the touched partitions' latest slices hold at most
:data:`MAX_SLICE_BYTES`, the lookup runs on the driver instead:

1. the records' (partition path, key) pairs are collected as Arrow (one Spark job);
2. the stored keys of every latest slice are read by the driver (on up to four threads), as the
   Spark lookup reads them (the merged slice: logs may add or delete keys);
3. an Arrow semi join keeps the stored (partition, key, file id) rows that some record
   matches, and Spark joins the records to those rows, broadcast (no shuffle of the
   records for the lookup).

The tags are those of the Spark lookup, row for row (a record matching a key stored in two
file groups is tagged with both, as there). Measured on a 1M-row table (8 file groups) and
200k records, the lookup alone took 1.2 to 1.6 s of CPU against the shuffle join's 2.4 s,
and the whole upsert (small files off) 2.6 s against 3.3 s (the tables of
``benchmarks/bench_write_read.py``; a loaded machine, so CPU time is the figure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from hudisql.errors import WriteError
from hudisql.table.format.fsview import FileSlice
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable
from hudisql.table.write.records import PARTITION_PATH, RECORD_KEY

__all__ = [
    "DEFAULT_MAX_RECORDS",
    "DRIVER_LOOKUP_MAX_RECORDS",
    "MAX_SLICE_BYTES",
    "driver_located",
    "driver_lookup_max_records",
    "fits_driver",
]

#: The write option: the most records whose ``SIMPLE`` lookup joins on the driver (0: never).
DRIVER_LOOKUP_MAX_RECORDS = "hudisql.write.driver.lookup.max.records"
DEFAULT_MAX_RECORDS = 2_000_000
#: The most bytes (base and log files) of the latest slices whose keys the driver reads.
MAX_SLICE_BYTES = 1 << 30
#: Threads reading slices' keys (pyarrow decodes outside the GIL).
_READERS = 4


def driver_lookup_max_records(options: Mapping[str, str], table_name: str) -> int:
    """The ``hudisql.write.driver.lookup.max.records`` of ``options`` (default when unset).

    Raises:
        WriteError: not a non-negative integer, naming the table.
    """
    value = options.get(DRIVER_LOOKUP_MAX_RECORDS)
    if value is None:
        return DEFAULT_MAX_RECORDS
    try:
        parsed = int(str(value).strip())
    except ValueError:
        parsed = -1
    if parsed < 0:
        raise WriteError(f"table {table_name}: option {DRIVER_LOOKUP_MAX_RECORDS}={value!r} is "
                         "not a number of records; give 0 (always Spark's join) or more")
    return parsed


def fits_driver(records: int, limit: int, slices: Sequence[FileSlice]) -> bool:
    """Whether a lookup of ``records`` records in ``slices`` runs on the driver."""
    if records > limit:
        return False
    total = 0
    for file_slice in slices:
        total += file_slice.base_file.size if file_slice.base_file is not None else 0
        total += sum(log.size for log in file_slice.log_files)
    return total <= MAX_SLICE_BYTES


def driver_located(staged: DataFrame, table: HudiTable, slices: Sequence[FileSlice]
                   ) -> DataFrame:
    """(partition, key, file id) of the stored keys of ``slices`` that a record of
    ``staged`` has, as a small DataFrame to broadcast (module notes)."""
    from hudisql.write.tagging import FILE_ID

    wanted = staged.select(PARTITION_PATH, RECORD_KEY).toArrow()
    head = table.timeline.last_completed()
    as_of = head.timestamp if head else None

    def keys_of(file_slice: FileSlice) -> pa.Table:
        keys = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                               as_of=as_of, columns=[RECORD_KEY]).column(RECORD_KEY)
        n = len(keys)
        return pa.table({PARTITION_PATH: pa.repeat(pa.scalar(file_slice.partition_path,
                                                             pa.string()), n),
                         RECORD_KEY: keys.cast(pa.string()),
                         FILE_ID: pa.repeat(pa.scalar(file_slice.file_id, pa.string()), n)})

    with ThreadPoolExecutor(min(_READERS, max(1, len(slices)))) as pool:
        parts = list(pool.map(keys_of, slices))
    stored = pa.concat_tables(parts) if parts else pa.table(
        {PARTITION_PATH: pa.array([], pa.string()), RECORD_KEY: pa.array([], pa.string()),
         FILE_ID: pa.array([], pa.string())})
    wanted = wanted.select([PARTITION_PATH, RECORD_KEY]).cast(
        pa.schema([(PARTITION_PATH, pa.string()), (RECORD_KEY, pa.string())]))
    # Every stored row some record matches (not deduplicated: a key stored twice tags its
    # records twice, as the Spark join does).
    found = stored.join(wanted.group_by([PARTITION_PATH, RECORD_KEY]).aggregate([]),
                        [PARTITION_PATH, RECORD_KEY], join_type="left semi")
    found = found.filter(pc.is_valid(found.column(RECORD_KEY)))
    frame = staged.sparkSession.createDataFrame(
        found.select([PARTITION_PATH, RECORD_KEY, FILE_ID]),
        schema=f"`{PARTITION_PATH}` string, `{RECORD_KEY}` string, `{FILE_ID}` string")
    return F.broadcast(frame)
