"""Writing Hudi tables without Spark: create a table, then insert, upsert, delete, roll back.

:func:`create_table` lays down a version-6 table (``hoodie.properties`` and the timeline
folders). :class:`WriteClient` makes each write one whole commit through the commit
protocol (:class:`~hudisql.txn.transaction.Transaction`), as Hudi does: ``requested`` ->
``inflight`` (holding the planned write stats) -> data files -> ``completed`` (v6 JSON
commit metadata). Merge-on-read tables take updates and deletes as new log files of Avro
data and delete blocks; copy-on-write tables rewrite the base file of each file group they
touch. Inserts always start new file groups. The per-slice steps are the format's
(:mod:`hudisql.table.write.slices`), which Spark executors run too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import CommitConflictError, UnsupportedTableVersionError, WriteError
from hudisql.table.format import properties as P
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.filenames import write_token
from hudisql.table.format.fsview import FileSystemView
from hudisql.table.format.schema import META_COLUMNS, avro_to_arrow
from hudisql.table.table import HudiTable
from hudisql.table.write.create import TIMELINE_FOLDERS, create_table
from hudisql.table.write.files import avro_text, parquet_codec
from hudisql.table.write.plan import (
    ExistingKeys,
    SliceWrite,
    composite_keys,
    plan_deletes,
    plan_inserts,
    plan_upserts,
)
from hudisql.table.write.records import (
    PARTITION_PATH,
    RECORD_KEY,
    Records,
    conform_records,
    partition_paths,
    precombine,
    record_keys,
)
from hudisql.table.write.rollback import StepHook
from hudisql.table.write.slices import check_writable, write_slice, writer_schema
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.rollback import rollback_write
from hudisql.txn.schema_evolution import evolve_on_write
from hudisql.txn.transaction import Transaction

__all__ = [
    "TIMELINE_FOLDERS",
    "CommitResult",
    "WriteClient",
    "create_table",
]

DEFAULT_MAX_RECORDS_PER_FILE = 1_000_000

#: The transaction's step names as the client reports them.
_CLIENT_STEPS: dict[str, str] = {"written": "validating"}


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

    Commits through :class:`~hudisql.txn.transaction.Transaction`, as the Spark pipeline
    does: a heartbeat keeps the instant alive while it writes, and under the table lock
    (``hoodie.write.lock.provider``) a write that lost its instant to another writer's
    rollback, or whose file groups a write completed meanwhile also touched, fails with
    CommitConflictError and is rolled back whole (:mod:`hudisql.txn.conflict`).
    ``on_step(event, detail)`` is called at each step (``requested``, ``inflight``,
    ``file``, ``validating``, ``completing`` (under the lock, checks passed),
    ``completed``, and the rollback's); raising there simulates a
    crash at that point. ``options`` are write options: the lock provider, the RFC-82 schema
    check (:mod:`hudisql.txn.schema_conflict`) and schema evolution on write
    (:mod:`hudisql.txn.schema_evolution`). ``participants`` write alongside each commit
    under the lock (the metadata table) and are told of its rollbacks.
    """

    def __init__(
        self,
        table: HudiTable,
        *,
        max_records_per_file: int = DEFAULT_MAX_RECORDS_PER_FILE,
        on_step: StepHook | None = None,
        options: Mapping[str, str] | None = None,
        participants: Sequence[CommitParticipant] = (),
    ) -> None:
        props = table.properties
        if P.WRITABLE_VERSIONS.get(props.version) != props.timeline_layout:
            raise UnsupportedTableVersionError(
                f"table {table.name} at {table.base_path} is version {props.version} (timeline "
                f"layout {props.timeline_layout}); hudisql writes versions 6 (layout 1), 8 and "
                "9 (layout 2): write to it with Apache Hudi 1.x"
            )
        table.timeline.require_writable()
        if max_records_per_file < 1:
            raise WriteError(f"max_records_per_file must be positive, got {max_records_per_file}")
        self._labelled_keys = check_writable(table)
        self._table = table
        self.max_records_per_file = max_records_per_file
        self.on_step: StepHook = on_step or _no_step
        self.options: dict[str, str] = dict(options or {})
        self.participants: tuple[CommitParticipant, ...] = tuple(participants)
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

        Under the table lock: the participants are told, its files are removed, a rollback
        instant records what was done, and only then are its requested/inflight files
        removed from the timeline. Safe to re-run after a crash.

        Raises:
            WriteError: no such pending commit or deltacommit.
        """
        table = self._table.reload()
        done = rollback_write(table, instant_time, self.options, self.participants, self.on_step)
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
        avro, schema = writer_schema(table)
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
        _, schema = writer_schema(table)
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
        avro = self._evolved or writer_schema(table)[0]
        self._evolved = None
        schema_text = avro_text(avro)
        planned = CommitMetadata(operation_type=operation)
        for work in plan:
            planned.partition_to_write_stats.setdefault(work.partition_path, []).append(
                work.planned_stat()
            )
        txn = Transaction(table, self.options, operation, on_step=self._step,
                          participants=self.participants, roll_back_abandoned=False)
        stats = []
        try:
            ts = txn.start(planned)
            for task, work in enumerate(plan):
                stat = write_slice(table, work, ts, write_token(task, 0, task), schema_text,
                                   self._codec)
                stats.append(stat)
                self.on_step("file", stat.path or "")
            done = txn.commit(stats, schema_text, planned.partition_to_write_stats)
        except CommitConflictError:
            # Final for this write (file groups or schema clash, or rolled back by another
            # writer): the transaction rolled it back whole under the lock.
            self._table = table.reload()
            raise
        except BaseException as exc:
            left = txn.instant and table.reload().timeline.get(txn.instant.timestamp)
            if left and not left.is_completed:
                exc.add_note(
                    f"instant {left.timestamp} of table {table.name} is left pending; its files "
                    f"are invisible to readers: WriteClient.rollback({left.timestamp!r}) "
                    "removes them"
                )
            raise
        finally:
            txn.release()
        self._table = table.reload()
        assert txn.metadata is not None
        return CommitResult(ts, str(done.action), txn.metadata)

    def _step(self, event: str, detail: str) -> None:
        """The transaction's steps under the names this client reports."""
        self.on_step(_CLIENT_STEPS.get(event, event), detail)


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
