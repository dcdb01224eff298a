"""Building metadata partitions synchronously on the driver, then marking them built.

:func:`build_partitions` is the indexer's end state without the indexer or Spark: each
partition's records computed from the data table as it is
(:func:`~hudisql.metadata.builders.build_partition_records`), written from scratch at an
initialization instant after the latest completed one, and listed as completed in
hoodie.properties. For tests, benchmarks and small tables; ``CREATE INDEX`` builds with
Spark through ``hudisql.services.indexer`` and takes the table lock, which this does not:
callers make sure no other writer runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hudisql.metadata.builders import build_partition_records, file_group_count
from hudisql.metadata.config import (
    COMPLETED,
    IndexDefinition,
    load_index_definitions,
    save_index_definitions,
    set_partition_state,
)
from hudisql.metadata.partitions import partition_spec
from hudisql.metadata.table import MetadataTable
from hudisql.table.table import HudiTable

__all__ = ["build_partitions"]


def build_partitions(table: HudiTable, partitions: Sequence[str],
                     definitions: Mapping[str, IndexDefinition] | None = None) -> HudiTable:
    """Build ``partitions`` from scratch, one after the other, and mark each completed.

    Args:
        definitions: index definitions (secondary and expression indexes) to add to
            index.json first.

    Returns:
        The table reloaded (its hoodie.properties lists the partitions as completed).

    Raises:
        MetadataTableError: a partition hudisql does not build, or one built already.
    """
    if definitions:
        table = save_index_definitions(table, {**load_index_definitions(table), **definitions})
    latest = table.timeline.last_completed()
    base = latest.timestamp if latest is not None else None
    for partition in partitions:
        records = build_partition_records(table, partition)
        count = file_group_count(partition_spec(partition).kind, len(records))
        MetadataTable(table).build_partition(partition, records, base, count)
        table = set_partition_state(table, partition, COMPLETED)
    return table
