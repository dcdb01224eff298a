"""Tagging: the stored file group of each incoming record, by the write's index type.

Each index type (:mod:`hudisql.write.index_settings`) is one small function here; all give
the same tags. The Spark writer (:mod:`hudisql.write.pipeline`) calls :func:`tag_records`
with the staged records (``_hoodie_record_key`` and ``_hoodie_partition_path`` columns)
and gets them back with ``_hudisql_file_id``: the file group holding the key, or null (an
insert), plus the latest slices of the partitions it touches.

- ``SIMPLE`` reads every stored key of those slices: base-file-only slices through Spark's
  parquet reader, slices with logs merged by the core on executors (their logs may add or
  delete keys); a write of few enough records joins them on the driver instead
  (:mod:`hudisql.write.driver_lookup`: the same tags, no shuffle of the records for it);
- ``BLOOM`` reads the keys of candidate base files only: a file is a candidate for a key
  when the key is inside the file's key range and its bloom filter admits it (checked on
  executors, one task per file; a file without a bloom filter admits every key in range).
  Slices with log files are read as ``SIMPLE`` reads them;
- ``RECORD_INDEX`` routes the keys to the record index's file groups (Java's
  ``String.hashCode``, as the metadata table does) and each task reads only its groups,
  keeping the keys asked for: no data file is read;
- ``BUCKET`` computes each key's bucket as Hudi's ``BucketIdentifier`` does:
  ``(List(hash values).hashCode() & Integer.MAX_VALUE) % buckets``, the values being the
  whole key, or the hash fields' values of a ``field:value,...`` key. A bucket's file group
  is the existing one whose id starts with its 8-digit number, else a new one whose id is
  fixed by the bucket and the partition (:func:`bucket_file_id`): two writers creating one
  bucket name the same file group and so conflict instead of splitting it.
  Every record goes to its bucket: no small-file handling, as in Hudi.

Keys match by partition and key, as ``SIMPLE`` does, for every type (a key moving to
another partition is an insert there: Hudi's global index semantics are not run). A
delete that names no partition looks keys up by key alone (``SIMPLE``; ``RECORD_INDEX``
by its own lookup).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from hudisql.metadata.bloom import BloomFilter
from hudisql.metadata.config import completed_partitions
from hudisql.metadata.keys import RecordLocation, bloom_filter_key, column_stats_key
from hudisql.metadata.records import column_range, is_live
from hudisql.metadata.table import MetadataTable
from hudisql.read.spark_files import spark_opens
from hudisql.table.format.filenames import new_file_id
from hudisql.table.format.fsview import FileSlice
from hudisql.table.io.heap import keep_freed_memory
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable
from hudisql.table.write.records import PARTITION_PATH, RECORD_KEY
from hudisql.write.driver_lookup import driver_located, fits_driver
from hudisql.write.index_settings import BLOOM, BUCKET, RECORD_INDEX, SIMPLE, IndexSettings

__all__ = ["FILE_ID", "KEYS_SCHEMA", "META_FIELDS", "TagContext", "Tagged",
           "bucket_file_id",
           "bucket_id", "existing_keys", "keys_in_base_file", "overwrite_buckets",
           "tag_records"]

#: The staged column tagging adds: the file group of the record's stored key, or null.
FILE_ID = "_hudisql_file_id"
#: Whether base files carry the ``_hoodie_*`` meta columns (Hudi's default: true).
META_FIELDS = "hoodie.populate.meta.fields"
#: (partition, key, file id) rows of stored keys.
KEYS_SCHEMA = StructType([StructField(PARTITION_PATH, StringType()),
                          StructField(RECORD_KEY, StringType()),
                          StructField(FILE_ID, StringType())])
_KEYS_ARROW = pa.schema([(PARTITION_PATH, pa.string()), (RECORD_KEY, pa.string()),
                         (FILE_ID, pa.string())])
#: Hudi's footer keys of a base file's bloom filter and key range.
FOOTER_BLOOM = "org.apache.hudi.bloomfilter"
FOOTER_BLOOM_TYPE = "hoodie_bloom_filter_type_code"
FOOTER_MIN_KEY = "hoodie_min_record_key"
FOOTER_MAX_KEY = "hoodie_max_record_key"
#: Hudi's placeholders for null and empty values in a ``field:value`` record key.
_NULL_KEY_PART = "__null__"
_EMPTY_KEY_PART = "__empty__"
_INT32 = 1 << 32
_INDEX = "_hudisql_slice"


@dataclass(frozen=True)
class TagContext:
    """What tagging needs to know about the write."""

    spark: SparkSession
    table: HudiTable
    parallelism: int
    #: The write's record count, and the most records whose ``SIMPLE`` lookup joins on the
    #: driver (:mod:`hudisql.write.driver_lookup`; 0: never).
    records: int = 0
    driver_lookup_max: int = 0

    @property
    def path(self) -> str:
        """The table's base path (executors open the table themselves)."""
        return self.table.base_path


