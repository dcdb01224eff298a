"""Log compaction (RFC-48) in the table core: the plan strategy and the work on one slice.

**Plan.** A file slice qualifies when its logs hold at least
``hoodie.log.compaction.blocks.threshold`` (default 5) valid data and delete blocks. Its
blocks are taken per instant, in merge order (a compacted block in its slot, see
``compacted.py``); the longest run of consecutive *small* instants is planned (the seed's
"Disadvantages": a block at least ``hudisql.log.compaction.small.block.size`` bytes, such
as one an earlier log compaction made, is not rewritten again). A run never spans a block
of a pending instant (it would land between the run's blocks when it completes). The plan
is Hudi's ``HoodieCompactionPlan`` (version 2, log file names per operation); the instants
each operation compacts are kept in its ``extraMetadata`` under
:data:`PLANNED_INSTANTS_KEY`.

**Execution.** :func:`execute_slice` merges the planned blocks of one slice (a pure
function Spark executors run, one task per slice) into new blocks of a new log file:
``INSTANT_TIME`` is the log compaction's, ``COMPACTED_BLOCK_TIMES`` the instants replaced
(newest first, as Hudi writes them); records keep ``_hoodie_commit_time`` and
``_hoodie_commit_seqno``; deletes are one delete block of their own, written *before* the
data blocks (Hudi writes it after; before keeps a natural-order delete that wiped a key's
earlier versions in front of the key's later record, see ``merge.MergedLog``); data is
split into blocks of at most ``hoodie.logfile.data.block.max.size`` bytes (seed scenario
3). Expression blocks (``SET c = c + 1`` on merge-on-read, ``expressions.py``) apply to
whatever a key holds at their position, so they are not merged with plain blocks: the run
is cut at them, each stretch of plain blocks is merged as above and each stretch of
expression blocks of one kind becomes one expression block (their records in order), all
in the compacted instant, in order. Those keep the expression marking and header key 1001:
other readers still refuse the slice rather than misread it. The instant completes as a
``deltacommit`` with operation ``LOG_COMPACT``.
"""

from __future__ import annotations

import functools
import json
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudisql.errors import TableServiceError
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat, read_avro_container
from hudisql.table.format.fsview import FileSlice, VisibleInstants
from hudisql.table.format.instant import Action
from hudisql.table.format.log.format import BlockType, HeaderKey, LogBlockInfo, block_identifier
from hudisql.table.format.log.reader import decode_data_block, scan_blocks, scan_log_file
from hudisql.table.format.log.writer import (
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
)
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.schema import avro_to_arrow, with_meta_fields
from hudisql.table.format.service_plans import (
    LOG_COMPACTION_EXECUTOR,
    CompactionOperation,
    CompactionPlan,
    CompactionStrategy,
    compaction_plan,
    int_setting,
)
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.compacted import instant_slots, merge_order
from hudisql.table.read.expressions import block_expressions
from hudisql.table.read.merge import merge_log_blocks
from hudisql.table.read.reconcile import (
    BLOCK_ATTEMPT_STAT_KEY,
    BlockVerdict,
    Verdict,
    judge_log_blocks,
    record_committed_log_files,
)
from hudisql.table.write.files import (
    DATA_BLOCK_FORMAT,
    DATA_BLOCK_FORMATS,
    avro_text,
    create_log_files,
)

__all__ = [
    "BLOCKS_THRESHOLD",
    "LOG_COMPACT_OPERATION",
    "PLANNED_INSTANTS_KEY",
    "LogCompactionSettings",
    "SliceRun",
    "build_plan",
    "execute_slice",
    "file_groups_in_pending_services",
    "log_compaction_metadata",
    "plan_slice",
    "planned_instants",
]

BLOCKS_THRESHOLD = "hoodie.log.compaction.blocks.threshold"
SMALL_BLOCK_SIZE = "hudisql.log.compaction.small.block.size"
BLOCK_MAX_SIZE = "hoodie.logfile.data.block.max.size"
LOG_FILE_MAX_SIZE = "hoodie.logfile.max.size"
BLOCK_FORMAT = DATA_BLOCK_FORMAT
#: Data block formats a log compaction writes (``hoodie.logfile.data.block.format``).
BLOCK_FORMATS = DATA_BLOCK_FORMATS
#: ``extraMetadata`` key of a log compaction plan: ``{fileId: [instant, ...]}`` (JSON).
PLANNED_INSTANTS_KEY = "hudisql.logCompactionInstants"
#: ``operationType`` of a completed log compaction.
LOG_COMPACT_OPERATION = "LOG_COMPACT"

_MERGED = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA, BlockType.DELETE)
_MB = 1024 * 1024


