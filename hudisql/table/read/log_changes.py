"""What a file slice's log files change, decided without reading its base file's data.

A merged read of a slice (``merge.py``) changes only the base rows whose record key a
visible log block touches. :func:`log_changes` decodes the logs (the same judging of
blocks: rollbacks, duplicate blocks of retried tasks, corrupt blocks) and reduces them to
one outcome per key; :meth:`LogChanges.resolve` then takes the few base rows holding those
keys (their position in the base file, key and ordering value: :func:`touched_base_rows`
reads only those two columns) and returns which of them lose and which log records are
emitted. The merged slice is then the base file minus the losing positions (read by
anyone, e.g. Spark's parquet reader), plus the emitted records:
exactly the rows of :func:`hudisql.table.read.merge.read_file_slice`, by the same code
(the first base row of a key takes its outcome, later ones pass; a log record with a lower
ordering value than the base row loses under event-time ordering; natural-order deletes
wipe the base row; records whose key the base file lacks are inserts).

Slices with expression blocks are applied whole, and are not resolved here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudisql.errors import UnsupportedFormatError
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.merge import (
    RECORD_KEY_COLUMN,
    _LogOutcome,
    _Merger,
    _record_logs,
)
from hudisql.table.read.reconcile import ReconcileMode

__all__ = ["POSITION_COLUMN", "LogChanges", "log_changes", "touched_base_rows"]

#: The column of a base row's position (0-based, in file order) in :meth:`LogChanges.resolve`.
POSITION_COLUMN = "_hudisql_row"


@dataclass
class LogChanges:
    """One slice's log outcome per record key, and the columns its records come back in."""

    file_slice: FileSlice
    merger: _Merger
    outcome: _LogOutcome | None
    columns: list[str]

    @property
    def keys(self) -> pa.Array:
        """The distinct record keys the visible log blocks touch (strings)."""
        if self.outcome is None:
            return pa.array([], pa.string())
        return self.outcome.keys.cast(pa.string())

    @property
    def ordering(self) -> str | None:
        """The ordering (precombine) column the merge compares, if any: the base rows
        given to :meth:`resolve` need it."""
        return self.merger.ordering

    @property
    def record_bytes(self) -> int:
        """Bytes of the decoded log records held."""
        return 0 if self.outcome is None else self.outcome.records.nbytes

    def resolve(self, base_rows: pa.Table) -> tuple[np.ndarray, pa.Table]:
        """The merge of the slice given the base rows of its touched keys.

        Args:
            base_rows: every base row whose key is in :attr:`keys` (more do no harm), with
                :data:`POSITION_COLUMN`, the record key and the :attr:`ordering` column.

        Returns:
            ``(positions, records)``: the positions of the base rows that lose (sorted), and
            the log records that are rows of the merged slice, in :attr:`columns`.
        """
        outcome = self.outcome
        empty = np.zeros(0, np.int64)
        if outcome is None:
            return empty, self.merger.work_schema.empty_table().select(self.columns)
        outcome.consumed[:] = False
        base_rows = base_rows.sort_by(POSITION_COLUMN)
        work = {RECORD_KEY_COLUMN: base_rows.column(RECORD_KEY_COLUMN).cast(pa.string())}
        if self.ordering is not None:
            kind = self.merger.work_schema.field(self.ordering).type
            work[self.ordering] = base_rows.column(self.ordering).cast(kind)
        lost, emit = self.merger.decide(pa.table(work), outcome)
        # Log records whose key no base row holds are inserts.
        left = np.flatnonzero(~outcome.consumed & (outcome.record >= 0))
        emit = np.sort(np.concatenate([emit, outcome.record[left]]))
        positions = np.asarray(base_rows.column(POSITION_COLUMN).take(pa.array(lost)),
                               dtype=np.int64)
        records = outcome.records.take(pa.array(emit, pa.int64())).select(self.columns)
        return np.sort(positions), records


def log_changes(
    storage: Storage,
    props: TableProperties,
    timeline: Timeline,
    file_slice: FileSlice,
    schema: pa.Schema,
    as_of: str | None = None,
    columns: Sequence[str] | None = None,
    *,
    reconcile: ReconcileMode | str = ReconcileMode.FULL,
) -> LogChanges | None:
    """Decode and reduce the log blocks of ``file_slice`` visible as of ``as_of``.

    Args:
        schema: the Arrow schema (meta columns included) the slice is read in.
        columns: the columns the log records come back in (default: all of ``schema``).

    Returns:
        The changes, or None when the slice has expression blocks (merged whole).

    Raises:
        UnsupportedFormatError: an HFile data block, or a table without the record key
            meta column.
    """
    logs = _record_logs(storage, timeline, file_slice, as_of, reconcile)
    if logs is None:
        return None
    out = [c for c in (columns if columns is not None else schema.names) if c in schema.names]
    merger = _Merger(props, schema, out)
    outcome = merger.reduce_log(logs.ordered) if logs.ordered else None
    if outcome is not None and not len(outcome.keys):
        outcome = None
    return LogChanges(file_slice, merger, outcome, out)



def touched_base_rows(storage: Storage, changes: LogChanges, batch_rows: int = 1 << 17
                      ) -> pa.Table:
    """The rows of the slice's base file whose record key its logs touch: their position
    (:data:`POSITION_COLUMN`), key and ordering value, for :meth:`LogChanges.resolve`.

    Reads only the key and ordering columns (an ordering column the file lacks reads as
    nulls), ``batch_rows`` rows at a time.

    Raises:
        UnsupportedFormatError: the base file has no record key column.
    """
    base = changes.file_slice.base_file
    assert base is not None
    keys = changes.keys
    parts: list[pa.Table] = []
    with storage.open_input_file(base.path) as f:
        parquet = pq.ParquetFile(f)
        names = parquet.schema_arrow.names
        if RECORD_KEY_COLUMN not in names:
            raise UnsupportedFormatError(
                f"base file {base.path} has no {RECORD_KEY_COLUMN} column to merge its "
                "log files by: tables without meta fields (virtual keys) are not supported")
        ordering = changes.ordering
        columns = [RECORD_KEY_COLUMN] + ([ordering] if ordering in names else [])
        start = 0
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns,
                                          use_threads=False):
            found = pc.fill_null(pc.is_in(batch.column(0), value_set=keys), False)
            rows = np.flatnonzero(np.asarray(found))
            if len(rows):
                picked = pa.Table.from_batches([batch]).take(pa.array(rows))
                parts.append(picked.append_column(
                    POSITION_COLUMN, pa.array(rows + start, pa.int64())))
            start += batch.num_rows
    work = changes.merger.work_schema
    wanted = [RECORD_KEY_COLUMN] + ([ordering] if ordering is not None else [])
    schema = pa.schema([*(work.field(n) for n in wanted), pa.field(POSITION_COLUMN, pa.int64())])
    if not parts:
        return schema.empty_table()
    rows_table = pa.concat_tables(parts, promote_options="permissive")
    return pa.table({n: (rows_table.column(n).cast(schema.field(n).type)
                         if n in rows_table.column_names
                         else pa.nulls(rows_table.num_rows, schema.field(n).type))
                     for n in schema.names}, schema=schema)
