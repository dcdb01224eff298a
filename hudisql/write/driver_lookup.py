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
   Spark lookup reads them (the merged slice: logs may add or delete keys), while step 1's
   job runs (up to :data:`PREFETCH_BYTES` of slices);
3. each slice keeps the stored keys that some record of its partition has (Arrow's
   ``is_in``, in the reading thread), and Spark joins the records to those (partition,
   key, file id) rows, broadcast (no shuffle of the records for the lookup). The rows go
   to Spark packed, a slice's keys as one array, and Spark's tasks explode them;
4. each partition's distinct keys that no slice holds are counted: the writer shares out
   that many inserts among small and new file groups, as Hudi's partitioner does with
   its exact insert counts (the staging counts, updates included, only bound them, and
   placing that bound made new file groups for inserts the small file had room for).

The tags are those of the Spark lookup, row for row (a record matching a key stored in two
file groups is tagged with both, as there). Measured on a 1M-row table (8 file groups) and
200k records, the lookup alone took 1.2 to 1.6 s of CPU against the shuffle join's 2.4 s,
and the whole upsert (small files off) 2.6 s against 3.3 s (the tables of
``benchmarks/bench_write_read.py``; a loaded machine, so CPU time is the figure).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from hudisql.table.format.fsview import FileSlice
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable
from hudisql.table.write.records import PARTITION_PATH, RECORD_KEY
from hudisql.write.driver_write import records_option

__all__ = [
    "DEFAULT_MAX_RECORDS",
    "DRIVER_LOOKUP_MAX_RECORDS",
    "MAX_SLICE_BYTES",
    "PREFETCH_BYTES",
    "Located",
    "driver_located",
    "driver_lookup_max_records",
    "fits_driver",
    "stored_matches",
]

#: The write option: the most records whose ``SIMPLE`` lookup joins on the driver (0: never).
DRIVER_LOOKUP_MAX_RECORDS = "hudisql.write.driver.lookup.max.records"
DEFAULT_MAX_RECORDS = 2_000_000
#: The most bytes (base and log files) of the latest slices whose keys the driver reads.
MAX_SLICE_BYTES = 1 << 30
#: The most bytes of slices whose keys are read while Spark collects the records' keys.
PREFETCH_BYTES = 256 << 20
#: Threads reading slices' keys (pyarrow decodes outside the GIL).
_READERS = 4
#: The most keys packed in one row of the matches handed to Spark, and that row's column.
_PACK = 1 << 16
_KEYS = "_hudisql_keys"


def driver_lookup_max_records(options: Mapping[str, str], table_name: str) -> int:
    """The ``hudisql.write.driver.lookup.max.records`` of ``options`` (default when unset).

    Raises:
        WriteError: not a non-negative integer, naming the table.
    """
    return records_option(options, DRIVER_LOOKUP_MAX_RECORDS, DEFAULT_MAX_RECORDS, table_name,
                          "always Spark's join")


def fits_driver(records: int, limit: int, slices: Sequence[FileSlice]) -> bool:
    """Whether a lookup of ``records`` records in ``slices`` runs on the driver."""
    if records > limit:
        return False
    return sum(_slice_bytes(s) for s in slices) <= MAX_SLICE_BYTES


@dataclass(frozen=True)
class Located:
    """What the driver's lookup found (:func:`driver_located`)."""

    #: (partition, key, file id) of the stored keys some record has, to broadcast.
    frame: DataFrame
    #: Per partition path of the records, how many of their distinct keys no slice holds:
    #: the most inserts the partition can have (exact, where the staging counts only
    #: bound it, updates included).
    inserts: dict[str, int]
    #: Per (partition, file id), how many of the records' keys the slice holds (its
    #: updates): the write's estimate of each group's work.
    held: dict[tuple[str, str], int]


def driver_located(staged: DataFrame, table: HudiTable, slices: Sequence[FileSlice]
                   ) -> Located:
    """The stored keys of ``slices`` that a record of ``staged`` has (module notes)."""
    _, unmatched, found = stored_matches(
        table, slices, lambda: staged.select(PARTITION_PATH, RECORD_KEY).toArrow())
    return Located(_packed(staged, found), unmatched,
                   {(f.partition_path, f.file_id): len(keys) for f, keys in found})


