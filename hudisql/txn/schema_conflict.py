"""Concurrent schema evolution (RFC-82): three schemas per transaction, resolved or refused.

A write knows the *table schema when it started* (the last completed commit's
``extraMetadata.schema``, or none), the *writer schema* it writes with, and, re-read under
the table lock at pre-commit, the *table schema when it validates*. :func:`resolve_schema`
applies the RFC's decision table (cases 1 to 8) with Hudi's refinements: table services
(compaction, log compaction, clustering, indexing) skip the check, a writer without its own
schema takes the table's, and the schema recorded in the commit is the one the table says
(case 6 records the evolved table schema, not the writer's). Cases 3 and 8 raise
:class:`~hudisql.errors.ConcurrentSchemaEvolutionError`, unless the opt-in additive mode is
on and the writer schema only adds nullable columns to the schema at validation.

Schemas are compared by their columns (names and types, meta fields left out, record names
and namespaces ignored), as Hudi's schema comparator for schema evolution does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hudisql.errors import ConcurrentSchemaEvolutionError
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Action
from hudisql.table.format.schema import META_COLUMNS
from hudisql.table.format.timeline import COMMIT_ACTIONS, Timeline
from hudisql.table.table import HudiTable

#: Hudi's switch of the check (default true).
CONFLICT_RESOLUTION_ENABLE = "hoodie.write.concurrency.schema.conflict.resolution.enable"
#: hudisql's opt-in beyond the RFC: accept cases 3 and 8 when the writer schema is a pure
#: additive evolution (new nullable columns only) of the table schema at validation.
ADDITIVE_RESOLUTION = "hudisql.write.concurrency.schema.conflict.resolution.additive"

#: Operation types of table services (Hudi's ``WriteOperationType`` names): they rewrite
#: data with the schema they read and never evolve it, so they skip the check.
TABLE_SERVICE_OPERATIONS = frozenset({"COMPACT", "LOG_COMPACT", "CLUSTER", "INDEX"})
TABLE_SERVICE_ACTIONS = frozenset(
    {Action.COMPACTION, Action.LOGCOMPACTION, Action.CLUSTERING, Action.INDEXING}
)


@dataclass(frozen=True)
class TableSchema:
    """The table schema at one moment: the commit that recorded it, and its Avro JSON."""

    instant: str | None = None
    schema: str | None = None

    @classmethod
    def of(cls, timeline: Timeline) -> TableSchema:
        """The schema recorded by the latest completed commit that records one (else none)."""
        rolled_back = timeline.rolled_back_instants()
        for instant in reversed(timeline.completed(COMMIT_ACTIONS)):
            if instant.timestamp in rolled_back:
                continue
            schema = timeline.commit_metadata(instant).schema
            if schema:
                return cls(instant.timestamp, schema)
        return cls()


@dataclass(frozen=True)
class SchemaDiff:
    """How one schema differs from another, column by column (top-level columns)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    retyped: tuple[tuple[str, str, str], ...] = ()
    added_required: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        """True when both schemas have the same columns with the same types."""
        return not (self.added or self.removed or self.retyped)

    @property
    def is_additive(self) -> bool:
        """True when the new schema only adds nullable columns to the old one."""
        return bool(self.added) and not (self.removed or self.retyped or self.added_required)

    def describe(self) -> str:
        """The difference in words: columns added, removed and retyped."""
        parts = []
        if self.added:
            parts.append(f"columns added: {', '.join(self.added)}")
        if self.removed:
            parts.append(f"columns removed: {', '.join(self.removed)}")
        if self.retyped:
            parts.append("columns retyped: " + ", ".join(f"{n} {a} -> {b}"
                                                         for n, a, b in self.retyped))
        return "; ".join(parts) or "no column differs"


def _canonical(node: Any) -> Any:
    """An Avro type with names, namespaces, docs and defaults dropped (what values mean)."""
    if isinstance(node, list):
        return [_canonical(n) for n in node]
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "record":
            return {"type": "record", "fields": [
                [f["name"], _canonical(f["type"])] for f in node.get("fields", [])]}
        if kind == "enum":
            return {"type": "enum", "symbols": node.get("symbols", [])}
        if kind == "fixed":
            return {k: node[k] for k in ("type", "size", "logicalType", "precision", "scale")
                    if k in node}
        return {k: _canonical(v) for k, v in sorted(node.items())
                if k not in ("name", "namespace", "doc", "default", "aliases")}
    return node


