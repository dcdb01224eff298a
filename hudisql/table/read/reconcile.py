"""Which log blocks of a file slice count: duplicate blocks from task retries are never merged.

When Spark retries a write task or runs a speculative copy, the failed or extra attempt may
already have written log blocks; a reader that merges them applies updates twice. Every
block of a file slice therefore gets a :class:`Verdict` with a reason, decided from the
blocks' headers alone (a header-only scan, before any content is decoded):

- ``corrupt``: a damaged stretch of a log file; never merged.
- ``rolled_back``: its instant is voided by a rollback command block anywhere in the slice,
  or named by a completed rollback on the timeline.
- ``not_visible``: its instant is pending, failed, unknown, or later than the read's instant.
- ``spurious``: written by a task attempt whose work the commit did not keep (see below).
- ``replaced``: a log-compacted block of a visible log compaction stands in for it.
- ``valid``: merged (a rollback command block is ``valid`` too: it applies).

Spurious blocks are found in this order of authority, per (instant, file group):

a. **The commit's record.** A commit that lists the log files its committed task attempts
   wrote carries, in ``extraMetadata``, the key :data:`COMMITTED_LOG_FILES_KEY`
   (``"hudisql.committedLogFiles"``) whose value is the JSON text
   ``{"<fileId>": {"logFiles": ["<log file name>", ...], "attempt": <int or null>}, ...}``:
   every file group the commit wrote log blocks to, the names (no directory) of the log
   files the committed attempt wrote, and the attempt number in their ``BLOCK_IDENTIFIER``
   (null when unknown). Where an instant has this record, exactly the blocks of that instant
   in the named log files (and of the named attempt, when given) are valid; every other
   block of that instant in that file group is spurious, including every block of a file
   group the record does not name. Writers build the record with
   :func:`record_committed_log_files` from the write stats of the successful attempts (the
   only ones that reach the driver): each stat's ``path`` and ``logFiles``, and the attempt
   from the write-stat key :data:`BLOCK_ATTEMPT_STAT_KEY` (``"hudisql.blockAttempt"``).
b. **The block sequence** (tables from other writers, or with rule (a) switched off). The
   blocks of one instant in one file slice that carry ``BLOCK_IDENTIFIER = "<attempt>,<seq>"``
   are grouped by attempt (a sequence number that does not grow starts a new run of that
   attempt number, as after a stage retry); corrupt blocks are ignored; the run with the
   longest valid sequence from 0 wins, and on a tie the run written last (log order of its
   first block). Blocks of the other runs are spurious. Blocks without an identifier (old
   tables) are all valid.

Rule (b) cannot tell which of two complete attempts with equally long sequences was
committed (a speculative pair where the earlier one won), nor which of two interleaved runs
with the same attempt number is which: only rule (a) gets those right. A data block whose
content turns out not to decode is found only when it is read (the merge reports it
corrupt then); reconciliation has already chosen by headers.
"""

from __future__ import annotations

import functools
import json
import posixpath
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudisql.errors import CorruptTableError, HudiSqlError
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.filenames import LogFileName
from hudisql.table.format.fsview import VisibleInstants
from hudisql.table.format.log.format import BlockType, LogBlockInfo
from hudisql.table.format.log.reader import scan_blocks
from hudisql.table.format.timeline import Timeline

if TYPE_CHECKING:
    from hudisql.table.table import HudiTable

__all__ = [
    "BLOCK_ATTEMPT_STAT_KEY",
    "COMMITTED_LOG_FILES_KEY",
    "LOG_BLOCKS_SCHEMA",
    "BlockVerdict",
    "CommittedFileGroup",
    "CommittedLogFiles",
    "ReconcileMode",
    "Verdict",
    "committed_log_files",
    "judge_log_blocks",
    "record_committed_log_files",
    "show_log_blocks",
]

