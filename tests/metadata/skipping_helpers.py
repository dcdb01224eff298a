"""Tables and an oracle for the data-skipping tests.

The oracle reads every slice of a snapshot (the table core's merged read) and says which
slices hold a row matching every predicate: the slices data skipping must keep.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hudisql.metadata.participant import participants_for
from hudisql.metadata.skipping import (
    Predicate,
    SkippingResult,
    parse_predicates,
    skip_file_slices,
)
from hudisql.table.format.fsview import FileSlice
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient
from tests.metadata.conftest import new_table
from tests.metadata.test_build_validate import PARTITIONS, index_all


def indexed_table(path: Path, table_type: str = "MERGE_ON_READ", partitioned: bool = False,
                  rows: int = 40, partitions: tuple[str, ...] = PARTITIONS,
                  version: int | None = None) -> HudiTable:
    """A table of ``rows`` records (5 per file group, in key order) with ``partitions`` built
    (at ``version``: the default version of new tables when None)."""
    return index_all(new_table(path, table_type, partitioned, rows, version), partitions)


def writer(table: HudiTable) -> WriteClient:
    """A client whose commits keep the metadata table exact."""
    return WriteClient(table, max_records_per_file=5, participants=participants_for(table))


def holds(row: dict[str, Any], p: Predicate) -> bool:
    """Spark's answer for one row (NULL compares to nothing; names case-insensitive;
    zone-less timestamps against zoned values in UTC, hudisql sessions' zone)."""
    value = {k.lower(): v for k, v in row.items()}.get(p.column.lower())
    if isinstance(value, dt.date):  # Spark casts a string literal to the column's type
        kind = type(value)
        p = Predicate(p.column, p.op, tuple(
            kind.fromisoformat(v) if isinstance(v, str) else v for v in p.values))
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        p = Predicate(p.column, p.op, tuple(
            v.replace(tzinfo=dt.UTC) if isinstance(v, dt.datetime) and v.tzinfo is None
            else v for v in p.values))
    if p.op == "is_null":
        return value is None
    if p.op == "is_not_null":
        return value is not None
    if value is None:
        return False
    first = p.values[0]
    checks = {
        "=": lambda: value == first, "<": lambda: value < first, "<=": lambda: value <= first,
        ">": lambda: value > first, ">=": lambda: value >= first,
        "in": lambda: value in p.values, "starts_with": lambda: str(value).startswith(first),
    }
    return bool(checks[p.op]())


def matching_slices(table: HudiTable, slices: Sequence[FileSlice],
                    predicates: Sequence[Predicate], as_of: str | None = None) -> set[str]:
    """File ids of the slices holding a row that matches every predicate."""
    out = set()
    for s in slices:
        rows = read_file_slice(table.storage, table.properties, table.timeline, s, as_of,
                               schema=table.schema_as_of(as_of)).to_pylist()
        if any(all(holds(r, p) for p in predicates) for r in rows):
            out.add(s.file_id)
    return out


def check_skipping(table: HudiTable, text: str, as_of: str | None = None,
                   time_zone: str | None = None) -> tuple[SkippingResult, set[str]]:
    """Skip with ``text`` and assert no slice holding a matching row was dropped.

    Returns:
        The result and the file ids of the slices that hold matching rows.
    """
    table = table.reload()
    slices = table.file_slices(as_of)
    predicates = parse_predicates(text)
    result = skip_file_slices(table, slices, predicates, as_of, time_zone=time_zone)
    must = matching_slices(table, slices, predicates, as_of)
    kept = {s.file_id for s in result.kept}
    assert must <= kept, f"{text}: dropped slices {must - kept} that hold matching rows"
    assert [s for s in slices if s.file_id in kept] == result.kept  # order kept
    assert result.total == len(slices)
    return result, must


def steps(result: SkippingResult) -> dict[str, tuple[int, int]]:
    """Each step's (before, after), by index name."""
    return {s.index: (s.before, s.after) for s in result.steps}
