"""Change data capture derived from the timeline: before and after images of every change.

Apache Hudi serves CDC queries from CDC log files that writers with
``hoodie.table.cdc.enabled`` add. hudisql writes none; it derives the same answer from
what every table has. For each completed, not rolled-back write in the range (in instant
order; on versions 8/9 in completion order, the range being by completion time there), and
each partition it wrote, the file groups it wrote or replaced are read merged twice: as of
just before the instant (the *before* state) and as of the instant (the *after* state); on
versions 8/9 as of just before and at its completion, so that a write that completed
between its requested time and another's completion is in the other's before state.
Compared by record key:

* a key whose after row carries the instant as ``_hoodie_commit_time`` was written by it:
  ``u`` (update) when the before state had the key, else ``i`` (insert);
* a key of the before state absent after: ``d`` (delete);
* anything else did not change (a late update that lost to a greater ordering value, a
  compaction or clustering moving rows, which keeps their commit times).

So the result is exact for any table hudisql reads, CDC-enabled or not: inserts, updates,
deletes, overwrites; rolled-back writes never appear. Columns are Hudi's: ``op``,
``ts_ms`` (the instant time), ``before`` and ``after`` (the row, meta columns included, as
a JSON object string; null for an insert's before and a delete's after).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.table.format.fsview import FileSlice, FileSystemView
from hudisql.table.read.incremental import (
    COMMIT_TIME_COLUMN,
    IncrementalRange,
    completion_snapshot,
    completion_times,
    resolve_range,
)
from hudisql.table.read.merge import read_file_slice
from hudisql.table.table import HudiTable

__all__ = ["CDC_SCHEMA", "CdcUnit", "cdc_range", "cdc_units", "read_cdc", "read_cdc_unit"]

#: Hudi's CDC query columns.
CDC_SCHEMA = pa.schema([("op", pa.string()), ("ts_ms", pa.string()),
                        ("before", pa.string()), ("after", pa.string())])
_KEY = "_hoodie_record_key"
#: Operations that move records without changing them (their diffs are always empty).
_NO_CHANGE_OPERATIONS = frozenset({"compact", "log_compact", "cluster"})


@dataclass(frozen=True)
class CdcUnit:
    """One write's changes in one partition: the file groups it wrote and replaced there.

    ``completion``: on versions 8/9, the write's completion time: its before and after
    states are the table as of just before and at that time (writes complete out of
    requested order there); None on version 6 (by instant time).
    """

    instant: str
    partition: str
    file_ids: tuple[str, ...]
    replaced: tuple[str, ...] = ()
    completion: str | None = None

    @property
    def before_as_of(self) -> str:
        """The instant time just before :attr:`instant`: the before state's snapshot."""
        return _just_before(self.instant)

    def states(self, table: HudiTable) -> tuple[tuple[str, frozenset[str]],
                                                tuple[str, frozenset[str]]]:
        """The before and after snapshots: each an instant time and the instants hidden."""
        if self.completion is None:
            return (self.before_as_of, frozenset()), (self.instant, frozenset())
        return (completion_snapshot(table, _just_before(self.completion)),
                completion_snapshot(table, self.completion))


def _just_before(time: str) -> str:
    return str(int(time) - 1).zfill(len(time))


def cdc_units(table: HudiTable, rng: IncrementalRange) -> list[CdcUnit]:
    """The units of work of a CDC query over ``rng``, in the range's order (instant, or on
    versions 8/9 completion, order) then partition order."""
    units: list[CdcUnit] = []
    times = completion_times(table) if rng.by_completion else {}
    for instant in rng.instants:
        metadata = rng.commit_metadata(table, instant)
        if metadata.compacted or (metadata.operation_type or "").lower() in _NO_CHANGE_OPERATIONS:
            continue
        written: dict[str, set[str]] = {}
        for partition, stats in metadata.partition_to_write_stats.items():
            for stat in stats:
                written.setdefault(stat.partition_path or partition, set()).add(stat.file_id)
        replaced = {p: set(ids) for p, ids in metadata.partition_to_replace_file_ids.items()}
        for partition in sorted(set(written) | set(replaced)):
            units.append(CdcUnit(instant, partition,
                                 tuple(sorted(written.get(partition, ()))),
                                 tuple(sorted(replaced.get(partition, ()))),
                                 times.get(instant, instant) if rng.by_completion else None))
    return units


