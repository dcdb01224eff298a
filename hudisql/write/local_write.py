"""Small writes staged and tagged in the driver: the rows of a few-row statement, no Spark job.

A 1-row ``INSERT``, ``UPDATE`` or ``DELETE`` through the Spark pipeline costs ten Spark jobs
(checkpoint, count, staging, key lookup, join, repartition, write), each with its planning
and task start-up, for a table of a few files: seconds where Spark's own ``INSERT INTO`` a
parquet table takes one job. A DML statement whose rows number at most
``hudisql.write.local.max.records`` (default 1,000; ``0`` never) on a table whose latest
file slices hold at most :data:`LOCAL_MAX_BYTES` is therefore collected once (its only
Spark job) and then staged, tagged and written by the driver with the same functions the
executors run (the table core's record keys and partition paths, the stored keys of the
latest slices as :mod:`hudisql.write.tagging`'s ``SIMPLE`` reads them, the small-file
rules, the per-slice writes); only the slices whose files hold one of the statement's keys
are read (:mod:`hudisql.write.local_keys`), so a statement's cost does not grow with the
table's rows. The files, the commit and the metadata table's records are
those the Spark pipeline writes; only where the work runs differs. Writes this module does
not cover go through Spark as before: keyless tables, the ``BUCKET`` index (it places
inserts by bucket), overwrites and bulk inserts.

The helpers here work on Arrow tables in the driver (no Spark job);
:class:`hudisql.write.pipeline.SparkWriter` runs them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import WriteError
from hudisql.table.format.filenames import new_file_id
from hudisql.table.format.fsview import FileSlice
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable
from hudisql.table.write.records import PARTITION_PATH, RECORD_KEY, partition_paths, record_keys
from hudisql.table.write.small_files import SmallFile
from hudisql.write.driver_write import records_option
from hudisql.write.local_keys import candidate_slices
from hudisql.write.staging import check_partition_paths
from hudisql.write.tagging import FILE_ID, META_FIELDS

__all__ = ["DEFAULT_LOCAL_MAX_RECORDS", "LOCAL_MAX_BYTES", "LOCAL_MAX_RECORDS",
           "LOCAL_OPERATIONS", "local_max_records", "place_inserts", "slices_fit",
           "stage_rows", "tag_rows"]

#: The write option: the most records a DML statement writes from the driver (0: never).
LOCAL_MAX_RECORDS = "hudisql.write.local.max.records"
DEFAULT_LOCAL_MAX_RECORDS = 1000
#: The most bytes (base and log files) of the table's latest slices a driver write reads
#: keys from: beyond it, the key lookup is Spark's parallel job.
LOCAL_MAX_BYTES = 64 << 20
#: The operations a driver write runs.
LOCAL_OPERATIONS = ("insert", "upsert", "delete")


def local_max_records(options: Mapping[str, str], table_name: str) -> int:
    """The ``hudisql.write.local.max.records`` of ``options`` (its default when unset).

    Raises:
        WriteError: not a non-negative integer.
    """
    return records_option(options, LOCAL_MAX_RECORDS, DEFAULT_LOCAL_MAX_RECORDS, table_name,
                          "never write from the driver")


def slices_fit(slices: Sequence[FileSlice]) -> bool:
    """Whether the files of ``slices`` are few enough bytes for the driver to read keys."""
    total = 0
    for file_slice in slices:
        if file_slice.base_file is not None:
            total += file_slice.base_file.size
        total += sum(log.size for log in file_slice.log_files)
        if total > LOCAL_MAX_BYTES:
            return False
    return True


def stage_rows(rows: pa.Table, key_fields: Sequence[str], partition_fields: Sequence[str],
               hive_style: bool, labelled: bool, with_partition: bool, table_name: str
               ) -> tuple[pa.Table, dict[str | None, int]]:
    """``rows`` with the record key and partition path columns, and the records per
    partition path, as the pipeline's staging job gives them.

    Raises:
        WriteError: a null or empty record key field, a partition value with ``/``
            (the messages of the Spark staging).
    """
    bad = None
    for name in key_fields:
        column = rows.column(name)
        empty = pc.equal(column.cast(pa.string()), "")
        this = pc.or_kleene(pc.is_null(column), pc.fill_null(empty, False))
        bad = this if bad is None else pc.or_kleene(bad, this)
    if bad is not None and pc.any(bad).as_py():
        row = rows.filter(bad).select(list(key_fields)).slice(0, 1).to_pylist()[0]
        raise WriteError(f"table {table_name}: a record has a null or empty record key field "
                         f"({', '.join(key_fields)}): {row}; every record needs a key")
    keys = record_keys(rows, key_fields, table_name, labelled)
    if with_partition:
        _check_slashes(rows, partition_fields, hive_style, table_name)
        parts = partition_paths(rows, partition_fields, hive_style, table_name)
    else:
        parts = pa.nulls(rows.num_rows, pa.string())
    staged = rows.append_column(RECORD_KEY, keys).append_column(PARTITION_PATH, parts)
    counts: dict[str | None, int] = {}
    for path in staged.column(PARTITION_PATH).to_pylist():
        counts[path] = counts.get(path, 0) + 1
    return staged, counts


def _check_slashes(rows: pa.Table, partition_fields: Sequence[str], hive_style: bool,
                   table_name: str) -> None:
    """Refuse a partition value with ``/`` naming its partition path, as the staging job
    does (:func:`check_partition_paths`)."""
    for field in partition_fields:
        text = rows.column(field).cast(pa.string())
        slash = pc.fill_null(pc.match_substring(text, "/"), False)
        if pc.any(slash).as_py():
            row = rows.slice(pc.index(slash, True).as_py(), 1)
            values = ["__HIVE_DEFAULT_PARTITION__" if v in (None, "") else str(v)
                      for v in (row.column(f).cast(pa.string())[0].as_py()
                                for f in partition_fields)]
            path = "/".join(f"{f}={v}" if hive_style else v
                            for f, v in zip(partition_fields, values, strict=True))
            check_partition_paths([path], partition_fields, table_name)


def tag_rows(table: HudiTable, staged: pa.Table, touched: list[str] | None,
             as_of: str | None) -> tuple[pa.Table, dict[tuple[str, str], FileSlice]]:
    """``staged`` with ``FILE_ID`` (the file group of each stored key, else null) and the
    latest slices of the partitions it touches, as :func:`tagging.tag_records` gives them.

    ``touched`` None: the records name no partition (a delete by key): keys are looked up
    in every partition, only stored keys are kept, and each takes its stored partition.
    """
    slices = table.file_slices(partitions=touched) if touched is not None else (
        table.file_slices())
    by_group = {(s.partition_path, s.file_id): s for s in slices}
    # Only the slices whose files hold one of the keys are read (hudisql.write.local_keys).
    populated = table.properties.get(META_FIELDS, "true").lower() == "true"
    wanted = pc.unique(staged.column(RECORD_KEY)).to_pylist()
    parts, keys, ids = [], [], []
    for file_slice in candidate_slices(table.storage, slices, wanted, populated,
                                       table.timeline):
        stored = read_file_slice(table.storage, table.properties, table.timeline, file_slice,
                                 as_of=as_of, columns=[RECORD_KEY])
        n = stored.num_rows
        parts.append(pa.array([file_slice.partition_path] * n, pa.string()))
        keys.append(stored.column(RECORD_KEY).cast(pa.string()).combine_chunks())
        ids.append(pa.array([file_slice.file_id] * n, pa.string()))
    located = pa.table({
        PARTITION_PATH: pa.concat_arrays(parts) if parts else pa.array([], pa.string()),
        RECORD_KEY: pa.concat_arrays(keys) if keys else pa.array([], pa.string()),
        FILE_ID: pa.concat_arrays(ids) if ids else pa.array([], pa.string())})
    if touched is not None:
        tagged = staged.join(located, [PARTITION_PATH, RECORD_KEY], join_type="left outer",
                             use_threads=False)
    else:
        tagged = staged.drop_columns([PARTITION_PATH]).join(
            located, [RECORD_KEY], join_type="inner", use_threads=False)
    return tagged, by_group


def insert_shares(count: int, small: Sequence[SmallFile], per_file: int
                  ) -> tuple[list[tuple[str, int]], int]:
    """How ``count`` inserts of one partition are shared out: (file id, records) in order,
    the small file groups first up to their capacity, then new file groups of about
    ``per_file`` records each; and how many new file ids that takes. The Spark writer and
    the driver's small writes share this, so both place inserts alike."""
    shares: list[tuple[str, int]] = []
    left = count
    for small_file in small:
        if left <= 0:
            break
        take = min(small_file.capacity, left)
        shares.append((small_file.file_slice.file_id, take))
        left -= take
    if left <= 0:
        return shares, 0
    n = math.ceil(left / per_file)
    part, rest = divmod(left, n)
    return shares + [(new_file_id(), part + (1 if i < rest else 0)) for i in range(n)], n


