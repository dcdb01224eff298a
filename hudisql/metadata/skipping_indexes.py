"""The data-skipping steps: one per metadata-table index, each keeping the file slices that
may hold matching rows.

Every step reads only what it needs from a **completed** metadata partition (never one
being built), by key: record keys for the record index (routed to their file group),
value prefixes for a secondary index, per-file keys for bloom filters and column stats,
per-partition keys for partition stats. A step returns None when it does not apply
(no usable predicate, index absent) and the slices it keeps otherwise.

Soundness rules (a slice holding a matching row is never dropped):

- the record index maps each key to one file group. Keys are unique within a data
  partition, but the same key may live in several partitions (non-global writes), so a
  found location rules out the *other file groups of its partition* only, unless the key
  fixes the partition (non-partitioned table, or the key fields include every partition
  field): then it rules out every other slice, and an absent key rules out all;
- a secondary index is used only when keys fix the partition (its entries are
  ``value$key``: two rows of one key in two partitions share an entry);
- bloom filters of record keys cover base files only: a slice with log files is kept;
  bloom filters of a column's values (an identity expression index) cover every file of
  a slice, base and logs, and drop it only when each file has one and none may hold a
  wanted value;
- column stats drop a slice only when **every** file of it (base and logs) has statistics
  for the column and none admits the predicate; partition stats drop a whole partition
  when its range admits nothing, for partitions without log files only and never for
  ``IS NULL`` (a partition's range leaves out files without statistics). A predicate
  whose literal has no exact value in the column's type prunes nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudisql.errors import HudiSqlError
from hudisql.metadata.arrow_records import secondary_strings
from hudisql.metadata.bloom import BloomFilter
from hudisql.metadata.builders import index_spec
from hudisql.metadata.config import IndexDefinition
from hudisql.metadata.keys import (
    RecordLocation,
    bloom_filter_key,
    column_stats_key,
    partition_identifier,
    partition_stats_key,
    secondary_key_prefix,
    split_secondary_index_key,
)
from hudisql.metadata.partitions import (
    EXPR_INDEX_PREFIX,
    NON_PARTITIONED_NAME,
    SECONDARY_INDEX_PREFIX,
)
from hudisql.metadata.records import Record, column_range, is_live, live_files, value_kind
from hudisql.metadata.skipping_model import Predicate
from hudisql.metadata.skipping_values import INEXACT, column_value, comparable, range_may_match
from hudisql.metadata.table import MetadataTable
from hudisql.metadata.value_types import secondary_source, v2_keys_match
from hudisql.table.format.filenames import BaseFileName
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.schema import META_COLUMNS
from hudisql.table.table import HudiTable
from hudisql.table.write.records import record_keys
from hudisql.table.write.slices import check_writable

__all__ = ["STEPS", "SkipContext", "Step"]

FILES = "files"
#: The meta column holding each row's record key as stored (what the record index maps).
RECORD_KEY_COLUMN = META_COLUMNS[2]
RECORD_INDEX = "record_index"
BLOOM_FILTERS = "bloom_filters"
COLUMN_STATS = "column_stats"
PARTITION_STATS = "partition_stats"
#: Beyond this many key combinations of a composite key, the record index is not asked.
MAX_LOOKUP_KEYS = 10_000


@dataclass
class SkipContext:
    """What the steps share for one call: the table, its metadata table and what is usable.

    ``partitions``: the completed metadata partitions the steps may read; ``historical``:
    the snapshot is older than the latest completed write (indexes of the table's current
    state, record, secondary and partition stats, are then not used).
    """

    table: HudiTable
    mdt: MetadataTable
    partitions: frozenset[str]
    historical: bool
    schema: pa.Schema
    definitions: dict[str, IndexDefinition] = field(default_factory=dict)
    #: Set by the record index when it located the wanted keys table-wide (nothing is
    #: left for key-based indexes after it).
    exact_keys: bool = False
    #: The session's time zone (zone-less timestamp literals against zoned columns).
    time_zone: str | None = None

    def dtype(self, column: str) -> pa.DataType | None:
        """The Arrow type of a data column (None when the table has no such column)."""
        index = self.schema.get_field_index(column)
        return None if index < 0 else self.schema.field(index).type

    def read(self, partition: str, keys: list[str] | None = None,
             prefixes: list[str] | None = None) -> dict[str, Record]:
        """Merged records of a metadata partition by key (or prefix), deletions included."""
        return self.mdt.read_partition(partition, keys, prefixes)

    @property
    def keys_fix_partition(self) -> bool:
        """Whether a record key names one data partition (so keys are unique table-wide)."""
        props = self.table.properties
        parts = [p.split(":")[0] for p in props.partition_fields]
        return not parts or set(parts) <= set(props.record_key_fields)


Step = Callable[[SkipContext, list[FileSlice], Sequence[Predicate]], "list[FileSlice] | None"]


# ----------------------------------------------------------------------- helpers


def _on(predicates: Sequence[Predicate], column: str, ops: tuple[str, ...]) -> list[Predicate]:
    return [p for p in predicates if p.column == column and p.op in ops]


def _equal_values(ctx: SkipContext, predicates: Sequence[Predicate], column: str
                  ) -> list[Any] | None:
    """The values ``column`` may take by its ``=`` / ``IN`` predicates, in its type (None:
    no such predicate with exact literals)."""
    dtype = ctx.dtype(column)
    if dtype is None:
        return None
    found: list[Any] | None = None
    for p in _on(predicates, column, ("=", "in")):
        values = [column_value(v, dtype, ctx.time_zone) for v in p.values]
        if any(v is INEXACT for v in values):
            continue
        found = values if found is None else [v for v in found if v in values]
    return None if found is None else list(dict.fromkeys(found))


def _wanted_keys(ctx: SkipContext, predicates: Sequence[Predicate]) -> list[str] | None:
    """The record keys the predicates allow (every key field needs ``=`` / ``IN``), in
    the form the table's writers store them; None when they do not fix the key."""
    table = ctx.table
    stored = _equal_values(ctx, predicates, RECORD_KEY_COLUMN)
    if stored is not None:  # ``_hoodie_record_key = '...'``: the stored key itself
        return [k for k in stored if isinstance(k, str)]
    fields = table.properties.record_key_fields
    if not fields:
        return None
    try:
        labelled = check_writable(table)
    except HudiSqlError:
        return None  # keys this code cannot form: no key-based index
    per_field = []
    for name in fields:
        values = _equal_values(ctx, predicates, name)
        if values is None:
            return None
        per_field.append(values)
    combinations = 1
    for values in per_field:
        combinations *= len(values)
    if combinations > MAX_LOOKUP_KEYS:
        return None
    if combinations == 0:
        return []
    rows = list(itertools.product(*per_field))
    columns = {name: pa.array([r[i] for r in rows], ctx.dtype(name))
               for i, name in enumerate(fields)}
    keys = record_keys(pa.table(columns), fields, table.name, labelled)
    return list(dict.fromkeys(keys.to_pylist()))


