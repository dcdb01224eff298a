"""Archival of a version 8/9 table: Hudi 1.x's LSM history (``.hoodie/timeline/history``).

Layout 2 archives completed instants into parquet files of ``HoodieLSMTimelineInstant`` rows
(``instantTime``, ``completionTime``, ``action``, ``metadata``: the completed file's bytes,
``plan``: the requested file's bytes when it has any, ``version``), named
``<firstInstant>_<lastInstant>_<layer>.parquet``; a snapshot of the live files is
``manifest_<N>`` (JSON ``{"files": [{"fileName", "fileLen"}]}``) and ``_version_`` names the
latest N (Hudi's ``LSMTimelineWriter``). Each run writes a layer-0 file, then compacts the
tree and cleans old manifests and files as Hudi does (:mod:`.archive_lsm_compact`), so the
history stays a few dozen files however long the table lives.

What moves out is chosen as for version 6 (:func:`instants_to_archive`). The steps, each
leaving a table every reader reads the same: the parquet file (a file no manifest names is
ignored by readers), then ``manifest_<N+1>`` and ``_version_`` (now the instants are in the
history and still active: readers take the active copy), then the active state files. A
run that died after the manifest finishes by deleting the active copies of the instants
the newest history file holds.
"""

from __future__ import annotations

import io
import posixpath
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from hudisql.errors import CorruptTableError
from hudisql.table.format.instant import Instant
from hudisql.table.format.lsm_timeline import LSM_DATA_FILE
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.services.archive import (
    ArchivalBounds,
    ArchivalSettings,
    instants_to_archive,
)
from hudisql.table.services.archive_lsm_compact import (
    LSM_SCHEMA,
    compact_history,
    read_manifest,
    write_manifest,
)

__all__ = ["LSM_SCHEMA", "archive_timeline_lsm", "write_history_file"]

StepHook = Callable[[str, str], None]


def _no_step(event: str, detail: str) -> None:
    """The default step hook: nothing."""


def _delete_active(storage: Storage, timeline: Timeline, times: Sequence[str],
                   on_step: StepHook) -> int:
    """Delete every state file of ``times`` from the active timeline: requested and
    inflight first, then the completed ones, oldest first (as version 6 does)."""
    files = [f for ts in times for f in timeline.instant_files(ts)]
    for f in sorted(f for f in files if not f.is_completed):
        storage.delete(posixpath.join(timeline.timeline_dir, f.file_name))
    for f in sorted(f for f in files if f.is_completed):
        storage.delete(posixpath.join(timeline.timeline_dir, f.file_name))
        on_step("completed_deleted", f.timestamp)
    return len(files)


def _finish_interrupted(storage: Storage, timeline: Timeline,
                        entries: list[dict[str, object]], history: str,
                        on_step: StepHook) -> bool:
    names = [str(e.get("fileName")) for e in entries]
    if not names:
        return False
    newest = max(names, key=lambda n: n.split("_", 2)[:2])
    rel = posixpath.join(history, newest)
    try:
        with storage.open_input_file(rel) as source:
            times = pq.read_table(source, columns=["instantTime"]).column(0).to_pylist()
    except (OSError, ValueError, KeyError) as exc:
        raise CorruptTableError(
            f"archived timeline file {storage.uri(rel)} cannot be read ({exc})") from exc
    leftover = [t for t in times if t and timeline.instant_files(t)]
    return _delete_active(storage, timeline, leftover, on_step) > 0


def write_history_file(storage: Storage, history: str, rows: dict[str, list[object]],
                       version: int | None = None,
                       entries: list[dict[str, object]] | None = None) -> str:
    """Write ``rows`` (columns of :data:`LSM_SCHEMA`, instant times ascending) as a layer-0
    history file, then the next manifest naming it with ``entries`` (the latest snapshot's
    files; both read from storage when not given), then ``_version_``. Returns its name.
    """
    if version is None or entries is None:
        version, entries = read_manifest(storage, history)
    times = rows["instantTime"]
    name = f"{times[0]}_{times[-1]}_0.parquet"
    if LSM_DATA_FILE.match(name) is None:
        raise CorruptTableError(f"instant times {times[0]}..{times[-1]} make no history "
                                f"file name ({name})")
    buffer = io.BytesIO()
    pq.write_table(pa.table(rows, schema=LSM_SCHEMA), buffer)
    data = buffer.getvalue()
    storage.makedirs(history)
    # Not yet in a manifest: no reader looks at it.
    storage.write_atomic(posixpath.join(history, name), data)
    kept = [e for e in entries if e.get("fileName") != name]
    write_manifest(storage, history, version, [*kept, {"fileName": name, "fileLen": len(data)}])
    return name


def archive_timeline_lsm(storage: Storage, timeline: Timeline, settings: ArchivalSettings,
                         is_mor: bool, bounds: ArchivalBounds | None = None,
                         on_step: StepHook = _no_step) -> list[Instant]:
    """Archive what is due into the LSM history, under the table lock the caller holds.

    Returns:
        The instants archived by this run.

    Raises:
        CorruptTableError: the manifest or the newest history file is malformed.
    """
    history = timeline.props.archive_dir
    version, entries = read_manifest(storage, history)
    if _finish_interrupted(storage, timeline, entries, history, on_step):
        timeline = timeline.reload()
    chosen = instants_to_archive(timeline, settings, is_mor, bounds or ArchivalBounds())
    if not chosen:
        return []
    rows: dict[str, list[object]] = {f.name: [] for f in LSM_SCHEMA}
    for instant in chosen:
        states = timeline.instant_files(instant.timestamp)
        requested = [f for f in states if f.is_requested]
        plan = timeline.read_content(requested[0]) if requested else b""
        rows["instantTime"].append(instant.timestamp)
        rows["completionTime"].append(instant.completion_time or instant.timestamp)
        rows["action"].append(instant.action)
        rows["metadata"].append(timeline.read_content(instant))
        rows["plan"].append(plan or None)
        rows["version"].append(1)
    write_history_file(storage, history, rows, version, entries)
    on_step("written", chosen[-1].timestamp)
    _delete_active(storage, timeline, [i.timestamp for i in chosen], on_step)
    compact_history(storage, history, settings.history_batch, on_step)
    return chosen
