"""What one commit did to one file group's rows, as the record and secondary indexes see it.

:meth:`RowChanges.of` compares a file group's rows before and after a commit (record key and
the secondary index columns) in Arrow: keys that appeared, keys that vanished, and per
secondary column the ``(value, key)`` pairs that went and came. The Spark write can compute
it on its executors while it merges a file group (a pure function of two tables) and hand it
to the metadata participant; otherwise the participant reads the slices itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.metadata.arrow_records import secondary_strings
from hudisql.table.schema import META_COLUMNS

__all__ = ["Pair", "RowChanges"]

RECORD_KEY = META_COLUMNS[2]
#: A secondary index entry: (value as the index stores it, record key).
Pair = tuple[str | None, str]


def _column(rows: pa.Table, name: str) -> pa.Array:
    column = rows.column(name)
    return column.combine_chunks() if column.num_chunks else pa.array([], column.type)


@dataclass
class RowChanges:
    """Keys new to and gone from one file group, and the secondary pairs that changed."""

    inserted: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: Per secondary index column: (pairs gone, pairs added).
    secondary: dict[str, tuple[list[Pair], list[Pair]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (a Spark task hands it to the driver)."""
        return {"inserted": self.inserted, "removed": self.removed,
                "secondary": {c: [[list(p) for p in gone], [list(p) for p in added]]
                              for c, (gone, added) in self.secondary.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RowChanges:
        """The inverse of :meth:`to_dict`."""
        return cls(list(data["inserted"]), list(data["removed"]),
                   {c: ([(v, k) for v, k in gone], [(v, k) for v, k in added])
                    for c, (gone, added) in data["secondary"].items()})

    @classmethod
    def of(
        cls, before: pa.Table | None, after: pa.Table | None, columns: Sequence[str]
    ) -> RowChanges:
        """The changes between a file group's rows before and after (None: no rows).

        Both tables hold ``_hoodie_record_key`` and ``columns``.
        """
        out = cls(secondary={c: ([], []) for c in columns})
        if before is None and after is None:
            return out
        empty_keys = pa.array([], pa.string())
        old_keys = _column(before, RECORD_KEY) if before is not None else empty_keys
        new_keys = _column(after, RECORD_KEY) if after is not None else empty_keys
        came = pc.invert(pc.is_in(new_keys, value_set=old_keys))
        went = pc.invert(pc.is_in(old_keys, value_set=new_keys))
        out.inserted = new_keys.filter(came).to_pylist()
        out.removed = old_keys.filter(went).to_pylist()
        for column in columns:
            gone, added = out.secondary[column]
            old_values = secondary_strings(_column(before, column)) if before is not None else None
            new_values = secondary_strings(_column(after, column)) if after is not None else None
            if old_values is not None:
                gone.extend(zip(old_values.filter(went).to_pylist(), out.removed, strict=True))
            if new_values is not None:
                added.extend(zip(new_values.filter(came).to_pylist(), out.inserted, strict=True))
            if old_values is None or new_values is None:
                continue
            joined = pa.table({"k": old_keys, "v": old_values}).join(
                pa.table({"k": new_keys, "w": new_values}), "k", join_type="inner")
            v, w = joined.column("v"), joined.column("w")
            same = pc.or_(pc.fill_null(pc.equal(v, w), False),
                          pc.and_(pc.is_null(v), pc.is_null(w)))
            changed = joined.filter(pc.invert(same))
            keys = changed.column("k").to_pylist()
            gone.extend(zip(changed.column("v").to_pylist(), keys, strict=True))
            added.extend(zip(changed.column("w").to_pylist(), keys, strict=True))
        return out
