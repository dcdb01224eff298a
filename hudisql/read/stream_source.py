"""``spark.readStream.format("hudi")``: each micro-batch reads the commits of ``(start, end]``.

A Python ``DataSourceStreamReader`` whose offsets are ``{"commitTime": "<time>"}`` as Apache
Hudi's streaming source writes them: instant times on version 6 tables, *completion* times
on versions 8/9 (Hudi 1.x's ``HoodieStreamSourceV2``), where incremental ranges are by
completion time. Each micro-batch is the
incremental query of its range (:mod:`hudisql.table.read.incremental`): the latest state of the
records written in it, or with ``hoodie.datasource.query.type=incremental`` and
``hoodie.datasource.query.incremental.format=cdc`` Hudi's change records
(:mod:`hudisql.table.read.cdc`). Input partitions and reads are the batch reader's
(:class:`~hudisql.read.datasource.HudiReader`): one per file slice or CDC unit.

* Start: ``hoodie.datasource.streaming.startOffset`` = ``earliest`` (default) | ``latest`` |
  an instant (exclusive: the commits after it; on versions 8/9 a completion time), as
  Hudi's source.
* A write that completes later is never skipped: on version 6 the end never passes a
  pending write (the last completed write with no pending write before it); on versions
  8/9 the end is the latest completion time, and a write pending now completes after it
  (completion times are taken under the table lock after every time on the timeline).
  Rolled-back writes never count.
* Admission control: Spark's read limits, admitting whole commits (at least one per batch):
  ``maxRowsPerTrigger`` (rows inserted, updated or deleted), ``maxFilesPerTrigger`` (files
  written) or
  ``maxBytesPerTrigger`` (bytes written), one of them; ``Trigger.AvailableNow`` reads up to
  the end as of the query's start, in batches of that limit.
* A start among archived instants reads them from the archived timeline, or with
  ``hoodie.datasource.read.incr.fallback.fulltablescan.enable=true`` scans every file group,
  as the incremental query does (both exact). A start whose state a clean deleted: the
  latest-state batches read as of their end, which admission control never puts before the
  clean's earliest retained commit; a CDC stream needs the state before its start, and
  fails naming the clean and what to do.

One long-lived Python worker serves ``latestOffset``/``partitions``; the table is re-read
from storage at each call (its timeline moves).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from hudisql.errors import ReadOptionError
from hudisql.read.datasource import HudiReader, _open_path
from hudisql.read.options import (
    BEGIN_INSTANT,
    END_INSTANT,
    INCREMENTAL,
    QUERY_TYPE,
    ReadOptions,
)
from hudisql.table.format.instant import WRITE_ACTIONS, Action
from hudisql.table.read.incremental import EARLIEST, check_on_timeline, completion_times

if TYPE_CHECKING:
    from hudisql.table.format.commit_metadata import WriteStat
    from hudisql.table.format.instant import Instant
    from hudisql.table.table import HudiTable

__all__ = ["START_OFFSET", "HudiStreamReader", "read_limit"]

#: Hudi's option: where a new query starts (``earliest``, ``latest`` or an instant).
START_OFFSET = "hoodie.datasource.streaming.startOffset"
#: The offset before every commit (Hudi's ``HoodieSourceOffset.INIT_OFFSET``).
INIT_COMMIT_TIME = "00000000000000"
#: Spark's per-trigger limits (as its file source and Delta name them).
MAX_ROWS, MAX_FILES, MAX_BYTES = "maxRowsPerTrigger", "maxFilesPerTrigger", "maxBytesPerTrigger"
#: Writes that may add or change rows (a completed compaction keeps every record's commit
#: time: it adds no changes, but is a commit the end may move past).
_DATA_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT, Action.CLUSTERING)


def _offset(commit_time: str | None) -> dict[str, str]:
    return {"commitTime": commit_time or INIT_COMMIT_TIME}


def read_limit(options: Mapping[str, str], path: str) -> ReadLimit:
    """The read limit the options ask for (``ReadAllAvailable`` without one).

    Raises:
        ReadOptionError: more than one limit, or one that is not a whole number > 0.
    """
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    given = [(name, lowered[name.lower()]) for name in (MAX_ROWS, MAX_FILES, MAX_BYTES)
             if name.lower() in lowered]
    if not given:
        return ReadAllAvailable()
    if len(given) > 1:
        raise ReadOptionError(f"readStream.format('hudi').load({path!r}): options "
                              f"{' and '.join(n for n, _ in given)} both limit a trigger; give "
                              "one of them")
    name, text = given[0]
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise ReadOptionError(f"readStream.format('hudi').load({path!r}): option {name}="
                              f"{text!r} is not a whole number > 0")
    kind = {MAX_ROWS: ReadMaxRows, MAX_FILES: ReadMaxFiles, MAX_BYTES: ReadMaxBytes}[name]
    return kind(value)


def _changed_rows(stat: WriteStat) -> int:
    """The rows a write stat changed: inserts, updates and deletes (a copy-on-write base
    file rewrites its other rows too, which ``num_writes`` counts); ``num_writes`` when a
    writer recorded no breakdown."""
    changed = stat.num_inserts + stat.num_update_writes
    return (changed or stat.num_writes) + stat.num_deletes


def _earliest_readable(table: HudiTable) -> str | None:
    """The last clean's earliest commit to retain (None: no clean yet)."""
    from hudisql.table.format.service_plans import CleanMetadata

    last = table.timeline.last_completed([Action.CLEAN])
    if last is None:
        return None
    clean = CleanMetadata.parse(table.timeline.read_content(last), last.file_name)
    return clean.earliest_commit_to_retain or None


