"""``CALL upgrade_table``: upgrade a table to version 8 or 9 under the table lock.

The steps and what a crash leaves are :mod:`hudisql.table.services.upgrade`'s, and, for a
version-6 table with a metadata table, :mod:`hudisql.services.upgrade_metadata`'s (the
metadata table noted and removed before, rebuilt at the new version after); this module
holds the table lock around them, so no writer starts or completes an instant meanwhile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from hudisql.errors import TableServiceError
from hudisql.services.protocol import StepHook, no_step, table_lock
from hudisql.services.upgrade_metadata import (
    drop_metadata_table,
    has_metadata_table,
    note_metadata_table,
    noted_metadata,
    rebuild_metadata_table,
)
from hudisql.table.services.upgrade import UpgradeResult, check_upgrade, upgrade_table
from hudisql.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["UpgradeResult", "run_upgrade"]


def run_upgrade(table: HudiTable, to_version: int, options: Mapping[str, str] | None = None,
                *, on_step: StepHook = no_step, spark: SparkSession | None = None
                ) -> UpgradeResult:
    """Take the table lock (``hoodie.write.lock.provider``) and upgrade ``table`` to
    ``to_version`` (8 or 9); a run after a crash finishes what the crashed one began. A
    version-6 metadata table is rebuilt at the new version (as Spark jobs with ``spark``,
    else on the driver).

    Raises:
        TableServiceError: a version it does not upgrade to, or a table it cannot upgrade
            (pending instants, archived instants); nothing changed.
        LockError: the table lock could not be had in time.
    """
    with table_lock(table, dict(options or {})):
        table = table.reload()
        check_upgrade(table, to_version)
        noted = noted_metadata(table)
        pending = [str(i) for i in table.timeline.pending()] if noted is not None else []
        if pending:  # a write begun without the metadata table would not update the rebuilt one
            raise TableServiceError(
                f"upgrade_table of table {table.name} at {table.base_path}: pending instants "
                f"{', '.join(pending)} began while its metadata table was being rebuilt; "
                "complete or roll them back, then call upgrade_table again to finish")
        if table.properties.version < 8 and has_metadata_table(table):
            noted = note_metadata_table(table, on_step)
        if noted is not None:  # also a crash after the switch, in the middle of step 5
            table = drop_metadata_table(table, on_step)
        result = upgrade_table(table, to_version, on_step)
        if noted is not None:
            rebuild_metadata_table(table.reload(), noted, on_step, spark)
        return result