#: ``extraMetadata`` key of rule (a)'s record: which log files a commit committed.
COMMITTED_LOG_FILES_KEY = "hudisql.committedLogFiles"
#: Write-stat key holding the attempt number a log write stamped into ``BLOCK_IDENTIFIER``.
BLOCK_ATTEMPT_STAT_KEY = "hudisql.blockAttempt"

_MERGED_TYPES = frozenset(
    {BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA, BlockType.DELETE}
)


class Verdict(StrEnum):
    """What a reader does with one log block (see the module docstring)."""

    VALID = "valid"
    SPURIOUS = "spurious"
    ROLLED_BACK = "rolled_back"
    CORRUPT = "corrupt"
    NOT_VISIBLE = "not_visible"
    REPLACED = "replaced"


class ReconcileMode(StrEnum):
    """How duplicate blocks are found: ``full`` (rule (a) where recorded, else (b)),
    ``sequence`` (rule (b) only) or ``off`` (every visible block counts, as readers before
    block identifiers did)."""

    FULL = "full"
    SEQUENCE = "sequence"
    OFF = "off"

    @classmethod
    def of(cls, value: ReconcileMode | str) -> ReconcileMode:
        """``value`` as a mode.

        Raises:
            HudiSqlError: not one of ``full``, ``sequence``, ``off``.
        """
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise HudiSqlError(
                f"unknown log block reconciliation mode {value!r}: use 'full' (the commit's "
                "record of committed log files, else block sequences), 'sequence' or 'off'"
            ) from None


@dataclass(frozen=True)
class BlockVerdict:
    """One block's verdict and the reason for it."""

    block: LogBlockInfo
    verdict: Verdict
    reason: str


# -- rule (a): the commit's record -------------------------------------------------------


@dataclass(frozen=True)
class CommittedFileGroup:
    """The log files (names, no directory) one commit committed for a file group, and the
    attempt number their blocks carry (None: unknown)."""

    log_files: frozenset[str]
    attempt: int | None = None