def columns_of(schema: str | Mapping[str, Any]) -> dict[str, Any]:
    """The top-level columns of an Avro record schema (meta fields left out), canonical types.

    Raises:
        ValueError: ``schema`` is not an Avro record schema.
    """
    avro = json.loads(schema) if isinstance(schema, str) else schema
    if not isinstance(avro, Mapping) or avro.get("type") != "record":
        raise ValueError(f"not an Avro record schema: {str(schema)[:200]}")
    return {f["name"]: _canonical(f["type"]) for f in avro.get("fields", [])
            if f["name"] not in META_COLUMNS}


def same_schema(a: str | None, b: str | None) -> bool:
    """True when both schemas are absent, or both have the same columns and types."""
    if a is None or b is None:
        return a is None and b is None
    return columns_of(a) == columns_of(b)


def _nullable(avro_type: Any) -> bool:
    return avro_type == "null" or (isinstance(avro_type, list) and "null" in avro_type)


def _type_text(avro_type: Any) -> str:
    branches = avro_type if isinstance(avro_type, list) else [avro_type]
    named = [b for b in branches if b != "null"]
    shown = [b.get("logicalType", b.get("type")) if isinstance(b, dict) else b for b in named]
    return "|".join(str(s) for s in shown) or "null"


def schema_diff(old: str | None, new: str | None) -> SchemaDiff:
    """How ``new`` differs from ``old`` (an absent schema has no columns)."""
    before = columns_of(old) if old else {}
    after = columns_of(new) if new else {}
    added = tuple(n for n in after if n not in before)
    return SchemaDiff(
        added=added,
        removed=tuple(n for n in before if n not in after),
        retyped=tuple((n, _type_text(before[n]), _type_text(after[n]))
                      for n in after if n in before and before[n] != after[n]),
        added_required=tuple(n for n in added if not _nullable(after[n])),
    )


@dataclass(frozen=True)
class SchemaResolution:
    """The outcome of the check: the schema to record in the commit, and why.

    ``case`` is the RFC's scenario number (None when the check was skipped);
    ``additive`` tells a case 3 or 8 accepted by the opt-in additive mode.
    """

    schema: str | None
    case: int | None
    reason: str
    additive: bool = False


