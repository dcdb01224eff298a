"""Clean as a table service: plan under the table lock, delete, complete.

The plan (``hudisql.table.services.clean``) is written as ``<ts>.clean.requested``; the deletes
follow the plan, and ``<ts>.clean`` records what was deleted. A clean that died is
finished by the next one (its plan re-executed: files already gone count as deleted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hudisql.services.protocol import StepHook, no_step, table_lock
from hudisql.table.format.instant import Action
from hudisql.table.format.service_plans import CleanMetadata
from hudisql.table.services.clean import CleanSettings, plan_clean
from hudisql.table.table import HudiTable
from hudisql.txn.participant import CommitParticipant
from hudisql.txn.table_service import clean_locked

__all__ = ["clean_needed", "run_clean"]


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
        return clean_locked(table.reload(), settings, on_step=on_step,
                            participants=participants)


def clean_needed(table: HudiTable, options: Mapping[str, str] | None = None) -> bool:
    """True when a clean would do something now: a clean is pending, or a plan would delete
    files. Planned without the lock (a listing), so that an automatic clean after a write
    opens no catalog write id and takes no lock when there is nothing to clean.

    Raises:
        TableServiceError: an unsupported policy or bad settings.
    """
    settings = CleanSettings.parse(dict(options or {}), table.name)
    if table.timeline.pending([Action.CLEAN]):
        return True
    return plan_clean(table.storage, table.file_system_view(), settings) is not None