def _in_offset_order(table: HudiTable) -> list[tuple[str, Instant]]:
    """The completed writes with the offset each one ends at, in offset order: its instant
    time on version 6, its completion time on versions 8/9."""
    writes = table.timeline.completed(WRITE_ACTIONS)
    if table.properties.timeline_layout < 2:
        return [(i.timestamp, i) for i in writes]
    return sorted(((i.completion_time or i.timestamp, i) for i in writes),
                  key=lambda pair: pair[0])


class HudiStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streams the commits of a Hudi table as micro-batches of incremental queries."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.raw = {str(k): str(v) for k, v in options.items()}
        self.schema = schema
        self.options = ReadOptions.parse(self.raw, schema)
        self.limit = read_limit(self.raw, self.options.path)
        #: Trigger.AvailableNow: the end as of the query's start (no offset goes past it).
        self.target: str | None = None

    # -- offsets ------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, str]:
        """Where a new query starts (:data:`START_OFFSET`).

        Raises:
            ReadOptionError: an instant that is malformed or not on the timeline.
        """
        start = self.raw.get(START_OFFSET) or next(
            (v for k, v in self.raw.items() if k.lower() == START_OFFSET.lower()), EARLIEST)
        text = str(start).strip()
        if text.lower() == EARLIEST:
            return _offset(None)
        table = _open_path(self.options.path)
        if text.lower() == "latest":
            return _offset(self._end(table))
        if not (text.isdigit() and len(text) in (14, 17)):
            raise ReadOptionError(
                f"{START_OFFSET}={start!r} on table {table.name}: give earliest, latest or an "
                "instant time (yyyyMMddHHmmssSSS, as SHOW TIMELINE prints it)")
        check_on_timeline(table, text, text, START_OFFSET)
        return _offset(text)

    def _end(self, table: HudiTable) -> str | None:
        """The furthest end: on version 6 the last completed write with no pending write
        before it, on versions 8/9 the latest completion time of a write."""
        if table.properties.timeline_layout >= 2:
            times = completion_times(table)
            end = max((times[i.timestamp] for i in table.timeline.completed(WRITE_ACTIONS)),
                      default=None)
        else:
            head = table.timeline.last_completed_without_holes(_DATA_ACTIONS)
            end = None if head is None else head.timestamp
        if self.target is not None and (end is None or end > self.target):
            end = self.target
        return end

    def getDefaultReadLimit(self) -> ReadLimit:
        """The limit of the options (``maxRowsPerTrigger``, ...), else all available."""
        return self.limit

    def latestOffset(self, start: dict[str, str], limit: ReadLimit) -> dict[str, str]:
        """The end of the next batch: whole commits after ``start`` within ``limit`` (in
        completion order on versions 8/9)."""
        table = _open_path(self.options.path)
        begin = start["commitTime"]
        end = self._end(table)
        if end is None or end <= begin:
            return dict(start)
        if isinstance(limit, ReadAllAvailable):
            return _offset(end)
        rolled_back = table.timeline.rolled_back_instants()
        # A batch never ends before the last clean's earliest retained commit: reading the
        # table as of such an end would miss the file slices the clean deleted.
        readable = _earliest_readable(table)
        used = 0
        admitted: str | None = None
        admitted_instant = ""
        for key, instant in _in_offset_order(table):
            ts = instant.timestamp
            if key <= begin or key > end or ts in rolled_back:
                continue
            stats = table.timeline.commit_metadata(instant).write_stats()
            if isinstance(limit, ReadMaxRows):
                size, cap = sum(_changed_rows(s) for s in stats), limit.max_rows
            elif isinstance(limit, ReadMaxFiles):
                size, cap = len(stats), limit.max_files
            elif isinstance(limit, ReadMaxBytes):
                size, cap = sum(s.total_write_bytes for s in stats), limit.max_bytes
            else:  # ReadMinRows and others: not a cap on this source
                return _offset(end)
            if admitted is not None and used + size > cap and (
                    readable is None or admitted_instant >= readable):
                break
            used += size
            admitted, admitted_instant = key, ts
        return _offset(admitted or end)

    def reportLatestOffset(self) -> dict[str, str] | None:
        """The furthest end now (for the query's progress)."""
        end = self._end(_open_path(self.options.path))
        return None if end is None else _offset(end)

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: fix the end as of now."""
        self.target = self._end(_open_path(self.options.path)) or INIT_COMMIT_TIME

    # -- planning and reading --------------------------------------------------------

    def _batch_reader(self, start: str | None = None, end: str | None = None) -> HudiReader:
        options = {**self.raw, QUERY_TYPE: INCREMENTAL}
        if start is not None and end is not None:
            options.update({BEGIN_INSTANT: start, END_INSTANT: end})
        return HudiReader(ReadOptions.parse(options, self.schema), self.schema)

    def partitions(self, start: dict[str, str], end: dict[str, str]
                   ) -> Sequence[InputPartition]:
        """The input partitions of the incremental query ``(start, end]`` (none when empty).

        Raises:
            ReadOptionError: the range starts among archived instants without the
                full-scan fallback, or a bound left the timeline.
        """
        begin, stop = start["commitTime"], end["commitTime"]
        if stop <= begin:
            return []
        return self._batch_reader(begin, stop).partitions()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one input partition (the batch reader's read)."""
        return self._batch_reader().read(partition)

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to release: offsets are times on the table's own timeline."""
