"""Completion times of archived instants, read from a version 8/9 table's LSM history.

Hudi 1.x archives instants into ``.hoodie/timeline/history/`` as an LSM tree of parquet
files (``<minInstant>_<maxInstant>_<layer>.parquet``, rows of ``HoodieLSMTimelineInstant``:
``instantTime``, ``completionTime``, ``action``, ...). ``_version_`` holds the latest
snapshot version N and ``manifest_N`` (JSON, ``{"files": [{"fileName", "fileLen"}]}``)
names the files of that snapshot; files not in it are compacted away or not yet committed.
The file-system view needs only the completion times, to slice the logs of an archived
deltacommit as Hudi's ``CompletionTimeQueryViewV2`` does.
"""

from __future__ import annotations

import json
import posixpath
import re

import pyarrow.parquet as pq

from hudisql.errors import CorruptTableError
from hudisql.table.format.properties import TableProperties
from hudisql.table.io.storage import Storage

__all__ = ["archived_completion_times"]

_VERSION_FILE = "_version_"
_MANIFEST_PREFIX = "manifest_"
_DATA_FILE = re.compile(r"^\d+_\d+_\d+\.parquet$")


def archived_completion_times(storage: Storage, props: TableProperties) -> dict[str, str]:
    """``{requested instant: completion time}`` of every instant in the LSM history.

    Returns an empty map when the table has no history (nothing archived yet).

    Raises:
        CorruptTableError: the version file, a manifest or a history file is malformed
            (the message names the file).
    """
    history = props.archive_dir
    manifest = _latest_manifest(storage, history)
    if manifest is None:
        return {}
    rel = posixpath.join(history, manifest)
    try:
        entries = json.loads(storage.read_bytes(rel))["files"]
        names = [str(entry["fileName"]) for entry in entries]
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptTableError(
            f"archived timeline manifest {storage.uri(rel)} is not valid ({exc}); restore it "
            "from a backup or remove the history folder to read without archived instants"
        ) from exc
    times: dict[str, str] = {}
    for name in names:
        if not _DATA_FILE.match(name):
            raise CorruptTableError(
                f"archived timeline manifest {storage.uri(rel)} names {name!r}, which is not "
                "an LSM history file (<min>_<max>_<layer>.parquet)"
            )
        path = posixpath.join(history, name)
        try:
            with storage.open_input_file(path) as source:
                table = pq.read_table(source, columns=["instantTime", "completionTime"])
        except (OSError, KeyError, ValueError) as exc:
            raise CorruptTableError(
                f"archived timeline file {storage.uri(path)} cannot be read ({exc})"
            ) from exc
        for requested, completed in zip(
            table.column("instantTime").to_pylist(),
            table.column("completionTime").to_pylist(),
            strict=True,
        ):
            if requested and completed:
                times[requested] = completed
    return times


def _latest_manifest(storage: Storage, history: str) -> str | None:
    version_file = posixpath.join(history, _VERSION_FILE)
    if storage.exists(version_file):
        text = storage.read_bytes(version_file).decode("utf-8", "replace").strip()
        if text.isdigit():
            return f"{_MANIFEST_PREFIX}{int(text)}"
    # Hudi falls back to the highest manifest when the version file is missing or unreadable.
    if not storage.exists(history):
        return None
    versions = [
        int(status.name[len(_MANIFEST_PREFIX):])
        for status in storage.list_dir(history)
        if status.name.startswith(_MANIFEST_PREFIX)
        and status.name[len(_MANIFEST_PREFIX):].isdigit()
    ]
    return f"{_MANIFEST_PREFIX}{max(versions)}" if versions else None
