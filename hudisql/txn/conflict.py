"""Conflict resolution under the table lock: may this write complete, given what completed since?

Optimistic concurrency as Hudi does it (``hoodie.write.concurrency.mode``): a write that
touched (wrote or replaced) a file group that another write also touched, and that completed
after this one started, must not complete. Every commit path calls
:func:`check_write_conflicts` from :class:`hudisql.txn.transaction.Transaction`.
"""

from __future__ import annotations

from collections.abc import Mapping

from hudisql.errors import CommitConflictError
from hudisql.table.commit_metadata import CommitMetadata
from hudisql.table.instant import Action
from hudisql.table.table import HudiTable

#: ``hoodie.write.concurrency.mode``: ``optimistic_concurrency_control`` checks conflicts.
CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
OPTIMISTIC = "optimistic_concurrency_control"

# Actions whose completed instants wrote data files (conflict candidates).
_WRITE_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT, Action.COMPACTION,
                  Action.LOGCOMPACTION, Action.CLUSTERING)


def _touched(metadata: CommitMetadata) -> set[tuple[str, str]]:
    """(partition, file id) of every file group a commit wrote or replaced."""
    touched = {(s.partition_path or "", s.file_id) for s in metadata.write_stats()}
    for partition, file_ids in metadata.partition_to_replace_file_ids.items():
        touched.update((partition, file_id) for file_id in file_ids)
    return touched


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
    if options.get(CONCURRENCY_MODE, OPTIMISTIC).lower() != OPTIMISTIC:
        return
    ours = _touched(metadata)
    for other in table.timeline.completed(_WRITE_ACTIONS):
        if other.timestamp in started_with or other.timestamp == instant_time:
            continue
        clash = sorted(ours & _touched(table.timeline.commit_metadata(other)))
        if clash:
            groups = ", ".join(f"{p or '<root>'}/{f}" for p, f in clash[:10])
            raise CommitConflictError(
                f"table {table.name}: write {instant_time} conflicts with "
                f"{other.action} {other.timestamp}, completed meanwhile, on file groups "
                f"{groups}; {instant_time} is rolled back: retry the write"
            )
