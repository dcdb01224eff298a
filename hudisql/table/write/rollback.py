"""Rolling back a write instant, the way Hudi does: a failed (pending) one, or the latest
completed one (``CALL rollback_to_instant``).

The writes rolled back are commits, deltacommits and insert-overwrite replacecommits (a
pending replacecommit that is a clustering plan belongs to its table service). A completed
write is rolled back only when no later completed write builds on it.

A rollback is an instant of its own: ``<ts>.rollback.requested`` holds the plan (Avro
``HoodieRollbackPlan``: the files to delete, the log files whose blocks to void), then
``<ts>.rollback.inflight``, then the work, then ``<ts>.rollback`` with the Avro
``HoodieRollbackMetadata``. Only after that are the failed instant's own requested and
inflight files (and, for a completed write, its completed file) removed from the timeline,
so a crash at any point leaves a state the next ``rollback`` of the same instant finishes
(the pending rollback's plan is re-executed).

The instant's files are found from its markers (``.hoodie/.temp/<instant>/``), from the
partitions and file groups its inflight plan or commit metadata names, and by their names:
base files carry the instant; log files are scanned header-only. A log file holding only
the instant's blocks is deleted; one that also holds other instants' blocks (written by an
appending writer) gets a rollback command block in a new log file instead.

Why delete rather than always append a command block as Hudi's version-6 rollback of a
merge-on-read write does: Hudi's writers append to existing log files, so a failed
instant's blocks share files with committed ones and cannot be removed; hudisql's never
append (each task attempt writes new files), so a failed instant's log files are its own.
Readers never merge blocks of an instant that is not completed, so a command block would
change no row; it would only add a log file to the file group per rollback until the next
compaction. The one hazard of deleting, a reader that listed the file before the rollback,
is handled where the file is read (:mod:`hudisql.table.read.vanished_files`: skipped, since no
visible commit names it).
"""

from __future__ import annotations

import posixpath
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from hudisql.errors import CorruptTableError, WriteError
from hudisql.table.format.commit_metadata import (
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
)
from hudisql.table.format.filenames import BaseFileName, LogFileName, write_token
from hudisql.table.format.fsview import FileSystemView
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.log.format import BlockType
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.format.log.writer import LogFileWriter, encode_rollback_block
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.services.clustering import is_clustering
from hudisql.table.table import HudiTable
from hudisql.table.write.files import MARKER_DIR

__all__ = [
    "OVERWRITE_OPERATIONS",
    "StepHook",
    "is_overwrite_write",
    "rollback_instant",
    "rollback_target",
]

#: Called with (event, detail) at each step of a write or rollback; tests inject failures.
StepHook = Callable[[str, str], None]

# A pending log compaction is rolled back like a deltacommit (its plan goes too, as in Hudi).
_ROLLBACK_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.LOGCOMPACTION)
#: Completed writes a later write may build on (so only the latest is rolled back).
_WRITE_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT)
#: ``operationType`` of the writes that complete as a replacecommit.
OVERWRITE_OPERATIONS = frozenset({"INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE"})
_MARKER = ".marker."


def _no_step(event: str, detail: str) -> None:
    return None


@dataclass
class _Found:
    """What the failed instant left in one partition."""

    delete: list[str] = field(default_factory=list)
    # (file id, base instant) -> {log file rel path: size} holding blocks of other instants
    void: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)


def is_overwrite_write(timeline: Timeline, instant: Instant) -> bool:
    """True when the replacecommit ``instant`` is an insert overwrite (not a clustering plan).

    A writer's replacecommit is requested empty and goes inflight (and completes) with
    commit metadata naming an overwrite operation; a clustering plan is an Avro document.
    """
    if instant.action != Action.REPLACECOMMIT or is_clustering(timeline, instant.timestamp):
        return False
    try:
        content = timeline.read_content(instant)
        if not content.strip():
            return not instant.is_completed
        return timeline.commit_metadata(instant).operation_type in OVERWRITE_OPERATIONS
    except CorruptTableError:
        return False