@dataclass
class Tagged:
    """Tagged records and the latest slices of the partitions they touch.

    ``FILE_ID`` is set exactly for the stored keys, unless ``stored`` is given: ``BUCKET``
    sets it for every record whose bucket has a file group, and ``stored`` gives the
    records whose key is stored (a lookup, for ``insert``'s duplicate check). ``place``
    (``BUCKET``) gives every other record its file group and says how many new groups it
    may use; without it the writer places inserts itself (small files, new file groups).
    """

    frame: DataFrame
    slices: dict[tuple[str, str], FileSlice]
    stored: Callable[[], DataFrame] | None = None
    place: Callable[[DataFrame], tuple[DataFrame, int]] | None = None
    #: Per partition path, how many distinct keys of its records no looked-up slice holds
    #: (its inserts at most), when the lookup counted them (on the driver); else None.
    inserts: dict[str, int] | None = None
    #: Per (partition, file id), how many of the records' keys the slice holds, when the
    #: lookup counted them; else None.
    held: dict[tuple[str, str], int] | None = None
    #: When the index names every file group a record can go to before ``place`` runs
    #: (``BUCKET``): the groups' (partition, file id), and each record's number among them
    #: (a column of the frame ``place`` returns).
    numbered: tuple[list[tuple[str, str]], Column] | None = None


def tag_records(settings: IndexSettings, ctx: TagContext, staged: DataFrame,
                touched: list[str] | None, listed: list[FileSlice] | None = None,
                skip: frozenset[tuple[str, str]] = frozenset()) -> Tagged:
    """``staged`` with ``FILE_ID``, looked up by the index ``settings`` name.

    ``touched``: the partitions the records go to; None when they name no partition (a
    delete by key): keys are then looked up in every partition. ``listed``: their latest
    slices when the caller listed them already. ``skip``: (partition, file id) of file
    groups whose keys need no lookup (insert sinks,
    :func:`hudisql.table.write.small_files.insert_sinks`): ``SIMPLE`` and ``BLOOM`` read
    none of their keys, so their stored keys are untagged, as inserts are; the slices
    returned still include them.
    """
    table = ctx.table
    if listed is not None:
        slices = listed
    else:
        slices = table.file_slices(partitions=touched) if touched is not None else (
            table.file_slices())
    by_group = {(s.partition_path, s.file_id): s for s in slices}
    kind = settings.index_type
    if kind == BUCKET and touched is not None:
        return _bucket(ctx, settings, staged, touched, by_group)
    slices = [s for s in slices if (s.partition_path, s.file_id) not in skip]
    if kind == RECORD_INDEX:
        located = _record_index_locations(ctx, staged)
    elif not slices:
        return Tagged(staged.withColumn(FILE_ID, F.lit(None).cast("string")), by_group)
    elif kind == BLOOM and touched is not None:
        located = _bloom_locations(ctx, staged, slices)
    elif touched is not None and kind == SIMPLE and fits_driver(
            ctx.records, ctx.driver_lookup_max, slices):
        found = driver_located(staged, table, slices)  # broadcast, no shuffle
        return Tagged(staged.join(found.frame, [PARTITION_PATH, RECORD_KEY], "left"),
                      by_group, inserts=found.inserts, held=found.held)
    else:
        located = existing_keys(ctx, slices)
    return Tagged(_join(staged, located, touched is not None), by_group)


