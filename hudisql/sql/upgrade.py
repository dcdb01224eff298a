"""The executor of ``CALL upgrade_table``: the table upgraded under its lock (and, for a
managed table, in a catalog write transaction, so the catalog records the new version)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hudisql.parser.commands import Command
from hudisql.parser.upgrade import UpgradeTable
from hudisql.sql.frames import rows_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.sql.router import StatementContext

__all__ = ["EXECUTORS", "upgrade_table"]


def upgrade_table(ctx: StatementContext, command: UpgradeTable) -> DataFrame:
    """CALL upgrade_table: one row, Hudi's ``result`` column (true once upgraded)."""
    from hudisql.services.upgrade import run_upgrade
    from hudisql.table.table import HudiTable

    entry = ctx.require(command.table, "upgrade_table")
    options = ctx.session.write_options(entry.location, in_catalog=True)
    table = HudiTable.open(entry.location)
    if entry.managed:
        with ctx.catalog.write_transaction(entry.name):
            run_upgrade(table, command.to_version, options, spark=ctx.spark)
    else:
        run_upgrade(table, command.to_version, options, spark=ctx.spark)
    return rows_frame(ctx.spark, [(True,)], (("result", "BOOLEAN"),))


EXECUTORS: dict[type[Command], Callable[[StatementContext, Any], DataFrame]] = {
    UpgradeTable: upgrade_table,
}