def _partition_name(path: str) -> str:
    return "" if path == NON_PARTITIONED_NAME else path


def _locations(ctx: SkipContext, keys: list[str]) -> dict[str, RecordLocation]:
    records = ctx.read(RECORD_INDEX, keys) if keys else {}
    out = {}
    for key, record in records.items():
        info = record.get("recordIndexMetadata")
        if info is not None:
            out[key] = RecordLocation.from_avro(info)
    return out


def _keep_located(ctx: SkipContext, slices: list[FileSlice], keys: list[str],
                  located: Mapping[str, RecordLocation]) -> list[FileSlice]:
    """The slices that may hold one of ``keys``, given where the record index puts them."""
    file_ids = {loc.file_id for loc in located.values()}
    if ctx.keys_fix_partition:
        return [s for s in slices if s.file_id in file_ids]
    if len(located) < len(keys):
        # An absent key may still be in a partition whose copy's removal dropped the entry.
        return list(slices)
    # Within a located partition only the located file group holds the key; the same key
    # may be in any file group of another partition.
    return [s for s in slices if any(
        loc.file_id == s.file_id or _partition_name(loc.partition_path) != s.partition_path
        for loc in located.values())]


# ------------------------------------------------------------------------- steps


def record_index_step(ctx: SkipContext, slices: list[FileSlice],
                      predicates: Sequence[Predicate]) -> list[FileSlice] | None:
    """``key = v`` / ``key IN (...)``: the file groups the record index names."""
    if RECORD_INDEX not in ctx.partitions or ctx.historical:
        return None
    keys = _wanted_keys(ctx, predicates)
    if keys is None:
        return None
    kept = _keep_located(ctx, slices, keys, _locations(ctx, keys))
    ctx.exact_keys = ctx.keys_fix_partition  # only once the lookup succeeded
    return kept


