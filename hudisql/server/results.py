"""Result rows on their way to the client: Arrow record batches in, DataRow messages out.

A query's rows are never collected whole on the driver: :func:`frame_batches` reads a
DataFrame through its Arrow C stream (``__arrow_c_stream__``), which fetches one partition
at a time, and :class:`RowSource` encodes only as many rows as an Execute or FETCH asks
for, keeping the rest of the stream (and the Spark job) for the next request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from hudisql.server import wire
from hudisql.server.datarows import encode_rows
from hudisql.server.types import BINARY_FORMAT, TEXT_FORMAT, binary_supported
from hudisql.server.types import pg_type_of as _pg_type_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Field:
    """One result column: name, type OID, type size and typmod."""

    name: str
    oid: int
    size: int
    typmod: int


def frame_fields(frame: DataFrame) -> list[Field]:
    """The result columns of ``frame`` as PostgreSQL types."""
    fields = []
    for f in frame.schema.fields:
        pg, typmod = _pg_type_of(f.dataType)
        fields.append(Field(f.name, pg.oid, pg.size, typmod))
    return fields


def frame_batches(frame: DataFrame, local: bool = False) -> Iterator[pa.RecordBatch]:
    """``frame``'s rows as Arrow batches, one partition at a time (the job starts on the
    first ``next``); ``local``: the caller knows Spark reads them on the driver.

    Each partition's batches travel as Arrow IPC bytes in one row per batch
    (``mapInArrow``), and ``toLocalIterator`` fetches one partition at a time, so the
    driver holds one partition, never the whole result. (PySpark's own
    ``__arrow_c_stream__`` does the same but fails on timestamp columns.)
    """
    from pyspark.sql.types import BinaryType, StructField, StructType

    if local or frame.isLocal():
        # Rows already on the driver (constants, catalog views, command results): collect()
        # runs no Spark job, so it never waits for cores another client's job holds.
        rows = frame.collect()
        names = [f"c{i}" for i in range(len(frame.columns))]
        columns = [pa.array([_plain(r[i]) for r in rows]) for i in range(len(names))]
        yield pa.RecordBatch.from_arrays(columns, names=names)
        return
    # PostgreSQL results may repeat a name (``SELECT n.oid, n.*``); Arrow structs may not.
    frame = frame.toDF(*(f"c{i}" for i in range(len(frame.columns))))
    packed = frame.mapInArrow(_to_ipc, StructType([StructField("ipc", BinaryType(), False)]))
    for row in packed.toLocalIterator(prefetchPartitions=True):
        with pa.ipc.open_stream(row[0]) as reader:
            yield from reader


def _plain(value: object) -> object:
    """A collected value as Arrow takes it (Rows of structs as dicts)."""
    as_dict = getattr(value, "asDict", None)
    return as_dict(recursive=True) if callable(as_dict) else value


def _to_ipc(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each batch as one row holding its Arrow IPC stream (runs on the executors)."""
    for batch in batches:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        yield pa.RecordBatch.from_arrays([pa.array([sink.getvalue().to_pybytes()],
                                                   pa.binary())], names=["ipc"])


class RowSource:
    """Rows still to send for one statement, portal or cursor.

    Args:
        fields: the result columns.
        batches: the rows, as Arrow batches with one column per field.
        check: called between batches (raises when the statement was cancelled).
    """

    def __init__(self, fields: list[Field], batches: Iterator[pa.RecordBatch],
                 check: Callable[[], None] | None = None) -> None:
        self.fields = fields
        self.formats = [TEXT_FORMAT] * len(fields)
        self._batches = batches
        self._pending: pa.RecordBatch | None = None
        self._check = check
        self.exhausted = False
        self.sent = 0

    @classmethod
    def of_rows(cls, names: list[str], rows: Sequence[Sequence[str | None]]) -> RowSource:
        """A source of text rows (server-side answers such as ``SHOW``)."""
        fields = [Field(n, 25, -1, -1) for n in names]
        arrays = [pa.array([r[i] for r in rows], pa.string()) for i in range(len(names))]
        batch = pa.RecordBatch.from_arrays(arrays, names=[f"c{i}" for i in range(len(names))])
        return cls(fields, iter([batch]))

    @classmethod
    def of_values(cls, fields: list[Field], row: Sequence[object]) -> RowSource:
        """A source of one row of plain values (a literal answer), one per field."""
        arrays = [pa.array([value]) if value is not None else pa.nulls(1, pa.string())
                  for value in row]
        batch = pa.RecordBatch.from_arrays(arrays, names=[f"c{i}" for i in range(len(row))])
        return cls(fields, iter([batch]))

    def set_formats(self, codes: list[int]) -> None:
        """The result formats a Bind asked for: none (all text), one for all, or one each.

        Raises:
            wire.ProtocolError: a count that fits neither.
        """
        if not codes:
            formats = [TEXT_FORMAT] * len(self.fields)
        elif len(codes) == 1:
            formats = codes * len(self.fields)
        elif len(codes) == len(self.fields):
            formats = list(codes)
        else:
            raise wire.ProtocolError(
                f"Bind asked for {len(codes)} result formats for {len(self.fields)} columns")
        # A type the server cannot send in binary goes as text; the description says so.
        self.formats = [BINARY_FORMAT if f == BINARY_FORMAT and binary_supported(fl.oid)
                        else TEXT_FORMAT for f, fl in zip(formats, self.fields, strict=True)]

    def description(self) -> bytes:
        """The RowDescription message."""
        return wire.row_description([(f.name, f.oid, f.size, f.typmod, fmt)
                                     for f, fmt in zip(self.fields, self.formats, strict=True)])

    def fetch(self, limit: int, emit: Callable[[bytes], None]) -> int:
        """Send up to ``limit`` rows (0: all) as DataRow messages to ``emit``; returns how
        many were sent. Sets :attr:`exhausted` once the stream is done."""
        sent = 0
        while not self.exhausted and (limit == 0 or sent < limit):
            batch = self._next_batch()
            if batch is None:
                self.exhausted = True
                break
            room = batch.num_rows if limit == 0 else min(batch.num_rows, limit - sent)
            if room < batch.num_rows:
                self._pending = batch.slice(room)
                batch = batch.slice(0, room)
            self._emit_batch(batch, emit)
            sent += batch.num_rows
        self.sent += sent
        return sent

    def _next_batch(self) -> pa.RecordBatch | None:
        if self._pending is not None:
            batch, self._pending = self._pending, None
            return batch
        if self._check is not None:
            self._check()
        for batch in self._batches:
            if batch.num_rows:
                return batch
            if self._check is not None:
                self._check()
        return None

    def _emit_batch(self, batch: pa.RecordBatch, emit: Callable[[bytes], None]) -> None:
        if not self.fields:  # a result with no columns still has rows
            emit(wire.data_row([]) * batch.num_rows)
            return
        emit(encode_rows(batch, [f.oid for f in self.fields], self.formats))

    def close(self) -> None:
        """Drop the rest of the stream (stops fetching further partitions)."""
        self.exhausted = True
        close = getattr(self._batches, "close", None)
        if close is not None:
            close()