def place_inserts(tagged: pa.Table, counts: Mapping[str, int] | Mapping[str | None, int],
                  small: Mapping[str, list[SmallFile]], per_file: int
                  ) -> tuple[pa.Table, int]:
    """Untagged records (inserts) to the partition's small file groups, then to new ones,
    with the shares the Spark writer gives them (``SparkWriter._assign_new_groups``); returns
    the tagged rows and the new ids' count.

    Within a partition, each distinct key (numbered in the order the rows first have it)
    takes the share its number falls in, modulo the shares' total: every record of a key
    goes to one group, and the groups get their shares exactly where ``counts`` are the
    distinct inserts (the Spark writer's hash meets them only on average).
    """
    ids = tagged.column(FILE_ID).combine_chunks()
    inserts = pc.is_null(ids).to_numpy(zero_copy_only=False)
    paths = pc.dictionary_encode(tagged.column(PARTITION_PATH),
                                 null_encoding="encode").combine_chunks()
    codes = paths.indices.to_numpy(zero_copy_only=False)
    keys = tagged.column(RECORD_KEY).combine_chunks()
    names: list[str] = []
    choice = np.full(len(ids), -1, dtype=np.int64)  # index into names, -1: keeps its id
    total = 0
    code_of = {path: code for code, path in enumerate(paths.dictionary.to_pylist())}
    for partition, count in counts.items():
        shares, new_ids = insert_shares(
            count, small.get(partition, []) if partition is not None else [], per_file)
        total += new_ids
        if not shares or partition not in code_of:
            continue
        at = np.flatnonzero(inserts & (codes == code_of[partition]))
        if not len(at):
            continue
        number = pc.dictionary_encode(keys.take(pa.array(at))).indices.to_numpy(
            zero_copy_only=False)
        bounds = np.cumsum([size for _, size in shares])
        choice[at] = len(names) + np.searchsorted(bounds, number % bounds[-1], side="right")
        names += [fid for fid, _ in shares]
    if names:
        placed = pa.array(names, pa.string()).take(pa.array(choice, mask=choice < 0))
        ids = pc.coalesce(ids, placed)
    index = tagged.schema.get_field_index(FILE_ID)
    return tagged.set_column(index, FILE_ID, ids), total
