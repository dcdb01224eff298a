"""Which index tags an upsert's records (``hoodie.index.type``), checked before any instant.

Hudi's index types, as hudisql runs them (:mod:`hudisql.write.tagging`):

- ``SIMPLE`` (Hudi 1.x's default on Spark, and ours): the stored keys of the touched
  partitions' latest slices, joined with the incoming keys;
- ``BLOOM``: only the base files whose key range (column stats of ``_hoodie_record_key``
  or the footer's min/max record key) and bloom filter (the metadata table's
  ``bloom_filters`` partition, else the footer's) admit an incoming key have their keys
  read; slices with log files are read in full, as ``SIMPLE`` does;
- ``RECORD_INDEX``: the keys' locations in the metadata table's record index, no data
  file read; the table must have a built record index;
- ``BUCKET``: a fixed number of file groups per partition
  (``hoodie.bucket.index.num.buckets``), the record's group picked by the hash of its key
  (``hoodie.bucket.index.hash.field``, default the record key fields): no lookup at all.

Apache Hudi keeps the index configuration out of ``hoodie.properties`` and lets a write
with another bucket count corrupt the table (apache/hudi#13241). hudisql reads the three
keys from the table's properties too (set when the table is created: ``TBLPROPERTIES``,
``create_table(options=...)``, the first ``df.write``), and a write that disagrees with a
bucketed table is refused before any instant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hudisql.errors import WriteError
from hudisql.table.table import HudiTable

__all__ = [
    "BLOOM",
    "BUCKET",
    "BUCKET_HASH_FIELD",
    "BUCKET_NUM",
    "DEFAULT_NUM_BUCKETS",
    "INDEX_PROPERTIES",
    "INDEX_TYPE",
    "INDEX_TYPES",
    "RECORD_INDEX",
    "SIMPLE",
    "IndexSettings",
]

#: The write option (and table property) naming the index type.
INDEX_TYPE = "hoodie.index.type"
#: File groups per partition of a bucketed table (Hudi's default: 256).
BUCKET_NUM = "hoodie.bucket.index.num.buckets"
#: The record key fields the bucket hash covers (default: all of them).
BUCKET_HASH_FIELD = "hoodie.bucket.index.hash.field"
DEFAULT_NUM_BUCKETS = 256
#: The keys a new table keeps in its hoodie.properties when a creating write gives them.
INDEX_PROPERTIES = (INDEX_TYPE, BUCKET_NUM, BUCKET_HASH_FIELD)

SIMPLE = "SIMPLE"
BLOOM = "BLOOM"
RECORD_INDEX = "RECORD_INDEX"
BUCKET = "BUCKET"
#: The index types hudisql tags with (``SIMPLE`` is the default, as in Hudi 1.x).
INDEX_TYPES = (SIMPLE, BLOOM, RECORD_INDEX, BUCKET)
#: Hudi's other types, named in the error that refuses them.
_NOT_SUPPORTED = ("GLOBAL_SIMPLE", "GLOBAL_BLOOM", "HBASE", "INMEMORY", "FLINK_STATE")
_RECORD_INDEX_PARTITION = "record_index"


@dataclass(frozen=True)
class IndexSettings:
    """The index a write tags with: its type and, for ``BUCKET``, the bucket layout."""

    index_type: str = SIMPLE
    num_buckets: int = 0
    hash_fields: tuple[str, ...] = ()

    @classmethod
    def resolve(cls, options: Mapping[str, str], table: HudiTable, *,
                lookup: bool = True) -> IndexSettings:
        """The settings of a write to ``table`` with ``options`` (options win over the
        table's properties, except that a bucketed table's layout is fixed); ``lookup``:
        the write looks keys up (bulk inserts and overwrites do not).

        Raises:
            WriteError: an unknown index type, a bucket count or hash field that differs
                from the bucketed table's, ``BUCKET`` on a table not created bucketed, another
                index type on a bucketed table, ``RECORD_INDEX`` on a table without a built
                record index.
        """
        props = table.properties
        where = f"table {table.name}"
        stored = _index_type(props.get(INDEX_TYPE), where, "its hoodie.properties")
        given = _index_type(options.get(INDEX_TYPE), where, "the write options")
        if stored == BUCKET:
            return cls._bucketed(options, table, given)
        if given == BUCKET:
            raise WriteError(
                f"{where} was not created with the bucket index: its file groups are not "
                f"buckets. Set {INDEX_TYPE}=BUCKET and {BUCKET_NUM} when creating the table "
                "(TBLPROPERTIES, create_table options or the first df.write), or write with "
                f"another {INDEX_TYPE} ({', '.join(t for t in INDEX_TYPES if t != BUCKET)})")
        chosen = given or stored or SIMPLE
        if (lookup and chosen == RECORD_INDEX
                and _RECORD_INDEX_PARTITION not in props.metadata_partitions):
            building = _RECORD_INDEX_PARTITION in props.metadata_partitions_inflight
            raise WriteError(
                f"{where} has no {'completed ' if building else ''}record index "
                f"({INDEX_TYPE}=RECORD_INDEX looks keys up in it)"
                + ("; it is still being built: wait for CREATE INDEX to finish"
                   if building else "; create it first: CREATE INDEX record_index ON "
                   f"{table.name} ({', '.join(props.record_key_fields)}), or write with "
                   f"{INDEX_TYPE}=SIMPLE"))
        return cls(chosen)

    @classmethod
    def _bucketed(cls, options: Mapping[str, str], table: HudiTable,
                  given: str | None) -> IndexSettings:
        props = table.properties
        where = f"table {table.name}"
        if given is not None and given != BUCKET:
            raise WriteError(
                f"{where} is bucketed ({INDEX_TYPE}=BUCKET in its hoodie.properties): every "
                f"record's file group is its key's bucket, so a write with {INDEX_TYPE}="
                f"{given} would scatter keys; leave {INDEX_TYPE} out or set it to BUCKET")
        count = _bucket_count(props.get(BUCKET_NUM), where, "its hoodie.properties")
        if count is None:
            count = DEFAULT_NUM_BUCKETS
        asked = _bucket_count(options.get(BUCKET_NUM), where, "the write options")
        if asked is not None and asked != count:
            raise WriteError(
                f"{where} has {count} buckets per partition ({BUCKET_NUM} in its "
                f"hoodie.properties), not {asked}: a bucket count is fixed when the table is "
                f"created (keys would land in other file groups); leave {BUCKET_NUM} out "
                f"or set it to {count}")
        keys = tuple(props.record_key_fields)
        fields = _fields(props.get(BUCKET_HASH_FIELD)) or keys
        asked_fields = _fields(options.get(BUCKET_HASH_FIELD))
        if asked_fields and asked_fields != fields:
            raise WriteError(
                f"{where} hashes {', '.join(fields)} into buckets ({BUCKET_HASH_FIELD}), not "
                f"{', '.join(asked_fields)}; leave {BUCKET_HASH_FIELD} out")
        stray = [f for f in fields if f not in keys]
        if keys and stray:
            raise WriteError(
                f"{where}: {BUCKET_HASH_FIELD} names {stray}, which are not record key fields "
                f"({', '.join(keys)}); the bucket hash covers record key fields only")
        return cls(BUCKET, count, fields)


def _index_type(value: str | None, where: str, source: str) -> str | None:
    if value is None or not value.strip():
        return None
    name = value.strip().upper()
    if name in INDEX_TYPES:
        return name
    known = name in _NOT_SUPPORTED
    raise WriteError(
        f"{where}: {INDEX_TYPE}={value!r} in {source} is "
        f"{'an index type hudisql does not run' if known else 'not an index type'}; use one "
        f"of {', '.join(INDEX_TYPES)} (default {SIMPLE})")


def _bucket_count(value: str | None, where: str, source: str) -> int | None:
    if value is None or not str(value).strip():
        return None
    try:
        count = int(str(value).strip())
    except ValueError:
        count = 0
    if count < 1:
        raise WriteError(f"{where}: {BUCKET_NUM}={value!r} in {source} is not a positive "
                         "whole number of buckets")
    return count


def _fields(value: str | None) -> tuple[str, ...]:
    return tuple(f.strip() for f in (value or "").split(",") if f.strip())
