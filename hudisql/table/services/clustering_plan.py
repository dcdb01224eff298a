"""The clustering plan as Hudi writes it, and where clusterings are on the timeline.

A version-6 clustering is a ``replacecommit`` whose ``<ts>.replacecommit.requested`` holds
an Avro container of ``HoodieRequestedReplaceMetadata`` (operation ``CLUSTER``) with its
``HoodieClusteringPlan`` (hudi-common/src/main/avro; the schemas are embedded below as
data); an insert overwrite's requested file is empty, which tells the two apart. Version 8
and up name the action ``clustering``.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hudisql.errors import CorruptTableError
from hudisql.table.format.commit_metadata import read_avro_container, write_avro_container
from hudisql.table.format.fsview import FileSlice
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.service_plans import CompactionOperation
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.services.layout import layout_strategy

__all__ = [
    "CLUSTER_OPERATION",
    "EXECUTION_STRATEGY",
    "LAYOUT_STRATEGY",
    "REQUESTED_REPLACE_SCHEMA",
    "SLICE_SIZES_KEY",
    "SORT_COLUMNS",
    "ClusteringGroup",
    "ClusteringPlan",
    "SliceInfo",
    "clustered_groups",
    "clustering_plan",
    "is_clustering",
    "pending_clusterings",
]

#: ``operationType`` of a clustering's requested metadata and completed replacecommit.
CLUSTER_OPERATION = "CLUSTER"
#: The execution strategy Hudi's Spark clustering plans name.
EXECUTION_STRATEGY = (
    "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy")
SORT_COLUMNS = "hoodie.clustering.plan.strategy.sort.columns"
LAYOUT_STRATEGY = "hoodie.layout.optimize.strategy"
_NS = "org.apache.hudi.avro.model"
#: hudisql's key in the plan's ``extraMetadata``: each planned slice's bytes, so the commit
#: can tell a slice a writer appended to since (other readers ignore it).
SLICE_SIZES_KEY = "hudisql.sliceSizes"


def _names(raw: str | None) -> tuple[str, ...]:
    return tuple(n.strip() for n in str(raw or "").split(",") if n.strip())


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
    from hudisql.table.format.filenames import BaseFileName, LogFileName

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
    from hudisql.table.services.log_compaction import file_groups_in_pending_services

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
