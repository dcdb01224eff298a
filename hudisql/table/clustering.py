"""Clustering in the table core: settings, plan format, plan strategy, work on one group.

**Plan.** Hudi's size-based plan strategy: the latest slices smaller than
``hoodie.clustering.plan.strategy.small.file.limit`` in the selected partitions, outside
file groups a pending compaction, log compaction or clustering holds, largest first, packed
per partition into groups of at most ``...max.bytes.per.group`` (at most ``...max.num.groups``
groups), each to be written as ``ceil(bytes / ...target.file.max.bytes)`` new file groups.
A group of one slice is planned only when the rows are to be sorted. The plan is Hudi's
``HoodieRequestedReplaceMetadata`` (operation ``CLUSTER``) holding a
``HoodieClusteringPlan``, in ``<ts>.replacecommit.requested`` (table version 6).

**Execution.** :func:`execute_group` reads each planned slice merged (base file and log
files, as a reader sees them), orders the rows (``hudisql.table.layout``) and writes them as
new base files in new file groups; records keep ``_hoodie_commit_time`` and
``_hoodie_commit_seqno`` (``preserveHoodieMetadata``). The instant completes as a
``replacecommit`` whose ``partitionToReplaceFileIds`` names the planned file groups.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudisql.errors import CorruptTableError, TableServiceError
from hudisql.table.commit_metadata import (
    CommitMetadata,
    WriteStat,
    read_avro_container,
    write_avro_container,
)
from hudisql.table.compaction import planned_slice
from hudisql.table.fsview import FileSlice
from hudisql.table.instant import Action, Instant
from hudisql.table.layout import cut_points, layout_strategy, ordered
from hudisql.table.merge import read_file_slice
from hudisql.table.properties import TableProperties
from hudisql.table.schema import avro_to_arrow
from hudisql.table.service_plans import CompactionOperation, int_setting
from hudisql.table.storage import Storage
from hudisql.table.timeline import Timeline
from hudisql.table.write_files import write_base_file

__all__ = [
    "CLUSTER_OPERATION",
    "ClusteringGroup",
    "ClusteringPlan",
    "ClusteringSettings",
    "SliceInfo",
    "build_groups",
    "clustered_groups",
    "clustering_metadata",
    "clustering_plan",
    "execute_group",
    "is_clustering",
    "pending_clusterings",
]

#: ``operationType`` of a clustering's requested metadata and completed replacecommit.
CLUSTER_OPERATION = "CLUSTER"
#: The execution strategy Hudi's Spark clustering plans name.
EXECUTION_STRATEGY = (
    "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy")
PLAN_STRATEGY = (
    "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy")

SMALL_FILE_LIMIT = "hoodie.clustering.plan.strategy.small.file.limit"
TARGET_FILE_MAX_BYTES = "hoodie.clustering.plan.strategy.target.file.max.bytes"
MAX_BYTES_PER_GROUP = "hoodie.clustering.plan.strategy.max.bytes.per.group"
MAX_NUM_GROUPS = "hoodie.clustering.plan.strategy.max.num.groups"
SORT_COLUMNS = "hoodie.clustering.plan.strategy.sort.columns"
PARTITION_SELECTED = "hoodie.clustering.plan.strategy.partition.selected"
PARTITION_REGEX = "hoodie.clustering.plan.strategy.partition.regex.pattern"
BEGIN_PARTITION = "hoodie.clustering.plan.strategy.cluster.begin.partition"
END_PARTITION = "hoodie.clustering.plan.strategy.cluster.end.partition"
FILTER_MODE = "hoodie.clustering.plan.partition.filter.mode"
PLAN_STRATEGY_CLASS = "hoodie.clustering.plan.strategy.class"
EXECUTION_STRATEGY_CLASS = "hoodie.clustering.execution.strategy.class"
LAYOUT_STRATEGY = "hoodie.layout.optimize.strategy"
#: Filter modes hudisql carries out (Hudi's RECENT_DAYS/DAY_ROLLING need date partitions).
FILTER_MODES = ("NONE", "SELECTED_PARTITIONS")

_NS = "org.apache.hudi.avro.model"
#: hudisql's key in the plan's ``extraMetadata``: each planned slice's bytes, so the commit
#: can tell a slice a writer appended to since (other readers ignore it).
SLICE_SIZES_KEY = "hudisql.sliceSizes"
_MB = 1024 * 1024


@dataclass(frozen=True)
class ClusteringSettings:
    """What a clustering plans and how it orders rows (Hudi's option names and defaults)."""

    small_file_limit: int = 300 * _MB
    target_file_max_bytes: int = 1024 * _MB
    max_bytes_per_group: int = 2048 * _MB
    max_num_groups: int = 30
    sort_columns: tuple[str, ...] = ()
    layout: str = "linear"
    filter_mode: str = "NONE"
    partitions_selected: tuple[str, ...] = ()
    partition_regex: str | None = None
    begin_partition: str | None = None
    end_partition: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ClusteringSettings:
        """The settings from ``options`` (Hudi's keys).

        Raises:
            TableServiceError: a value that is not a positive integer, an unknown layout
                strategy or partition filter mode, a bad regular expression.
        """
        d = cls()
        for key, known in ((PLAN_STRATEGY_CLASS, PLAN_STRATEGY),
                           (EXECUTION_STRATEGY_CLASS, EXECUTION_STRATEGY)):
            raw = options.get(key)
            if raw is not None and str(raw).strip() != known:
                raise TableServiceError(
                    f"{key}={raw!r} is not supported; hudisql carries out {known} (its "
                    "settings are the hoodie.clustering.plan.strategy.* keys)")
        mode = str(options.get(FILTER_MODE, "NONE")).strip().upper() or "NONE"
        if mode not in FILTER_MODES:
            raise TableServiceError(
                f"{FILTER_MODE}={options[FILTER_MODE]!r} is not supported; use NONE or "
                f"SELECTED_PARTITIONS ({PARTITION_SELECTED}), or {PARTITION_REGEX}, "
                f"{BEGIN_PARTITION} and {END_PARTITION}")
        regex = options.get(PARTITION_REGEX) or None
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as exc:
                raise TableServiceError(f"{PARTITION_REGEX}={regex!r} is not a regular "
                                        f"expression ({exc})") from None
        layout = layout_strategy(options.get(LAYOUT_STRATEGY))
        sort_columns = _names(options.get(SORT_COLUMNS))
        if layout != "linear" and not sort_columns:
            raise TableServiceError(
                f"{LAYOUT_STRATEGY}={layout} orders rows by columns, and none are given: "
                f"name them (ORDER BY a, b, order => 'a,b' or {SORT_COLUMNS})")
        return cls(
            small_file_limit=int_setting(options, SMALL_FILE_LIMIT, d.small_file_limit, 1),
            target_file_max_bytes=int_setting(options, TARGET_FILE_MAX_BYTES,
                                              d.target_file_max_bytes, 1),
            max_bytes_per_group=int_setting(options, MAX_BYTES_PER_GROUP,
                                            d.max_bytes_per_group, 1),
            max_num_groups=int_setting(options, MAX_NUM_GROUPS, d.max_num_groups, 1),
            sort_columns=sort_columns,
            layout=layout,
            filter_mode=mode,
            partitions_selected=_names(options.get(PARTITION_SELECTED)),
            partition_regex=regex,
            begin_partition=options.get(BEGIN_PARTITION) or None,
            end_partition=options.get(END_PARTITION) or None,
        )

    def selects(self, partition: str) -> bool:
        """True when the partition filters let ``partition`` be clustered."""
        if self.filter_mode == "SELECTED_PARTITIONS" and partition not in self.partitions_selected:
            return False
        if self.partition_regex is not None and not re.fullmatch(self.partition_regex, partition):
            return False
        if self.begin_partition is not None and partition < self.begin_partition:
            return False
        return self.end_partition is None or partition <= self.end_partition

    def strategy_params(self) -> dict[str, str]:
        """The plan's ``strategyParams``: what its execution needs to know."""
        params = {LAYOUT_STRATEGY: self.layout}
        if self.sort_columns:
            params[SORT_COLUMNS] = ",".join(self.sort_columns)
        return params


def _names(raw: str | None) -> tuple[str, ...]:
    return tuple(n.strip() for n in str(raw or "").split(",") if n.strip())


def check_sort_columns(columns: Sequence[str], schema: pa.Schema, table: str) -> None:
    """Refuse sort columns the table does not have.

    Raises:
        TableServiceError: names the column, the table and its columns.
    """
    known = set(schema.names)
    own = ", ".join(n for n in schema.names if not n.startswith("_hoodie_"))
    for name in columns:
        if name not in known:
            raise TableServiceError(
                f"clustering of table {table}: sort column {name!r} is not a column of the "
                f"table (its columns: {own})")


# -- the plan ---------------------------------------------------------------------------------

_SLICE = {"type": "record", "name": "HoodieSliceInfo", "fields": [
    {"name": "dataFilePath", "type": ["null", "string"], "default": None},
    {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": "string"}],
     "default": None},
    {"name": "fileId", "type": ["null", "string"]},
    {"name": "partitionPath", "type": ["null", "string"], "default": None},
    {"name": "bootstrapFilePath", "type": ["null", "string"], "default": None},
    {"name": "version", "type": ["int", "null"], "default": 1},
]}
_GROUP = {"type": "record", "name": "HoodieClusteringGroup", "fields": [
    {"name": "slices", "type": ["null", {"type": "array", "items": _SLICE}], "default": None},
    {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}], "default": None},
    {"name": "numOutputFileGroups", "type": ["int", "null"], "default": 1},
    {"name": "version", "type": ["int", "null"], "default": 1},
]}
_STRATEGY = {"type": "record", "name": "HoodieClusteringStrategy", "fields": [
    {"name": "strategyClassName", "type": ["null", "string"], "default": None},
    {"name": "strategyParams", "type": ["null", {"type": "map", "values": "string"}],
     "default": None},
    {"name": "version", "type": ["int", "null"], "default": 1},
]}
_PLAN = {"type": "record", "name": "HoodieClusteringPlan", "fields": [
    {"name": "inputGroups", "type": ["null", {"type": "array", "items": _GROUP}],
     "default": None},
    {"name": "strategy", "type": [_STRATEGY, "null"], "default": None},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}],
     "default": None},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "preserveHoodieMetadata", "type": ["null", "boolean"], "default": None},
]}
#: ``HoodieRequestedReplaceMetadata`` with its clustering plan (hudi-common/src/main/avro).
REQUESTED_REPLACE_SCHEMA = json.dumps({
    "namespace": _NS, "type": "record", "name": "HoodieRequestedReplaceMetadata",
    "fields": [
        {"name": "operationType", "type": ["null", "string"], "default": None},
        {"name": "clusteringPlan", "type": [_PLAN, "null"], "default": None},
        {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}],
         "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}, separators=(",", ":"))


@dataclass(frozen=True)
class SliceInfo:
    """One planned file slice (``HoodieSliceInfo``): file names, not paths, in memory;
    the plan holds full paths as Hudi writes them."""

    partition_path: str
    file_id: str
    base_instant: str
    data_file: str | None
    delta_files: tuple[str, ...] = ()
    size: int = 0

    @property
    def file_group(self) -> tuple[str, str]:
        """``(partition, file id)``."""
        return (self.partition_path, self.file_id)

    @classmethod
    def of_slice(cls, file_slice: FileSlice) -> SliceInfo:
        """The plan entry of ``file_slice``."""
        base = file_slice.base_file
        return cls(file_slice.partition_path, file_slice.file_id, file_slice.base_instant,
                   base.name if base is not None else None,
                   tuple(log.name for log in file_slice.log_files), file_slice.total_size)

    def as_operation(self) -> CompactionOperation:
        """The slice as a compaction operation names it (to read it back from storage)."""
        return CompactionOperation(self.file_id, self.partition_path, self.base_instant,
                                   list(self.delta_files), self.data_file)


@dataclass
class ClusteringGroup:
    """Slices of one partition rewritten together into ``num_output_file_groups`` files."""

    slices: list[SliceInfo]
    num_output_file_groups: int = 1
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def partition_path(self) -> str:
        """The group's partition."""
        return self.slices[0].partition_path


@dataclass
class ClusteringPlan:
    """A clustering plan: its groups and the sort and layout its execution uses."""

    groups: list[ClusteringGroup] = field(default_factory=list)
    strategy_params: dict[str, str] = field(default_factory=dict)
    strategy_class: str = EXECUTION_STRATEGY
    extra_metadata: dict[str, str] = field(default_factory=dict)
    version: int = 1
    #: The table's storage, so the plan names full paths as Hudi's do (None: relative).
    storage: Storage | None = None

    @property
    def sort_columns(self) -> tuple[str, ...]:
        """The columns the rows are ordered by (none: kept in their order)."""
        return _names(self.strategy_params.get(SORT_COLUMNS))

    @property
    def layout(self) -> str:
        """The layout strategy (``linear``, ``z-order``, ``hilbert``)."""
        return layout_strategy(self.strategy_params.get(LAYOUT_STRATEGY))

    def file_groups(self) -> set[tuple[str, str]]:
        """``(partition, file id)`` of every planned slice."""
        return {s.file_group for g in self.groups for s in g.slices}

    def replaced(self) -> dict[str, list[str]]:
        """``partitionToReplaceFileIds``: the planned file groups by partition."""
        out: dict[str, list[str]] = {}
        for partition, file_id in sorted(self.file_groups()):
            out.setdefault(partition, []).append(file_id)
        return out

    def to_avro(self) -> bytes:
        """The ``HoodieRequestedReplaceMetadata`` Hudi writes."""
        storage = self.storage

        def full(partition: str, name: str) -> str:
            rel = posixpath.join(partition, name) if partition else name
            return storage.full_path(rel) if storage is not None else rel

        groups = [{
            "slices": [{
                "dataFilePath": full(s.partition_path, s.data_file) if s.data_file else "",
                "deltaFilePaths": [full(s.partition_path, n) for n in s.delta_files],
                "fileId": s.file_id, "partitionPath": s.partition_path,
                "bootstrapFilePath": "", "version": 1,
            } for s in g.slices],
            "metrics": dict(g.metrics), "numOutputFileGroups": g.num_output_file_groups,
            "version": 1,
        } for g in self.groups]
        plan = {
            "inputGroups": groups,
            "strategy": {"strategyClassName": self.strategy_class,
                         "strategyParams": dict(self.strategy_params), "version": 1},
            "extraMetadata": {**self.extra_metadata, SLICE_SIZES_KEY: json.dumps(
                {s.file_id: s.size for g in self.groups for s in g.slices}, sort_keys=True)},
            "version": self.version, "preserveHoodieMetadata": True,
        }
        record = {"operationType": CLUSTER_OPERATION, "clusteringPlan": plan,
                  "extraMetadata": {}, "version": 1}
        return write_avro_container(REQUESTED_REPLACE_SCHEMA, [record])

    @classmethod
    def parse(cls, data: bytes, instant: str | None = None) -> ClusteringPlan:
        """A plan from ``<ts>.replacecommit.requested`` (or ``.clustering.requested``).

        Raises:
            CorruptTableError: not a readable clustering plan; names ``instant``.
        """
        try:
            name, record = read_avro_container(data)
            if not name.endswith("HoodieRequestedReplaceMetadata"):
                raise ValueError(f"it holds a {name or 'non-record'}")
            plan: Any = record.get("clusteringPlan")
            if plan is None:
                raise ValueError("it has no clustering plan")
            strategy = plan.get("strategy") or {}
            extra = {str(k): str(v) for k, v in (plan.get("extraMetadata") or {}).items()}
            sizes = json.loads(extra.pop(SLICE_SIZES_KEY, "{}"))
            return cls(
                groups=[_group(g, sizes) for g in plan.get("inputGroups") or []],
                strategy_params={str(k): str(v)
                                 for k, v in (strategy.get("strategyParams") or {}).items()},
                strategy_class=str(strategy.get("strategyClassName") or EXECUTION_STRATEGY),
                extra_metadata=extra,
                version=int(plan.get("version") or 1),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            where = f" of instant {instant}" if instant else ""
            raise CorruptTableError(
                f"the clustering plan{where} is malformed ({exc}); the file is damaged: "
                "roll the instant back or restore the file from a copy") from None


def _group(record: Mapping[str, Any], sizes: Mapping[str, int]) -> ClusteringGroup:
    def name(path: str | None) -> str | None:
        return posixpath.basename(str(path)) if path else None

    slices = []
    for s in record.get("slices") or []:
        data = name(s.get("dataFilePath"))
        logs = tuple(posixpath.basename(str(p)) for p in s.get("deltaFilePaths") or [])
        base_instant = _base_instant(data, logs)
        file_id = str(s["fileId"])
        slices.append(SliceInfo(str(s.get("partitionPath") or ""), file_id,
                                base_instant, data, logs, int(sizes.get(file_id, 0))))
    return ClusteringGroup(slices, int(record.get("numOutputFileGroups") or 1),
                           {str(k): float(v) for k, v in (record.get("metrics") or {}).items()})


def _base_instant(data_file: str | None, logs: Sequence[str]) -> str:
    from hudisql.table.filenames import BaseFileName, LogFileName

    if data_file:
        parsed = BaseFileName.parse(data_file)
        if parsed is not None:
            return parsed.instant
    for log in logs:
        found = LogFileName.parse(log)
        if found is not None:
            return found.base_instant
    return ""


def is_clustering(timeline: Timeline, instant_time: str) -> bool:
    """True when the replacecommit (or clustering) at ``instant_time`` is a clustering: its
    requested file holds a clustering plan (an insert overwrite's is empty)."""
    for f in timeline.instant_files(instant_time):
        if f.action not in (Action.REPLACECOMMIT, Action.CLUSTERING) or not f.is_requested:
            continue
        if f.action == Action.CLUSTERING:
            return True
        content = timeline.read_content(f)
        if not content.startswith(b"Obj"):
            return False
        try:
            _, record = read_avro_container(content)
        except ValueError:
            return False
        return record.get("clusteringPlan") is not None
    return False


def pending_clusterings(timeline: Timeline) -> list[Instant]:
    """The pending clustering instants, oldest first."""
    return [i for i in timeline.pending([Action.REPLACECOMMIT, Action.CLUSTERING])
            if is_clustering(timeline, i.timestamp)]


def clustered_groups(timeline: Timeline) -> set[tuple[str, str]]:
    """``(partition, file id)`` of the file groups pending clusterings rewrite: writers
    place no inserts there (Hudi's small-file handling skips them too)."""
    from hudisql.table.log_compaction import file_groups_in_pending_services

    return file_groups_in_pending_services(timeline, (Action.REPLACECOMMIT, Action.CLUSTERING))


def clustering_plan(timeline: Timeline, instant_time: str) -> ClusteringPlan:
    """The plan of the clustering at ``instant_time``.

    Raises:
        CorruptTableError: no clustering plan at that instant, or a malformed one.
    """
    for f in timeline.instant_files(instant_time):
        if f.action in (Action.REPLACECOMMIT, Action.CLUSTERING) and f.is_requested:
            return ClusteringPlan.parse(timeline.read_content(f), f.file_name)
    raise CorruptTableError(
        f"no {instant_time}.replacecommit.requested on the timeline of table "
        f"{timeline.storage.base_uri}; SHOW CLUSTERING lists the clustering plans")


# -- planning ---------------------------------------------------------------------------------


def build_groups(candidates: Iterable[SliceInfo], settings: ClusteringSettings) -> (
        list[ClusteringGroup]):
    """Hudi's size-based grouping of the ``candidates`` (small slices of selected
    partitions): largest first, per partition, groups of at most ``max_bytes_per_group``."""
    by_partition: dict[str, list[SliceInfo]] = {}
    for s in candidates:
        if s.size < settings.small_file_limit and settings.selects(s.partition_path):
            by_partition.setdefault(s.partition_path, []).append(s)
    groups: list[ClusteringGroup] = []
    for partition in sorted(by_partition):
        current: list[SliceInfo] = []
        size = 0
        for s in sorted(by_partition[partition], key=lambda x: (-x.size, x.file_id)):
            if current and size + s.size > settings.max_bytes_per_group:
                groups.append(_new_group(current, settings))
                current, size = [], 0
            current.append(s)
            size += s.size
        if current:
            groups.append(_new_group(current, settings))
    keep = [g for g in groups if len(g.slices) > 1 or settings.sort_columns]
    return keep[:settings.max_num_groups]


def _new_group(slices: list[SliceInfo], settings: ClusteringSettings) -> ClusteringGroup:
    size = sum(s.size for s in slices)
    logs = [n for s in slices for n in s.delta_files]
    mb = size / _MB
    return ClusteringGroup(
        slices=list(slices),
        num_output_file_groups=max(1, math.ceil(size / settings.target_file_max_bytes)),
        metrics={"TOTAL_IO_READ_MB": mb, "TOTAL_IO_WRITE_MB": mb, "TOTAL_IO_MB": 2 * mb,
                 "TOTAL_LOG_FILES": float(len(logs)), "TOTAL_LOG_FILE_SIZE": 0.0},
    )


# -- execution --------------------------------------------------------------------------------


def new_file_id(instant_time: str, group_index: int, output_index: int) -> str:
    """The file id of one output file of a group: the same in every task attempt."""
    name = f"hudisql-clustering/{instant_time}/{group_index}/{output_index}"
    return f"{uuid.uuid5(uuid.NAMESPACE_URL, name)}-0"


def execute_group(
    storage: Storage,
    props: TableProperties,
    timeline: Timeline,
    group: ClusteringGroup,
    group_index: int,
    sort_columns: Sequence[str],
    layout: str,
    instant_time: str,
    write_token: str,
    avro_schema: str,
    compression: str,
) -> list[WriteStat]:
    """Write the rows of ``group``'s slices, merged and ordered, as new base files.

    Returns:
        One write stat per new file (empty when the slices hold no rows).

    Raises:
        TableServiceError: a planned file is gone.
    """
    arrow = avro_to_arrow(avro_schema)
    parts = []
    for s in group.slices:
        rows = read_file_slice(storage, props, timeline, planned_slice(storage, s.as_operation()),
                               as_of=instant_time)
        for f in arrow:
            if f.name not in rows.column_names:
                rows = rows.append_column(f, pa.nulls(rows.num_rows, f.type))
        parts.append(rows)
    rows = pa.concat_tables(parts, promote_options="permissive") if parts else None
    if rows is None or rows.num_rows == 0:
        return []
    rows, keyed = ordered(rows, sort_columns, layout)
    outputs = max(1, min(group.num_output_file_groups, rows.num_rows))
    if keyed is not None:
        cuts = cut_points(keyed, outputs)
    else:
        step = math.ceil(rows.num_rows / outputs)
        cuts = [i * step for i in range(1, outputs) if i * step < rows.num_rows]
    bounds = list(zip([0, *cuts], [*cuts, rows.num_rows], strict=True))

    def write(i: int) -> WriteStat:
        start, end = bounds[i]
        stat = write_base_file(
            storage, group.partition_path, new_file_id(instant_time, group_index, i),
            instant_time, write_token, rows.slice(start, end - start), avro_schema,
            compression=compression)
        stat.num_inserts = stat.num_writes  # every row is new to its file group, as in Hudi
        return stat

    chunks = list(range(len(bounds)))
    # Encoding and compression run in Arrow without the GIL: the files of a group are
    # written side by side on the task's cores.
    with ThreadPoolExecutor(max_workers=min(len(chunks), os.cpu_count() or 1)) as pool:
        return list(pool.map(write, chunks))


def clustering_metadata(stats: Iterable[WriteStat], plan: ClusteringPlan,
                        avro_schema: str) -> CommitMetadata:
    """The completed replacecommit's metadata (operation ``CLUSTER``)."""
    by_partition: dict[str, list[WriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    return CommitMetadata(
        partition_to_write_stats=by_partition,
        partition_to_replace_file_ids=plan.replaced(),
        compacted=False,
        extra_metadata={"schema": avro_schema},
        operation_type=CLUSTER_OPERATION,
    )


def stale_slices(current: Sequence[FileSlice], plan: ClusteringPlan) -> list[tuple[str, str]]:
    """Planned file groups whose latest slice is no longer the planned one (a write landed
    on them since the plan): clustering them would lose that write."""
    latest = {(s.partition_path, s.file_id): s for s in current}
    stale = []
    for group in plan.groups:
        for planned in group.slices:
            now = latest.get(planned.file_group)
            if now is None:
                stale.append(planned.file_group)
                continue
            names = ((now.base_file.name if now.base_file else None),
                     tuple(log.name for log in now.log_files))
            if names != (planned.data_file, planned.delta_files) or (
                    planned.size and now.total_size != planned.size):
                stale.append(planned.file_group)
    return sorted(stale)
