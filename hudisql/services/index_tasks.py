"""The executor side of an index build (see :mod:`hudisql.services.index_build`): units
staged into the build's staging folder, file groups written from the staged pieces, and the
one-job build's tasks, which share that work by claim files.

A unit's staging file (:func:`unit_file`) holds one Arrow IPC stream per file group its
rows go to, then where each stream is (a JSON list of ``[target, rows, offset, length]``)
and that list's length in 8 bytes. It is created once: another attempt of the unit reads
the pieces of the first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.metadata import schema as S
from hudisql.metadata.arrow_records import (
    record_index_rows_at,
    secondary_index_keys,
    secondary_key_order,
    secondary_key_rows,
    with_payloads,
)
from hudisql.metadata.builders import (
    RECORD_KEY,
    bloom_filter_records,
    column_stats_records,
    committed_files,
    expression_index_records,
    files_records,
    index_spec,
    partition_stats_records,
    slice_columns,
)
from hudisql.metadata.config import IndexDefinition
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.partitions import MetadataPartitionType, file_group_indexes, partition_spec
from hudisql.metadata.records import Record, merge_records
from hudisql.metadata.strings import key_order
from hudisql.metadata.table import MetadataTable
from hudisql.metadata.value_types import secondary_source
from hudisql.table.format.fsview import FileSlice
from hudisql.table.io.heap import keep_freed_memory
from hudisql.table.io.storage import Storage
from hudisql.table.table import HudiTable

#: The stats row of one written file group (what a writer task returns).
STATS_SCHEMA = pa.schema([("path", pa.string()), ("file_id", pa.string()),
                           ("partition", pa.string()), ("rows", pa.int64()),
                           ("bytes", pa.int64())])

#: Where one staged piece is (what a first-job task returns per piece).
PIECES_SCHEMA = pa.schema([("target", pa.int32()), ("unit", pa.int32()),
                            ("file", pa.string()), ("offset", pa.int64()),
                            ("length", pa.int64())])

#: How often (seconds) a one-job task looks at the staging folder while it waits.
POLL_SECONDS = 0.002

#: A staged unit's file name ends so (the files the driver counts for progress).
UNIT_SUFFIX = ".unit"
#: A claim file's name ends so: ``u<unit>.claim`` or ``g<file group>.claim``.
CLAIM_SUFFIX = ".claim"

#: A piece column: what the rows route by, when the unit made it (secondary keys: their
#: value parts, dictionary-encoded; the writer orders the keys by them).
ROUTE = "route"

#: Partitions whose pieces travel as their keys only (the rows are built by the writer).
BY_KEY = (MetadataPartitionType.RECORD_INDEX, MetadataPartitionType.SECONDARY_INDEX)


@dataclass(frozen=True)
class Unit:
    """One piece of stage 1: a metadata partition over a data partition or a file slice."""

    partition: str
    data_partition: str
    file_slice: FileSlice | None = None


@dataclass(frozen=True)
class Piece:
    """Where one unit's rows for one file group are: a byte range of the unit's staging file."""

    unit: int
    file: str
    offset: int
    length: int


def unit_rows(table: HudiTable, unit: Unit, definitions: Mapping[str, IndexDefinition]
              ) -> pa.Table:
    """The metadata rows (base-file shape) of one data-partition unit (runs on an executor):
    the file-based partitions' few records per data partition, from the dict builders."""
    spec = index_spec(table, unit.partition, definitions)
    kind = spec.kind
    files = committed_files(table, [unit.data_partition])
    if kind == MetadataPartitionType.FILES:
        records = files_records(files, [unit.data_partition])
    elif kind == MetadataPartitionType.BLOOM_FILTERS:
        records = bloom_filter_records(table, files, spec)
    elif kind == MetadataPartitionType.EXPRESSION_INDEX:
        records = expression_index_records(table, files, spec)
    elif kind == MetadataPartitionType.PARTITION_STATS:
        records = partition_stats_records(table, files, spec.source_fields)
    else:
        records = column_stats_records(table, files, spec.source_fields)
    return S.to_parquet_rows(records)


