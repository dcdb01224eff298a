"""Commit metadata: what a completed write instant wrote, file group by file group.

Version 6 tables keep it as JSON (Jackson's rendering of ``HoodieCommitMetadata``);
versions 8 and 9 as an Avro object container of the same record. Both parse into
:class:`CommitMetadata`; we write the v6 JSON, keyed and shaped like Hudi's.
Rollback plans (``.rollback.requested``) and rollback metadata (``.rollback``) are Avro
containers in every version; we write them with Hudi's own schemas, embedded below as data.
"""

from __future__ import annotations

import functools
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import fastavro

from hudisql.errors import CorruptTableError

#: Hudi's ``prevCommit`` of a file group's first write: the text "null".
NULL_COMMIT = "null"

AVRO_MAGIC = b"Obj\x01"

# JSON key -> WriteStat attribute, for the keys WriteStat names.
_NAMED = {
    "fileId": "file_id",
    "path": "path",
    "prevCommit": "prev_commit",
    "numWrites": "num_writes",
    "numDeletes": "num_deletes",
    "numUpdateWrites": "num_update_writes",
    "numInserts": "num_inserts",
    "totalWriteBytes": "total_write_bytes",
    "totalWriteErrors": "total_write_errors",
    "partitionPath": "partition_path",
    "fileSizeInBytes": "file_size_in_bytes",
    "logVersion": "log_version",
    "logOffset": "log_offset",
    "baseFile": "base_file",
    "logFiles": "log_files",
}
_COUNTS = {"numWrites", "numDeletes", "numUpdateWrites", "numInserts", "totalWriteBytes",
           "totalWriteErrors", "fileSizeInBytes"}
_OPTIONAL_TEXT = {"path", "prevCommit", "partitionPath", "baseFile"}

# Jackson's key order for HoodieWriteStat, then the keys HoodieDeltaWriteStat adds, with the
# values Hudi writes when it has nothing to say (these are not WriteStat attributes).
_WRITE_STAT_LAYOUT: list[tuple[str, Any]] = [
    ("fileId", None), ("path", None), ("cdcStats", None), ("prevCommit", None),
    ("numWrites", None), ("numDeletes", None), ("numUpdateWrites", None), ("numInserts", None),
    ("totalWriteBytes", None), ("totalWriteErrors", None), ("tempPath", None),
    ("partitionPath", None), ("totalLogRecords", 0), ("totalLogFilesCompacted", 0),
    ("totalLogSizeCompacted", 0), ("totalUpdatedRecordsCompacted", 0), ("totalLogBlocks", 0),
    ("totalCorruptLogBlock", 0), ("totalRollbackBlocks", 0), ("fileSizeInBytes", None),
    ("minEventTime", None), ("maxEventTime", None),
    ("runtimeStats", {"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": 0}),
]
_DELTA_STAT_LAYOUT: list[tuple[str, Any]] = [
    ("logVersion", None), ("logOffset", None), ("baseFile", None), ("logFiles", None),
    ("recordsStats", {"val": None}),
]
_COMMIT_METADATA_RECORDS = ("HoodieCommitMetadata", "HoodieReplaceCommitMetadata")


