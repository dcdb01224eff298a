"""Clustering in the table core: settings, plan strategy, the work on one group (the plan's
format and where clusterings are on the timeline: ``hudisql.table.services.clustering_plan``).

**Plan.** Hudi's size-based plan strategy: the latest slices smaller than
``hoodie.clustering.plan.strategy.small.file.limit`` in the selected partitions, outside
file groups a pending compaction, log compaction or clustering holds, largest first, packed
per partition into groups of at most ``...max.bytes.per.group`` (at most ``...max.num.groups``
groups), each to be written as ``ceil(bytes / ...target.file.max.bytes)`` new file groups.
A group of one slice is planned only when the rows are to be sorted. The plan is Hudi's
``HoodieRequestedReplaceMetadata`` (operation ``CLUSTER``) holding a
``HoodieClusteringPlan``, in ``<ts>.replacecommit.requested`` (table version 6).

**Execution.** :func:`execute_group` reads each planned slice merged (base file and log
files, as a reader sees them), orders the rows (``hudisql.table.services.layout``) and
writes them as new base files in new file groups; records keep ``_hoodie_commit_time`` and
``_hoodie_commit_seqno`` (``preserveHoodieMetadata``). The instant completes as a
``replacecommit`` whose ``partitionToReplaceFileIds`` names the planned file groups.
"""

from __future__ import annotations

import math
import os
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from hudisql.errors import TableServiceError
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.schema import avro_to_arrow
from hudisql.table.format.service_plans import int_setting
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.merge import read_file_slice
from hudisql.table.services.clustering_plan import (
    CLUSTER_OPERATION,
    EXECUTION_STRATEGY,
    LAYOUT_STRATEGY,
    SORT_COLUMNS,
    ClusteringGroup,
    ClusteringPlan,
    SliceInfo,
    clustered_groups,
    clustering_plan,
    is_clustering,
    pending_clusterings,
)
from hudisql.table.services.compaction import planned_slice
from hudisql.table.services.layout import cut_points, layout_strategy, ordered
from hudisql.table.write.files import write_base_file

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

PLAN_STRATEGY = (
    "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy")

SMALL_FILE_LIMIT = "hoodie.clustering.plan.strategy.small.file.limit"
TARGET_FILE_MAX_BYTES = "hoodie.clustering.plan.strategy.target.file.max.bytes"
MAX_BYTES_PER_GROUP = "hoodie.clustering.plan.strategy.max.bytes.per.group"
MAX_NUM_GROUPS = "hoodie.clustering.plan.strategy.max.num.groups"
PARTITION_SELECTED = "hoodie.clustering.plan.strategy.partition.selected"
PARTITION_REGEX = "hoodie.clustering.plan.strategy.partition.regex.pattern"
BEGIN_PARTITION = "hoodie.clustering.plan.strategy.cluster.begin.partition"
END_PARTITION = "hoodie.clustering.plan.strategy.cluster.end.partition"
FILTER_MODE = "hoodie.clustering.plan.partition.filter.mode"
PLAN_STRATEGY_CLASS = "hoodie.clustering.plan.strategy.class"
EXECUTION_STRATEGY_CLASS = "hoodie.clustering.execution.strategy.class"
#: Filter modes hudisql carries out (Hudi's RECENT_DAYS/DAY_ROLLING need date partitions).
FILTER_MODES = ("NONE", "SELECTED_PARTITIONS")

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
