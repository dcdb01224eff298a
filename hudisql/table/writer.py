"""Writing Hudi tables without Spark: create a table, then insert, upsert, delete, roll back.

:func:`create_table` lays down a version-6 table (``hoodie.properties`` and the timeline
folders). :class:`WriteClient` makes each write one whole commit, as Hudi does:
``requested`` -> ``inflight`` (holding the planned write stats) -> data files ->
``completed`` (v6 JSON commit metadata). Merge-on-read tables take updates and deletes as
new log files of Avro data and delete blocks; copy-on-write tables rewrite the base file
of each file group they touch. Inserts always start new file groups. The per-slice steps
(:func:`write_base_file`, :func:`write_log_file`) are pure functions Spark executors run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import (
    CommitConflictError,
    UnsupportedFormatError,
    UnsupportedTableVersionError,
    WriteError,
)
from hudisql.table import properties as P
from hudisql.table.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.filenames import write_token
from hudisql.table.fsview import FileSystemView
from hudisql.table.instant import Action
from hudisql.table.merge import conform_table, read_file_slice
from hudisql.table.reconcile import record_committed_log_files
from hudisql.table.schema import META_COLUMNS, avro_to_arrow
from hudisql.table.table import HudiTable
from hudisql.table.write_create import TIMELINE_FOLDERS, create_table
from hudisql.table.write_files import (
    MARKER_DIR,
    avro_text,
    parquet_codec,
    write_base_file,
    write_log_file,
)
from hudisql.table.write_plan import (
    ExistingKeys,
    SliceWrite,
    composite_keys,
    plan_deletes,
    plan_inserts,
    plan_upserts,
)
from hudisql.table.write_records import (
    PARTITION_PATH,
    RECORD_KEY,
    Records,
    conform_records,
    is_key_type,
    partition_paths,
    precombine,
    record_keys,
)
from hudisql.table.write_rollback import StepHook, rollback_instant
from hudisql.write.commit import check_write_conflicts
from hudisql.write.heartbeat import Heartbeat, heartbeat_settings
from hudisql.write.schema_conflict import TableSchema, resolve_commit_schema, validation_lock
from hudisql.write.schema_evolution import evolve_on_write

__all__ = [
    "TIMELINE_FOLDERS",
    "CommitResult",
    "WriteClient",
    "create_table",
    "write_base_file",
    "write_log_file",
]

DEFAULT_MAX_RECORDS_PER_FILE = 1_000_000

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


def _check_writable(table: HudiTable) -> bool:
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
    _, schema = _writer_schema(table)
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


#: Hudi's payload that lets the later write win whatever the precombine values.


def event_time_field(props: P.TableProperties) -> str | None:
    """The precombine field when a stored record beats an incoming one with a smaller value.

    Returns None under commit-time ordering (``hoodie.record.merge.mode`` or the
    ``OverwriteWithLatestAvroPayload`` payload class, as Hudi and the hudi reader apply it):
    the later write wins.
    """
    if props.merge_mode == P.COMMIT_TIME_ORDERING:
        return None
    return props.precombine_field


def _writer_schema(table: HudiTable) -> tuple[dict[str, Any], pa.Schema]:
    """The table's Avro schema without meta fields, and its Arrow schema."""
    avro = json.loads(table.avro_schema)
    avro["fields"] = [f for f in avro.get("fields", []) if f["name"] not in META_COLUMNS]
    return avro, avro_to_arrow(avro)


@dataclass(frozen=True)
class CommitResult:
    """A completed write: its instant time, action and commit metadata."""

    instant_time: str
    action: str
    metadata: CommitMetadata

    def write_stats(self) -> list[WriteStat]:
        """Every write stat of the commit."""
        return self.metadata.write_stats()


def _no_step(event: str, detail: str) -> None:
    return None


