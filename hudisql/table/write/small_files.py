"""Small-file handling: inserts fill the small base files of a partition before new ones.

Hudi keeps file groups near ``hoodie.parquet.max.file.size`` by routing an upsert's (or
insert's) new records first into the partition's *small* file groups: those whose latest
base file is under ``hoodie.parquet.small.file.limit`` (0 turns this off). Each takes as
many records as fit, ``(max file size - its size) / average record size``; the rest go
to new file groups. A file group that takes inserts is rewritten as a new base file (its
stored rows, the write's updates and deletes of it, and the inserts), in the same commit.

Which slices qualify follows Hudi's Spark writers with the default (simple or bloom)
index, which cannot find keys in log files:

* copy-on-write: every small base file of the partition;
* merge-on-read: only slices that are a base file alone (padding a slice that has log
  files would hide its logs' keys from such an index, or need a compaction), smallest
  first, at most ``hoodie.merge.small.file.group.candidates.limit`` (default 1) per
  partition.

The average record size comes from the newest completed commit whose base files add up to
more than the small-file limit (``totalWriteBytes / numWrites`` of its base files), else
``hoodie.copyonwrite.record.size.estimate`` (default 1024 bytes), as in Hudi. Only the
newest :data:`RECENT_COMMITS` commits are read (Hudi reads its active timeline, which
archiving keeps to about as many; we do not archive, so a write would otherwise read every
commit the table ever made).

A partition whose first small file can take all of its records (:func:`insert_sinks`) is
an *insert sink*: every record of it that no other file group holds goes to that file
group, update or insert alike, so an upsert need not look its keys up (the write task
tells them apart as it reads the file anyway).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hudisql.errors import WriteError
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.timeline import Timeline

__all__ = [
    "INSERT_SPLIT_SIZE",
    "MAX_FILE_SIZE",
    "RECORD_SIZE_ESTIMATE",
    "SMALL_FILE_CANDIDATES",
    "SMALL_FILE_LIMIT",
    "SmallFile",
    "SmallFileSettings",
    "average_record_size",
    "insert_sinks",
    "small_files",
]

#: Base files under this many bytes take inserts (Hudi's default: 100 MiB; 0: off).
SMALL_FILE_LIMIT = "hoodie.parquet.small.file.limit"
#: The size a small file is filled up to (Hudi's default: 120 MiB).
MAX_FILE_SIZE = "hoodie.parquet.max.file.size"
#: Bytes per record when no commit tells (Hudi's default: 1024).
RECORD_SIZE_ESTIMATE = "hoodie.copyonwrite.record.size.estimate"
#: Merge-on-read: how many small slices per partition take inserts (Hudi's default: 1).
SMALL_FILE_CANDIDATES = "hoodie.merge.small.file.group.candidates.limit"
#: Records per new file group, for the inserts small files do not take.
INSERT_SPLIT_SIZE = "hoodie.copyonwrite.insert.split.size"

_DEFAULTS = {SMALL_FILE_LIMIT: 104_857_600, MAX_FILE_SIZE: 125_829_120,
             RECORD_SIZE_ESTIMATE: 1024, SMALL_FILE_CANDIDATES: 1, INSERT_SPLIT_SIZE: 500_000}
_COMMIT_ACTIONS = ("commit", "deltacommit", "replacecommit")
#: How many of the newest commits the record size estimate looks at (module notes).
RECENT_COMMITS = 30


@dataclass(frozen=True)
class SmallFile:
    """A file slice that takes inserts, and how many records fit in it."""

    file_slice: FileSlice
    capacity: int


@dataclass(frozen=True)
class SmallFileSettings:
    """The small-file settings of one write (Hudi's option names, module notes)."""

    limit: int = _DEFAULTS[SMALL_FILE_LIMIT]
    max_file_size: int = _DEFAULTS[MAX_FILE_SIZE]
    record_size_estimate: int = _DEFAULTS[RECORD_SIZE_ESTIMATE]
    candidates: int = _DEFAULTS[SMALL_FILE_CANDIDATES]
    insert_split_size: int = _DEFAULTS[INSERT_SPLIT_SIZE]

    @classmethod
    def parse(cls, options: Mapping[str, str], table_name: str) -> SmallFileSettings:
        """The settings among a write's ``options`` (defaults for those absent).

        Raises:
            WriteError: a setting that is not an integer in its range, naming the table.
        """
        def setting(key: str, minimum: int) -> int:
            raw = options.get(key)
            if raw is None:
                return _DEFAULTS[key]
            try:
                value = int(str(raw).strip())
            except ValueError:
                value = minimum - 1
            if value < minimum:
                raise WriteError(f"table {table_name}: option {key}={raw!r} must be an integer "
                                 f"of at least {minimum} (default {_DEFAULTS[key]})")
            return value

        return cls(setting(SMALL_FILE_LIMIT, 0), setting(MAX_FILE_SIZE, 1),
                   setting(RECORD_SIZE_ESTIMATE, 1), setting(SMALL_FILE_CANDIDATES, 0),
                   setting(INSERT_SPLIT_SIZE, 1))


def average_record_size(timeline: Timeline, settings: SmallFileSettings) -> int:
    """Bytes per record of the table's base files, as Hudi estimates it (module notes)."""
    for instant in reversed(timeline.completed(_COMMIT_ACTIONS)[-RECENT_COMMITS:]):
        stats = [s for s in timeline.commit_metadata(instant).write_stats()
                 if s.path and s.path.endswith(".parquet")]
        size = sum(s.total_write_bytes or 0 for s in stats)
        records = sum(s.num_writes or 0 for s in stats)
        if records > 0 and size > settings.limit:
            return max(1, size // records)
    return settings.record_size_estimate


def small_files(slices: Iterable[FileSlice], merge_on_read: bool, settings: SmallFileSettings,
                record_size: int) -> dict[str, list[SmallFile]]:
    """Per partition path, the slices that take inserts (module notes), smallest first.

    Args:
        slices: the latest file slices of the partitions written.
        record_size: bytes per record (:func:`average_record_size`).
    """
    found: dict[str, list[SmallFile]] = {}
    if settings.limit == 0:
        return found
    for file_slice in slices:
        base = file_slice.base_file
        if base is None or not base.path.endswith(".parquet") or base.size >= settings.limit:
            continue
        if merge_on_read and file_slice.log_files:
            continue
        capacity = (settings.max_file_size - base.size) // record_size
        if capacity > 0:
            found.setdefault(file_slice.partition_path, []).append(
                SmallFile(file_slice, capacity))
    for partition, files in found.items():
        files.sort(key=lambda f: (f.file_slice.total_size, f.file_slice.file_id))
        if merge_on_read:
            found[partition] = files[:settings.candidates]
    return {p: f for p, f in found.items() if f}


def insert_sinks(counts: Mapping[str | None, int], small: Mapping[str, list[SmallFile]]
                 ) -> dict[str, SmallFile]:
    """Per partition path, the small file that takes every insert of the partition.

    ``counts``: the write's records per partition (an upper bound of its inserts). Inserts
    fill a partition's small files in order (:func:`small_files`), so when the first one's
    capacity covers the partition's records, every insert goes to it: the partition's
    records need looking up only in its other file groups, and those found in none of
    them belong to the sink, whether its file holds their key (updates) or not (inserts).
    """
    out: dict[str, SmallFile] = {}
    for partition, count in counts.items():
        if partition is None:
            continue
        files = small.get(partition, [])
        if files and files[0].capacity >= count:
            out[partition] = files[0]
    return out
