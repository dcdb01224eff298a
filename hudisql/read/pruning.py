"""Partition pruning and data skipping for the ``hudi`` data source, from a predicate fixed
for the relation (:func:`select_slices`: ``t.read(where=...)``, the ``hudisql.read.where``
option, SQL by name).

A Hudi partition path encodes the values of the table's partition columns (``city=sf`` in
hive style, ``sf`` otherwise, ``/`` between levels). A filter on a partition column can be
decided from the path alone: every row of a kept partition satisfies it and every row of a
dropped partition fails it. That holds only when the key generator copies column values into
paths unchanged (simple, complex and non-partitioned key generators) and the column's type
reads back exactly from text (strings and integers).

Never from the filters Spark pushes: Spark 4.3 reuses a relation's last plan for later scans
(``hudisql.read.datasource``), so a plan pruned for one query would lose rows in the next.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from hudisql.metadata.skipping import Predicate, SkippingStep
from hudisql.table.format.properties import TableProperties

if TYPE_CHECKING:
    from hudisql.table.format.fsview import FileSlice
    from hudisql.table.table import HudiTable

#: The partition path Hudi writes for a null partition value.
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

# Key generators that put column values into partition paths verbatim.
_VERBATIM_KEYGENS = ("SimpleKeyGenerator", "ComplexKeyGenerator", "NonpartitionedKeyGenerator")

_COMPARISONS = (EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan,
                LessThanOrEqual)
_STRING_TESTS = (StringStartsWith, StringEndsWith, StringContains)


def _column_kind(arrow_type: pa.DataType) -> type | None:
    """The Python type a partition value of ``arrow_type`` reads back as exactly, or None."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return str
    if pa.types.is_integer(arrow_type):
        return int
    return None


@dataclass(frozen=True)
class PartitionPruner:
    """Decides which partition paths can hold rows matching the pushed filters.

    ``columns`` maps each prunable partition column to the Python type of its values;
    ``fields`` is every partition field in path order.
    """

    fields: tuple[str, ...]
    columns: Mapping[str, type]
    hive_style: bool
    url_encoded: bool

    @classmethod
    def for_table(cls, props: TableProperties, schema: pa.Schema) -> PartitionPruner:
        """The pruner of a table with these properties and Arrow schema; returns it."""
        keygen = props.keygenerator_class or props.get("hoodie.table.keygenerator.type", "")
        verbatim = keygen in ("", "SIMPLE", "COMPLEX", "NON_PARTITION") or keygen.endswith(
            _VERBATIM_KEYGENS
        )
        fields = props.partition_fields
        columns: dict[str, type] = {}
        if verbatim:
            for name in fields:
                index = schema.get_field_index(name)
                kind = _column_kind(schema.field(index).type) if index >= 0 else None
                if kind is not None:
                    columns[name] = kind
        return cls(tuple(fields), columns, props.hive_style_partitioning,
                   props.url_encode_partitions)

    def accepts(self, flt: Filter) -> bool:
        """True when ``flt`` can be decided exactly from partition paths."""
        if isinstance(flt, Not):
            return self.accepts(flt.child)
        attribute = getattr(flt, "attribute", None)
        if attribute is None or len(attribute) != 1 or attribute[0] not in self.columns:
            return False
        kind = self.columns[attribute[0]]
        if isinstance(flt, IsNull | IsNotNull):
            return True
        if isinstance(flt, _STRING_TESTS):
            return kind is str and isinstance(flt.value, str)
        if isinstance(flt, In):
            return all(_is_kind(v, kind) for v in flt.value)
        if isinstance(flt, _COMPARISONS):
            return _is_kind(flt.value, kind)
        return False

    def values(self, partition_path: str) -> dict[str, Any] | None:
        """The typed partition-column values of ``partition_path``, or None if unreadable."""
        parts = [p for p in partition_path.split("/") if p] if partition_path else []
        if len(parts) != len(self.fields):
            return None
        out: dict[str, Any] = {}
        for name, part in zip(self.fields, parts, strict=True):
            text = part
            if self.hive_style:
                key, sep, text = part.partition("=")
                if not sep or key != name:
                    return None
            if self.url_encoded:
                text = urllib.parse.unquote(text)
            kind = self.columns.get(name)
            if kind is None:
                continue
            if text == DEFAULT_PARTITION:
                out[name] = None
            elif kind is int:
                try:
                    out[name] = int(text)
                except ValueError:
                    return None
            else:
                out[name] = text
        return out

    def keeps(self, partition_path: str, filters: Sequence[Filter]) -> bool:
        """True unless some accepted filter is not TRUE for every row of the partition."""
        if not filters:
            return True
        values = self.values(partition_path)
        if values is None:
            # A path this pruner cannot read is kept, so pruning never loses rows; the
            # caller hands filters back whenever such a path exists.
            return True
        return all(evaluate(flt, values) is True for flt in filters)