def stored_matches(table: HudiTable, slices: Sequence[FileSlice],
                   collect: Callable[[], pa.Table]
                   ) -> tuple[pa.Table, dict[str, int], list[tuple[FileSlice, pa.Array]]]:
    """What ``collect`` returns (records with ``PARTITION_PATH`` and ``RECORD_KEY``: the
    keys alone, or whole records for :mod:`hudisql.write.driver_write`), per partition how
    many of its distinct keys no slice holds (its inserts, as Hudi's partitioner counts
    them), and each of ``slices`` with the stored keys that some record of its partition
    has (slices holding none left out).

    The stored keys do not depend on the records: they are read on up to :data:`_READERS`
    threads while ``collect`` runs (up to :data:`PREFETCH_BYTES` of slices; the rest after).
    """
    head = table.timeline.last_completed()
    as_of = head.timestamp if head else None

    def stored_keys(file_slice: FileSlice) -> pa.Array:
        keys = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                               as_of=as_of, columns=[RECORD_KEY]).column(RECORD_KEY)
        return keys.cast(pa.string()).combine_chunks()

    with ThreadPoolExecutor(min(_READERS, max(1, len(slices)))) as pool:
        early: dict[int, Future[pa.Array]] = {}
        budget = PREFETCH_BYTES
        for i, file_slice in enumerate(slices):
            budget -= _slice_bytes(file_slice)
            if budget < 0:
                break
            early[i] = pool.submit(stored_keys, file_slice)
        collected = collect()
        wanted = _keys_by_partition(collected.select([PARTITION_PATH, RECORD_KEY]))

        def matches(i: int, file_slice: FileSlice) -> tuple[FileSlice, pa.Array] | None:
            want = wanted.get(file_slice.partition_path)
            if want is None:
                return None
            # Submitted before any of these tasks: started (or done) by the time one waits.
            keys = early[i].result() if i in early else stored_keys(file_slice)
            # Every stored key some record has (not deduplicated: a key stored twice tags
            # its records twice, as the Spark join does).
            return file_slice, keys.filter(pc.is_in(keys, value_set=want))

        found = [m for m in pool.map(matches, range(len(slices)), slices)
                 if m is not None and len(m[1])]
    return collected, _unmatched(wanted, found), found


def _slice_bytes(file_slice: FileSlice) -> int:
    base = file_slice.base_file.size if file_slice.base_file is not None else 0
    return base + sum(log.size for log in file_slice.log_files)


def _unmatched(wanted: Mapping[str, pa.Array], found: Sequence[tuple[FileSlice, pa.Array]]
               ) -> dict[str, int]:
    """Per partition, how many of its ``wanted`` (distinct) keys no slice of ``found``
    holds. A key stored in two of its file groups counts once."""
    matched: dict[str, list[pa.Array]] = {}
    for file_slice, keys in found:
        matched.setdefault(file_slice.partition_path, []).append(keys)
    out = {}
    for partition, want in wanted.items():
        held = matched.get(partition)
        # Distinct: a key may be stored twice (a bulk insert keeps duplicates).
        out[partition] = len(want) - (len(pc.unique(pa.concat_arrays(held))) if held else 0)
    return out


def _packed(staged: DataFrame, found: Sequence[tuple[FileSlice, pa.Array]]) -> DataFrame:
    """The matches as a broadcast DataFrame of (partition, key, file id) rows."""
    from hudisql.write.tagging import FILE_ID

    # Packed: one row per slice (per :data:`_PACK` keys), the keys as an array that Spark's
    # tasks explode. Spark turns a local relation into rows one at a time on the driver:
    # 100k (partition, key, file id) rows cost about 0.6 s more JVM CPU than 16 packed ones.
    parts, ids, lists = [], [], []
    for file_slice, keys in found:
        for start in range(0, len(keys), _PACK):
            parts.append(file_slice.partition_path)
            ids.append(file_slice.file_id)
            lists.append(keys.slice(start, _PACK))
    offsets = np.cumsum([0, *(len(k) for k in lists)], dtype=np.int32)
    values = pa.concat_arrays(lists) if lists else pa.array([], pa.string())
    packed = pa.table({PARTITION_PATH: pa.array(parts, pa.string()),
                       FILE_ID: pa.array(ids, pa.string()),
                       _KEYS: pa.ListArray.from_arrays(pa.array(offsets), values)})
    frame = staged.sparkSession.createDataFrame(
        packed, schema=f"`{PARTITION_PATH}` string, `{FILE_ID}` string, `{_KEYS}` array<string>"
    ).select(PARTITION_PATH, F.explode(_KEYS).alias(RECORD_KEY), FILE_ID)
    return F.broadcast(frame)


def _keys_by_partition(pairs: pa.Table) -> dict[str, pa.Array]:
    """The distinct record keys of each partition path among (partition, key) ``pairs``."""
    pairs = pairs.combine_chunks()
    encoded = pc.dictionary_encode(pairs.column(PARTITION_PATH), null_encoding="encode").chunk(0)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=len(encoded.dictionary))
    keys = pairs.column(RECORD_KEY).cast(pa.string()).combine_chunks().take(pa.array(order))
    out, start = {}, 0
    for partition, n in zip(encoded.dictionary.to_pylist(), counts, strict=True):
        out[partition] = pc.unique(keys.slice(start, int(n)))
        start += int(n)
    return out
