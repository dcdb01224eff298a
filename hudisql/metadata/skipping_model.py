"""What data skipping takes and gives: predicates, the steps indexes took, the result.

``Predicate`` comes from the SQL side (:mod:`hudisql.parser.predicates`, which parses
filters into them); these are shared by, the index
steps (:mod:`hudisql.metadata.skipping_indexes`) and the entry points in
:mod:`hudisql.metadata.skipping`, which re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hudisql.parser.predicates import OPERATORS, Predicate

if TYPE_CHECKING:
    from hudisql.table.format.fsview import FileSlice

__all__ = ["OPERATORS", "Predicate", "SkippingResult", "SkippingStep"]

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
