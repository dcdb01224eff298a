"""Completion times of archived instants, read from a version 8/9 table's LSM history.

Hudi 1.x archives instants into ``.hoodie/timeline/history/`` as an LSM tree of parquet
files (``<minInstant>_<maxInstant>_<layer>.parquet``, rows of ``HoodieLSMTimelineInstant``:
``instantTime``, ``completionTime``, ``action``, ...). ``_version_`` holds the latest
snapshot version N and ``manifest_N`` (JSON, ``{"files": [{"fileName", "fileLen"}]}``)
names the files of that snapshot; files not in it are compacted away or not yet committed.
The file-system view needs only the completion times, to slice the logs of an archived
deltacommit as Hudi's ``CompletionTimeQueryViewV2`` does.

A history file a manifest names is immutable (compaction writes a new file at the next
layer, cleaning deletes files no retained manifest names), so the two time columns read
from one are kept for the process (:data:`_TIMES_CACHE`, keyed by the file's URI and the
length its manifest gives, least recently used out first): every statement builds new
file-system views, and a merge-on-read table's log files of archived deltacommits would
otherwise have each view read the history again, a cost that grew with the table's age.
"""

from __future__ import annotations

import json
import posixpath
import re
import threading
from collections import OrderedDict

import pyarrow.parquet as pq

from hudisql.errors import CorruptTableError
from hudisql.table.format.properties import TableProperties
from hudisql.table.io.storage import Storage

__all__ = ["LSM_DATA_FILE", "MANIFEST_PREFIX", "VERSION_FILE", "ArchivedCompletionTimes",
           "history_rows", "latest_manifest"]

VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
LSM_DATA_FILE = re.compile(r"^(\d+)_(\d+)_\d+\.parquet$")