def _enabled(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    return default if value is None else value.strip().lower() == "true"


def resolve_schema(
    *,
    table_name: str,
    instant: str,
    writer_schema: str | None,
    at_start: TableSchema,
    at_validation: TableSchema,
    options: Mapping[str, str] | None = None,
    operation: str | None = None,
    action: str | None = None,
) -> SchemaResolution:
    """The schema a transaction records in its commit, by RFC-82's decision table.

    Returns:
        The resolution; its ``schema`` is what goes into ``extraMetadata.schema``.

    Raises:
        ConcurrentSchemaEvolutionError: case 3 or 8 (another writer committed a schema
            this writer's schema does not match), naming the table, both instants, the
            case and the difference; also a schema change (e.g. case 5) by a write whose
            instant time is older than the commit that completed meanwhile: version-6
            readers take the latest instant time's schema, so the change would be hidden.
            The caller rolls the transaction back.
    """
    options = options or {}
    if not _enabled(options, CONFLICT_RESOLUTION_ENABLE, True):
        return SchemaResolution(writer_schema or at_validation.schema, None, "check disabled")
    resolution = _decide(table_name, instant, writer_schema, at_start, at_validation, options,
                         operation, action)
    later = at_validation.instant
    if (resolution.case is not None and later is not None and later > instant
            and not same_schema(resolution.schema, at_validation.schema)):
        # Version-6 readers take the schema of the latest instant *time*; this write's is
        # older than the one that completed meanwhile, so its schema change would be hidden.
        diff = schema_diff(at_validation.schema, resolution.schema)
        raise ConcurrentSchemaEvolutionError(
            f"table {table_name}: write {instant} changes the table schema (RFC-82 case "
            f"{resolution.case}: {diff.describe()}, as seen from the table schema), but "
            f"{later}, a later instant, completed meanwhile with the schema it started "
            f"from; readers take the schema of the latest instant, so the change would be "
            f"lost. {instant} is rolled back: retry the write against the new table schema"
        )
    return resolution


def _decide(table_name: str, instant: str, writer_schema: str | None, at_start: TableSchema,
            at_validation: TableSchema, options: Mapping[str, str], operation: str | None,
            action: str | None) -> SchemaResolution:
    start, now = at_start.schema, at_validation.schema
    if (operation or "").upper() in TABLE_SERVICE_OPERATIONS or action in TABLE_SERVICE_ACTIONS:
        return SchemaResolution(writer_schema or now, None, "table service")
    if writer_schema is None:
        return SchemaResolution(now, None, "writer without a schema takes the table's")
    if now is None:
        return SchemaResolution(writer_schema, 1, "first schema of the table")
    if start is None:
        if same_schema(writer_schema, now):
            return SchemaResolution(writer_schema, 2, "same schema as the first commit")
        return _refuse_or_extend(table_name, instant, writer_schema, at_start, at_validation,
                                 options, 3)
    if same_schema(start, now):
        if same_schema(writer_schema, start):
            return SchemaResolution(writer_schema, 4, "no schema evolution")
        return SchemaResolution(writer_schema, 5, "schema evolution by this transaction")
    if same_schema(writer_schema, now):
        return SchemaResolution(writer_schema, 7, "concurrent evolution to the same schema")
    if same_schema(writer_schema, start):
        # The table evolved meanwhile; this writer's data fits the evolved schema.
        return SchemaResolution(now, 6, "table schema evolved by another transaction")
    return _refuse_or_extend(table_name, instant, writer_schema, at_start, at_validation,
                             options, 8)


def _refuse_or_extend(table_name: str, instant: str, writer_schema: str, at_start: TableSchema,
                      at_validation: TableSchema, options: Mapping[str, str],
                      case: int) -> SchemaResolution:
    diff = schema_diff(at_validation.schema, writer_schema)
    if _enabled(options, ADDITIVE_RESOLUTION, False) and diff.is_additive:
        return SchemaResolution(writer_schema, case, "writer schema only adds nullable columns "
                                "to the table schema at validation", additive=True)
    started = ("the table had no schema" if at_start.schema is None
               else f"the table schema was that of commit {at_start.instant}")
    raise ConcurrentSchemaEvolutionError(
        f"table {table_name}: write {instant} conflicts with the schema committed by "
        f"{at_validation.instant} meanwhile (RFC-82 case {case}): when {instant} started "
        f"{started}; its writer schema differs from the table schema of {at_validation.instant}"
        f" ({diff.describe()}, as seen from the table schema). {instant} is rolled back: "
        "retry the write against the new table schema (read the table's schema again and "
        "evolve from it)"
    )


def resolve_commit_schema(
    table: HudiTable,
    metadata: CommitMetadata,
    instant: str,
    writer_schema: str | None,
    at_start: TableSchema,
    options: Mapping[str, str] | None = None,
    action: str | None = None,
) -> SchemaResolution:
    """Check a commit about to complete and put the resolved schema into its metadata.

    ``table`` is freshly re-read (under the table lock where the writer takes one): its
    timeline gives the table schema at validation. Every commit path calls it through
    :class:`~hudisql.txn.transaction.Transaction`.

    Returns:
        The resolution (``metadata.extra_metadata["schema"]`` is set to its schema).

    Raises:
        ConcurrentSchemaEvolutionError: see :func:`resolve_schema`.
    """
    resolution = resolve_schema(
        table_name=table.name, instant=instant, writer_schema=writer_schema,
        at_start=at_start, at_validation=TableSchema.of(table.timeline), options=options,
        operation=metadata.operation_type, action=action,
    )
    if resolution.schema is None:
        metadata.extra_metadata.pop("schema", None)
    else:
        metadata.extra_metadata["schema"] = resolution.schema
    return resolution