@dataclass(frozen=True)
class LogCompactionSettings:
    """What qualifies a slice, what is small, and how big output blocks and files get."""

    blocks_threshold: int = 5
    small_block_size: int = 8 * _MB
    max_block_size: int = 256 * _MB
    max_file_size: int = 1024 * _MB
    #: The compacted data blocks' format: parquet (decoded by Arrow in one pass) unless
    #: ``hoodie.logfile.data.block.format`` says avro.
    block_format: str = "parquet"

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> LogCompactionSettings:
        """The settings from Hudi's option names (and ``hudisql.log.compaction.*``).

        Raises:
            TableServiceError: a value that is not a positive integer (threshold >= 2).
        """
        d = cls()
        block_format = str(options.get(BLOCK_FORMAT, d.block_format)).strip().lower()
        if block_format not in BLOCK_FORMATS:
            raise TableServiceError(
                f"{BLOCK_FORMAT}={options.get(BLOCK_FORMAT)!r}: log compaction writes "
                f"{' or '.join(BLOCK_FORMATS)} data blocks")
        return cls(
            int_setting(options, BLOCKS_THRESHOLD, d.blocks_threshold, 2),
            int_setting(options, SMALL_BLOCK_SIZE, d.small_block_size, 1),
            int_setting(options, BLOCK_MAX_SIZE, d.max_block_size, 1),
            int_setting(options, LOG_FILE_MAX_SIZE, d.max_file_size, 1),
            block_format,
        )


# -- planning ------------------------------------------------------------------------------


@dataclass
class _Unit:
    """One instant's valid blocks in a slice (or a pending instant's, as a barrier)."""

    instant: str
    slot: int
    blocks: list[LogBlockInfo] = field(default_factory=list)
    size: int = 0
    barrier: bool = False


@dataclass(frozen=True)
class SliceRun:
    """The plan for one slice: its operation and the instants it compacts (newest first)."""

    operation: CompactionOperation
    instants: list[str]

    @property
    def file_group(self) -> tuple[str, str]:
        """``(partition, file id)`` of the slice's file group."""
        return self.operation.file_group


def slice_blocks(storage: Storage, file_slice: FileSlice) -> list[LogBlockInfo]:
    """Every block (header-only) of the slice's log files, in log order."""
    blocks: list[LogBlockInfo] = []
    for log in file_slice.log_files:
        blocks.extend(scan_log_file(storage, log.path))
    return blocks


def _units(verdicts: Sequence[BlockVerdict], small: int) -> list[_Unit]:
    slots = instant_slots(verdicts)
    units: dict[str, _Unit] = {}
    for index, verdict in enumerate(verdicts):
        block = verdict.block
        if block.block_type not in _MERGED:
            continue
        instant = str(block.instant_time)
        if verdict.verdict == Verdict.VALID:
            unit = units.setdefault(instant, _Unit(instant, slots[instant]))
            unit.blocks.append(block)
            unit.size += block.length
        elif verdict.verdict == Verdict.NOT_VISIBLE:
            # Pending (or failed, not yet rolled back): it may yet become visible here.
            units[f"pending@{index}"] = _Unit(instant, index, barrier=True)
    for unit in units.values():
        unit.barrier |= unit.size >= small
    return sorted(units.values(), key=lambda u: u.slot)


def plan_slice(
    storage: Storage,
    timeline: Timeline,
    file_slice: FileSlice,
    settings: LogCompactionSettings,
    visible: VisibleInstants | None = None,
    reconcile: str = "full",
) -> SliceRun | None:
    """The log compaction of one slice, or None when it does not qualify (see module notes).

    Header-only: no block content is read. Runs on executors as well as on the driver.
    ``reconcile``: as in ``hudisql.table.read.reconcile`` (``off`` for the metadata table).
    """
    if not file_slice.log_files:
        return None
    blocks = slice_blocks(storage, file_slice)
    verdicts = judge_log_blocks(blocks, visible or VisibleInstants(timeline), reconcile)
    valid = sum(1 for v in verdicts if v.verdict == Verdict.VALID and v.block.block_type in _MERGED)
    if valid < settings.blocks_threshold:
        return None
    runs: list[list[_Unit]] = [[]]
    for unit in _units(verdicts, settings.small_block_size):
        if unit.barrier:
            runs.append([])
        else:
            runs[-1].append(unit)
    best = max(runs, key=lambda r: (sum(len(u.blocks) for u in r), r[-1].slot if r else -1))
    if len(best) < 2:
        return None
    files = {b.log_file for u in best for b in u.blocks}
    logs = [log for log in file_slice.log_files if log.path in files]
    size = sum(log.size for log in logs) / _MB
    operation = CompactionOperation.of_slice(file_slice, logs, size, size)
    return SliceRun(operation, [u.instant for u in reversed(best)])


