"""Compaction and cleaning of a version 8/9 table's LSM history, as Hudi 1.x's
``LSMTimelineWriter.compactAndClean`` does after each archival run.

Every archival run adds one layer-0 file and one manifest to ``.hoodie/timeline/history``;
left alone, a table archiving every few minutes gathers thousands of both. Once
``hoodie.timeline.compaction.batch.size`` (default 10) files share a layer, the oldest of
them (by instant time) are rewritten as one file of the next layer,
``<firstInstant>_<lastInstant>_<layer+1>.parquet``, and the next layer is looked at in
turn; the files of a layer hold consecutive instants, so the compacted file is their rows
one after the other. Then manifests older than the latest :data:`MANIFESTS_RETAINED` (plus
one per layer compacted by this run) are deleted, and so is every history file none of the
kept manifests names (compacted inputs, and files of runs that died before their manifest).

**Steps**, each safe to be killed after: (1) the compacted file (no manifest names it, so
no reader looks at it; a rerun overwrites it); (2) ``manifest_<N+1>`` naming it instead of
its inputs, then ``_version_`` (readers see the same instants, from one file); (3) the
cleaning (readers of the retained manifests still find every file they name). A file the
history's manifests name is never rewritten, so readers may cache what they read of one.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from hudisql.errors import CorruptTableError
from hudisql.table.format.lsm_timeline import (
    LSM_DATA_FILE,
    MANIFEST_PREFIX,
    VERSION_FILE,
    latest_manifest,
)
from hudisql.table.io.storage import Storage

__all__ = ["COMPACTION_BATCH", "LSM_SCHEMA", "MANIFESTS_RETAINED", "compact_history",
           "read_manifest", "write_manifest"]

#: Hudi's option: how many files of one layer are compacted into one of the next.
COMPACTION_BATCH = "hoodie.timeline.compaction.batch.size"
#: Manifests (snapshot versions) kept besides the ones a run's compactions wrote.
MANIFESTS_RETAINED = 3
#: Hudi stops adding inputs to a compaction once they reach 1 GiB together.
_MAX_COMPACTED_BYTES = 1 << 30

StepHook = Callable[[str, str], None]

#: ``HoodieLSMTimelineInstant`` as parquet columns.
LSM_SCHEMA = pa.schema([
    pa.field("instantTime", pa.string()),
    pa.field("completionTime", pa.string()),
    pa.field("action", pa.string()),
    pa.field("metadata", pa.binary()),
    pa.field("plan", pa.binary()),
    pa.field("version", pa.int32(), nullable=False),
])

Entry = dict[str, object]


def read_manifest(storage: Storage, history: str, name: str | None = None
                  ) -> tuple[int, list[Entry]]:
    """The snapshot version and file entries of manifest ``name`` (default: the latest;
    version 0 and no files when there is none).

    Raises:
        CorruptTableError: the manifest is malformed (names it).
    """
    name = name or latest_manifest(storage, history)
    if name is None:
        return 0, []
    rel = posixpath.join(history, name)
    try:
        files = json.loads(storage.read_bytes(rel))["files"]
        if not isinstance(files, list):
            raise TypeError("files is not a list")
    except (ValueError, KeyError, TypeError, FileNotFoundError) as exc:
        raise CorruptTableError(
            f"archived timeline manifest {storage.uri(rel)} is not valid ({exc}); restore it "
            "from a backup before archiving again") from exc
    return int(name[len(MANIFEST_PREFIX):]), list(files)


def write_manifest(storage: Storage, history: str, version: int, files: list[Entry]) -> int:
    """Write ``manifest_<version+1>`` naming ``files``, then ``_version_``; returns the new
    version."""
    storage.write_atomic(posixpath.join(history, f"{MANIFEST_PREFIX}{version + 1}"),
                         json.dumps({"files": files}).encode("utf-8"))
    storage.write_atomic(posixpath.join(history, VERSION_FILE), str(version + 1).encode())
    return version + 1


def _name_parts(storage: Storage, history: str, name: str) -> tuple[str, str, int]:
    match = LSM_DATA_FILE.match(name)
    if match is None:
        raise CorruptTableError(
            f"archived timeline manifest in {storage.uri(history)} names {name!r}, which is "
            "not an LSM history file (<min>_<max>_<layer>.parquet)")
    return match.group(1), match.group(2), int(name.rsplit("_", 1)[1].split(".", 1)[0])


def _candidates(storage: Storage, history: str, files: list[Entry], layer: int,
                batch: int) -> list[Entry]:
    """Hudi's choice: the oldest files of ``layer``, at most ``batch`` of them, at most
    1 GiB together (a file past that alone is left as it is); none below ``batch``."""
    in_layer = sorted((e for e in files
                       if _name_parts(storage, history, str(e["fileName"]))[2] == layer),
                      key=lambda e: _name_parts(storage, history, str(e["fileName"]))[:2])
    if len(in_layer) < batch:
        return []
    chosen: list[Entry] = []
    total = 0
    for entry in in_layer:
        chosen.append(entry)
        total += int(str(entry.get("fileLen", 0)))
        if len(chosen) >= batch:
            break
        if total > _MAX_COMPACTED_BYTES:
            if len(chosen) >= 2:
                break
            chosen, total = [], 0
    return chosen if len(chosen) >= 2 else []


def _read_rows(storage: Storage, history: str, name: str) -> pa.Table:
    rel = posixpath.join(history, name)
    try:
        with storage.open_input_file(rel) as source:
            table = pq.read_table(source, columns=LSM_SCHEMA.names)
        return table.cast(LSM_SCHEMA)
    except (OSError, KeyError, ValueError, pa.ArrowInvalid) as exc:
        raise CorruptTableError(
            f"archived timeline file {storage.uri(rel)} cannot be read ({exc}); nothing was "
            "compacted") from exc


def compact_history(storage: Storage, history: str, batch: int = 10,
                    on_step: StepHook | None = None) -> list[str]:
    """Compact the history's layers and clean what no retained manifest names, under the
    table lock the caller holds; returns the compacted files written (oldest layer first).

    Raises:
        CorruptTableError: a manifest or a history file to compact is malformed (then
            nothing of that compaction is named by a manifest).
    """
    step = on_step or (lambda event, detail: None)
    version, files = read_manifest(storage, history)
    written: list[str] = []
    layer = 0
    while True:
        chosen = _candidates(storage, history, files, layer, batch)
        if not chosen:
            break
        names = [str(e["fileName"]) for e in chosen]
        rows = pa.concat_tables([_read_rows(storage, history, n) for n in names])
        rows = rows.sort_by("instantTime")
        times = rows.column("instantTime").to_pylist()
        name = f"{times[0]}_{times[-1]}_{layer + 1}.parquet"
        sink = pa.BufferOutputStream()
        pq.write_table(rows, sink)
        data = sink.getvalue().to_pybytes()
        storage.write_atomic(posixpath.join(history, name), data)
        step("history_compaction_written", name)
        files = [e for e in files if str(e["fileName"]) not in names]
        files.append({"fileName": name, "fileLen": len(data)})
        version = write_manifest(storage, history, version, files)
        step("history_compacted", name)
        written.append(name)
        layer += 1
    _clean(storage, history, version, len(written), step)
    return written


def _clean(storage: Storage, history: str, version: int, compacted: int,
           step: StepHook) -> None:
    """Delete the manifests before the retained ones, then the files none of those names."""
    listed = storage.list_dir(history)
    versions = sorted(
        (int(s.name[len(MANIFEST_PREFIX):]) for s in listed
         if s.name.startswith(MANIFEST_PREFIX) and s.name[len(MANIFEST_PREFIX):].isdigit()),
        reverse=True)
    kept = [v for v in versions if v <= version][:MANIFESTS_RETAINED + compacted]
    if len(versions) <= len(kept):
        return
    named = {str(e["fileName"]) for v in kept
             for e in read_manifest(storage, history, f"{MANIFEST_PREFIX}{v}")[1]}
    for v in versions:
        if v not in kept:
            storage.delete(posixpath.join(history, f"{MANIFEST_PREFIX}{v}"))
    for status in listed:
        if LSM_DATA_FILE.match(status.name) and status.name not in named:
            storage.delete(posixpath.join(history, status.name))
    step("history_cleaned", str(version))
