"""The pure-Python writer's format steps, shared by the core writer and Spark's executors.

Which tables hudisql can write (:func:`check_writable`: key generators whose keys it forms),
the writer schema (:func:`writer_schema`), record ordering (:func:`event_time_field`), and
writing one planned file slice (:func:`write_slice`, :func:`merge_copy_on_write`,
:func:`copy_on_write_merge`). No commit protocol here: that is ``hudisql.txn``'s
(:class:`hudisql.txn.writer.WriteClient`).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import UnsupportedFormatError
from hudisql.table.format import properties as P
from hudisql.table.format.commit_metadata import WriteStat
from hudisql.table.format.schema import META_COLUMNS, avro_to_arrow
from hudisql.table.read.merge import conform_table, read_file_slice
from hudisql.table.table import HudiTable
from hudisql.table.write.files import write_base_file, write_log_file
from hudisql.table.write.plan import SliceWrite
from hudisql.table.write.records import RECORD_KEY, is_key_type

__all__ = [
    "CopyOnWriteMerge",
    "check_writable",
    "copy_on_write_merge",
    "event_time_field",
    "merge_copy_on_write",
    "write_slice",
    "writer_schema",
]

_KEYGEN = "org.apache.hudi.keygen."
#: Key generators whose keys and partition paths this writer forms, and whether their
#: record keys are ``field:value`` pairs (None: only for several key fields).
_KEY_GENERATORS: dict[str, bool | None] = {
    _KEYGEN + "SimpleKeyGenerator": False,
    _KEYGEN + "SimpleAvroKeyGenerator": False,
    _KEYGEN + "ComplexKeyGenerator": True,
    _KEYGEN + "ComplexAvroKeyGenerator": True,
    _KEYGEN + "NonpartitionedKeyGenerator": None,
    _KEYGEN + "NonpartitionedAvroKeyGenerator": None,
}


def check_writable(table: HudiTable) -> bool:
    """Whether record keys are labelled; raises when the writer cannot form Hudi's keys.

    Raises:
        UnsupportedFormatError: a key generator, key type or partition encoding this writer
            does not reproduce (writing would put records under keys Hudi would not use).
    """
    props, where = table.properties, f"table {table.name} at {table.base_path}"
    keygen = props.keygenerator_class
    keys, parts = props.record_key_fields, props.partition_fields
    if keygen is not None and keygen not in _KEY_GENERATORS:
        raise UnsupportedFormatError(
            f"{where} uses the key generator {keygen}; hudisql writes tables with the simple, "
            "complex or non-partitioned key generators only: write to it with Apache Hudi"
        )
    if not keys and props.get(P.POPULATE_META_FIELDS, "true").lower() == "false":
        raise UnsupportedFormatError(
            f"{where} has no record key fields and no meta columns, so its records have no "
            "key hudisql could address: write to it with Apache Hudi")
    if props.url_encode_partitions or props.get(P.DROP_PARTITION_COLUMNS, "false") == "true":
        raise UnsupportedFormatError(
            f"{where} URL-encodes partition paths or drops partition columns; hudisql does "
            "not write such tables: write to it with Apache Hudi"
        )
    _, schema = writer_schema(table)
    for field in [*keys, *parts]:
        if schema.get_field_index(field) < 0 or not is_key_type(schema.field(field).type):
            kind = "missing" if schema.get_field_index(field) < 0 else schema.field(field).type
            raise UnsupportedFormatError(
                f"{where}: key or partition field {field!r} is {kind}; hudisql forms keys from "
                "string, integer, boolean, date and decimal columns only"
            )
    labelled = _KEY_GENERATORS.get(keygen or "")
    if keygen is not None and labelled is False and len(keys) > 1:
        raise UnsupportedFormatError(f"{where}: {keygen} takes one record key field, not {keys}")
    return len(keys) > 1 if labelled is None else labelled




def event_time_field(props: P.TableProperties) -> str | None:
    """The precombine field when a stored record beats an incoming one with a smaller value.

    Returns None under commit-time ordering (``hoodie.record.merge.mode`` or the
    ``OverwriteWithLatestAvroPayload`` payload class, as Hudi and the hudi reader apply it):
    the later write wins.
    """
    if props.merge_mode == P.COMMIT_TIME_ORDERING:
        return None
    return props.precombine_field


def writer_schema(table: HudiTable) -> tuple[dict[str, Any], pa.Schema]:
    """The table's Avro schema without meta fields, and its Arrow schema."""
    avro = json.loads(table.avro_schema)
    avro["fields"] = [f for f in avro.get("fields", []) if f["name"] not in META_COLUMNS]
    return avro, avro_to_arrow(avro)