@dataclass
class CommittedLogFiles:
    """Rule (a)'s record of one commit: file id -> the log files its committed attempt wrote."""

    file_groups: dict[str, CommittedFileGroup] = field(default_factory=dict)

    def add(self, file_id: str, log_files: Iterable[str], attempt: int | None = None) -> None:
        """Record ``log_files`` (names or relative paths) as committed for ``file_id``.

        Raises:
            HudiSqlError: ``attempt`` contradicts the attempt already recorded for it.
        """
        names = {posixpath.basename(f) for f in log_files if f}
        known = self.file_groups.get(file_id)
        if known is not None:
            if None not in (known.attempt, attempt) and known.attempt != attempt:
                raise HudiSqlError(
                    f"file group {file_id}: write stats of attempts {known.attempt} and "
                    f"{attempt} in one commit; only the committed attempt's stats belong there"
                )
            names |= known.log_files
            attempt = known.attempt if attempt is None else attempt
        self.file_groups[file_id] = CommittedFileGroup(frozenset(names), attempt)

    @classmethod
    def from_write_stats(cls, stats: Iterable[WriteStat]) -> CommittedLogFiles:
        """The record of the log files named by ``stats`` (``path`` and ``logFiles``).

        Base-file stats add nothing. Raises:
            HudiSqlError: two stats of one file group name different attempts.
        """
        record = cls()
        for stat in stats:
            names = [n for n in (stat.path, *stat.log_files) if n and _is_log_name(n)]
            if not names or not stat.file_id:
                continue
            raw = stat.extra.get(BLOCK_ATTEMPT_STAT_KEY)
            record.add(stat.file_id, names, None if raw is None else int(raw))
        return record

    def to_json(self) -> str:
        """The record as the JSON text stored under :data:`COMMITTED_LOG_FILES_KEY`."""
        return json.dumps(
            {
                fid: {"logFiles": sorted(group.log_files), "attempt": group.attempt}
                for fid, group in sorted(self.file_groups.items())
            },
            separators=(",", ":"),
        )

    @classmethod
    def parse(cls, text: str, instant: str = "?") -> CommittedLogFiles:
        """The record from its JSON text.

        Raises:
            CorruptTableError: malformed; names the instant and what is wrong.
        """
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise _bad_record(instant, f"not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise _bad_record(instant, "not a JSON object of file ids")
        record = cls()
        for file_id, entry in data.items():
            files = entry.get("logFiles") if isinstance(entry, dict) else None
            attempt = entry.get("attempt") if isinstance(entry, dict) else None
            if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
                raise _bad_record(instant, f"file group {file_id} has no list of logFiles")
            if attempt is not None and (type(attempt) is not int or attempt < 0):
                raise _bad_record(instant, f"file group {file_id} has attempt {attempt!r}")
            record.file_groups[file_id] = CommittedFileGroup(frozenset(files), attempt)
        return record

    @classmethod
    def of_metadata(cls, metadata: CommitMetadata, instant: str = "?") -> CommittedLogFiles | None:
        """The record in ``metadata``'s ``extraMetadata``, or None when it has none.

        Raises:
            CorruptTableError: the record is malformed.
        """
        text = metadata.extra_metadata.get(COMMITTED_LOG_FILES_KEY)
        if text is not None and not isinstance(text, str):
            raise _bad_record(instant, "not a JSON text")
        return None if text is None else cls.parse(text, instant)


def _bad_record(instant: str, what: str) -> CorruptTableError:
    return CorruptTableError(
        f"commit {instant}: extraMetadata[{COMMITTED_LOG_FILES_KEY!r}] is malformed: {what}; "
        f"read with reconcile='sequence' to ignore it, or repair the instant file"
    )


def _is_log_name(name: str) -> bool:
    return LogFileName.parse(posixpath.basename(name)) is not None


def record_committed_log_files(metadata: CommitMetadata) -> CommittedLogFiles:
    """Store rule (a)'s record in ``metadata.extra_metadata``, built from its write stats.

    Call it on the commit metadata of the successful attempts' stats just before completing
    the instant. Returns the record. Raises:
        HudiSqlError: two stats of one file group name different attempts.
    """
    record = CommittedLogFiles.from_write_stats(metadata.write_stats())
    metadata.extra_metadata[COMMITTED_LOG_FILES_KEY] = record.to_json()
    return record


_RECORDS: weakref.WeakKeyDictionary[Timeline, dict[str, CommittedLogFiles | None]] = (
    weakref.WeakKeyDictionary()
)
_RECORDS_LOCK = threading.Lock()


def committed_log_files(timeline: Timeline, instant_time: str) -> CommittedLogFiles | None:
    """Rule (a)'s record of the completed instant ``instant_time``; None when it has none.

    Completed instant files never change, so records are cached per loaded timeline.

    Raises:
        CorruptTableError: the commit metadata or the record is malformed.
    """
    with _RECORDS_LOCK:
        cache = _RECORDS.setdefault(timeline, {})
        if instant_time in cache:
            return cache[instant_time]
    instant = timeline.get(instant_time)
    if instant is None or not instant.is_completed:
        return None  # not cached: the timeline object may yet complete it
    record = _read_record(timeline, instant_time)
    with _RECORDS_LOCK:
        cache[instant_time] = record
    return record


def _read_record(timeline: Timeline, instant_time: str) -> CommittedLogFiles | None:
    content = timeline.read_content(instant_time)
    if content.lstrip()[:1] == b"{":
        # v6 JSON: only extraMetadata is needed, so skip building every write stat.
        try:
            extra = json.loads(content).get("extraMetadata")
        except (ValueError, AttributeError):
            extra = None
        if isinstance(extra, dict):
            text = extra.get(COMMITTED_LOG_FILES_KEY)
            if text is None or isinstance(text, str):
                return None if text is None else CommittedLogFiles.parse(text, instant_time)
    # Avro (v8+) or anything unusual: the full parser, which names what is malformed.
    metadata = CommitMetadata.parse(content, instant_time)
    return CommittedLogFiles.of_metadata(metadata, instant_time)


# -- the verdicts ------------------------------------------------------------------------


def judge_log_blocks(
    blocks: Sequence[LogBlockInfo],
    visible: VisibleInstants,
    mode: ReconcileMode | str = ReconcileMode.FULL,
) -> list[BlockVerdict]:
    """A verdict for every block of one file slice's logs (``blocks`` in log order).

    Header-only: nothing is decoded. Returns the verdicts in the order of ``blocks``.

    Raises:
        HudiSqlError: an unknown ``mode``.
        CorruptTableError: a commit's record of committed log files is malformed.
    """
    mode = ReconcileMode.of(mode)
    verdicts: list[BlockVerdict | None] = [None] * len(blocks)
    # Rollback blocks apply whatever their own instant: Hudi's readers never filter command
    # blocks, and a rollback's target is never to be seen again.
    voided = {
        b.target_instant_time: b.instant_time
        for b in blocks
        if b.is_rollback_command and b.target_instant_time
    }
    live: dict[str, list[int]] = {}
    undone: set[str] | None = None
    for i, block in enumerate(blocks):
        instant = block.instant_time
        if block.is_corrupt:
            verdicts[i] = BlockVerdict(block, Verdict.CORRUPT, block.corrupt_reason or "corrupt")
        elif block.block_type == BlockType.COMMAND:
            verdicts[i] = _command_verdict(block)
        elif block.block_type not in _MERGED_TYPES:
            verdicts[i] = BlockVerdict(
                block, Verdict.NOT_VISIBLE, f"{block.block_type.name} blocks are not merged"
            )
        elif instant in voided:
            verdicts[i] = BlockVerdict(
                block, Verdict.ROLLED_BACK,
                f"a rollback command block of instant {voided[instant]} voids instant {instant}",
            )
        elif instant not in visible:
            if undone is None:
                undone = visible.timeline.rolled_back_instants()
            verdicts[i] = _invisible_verdict(block, visible, undone)
        else:
            live.setdefault(str(instant), []).append(i)
    for instant, indexes in live.items():
        record = None
        if mode == ReconcileMode.FULL:
            record = committed_log_files(visible.timeline, instant)
        if mode == ReconcileMode.OFF:
            decided = {i: _valid(blocks[i], "block reconciliation is off") for i in indexes}
        elif record is not None:
            decided = _commit_rule(blocks, indexes, instant, record)
        else:
            decided = _sequence_rule(blocks, indexes, instant)
        for i, verdict in decided.items():
            verdicts[i] = verdict
    _mark_replaced(blocks, verdicts)
    assert all(v is not None for v in verdicts)
    return [v for v in verdicts if v is not None]


def _valid(block: LogBlockInfo, reason: str) -> BlockVerdict:
    return BlockVerdict(block, Verdict.VALID, reason)


def _command_verdict(block: LogBlockInfo) -> BlockVerdict:
    if block.is_rollback_command and block.target_instant_time:
        return _valid(block, f"rollback command: voids instant {block.target_instant_time}")
    return BlockVerdict(block, Verdict.NOT_VISIBLE, "command block of an unknown kind: ignored")


def _invisible_verdict(
    block: LogBlockInfo, visible: VisibleInstants, undone: set[str]
) -> BlockVerdict:
    instant = block.instant_time
    if not instant:
        return BlockVerdict(block, Verdict.NOT_VISIBLE, "the block has no INSTANT_TIME header")
    if instant in undone:
        return BlockVerdict(
            block, Verdict.ROLLED_BACK, f"a completed rollback on the timeline undid {instant}"
        )
    if visible.as_of is not None and instant > visible.as_of:
        return BlockVerdict(
            block, Verdict.NOT_VISIBLE, f"instant {instant} is after as_of {visible.as_of}"
        )
    return BlockVerdict(
        block, Verdict.NOT_VISIBLE, f"instant {instant} is not completed (pending or failed)"
    )


def _mark_replaced(blocks: Sequence[LogBlockInfo], verdicts: list[BlockVerdict | None]) -> None:
    # Only valid blocks replace: a spurious compacted block names the same instants as the
    # valid one of its log compaction, or belongs to nothing committed. Taking the union over
    # every valid block (replaced ones included) makes the replacement transitive.
    replaced: dict[str, str] = {}
    for block, verdict in zip(blocks, verdicts, strict=True):
        if verdict is not None and verdict.verdict == Verdict.VALID:
            for time in block.compacted_block_times:
                replaced.setdefault(time, str(block.instant_time))
    for i, verdict in enumerate(verdicts):
        block = blocks[i]
        if (
            verdict is not None and verdict.verdict == Verdict.VALID
            and block.instant_time in replaced and block.block_type != BlockType.COMMAND
        ):
            verdicts[i] = BlockVerdict(
                block, Verdict.REPLACED,
                f"log compaction {replaced[str(block.instant_time)]} replaces the blocks of "
                f"{block.instant_time}",
            )


@functools.lru_cache(maxsize=4096)
def _file_id_of(log_file: str) -> str | None:
    parsed = LogFileName.parse(posixpath.basename(log_file))
    return parsed.file_id if parsed is not None else None


def _file_id(block: LogBlockInfo) -> str | None:
    return _file_id_of(block.log_file)


def _commit_rule(
    blocks: Sequence[LogBlockInfo], indexes: list[int], instant: str, record: CommittedLogFiles
) -> dict[int, BlockVerdict]:
    decided: dict[int, BlockVerdict] = {}
    unnamed: list[int] = []
    for i in indexes:
        block = blocks[i]
        file_id = _file_id(block)
        if file_id is None:
            unnamed.append(i)  # no file group to look up: the sequence decides
            continue
        name = posixpath.basename(block.log_file)
        group = record.file_groups.get(file_id)
        ident = block.block_identifier
        if group is None:
            reason = (
                f"commit {instant} committed no log files of file group {file_id}: left by a "
                "failed or duplicate task attempt"
            )
        elif name not in group.log_files:
            reason = (
                f"commit {instant} did not commit log file {name} of file group {file_id}: "
                "left by a failed or duplicate task attempt"
            )
        elif group.attempt is not None and ident is not None and ident[0] != group.attempt:
            reason = (
                f"attempt {ident[0]} wrote this block; commit {instant} committed attempt "
                f"{group.attempt} of file group {file_id}"
            )
        else:
            decided[i] = _valid(block, f"commit {instant} committed log file {name}")
            continue
        decided[i] = BlockVerdict(block, Verdict.SPURIOUS, reason)
    if unnamed:
        decided.update(_sequence_rule(blocks, unnamed, instant))
    return decided


@dataclass
class _Run:
    """The blocks one task attempt wrote for one instant in one slice, in log order."""

    attempt: int
    start: int
    last_seq: int = -1
    sequences: set[int] = field(default_factory=set)
    members: list[int] = field(default_factory=list)

    @property
    def length(self) -> int:
        """How many blocks of the sequence from 0 are there without a gap."""
        n = 0
        while n in self.sequences:
            n += 1
        return n


def _sequence_rule(
    blocks: Sequence[LogBlockInfo], indexes: list[int], instant: str
) -> dict[int, BlockVerdict]:
    decided: dict[int, BlockVerdict] = {}
    runs: list[_Run] = []
    current: dict[int, _Run] = {}
    for i in indexes:
        ident = blocks[i].block_identifier
        if ident is None:
            decided[i] = _valid(blocks[i], "no BLOCK_IDENTIFIER (an older writer): taken as is")
            continue
        attempt, seq = ident
        run = current.get(attempt)
        if run is None or seq <= run.last_seq:
            run = current[attempt] = _Run(attempt, start=i)
            runs.append(run)
        run.last_seq = seq
        run.sequences.add(seq)
        run.members.append(i)
    if not runs:
        return decided
    winner = max(runs, key=lambda r: (r.length, r.start))
    for run in runs:
        for i in run.members:
            decided[i] = _run_verdict(blocks[i], run, winner, len(runs), instant)
    return decided


def _run_verdict(
    block: LogBlockInfo, run: _Run, winner: _Run, n_runs: int, instant: str
) -> BlockVerdict:
    if run is winner:
        if n_runs == 1:
            return _valid(block, f"attempt {run.attempt} is the only attempt of instant {instant}")
        return _valid(
            block,
            f"attempt {run.attempt} wrote the longest block sequence of instant {instant} "
            f"({_span(run)}) of {n_runs} attempts",
        )
    how = "a longer" if winner.length > run.length else "an equally long, later"
    return BlockVerdict(
        block,
        Verdict.SPURIOUS,
        f"attempt {run.attempt} wrote {_span(run)} of instant {instant}; attempt "
        f"{winner.attempt} wrote {how} sequence ({_span(winner)})",
    )


def _span(run: _Run) -> str:
    return f"sequence 0..{run.length - 1}" if run.length else "no block 0"


# -- inspection --------------------------------------------------------------------------

#: The columns of :func:`show_log_blocks`.
LOG_BLOCKS_SCHEMA = pa.schema(
    [
        ("partition_path", pa.string()),
        ("file_id", pa.string()),
        ("log_file", pa.string()),
        ("position", pa.int64()),
        ("instant_time", pa.string()),
        ("block_type", pa.string()),
        ("attempt", pa.int64()),
        ("sequence", pa.int64()),
        ("verdict", pa.string()),
        ("reason", pa.string()),
    ]
)


def show_log_blocks(
    table: HudiTable,
    file_id: str | None = None,
    mode: ReconcileMode | str = ReconcileMode.FULL,
) -> pa.Table:
    """Every log block of the table's latest file slices (or of one file group) with its verdict.

    Returns:
        A table with :data:`LOG_BLOCKS_SCHEMA`'s columns, one row per block (or corrupt
        stretch) in log order per slice: ``log_file`` is the name (no directory), ``attempt``
        and ``sequence`` come from ``BLOCK_IDENTIFIER`` (null when absent).

    Raises:
        HudiSqlError: ``file_id`` is not a file group of the table's latest slices, or an
            unknown ``mode``.
        CorruptTableError: a commit's record of committed log files is malformed.
    """
    view = table.file_system_view()
    slices = view.latest_file_slices()
    if file_id is not None:
        slices = [s for s in slices if s.file_id == file_id]
        if not slices:
            raise HudiSqlError(
                f"table {table.name} has no file group {file_id!r} among its latest file "
                "slices; call show_log_blocks without file_id to list them all"
            )
    rows: dict[str, list[Any]] = {name: [] for name in LOG_BLOCKS_SCHEMA.names}
    for file_slice in slices:
        blocks: list[LogBlockInfo] = []
        for log in file_slice.log_files:
            blocks.extend(scan_blocks(table.storage.read_bytes(log.path), log_file=log.path))
        for verdict in judge_log_blocks(blocks, view.visible, mode):
            block = verdict.block
            ident = block.block_identifier
            for name, value in (
                ("partition_path", file_slice.partition_path),
                ("file_id", file_slice.file_id),
                ("log_file", posixpath.basename(block.log_file)),
                ("position", block.position),
                ("instant_time", block.instant_time),
                ("block_type", block.block_type.name),
                ("attempt", None if ident is None else ident[0]),
                ("sequence", None if ident is None else ident[1]),
                ("verdict", str(verdict.verdict)),
                ("reason", verdict.reason),
            ):
                rows[name].append(value)
    return pa.table(rows, schema=LOG_BLOCKS_SCHEMA)