def _state(table: HudiTable, snapshot: tuple[str, frozenset[str]], partition: str,
           file_ids: set[str]) -> pa.Table | None:
    """The merged rows of ``file_ids`` in ``partition`` as of ``snapshot`` (an instant time
    and the instants hidden; None: no rows)."""
    as_of, hidden = snapshot
    view = FileSystemView(table.storage, table.properties, table.timeline, as_of, hidden)
    slices: list[FileSlice] = [g.latest_slice for g in view.file_groups(partition)
                               if g.file_id in file_ids]
    if not slices:
        return None
    schema = table.schema_as_of(as_of)
    parts = [read_file_slice(table.storage, table.properties, table.timeline, s, as_of,
                             schema=schema, visible=view.visible) for s in slices]
    return pa.concat_tables(parts)


def _images(rows: pa.Table | None) -> dict[str, str]:
    """Record key -> the row as a JSON object string."""
    if rows is None or not rows.num_rows:
        return {}
    return {str(r[_KEY]): json.dumps(r, default=_json_value, ensure_ascii=False)
            for r in rows.to_pylist()}


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def read_cdc_unit(table: HudiTable, unit: CdcUnit) -> pa.Table:
    """The changes of one unit as rows of :data:`CDC_SCHEMA` (deletes, then inserts and
    updates, each by record key)."""
    before, after = unit.states(table)
    before_rows = _state(table, before, unit.partition, set(unit.file_ids) | set(unit.replaced))
    after_rows = _state(table, after, unit.partition, set(unit.file_ids))
    images = _images(before_rows)
    written: pa.Table | None = None
    after_keys: set[str] = set()
    if after_rows is not None and after_rows.num_rows:
        after_keys = set(after_rows.column(_KEY).cast(pa.string()).to_pylist())
        times = after_rows.column(COMMIT_TIME_COLUMN).cast(pa.string())
        written = after_rows.filter(pc.fill_null(pc.equal(times, unit.instant), False))
    ops: list[str] = []
    befores: list[str | None] = []
    afters: list[str | None] = []
    for key in sorted(set(images) - after_keys):
        ops.append("d")
        befores.append(images[key])
        afters.append(None)
    for key, image in sorted(_images(written).items()):
        ops.append("u" if key in images else "i")
        befores.append(images.get(key))
        afters.append(image)
    return pa.table({"op": ops, "ts_ms": [unit.instant] * len(ops), "before": befores,
                     "after": afters}, schema=CDC_SCHEMA)


def cdc_range(table: HudiTable, begin: str | None, end: str | None = None,
              latest: str | None = None) -> IncrementalRange:
    """The range of a CDC query. Archived instants in it are read from the archived
    timeline (a full scan has no changes to give, so the full-scan fallback does not
    apply); a range whose earlier state a clean deleted is refused.

    Raises:
        ReadOptionError: see :func:`hudisql.table.read.incremental.resolve_range`, or the state
            before the range was cleaned.
    """
    rng = resolve_range(table, begin, end, full_scan_fallback=False, latest=latest)
    if rng.instants:  # the state before the first change must still be readable
        table.check_readable_as_of(min(rng.instants) if rng.by_completion
                                   else rng.begin or rng.instants[0])
    return rng


def read_cdc(table: HudiTable, begin: str | None, end: str | None = None, *,
             full_scan_fallback: bool = False) -> pa.Table:
    """Every change of ``(begin, end]`` as rows of :data:`CDC_SCHEMA`, in instant order (on
    versions 8/9 completion order); ``full_scan_fallback`` has no effect on changes (see
    :func:`cdc_range`).

    Raises:
        ReadOptionError: see :func:`hudisql.table.read.incremental.resolve_range`.
    """
    rng = cdc_range(table, begin, end)
    parts = [read_cdc_unit(table, unit) for unit in cdc_units(table, rng)]
    return pa.concat_tables(parts) if parts else CDC_SCHEMA.empty_table()
