"""The plans and metadata of table services, as Hudi writes them: Avro object containers.

- ``HoodieCompactionPlan`` (plan version 2: log files by name) in
  ``<ts>.compaction.requested`` and ``<ts>.logcompaction.requested``;
- ``HoodieCleanerPlan`` in ``<ts>.clean.requested`` (and ``.clean.inflight``);
- ``HoodieCleanMetadata`` in the completed ``<ts>.clean``.

The schemas are Hudi 0.14/0.15's (``hudi-common/src/main/avro``), embedded below as data;
the container carries its schema, so readers resolve fields by name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hudisql.errors import CorruptTableError, TableServiceError
from hudisql.table.format.commit_metadata import read_avro_container, write_avro_container
from hudisql.table.format.fsview import FileSlice, LogFile
from hudisql.table.format.instant import Action, Instant, State
from hudisql.table.format.timeline import Timeline

__all__ = [
    "CLEANER_PLAN_SCHEMA",
    "CLEAN_METADATA_SCHEMA",
    "COMPACTION_PLAN_SCHEMA",
    "LOG_COMPACTION_EXECUTOR",
    "CleanFileInfo",
    "CleanMetadata",
    "CleanPartitionMetadata",
    "CleanerPlan",
    "CompactionOperation",
    "CompactionPlan",
    "CompactionStrategy",
    "clean_plan",
    "compaction_plan",
    "int_setting",
]

#: Plan version 2: ``deltaFilePaths`` and ``dataFilePath`` hold file names, not paths.
COMPACTION_PLAN_VERSION = 2
#: The execution helper Hudi's log compaction plans name.
LOG_COMPACTION_EXECUTOR = "org.apache.hudi.table.action.compact.LogCompactionExecutionHelper"
#: Cleaner plan version (``CleanPlanner.LATEST_CLEAN_PLAN_VERSION``).
CLEANER_PLAN_VERSION = 2
#: Clean metadata version (``CleanerUtils.LATEST_CLEAN_METADATA_VERSION``).
CLEAN_METADATA_VERSION = 2

_NS = "org.apache.hudi.avro.model"


def int_setting(options: Mapping[str, str], key: str, default: int, minimum: int,
                too_small: str = "") -> int:
    """A table service's integer setting ``key`` (``default`` when unset).

    Raises:
        TableServiceError: not an integer, or below ``minimum`` (``too_small`` says why
            that matters; the default message names the minimum).
    """
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise TableServiceError(f"{key}={raw!r} is not an integer") from None
    if value < minimum:
        raise TableServiceError(
            f"{key}={raw!r} {too_small or f'must be an integer of at least {minimum}'}")
    return value


def _opt(kind: Any, default: Any = None) -> dict[str, Any]:
    return {"type": ["null", kind], "default": default}


def _field(name: str, kind: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, **extra}


def _text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"))


COMPACTION_PLAN_SCHEMA = _text({
    "namespace": _NS, "type": "record", "name": "HoodieCompactionPlan",
    "fields": [
        _field("operations", ["null", {"type": "array", "items": {
            "name": "HoodieCompactionOperation", "type": "record", "fields": [
                _field("baseInstantTime", ["null", "string"]),
                {"name": "deltaFilePaths", **_opt({"type": "array", "items": "string"})},
                {"name": "dataFilePath", **_opt("string")},
                _field("fileId", ["null", "string"]),
                {"name": "partitionPath", **_opt("string")},
                {"name": "metrics", **_opt({"type": "map", "values": "double"})},
                {"name": "bootstrapFilePath", **_opt("string")},
            ]}}], default=None),
        {"name": "extraMetadata", **_opt({"type": "map", "values": "string"})},
        _field("version", ["int", "null"], default=1),
        {"name": "strategy", **_opt({
            "name": "HoodieCompactionStrategy", "type": "record", "fields": [
                {"name": "compactorClassName", **_opt("string")},
                {"name": "strategyParams", **_opt({"type": "map", "values": "string"})},
                _field("version", ["int", "null"], default=1),
            ]})},
        {"name": "preserveHoodieMetadata", **_opt("boolean")},
    ],
})

CLEANER_PLAN_SCHEMA = _text({
    "namespace": _NS, "type": "record", "name": "HoodieCleanerPlan",
    "fields": [
        {"name": "earliestInstantToRetain", **_opt({
            "type": "record", "name": "HoodieActionInstant", "fields": [
                _field("timestamp", "string"), _field("action", "string"),
                _field("state", "string"),
            ]})},
        _field("policy", "string"),
        {"name": "filesToBeDeletedPerPartition",
         **_opt({"type": "map", "values": {"type": "array", "items": "string"}})},
        _field("version", ["int", "null"], default=1),
        {"name": "filePathsToBeDeletedPerPartition", **_opt({
            "type": "map", "values": {"type": "array", "items": {
                "name": "HoodieCleanFileInfo", "type": "record", "fields": [
                    {"name": "filePath", **_opt("string")},
                    {"name": "isBootstrapBaseFile", **_opt("boolean")},
                ]}}})},
        {"name": "partitionsToBeDeleted", **_opt({"type": "array", "items": "string"})},
    ],
})

_CLEAN_PARTITION = {
    "namespace": _NS, "type": "record", "name": "HoodieCleanPartitionMetadata",
    "fields": [
        _field("partitionPath", "string"), _field("policy", "string"),
        _field("deletePathPatterns", {"type": "array", "items": "string"}),
        _field("successDeleteFiles", {"type": "array", "items": "string"}),
        _field("failedDeleteFiles", {"type": "array", "items": "string"}),
        {"name": "isPartitionDeleted", **_opt("boolean")},
    ],
}

CLEAN_METADATA_SCHEMA = _text({
    "namespace": _NS, "type": "record", "name": "HoodieCleanMetadata",
    "fields": [
        _field("policy", "string", default=""),
        _field("startCleanTime", "string"),
        _field("timeTakenInMillis", "long"),
        _field("totalFilesDeleted", "int"),
        _field("earliestCommitToRetain", "string"),
        _field("lastCompletedCommitTimestamp", "string", default=""),
        _field("partitionMetadata", {"type": "map", "values": _CLEAN_PARTITION}),
        _field("version", ["int", "null"], default=1),
        {"name": "bootstrapPartitionMetadata",
         **_opt({"type": "map", "values": "HoodieCleanPartitionMetadata"})},
    ],
})


def _malformed(kind: str, instant: str | None, error: Exception) -> CorruptTableError:
    where = f" of instant {instant}" if instant else ""
    return CorruptTableError(
        f"the {kind}{where} is malformed ({error}); the file is damaged: roll the instant "
        "back or restore the file from a copy"
    )


def _read(data: bytes, record: str, kind: str, instant: str | None) -> dict[str, Any]:
    try:
        name, content = read_avro_container(data)
    except ValueError as exc:
        raise _malformed(kind, instant, exc) from None
    if not name.endswith(record):
        raise _malformed(kind, instant, ValueError(f"it holds a {name or 'non-record'}"))
    return content


# -- compaction plans ----------------------------------------------------------------------


@dataclass
class CompactionOperation:
    """One file slice of a (log) compaction plan (``HoodieCompactionOperation``).

    ``delta_file_paths`` are log file names (plan version 2), in log order;
    ``data_file_path`` the base file's name (None for a slice without one).
    """

    file_id: str
    partition_path: str
    base_instant_time: str
    delta_file_paths: list[str] = field(default_factory=list)
    data_file_path: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    bootstrap_file_path: str | None = None

    @property
    def file_group(self) -> tuple[str, str]:
        """``(partition, file id)`` of the slice's file group."""
        return (self.partition_path, self.file_id)

    @classmethod
    def of_slice(cls, file_slice: FileSlice, logs: Sequence[LogFile],
                 read_mb: float, write_mb: float) -> CompactionOperation:
        """The operation over ``logs`` of ``file_slice`` (and its base file), with Hudi's
        metrics; ``read_mb``/``write_mb`` beyond the logs' own size are the caller's."""
        size = float(sum(log.size for log in logs))
        base = file_slice.base_file
        return cls(
            file_id=file_slice.file_id,
            partition_path=file_slice.partition_path,
            base_instant_time=file_slice.base_instant,
            delta_file_paths=[log.name for log in logs],
            data_file_path=base.name if base is not None else None,
            metrics={
                "TOTAL_LOG_FILES": float(len(logs)),
                "TOTAL_LOG_FILES_SIZE": size,
                "TOTAL_IO_READ_MB": read_mb,
                "TOTAL_IO_WRITE_MB": write_mb,
                "TOTAL_IO_MB": read_mb + write_mb,
            },
        )

    def to_record(self) -> dict[str, Any]:
        """The Avro record."""
        return {
            "baseInstantTime": self.base_instant_time,
            "deltaFilePaths": list(self.delta_file_paths),
            "dataFilePath": self.data_file_path,
            "fileId": self.file_id,
            "partitionPath": self.partition_path,
            "metrics": dict(self.metrics),
            "bootstrapFilePath": self.bootstrap_file_path,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> CompactionOperation:
        """From the Avro record (plan version 1 paths are cut to their names)."""
        def name(p: str) -> str:
            return p.rsplit("/", 1)[-1]

        data = record.get("dataFilePath")
        return cls(
            file_id=str(record["fileId"]),
            partition_path=str(record.get("partitionPath") or ""),
            base_instant_time=str(record.get("baseInstantTime") or ""),
            delta_file_paths=[name(str(p)) for p in record.get("deltaFilePaths") or []],
            data_file_path=name(str(data)) if data else None,
            metrics={str(k): float(v) for k, v in (record.get("metrics") or {}).items()},
            bootstrap_file_path=record.get("bootstrapFilePath"),
        )


@dataclass
class CompactionStrategy:
    """The executor a plan names (``HoodieCompactionStrategy``)."""

    compactor_class_name: str | None = None
    strategy_params: dict[str, str] = field(default_factory=dict)
    version: int = 1


@dataclass
class CompactionPlan:
    """A compaction or log compaction plan (``HoodieCompactionPlan``)."""

    operations: list[CompactionOperation] = field(default_factory=list)
    extra_metadata: dict[str, str] = field(default_factory=dict)
    version: int = COMPACTION_PLAN_VERSION
    strategy: CompactionStrategy | None = None
    preserve_hoodie_metadata: bool | None = None

    def to_avro(self) -> bytes:
        """The plan as Hudi writes it."""
        strategy = None
        if self.strategy is not None:
            strategy = {
                "compactorClassName": self.strategy.compactor_class_name,
                "strategyParams": dict(self.strategy.strategy_params),
                "version": self.strategy.version,
            }
        record = {
            "operations": [op.to_record() for op in self.operations],
            "extraMetadata": dict(self.extra_metadata),
            "version": self.version,
            "strategy": strategy,
            "preserveHoodieMetadata": self.preserve_hoodie_metadata,
        }
        return write_avro_container(COMPACTION_PLAN_SCHEMA, [record])

    @classmethod
    def parse(cls, data: bytes, instant: str | None = None) -> CompactionPlan:
        """A plan from its Avro container.

        Raises:
            CorruptTableError: not a readable ``HoodieCompactionPlan``; names ``instant``.
        """
        record = _read(data, "HoodieCompactionPlan", "compaction plan", instant)
        try:
            raw = record.get("strategy")
            strategy = None if raw is None else CompactionStrategy(
                raw.get("compactorClassName"), dict(raw.get("strategyParams") or {}),
                int(raw.get("version") or 1),
            )
            return cls(
                operations=[CompactionOperation.from_record(op)
                            for op in record.get("operations") or []],
                extra_metadata={str(k): str(v)
                                for k, v in (record.get("extraMetadata") or {}).items()},
                version=int(record.get("version") or 1),
                strategy=strategy,
                preserve_hoodie_metadata=record.get("preserveHoodieMetadata"),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise _malformed("compaction plan", instant, exc) from None

    def file_groups(self) -> set[tuple[str, str]]:
        """``(partition, file id)`` of every operation."""
        return {(op.partition_path, op.file_id) for op in self.operations}


def _requested(timeline: Timeline, instant_time: str, action: str) -> Instant | None:
    for f in timeline.instant_files(instant_time):
        if f.action == action and f.is_requested:
            return f
    return None


def compaction_plan(timeline: Timeline, instant_time: str,
                    action: str = Action.COMPACTION) -> CompactionPlan:
    """The plan of the compaction (or ``logcompaction``) at ``instant_time``.

    Raises:
        CorruptTableError: no such plan on the timeline, or a malformed one.
    """
    found = _requested(timeline, instant_time, action)
    if found is None:
        raise CorruptTableError(
            f"no {instant_time}.{action}.requested on the timeline of table "
            f"{timeline.storage.base_uri}; SHOW TIMELINE lists the pending plans"
        )
    return CompactionPlan.parse(timeline.read_content(found), found.file_name)


# -- clean -----------------------------------------------------------------------------------


@dataclass
class CleanFileInfo:
    """One file a clean deletes (``HoodieCleanFileInfo``): its full path."""

    file_path: str
    is_bootstrap_base_file: bool = False


@dataclass
class CleanerPlan:
    """A clean plan (``HoodieCleanerPlan``): the files to delete, by partition."""

    policy: str
    earliest_instant_to_retain: Instant | None = None
    file_paths_to_be_deleted_per_partition: dict[str, list[CleanFileInfo]] = field(
        default_factory=dict)
    partitions_to_be_deleted: list[str] = field(default_factory=list)
    version: int = CLEANER_PLAN_VERSION

    def to_avro(self) -> bytes:
        """The plan as Hudi writes it."""
        earliest = self.earliest_instant_to_retain
        record = {
            "earliestInstantToRetain": None if earliest is None else {
                "timestamp": earliest.timestamp, "action": earliest.action,
                "state": earliest.state.value,
            },
            "policy": self.policy,
            "filesToBeDeletedPerPartition": None,
            "version": self.version,
            "filePathsToBeDeletedPerPartition": {
                p: [{"filePath": f.file_path, "isBootstrapBaseFile": f.is_bootstrap_base_file}
                    for f in files]
                for p, files in self.file_paths_to_be_deleted_per_partition.items()
            },
            "partitionsToBeDeleted": list(self.partitions_to_be_deleted),
        }
        return write_avro_container(CLEANER_PLAN_SCHEMA, [record])

    @classmethod
    def parse(cls, data: bytes, instant: str | None = None) -> CleanerPlan:
        """A plan from its Avro container.

        Raises:
            CorruptTableError: not a readable ``HoodieCleanerPlan``; names ``instant``.
        """
        record = _read(data, "HoodieCleanerPlan", "cleaner plan", instant)
        try:
            raw = record.get("earliestInstantToRetain")
            earliest = None
            if raw is not None:
                earliest = Instant(str(raw["timestamp"]), str(raw["action"]),
                                   State(str(raw["state"])))
            files = {
                str(p): [CleanFileInfo(str(f["filePath"]), bool(f.get("isBootstrapBaseFile")))
                         for f in infos]
                for p, infos in (record.get("filePathsToBeDeletedPerPartition") or {}).items()
            }
            for p, paths in (record.get("filesToBeDeletedPerPartition") or {}).items():
                files.setdefault(str(p), []).extend(CleanFileInfo(str(x)) for x in paths)
            return cls(
                policy=str(record["policy"]), earliest_instant_to_retain=earliest,
                file_paths_to_be_deleted_per_partition=files,
                partitions_to_be_deleted=[str(p) for p in
                                          record.get("partitionsToBeDeleted") or []],
                version=int(record.get("version") or 1),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise _malformed("cleaner plan", instant, exc) from None

    def file_count(self) -> int:
        """How many files the plan deletes."""
        return sum(len(f) for f in self.file_paths_to_be_deleted_per_partition.values())


@dataclass
class CleanPartitionMetadata:
    """What a clean did in one partition (``HoodieCleanPartitionMetadata``)."""

    partition_path: str
    policy: str
    delete_path_patterns: list[str] = field(default_factory=list)
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    is_partition_deleted: bool = False


@dataclass
class CleanMetadata:
    """The content of a completed ``<ts>.clean`` (``HoodieCleanMetadata``)."""

    policy: str
    start_clean_time: str
    earliest_commit_to_retain: str
    last_completed_commit_timestamp: str = ""
    time_taken_in_millis: int = 0
    partition_metadata: dict[str, CleanPartitionMetadata] = field(default_factory=dict)
    version: int = CLEAN_METADATA_VERSION

    @property
    def total_files_deleted(self) -> int:
        """Files deleted, over every partition."""
        return sum(len(p.success_delete_files) for p in self.partition_metadata.values())

    def to_avro(self) -> bytes:
        """The metadata as Hudi writes it."""
        record = {
            "policy": self.policy,
            "startCleanTime": self.start_clean_time,
            "timeTakenInMillis": self.time_taken_in_millis,
            "totalFilesDeleted": self.total_files_deleted,
            "earliestCommitToRetain": self.earliest_commit_to_retain,
            "lastCompletedCommitTimestamp": self.last_completed_commit_timestamp,
            "partitionMetadata": {
                p: {
                    "partitionPath": m.partition_path, "policy": m.policy,
                    "deletePathPatterns": list(m.delete_path_patterns),
                    "successDeleteFiles": list(m.success_delete_files),
                    "failedDeleteFiles": list(m.failed_delete_files),
                    "isPartitionDeleted": m.is_partition_deleted,
                }
                for p, m in self.partition_metadata.items()
            },
            "version": self.version,
            "bootstrapPartitionMetadata": None,
        }
        return write_avro_container(CLEAN_METADATA_SCHEMA, [record])

    @classmethod
    def parse(cls, data: bytes, instant: str | None = None) -> CleanMetadata:
        """Clean metadata from its Avro container.

        Raises:
            CorruptTableError: not a readable ``HoodieCleanMetadata``; names ``instant``.
        """
        record = _read(data, "HoodieCleanMetadata", "clean metadata", instant)
        try:
            return cls(
                policy=str(record.get("policy") or ""),
                start_clean_time=str(record["startCleanTime"]),
                earliest_commit_to_retain=str(record["earliestCommitToRetain"]),
                last_completed_commit_timestamp=str(
                    record.get("lastCompletedCommitTimestamp") or ""),
                time_taken_in_millis=int(record["timeTakenInMillis"]),
                partition_metadata={
                    str(p): CleanPartitionMetadata(
                        str(m["partitionPath"]), str(m["policy"]),
                        [str(x) for x in m["deletePathPatterns"]],
                        [str(x) for x in m["successDeleteFiles"]],
                        [str(x) for x in m["failedDeleteFiles"]],
                        bool(m.get("isPartitionDeleted")),
                    )
                    for p, m in record["partitionMetadata"].items()
                },
                version=int(record.get("version") or 1),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise _malformed("clean metadata", instant, exc) from None


def clean_plan(timeline: Timeline, instant_time: str) -> CleanerPlan:
    """The plan of the clean at ``instant_time`` (its ``.clean.requested``).

    Raises:
        CorruptTableError: no such plan, or a malformed one.
    """
    found = _requested(timeline, instant_time, Action.CLEAN)
    if found is None:
        raise CorruptTableError(
            f"no {instant_time}.clean.requested on the timeline of table "
            f"{timeline.storage.base_uri}; SHOW TIMELINE lists the pending cleans"
        )
    return CleanerPlan.parse(timeline.read_content(found), found.file_name)