def unit_piece(table: HudiTable, unit: Unit, definitions: Mapping[str, IndexDefinition]
               ) -> pa.Table:
    """What a unit sends to the file groups' writers: for the record and secondary indexes
    only the keys (``key``: record keys, or secondary keys) of the slice, else the rows."""
    if unit.file_slice is None:
        return unit_rows(table, unit, definitions)
    spec = index_spec(table, unit.partition, definitions)
    if spec.kind == MetadataPartitionType.RECORD_INDEX:
        keys = slice_columns(table, unit.file_slice, []).column(RECORD_KEY)
        return pa.table({"key": keys})
    column = spec.source_fields[0]
    found = slice_columns(table, unit.file_slice, [column])
    keys, routes = secondary_index_keys(secondary_source(found.column(column), spec.version),
                                        found.column(RECORD_KEY))
    return pa.table({"key": keys, ROUTE: routes})


def group_rows(partition: str, pieces: Sequence[tuple[int, pa.Table]], units: Sequence[Unit]
               ) -> pa.Table:
    """One file group's rows from its pieces, each key once, sorted by key when the pieces
    are keys (the record index's locations from their units)."""
    kind = partition_spec(partition).kind
    if kind not in BY_KEY:
        return merged_rows(pa.concat_tables([t for _, t in pieces]).cast(S.arrow_schema()))
    keys = pa.concat_arrays([t.column("key").combine_chunks().cast(pa.string())
                             for _, t in pieces])
    if kind == MetadataPartitionType.SECONDARY_INDEX:
        routes = [c for _, t in pieces for c in t.column(ROUTE).chunks]
        keys = keys.take(secondary_key_order(keys, routes))
        return merged_rows(secondary_key_rows(keys), keys_sorted=True)
    order = key_order(keys)
    keys = keys.take(order)
    slots = sorted({u for u, _ in pieces})
    slot_of = {u: i for i, u in enumerate(slots)}
    which = np.concatenate([np.full(t.num_rows, slot_of[u], np.int32) for u, t in pieces])
    locations = []
    for u in slots:
        found = units[u].file_slice
        assert found is not None
        locations.append(RecordLocation(found.partition_path, found.file_id,
                                        found.base_instant))
    rows = record_index_rows_at(keys, locations, pa.array(which).take(order))
    return merged_rows(rows, keys_sorted=True)