def build_plan(runs: Iterable[SliceRun]) -> CompactionPlan | None:
    """The log compaction plan of ``runs`` (None when there are none)."""
    runs = sorted(runs, key=lambda r: (r.operation.partition_path, r.operation.file_id))
    if not runs:
        return None
    instants = {r.operation.file_id: r.instants for r in runs}
    return CompactionPlan(
        operations=[r.operation for r in runs],
        extra_metadata={PLANNED_INSTANTS_KEY: json.dumps(instants, separators=(",", ":"))},
        strategy=CompactionStrategy(LOG_COMPACTION_EXECUTOR, {}),
        preserve_hoodie_metadata=True,
    )


def planned_instants(plan: CompactionPlan, operation: CompactionOperation) -> list[str] | None:
    """The instants ``plan`` compacts in ``operation``'s slice (None: not recorded, as in a
    plan Hudi wrote; every valid block of the planned files is compacted then)."""
    raw = plan.extra_metadata.get(PLANNED_INSTANTS_KEY)
    if raw is None:
        return None
    found = json.loads(raw).get(operation.file_id)
    return None if found is None else [str(t) for t in found]


def file_groups_in_pending_services(
    timeline: Timeline, actions: Sequence[str]
) -> set[tuple[str, str]]:
    """``(partition, file_id)`` of the file groups pending ``actions`` plans name
    (``compaction``, ``logcompaction``, ``clustering``/``replacecommit`` clustering plans).
    """
    groups: set[tuple[str, str]] = set()
    for instant in timeline.pending(actions):
        if instant.action in (Action.COMPACTION, Action.LOGCOMPACTION):
            groups |= compaction_plan(timeline, instant.timestamp, instant.action).file_groups()
        else:
            groups |= _clustering_groups(timeline, instant.timestamp)
    return groups


def _clustering_groups(timeline: Timeline, instant_time: str) -> set[tuple[str, str]]:
    groups: set[tuple[str, str]] = set()
    for f in timeline.instant_files(instant_time):
        if not f.is_requested:
            continue
        content = timeline.read_content(f)
        if not content.startswith(b"Obj"):
            continue  # an insert overwrite's empty request, not a clustering plan
        _, record = read_avro_container(content)
        plan: Any = record.get("clusteringPlan") or {}
        for group in plan.get("inputGroups") or []:
            for s in group.get("slices") or []:
                groups.add((str(s.get("partitionPath") or ""), str(s.get("fileId"))))
    return groups


# -- execution -----------------------------------------------------------------------------


Encoder = Callable[[pa.Table, str, dict[HeaderKey, str]], bytes]


def _encode_data(records: pa.Table, schema_text: str, header: Callable[[], dict[HeaderKey, str]],
                 limit: int, encode: Encoder = encode_avro_data_block) -> list[bytes]:
    """``records`` as data blocks of at most ``limit`` bytes each (cut in halves until they
    fit; a single record is written whatever its size)."""
    block = encode(records, schema_text, header())
    if records.num_rows <= 1 or len(block) <= limit:
        return [block]
    half = records.num_rows // 2
    return (_encode_data(records.slice(0, half), schema_text, header, limit, encode)
            + _encode_data(records.slice(half), schema_text, header, limit, encode))


def _marked(header: Callable[[str], dict[HeaderKey, str]], text: str,
            ops: str) -> dict[HeaderKey, str]:
    """An expression block's header: marked, so readers that do not know it refuse it."""
    found = header(text)
    found[HeaderKey.HUDISQL_EXPRESSIONS] = ops
    return found


def _segments(ordered: Sequence[LogBlockInfo]) -> list[tuple[bool, list[LogBlockInfo]]]:
    """``ordered`` cut into runs of plain blocks (merged among themselves) and runs of
    expression blocks of one kind (same schema and ops: concatenated), in order."""
    out: list[tuple[bool, list[LogBlockInfo]]] = []
    last_kind: object = None
    for block in ordered:
        ops = block_expressions(block)
        kind: object = "plain" if ops is None else (block.schema, json.dumps(ops, sort_keys=True))
        if out and kind == last_kind:
            out[-1][1].append(block)
        else:
            out.append((ops is None, [block]))
        last_kind = kind
    return out