def secondary_index_steps(ctx: SkipContext) -> list[tuple[str, Step]]:
    """One step per completed secondary index (``col = v`` / ``IN``, then the record index)."""
    out: list[tuple[str, Step]] = []
    for partition in sorted(ctx.partitions):
        if not partition.startswith(SECONDARY_INDEX_PREFIX):
            continue
        definition = ctx.definitions.get(partition)
        if definition is None or len(definition.source_fields) != 1:
            continue
        column = definition.source_fields[0]
        dtype = ctx.dtype(column)
        if definition.version == "V2" and dtype is not None and not v2_keys_match(dtype):
            # Hudi 1.1's V2 keys hold such values in their Avro form, not the text hudisql
            # looks up: scanning is right, a lookup is not.
            continue
        out.append((partition, _secondary_step(partition, column, definition.version)))
    return out


def _secondary_step(partition: str, column: str, version: str | None = None) -> Step:
    def step(ctx: SkipContext, slices: list[FileSlice], predicates: Sequence[Predicate]
             ) -> list[FileSlice] | None:
        if (ctx.historical or RECORD_INDEX not in ctx.partitions
                or not ctx.keys_fix_partition):
            return None
        values = _equal_values(ctx, predicates, column)
        dtype = ctx.dtype(column)
        if values is None or dtype is None:
            return None
        texts = secondary_strings(secondary_source(pa.array(values, dtype), version)).to_pylist()
        prefixes = [secondary_key_prefix(t) for t in texts]
        keys: set[str] = set()
        if prefixes:
            for key, record in ctx.read(partition, None, prefixes).items():
                value, record_key = split_secondary_index_key(key)
                if is_live(record) and value in texts:
                    keys.add(record_key)
        ordered = sorted(keys)
        return _keep_located(ctx, slices, ordered, _locations(ctx, ordered))
    return step


def bloom_filter_step(ctx: SkipContext, slices: list[FileSlice],
                      predicates: Sequence[Predicate]) -> list[FileSlice] | None:
    """``key = v`` / ``IN``: base-file-only slices whose key bloom filter holds none."""
    if BLOOM_FILTERS not in ctx.partitions:
        return None
    if ctx.exact_keys:
        return None  # the record index already named the only file groups with the keys
    definition = ctx.definitions.get(BLOOM_FILTERS)
    if definition is not None and definition.source_fields and set(
            definition.source_fields) != set(ctx.table.properties.record_key_fields):
        return None  # filters of another column's values: not what is looked up here
    keys = _wanted_keys(ctx, predicates)
    if keys is None:
        return None
    by_key = {bloom_filter_key(s.partition_path, s.base_file.name): s for s in slices
              if s.base_file is not None and not s.log_files}
    records = ctx.read(BLOOM_FILTERS, sorted(by_key)) if by_key and keys else {}
    ruled_out = set()
    for key, s in by_key.items():
        record = records.get(key)
        meta = record.get("BloomFilterMetadata") if record is not None else None
        if meta is None or not is_live(record):  # type: ignore[arg-type]
            continue
        bloom = BloomFilter.deserialize(meta["bloomFilter"], meta["type"])
        if not keys or not bloom.might_contain_many(keys).any():
            ruled_out.add(id(s))
    return [s for s in slices if id(s) not in ruled_out]


def value_bloom_steps(ctx: SkipContext) -> list[tuple[str, Step]]:
    """One step per completed bloom filter index of a column's own values (``CREATE INDEX
    ... USING bloom_filters (col)`` on a column that is not the record key: an identity
    expression index), for ``col = v`` / ``IN``."""
    out: list[tuple[str, Step]] = []
    for partition in sorted(ctx.partitions):
        definition = ctx.definitions.get(partition)
        if (not partition.startswith(EXPR_INDEX_PREFIX) or definition is None
                or definition.index_type != BLOOM_FILTERS
                or definition.index_function != "identity"
                or len(definition.source_fields) != 1):
            continue
        out.append((partition, _value_bloom_step(partition, definition.source_fields[0])))
    return out


def _value_bloom_step(partition: str, column: str) -> Step:
    def step(ctx: SkipContext, slices: list[FileSlice], predicates: Sequence[Predicate]
             ) -> list[FileSlice] | None:
        values = _equal_values(ctx, predicates, column)
        dtype = ctx.dtype(column)
        if values is None or dtype is None:
            return None
        # The filters hold each file's values as the index stores them (Java toString).
        texts = secondary_strings(pa.array(values, dtype).drop_null()).to_pylist()
        files = {id(s): [f.name for f in ([s.base_file] if s.base_file else [])] +
                 [log.name for log in s.log_files] for s in slices}
        keys = {(s.partition_path, name): bloom_filter_key(s.partition_path, name)
                for s in slices for name in files[id(s)]}
        records = ctx.read(partition, sorted(set(keys.values()))) if keys else {}

        def may_hold(s: FileSlice) -> bool:
            names = files[id(s)]
            if not names:
                return True
            for name in names:
                record = records.get(keys[(s.partition_path, name)])
                meta = record.get("BloomFilterMetadata") if record is not None else None
                if meta is None or not is_live(record):  # type: ignore[arg-type]
                    return True  # a file without a filter: it may hold anything
                bloom = BloomFilter.deserialize(meta["bloomFilter"], meta["type"])
                if texts and bloom.might_contain_many(texts).any():
                    return True
            return False

        return [s for s in slices if may_hold(s)]
    return step