def rollback_target(table: HudiTable, instant_time: str) -> Instant | None:
    """The write instant a rollback of ``instant_time`` would undo, checked; None when a
    completed rollback already undid it (a re-run then changes nothing).

    Raises:
        WriteError: no such instant; not a commit, deltacommit or insert overwrite; or a
            completed write that later completed writes build on (names the latest).
    """
    timeline = table.timeline
    where = f"table {table.name} at {table.base_path}"
    target = timeline.get(instant_time)
    done, _ = _rollbacks_of(timeline, instant_time)
    if target is None:
        if done is not None:
            return None
        raise WriteError(
            f"no instant {instant_time} on the timeline of {where}; SHOW TIMELINE lists the "
            "instants that can be rolled back"
        )
    if target.action not in _ROLLBACK_ACTIONS and not is_overwrite_write(timeline, target) and not (
            target.is_completed and is_clustering(timeline, target.timestamp)):
        raise WriteError(
            f"instant {instant_time} of {where} is a {target.action}: only commits, "
            "deltacommits, insert overwrites and completed clusterings are rolled back here; "
            "use the table service that owns it"
        )
    if target.is_completed and done is None:
        _require_latest(timeline, target, where)
    return target


def rollback_instant(table: HudiTable, instant_time: str, on_step: StepHook | None = None) -> str:
    """Roll back the write ``instant_time`` of ``table``; returns the rollback's time.

    A pending write is rolled back whatever came after it; a completed one only when it is
    the latest completed write (its data files removed, and the instant voided). Re-running
    it after a crash finishes the same rollback; running it for an instant already rolled
    back returns that rollback's time and changes nothing. The format steps only: the
    commit protocol (``hudisql.txn.rollback``) takes the table lock and tells the commit
    participants.

    Raises:
        WriteError: see :func:`rollback_target`.
    """
    step = on_step or _no_step
    timeline = table.timeline
    target = rollback_target(table, instant_time)
    done, pending = _rollbacks_of(timeline, instant_time)
    if target is None:
        assert done is not None
        return done.timestamp
    if done is None:
        if pending is None:
            plan = _plan(table, target)
            pending = timeline.create_requested(Action.ROLLBACK, content=plan.to_avro())
            step("rollback_requested", pending.timestamp)
        else:
            plan = timeline.rollback_plan(pending.timestamp)
        if pending.is_requested:
            pending = timeline.transition_to_inflight(pending)
            step("rollback_inflight", pending.timestamp)
        started = time.monotonic()
        metadata = _execute(table.storage, plan, pending.timestamp, target, step)
        metadata.time_taken_in_millis = int((time.monotonic() - started) * 1000)
        done = timeline.complete(pending, metadata.to_avro())
        step("rollback_completed", done.timestamp)
    if target.is_completed:
        timeline.reload().delete_rolled_back(target)
    else:
        timeline.delete_pending(target)
    table.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")
    step("pending_removed", instant_time)
    return done.timestamp


def _require_latest(timeline: Timeline, target: Instant, where: str) -> None:
    """Refuse to roll back a completed write that later completed writes build on."""
    voided = timeline.rolled_back_instants()
    later = [i.timestamp for i in timeline.completed(_WRITE_ACTIONS)
             if i.timestamp > target.timestamp and i.timestamp not in voided]
    if later:
        raise WriteError(
            f"instant {target.timestamp} of {where} is completed and {len(later)} later "
            f"completed write(s) build on it (the latest is {later[-1]}): roll those back "
            "first, newest first"
        )


def _rollbacks_of(timeline: Timeline, instant_time: str) -> tuple[Instant | None, Instant | None]:
    """The completed and the pending rollback of ``instant_time`` (either may be None)."""
    done = pending = None
    for instant in timeline.instants:
        if instant.action != Action.ROLLBACK:
            continue
        if instant.is_completed:
            if instant_time in timeline.rollback_metadata(instant).rolled_back():
                done = instant
        else:
            plan = timeline.rollback_plan(instant.timestamp)
            target = plan.instant_to_rollback
            if target is not None and target.commit_time == instant_time:
                pending = instant
    return done, pending


# -- planning ----------------------------------------------------------------------------


def _markers(storage: Storage, instant_time: str) -> dict[str, set[str]]:
    """partition -> names of the data files the instant's markers record."""
    root = f"{MARKER_DIR}/{instant_time}"
    out: dict[str, set[str]] = defaultdict(set)
    for status in storage.list_recursive(root):
        if status.is_dir or _MARKER not in status.name:
            continue
        rel = status.path[len(root) + 1 :] if status.path.startswith(root + "/") else status.name
        partition, name = posixpath.split(rel)
        out[partition].add(name.rsplit(_MARKER, 1)[0])
    return out


def _planned(timeline: Timeline, target: Instant) -> tuple[set[str], set[str]]:
    """Partitions and file ids the failed instant's inflight plan names (empty if none)."""
    try:
        metadata = timeline.commit_metadata(target)
    except CorruptTableError:
        return set(), set()
    return set(metadata.partition_to_write_stats), metadata.file_ids()


