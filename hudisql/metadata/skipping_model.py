"""What data skipping takes and gives: predicates, the steps indexes took, the result.

Shared by the parser of predicates (:mod:`hudisql.metadata.skipping_parse`), the index
steps (:mod:`hudisql.metadata.skipping_indexes`) and the entry points in
:mod:`hudisql.metadata.skipping`, which re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hudisql.table.fsview import FileSlice

__all__ = ["OPERATORS", "Predicate", "SkippingResult", "SkippingStep"]

#: The operators a :class:`Predicate` may have.
OPERATORS = ("=", "<", "<=", ">", ">=", "in", "is_null", "is_not_null", "starts_with")


@dataclass(frozen=True)
class Predicate:
    """One conjunct of a filter: ``column op values`` (``values`` holds one literal for the
    comparisons and ``starts_with``, the list for ``in``, nothing for the null tests)."""

    column: str
    op: str
    values: tuple[Any, ...] = ()

    def __str__(self) -> str:
        if self.op in ("is_null", "is_not_null"):
            return f"{self.column} {self.op.replace('_', ' ').upper()}"
        if self.op == "in":
            return f"{self.column} IN ({', '.join(repr(v) for v in self.values)})"
        if self.op == "starts_with":
            return f"startswith({self.column}, {self.values[0]!r})"
        return f"{self.column} {self.op} {self.values[0]!r}"


@dataclass(frozen=True)
class SkippingStep:
    """What one index did: the slices left before and after it applied.

    ``note`` says why an index pruned nothing when it could not be used (an unreadable
    metadata partition), else it is empty.
    """

    index: str
    before: int
    after: int
    note: str = ""


@dataclass
class SkippingResult:
    """The slices kept out of ``total``, and each index's step in the order applied."""

    total: int
    kept: list[FileSlice]
    steps: list[SkippingStep] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        """How many slices the indexes ruled out."""
        return self.total - len(self.kept)