def _join(staged: DataFrame, located: DataFrame, with_partition: bool) -> DataFrame:
    if with_partition:
        # A hash join built on the incoming records: no sort of the (larger) stored keys;
        # on the 5M-row benchmark this stage took 3.2 s instead of 7.5 s.
        return staged.hint("shuffle_hash").join(located, [PARTITION_PATH, RECORD_KEY], "left")
    return staged.drop(PARTITION_PATH).join(located, [RECORD_KEY], "inner")


# -- SIMPLE ---------------------------------------------------------------------------------


def existing_keys(ctx: TagContext, slices: list[FileSlice]) -> DataFrame:
    """(partition, key, file id) of every record stored in ``slices`` (Hudi's simple index).

    A slice that is only a base file holds exactly its base file's keys: Spark's own
    parquet reader reads them (no Python). Slices with log files are read merged by the
    core on executors (their logs may add or delete keys).
    """
    table = ctx.table
    head = table.timeline.last_completed()
    plain, merged = _split_slices(table, slices)
    if plain and not spark_opens(ctx.spark, table.base_path):
        plain, merged = [], plain + merged  # read through pyarrow.fs on executors
    parts: list[DataFrame] = []
    if plain:
        # Base file name -> (partition, file id), looked up per row in the JVM.
        where: dict[str, tuple[str, str]] = {}
        paths = []
        for s in plain:
            assert s.base_file is not None
            where[s.base_file.name] = (s.partition_path, s.file_id)
            paths.append(table.storage.uri(s.base_file.path))
        group = F.create_map(*[v for name, (part, fid) in where.items()
                               for v in (F.lit(name), F.array(F.lit(part), F.lit(fid)))]
                             )[F.col("_metadata.file_name")]
        # The schema is given: Spark need not open a file to infer it (a job less).
        reader = ctx.spark.read.schema(StructType([StructField(RECORD_KEY, StringType())]))
        parts.append(reader.parquet(*paths).select(
            group[0].alias(PARTITION_PATH),
            F.col(RECORD_KEY).cast("string").alias(RECORD_KEY),
            group[1].alias(FILE_ID)))
    if merged:
        ids = ctx.spark.range(len(merged), numPartitions=min(len(merged), ctx.parallelism))
        parts.append(ids.mapInArrow(
            _read_keys(ctx.path, merged, head.timestamp if head else None), KEYS_SCHEMA))
    return _union(parts)


def _split_slices(table: HudiTable, slices: list[FileSlice]
                  ) -> tuple[list[FileSlice], list[FileSlice]]:
    """(base-file-only slices whose files carry the keys, the other slices)."""
    populated = table.properties.get(META_FIELDS, "true").lower() == "true"
    plain = [s for s in slices if populated and s.base_file is not None and not s.log_files]
    merged = [s for s in slices if s not in plain]
    return plain, merged


def _union(parts: list[DataFrame]) -> DataFrame:
    existing = parts[0]
    for part in parts[1:]:
        existing = existing.unionByName(part)
    return existing