def _plan(table: HudiTable, target: Instant) -> RollbackPlan:
    storage, ts = table.storage, target.timestamp
    markers = _markers(storage, ts)
    if target.is_requested and not markers:
        # Writers create data files only once the instant is inflight: nothing to undo.
        return RollbackPlan(InstantInfo(ts, target.action), [])
    partitions, file_ids = _planned(table.timeline, target)
    partitions |= set(markers)
    if not partitions:
        view = FileSystemView(storage, table.properties, table.timeline)
        partitions = set(view.partitions())
    requests: list[RollbackRequest] = []
    for partition in sorted(partitions):
        found = _scan_partition(storage, partition, ts, markers.get(partition, set()), file_ids)
        full = storage.full_path
        if found.delete:
            requests.append(RollbackRequest(partition, "", "", [full(r) for r in found.delete], {}))
        for (file_id, base), logs in sorted(found.void.items()):
            blocks = {full(rel): size for rel, size in logs.items()}
            requests.append(RollbackRequest(partition, file_id, base, [], blocks))
    return RollbackPlan(InstantInfo(ts, target.action), requests)


def _scan_partition(
    storage: Storage, partition: str, ts: str, marked: set[str], planned_ids: set[str]
) -> _Found:
    found = _Found()
    statuses = [s for s in storage.list_dir(partition) if not s.is_dir]
    marked_ids = {_file_id(n) for n in marked}
    scan_all = not planned_ids and not marked
    for status in statuses:
        name = status.name
        base = BaseFileName.parse(name)
        if base is not None:
            if base.instant == ts:
                found.delete.append(status.path)
            continue
        log = LogFileName.parse(name)
        if log is None:
            if name.endswith(".tmp") and any(name.startswith(f".{m}.") for m in marked):
                found.delete.append(status.path)  # a create-if-absent cut short
            continue
        if not (scan_all or name in marked or log.file_id in planned_ids | marked_ids):
            continue
        blocks = scan_log_file(storage, status.path)
        sound = [b for b in blocks if b.block_type != BlockType.CORRUPT]
        ours = [b for b in sound if b.instant_time == ts]
        if ours and len(ours) < len(sound):
            found.void.setdefault((log.file_id, log.base_instant), {})[status.path] = status.size
        elif ours or (name in marked and not sound):
            found.delete.append(status.path)
    return found


def _file_id(name: str) -> str:
    parsed = LogFileName.parse(name) or BaseFileName.parse(name)
    return parsed.file_id if parsed is not None else ""


# -- execution ---------------------------------------------------------------------------


def _relative(storage: Storage, path: str) -> str:
    bare = path.removeprefix("file:")
    prefix = storage.base_path.rstrip("/") + "/"
    if bare.startswith(prefix):
        return bare[len(prefix) :]
    if "://" not in bare and not bare.startswith("/"):
        return bare
    raise WriteError(
        f"rollback plan names {path}, which is not below table {storage.base_uri}; the plan "
        "was made for a table at another location: move the table back or delete the plan"
    )


def _execute(
    storage: Storage, plan: RollbackPlan, rollback_ts: str, target: Instant, step: StepHook
) -> RollbackMetadata:
    partitions: dict[str, RollbackPartitionMetadata] = {}
    deleted = 0
    for request in plan.rollback_requests:
        meta = partitions.setdefault(
            request.partition_path,
            RollbackPartitionMetadata(request.partition_path, rollback_log_files={},
                                      log_files_from_failed_commit={}),
        )
        failed_logs = meta.log_files_from_failed_commit
        assert failed_logs is not None and meta.rollback_log_files is not None
        for path in request.files_to_be_deleted:
            rel = _relative(storage, path)
            size = storage.size(rel) if storage.is_file(rel) else 0
            storage.delete(rel)
            step("delete", rel)
            meta.success_delete_files.append(path)
            deleted += 1
            if LogFileName.parse(rel) is not None:
                failed_logs[path] = size
        if request.log_blocks_to_be_deleted:
            base = request.latest_base_instant or ""
            token = write_token(0, 0, 0)
            with LogFileWriter(
                storage, request.partition_path, request.file_id or "", base, token
            ) as writer:
                writer.append(encode_rollback_block(rollback_ts, target.timestamp))
                written = writer.files
            for rel, size in written:
                meta.rollback_log_files[storage.full_path(rel)] = size
            failed_logs.update(request.log_blocks_to_be_deleted)
            step("rollback_block", written[0][0])
    return RollbackMetadata(
        start_rollback_time=rollback_ts,
        commits_rollback=[target.timestamp],
        partition_metadata=partitions,
        total_files_deleted=deleted,
        instants_rollback=[InstantInfo(target.timestamp, target.action)],
    )