def _stats_predicates(ctx: SkipContext, partition: str, predicates: Sequence[Predicate]
                      ) -> list[tuple[Predicate, str]]:
    """The predicates on columns ``partition`` indexes, with literals made comparable."""
    columns = set(index_spec(ctx.table, partition, ctx.definitions).source_fields)
    out = []
    for p in predicates:
        dtype = ctx.dtype(p.column)
        if p.column not in columns or dtype is None:
            continue
        usable = comparable(p, dtype, ctx.time_zone)
        kind = value_kind(dtype)
        if usable is not None and kind is not None:
            out.append((usable, kind))
    return out


def _without_log_files(ctx: SkipContext, partitions: list[str]) -> set[str]:
    """The partitions whose committed files (the ``files`` index) are all base files."""
    keys = {partition_identifier(p): p for p in partitions}
    records = ctx.read(FILES, sorted(keys))
    out = set()
    for key, partition in keys.items():
        record = records.get(key)
        if record is not None and not any(
                BaseFileName.parse(name) is None for name in live_files(record)):
            out.add(partition)
    return out


def partition_stats_step(ctx: SkipContext, slices: list[FileSlice],
                         predicates: Sequence[Predicate]) -> list[FileSlice] | None:
    """Whole data partitions whose column ranges admit no matching row.

    A partition's range merges the ranges its files have; a file without one (a log file
    of an expression update, ``SET c = c + 1``, whose values no file holds; a file
    written before the column existed, whose rows are null in it) is missing from it.
    So partition stats are trusted only for partitions without log files (per the
    ``files`` index), and never for ``IS NULL``; column stats cover the rest file by file.
    """
    if PARTITION_STATS not in ctx.partitions or FILES not in ctx.partitions or ctx.historical:
        return None
    usable = [(p, kind) for p, kind in _stats_predicates(ctx, PARTITION_STATS, predicates)
              if p.op != "is_null"]
    if not usable:
        return None
    partitions = _without_log_files(ctx, sorted({s.partition_path for s in slices}))
    wanted = {(p.column, part): partition_stats_key(p.column, part)
              for p, _ in usable for part in partitions}
    records = ctx.read(PARTITION_STATS, sorted(set(wanted.values()))) if wanted else {}
    ruled_out = set()
    for part in partitions:
        for p, kind in usable:
            record = records.get(wanted[(p.column, part)])
            if record is None or not is_live(record):
                continue
            if not range_may_match(p, column_range(record), kind):
                ruled_out.add(part)
                break
    return [s for s in slices if s.partition_path not in ruled_out]


def column_stats_step(ctx: SkipContext, slices: list[FileSlice],
                      predicates: Sequence[Predicate]) -> list[FileSlice] | None:
    """Slices none of whose files (base and logs, each with statistics) can match."""
    if COLUMN_STATS not in ctx.partitions:
        return None
    usable = _stats_predicates(ctx, COLUMN_STATS, predicates)
    if not usable:
        return None
    columns = sorted({p.column for p, _ in usable})
    names = {id(s): [f.name for f in ([s.base_file] if s.base_file else [])] +
             [log.name for log in s.log_files] for s in slices}
    keys = {(c, s.partition_path, name): column_stats_key(c, s.partition_path, name)
            for s in slices for name in names[id(s)] for c in columns}
    records = ctx.read(COLUMN_STATS, sorted(set(keys.values())))

    def may_hold(s: FileSlice) -> bool:
        files = names[id(s)]
        if not files:
            return True
        for p, kind in usable:
            found = [records.get(keys[(p.column, s.partition_path, name)]) for name in files]
            if any(r is None or not is_live(r) for r in found):
                continue  # a file without statistics for the column: it may hold anything
            if not any(range_may_match(p, column_range(r), kind)  # type: ignore[arg-type]
                       for r in found):
                return False
        return True

    return [s for s in slices if may_hold(s)]


#: The steps in the order they run: exact and cheap first.
STEPS: tuple[tuple[str, Step], ...] = (
    (RECORD_INDEX, record_index_step),
    (PARTITION_STATS, partition_stats_step),
    (BLOOM_FILTERS, bloom_filter_step),
    (COLUMN_STATS, column_stats_step),
)