def ipc_bytes(rows: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    return bytes(sink.getvalue().to_pybytes())


def unit_file(staging: str, index: int) -> str:
    """The staging file of unit ``index``: its pieces, then their places (a JSON list of
    ``[target, rows, offset, length]``), then that list's length (8 bytes, little-endian)."""
    return f"{staging}/{index:07d}{UNIT_SUFFIX}"


def stage_unit(table: HudiTable, staging: str, index: int, unit: Unit,
               targets: Mapping[tuple[str, int], int], groups: Mapping[str, int],
               definitions: Mapping[str, IndexDefinition]) -> list[tuple[int, Piece]]:
    """Build unit ``index``'s rows, routed to their file groups, into its staging file
    (created once: a retried or duplicate attempt keeps the first one's); returns the
    pieces by target file group."""
    rows = unit_piece(table, unit, definitions)
    places: list[list[int]] = []
    blobs: list[bytes] = []
    offset = 0
    if rows.num_rows:
        # The partition's own routing (secondary keys by their value part); rows ordered
        # by file group once, then cut into zero-copy slices.
        count = groups[unit.partition]
        if ROUTE in rows.column_names:  # secondary keys' value parts, as made
            fgs = file_group_indexes(rows.column(ROUTE), count)
        else:
            fgs = partition_spec(unit.partition).route(rows.column("key"), count)
        # int16 group numbers get numpy's radix sort.
        small = count <= np.iinfo(np.int16).max
        order = np.argsort(fgs.astype(np.int16) if small else fgs, kind="stable")
        ordered = rows.take(pa.array(order))
        # Runs of one group in the ordered groups (np.unique would sort again).
        runs = fgs[order]
        starts = np.flatnonzero(np.r_[True, runs[1:] != runs[:-1]])
        counts = np.diff(np.r_[starts, len(runs)])
        for fg, start, n in zip(runs[starts].tolist(), starts.tolist(), counts.tolist(),
                                strict=True):
            blob = ipc_bytes(ordered.slice(start, n))
            places.append([targets[(unit.partition, fg)], n, offset, len(blob)])
            blobs.append(blob)
            offset += len(blob)
    footer = json.dumps(places).encode()
    name = unit_file(staging, index)
    try:
        table.storage.create_if_absent(
            name, b"".join([*blobs, footer, len(footer).to_bytes(8, "little")]))
    except FileExistsError:  # another attempt of this unit was first: its pieces
        return unit_pieces(table.storage, staging, index)
    return [(target, Piece(index, name, start, length)) for target, _, start, length in places]


def unit_pieces(storage: Storage, staging: str, index: int) -> list[tuple[int, Piece]]:
    """The pieces (by target file group) of unit ``index``, from its staging file."""
    name = unit_file(staging, index)
    with storage.open_input_file(name) as f:
        size = f.size()
        footer = int.from_bytes(f.read_at(8, size - 8), "little")
        places = json.loads(f.read_at(footer, size - 8 - footer))
    return [(target, Piece(index, name, start, length)) for target, _, start, length in places]


def staged_units(storage: Storage, staging: str) -> set[int]:
    """The units whose staging file exists (what the driver counts for progress)."""
    return {int(f.name[:-len(UNIT_SUFFIX)]) for f in storage.list_dir(staging)
            if f.name.endswith(UNIT_SUFFIX)}


def staged_pieces(storage: Storage, staging: str, units: Iterable[int]
                  ) -> dict[int, list[Piece]]:
    """The pieces of the staged ``units``, by target file group."""
    pieces: dict[int, list[Piece]] = {}
    for index in units:
        for target, piece in unit_pieces(storage, staging, index):
            pieces.setdefault(target, []).append(piece)
    return pieces


def stage_rows(path: str, staging: str, units: list[Unit], chosen: Sequence[int],
               targets: Mapping[tuple[str, int], int], groups: Mapping[str, int],
               definitions: Mapping[str, IndexDefinition]
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The first job's task: the units it is given (positions in ``chosen``) staged (see
    :func:`stage_unit`); it returns where each piece is for the second job."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keep_freed_memory()
        table = HudiTable.open(path)
        for batch in batches:
            for position in batch.column(0).to_pylist():
                index = chosen[int(position)]
                found = stage_unit(table, staging, index, units[index], targets, groups,
                                   definitions)
                yield pa.RecordBatch.from_pylist(
                    [{"target": target, "unit": index, "file": piece.file,
                      "offset": piece.offset, "length": piece.length}
                     for target, piece in found], schema=PIECES_SCHEMA)
    return run


def merged_rows(rows: pa.Table, keys_sorted: bool = False) -> pa.Table:
    """Rows of one file group with each key once: records of one key merged (Hudi's rules).

    ``keys_sorted``: the rows are in key order, so neighbours tell whether a key repeats
    (far cheaper than counting distinct keys)."""
    keys = rows.column("key")
    n = rows.num_rows
    if n < 2:
        return rows
    if keys_sorted:
        if pc.all(pc.not_equal(keys.slice(0, n - 1), keys.slice(1))).as_py():
            return rows
    elif pc.count_distinct(keys).as_py() == n:
        return rows
    merged: dict[str, Record] = {}
    for record in S.from_parquet_rows(with_payloads(rows)):
        older = merged.get(record["key"])
        merged[record["key"]] = record if older is None else merge_records(older, record)
    return S.to_parquet_rows(list(merged.values()))


def write_group(table: HudiTable, mdt: MetadataTable, group: tuple[str, int, str],
                found: Sequence[Piece], units: Sequence[Unit], instant_time: str
                ) -> dict[str, object]:
    """Write one file group's base file from its pieces (none: an empty base file); returns
    its stats row (:data:`STATS_SCHEMA`)."""
    partition, _, file_id = group
    pieces = []
    for piece in found:
        with table.storage.open_input_file(piece.file) as f:
            blob = f.read_at(piece.length, piece.offset)
        pieces.append((piece.unit, pa.ipc.open_stream(blob).read_all()))
    rows = group_rows(partition, pieces, units) if pieces else S.to_parquet_rows([])
    stat = mdt.write_base_file(partition, file_id, rows, instant_time, routed=True)
    return {"path": stat.path, "file_id": stat.file_id, "partition": partition,
            "rows": stat.num_writes, "bytes": stat.file_size_in_bytes}


def write_groups(path: str, groups: list[tuple[str, int, str]], chosen: Sequence[int],
                 units: Sequence[Unit], pieces: Mapping[int, Sequence[Piece]],
                 instant_time: str
                 ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The second job's task: the base file of each file group it is given (positions in
    ``chosen``, of ``groups``), from the group's pieces the first job staged."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keep_freed_memory()
        table = HudiTable.open(path)
        mdt = MetadataTable(table)
        for batch in batches:
            for position in batch.column(0).to_pylist():
                target = chosen[int(position)]
                yield pa.RecordBatch.from_pylist([write_group(
                    table, mdt, groups[target], pieces.get(target, ()), units,
                    instant_time)], schema=STATS_SCHEMA)
    return run


def take_claim(storage: Storage, name: str) -> bool:
    """Take the work named ``name`` for this task: True when no other task had it."""
    try:
        storage.create_if_absent(name, b"")
    except FileExistsError:
        return False
    return True


def await_units(storage: Storage, staging: str, count: int, patience: float) -> bool:
    """Wait until all ``count`` units are staged: False after ``patience`` seconds without
    one more (their claimer died, or is slow: the file groups go to another task)."""
    seen, since = -1, time.monotonic()
    while True:
        done = len(staged_units(storage, staging))
        if done >= count:
            return True
        if done != seen:
            seen, since = done, time.monotonic()
        elif time.monotonic() - since > patience:
            return False
        time.sleep(POLL_SECONDS)


def build_together(path: str, staging: str, units: list[Unit],
                   targets: Mapping[tuple[str, int], int], counts: Mapping[str, int],
                   definitions: Mapping[str, IndexDefinition],
                   groups: list[tuple[str, int, str]], instant_time: str, tasks: int,
                   patience: float
                   ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A task of the one-job build (a small build, see :mod:`hudisql.services.index_build`):
    it stages the units no other task claimed, waits until every unit is staged, then writes
    the file groups no other task claimed, and returns their stats. Tasks claim work by
    creating a file in the staging folder, starting at different places; a task running
    alone does it all. One that waits in vain (:func:`await_units`) returns nothing, and
    the driver builds what is left as two jobs."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keep_freed_memory()
        # All of the input read: a Python worker whose input is left unread is not reused
        # (the next job would start a new one, 0.4 s of imports).
        ids = [int(i) for b in batches for i in b.column(0).to_pylist()]
        me = ids[0] if ids else 0
        table = HudiTable.open(path)
        storage = table.storage
        for index in turn_order(len(units), me, tasks):
            claim = f"{staging}/u{index:07d}{CLAIM_SUFFIX}"
            if not take_claim(storage, claim):
                continue
            try:
                stage_unit(table, staging, index, units[index], targets, counts, definitions)
            except BaseException:
                storage.delete(claim)  # free for the task's retry
                raise
        if not await_units(storage, staging, len(units), patience):
            return
        pieces = staged_pieces(storage, staging, range(len(units)))
        mdt = MetadataTable(table)
        for target in turn_order(len(groups), me, tasks):
            claim = f"{staging}/g{target:07d}{CLAIM_SUFFIX}"
            if not take_claim(storage, claim):
                continue
            try:
                row = write_group(table, mdt, groups[target], pieces.get(target, ()), units,
                                  instant_time)
            except BaseException:
                storage.delete(claim)
                raise
            yield pa.RecordBatch.from_pylist([row], schema=STATS_SCHEMA)
    return run


def turn_order(count: int, me: int, tasks: int) -> list[int]:
    """``range(count)`` starting where task ``me`` of ``tasks`` starts (tasks spread out)."""
    start = me * count // max(1, tasks)
    return [(start + k) % count for k in range(count)]
