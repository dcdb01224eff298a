"""``CALL upgrade_table``: upgrade a table to version 8 or 9 under the table lock.

The steps and what a crash leaves are :mod:`hudisql.table.services.upgrade`'s; this module
holds the table lock around them, so no writer starts or completes an instant meanwhile.
"""

from __future__ import annotations

from collections.abc import Mapping

from hudisql.services.protocol import StepHook, no_step, table_lock
from hudisql.table.services.upgrade import UpgradeResult, upgrade_table
from hudisql.table.table import HudiTable

__all__ = ["UpgradeResult", "run_upgrade"]


def run_upgrade(table: HudiTable, to_version: int, options: Mapping[str, str] | None = None,
                *, on_step: StepHook = no_step) -> UpgradeResult:
    """Take the table lock (``hoodie.write.lock.provider``) and upgrade ``table`` to
    ``to_version`` (8 or 9); a run after a crash finishes what the crashed one began.

    Raises:
        TableServiceError: a version it does not upgrade to, or a table it cannot upgrade
            (pending instants, archived instants, a metadata table); nothing changed.
        LockError: the table lock could not be had in time.
    """
    with table_lock(table, dict(options or {})):
        return upgrade_table(table.reload(), to_version, on_step)
