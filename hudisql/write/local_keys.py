"""Which file slices may hold a statement's keys: a driver write reads only those.

A small write tags its records by the keys of the latest slices of the partitions it
touches (Hudi's ``SIMPLE`` index). Reading every slice's keys for each statement makes a
20-row commit cost grow with the table (about 0.01 s per 1,000 rows). But a key can be in
a slice's merged rows only if the slice's base file or one of its log files' data blocks
holds it (delete blocks only remove keys; an expression block only changes keys that are
there): a slice none of whose files holds any of the statement's keys holds none of them
merged. Such slices are skipped; the others are read merged, as before, so the tags stay
exact.

What each file holds is read once per process and kept. A base file's name carries the
instant that wrote it, which is never reused, so ``(location, size)`` names its content. A
log file's name does not (a rollback deletes a failed instant's log file, and a later write
to the slice may take the same name): it is kept by its location, size and modification
time, and the newest rollback or restore instant of the timeline (any state), so a name
taken again is read again; a log file whose modification time is unknown is read every
time. The kept form is a sorted array of
the keys' 64-bit hashes (8 bytes a key; a hash collision only makes a slice a candidate, it
never hides a key), at most :data:`KEPT_HASHES` in all, least recently used dropped first.
A file whose keys cannot be told (a base file without the meta columns, an HFile or
undecodable block) makes its slice a candidate.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudisql.errors import HudiSqlError
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.log.format import BlockType
from hudisql.table.format.log.reader import decode_data_block, scan_blocks
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.write.records import RECORD_KEY

__all__ = ["KEPT_HASHES", "candidate_slices", "key_hashes"]

#: The most key hashes kept for all files of the process (8 bytes each).
KEPT_HASHES = 4_000_000
#: Per file: (location, size) -> sorted key hashes, or None (its keys cannot be told).
_KEPT: OrderedDict[tuple[object, ...], np.ndarray | None] = OrderedDict()
_KEPT_COUNT = [0]
_LOCK = threading.Lock()
#: Data blocks whose records' keys are read (HFile blocks are not: the slice is a candidate).
_KEYED_BLOCKS = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)
#: Actions that delete data files of completed or pending writes.
_UNDO_ACTIONS = ("rollback", "restore")


def key_hashes(keys: Iterable[object]) -> np.ndarray:
    """The sorted, distinct 64-bit hashes of ``keys`` (as strings)."""
    return np.unique(np.fromiter((hash(str(k)) for k in keys), dtype=np.int64))


def candidate_slices(storage: Storage, slices: Sequence[FileSlice], keys: Sequence[str],
                     populated: bool = True, timeline: Timeline | None = None
                     ) -> list[FileSlice]:
    """The ``slices`` whose files may hold one of ``keys`` (module notes), in order.

    ``populated``: whether base files carry ``_hoodie_record_key`` (Hudi's
    ``hoodie.populate.meta.fields``); when not, every slice with a base file is a candidate.
    ``timeline``: the table's, for its newest rollback (without it, log files are read
    every time).
    """
    wanted = key_hashes(keys)
    if not len(wanted):
        return []
    stamps = _log_stamps(storage, slices, timeline)
    out = []
    for file_slice in slices:
        files: list[tuple[str, int, tuple[object, ...] | None]] = []
        if file_slice.base_file is not None:
            if not populated:
                out.append(file_slice)
                continue
            files.append((file_slice.base_file.path, file_slice.base_file.size, ()))
        files += [(log.path, log.size, stamps.get(log.path)) for log in file_slice.log_files]
        if any(_may_hold(storage, path, size, stamp, wanted) for path, size, stamp in files):
            out.append(file_slice)
    return out


def _log_stamps(storage: Storage, slices: Sequence[FileSlice], timeline: Timeline | None
                ) -> dict[str, tuple[object, ...]]:
    """Per log file path: (modification time, the newest rollback or restore instant),
    from one listing of each partition the slices' log files are in (module notes)."""
    if timeline is None:
        return {}
    partitions = {s.partition_path for s in slices if s.log_files}
    if not partitions:
        return {}
    undo = max((i.timestamp for i in timeline.instants if i.action in _UNDO_ACTIONS),
               default="")
    stamps: dict[str, tuple[object, ...]] = {}
    for partition in partitions:
        for status in storage.list_dir(partition):
            if status.mtime is not None and not status.is_dir:
                stamps[status.path] = (status.mtime, undo)
    return stamps


def _may_hold(storage: Storage, path: str, size: int, stamp: tuple[object, ...] | None,
              wanted: np.ndarray) -> bool:
    held = _held(storage, path, size, stamp)
    if held is None:
        return True
    if not len(held):
        return False
    at = np.searchsorted(held, wanted)
    at[at == len(held)] = 0
    return bool(np.any(held[at] == wanted))


def _held(storage: Storage, path: str, size: int, stamp: tuple[object, ...] | None
          ) -> np.ndarray | None:
    """The key hashes of one file (``stamp``: () for a base file, else a log file's stamp,
    None when it has none: read and not kept), read once per name (module notes)."""
    base = stamp == ()
    if stamp is None:
        return _read_hashes(storage, path, base)
    name = (storage.uri(path), size, *stamp)
    with _LOCK:
        if name in _KEPT:
            _KEPT.move_to_end(name)
            return _KEPT[name]
    held = _read_hashes(storage, path, base)
    with _LOCK:
        if name not in _KEPT:
            _KEPT[name] = held
            _KEPT_COUNT[0] += 0 if held is None else len(held)
            while _KEPT_COUNT[0] > KEPT_HASHES and len(_KEPT) > 1:
                _, dropped = _KEPT.popitem(last=False)
                _KEPT_COUNT[0] -= 0 if dropped is None else len(dropped)
    return held


def _read_hashes(storage: Storage, path: str, base: bool) -> np.ndarray | None:
    """The key hashes of a base file's key column or of a log file's data blocks; None when
    they cannot be told."""
    try:
        if base:
            source = storage.open_input_file(path)
            try:
                parquet = pq.ParquetFile(source)
                if RECORD_KEY not in parquet.schema_arrow.names:
                    return None
                column = parquet.read(columns=[RECORD_KEY]).column(RECORD_KEY)
            finally:
                source.close()
            return key_hashes(column.to_pylist())
        data = storage.read_bytes(path)
        keys: list[object] = []
        for block in scan_blocks(data, log_file=path):
            if block.is_corrupt or block.block_type in (BlockType.DELETE, BlockType.COMMAND,
                                                        BlockType.CDC_DATA):
                continue  # no key a merged read keeps comes from these
            if block.block_type not in _KEYED_BLOCKS:
                return None
            records = decode_data_block(data, block)
            if RECORD_KEY not in records.column_names:
                return None
            keys += records.column(RECORD_KEY).to_pylist()
        return key_hashes(keys)
    except (HudiSqlError, pa.ArrowException, OSError, ValueError):
        return None  # the merged read of the slice says what is wrong, as before