def execute_slice(
    storage: Storage,
    props: TableProperties,
    timeline: Timeline,
    operation: CompactionOperation,
    instants: Sequence[str] | None,
    instant_time: str,
    write_token: str,
    avro_schema: str,
    settings: LogCompactionSettings,
    attempt: int = 0,
) -> WriteStat | None:
    """Merge the planned blocks of one slice into new compacted blocks (a new log file).

    Args:
        instants: the instants to compact (:func:`planned_instants`); None: every valid
            block of the planned log files no later than ``instant_time``.
        avro_schema: the table's Avro schema (meta fields added); records are written in it.
        attempt: the task attempt, stamped into ``BLOCK_IDENTIFIER``.

    Returns:
        The write stat of the file(s) written, or None when no planned block is left
        (all rolled back since the plan).

    Raises:
        HudiSqlError: a planned block does not decode.
    """
    partition = operation.partition_path
    log_bytes: dict[str, bytes] = {}
    blocks: list[LogBlockInfo] = []
    for name in operation.delta_file_paths:
        rel = posixpath.join(partition, name) if partition else name
        data = storage.read_bytes(rel)
        log_bytes[rel] = data
        blocks.extend(scan_blocks(data, log_file=rel))
    verdicts = judge_log_blocks(blocks, VisibleInstants(timeline, instant_time))
    wanted = set(instants) if instants is not None else None
    ordered = [b for b in merge_order(verdicts)
               if wanted is None or b.instant_time in wanted]
    if not ordered:
        return None
    avro = with_meta_fields(json.loads(avro_schema))
    schema_text = avro_text(avro)
    replaced: list[str] = []
    for block in reversed(ordered):  # newest first, as Hudi lists them
        if block.instant_time not in replaced:
            replaced.append(str(block.instant_time))
    encoded: list[bytes] = []

    def header(text: str = schema_text) -> dict[HeaderKey, str]:
        return {
            HeaderKey.INSTANT_TIME: instant_time,
            HeaderKey.SCHEMA: text,
            HeaderKey.COMPACTED_BLOCK_TIMES: ",".join(replaced),
            HeaderKey.BLOCK_IDENTIFIER: block_identifier(attempt, len(encoded)),
        }

    encode: Encoder = (encode_parquet_data_block if settings.block_format == "parquet"
                       else encode_avro_data_block)
    records = deletes = 0
    for plain, segment in _segments(ordered):
        if plain:
            merged = merge_log_blocks(log_bytes, segment, props, avro_to_arrow(avro), partition)
            records += merged.records.num_rows
            deletes += len(merged.deletes)
            if merged.deletes:
                encoded.append(encode_delete_block(merged.deletes, header()))
            if merged.records.num_rows:
                encoded.extend(_encode_data(merged.records, schema_text, header,
                                            settings.max_block_size, encode))
            continue
        # Expression blocks of one kind, in order: one block whose records apply one after
        # another, as they did (marked as the originals are: other readers refuse it).
        first = segment[0]
        text = str(first.schema)
        rows = pa.concat_tables(decode_data_block(log_bytes[b.log_file], b) for b in segment)
        records += rows.num_rows
        ops = first.header[HeaderKey.HUDISQL_EXPRESSIONS]
        encoded.extend(_encode_data(rows, text, functools.partial(_marked, header, text, ops),
                                    settings.max_block_size))
    if not encoded:  # every planned record cancelled out: keep an empty block in their place
        encoded.append(encode_avro_data_block(avro_to_arrow(avro).empty_table(), schema_text,
                                              header()))
    # Versions 8 and 9 name the merged log after the log compaction (CREATE marker); it
    # joins the slice by that instant's completion time, like any deltacommit's log.
    v8 = props.version >= 8
    written = create_log_files(
        storage, partition, operation.file_id,
        instant_time if v8 else operation.base_instant_time, instant_time,
        write_token, encoded, settings.max_file_size, marker="CREATE" if v8 else "APPEND",
    )
    total = sum(size for _, size in written)
    first_file = posixpath.basename(written[0][0])
    return WriteStat(
        file_id=operation.file_id,
        path=written[0][0],
        prev_commit=operation.base_instant_time,
        num_writes=records,
        num_deletes=deletes,
        num_update_writes=records,
        num_inserts=0,
        total_write_bytes=total,
        partition_path=partition,
        file_size_in_bytes=total,
        log_version=int(first_file.rsplit(".log.", 1)[1].split("_", 1)[0]),
        log_offset=0,
        base_file=operation.data_file_path,
        log_files=[posixpath.basename(rel) for rel, _ in written],
        extra={BLOCK_ATTEMPT_STAT_KEY: attempt, "totalLogBlocks": len(encoded)},
    )


def log_compaction_metadata(stats: Iterable[WriteStat], avro_schema: str) -> CommitMetadata:
    """The completed deltacommit's metadata (operation ``LOG_COMPACT``), with the record of
    the log files it committed (``reconcile.record_committed_log_files``)."""
    by_partition: dict[str, list[WriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    metadata = CommitMetadata(
        partition_to_write_stats=by_partition,
        compacted=False,
        extra_metadata={"schema": avro_schema},
        operation_type=LOG_COMPACT_OPERATION,
    )
    record_committed_log_files(metadata)
    return metadata
