"""Data skipping: which file slices a conjunction of simple predicates can match.

The metadata table's indexes decide, per file slice, whether it may hold a row matching
each predicate: the record index (``key = v``, ``key IN (...)``), secondary indexes (``=``,
``IN`` on the indexed column, through the record index), bloom filters (``=``), column
stats and partition stats (comparisons, ``IN``, ``IS [NOT] NULL``, ``starts_with``). A
slice the indexes say nothing about for a filtered column is kept (Hudi dropped such
slices: apache/hudi#20296). Skipping is never exact: the caller still applies the filter.

Only completed metadata partitions are read (``hoodie.table.metadata.partitions``), never
ones being built. A snapshot older than the table's latest completed write (``as_of``)
uses only the indexes that describe files, not the table's current state: column stats
and bloom filters are functions of one file's content, so they hold for every snapshot
the file is in; the record index, secondary indexes and partition stats describe the
latest snapshot only and are not used for older ones.

This module is below Spark (no pyspark import): the read layer turns Spark filters and
SQL text into :class:`Predicate` conjuncts (:func:`parse_predicates`). The steps live in
:mod:`hudisql.metadata.skipping_indexes`, literal handling in
:mod:`hudisql.metadata.skipping_values`, parsing in :mod:`hudisql.parser.predicates`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from hudisql.errors import HudiSqlError
from hudisql.metadata.config import (
    completed_partitions,
    inflight_partitions,
    load_index_definitions,
)
from hudisql.metadata.skipping_indexes import (
    RECORD_INDEX,
    STEPS,
    SkipContext,
    Step,
    secondary_index_steps,
    value_bloom_steps,
)
from hudisql.metadata.skipping_model import OPERATORS, Predicate, SkippingResult, SkippingStep
from hudisql.metadata.table import MetadataTable
from hudisql.parser.predicates import parse_predicates
from hudisql.table.format import properties as P
from hudisql.table.format.instant import WRITE_ACTIONS
from hudisql.table.table import normalize_as_of

if TYPE_CHECKING:
    from hudisql.table.format.fsview import FileSlice
    from hudisql.table.table import HudiTable

__all__ = [
    "ENABLE_DATA_SKIPPING",
    "OPERATORS",
    "Predicate",
    "SkippingResult",
    "SkippingStep",
    "data_skipping",
    "parse_predicates",
    "skip_file_slices",
]

#: Hudi's switch for data skipping in reads (default true, as in Hudi 1.x).
ENABLE_DATA_SKIPPING = "hoodie.enable.data.skipping"

_log = logging.getLogger(__name__)


def skip_file_slices(table: HudiTable, slices: Sequence[FileSlice],
                     predicates: Sequence[Predicate], as_of: str | None = None, *,
                     time_zone: str | None = None) -> SkippingResult:
    """The slices of ``slices`` (one snapshot of ``table``, as of ``as_of``) that may hold
    rows matching every predicate, by the table's completed metadata-table partitions.

    ``time_zone`` is the session's (``spark.sql.session.timeZone``; hudisql sessions use
    UTC): zone-less timestamp literals against zoned timestamp columns are read in it.
    Without it they prune nothing.

    Slices keep their order. Each index that ran adds a :class:`SkippingStep`; an index
    that could not be read (a damaged metadata partition) prunes nothing and says why in
    its step's ``note``: a read never fails because of an index.
    """
    kept = list(slices)
    result = SkippingResult(total=len(kept), kept=kept)
    if not kept or not predicates:
        return result
    try:
        context = _context(table, as_of)
    except (HudiSqlError, OSError) as exc:  # e.g. a damaged index.json: read everything
        _log.warning("data skipping: table %s: indexes not used: %s", table.name, exc)
        result.steps.append(SkippingStep("metadata table", len(kept), len(kept),
                                         note=f"not used: {exc}"))
        return result
    if context is None:
        return result
    context.time_zone = time_zone
    usable = _resolved(predicates, context.schema)
    if not usable:
        return result
    for name, step in _steps(context):
        if not result.kept:
            break
        before = len(result.kept)
        try:
            found = step(context, result.kept, usable)
        except (HudiSqlError, OSError, pa.ArrowException) as exc:
            _log.warning("data skipping: index %s of table %s not used: %s", name,
                         table.name, exc)
            result.steps.append(SkippingStep(name, before, before, note=f"not used: {exc}"))
            continue
        if found is not None:
            result.kept = found
            result.steps.append(SkippingStep(name, before, len(found)))
    return result


def _steps(context: SkipContext) -> list[tuple[str, Step]]:
    first, *rest = STEPS
    assert first[0] == RECORD_INDEX
    return [first, *secondary_index_steps(context), *value_bloom_steps(context), *rest]


def _context(table: HudiTable, as_of: str | None) -> SkipContext | None:
    """What the steps need, or None when the table has no usable metadata partition."""
    props = table.properties
    if props.version not in P.WRITABLE_VERSIONS:
        return None
    usable = frozenset(completed_partitions(props)) - frozenset(inflight_partitions(props))
    if not usable or not MetadataTable.exists_for(table):
        return None
    as_of = normalize_as_of(as_of)
    latest = table.timeline.last_completed(WRITE_ACTIONS)
    historical = as_of is not None and latest is not None and as_of < latest.timestamp
    mdt = MetadataTable(table)
    return SkipContext(
        table=table, mdt=mdt, partitions=usable, historical=historical,
        schema=table.schema_as_of(as_of) if as_of is not None else table.schema,
        definitions=load_index_definitions(table),
    )


def _resolved(predicates: Sequence[Predicate], schema: pa.Schema) -> list[Predicate]:
    """The predicates with column names as the schema spells them (Spark resolves names
    case-insensitively); predicates on unknown or ambiguous columns are left out."""
    exact = set(schema.names)
    folded: dict[str, list[str]] = {}
    for name in schema.names:
        folded.setdefault(name.lower(), []).append(name)
    out = []
    for p in predicates:
        if p.op not in OPERATORS:
            continue
        if p.column in exact:
            out.append(p)
            continue
        matches = folded.get(p.column.lower(), [])
        if len(matches) == 1:
            out.append(Predicate(matches[0], p.op, p.values))
    return out


def data_skipping(table: HudiTable, filter_text: str, as_of: str | None = None, *,
                  time_zone: str | None = None) -> SkippingResult:
    """What the indexes do for a filter on ``table``'s snapshot (latest, or ``as_of``):
    every latest file slice, the ones kept, and each index's step
    (``CALL show_data_skipping``, ``HudiTableHandle.data_skipping``).

    Raises:
        SqlParseError: ``filter_text`` is not a SQL predicate.
    """
    predicates = parse_predicates(filter_text)
    return skip_file_slices(table, table.file_slices(as_of), predicates, as_of,
                            time_zone=time_zone)