def _is_kind(value: object, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def evaluate(flt: Filter, values: Mapping[str, Any]) -> bool | None:
    """``flt`` under SQL's three-valued logic for one partition's values (None: unknown)."""
    if isinstance(flt, Not):
        inner = evaluate(flt.child, values)
        return None if inner is None else not inner
    value = values[getattr(flt, "attribute")[0]]  # noqa: B009 - Filter base has none
    if isinstance(flt, IsNull):
        return value is None
    if isinstance(flt, IsNotNull):
        return value is not None
    if isinstance(flt, EqualNullSafe):
        return bool(value == flt.value)
    if value is None:
        return None
    result: bool
    if isinstance(flt, EqualTo):
        result = value == flt.value
    elif isinstance(flt, GreaterThan):
        result = value > flt.value
    elif isinstance(flt, GreaterThanOrEqual):
        result = value >= flt.value
    elif isinstance(flt, LessThan):
        result = value < flt.value
    elif isinstance(flt, LessThanOrEqual):
        result = value <= flt.value
    elif isinstance(flt, In):
        result = value in flt.value
    elif isinstance(flt, StringStartsWith):
        result = value.startswith(flt.value)
    elif isinstance(flt, StringEndsWith):
        result = value.endswith(flt.value)
    elif isinstance(flt, StringContains):
        result = flt.value in value
    else:  # pragma: no cover - accepts() admits only the kinds above
        raise TypeError(f"unsupported filter {flt!r}")
    return bool(result)


# --------------------------------------------------------------------------- fixed predicates

#: The seam's operators as the data source filters the partition pruner decides.
_FILTER_OF_OP: dict[str, type[Filter]] = {
    "=": EqualTo, "<": LessThan, "<=": LessThanOrEqual, ">": GreaterThan,
    ">=": GreaterThanOrEqual, "starts_with": StringStartsWith,
}


def as_filter(predicate: Predicate) -> Filter | None:
    """``predicate`` as the data source filter of the same meaning, or None (no equivalent)."""
    attribute = (predicate.column,)
    if predicate.op == "in":
        return In(attribute, tuple(predicate.values))
    if predicate.op == "is_null":
        return IsNull(attribute)
    if predicate.op == "is_not_null":
        return IsNotNull(attribute)
    kind = _FILTER_OF_OP.get(predicate.op)
    if kind is None or len(predicate.values) != 1:
        return None
    return kind(attribute, predicate.values[0])  # type: ignore[call-arg]


@dataclass
class SliceSelection:
    """The file slices a read keeps for a predicate fixed up front, and why.

    ``steps`` are the pruning steps in order: ``partition`` (partition paths), then each
    metadata-table index that ran (:func:`hudisql.metadata.skipping.skip_file_slices`).
    """

    total: int
    kept: list[FileSlice]
    steps: list[SkippingStep] = field(default_factory=list)
    #: The predicate's conjuncts the indexes could use (parsed once, for the row tests of
    #: :mod:`hudisql.read.local`).
    predicates: list[Predicate] = field(default_factory=list)

    def describe(self) -> str:
        """``kept 3 of 40 file slices (partition 40->10, record_index 10->3)``."""
        steps = ", ".join(f"{s.index} {s.before}->{s.after}" for s in self.steps)
        return (f"kept {len(self.kept)} of {self.total} file slices"
                + (f" ({steps})" if steps else ""))


def select_slices(table: HudiTable, slices: Sequence[FileSlice], where: str | None,
                  as_of: str | None = None, data_skipping: bool = True) -> SliceSelection:
    """The slices of ``slices`` (one snapshot of ``table``) that may hold rows matching
    ``where``, a SQL predicate fixed for the whole relation; returns the selection.

    Partition paths decide first (:class:`PartitionPruner`), then, with ``data_skipping``
    (``hoodie.enable.data.skipping``), the metadata table's indexes. Nothing is ever exact:
    the caller applies ``where`` to the rows it reads.

    Raises:
        HudiSqlError: ``where`` is not a SQL predicate.
    """
    selection = SliceSelection(total=len(slices), kept=list(slices))
    if where is None or not where.strip():
        return selection
    from hudisql.metadata.skipping import parse_predicates, skip_file_slices

    predicates = parse_predicates(where)
    selection.predicates = predicates
    if not predicates:
        return selection
    fields = set(table.properties.partition_fields)
    on_paths = [p for p in predicates if p.column in fields]
    # The schema (a commit's metadata parsed) only when a predicate names a partition field.
    pruner = PartitionPruner.for_table(table.properties, table.schema_as_of(as_of)) \
        if on_paths else None
    filters = [f for f in map(as_filter, on_paths)
               if f is not None and pruner is not None and pruner.accepts(f)]
    if filters and pruner is not None:
        before = len(selection.kept)
        selection.kept = [s for s in selection.kept if pruner.keeps(s.partition_path, filters)]
        selection.steps.append(SkippingStep("partition", before, len(selection.kept)))
    if data_skipping and selection.kept:
        skipped = skip_file_slices(table, selection.kept, predicates, as_of)
        selection.kept = list(skipped.kept)
        selection.steps.extend(skipped.steps)
    return selection
