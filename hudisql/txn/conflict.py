"""Conflict resolution under the table lock: may this write complete, given what completed since?

Optimistic concurrency as Hudi does it (``hoodie.write.concurrency.mode``): a write that
touched (wrote or replaced) a file group that another write also touched, and that completed
after this one started, must not complete. Every commit path calls
:func:`check_write_conflicts` from :class:`hudisql.txn.transaction.Transaction`.
"""

from __future__ import annotations

from collections.abc import Mapping

from hudisql.errors import CommitConflictError, WriteError
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Action
from hudisql.table.services.clustering import pending_clusterings
from hudisql.table.services.compaction import COMPACT_OPERATION, on_new_slice
from hudisql.table.services.log_compaction import (
    LOG_COMPACT_OPERATION,
    file_groups_in_pending_services,
)
from hudisql.table.table import HudiTable

#: ``hoodie.write.concurrency.mode``: ``optimistic_concurrency_control`` checks conflicts.
CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
OPTIMISTIC = "optimistic_concurrency_control"

#: How writes to file groups under a pending clustering are treated (Hudi's option and class
#: names; the reject strategy is Hudi's default).
UPDATES_STRATEGY = "hoodie.clustering.updates.strategy"
REJECT_UPDATES = "org.apache.hudi.client.clustering.update.strategy.SparkRejectUpdateStrategy"
ALLOW_UPDATES = "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"

# Actions whose completed instants wrote data files (conflict candidates).
_WRITE_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT, Action.COMPACTION,
                  Action.LOGCOMPACTION, Action.CLUSTERING)


def _touched(metadata: CommitMetadata) -> set[tuple[str, str]]:
    """(partition, file id) of every file group a commit wrote or replaced."""
    touched = {(s.partition_path or "", s.file_id) for s in metadata.write_stats()}
    for partition, file_ids in metadata.partition_to_replace_file_ids.items():
        touched.update((partition, file_id) for file_id in file_ids)
    return touched


def _off_new_slice(metadata: CommitMetadata, compaction: str,
                   started: str | None) -> set[tuple[str, str]]:
    """The file groups a write touched other than with log files on the new slice of the
    compaction ``compaction`` (written while it was pending, which it cannot hide).

    ``started``: version 8/9, the write's own instant, which names its logs. A write that
    started after the compaction was planned completes after it too, so its logs go on the
    new slice (slicing by completion time). One that started before conflicts, as Hudi's
    conflict resolution has it for a compaction requested after the write.
    """
    touched = set()
    for stat in metadata.write_stats():
        names = [n for n in (stat.path, *(stat.log_files or ())) if n]
        if not names or not all(on_new_slice(n, compaction, started) for n in names):
            touched.add((stat.partition_path or "", stat.file_id))
    for partition, file_ids in metadata.partition_to_replace_file_ids.items():
        touched.update((partition, file_id) for file_id in file_ids)
    return touched


def check_pending_clustering(table: HudiTable, instant_time: str,
                             touched: set[tuple[str, str]], options: Mapping[str, str]) -> None:
    """Refuse a write to file groups a pending clustering rewrites (Hudi's
    ``SparkRejectUpdateStrategy``, the default of ``hoodie.clustering.updates.strategy``):
    the clustering would replace them with files that lack the write. With
    ``SparkAllowUpdateStrategy`` the write completes and the clustering is refused at its
    own commit instead (and dropped), so no update is lost either way.

    Raises:
        CommitConflictError: names the write, the clustering and the file groups.
        WriteError: an update strategy hudisql does not know.
    """
    strategy = str(options.get(UPDATES_STRATEGY, REJECT_UPDATES)).strip()
    if strategy.endswith("AllowUpdateStrategy"):
        return
    if not strategy.endswith("RejectUpdateStrategy"):
        raise WriteError(
            f"{UPDATES_STRATEGY}={strategy!r} is not supported; use {REJECT_UPDATES} (the "
            f"default: writes to file groups under clustering fail) or {ALLOW_UPDATES}")
    held = file_groups_in_pending_services(table.timeline, (Action.REPLACECOMMIT,
                                                             Action.CLUSTERING))
    clash = sorted(touched & held)
    if not clash:
        return
    pending = [i.timestamp for i in pending_clusterings(table.timeline)
               if i.timestamp != instant_time]
    groups = ", ".join(f"{p or '<root>'}/{f}" for p, f in clash[:10])
    raise CommitConflictError(
        f"table {table.name}: write {instant_time} updates file groups {groups}, which "
        f"pending clustering {', '.join(pending)} is rewriting ({UPDATES_STRATEGY} is "
        f"{strategy.rsplit('.', 1)[-1]}); {instant_time} is rolled back: retry after the "
        "clustering completes")


def check_write_conflicts(
    table: HudiTable, instant_time: str, started_with: frozenset[str],
    metadata: CommitMetadata, options: Mapping[str, str],
) -> None:
    """Refuse to complete ``instant_time`` when completing it would clobber or lose data.

    Called under the table lock with ``table`` freshly loaded, by
    :class:`~hudisql.txn.transaction.Transaction` (every commit path). Two checks: the
    instant must still be inflight (another writer may have rolled it back as abandoned,
    e.g. after its heartbeat stalled: completing it then would publish a commit that a
    rollback already voided); and, under optimistic concurrency, no write completed since
    it started (not in ``started_with``) may have touched one of its file groups.

    Raises:
        CommitConflictError: naming both instants and the file groups, or the rollback.
    """
    current = table.timeline.get(instant_time)
    if current is None or not current.is_inflight:
        state = "gone from the timeline" if current is None else f"{current.state}"
        raise CommitConflictError(
            f"table {table.name}: write {instant_time} is {state}: another writer rolled it "
            "back (its heartbeat had expired); nothing of it is visible: retry the write"
        )
    ours = _touched(metadata)
    check_pending_clustering(table, instant_time, ours, options)
    if options.get(CONCURRENCY_MODE, OPTIMISTIC).lower() != OPTIMISTIC:
        return
    for other in table.timeline.completed(_WRITE_ACTIONS):
        if other.timestamp in started_with or other.timestamp == instant_time:
            continue
        theirs = table.timeline.commit_metadata(other)
        if theirs.operation_type == LOG_COMPACT_OPERATION:
            # A log compaction only replaces blocks that readers merge in their place
            # (RFC-48): it never conflicts with a write, whatever the file groups.
            continue
        mine = ours
        if theirs.operation_type == COMPACT_OPERATION:
            # Log files written on the compaction's new slice are not hidden by it.
            mine = _off_new_slice(metadata, other.timestamp, (
                instant_time if table.properties.version >= 8 else None))
        clash = sorted(mine & _touched(theirs))
        if clash:
            groups = ", ".join(f"{p or '<root>'}/{f}" for p, f in clash[:10])
            raise CommitConflictError(
                f"table {table.name}: write {instant_time} conflicts with "
                f"{other.action} {other.timestamp}, completed meanwhile, on file groups "
                f"{groups}; {instant_time} is rolled back: retry the write"
            )