#: How many history files' completion times the process keeps (a compacted history of
#: years of commits is a few dozen files).
_CACHED_FILES = 256
#: (file URI, length) -> instant time -> completion time, of history files read so far.
_TIMES_CACHE: OrderedDict[tuple[str, int], dict[str, str]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


class ArchivedCompletionTimes:
    """Completion times of the instants in a table's LSM history, read on demand.

    The manifest is read on the first lookup; a history file only when a looked-up instant
    time falls in the ``[min, max]`` range its name gives, so a lookup reads one file.
    """

    def __init__(self, storage: Storage, props: TableProperties) -> None:
        self.storage = storage
        self.history = props.archive_dir
        self._files: list[tuple[str, str, str]] | None = None
        self._lengths: dict[str, int] = {}
        self._read: dict[str, dict[str, str]] = {}

    def get(self, timestamp: str) -> str | None:
        """The completion time of the archived instant requested at ``timestamp``, or None
        when the history does not hold it (or there is no history).

        Raises:
            CorruptTableError: the manifest or a history file is malformed (names the file).
        """
        for low, high, name in self._manifest_files():
            if low <= timestamp <= high:
                found = self._times_in(name).get(timestamp)
                if found is not None:
                    return found
        return None

    def all(self) -> dict[str, str]:
        """Instant time -> completion time of every instant in the history (reads every
        history file's two time columns, not the instants' metadata).

        Raises:
            CorruptTableError: the manifest or a history file is malformed (names the file).
        """
        times: dict[str, str] = {}
        for _, _, name in self._manifest_files():
            times.update(self._times_in(name))
        return times

    def _manifest_files(self) -> list[tuple[str, str, str]]:
        if self._files is not None:
            return self._files
        manifest = latest_manifest(self.storage, self.history)
        files: list[tuple[str, str, str]] = []
        if manifest is not None:
            rel = posixpath.join(self.history, manifest)
            try:
                entries = json.loads(self.storage.read_bytes(rel))["files"]
                names = [str(entry["fileName"]) for entry in entries]
                self._lengths = {str(e["fileName"]): int(e.get("fileLen", -1)) for e in entries}
            except (ValueError, KeyError, TypeError) as exc:
                raise CorruptTableError(
                    f"archived timeline manifest {self.storage.uri(rel)} is not valid ({exc}); "
                    "restore it from a backup, or remove the history folder to read without "
                    "archived completion times"
                ) from exc
            for name in names:
                match = LSM_DATA_FILE.match(name)
                if match is None:
                    raise CorruptTableError(
                        f"archived timeline manifest {self.storage.uri(rel)} names {name!r}, "
                        "which is not an LSM history file (<min>_<max>_<layer>.parquet)"
                    )
                files.append((match.group(1), match.group(2), name))
        self._files = files
        return files

    def _times_in(self, name: str) -> dict[str, str]:
        times = self._read.get(name)
        if times is not None:
            return times
        path = posixpath.join(self.history, name)
        key = (self.storage.uri(path), self._lengths.get(name, -1))
        with _CACHE_LOCK:
            times = _TIMES_CACHE.get(key)
            if times is not None:
                _TIMES_CACHE.move_to_end(key)
        if times is not None:
            self._read[name] = times
            return times
        try:
            with self.storage.open_input_file(path) as source:
                table = pq.read_table(source, columns=["instantTime", "completionTime"])
        except (OSError, KeyError, ValueError) as exc:
            raise CorruptTableError(
                f"archived timeline file {self.storage.uri(path)} cannot be read ({exc})"
            ) from exc
        times = {
            requested: completed
            for requested, completed in zip(
                table.column("instantTime").to_pylist(),
                table.column("completionTime").to_pylist(),
                strict=True,
            )
            if requested and completed
        }
        self._read[name] = times
        if key[1] >= 0:  # a manifest without lengths: not kept (nothing to tell files apart)
            with _CACHE_LOCK:
                _TIMES_CACHE[key] = times
                while len(_TIMES_CACHE) > _CACHED_FILES:
                    _TIMES_CACHE.popitem(last=False)
        return times


def latest_manifest(storage: Storage, history: str) -> str | None:
    """The name of the latest manifest (``manifest_<N>``) of the history, or None."""
    version_file = posixpath.join(history, VERSION_FILE)
    if storage.exists(version_file):
        text = storage.read_bytes(version_file).decode("utf-8", "replace").strip()
        if text.isdigit():
            return f"{MANIFEST_PREFIX}{int(text)}"
    # Hudi falls back to the highest manifest when the version file is missing or unreadable.
    if not storage.exists(history):
        return None
    versions = [
        int(status.name[len(MANIFEST_PREFIX):])
        for status in storage.list_dir(history)
        if status.name.startswith(MANIFEST_PREFIX)
        and status.name[len(MANIFEST_PREFIX):].isdigit()
    ]
    return f"{MANIFEST_PREFIX}{max(versions)}" if versions else None


def history_rows(storage: Storage, history: str) -> list[dict[str, object]]:
    """Every row of the latest snapshot of the LSM history (``instantTime``,
    ``completionTime``, ``action``, ``metadata``, ``plan``), by instant time; [] without one.

    Raises:
        CorruptTableError: the manifest or a history file is malformed (names the file).
    """
    name = latest_manifest(storage, history)
    if name is None:
        return []
    rel = posixpath.join(history, name)
    try:
        files = [str(e["fileName"]) for e in json.loads(storage.read_bytes(rel))["files"]]
    except (ValueError, KeyError, TypeError, FileNotFoundError) as exc:
        raise CorruptTableError(
            f"archived timeline manifest {storage.uri(rel)} is not valid ({exc}); restore it "
            "from a backup") from exc
    rows: list[dict[str, object]] = []
    for file_name in files:
        path = posixpath.join(history, file_name)
        try:
            with storage.open_input_file(path) as source:
                rows.extend(pq.read_table(source, columns=[
                    "instantTime", "completionTime", "action", "metadata", "plan"]).to_pylist())
        except (OSError, KeyError, ValueError) as exc:
            raise CorruptTableError(
                f"archived timeline file {storage.uri(path)} cannot be read ({exc})") from exc
    return sorted(rows, key=lambda r: str(r.get("instantTime") or ""))
