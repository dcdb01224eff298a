"""The data table's record of its indexes: hoodie.properties and ``index.json``.

- ``hoodie.table.metadata.partitions``: metadata partitions that are built and readable;
  ``hoodie.table.metadata.partitions.inflight``: partitions being built (writers update
  them, readers must not use them). Both are sorted comma lists, as Hudi writes them, and
  are the source of truth for the state of every index (RFC-45).
- Index definitions (secondary and expression indexes, and hudisql's identity column
  stats / bloom filter indexes) live in ``.hoodie/.index_defs/index.json``
  (``hoodie.table.index.defs.path``) as Hudi 1.x writes them: ``{"indexDefinitions":
  {<partition>: {"indexName", "indexType", "indexFunction", "sourceFields",
  "indexOptions"}}}``.

Changes are written atomically; callers hold the table lock.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hudisql.errors import CorruptTableError, MetadataTableError
from hudisql.metadata.partitions import EXPR_INDEX_PREFIX
from hudisql.table.format import properties as P
from hudisql.table.table import HudiTable

__all__ = [
    "DEFAULT_INDEX_DEFS_PATH",
    "INDEX_DEFS_PATH_KEY",
    "IndexDefinition",
    "completed_partitions",
    "has_metadata_table",
    "inflight_partitions",
    "load_index_definitions",
    "save_index_definitions",
    "set_partition_state",
]

INDEX_DEFS_PATH_KEY = "hoodie.table.index.defs.path"
DEFAULT_INDEX_DEFS_PATH = ".hoodie/.index_defs/index.json"

#: Partition states :func:`set_partition_state` moves a partition between.
INFLIGHT = "inflight"
COMPLETED = "completed"


def completed_partitions(props: Mapping[str, str]) -> list[str]:
    """Metadata partitions that are built and readable."""
    return _split(props.get(P.METADATA_PARTITIONS))


def inflight_partitions(props: Mapping[str, str]) -> list[str]:
    """Metadata partitions being built."""
    return _split(props.get(P.METADATA_PARTITIONS_INFLIGHT))


def has_metadata_table(props: Mapping[str, str]) -> bool:
    """Whether commits must update a metadata table (a partition is built or being built)."""
    return bool(completed_partitions(props) or inflight_partitions(props))


def _split(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def _join(parts: set[str]) -> str | None:
    return ",".join(sorted(parts)) or None


def set_partition_state(table: HudiTable, partition: str, state: str | None) -> HudiTable:
    """Move a metadata partition to ``inflight``, ``completed`` or (None) neither.

    Rewrites the data table's hoodie.properties atomically when something changes.

    Returns:
        The table reloaded.

    Raises:
        MetadataTableError: an unknown state.
    """
    if state not in (INFLIGHT, COMPLETED, None):
        raise MetadataTableError(f"unknown metadata partition state {state!r}")
    table = table.reload()
    props = table.properties
    done, building = set(completed_partitions(props)), set(inflight_partitions(props))
    done.discard(partition)
    building.discard(partition)
    if state == COMPLETED:
        done.add(partition)
    elif state == INFLIGHT:
        building.add(partition)
    changes = {P.METADATA_PARTITIONS: _join(done), P.METADATA_PARTITIONS_INFLIGHT: _join(building)}
    if all(props.get(k) == v for k, v in changes.items()):
        return table
    props.updated(**changes).save(table.storage)
    return table.reload()


@dataclass(frozen=True)
class IndexDefinition:
    """One index as ``index.json`` records it (``HoodieIndexDefinition``)."""

    index_name: str
    index_type: str
    source_fields: tuple[str, ...]
    index_function: str = "identity"
    index_options: Mapping[str, str] = field(default_factory=dict)
    #: Table version 9 writes ``"V1"``/``"V2"``; absent in what hudisql writes (v6).
    version: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The definition as Hudi's JSON object."""
        out: dict[str, Any] = {
            "indexName": self.index_name,
            "indexType": self.index_type,
            "indexFunction": self.index_function,
            "sourceFields": list(self.source_fields),
            "indexOptions": dict(self.index_options),
        }
        if self.version is not None:
            out["version"] = self.version
        return out

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> IndexDefinition:
        """A definition from Hudi's JSON object (unknown properties ignored, as Jackson does)."""
        return cls(
            index_name=str(data.get("indexName") or name),
            index_type=str(data.get("indexType") or ""),
            source_fields=tuple(str(f) for f in data.get("sourceFields") or ()),
            index_function=str(data.get("indexFunction") or "identity"),
            index_options={str(k): str(v) for k, v in (data.get("indexOptions") or {}).items()},
            version=data.get("version"),
        )


#: The index versions Hudi 1.1 gives the indexes of a version 9 table (others: ``V1``).
_V2_TYPES = frozenset({"secondary_index", "column_stats", "partition_stats"})


def with_index_version(definition: IndexDefinition, table_version: int) -> IndexDefinition:
    """``definition`` with the index version Hudi 1.1 writes for ``table_version`` when it
    has none: none on version 6, ``V1`` on version 8; on version 9 ``V2`` for secondary
    indexes, column and partition stats and every expression index, ``V1`` for the others.

    Hudi picks the version by the metadata partition's type
    (``HoodieIndexVersion.getCurrentVersion``), and keeps column stats, partition stats and
    expression indexes at one version: a bloom-filter expression index is ``V2`` too.
    """
    if definition.version is not None or table_version < 8:
        return definition
    v2 = table_version >= 9 and (definition.index_type.lower() in _V2_TYPES
                                 or definition.index_name.startswith(EXPR_INDEX_PREFIX))
    return replace(definition, version="V2" if v2 else "V1")


def _defs_path(props: Mapping[str, str]) -> str:
    return props.get(INDEX_DEFS_PATH_KEY) or DEFAULT_INDEX_DEFS_PATH


def load_index_definitions(table: HudiTable) -> dict[str, IndexDefinition]:
    """The table's index definitions by metadata partition name ({} when it has none).

    Raises:
        CorruptTableError: index.json is not Hudi's JSON.
    """
    rel = _defs_path(table.properties)
    if not table.storage.is_file(rel):
        return {}
    try:
        data = json.loads(table.storage.read_bytes(rel))
        defs = data.get("indexDefinitions") or {}
        return {str(name): IndexDefinition.from_json(name, d) for name, d in defs.items()}
    except (ValueError, AttributeError, TypeError) as exc:
        raise CorruptTableError(
            f"{table.storage.full_path(rel)} of table {table.name} is not an index definition "
            f"file ({exc}); restore it from a copy or drop and re-create the indexes"
        ) from None


def save_index_definitions(
    table: HudiTable, definitions: Mapping[str, IndexDefinition]
) -> HudiTable:
    """Write ``index.json`` (atomically) and record its path in hoodie.properties.

    Returns:
        The table reloaded.
    """
    rel = _defs_path(table.properties)
    version = table.properties.version
    body = {"indexDefinitions": {name: with_index_version(d, version).to_json()
                                 for name, d in sorted(definitions.items())}}
    table.storage.makedirs(posixpath.dirname(rel))
    table.storage.write_atomic(rel, json.dumps(body, indent=2).encode("utf-8"))
    if table.properties.get(INDEX_DEFS_PATH_KEY) != rel:
        table.properties.updated(**{INDEX_DEFS_PATH_KEY: rel}).save(table.storage)
    return table.reload()
