"""Carrying a version-6 table's metadata table across ``CALL upgrade_table``: noted, removed,
rebuilt at the new version.

A version-6 metadata table (layout 1, Hudi 0.x's record schema) is not what a version 8/9
table's readers expect, so the upgrade does not convert it: it rebuilds it. The steps, each
leaving a table every reader reads the same rows of:

1. **noted**: the metadata partitions (``hoodie.table.metadata.partitions``) and the index
   definitions (``index.json``) are written to :data:`MARKER` (one atomic write). Nothing
   reads it but the next ``upgrade_table``.
2. **unlisted**: the partitions leave hoodie.properties (one atomic replace): from here on
   readers list files instead of asking the metadata table, and writers stop updating it.
3. **dropped**: ``.hoodie/metadata`` is deleted (no reader looks at it any more).
4. The data table is upgraded (:mod:`hudisql.table.services.upgrade`).
5. **rebuilt**: the noted partitions, ``files`` first, are built from the data table at the
   new version and listed as completed in hoodie.properties once whole; the definitions are
   saved again with the index versions of the new table version. With a Spark session
   (``CALL upgrade_table``) they are built as ``CREATE INDEX`` builds them
   (:class:`~hudisql.services.index_build.IndexBackend`: one initialization instant, Spark
   jobs), without its catch-up (the upgrade holds the table lock: no write can race it);
   without one (the Python API), on the driver, one partition after the other
   (:func:`~hudisql.metadata.build.build_partitions`).
6. **finished**: the marker is deleted.

A crash anywhere leaves the marker: the next ``upgrade_table`` repeats steps 2-3 (which a
half-built metadata table of step 5 needs too: its partitions are unlisted before its files
go), finishes the data table's upgrade, and builds every noted partition again. Apache
Hudi's ``SixToEightUpgradeHandler`` instead upgrades the metadata table in place (its own
timeline and properties, as a table of its own) and deletes it only when it is behind;
docs/FORMAT.md says why hudisql rebuilds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hudisql.errors import CorruptTableError
from hudisql.metadata.build import build_partitions
from hudisql.metadata.config import (
    COMPLETED,
    IndexDefinition,
    load_index_definitions,
    set_partition_state,
)
from hudisql.metadata.table import METADATA_PATH
from hudisql.services.protocol import StepHook, no_step
from hudisql.table.format.properties import METADATA_PARTITIONS, METADATA_PARTITIONS_INFLIGHT
from hudisql.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["MARKER", "NotedMetadata", "drop_metadata_table", "note_metadata_table",
           "noted_metadata", "rebuild_metadata_table"]

#: Where the upgrade notes the metadata table it rebuilds (a file no Hudi reader opens).
MARKER = ".hoodie/.aux/upgrade_metadata.json"

#: The order partitions are built in: ``files`` first (every index lists files through it),
#: the record index before the secondary indexes that find rows through it.
_FIRST = ("files", "record_index")


@dataclass(frozen=True)
class NotedMetadata:
    """A version-6 metadata table as the upgrade noted it: partitions and definitions."""

    partitions: tuple[str, ...]
    definitions: dict[str, IndexDefinition]

    def to_json(self) -> bytes:
        body = {"partitions": list(self.partitions),
                "indexDefinitions": {k: d.to_json() for k, d in self.definitions.items()}}
        return json.dumps(body, indent=2).encode("utf-8")


def has_metadata_table(table: HudiTable) -> bool:
    """Whether ``table`` lists metadata partitions or has a ``.hoodie/metadata`` folder."""
    props = table.properties
    return bool(props.metadata_partitions or props.metadata_partitions_inflight
                or table.storage.exists(METADATA_PATH))


def noted_metadata(table: HudiTable) -> NotedMetadata | None:
    """What an upgrade that has not finished noted (None: no upgrade left one).

    Raises:
        CorruptTableError: the marker is not what the upgrade writes.
    """
    if not table.storage.is_file(MARKER):
        return None
    try:
        body = json.loads(table.storage.read_bytes(MARKER))
        definitions = {str(k): IndexDefinition.from_json(k, d)
                       for k, d in (body.get("indexDefinitions") or {}).items()}
        return NotedMetadata(tuple(str(p) for p in body["partitions"]), definitions)
    except (ValueError, KeyError, AttributeError, TypeError) as exc:
        raise CorruptTableError(
            f"{table.storage.full_path(MARKER)} of table {table.name} is not the metadata "
            f"table an interrupted upgrade_table noted ({exc}); restore it, or delete it and "
            "create the table's indexes again after the upgrade") from None


def note_metadata_table(table: HudiTable, on_step: StepHook = no_step) -> NotedMetadata:
    """Step 1: write the marker (kept as it is when a crashed upgrade wrote it already)."""
    noted = noted_metadata(table)
    if noted is not None:
        return noted
    props = table.properties
    partitions = props.metadata_partitions
    noted = NotedMetadata(tuple(partitions), {
        k: d for k, d in load_index_definitions(table).items() if k in partitions})
    table.storage.makedirs(".hoodie/.aux")
    table.storage.write_atomic(MARKER, noted.to_json())
    on_step("noted", ",".join(noted.partitions))
    return noted


def drop_metadata_table(table: HudiTable, on_step: StepHook = no_step) -> HudiTable:
    """Steps 2-3: unlist every metadata partition, then delete ``.hoodie/metadata``.

    Returns:
        The table reloaded.
    """
    props = table.properties
    if props.metadata_partitions or props.metadata_partitions_inflight:
        props.updated(**{METADATA_PARTITIONS: None, METADATA_PARTITIONS_INFLIGHT: None}
                      ).save(table.storage)
        on_step("unlisted", "")
    if table.storage.exists(METADATA_PATH):
        table.storage.delete_dir(METADATA_PATH)
        on_step("dropped", "")
    return table.reload()


def rebuild_metadata_table(table: HudiTable, noted: NotedMetadata,
                           on_step: StepHook = no_step,
                           spark: SparkSession | None = None) -> HudiTable:
    """Steps 5-6: build the noted partitions at the table's (new) version (as Spark jobs
    with ``spark``, else on the driver), then delete the marker. The table holds no
    metadata table when this starts (:func:`drop_metadata_table`); the caller holds the
    table lock.

    Returns:
        The table reloaded.
    """
    order = sorted(noted.partitions, key=lambda p: (
        _FIRST.index(p) if p in _FIRST else len(_FIRST), noted.partitions.index(p)))
    if order and order[0] != "files":
        order.insert(0, "files")
    if spark is not None and order:
        table = _build_with_spark(spark, table, order, noted)
        on_step("rebuilt", ",".join(order))
    else:
        for i, partition in enumerate(order):
            table = build_partitions(table, [partition], noted.definitions if i == 0 else None)
            on_step("rebuilt", partition)
    table.storage.delete(MARKER)
    on_step("finished", "")
    return table.reload()


def _build_with_spark(spark: SparkSession, table: HudiTable, order: list[str],
                      noted: NotedMetadata) -> HudiTable:
    """Build ``order`` as the indexer does (initialize, build at one instant), then list
    every partition as completed."""
    from hudisql.services.index_build import IndexBackend, PartitionRequest
    from hudisql.services.indexer import base_instant

    backend = IndexBackend()
    requests = [PartitionRequest(p, noted.definitions.get(p)) for p in order]
    init = backend.init_instant(table, base_instant(table))
    backend.initialize(table, requests, init)
    table = table.reload()
    backend.build(spark, table, order, init, None)
    for partition in order:
        table = set_partition_state(table, partition, COMPLETED)
    return table