def write_slice(
    table: HudiTable, work: SliceWrite, ts: str, token: str, schema_text: str, codec: str
) -> WriteStat:
    """Write one planned slice of instant ``ts``: a new base file, a log file (merge-on-read
    updates and deletes) or a rewritten base file (copy-on-write); returns its write stat."""
    storage, props = table.storage, table.properties
    file_slice = work.file_slice
    if file_slice is None:
        assert work.records is not None
        return write_base_file(
            storage, work.partition_path, work.file_id, ts, token, work.records, schema_text,
            compression=codec,
        )
    if props.is_mor:
        base_file = file_slice.base_file.name if file_slice.base_file is not None else None
        return write_log_file(
            storage, work.partition_path, work.file_id, file_slice.base_instant, ts, token,
            work.records, schema_text, deletes=work.deletes, attempt=0,
            block_sequence_start=0, base_file=base_file, num_updates=work.updates,
            named_by_instant=props.version >= 8,
        )
    merged, updated, deleted = merge_copy_on_write(table, work)
    return write_base_file(
        storage, work.partition_path, work.file_id, ts, token, merged, schema_text,
        prev_commit=file_slice.base_instant, num_updates=updated, num_deletes=deleted,
        compression=codec,
    )


def merge_copy_on_write(table: HudiTable, work: SliceWrite) -> tuple[pa.Table, int, int]:
    """The slice's stored rows with ``work`` applied, in file order; (rows, updated, deleted).

    See :func:`copy_on_write_merge`, which also says what the merge did to which rows.
    """
    merge = copy_on_write_merge(table, work)
    return merge.rows, merge.updated, merge.deleted


@dataclass(frozen=True)
class CopyOnWriteMerge:
    """A copy-on-write merge of one file slice: the rows it writes and how they came about
    (what an index kept in sync needs: which keys came, went or got new values)."""

    #: The merged rows, in file order.
    rows: pa.Table
    #: How many stored rows an incoming record replaced, and how many a delete removed.
    updated: int
    deleted: int
    #: The slice's rows before the merge.
    stored: pa.Table
    #: Positions (in ``stored``) of the rows incoming records replaced ...
    replaced: np.ndarray
    #: ... and those records, in the same order.
    winners: pa.Table
    #: Stored rows that are gone (deleted, not replaced): a mask over ``stored``.
    removed: np.ndarray
    #: The incoming records of keys the slice did not hold (inserts), or None.
    inserts: pa.Table | None


def copy_on_write_merge(table: HudiTable, work: SliceWrite) -> CopyOnWriteMerge:
    """The slice's stored rows with ``work`` applied (see :class:`CopyOnWriteMerge`).

    An update replaces the stored row in place unless its precombine value is smaller
    (under event-time ordering; see :func:`event_time_field`). Records whose key the
    slice does not hold are inserts (small-file handling routes them here): they follow
    the stored rows. A key both updated and deleted keeps its update.
    """
    assert work.file_slice is not None
    storage, props = table.storage, table.properties
    schema = table.schema
    if work.records is not None:  # columns the write adds (schema evolution on write)
        added = [f for f in work.records.schema if schema.get_field_index(f.name) < 0]
        schema = pa.schema([*schema, *added])
    stored = read_file_slice(storage, props, table.timeline, work.file_slice, schema=schema)
    stored_keys = stored.column(RECORD_KEY)
    n = stored.num_rows
    replaced = np.zeros(n, dtype=bool)
    spots = pa.array([], pa.int64())
    winners = stored.schema.empty_table()
    inserts = None
    pieces = []
    if work.records is not None and work.records.num_rows:
        incoming = conform_table(work.records, schema)
        position = pc.index_in(incoming.column(RECORD_KEY), value_set=stored_keys)
        wins = pc.is_valid(position)
        ordering = event_time_field(props)
        if ordering is not None:
            old = pc.take(stored.column(ordering), position)
            newer = pc.greater_equal(incoming.column(ordering), old)
            wins = pc.and_(wins, pc.fill_null(newer, True))
        winners = incoming.filter(wins)
        spots = pc.filter(position, wins).cast(pa.int64())
        replaced[np.asarray(spots)] = True
        pieces.append(winners)
        new = pc.is_null(position)
        if pc.any(new).as_py():
            inserts = incoming.filter(new)
            pieces.append(inserts)
    gone = np.zeros(n, dtype=bool)
    if work.deletes:
        gone = np.asarray(pc.is_in(stored_keys, value_set=pa.array(
            [d.record_key for d in work.deletes])).to_numpy(zero_copy_only=False), dtype=bool)
    removed = gone & ~replaced
    # One take of (stored, winners, inserts): a winner in its stored row's place, removed
    # rows left out, inserts after the stored rows.
    order = np.arange(n, dtype=np.int64)
    order[np.asarray(spots)] = n + np.arange(winners.num_rows, dtype=np.int64)
    order = order[~removed]
    if inserts is not None:
        start = n + winners.num_rows
        order = np.concatenate([order, np.arange(start, start + inserts.num_rows,
                                                 dtype=np.int64)])
    merged = pa.concat_tables([stored, *pieces])
    if len(spots) or removed.any():
        # A take of one chunk is several times faster; string data past 2 GiB stays chunked.
        with contextlib.suppress(pa.ArrowInvalid, pa.ArrowCapacityError):
            merged = merged.combine_chunks()
        merged = merged.take(pa.array(order))
    # else the order is the stored rows then the inserts: ``merged`` as it is (no copy; a
    # small file taking inserts and no updates, the common rewrite).
    return CopyOnWriteMerge(merged, winners.num_rows,
                            int(removed.sum()), stored, np.asarray(spots), winners, removed,
                            inserts)
