"""Clean as a table service: plan under the table lock, delete, complete.

The plan (``hudisql.table.clean``) is written as ``<ts>.clean.requested``; the deletes
follow the plan, and ``<ts>.clean`` records what was deleted. A clean that died is
finished by the next one (its plan re-executed: files already gone count as deleted).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from hudisql.services.protocol import StepHook, no_step, table_lock
from hudisql.table.clean import CleanSettings, execute_clean, plan_clean
from hudisql.table.instant import Action, Instant
from hudisql.table.service_plans import CleanMetadata, clean_plan
from hudisql.table.table import HudiTable
from hudisql.txn.participant import CleanParticipant, CommitParticipant

__all__ = ["run_clean"]


def _finish(table: HudiTable, instant: Instant, on_step: StepHook,
            participants: Sequence[CommitParticipant]) -> CleanMetadata:
    timeline = table.timeline
    plan = clean_plan(timeline, instant.timestamp)
    if instant.is_requested:
        instant = timeline.transition_to_inflight(instant, plan.to_avro())
    on_step("inflight", instant.timestamp)
    metadata = execute_clean(table.storage, timeline, instant.timestamp, plan)
    on_step("deleted", instant.timestamp)
    deleted = {partition: [posixpath.basename(f) for f in found.success_delete_files]
               for partition, found in metadata.partition_metadata.items()}
    for participant in participants:
        if isinstance(participant, CleanParticipant):
            participant.on_clean(table, instant, deleted)
    on_step("participants", instant.timestamp)
    timeline.complete(instant, metadata.to_avro())
    return metadata


def run_clean(
    table: HudiTable,
    options: Mapping[str, str] | None = None,
    *,
    on_step: StepHook = no_step,
    participants: Sequence[CommitParticipant] = (),
) -> CleanMetadata | None:
    """Clean the table: delete the file slices no retained reader needs.

    ``participants`` that are :class:`~hudisql.txn.participant.CleanParticipant` (the
    metadata table) record the deleted files, under the lock, before the clean completes.

    Returns:
        The clean's metadata, or None when nothing was to be deleted.

    Raises:
        TableServiceError: an unsupported policy, or settings that would delete latest
            slices (nothing is deleted then).
    """
    options = dict(options or {})
    settings = CleanSettings.parse(options, table.name)
    with table_lock(table, options):
        fresh = table.reload()
        for pending in fresh.timeline.pending([Action.CLEAN]):
            _finish(fresh, pending, on_step, participants)  # a clean that died: finish it
            fresh = fresh.reload()
        plan = plan_clean(fresh.storage, fresh.file_system_view(), settings)
        if plan is None:
            return None
        requested = fresh.timeline.create_requested(Action.CLEAN, content=plan.to_avro())
        on_step("requested", requested.timestamp)
        return _finish(fresh, requested, on_step, participants)