@dataclass
class WriteStat:
    """What one write did to one file of one file group (a base file or a log file).

    ``log_version`` is set for the stats of log files (Hudi's ``HoodieDeltaWriteStat``),
    which also carry ``log_offset``, ``base_file`` and ``log_files``. Keys this class does not
    name are kept in ``extra`` and written back.
    """

    file_id: str = ""
    path: str | None = None
    prev_commit: str | None = NULL_COMMIT
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    partition_path: str | None = None
    file_size_in_bytes: int = 0
    log_version: int | None = None
    log_offset: int | None = None
    base_file: str | None = None
    log_files: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_delta(self) -> bool:
        """True for the stat of a log file (written with the delta-stat keys)."""
        return bool(self.log_files) or any(
            v is not None for v in (self.log_version, self.log_offset, self.base_file)
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WriteStat:
        """A write stat from its JSON object or Avro record.

        Raises:
            ValueError: a value of the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"a write stat is {type(data).__name__}, not an object")
        stat = cls()
        for key, value in data.items():
            attr = _NAMED.get(key)
            if attr is None:
                stat.extra[key] = value
            elif key in _COUNTS:
                setattr(stat, attr, _as_int(key, value, 0))
            elif key in _OPTIONAL_TEXT:
                setattr(stat, attr, _as_text(key, value))
            elif key == "fileId":
                stat.file_id = _as_text(key, value) or ""
            elif key in ("logVersion", "logOffset"):
                setattr(stat, attr, _as_int(key, value, None))
            else:  # logFiles
                if value is not None and not (
                    isinstance(value, list) and all(isinstance(v, str) for v in value)
                ):
                    raise ValueError(f"logFiles is {value!r}, not a list of file names")
                stat.log_files = list(value or [])
        # Keys holding what to_dict writes anyway are not kept: a parsed stat then equals
        # the one that was written, and writing it again gives the same JSON.
        for key, default in stat._layout():
            if key not in _NAMED and key in stat.extra and stat.extra[key] == default:
                del stat.extra[key]
        return stat

    def _layout(self) -> list[tuple[str, Any]]:
        return _WRITE_STAT_LAYOUT + (_DELTA_STAT_LAYOUT if self.is_delta else [])

    def to_dict(self) -> dict[str, Any]:
        """The JSON object Hudi writes for this stat (same keys, same order)."""
        out: dict[str, Any] = {}
        for key, default in self._layout():
            if key in _NAMED:
                out[key] = getattr(self, _NAMED[key])
            elif key in self.extra:
                out[key] = self.extra[key]
            else:
                out[key] = json.loads(json.dumps(default))  # a fresh copy of the default
        for key, value in self.extra.items():
            if key not in out and key not in _NAMED:
                out[key] = value
        return out


def _as_int(key: str, value: Any, default: int | None) -> Any:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} is {value!r}, not a whole number")
    return value


def _or_empty(value: Any) -> Any:
    return {} if value is None else value


def _as_text(key: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} is {value!r}, not text")
    return value


@dataclass
class CommitMetadata:
    """The metadata of a commit, deltacommit or replacecommit: its write stats and more.

    ``extra_metadata["schema"]`` is the table's Avro schema as of the commit.
    ``partition_to_replace_file_ids`` lists the file groups a replacecommit replaced.
    """

    partition_to_write_stats: dict[str, list[WriteStat]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str | None = "UNKNOWN"
    partition_to_replace_file_ids: dict[str, list[str]] = field(default_factory=dict)

    @property
    def schema(self) -> str | None:
        """The writer schema (Avro JSON) recorded with the commit, or None."""
        return self.extra_metadata.get("schema") or None

    def write_stats(self) -> list[WriteStat]:
        """Every write stat of every partition, in file order."""
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def file_ids(self) -> set[str]:
        """The ids of the file groups the commit wrote to."""
        return {s.file_id for s in self.write_stats() if s.file_id}

    def add_write_stat(self, stat: WriteStat) -> None:
        """Append ``stat`` under its partition path."""
        self.partition_to_write_stats.setdefault(stat.partition_path or "", []).append(stat)

    @classmethod
    def parse(cls, data: bytes, instant: str | None = None) -> CommitMetadata:
        """Commit metadata from an instant file: v6 JSON or a v8/v9 Avro container.

        Empty content (a requested instant) gives empty metadata, as in Hudi.

        Raises:
            CorruptTableError: the content is neither, or not commit metadata; names
                ``instant`` when given.
        """
        if not data.strip():
            return cls()
        try:
            if data.startswith(AVRO_MAGIC):
                name, record = read_avro_container(data)
                if name.rsplit(".", 1)[-1] not in _COMMIT_METADATA_RECORDS:
                    raise ValueError(f"it holds a {name}, not commit metadata")
            else:
                record = json.loads(data.decode("utf-8"))
            return cls.from_dict(record)
        except (ValueError, TypeError, EOFError, UnicodeDecodeError, KeyError) as e:
            where = f"of instant {instant} " if instant else ""
            raise CorruptTableError(
                f"the commit metadata {where}is malformed ({e}); the file is damaged: restore "
                "it from a copy (Hudi cannot read this instant either)"
            ) from None

    @classmethod
    def from_dict(cls, data: Any) -> CommitMetadata:
        """Commit metadata from its JSON object or Avro record.

        Raises:
            ValueError: a part of the wrong shape.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"the content is a JSON {type(data).__name__}, not an object")
        # Hudi writes null for an empty part; anything else must be an object.
        stats = _or_empty(data.get("partitionToWriteStats"))
        replaced = _or_empty(data.get("partitionToReplaceFileIds"))
        extra = _or_empty(data.get("extraMetadata"))
        if not isinstance(stats, Mapping) or not all(isinstance(v, list) for v in stats.values()):
            raise ValueError("partitionToWriteStats is not an object of lists")
        if not isinstance(replaced, Mapping) or not isinstance(extra, Mapping):
            raise ValueError("partitionToReplaceFileIds or extraMetadata is not an object")
        operation = data.get("operationType")
        return cls(
            partition_to_write_stats={
                str(p): [WriteStat.from_dict(s) for s in lst] for p, lst in stats.items()
            },
            compacted=bool(data.get("compacted") or False),
            extra_metadata={str(k): str(v) for k, v in extra.items() if v is not None},
            operation_type=None if operation is None else str(operation),
            partition_to_replace_file_ids={str(p): list(ids) for p, ids in replaced.items()},
        )

    def to_dict(self, replace: bool | None = None) -> dict[str, Any]:
        """The JSON object Hudi 0.14 writes (``partitionToReplaceFileIds`` for a replacecommit:
        when ``replace`` is True, or when None and some file group was replaced)."""
        out: dict[str, Any] = {
            "partitionToWriteStats": {
                p: [stat.to_dict() for stat in stats]
                for p, stats in self.partition_to_write_stats.items()
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }
        if replace or (replace is None and self.partition_to_replace_file_ids):
            out["partitionToReplaceFileIds"] = {
                p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()
            }
        return out

    def to_json(self, replace: bool | None = None) -> bytes:
        """The v6 JSON of this metadata (UTF-8), shaped like Hudi's."""
        text = json.dumps(self.to_dict(replace), indent=2, separators=(",", " : "))
        return text.encode("utf-8")




# ---------------------------------------------------------------------------------------------
# Avro object containers, written as Hudi writes them (only ``avro.schema`` in the header,
# no codec), so that the schema text is byte for byte Hudi's.

#: Hudi's ``HoodieRollbackPlan`` schema, as found in a ``.rollback.requested`` Hudi wrote.
ROLLBACK_PLAN_SCHEMA = (
    '{"type":"record","name":"HoodieRollbackPlan","namespace":"org.apache.hudi.avro.model","fie'
    'lds":[{"name":"instantToRollback","type":["null",{"type":"record","name":"HoodieInstantInf'
    'o","fields":[{"name":"commitTime","type":{"type":"string","avro.java.string":"String"}},{"'
    'name":"action","type":{"type":"string","avro.java.string":"String"}}]}],"doc":"Hoodie inst'
    'ant that needs to be rolled back","default":null},{"name":"RollbackRequests","type":["null'
    '",{"type":"array","items":{"type":"record","name":"HoodieRollbackRequest","fields":[{"name'
    '":"partitionPath","type":{"type":"string","avro.java.string":"String"}},{"name":"fileId","'
    'type":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"late'
    'stBaseInstant","type":["null",{"type":"string","avro.java.string":"String"}],"default":nul'
    'l},{"name":"filesToBeDeleted","type":{"type":"array","items":{"type":"string","avro.java.s'
    'tring":"String"},"default":[]},"default":[]},{"name":"logBlocksToBeDeleted","type":["null"'
    ',{"type":"map","values":"long","avro.java.string":"String"}],"default":null}]}}],"default"'
    ':null},{"name":"version","type":["int","null"],"default":1}]}'
)

#: Hudi's ``HoodieRollbackMetadata`` schema, as found in a ``.rollback`` Hudi wrote.
ROLLBACK_METADATA_SCHEMA = (
    '{"type":"record","name":"HoodieRollbackMetadata","namespace":"org.apache.hudi.avro.model",'
    '"fields":[{"name":"startRollbackTime","type":{"type":"string","avro.java.string":"String"}'
    '},{"name":"timeTakenInMillis","type":"long"},{"name":"totalFilesDeleted","type":"int"},{"n'
    'ame":"commitsRollback","type":{"type":"array","items":{"type":"string","avro.java.string":'
    '"String"}}},{"name":"partitionMetadata","type":{"type":"map","values":{"type":"record","na'
    'me":"HoodieRollbackPartitionMetadata","fields":[{"name":"partitionPath","type":{"type":"st'
    'ring","avro.java.string":"String"}},{"name":"successDeleteFiles","type":{"type":"array","i'
    'tems":{"type":"string","avro.java.string":"String"}}},{"name":"failedDeleteFiles","type":{'
    '"type":"array","items":{"type":"string","avro.java.string":"String"}}},{"name":"rollbackLo'
    'gFiles","type":["null",{"type":"map","values":"long","avro.java.string":"String"}],"defaul'
    't":null},{"name":"logFilesFromFailedCommit","type":["null",{"type":"map","values":"long","'
    'avro.java.string":"String"}],"default":null}]},"avro.java.string":"String"}},{"name":"vers'
    'ion","type":["int","null"],"default":1},{"name":"instantsRollback","type":{"type":"array",'
    '"items":{"type":"record","name":"HoodieInstantInfo","fields":[{"name":"commitTime","type":'
    '{"type":"string","avro.java.string":"String"}},{"name":"action","type":{"type":"string","a'
    'vro.java.string":"String"}}]},"default":[]},"default":[]}]}'
)

_HEADER_SCHEMA = fastavro.parse_schema({"type": "map", "values": "bytes"})
_LONG_SCHEMA = fastavro.parse_schema("long")


@functools.lru_cache(maxsize=32)
def _parsed_schema(schema: str) -> Any:
    """``schema`` parsed once (parsing dominates writing a small container)."""
    return fastavro.parse_schema(json.loads(schema))


def write_avro_container(schema: str, records: list[dict[str, Any]]) -> bytes:
    """An Avro object container of ``records`` in ``schema`` (JSON text kept verbatim).

    Raises:
        ValueError: a record does not fit the schema.
    """
    parsed = _parsed_schema(schema)
    body = io.BytesIO()
    for record in records:
        fastavro.schemaless_writer(body, parsed, record)
    out = io.BytesIO()
    out.write(AVRO_MAGIC)
    fastavro.schemaless_writer(out, _HEADER_SCHEMA, {"avro.schema": schema.encode("utf-8")})
    sync = os.urandom(16)
    out.write(sync)
    if records:
        fastavro.schemaless_writer(out, _LONG_SCHEMA, len(records))
        fastavro.schemaless_writer(out, _LONG_SCHEMA, len(body.getvalue()))
        out.write(body.getvalue())
        out.write(sync)
    return out.getvalue()


def read_avro_container(data: bytes) -> tuple[str, dict[str, Any]]:
    """The record name and the one record of an Avro object container.

    Raises:
        ValueError: not a readable container, or not exactly one record in it.
    """
    try:
        reader = fastavro.reader(io.BytesIO(data))
        schema = reader.writer_schema
        records = list(reader)
    except Exception as e:  # fastavro raises many kinds on damaged input; all mean "malformed"
        raise ValueError(f"not a readable Avro container: {e}") from None
    if len(records) != 1 or not isinstance(records[0], dict):
        raise ValueError(f"an Avro container with {len(records)} records instead of 1")
    name = schema.get("name", "") if isinstance(schema, dict) else ""
    return str(name), records[0]


def _malformed(kind: str, instant: str | None, error: Exception) -> CorruptTableError:
    where = f" of instant {instant}" if instant else ""
    return CorruptTableError(
        f"the {kind}{where} is malformed ({error}); the file is damaged: restore it from a copy"
    )


# ---------------------------------------------------------------------------------------------
# Rollback plan and rollback metadata


@dataclass
class InstantInfo:
    """An instant named in rollback metadata: its time and action (``HoodieInstantInfo``)."""

    commit_time: str
    action: str

    def to_record(self) -> dict[str, Any]:
        """The Avro record."""
        return {"commitTime": self.commit_time, "action": self.action}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> InstantInfo:
        """From the Avro record."""
        return cls(str(record["commitTime"]), str(record["action"]))


@dataclass
class RollbackRequest:
    """What a rollback will undo in one file group (``HoodieRollbackRequest``).

    Either whole files to delete (``files_to_be_deleted``: base files the failed instant
    created), or log blocks to void with a rollback command block
    (``log_blocks_to_be_deleted``: log file path -> size).
    """

    partition_path: str
    file_id: str | None = None
    latest_base_instant: str | None = None
    files_to_be_deleted: list[str] = field(default_factory=list)
    log_blocks_to_be_deleted: dict[str, int] | None = None

    def to_record(self) -> dict[str, Any]:
        """The Avro record."""
        return {
            "partitionPath": self.partition_path,
            "fileId": self.file_id,
            "latestBaseInstant": self.latest_base_instant,
            "filesToBeDeleted": list(self.files_to_be_deleted),
            "logBlocksToBeDeleted": self.log_blocks_to_be_deleted,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RollbackRequest:
        """From the Avro record."""
        blocks = record.get("logBlocksToBeDeleted")
        return cls(
            partition_path=str(record["partitionPath"]),
            file_id=record.get("fileId"),
            latest_base_instant=record.get("latestBaseInstant"),
            files_to_be_deleted=list(record.get("filesToBeDeleted") or []),
            log_blocks_to_be_deleted=None if blocks is None else dict(blocks),
        )


@dataclass
class RollbackPlan:
    """The content of ``<ts>.rollback.requested``: which instant to undo and how."""

    instant_to_rollback: InstantInfo | None
    rollback_requests: list[RollbackRequest] = field(default_factory=list)
    version: int = 1

    def to_avro(self) -> bytes:
        """The plan as Hudi writes it: an Avro container in ``HoodieRollbackPlan``."""
        record = {
            "instantToRollback": (
                None if self.instant_to_rollback is None else self.instant_to_rollback.to_record()
            ),
            "RollbackRequests": [r.to_record() for r in self.rollback_requests],
            "version": self.version,
        }
        return write_avro_container(ROLLBACK_PLAN_SCHEMA, [record])

    @classmethod
    def parse(cls, data: bytes, instant: str | None = None) -> RollbackPlan:
        """A rollback plan from an Avro container.

        Raises:
            CorruptTableError: not a readable ``HoodieRollbackPlan``; names ``instant``.
        """
        try:
            name, record = read_avro_container(data)
            if not name.endswith("HoodieRollbackPlan"):
                raise ValueError(f"it holds a {name or 'non-record'}, not a rollback plan")
            target = record.get("instantToRollback")
            return cls(
                instant_to_rollback=None if target is None else InstantInfo.from_record(target),
                rollback_requests=[
                    RollbackRequest.from_record(r) for r in record.get("RollbackRequests") or []
                ],
                version=int(record.get("version") or 1),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise _malformed("rollback plan", instant, e) from None


@dataclass
class RollbackPartitionMetadata:
    """What a rollback did in one partition (``HoodieRollbackPartitionMetadata``)."""

    partition_path: str
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    rollback_log_files: dict[str, int] | None = None
    log_files_from_failed_commit: dict[str, int] | None = None

    def to_record(self) -> dict[str, Any]:
        """The Avro record."""
        return {
            "partitionPath": self.partition_path,
            "successDeleteFiles": list(self.success_delete_files),
            "failedDeleteFiles": list(self.failed_delete_files),
            "rollbackLogFiles": self.rollback_log_files,
            "logFilesFromFailedCommit": self.log_files_from_failed_commit,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RollbackPartitionMetadata:
        """From the Avro record."""
        logs = record.get("rollbackLogFiles")
        failed = record.get("logFilesFromFailedCommit")
        return cls(
            partition_path=str(record["partitionPath"]),
            success_delete_files=list(record["successDeleteFiles"]),
            failed_delete_files=list(record["failedDeleteFiles"]),
            rollback_log_files=None if logs is None else dict(logs),
            log_files_from_failed_commit=None if failed is None else dict(failed),
        )


@dataclass
class RollbackMetadata:
    """The content of a completed ``<ts>.rollback``: what was undone, partition by partition.

    ``commits_rollback`` (and ``instants_rollback``, with actions) name the rolled-back
    instants: readers must ignore their files and log blocks.
    """

    start_rollback_time: str
    commits_rollback: list[str] = field(default_factory=list)
    partition_metadata: dict[str, RollbackPartitionMetadata] = field(default_factory=dict)
    time_taken_in_millis: int = 0
    total_files_deleted: int = 0
    instants_rollback: list[InstantInfo] = field(default_factory=list)
    version: int = 1

    def rolled_back(self) -> set[str]:
        """The instant times this rollback undid."""
        return set(self.commits_rollback) | {i.commit_time for i in self.instants_rollback}

    def to_avro(self) -> bytes:
        """The metadata as Hudi writes it: an Avro container in ``HoodieRollbackMetadata``."""
        record = {
            "startRollbackTime": self.start_rollback_time,
            "timeTakenInMillis": self.time_taken_in_millis,
            "totalFilesDeleted": self.total_files_deleted,
            "commitsRollback": list(self.commits_rollback),
            "partitionMetadata": {p: m.to_record() for p, m in self.partition_metadata.items()},
            "version": self.version,
            "instantsRollback": [i.to_record() for i in self.instants_rollback],
        }
        return write_avro_container(ROLLBACK_METADATA_SCHEMA, [record])

    @classmethod
    def parse(cls, data: bytes, instant: str | None = None) -> RollbackMetadata:
        """Rollback metadata from an Avro container.

        Raises:
            CorruptTableError: not a readable ``HoodieRollbackMetadata``; names ``instant``.
        """
        try:
            name, record = read_avro_container(data)
            if not name.endswith("HoodieRollbackMetadata"):
                raise ValueError(f"it holds a {name or 'non-record'}, not rollback metadata")
            return cls(
                start_rollback_time=str(record["startRollbackTime"]),
                commits_rollback=[str(c) for c in record["commitsRollback"]],
                partition_metadata={
                    str(p): RollbackPartitionMetadata.from_record(m)
                    for p, m in record["partitionMetadata"].items()
                },
                time_taken_in_millis=int(record["timeTakenInMillis"]),
                total_files_deleted=int(record["totalFilesDeleted"]),
                instants_rollback=[
                    InstantInfo.from_record(i) for i in record.get("instantsRollback") or []
                ],
                version=int(record.get("version") or 1),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise _malformed("rollback metadata", instant, e) from None
