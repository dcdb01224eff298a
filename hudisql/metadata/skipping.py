"""Data skipping: which file slices a conjunction of simple predicates can match.

The metadata table's indexes decide, per file slice, whether it may hold a row matching
each predicate: the record index (``key = v``, ``key IN (...)``), secondary indexes (``=``,
``IN`` on the indexed column, through the record index), bloom filters (``=``), column
stats and partition stats (comparisons, ``IN``, ``IS [NOT] NULL``, ``starts_with``). A
slice the indexes say nothing about for a filtered column is kept (Hudi dropped such
slices: apache/hudi#20296). Skipping is never exact: the caller still applies the filter.

This module is below Spark (no pyspark import): the read layer turns Spark filters and
SQL text into :class:`Predicate` conjuncts (:func:`parse_predicates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hudisql.table.fsview import FileSlice
    from hudisql.table.table import HudiTable

#: The operators a :class:`Predicate` may have.
OPERATORS = ("=", "<", "<=", ">", ">=", "in", "is_null", "is_not_null", "starts_with")


@dataclass(frozen=True)
class Predicate:
    """One conjunct of a filter: ``column op values`` (``values`` holds one literal for the
    comparisons and ``starts_with``, the list for ``in``, nothing for the null tests)."""

    column: str
    op: str
    values: tuple[Any, ...] = ()


@dataclass(frozen=True)
class SkippingStep:
    """What one index did: the slices left before and after it applied."""

    index: str
    before: int
    after: int


@dataclass
class SkippingResult:
    """The slices kept out of ``total``, and each index's step in the order applied."""

    total: int
    kept: list[FileSlice]
    steps: list[SkippingStep] = field(default_factory=list)


def parse_predicates(text: str) -> list[Predicate]:
    """The conjuncts of a SQL predicate (``a = 1 AND b IN ('x', 'y')``) that indexes can
    use; other conjuncts (OR, functions, column-to-column) are left out (they prune
    nothing, the caller still applies the whole filter).

    Raises:
        HudiSqlError: text that is not a SQL predicate.
    """
    raise NotImplementedError("filled in by the data-skipping work (issue #13)")


def skip_file_slices(table: HudiTable, slices: Sequence[FileSlice],
                     predicates: Sequence[Predicate], as_of: str | None = None
                     ) -> SkippingResult:
    """The slices of ``slices`` (one snapshot of ``table``, as of ``as_of``) that may hold
    rows matching every predicate, by the table's completed metadata-table partitions."""
    return SkippingResult(total=len(slices), kept=list(slices))