class WriteClient:
    """Writes to one version-6 table without Spark; every call is one whole commit.

    Commits like the Spark pipeline's transactions: a heartbeat keeps the instant alive while
    it writes, and under the table lock (``hoodie.write.lock.provider``) a write that lost
    its instant to another writer's rollback, or whose file groups a write completed
    meanwhile also touched, fails with CommitConflictError and is rolled back whole
    (:func:`hudisql.write.commit.check_write_conflicts`). ``on_step(event, detail)`` is called at
    each step (``requested``, ``inflight``, ``file``, ``validating``, ``completed``, and the
    rollback's); raising there simulates a crash at that point. ``options`` are write
    options: the lock provider taken at validation, the RFC-82 schema check
    (:mod:`hudisql.write.schema_conflict`) and schema evolution on write
    (:mod:`hudisql.write.schema_evolution`).
    """

    def __init__(
        self,
        table: HudiTable,
        *,
        max_records_per_file: int = DEFAULT_MAX_RECORDS_PER_FILE,
        on_step: StepHook | None = None,
        options: Mapping[str, str] | None = None,
    ) -> None:
        props = table.properties
        if props.version != P.WRITE_VERSION or props.timeline_layout != 1:
            raise UnsupportedTableVersionError(
                f"table {table.name} at {table.base_path} is version {props.version}; hudisql "
                f"writes only version {P.WRITE_VERSION} tables: write to it with Apache Hudi 1.x"
            )
        if max_records_per_file < 1:
            raise WriteError(f"max_records_per_file must be positive, got {max_records_per_file}")
        self._labelled_keys = _check_writable(table)
        self._table = table
        self.max_records_per_file = max_records_per_file
        self.on_step: StepHook = on_step or _no_step
        self.options: dict[str, str] = dict(options or {})
        # Checked here, so a bad codec is refused before any instant or file exists.
        self._codec = parquet_codec(self.options, props)
        # The writer schema of the write under way when its records add columns.
        self._evolved: dict[str, Any] | None = None

    @property
    def table(self) -> HudiTable:
        """The table as of the last commit this client made (reloaded after each)."""
        return self._table

    # -- public operations -----------------------------------------------------------------

    def insert(self, records: Records) -> CommitResult:
        """Insert new records (into new file groups) as one commit.

        Within the batch, records with one key are precombined (greatest precombine value;
        ties: the later one).

        Raises:
            WriteError: bad records, or a key that is already in the table (use ``upsert``);
                nothing is written then.
        """
        table = self._table = self._table.reload()
        staged = self._stage(table, records)
        existing = self._existing(table, staged)
        present = pc.is_in(composite_keys(staged), value_set=existing.composite())
        if pc.any(present).as_py():
            key = staged.column(RECORD_KEY)[pc.index(present, True).as_py()].as_py()
            raise WriteError(
                f"table {table.name}: record key {key!r} is already in the table; insert adds "
                "new records only: use upsert to update existing ones"
            )
        plan = plan_inserts(staged, self.max_records_per_file)
        return self._commit(table, "INSERT", plan)

    def upsert(self, records: Records) -> CommitResult:
        """Update the records whose keys exist and insert the others, as one commit.

        Merge-on-read: updates become a new log file (an Avro data block) on the file group
        holding the key. Copy-on-write: that file group's base file is rewritten. A record
        whose precombine value is smaller than the stored one's does not win.

        Raises:
            WriteError: bad records (nothing is written then).
        """
        table = self._table = self._table.reload()
        staged = self._stage(table, records)
        existing = self._existing(table, staged)
        plan = plan_upserts(staged, existing, self.max_records_per_file)
        return self._commit(table, "UPSERT", plan)

    def delete(self, keys: Sequence[str] | Records) -> CommitResult:
        """Delete records by key, as one commit; keys not in the table are ignored.

        Args:
            keys: record keys (``_hoodie_record_key`` values, looked up in every partition),
                or records (a table or list of dicts) holding the record key fields and, to
                look in one partition only, the partition fields.

        Raises:
            WriteError: malformed keys (nothing is written then).
        """
        table = self._table = self._table.reload()
        self._evolved = None
        props = table.properties
        key_array, partitions = self._delete_keys(table, keys)
        view = FileSystemView(table.storage, props, table.timeline)
        wanted = view.partitions() if partitions is None else pc.unique(partitions).to_pylist()
        existing = ExistingKeys.read(table.storage, props, table.timeline, view, wanted)
        plan = plan_deletes(key_array, partitions, existing)
        return self._commit(table, "DELETE", plan)

    def rollback(self, instant_time: str) -> str:
        """Roll back the failed (pending) write ``instant_time``; returns the rollback's time.

        Its files are removed, a rollback instant records what was done, and only then are
        its requested/inflight files removed from the timeline. Safe to re-run after a crash.

        Raises:
            WriteError: no such pending commit or deltacommit.
        """
        table = self._table.reload()
        done = rollback_instant(table, instant_time, self.on_step)
        self._table = table.reload()
        return done

    # -- staging ---------------------------------------------------------------------------

    def _stage(self, table: HudiTable, records: Records) -> pa.Table:
        props, name = table.properties, table.name
        if props.keyless:
            raise WriteError(
                f"table {name} is keyless (its record keys are generated per write); write "
                "records to it through Spark (a hudisql session's INSERT, table handle or "
                "df.write.format('hudi')), or delete stored keys with delete([...])")
        avro, schema = _writer_schema(table)
        self._evolved = evolve_on_write(avro, records, name, self.options)
        if self._evolved is not None:
            schema = avro_to_arrow(self._evolved)
        data = conform_records(records, schema, name)
        keys = record_keys(data, props.record_key_fields, name, self._labelled_keys)
        parts = partition_paths(data, props.partition_fields, props.hive_style_partitioning, name)
        n = data.num_rows
        nulls = pa.nulls(n, pa.string())
        meta = [nulls, nulls, keys, parts, nulls]
        staged = pa.Table.from_arrays(
            [*meta, *data.columns], names=[*META_COLUMNS, *data.column_names]
        )
        return precombine(staged, props.precombine_field, name)

    def _existing(self, table: HudiTable, staged: pa.Table) -> ExistingKeys:
        view = FileSystemView(table.storage, table.properties, table.timeline)
        partitions = [str(p) for p in pc.unique(staged.column(PARTITION_PATH)).to_pylist()]
        return ExistingKeys.read(table.storage, table.properties, table.timeline, view, partitions)

    def _delete_keys(
        self, table: HudiTable, keys: Sequence[str] | Records
    ) -> tuple[pa.Array | pa.ChunkedArray, pa.Array | pa.ChunkedArray | None]:
        props, name = table.properties, table.name
        if isinstance(keys, str):
            raise WriteError(f"table {name}: delete takes a list of keys, not one string")
        if isinstance(keys, Sequence) and all(isinstance(k, str) for k in keys):
            if any(not k for k in keys):
                raise WriteError(f"table {name}: an empty record key cannot be deleted")
            return pa.array(list(keys), pa.string()), None
        frame = _frame_of(keys, name)
        _, schema = _writer_schema(table)
        missing = [f for f in props.record_key_fields if f not in frame.column_names]
        if missing:
            raise WriteError(
                f"table {name}: the keys to delete lack the record key fields {missing}"
            )
        parts = props.partition_fields
        by_partition = bool(parts) and all(f in frame.column_names for f in parts)
        fields = list(dict.fromkeys([*props.record_key_fields, *(parts if by_partition else [])]))
        wanted = pa.schema([schema.field(f) for f in fields])
        data = conform_records(frame.select(fields), wanted, name)
        key_array = record_keys(data, props.record_key_fields, name, self._labelled_keys)
        if not by_partition:
            return key_array, None
        return key_array, partition_paths(data, parts, props.hive_style_partitioning, name)

    # -- the commit ------------------------------------------------------------------------

    def _commit(self, table: HudiTable, operation: str, plan: list[SliceWrite]) -> CommitResult:
        props, timeline, storage = table.properties, table.timeline, table.storage
        action = Action.DELTACOMMIT if props.is_mor else Action.COMMIT
        avro = self._evolved or _writer_schema(table)[0]
        self._evolved = None
        schema_text = avro_text(avro)
        at_start = TableSchema.of(timeline)
        planned = CommitMetadata(operation_type=operation)
        for work in plan:
            planned.partition_to_write_stats.setdefault(work.partition_path, []).append(
                work.planned_stat()
            )
        started_with = frozenset(i.timestamp for i in timeline.completed())
        requested = timeline.create_requested(action)
        ts = requested.timestamp
        metadata = CommitMetadata(extra_metadata={"schema": schema_text}, operation_type=operation)
        for partition in planned.partition_to_write_stats:
            metadata.partition_to_write_stats[partition] = []
        # Other writers roll back pending instants whose heartbeat expired: keep ours alive.
        heartbeat = Heartbeat(storage, ts, heartbeat_settings(self.options)[0]).start()
        try:
            self.on_step("requested", ts)
            inflight = timeline.transition_to_inflight(requested, planned.to_json())
            self.on_step("inflight", ts)
            for task, work in enumerate(plan):
                stat = self._write_slice(table, work, ts, write_token(task, 0, task), schema_text)
                metadata.add_write_stat(stat)
                self.on_step("file", stat.path or "")
            if props.is_mor:
                # Which log files this commit wrote: readers tell retried duplicates by it.
                record_committed_log_files(metadata)
            self.on_step("validating", ts)
            with validation_lock(table, self.options):
                current = table.reload()
                check_write_conflicts(current, ts, started_with, metadata, self.options)
                resolve_commit_schema(current, metadata, ts, schema_text, at_start,
                                      self.options, action)
                timeline.complete(inflight, metadata.to_json())
        except CommitConflictError:
            # Final for this write (file groups or schema clash, or rolled back by another
            # writer): undo it whole, as the Spark pipeline's transaction does.
            if table.reload().timeline.get(ts) is not None:
                rollback_instant(table.reload(), ts, self.on_step)
            self._table = table.reload()
            raise
        except BaseException as exc:
            exc.add_note(
                f"instant {ts} of table {table.name} is left pending; its files are invisible "
                f"to readers: WriteClient.rollback({ts!r}) removes them"
            )
            raise
        finally:
            heartbeat.stop()
        self.on_step("completed", ts)
        storage.delete_dir(f"{MARKER_DIR}/{ts}")
        self._table = table.reload()
        return CommitResult(ts, str(action), metadata)

    def _write_slice(
        self, table: HudiTable, work: SliceWrite, ts: str, token: str, schema_text: str
    ) -> WriteStat:
        storage, props = table.storage, table.properties
        file_slice = work.file_slice
        if file_slice is None:
            assert work.records is not None
            return write_base_file(
                storage, work.partition_path, work.file_id, ts, token, work.records, schema_text,
                compression=self._codec,
            )
        if props.is_mor:
            base_file = file_slice.base_file.name if file_slice.base_file is not None else None
            return write_log_file(
                storage, work.partition_path, work.file_id, file_slice.base_instant, ts, token,
                work.records, schema_text, deletes=work.deletes, attempt=0,
                block_sequence_start=0, base_file=base_file, num_updates=work.updates,
            )
        merged, updated, deleted = self._merge_copy_on_write(table, work)
        return write_base_file(
            storage, work.partition_path, work.file_id, ts, token, merged, schema_text,
            prev_commit=file_slice.base_instant, num_updates=updated, num_deletes=deleted,
            compression=self._codec,
        )

    def _merge_copy_on_write(self, table: HudiTable, work: SliceWrite) -> tuple[pa.Table, int, int]:
        """The slice's stored rows with ``work`` applied, in file order; (rows, updated, deleted).

        An update replaces the stored row in place unless its precombine value is smaller
        (under event-time ordering; see :func:`event_time_field`). Records whose key the
        slice does not hold are inserts (small-file handling routes them here): they follow
        the stored rows.
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
        drop = pa.repeat(pa.scalar(False), n)
        order_stored = pa.array(np.arange(n, dtype=np.int64))
        pieces = []
        updated = 0
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
            spots = pc.filter(position, wins)
            updated = winners.num_rows
            drop = pc.or_(drop, pc.is_in(order_stored, value_set=spots))
            pieces.append((winners, spots))
            new = pc.is_null(position)
            if pc.any(new).as_py():
                inserts = incoming.filter(new)
                after = pa.array(np.arange(n, n + inserts.num_rows, dtype=np.int64))
                pieces.append((inserts, after))
        deleted = 0
        if work.deletes:
            gone = pc.is_in(stored_keys, value_set=pa.array([d.record_key for d in work.deletes]))
            deleted = int(pc.sum(pc.and_(gone, pc.invert(drop))).as_py() or 0)
            drop = pc.or_(drop, gone)
        kept = pc.invert(drop)
        tables = [stored.filter(kept)] + [t for t, _ in pieces]
        orders = [pc.filter(order_stored, kept)] + [s.cast(pa.int64()) for _, s in pieces]
        merged = pa.concat_tables(tables)
        order = pc.sort_indices(pa.chunked_array(orders, pa.int64()))
        return merged.take(order), updated, deleted


def _frame_of(records: Records, table_name: str) -> pa.Table:
    """Key records as a table (columns as given: a subset of the table's)."""
    if isinstance(records, pa.Table):
        return records
    if isinstance(records, pa.RecordBatch):
        return pa.Table.from_batches([records])
    rows = list(records)
    if not all(isinstance(r, Mapping) for r in rows):
        raise WriteError(f"table {table_name}: delete takes key strings, dicts or a pyarrow Table")
    try:
        return pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise WriteError(f"table {table_name}: the keys to delete are malformed: {exc}") from exc