def _read_keys(path: str, slices: list[FileSlice], head: str | None) -> Any:
    def read_keys(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keep_freed_memory()
        table = HudiTable.open(path)
        for batch in batches:
            for index in batch.column(0).to_pylist():
                file_slice = slices[index]
                keys = read_file_slice(table.storage, table.properties, table.timeline,
                                       file_slice, as_of=head, columns=[RECORD_KEY])
                n = keys.num_rows
                yield pa.RecordBatch.from_arrays([
                    pa.array([file_slice.partition_path] * n, pa.string()),
                    keys.column(RECORD_KEY).cast(pa.string()).combine_chunks(),
                    pa.array([file_slice.file_id] * n, pa.string()),
                ], schema=_KEYS_ARROW)
    return read_keys


# -- BLOOM ----------------------------------------------------------------------------------


def _bloom_locations(ctx: TagContext, staged: DataFrame, slices: list[FileSlice]
                     ) -> DataFrame:
    """The stored keys among the incoming ones: candidate base files by key range and bloom
    filter, then each candidate's keys read (one task per file); slices with logs in full."""
    plain, merged = _split_slices(ctx.table, slices)
    parts = [existing_keys(ctx, merged)] if merged else []
    if plain:
        ranges = _key_ranges(ctx.table, plain)
        files = ctx.spark.createDataFrame(
            [(i, s.partition_path, lo, hi) for i, (s, (lo, hi)) in enumerate(zip(
                plain, ranges, strict=True))],
            f"{_INDEX} int, _p string, _lo string, _hi string")
        key = F.col(RECORD_KEY)
        # Spark compares strings by UTF-8 bytes, Java (Hudi's footers) by UTF-16 units: they
        # agree unless both sides have characters past U+D7FF; such keys are in every range.
        in_range = ((F.col("_lo").isNull() | (key >= F.col("_lo")))
                    & (F.col("_hi").isNull() | (key <= F.col("_hi")))) | ~key.rlike(
                        "^[\\x00-\\x7F]*$")
        pairs = staged.select(PARTITION_PATH, RECORD_KEY).join(
            F.broadcast(files), (F.col(PARTITION_PATH) == F.col("_p")) & in_range
        ).select(_INDEX, RECORD_KEY)
        tasks = max(1, min(len(plain), 2 * ctx.parallelism))
        use_mdt = "bloom_filters" in completed_partitions(ctx.table.properties)
        parts.append(pairs.repartition(tasks, _INDEX).mapInArrow(
            _check_files(ctx.path, plain, use_mdt), KEYS_SCHEMA))
    return _union(parts)


def _key_ranges(table: HudiTable, plain: list[FileSlice]) -> list[tuple[str | None, str | None]]:
    """Each base file's (min, max) record key: column stats of ``_hoodie_record_key`` when
    the metadata table keeps them, else the footer's (None: unknown)."""
    stats: dict[str, tuple[str | None, str | None]] = {}
    if "column_stats" in completed_partitions(table.properties):
        wanted = {}
        for s in plain:
            assert s.base_file is not None
            wanted[column_stats_key(RECORD_KEY, s.partition_path, s.base_file.name)] = (
                s.base_file.name)
        found = MetadataTable(table).read_partition("column_stats", keys=list(wanted))
        for record_key, record in found.items():
            if is_live(record):
                r = column_range(record)
                if r.min_value is not None and r.max_value is not None:
                    stats[wanted[record_key]] = (str(r.min_value), str(r.max_value))
    out = []
    for s in plain:
        assert s.base_file is not None
        if s.base_file.name in stats:
            out.append(stats[s.base_file.name])
            continue
        meta = pq.read_metadata(table.storage.open_input_file(s.base_file.path)).metadata or {}
        lo, hi = meta.get(FOOTER_MIN_KEY.encode()), meta.get(FOOTER_MAX_KEY.encode())
        out.append((lo.decode() if lo is not None else None,
                    hi.decode() if hi is not None else None))
    return out


def _check_files(path: str, plain: list[FileSlice], use_mdt: bool) -> Any:
    def check(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keep_freed_memory()
        rows = [b for b in batches if b.num_rows]
        if not rows:
            return
        data = pa.Table.from_batches(rows).sort_by(_INDEX)
        table = HudiTable.open(path)
        counts = pc.value_counts(data.column(_INDEX))
        blooms = _metadata_blooms(table, [plain[c["values"].as_py()] for c in counts]
                                  ) if use_mdt else {}
        start = 0
        for item in counts:
            index, n = item["values"].as_py(), item["counts"].as_py()
            keys = data.column(RECORD_KEY).slice(start, n)
            start += n
            found = keys_in_base_file(table, plain[index], keys, blooms)
            if len(found):
                s = plain[index]
                yield pa.RecordBatch.from_arrays([
                    pa.array([s.partition_path] * len(found), pa.string()), found,
                    pa.array([s.file_id] * len(found), pa.string())], schema=_KEYS_ARROW)
    return check


def _metadata_blooms(table: HudiTable, slices: list[FileSlice]) -> dict[str, BloomFilter]:
    """The metadata table's bloom filters of these slices' base files, by file name."""
    names = {}
    for s in slices:
        assert s.base_file is not None
        names[bloom_filter_key(s.partition_path, s.base_file.name)] = s.base_file.name
    out = {}
    for key, record in MetadataTable(table).read_partition("bloom_filters", keys=names).items():
        meta = record.get("BloomFilterMetadata") or {}
        if meta and not meta.get("isDeleted"):
            out[names[key]] = BloomFilter.deserialize(meta["bloomFilter"], meta["type"])
    return out


def keys_in_base_file(table: HudiTable, file_slice: FileSlice, keys: pa.ChunkedArray,
                      blooms: dict[str, BloomFilter]) -> pa.Array:
    """The ``keys`` the slice's base file holds: bloom filter first, then its key column."""
    base = file_slice.base_file
    assert base is not None
    source = table.storage.open_input_file(base.path)
    bloom = blooms.get(base.name)
    parquet = pq.ParquetFile(source)
    if bloom is None:
        meta = parquet.metadata.metadata or {}
        text = meta.get(FOOTER_BLOOM.encode())
        if text is not None:
            kind = (meta.get(FOOTER_BLOOM_TYPE.encode()) or b"SIMPLE").decode()
            bloom = BloomFilter.deserialize(text, kind)
    candidates = pc.unique(keys.combine_chunks())
    if bloom is not None:
        candidates = candidates.filter(pa.array(bloom.might_contain_many(
            candidates.to_pylist())))
    if not len(candidates):
        return pa.array([], pa.string())
    stored = parquet.read(columns=[RECORD_KEY]).column(RECORD_KEY).cast(pa.string())
    return candidates.filter(pc.is_in(candidates, value_set=stored.combine_chunks()))


# -- RECORD_INDEX ---------------------------------------------------------------------------


def _record_index_locations(ctx: TagContext, staged: DataFrame) -> DataFrame:
    """The record index's (partition, key, file id) of the incoming keys it holds: the keys
    go to the task of their record-index file group, which reads only that group."""
    count = len(MetadataTable(ctx.table).require_groups(RECORD_INDEX.lower()))
    # Java's String.hashCode, as the metadata table routes keys (abs(h) % groups).
    java_hash = F.reflect(F.lit("java.util.Objects"), F.lit("hashCode"), F.col(RECORD_KEY))
    group = F.abs(java_hash.cast("long")) % F.lit(count)
    keys = staged.select(RECORD_KEY).withColumn("_group", group)
    tasks = max(1, min(count, 2 * ctx.parallelism))
    return keys.repartition(tasks, "_group").select(RECORD_KEY).mapInArrow(
        _lookup_keys(ctx.path), KEYS_SCHEMA)


def _lookup_keys(path: str) -> Any:
    def lookup(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keep_freed_memory()
        wanted: set[str] = set()
        for batch in batches:
            wanted.update(k for k in batch.column(0).to_pylist() if k is not None)
        if not wanted:
            return
        table = HudiTable.open(path)
        found = MetadataTable(table).read_partition(RECORD_INDEX.lower(), keys=wanted)
        rows: dict[str, list[str]] = {PARTITION_PATH: [], RECORD_KEY: [], FILE_ID: []}
        for key, record in found.items():
            info = record.get("recordIndexMetadata")
            if info is None:
                continue
            where = RecordLocation.from_avro(info)
            rows[PARTITION_PATH].append(where.partition_path)
            rows[RECORD_KEY].append(key)
            rows[FILE_ID].append(where.file_id)
        if rows[RECORD_KEY]:
            yield pa.RecordBatch.from_pydict(rows, schema=_KEYS_ARROW)
    return lookup


# -- BUCKET ---------------------------------------------------------------------------------


def bucket_id(settings: IndexSettings) -> Column:
    """The bucket of each record (``_hoodie_record_key``), as Hudi's ``BucketIdentifier``."""
    key = F.col(RECORD_KEY)
    complex_key = key.contains(",") & key.contains(":")
    # A plain key is a one-element list: one step, without the array functions (which
    # cost a plain key about 1 s of CPU per million records).
    hashed = F.when(complex_key, _complex_key_hash(settings.hash_fields)).otherwise(
        F.pmod(F.lit(31).cast("long") + _java_hash(key), F.lit(_INT32)))
    return (hashed.bitwiseAND(F.lit(0x7FFFFFFF)) % F.lit(settings.num_buckets)).cast("int")


def _java_hash(value: Column) -> Column:
    """Java's ``Objects.hashCode`` of a string column (0 for null), as a long."""
    return F.coalesce(F.reflect(F.lit("java.util.Objects"), F.lit("hashCode"), value)
                      .cast("long"), F.lit(0).cast("long"))


def _complex_key_hash(hash_fields: tuple[str, ...]) -> Column:
    """``java.util.List.hashCode`` (``31 * h + hashCode(e)``, in 32 bits) of the hash
    fields' values of a ``field:value,...`` key.

    One fold over the key's ``,``-separated parts: a part without ``:`` is a value, a part
    ``name:value`` of a hash field gives ``value`` (``__null__``: null, ``__empty__``: "").
    The nested ``transform``/``filter`` it replaces built four arrays per record (about 6%
    more time per million composite keys). Written as SQL so that its lambda variables
    have fixed names: the Python lambdas of ``F.transform`` get fresh names on every call,
    which changes the generated code of every write, so Spark compiled it anew each time
    (and the JIT compiled that class again): about 1 s of JVM CPU per write.
    """
    listed = ", ".join(_sql_string(f) for f in hash_fields)
    fields = f"array({listed})" if listed else "CAST(array() AS ARRAY<STRING>)"
    part, acc = "_hudisql_kv", "_hudisql_acc"
    value = f"substr({part}, instr({part}, ':') + 1)"
    named = (f"CASE {value} WHEN '{_NULL_KEY_PART}' THEN CAST(NULL AS STRING) "
             f"WHEN '{_EMPTY_KEY_PART}' THEN '' ELSE {value} END")

    def step(text: str) -> str:
        java_hash = (f"coalesce(CAST(reflect('java.util.Objects', 'hashCode', {text}) AS BIGINT),"
                     " CAST(0 AS BIGINT))")
        return f"pmod({acc} * 31 + {java_hash}, {_INT32})"

    return F.expr(
        f"aggregate(split(`{RECORD_KEY}`, ','), CAST(1 AS BIGINT), ({acc}, {part}) -> CASE "
        f"WHEN instr({part}, ':') = 0 THEN {step(part)} "
        f"WHEN array_contains({fields}, substring_index({part}, ':', 1)) THEN {step(named)} "
        f"ELSE {acc} END)")


def _sql_string(value: str) -> str:
    """``value`` as a Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def bucket_file_id(bucket: Column, salt: str = "") -> Column:
    """A file group id for ``bucket`` of the record's partition: the 8-digit bucket number,
    then the MD5 of the partition path (and ``salt``) in UUID form, then ``-0``.

    Without ``salt`` the id is fixed per partition and bucket, as Hudi's fixed bucket ids
    (``BucketIdentifier.newBucketFileIdForNBCC``) are, and unique across partitions (the
    writer groups rows by file id).
    """
    digest = F.md5(F.concat(F.coalesce(F.col(PARTITION_PATH), F.lit("")), F.lit(salt)))
    parts = [F.substring(digest, start, size) for start, size in ((1, 4), (5, 4), (9, 4),
                                                                  (13, 12))]
    return F.concat(F.lpad(bucket.cast("string"), 8, "0"), F.lit("-"), parts[0], F.lit("-"),
                    parts[1], F.lit("-"), parts[2], F.lit("-"), parts[3], F.lit("-0"))


def _bucket_file_ids(bucket: Column, partitions: list[str], salt: str = "") -> Column:
    """:func:`bucket_file_id` for records of ``partitions``, the partitions' part of the id
    computed here once instead of an MD5 per record (null for another partition)."""
    partitions = list(dict.fromkeys(partitions))
    return F.concat(F.lpad(bucket.cast("string"), 8, "0"),
                    F.get(_strings(_bucket_suffixes(partitions, salt)), _position(partitions)))


def _bucket_suffixes(partitions: list[str], salt: str = "") -> list[str]:
    """Each partition's part of its new bucket file ids (after the 8-digit bucket)."""
    out = []
    for partition in partitions:
        digest = hashlib.md5((partition + salt).encode("utf-8")).hexdigest()
        out.append(f"-{digest[:4]}-{digest[4:8]}-{digest[8:12]}-{digest[12:24]}-0")
    return out


def _strings(values: Sequence[str | None]) -> Column:
    """A literal array of strings (Spark folds it into a constant)."""
    return F.array(*[F.lit(v).cast("string") for v in values])


def _position(partitions: list[str]) -> Column:
    """The record's partition's 0-based place in ``partitions``; ``len(partitions)`` (past
    the end: ``F.get`` gives null) for another partition.

    Never null: Spark 4.3's ``element_at`` of a literal array at a null index gives the last
    element instead of null (``F.get``, used here, gives null; neither is given a null).
    """
    if not partitions:
        return F.lit(0)
    places = F.create_map(*[v for i, p in enumerate(partitions) for v in (F.lit(p), F.lit(i))])
    return F.coalesce(places[F.col(PARTITION_PATH)], F.lit(len(partitions)))


def _bucket(ctx: TagContext, settings: IndexSettings, staged: DataFrame, touched: list[str],
            by_group: dict[tuple[str, str], FileSlice]) -> Tagged:
    """Every record to its bucket's file group (an existing one in ``FILE_ID``).

    The stored groups are a literal array, ``buckets`` entries per partition that has any
    (null: no group yet), read at the record's (partition place, bucket): no string is
    built per record, and the lookup costs the same however many groups there are.
    """
    buckets = settings.num_buckets
    existing: dict[tuple[str, int], str] = {}
    for partition, file_id in sorted(by_group):
        prefix = file_id[:8]
        if prefix.isdigit() and int(prefix) < buckets:
            existing.setdefault((partition, int(prefix)), file_id)
    held = sorted({partition for partition, _ in existing})
    groups = _strings([existing.get((p, b)) for p in held for b in range(buckets)])

    # Each use computes the bucket again rather than reading a column of its own: the bucket
    # calls Java through ``reflect``, which Spark takes as nondeterministic, so a bucket
    # column would cost a projection more (a copy of every record, all its columns) while
    # one expression is evaluated in the projection that uses it, once per record that
    # needs it. The writer replaces FILE_ID with ``place``'s, so Spark drops the first.
    def stored_group() -> Column:
        if not existing:
            return F.lit(None).cast("string")
        return F.get(groups, _position(held) * F.lit(buckets) + bucket_id(settings))

    frame = staged.withColumn(FILE_ID, stored_group())

    def place(tagged: DataFrame) -> tuple[DataFrame, int]:
        placed = tagged.withColumn(FILE_ID, F.coalesce(
            stored_group(), _bucket_file_ids(bucket_id(settings), touched)))
        return placed, buckets * max(1, len(touched))

    def stored() -> DataFrame:
        slices = list(by_group.values())
        if not slices:
            return frame.limit(0)
        return frame.join(existing_keys(ctx, slices), [PARTITION_PATH, RECORD_KEY], "left_semi")

    # Every group a record can go to is known: (partition place, bucket) numbers them, the
    # stored one or the one ``place`` names, so the writer can ship numbers, not file ids.
    places = list(dict.fromkeys(touched))
    layout = [(p, existing.get((p, b)) or f"{b:08d}{suffix}")
              for p, suffix in zip(places, _bucket_suffixes(places), strict=True)
              for b in range(buckets)]
    number = _position(places) * F.lit(buckets) + bucket_id(settings)
    return Tagged(frame, by_group, stored=stored, place=place, numbered=(layout, number))


def overwrite_buckets(staged: DataFrame, settings: IndexSettings,
                      partitions: list[str] | None = None) -> DataFrame:
    """``staged`` with ``FILE_ID`` naming new file groups, one per bucket (an overwrite:
    the ids differ from the groups it replaces, as Hudi's ``newBucketFileIdPrefix``).

    ``partitions``: the partitions the records go to, when the caller knows them: their
    part of the ids is then computed once on the driver, not as an MD5 per record (the
    same ids; a record of another partition still gets its MD5).
    """
    salt = new_file_id()
    per_record = bucket_file_id(bucket_id(settings), salt)
    if partitions is None:
        return staged.withColumn(FILE_ID, per_record)
    return staged.withColumn(FILE_ID, F.coalesce(
        _bucket_file_ids(bucket_id(settings), partitions, salt), per_record))
