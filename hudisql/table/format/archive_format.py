"""The archived timeline's files, as Apache Hudi 0.x writes them for table version 6.

Archived instants live in ``.hoodie/archived/.commits_.archive.<N>_<writeToken>``: Hudi log
files (file id ``commits``, empty base instant, extension ``archive``) of Avro data blocks
whose only header is ``SCHEMA``, each record a ``HoodieArchivedMetaEntry``. One record per
state file of an instant (``commitTime``, ``actionType``, ``actionState``), holding that
file's content in the field its action uses (Hudi's ``MetadataConversionUtils``):

| action, state | field |
|---|---|
| commit, deltacommit (any state with content) | ``hoodieCommitMetadata`` |
| replacecommit completed | ``hoodieReplaceCommitMetadata`` |
| replacecommit inflight / requested | ``hoodieCommitMetadata`` / ``...RequestedReplaceMetadata`` |
| clean completed / pending | ``hoodieCleanMetadata`` / ``hoodieCleanerPlan`` |
| compaction, logcompaction (pending) | ``hoodieCompactionPlan`` |
| rollback completed | ``hoodieRollbackMetadata`` |
| savepoint | ``hoodieSavePointMetadata`` |

hudisql never appends to an archive file: each archival writes one new file at the next
version, created whole (create-if-absent), so a crash never leaves half a file behind.
"""

from __future__ import annotations

import io
import json
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro

from hudisql.errors import CorruptTableError
from hudisql.table.format.commit_metadata import (
    ROLLBACK_METADATA_SCHEMA,
    CommitMetadata,
    read_avro_container,
)
from hudisql.table.format.instant import Action, Instant, State
from hudisql.table.format.log.format import BlockType, HeaderKey, encode_block
from hudisql.table.format.log.reader import read_block_content, scan_log_file
from hudisql.table.format.service_plans import (
    CLEAN_METADATA_SCHEMA,
    CLEANER_PLAN_SCHEMA,
    COMPACTION_PLAN_SCHEMA,
)
from hudisql.table.io.storage import Storage

__all__ = [
    "ARCHIVE_WRITE_TOKEN",
    "ArchivedEntry",
    "archive_file_name",
    "archive_files",
    "encode_archive_block",
    "entry_record",
    "read_archive_file",
    "wrapper_schema",
]

#: The write token Hudi's archiver names its files with (``HoodieLogFormat.UNKNOWN_WRITE_TOKEN``).
ARCHIVE_WRITE_TOKEN = "1-0-1"
_FILE = re.compile(r"^\.commits_\.archive\.(\d+)_([0-9A-Za-z-]+)$")
_NS = "org.apache.hudi.avro.model"
_DATA_BLOCK_VERSION = 3
_I32 = struct.Struct(">i")
#: Hudi sets this extra-metadata key to "" in archived commit metadata (rolling stats dropped).
_ROLLING_STAT = "ROLLING_STAT"


def archive_file_name(version: int) -> str:
    """``.commits_.archive.<version>_1-0-1``: the name of archive file ``version``."""
    return f".commits_.archive.{version}_{ARCHIVE_WRITE_TOKEN}"


def archive_version(name: str) -> int | None:
    """The version of an archive file name, or None when ``name`` is not one."""
    m = _FILE.match(name)
    return int(m.group(1)) if m else None


def archive_files(storage: Storage, archive_dir: str) -> list[tuple[int, str]]:
    """The archive files under ``archive_dir`` as (version, relative path), oldest first."""
    if not storage.exists(archive_dir):
        return []
    found = []
    for status in storage.list_dir(archive_dir):
        version = archive_version(status.name)
        if version is not None and not status.is_dir:
            found.append((version, f"{archive_dir.rstrip('/')}/{status.name}"))
    return sorted(found)


# -- the schema ----------------------------------------------------------------------------

def _opt(kind: Any) -> dict[str, Any]:
    return {"type": ["null", kind], "default": None}


def _long_stats(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, **_opt("long")} for n in names]


_WRITE_STAT: dict[str, Any] = {
    "name": "HoodieWriteStat", "type": "record", "fields": [
        {"name": "fileId", **_opt("string")}, {"name": "path", **_opt("string")},
        {"name": "prevCommit", **_opt("string")},
        {"name": "prevFilePathOverwritten", **_opt("string")},
        *_long_stats("numWrites", "numDeletes", "numUpdateWrites", "totalWriteBytes",
                     "totalWriteErrors"),
        {"name": "partitionPath", **_opt("string")},
        *_long_stats("totalLogRecords", "totalLogFiles", "totalUpdatedRecordsCompacted",
                     "numInserts", "totalLogBlocks", "totalCorruptLogBlock",
                     "totalRollbackBlocks", "fileSizeInBytes"),
    ],
}
_STRING_MAP = {"type": "map", "values": "string"}
_COMMON_COMMIT_FIELDS: list[dict[str, Any]] = [
    {"name": "extraMetadata", **_opt(_STRING_MAP)},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "operationType", **_opt("string")},
]
_COMMIT_METADATA = {
    "namespace": _NS, "type": "record", "name": "HoodieCommitMetadata", "fields": [
        {"name": "partitionToWriteStats",
         **_opt({"type": "map", "values": {"type": "array", "items": _WRITE_STAT}})},
        *_COMMON_COMMIT_FIELDS,
    ],
}
_REPLACE_COMMIT_METADATA = {
    "namespace": _NS, "type": "record", "name": "HoodieReplaceCommitMetadata", "fields": [
        {"name": "partitionToWriteStats",
         **_opt({"type": "map", "values": {"type": "array", "items": "HoodieWriteStat"}})},
        *_COMMON_COMMIT_FIELDS,
        {"name": "partitionToReplaceFileIds",
         **_opt({"type": "map", "values": {"type": "array", "items": "string"}})},
    ],
}
# Deprecated in Hudi and never set; declared because readers resolve every union branch.
_COMPACTION_METADATA = {
    "namespace": _NS, "type": "record", "name": "HoodieCompactionMetadata", "fields": [
        {"name": "partitionToCompactionWriteStats", "type": ["null", {
            "type": "map", "values": {"type": "array", "items": {
                "name": "HoodieCompactionWriteStat", "type": "record", "fields": [
                    {"name": "partitionPath", "type": ["null", "string"]},
                    {"name": "totalLogRecords", "type": ["null", "long"]},
                    {"name": "totalLogFiles", "type": ["null", "long"]},
                    {"name": "totalUpdatedRecordsCompacted", "type": ["null", "long"]},
                    {"name": "hoodieWriteStat", "type": ["null", "HoodieWriteStat"]},
                ]}}}]},
    ],
}
_SAVEPOINT_METADATA = {
    "namespace": _NS, "type": "record", "name": "HoodieSavepointMetadata", "fields": [
        {"name": "savepointedBy", "type": "string"},
        {"name": "savepointedAt", "type": "long"},
        {"name": "comments", "type": "string"},
        {"name": "partitionMetadata", "type": {"type": "map", "values": {
            "type": "record", "name": "HoodieSavepointPartitionMetadata", "fields": [
                {"name": "partitionPath", "type": "string"},
                {"name": "savepointDataFile", "type": {"type": "array", "items": "string"}},
            ]}}},
    ],
}
# Every field of Hudi's HoodieRequestedReplaceMetadata has a default, so this subset resolves
# against it; a file whose requested replace metadata has a clustering plan declares the
# schema that metadata was written with instead (``wrapper_schema``).
_REQUESTED_REPLACE_METADATA = {
    "namespace": _NS, "type": "record", "name": "HoodieRequestedReplaceMetadata", "fields": [
        {"name": "operationType", "type": ["null", "string"], "default": None},
        {"name": "extraMetadata", **_opt(_STRING_MAP)},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}


def _named(schema: str) -> Any:
    return json.loads(schema)


@lru_cache(maxsize=8)
def wrapper_schema(requested_replace_schema: str | None = None) -> str:
    """Hudi's ``HoodieArchivedMetaEntry`` schema (JSON text), its nested records declared
    where first used; ``requested_replace_schema`` replaces the requested-replace branch."""
    requested = (json.loads(requested_replace_schema) if requested_replace_schema
                 else _REQUESTED_REPLACE_METADATA)
    schema = {
        "type": "record", "name": "HoodieArchivedMetaEntry", "namespace": _NS, "fields": [
            {"name": "hoodieCommitMetadata", **_opt(_COMMIT_METADATA)},
            {"name": "hoodieCleanMetadata", **_opt(_named(CLEAN_METADATA_SCHEMA))},
            {"name": "hoodieCompactionMetadata", **_opt(_COMPACTION_METADATA)},
            {"name": "hoodieRollbackMetadata", **_opt(_named(ROLLBACK_METADATA_SCHEMA))},
            {"name": "hoodieSavePointMetadata", **_opt(_SAVEPOINT_METADATA)},
            {"name": "commitTime", **_opt("string")},
            {"name": "actionType", **_opt("string")},
            {"name": "version", "type": ["int", "null"], "default": 1},
            {"name": "hoodieCompactionPlan", **_opt(_named(COMPACTION_PLAN_SCHEMA))},
            {"name": "hoodieCleanerPlan", **_opt(_named(CLEANER_PLAN_SCHEMA))},
            {"name": "actionState", **_opt("string")},
            {"name": "hoodieReplaceCommitMetadata", **_opt(_REPLACE_COMMIT_METADATA)},
            {"name": "hoodieRequestedReplaceMetadata", **_opt(requested)},
        ],
    }
    return json.dumps(schema, separators=(",", ":"))


@lru_cache(maxsize=8)
def _parsed(schema: str) -> Any:
    return fastavro.parse_schema(json.loads(schema))


# -- entries ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ArchivedEntry:
    """One archived state file of an instant, with the record Hudi keeps for it."""

    timestamp: str
    action: str
    state: State
    record: Mapping[str, Any]

    @property
    def instant(self) -> Instant:
        """The state file this entry stands for."""
        return Instant(self.timestamp, self.action, self.state)

    def commit_metadata(self) -> CommitMetadata | None:
        """The commit metadata of a completed write (None for other entries).

        The archived record is the Avro form of the JSON Hudi keeps on the active
        timeline; write stats keep the fields of ``HoodieWriteStat`` only.
        """
        body = (self.record.get("hoodieCommitMetadata")
                or self.record.get("hoodieReplaceCommitMetadata"))
        if not body or self.state != State.COMPLETED:
            return None
        data = {
            "partitionToWriteStats": {
                p: [{k: v for k, v in s.items() if v is not None} for s in stats]
                for p, stats in (body.get("partitionToWriteStats") or {}).items()},
            "extraMetadata": {k: v for k, v in (body.get("extraMetadata") or {}).items()
                              if k != _ROLLING_STAT},
            "operationType": body.get("operationType"),
            "compacted": body.get("operationType") == "COMPACT",
        }
        if body.get("partitionToReplaceFileIds") is not None:
            data["partitionToReplaceFileIds"] = body["partitionToReplaceFileIds"]
        return CommitMetadata.parse(json.dumps(data).encode(),
                                    f"archived instant {self.timestamp}.{self.action}")


def _avro_commit(content: bytes, label: str, replace: bool) -> dict[str, Any]:
    """The Avro form of JSON (or, in versions 8+, Avro) commit metadata."""
    if content[:4] == b"Obj\x01":
        return dict(read_avro_container(content)[1])
    try:
        data = json.loads(content.decode("utf-8"))
    except ValueError as e:
        raise CorruptTableError(f"instant file {label} is not JSON commit metadata: {e}") from None
    stat_fields = [f["name"] for f in _WRITE_STAT["fields"]]
    stats = {
        partition: [{name: s.get(name) for name in stat_fields} for s in (items or [])]
        for partition, items in (data.get("partitionToWriteStats") or {}).items()
    }
    extra = {str(k): "" if v is None else str(v)
             for k, v in (data.get("extraMetadata") or {}).items()}
    extra[_ROLLING_STAT] = ""
    operation = "COMPACT" if data.get("compacted") else data.get("operationType")
    out: dict[str, Any] = {"partitionToWriteStats": stats, "extraMetadata": extra,
                           "version": 1, "operationType": operation}
    if replace:
        out["partitionToReplaceFileIds"] = data.get("partitionToReplaceFileIds") or {}
    return out


def _container(content: bytes) -> dict[str, Any]:
    return dict(read_avro_container(content)[1])


def entry_record(instant: Instant, content: bytes, label: str) -> tuple[dict[str, Any],
                                                                        str | None]:
    """The ``HoodieArchivedMetaEntry`` record of one state file, and the writer schema of its
    requested replace metadata when it has one (it decides the block's schema).

    Raises:
        CorruptTableError: the file's content is malformed (names it).
    """
    record: dict[str, Any] = {"commitTime": instant.timestamp, "actionType": instant.action,
                              "actionState": instant.state.value, "version": 1}
    action, done = instant.action, instant.is_completed
    requested_schema: str | None = None
    try:
        if action in (Action.COMMIT, Action.DELTACOMMIT) and content:
            record["hoodieCommitMetadata"] = _avro_commit(content, label, replace=False)
        elif action == Action.REPLACECOMMIT and content:
            if done:
                record["hoodieReplaceCommitMetadata"] = _avro_commit(content, label, True)
            elif instant.is_inflight:
                record["hoodieCommitMetadata"] = _avro_commit(content, label, False)
            else:
                reader = fastavro.reader(io.BytesIO(content))
                requested_schema = json.dumps(reader.writer_schema, separators=(",", ":"))
                record["hoodieRequestedReplaceMetadata"] = _container(content)
        elif action == Action.CLEAN and content:
            key = "hoodieCleanMetadata" if done else "hoodieCleanerPlan"
            record[key] = _container(content)
        elif action in (Action.COMPACTION, Action.LOGCOMPACTION) and content:
            record["hoodieCompactionPlan"] = _container(content)
        elif action == Action.ROLLBACK and done:
            record["hoodieRollbackMetadata"] = _container(content)
        elif action == Action.SAVEPOINT and content:
            record["hoodieSavePointMetadata"] = _container(content)
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptTableError(
            f"instant file {label} cannot be archived: its content is malformed ({e}); "
            "restore the file or roll the instant back"
        ) from None
    return record, requested_schema


def encode_archive_block(records: Iterable[Mapping[str, Any]],
                         requested_replace_schema: str | None = None) -> bytes:
    """One Avro data block of ``HoodieArchivedMetaEntry`` records (header: SCHEMA only)."""
    schema = wrapper_schema(requested_replace_schema)
    parsed = _parsed(schema)
    body = bytearray()
    count = 0
    for record in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, dict(record))
        raw = buf.getvalue()
        body += _I32.pack(len(raw)) + raw
        count += 1
    content = _I32.pack(_DATA_BLOCK_VERSION) + _I32.pack(count) + bytes(body)
    return encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: schema}, content)


def read_archive_file(storage: Storage, rel: str) -> list[ArchivedEntry]:
    """The entries of one archive file, in file order.

    hudisql writes each archive file whole, so a corrupt block means a damaged file: it is
    an error rather than instants silently missing from the archived timeline.

    Raises:
        CorruptTableError: a corrupt block, or records that do not decode (names the file).
    """
    entries: list[ArchivedEntry] = []
    for info in scan_log_file(storage, rel):
        if info.is_corrupt:
            raise CorruptTableError(
                f"archive file {storage.full_path(rel)} is damaged at byte {info.position} "
                f"({info.corrupt_reason}); restore it from a copy, or read without the "
                "archived timeline (incremental queries: "
                "hoodie.datasource.read.incr.fallback.fulltablescan.enable=true)"
            )
        if info.block_type != BlockType.AVRO_DATA or not info.schema:
            continue
        content = read_block_content(storage, info)
        try:
            parsed = _parsed(info.schema)
            _, count = struct.unpack_from(">ii", content, 0)
            stream = io.BytesIO(content)
            stream.seek(8)
            for _ in range(count):
                (length,) = _I32.unpack(stream.read(4))
                raw = stream.read(length)
                record = fastavro.schemaless_reader(io.BytesIO(raw), parsed, None)
                entries.append(_entry(record))
        except (ValueError, KeyError, TypeError, struct.error, EOFError) as e:
            raise CorruptTableError(
                f"archive file {storage.full_path(rel)}: a block at byte {info.position} does "
                f"not decode ({e}); restore the file from a copy"
            ) from None
    return entries


def _entry(record: Any) -> ArchivedEntry:
    if not isinstance(record, dict):
        raise ValueError("an archived record is not a record")
    state = str(record.get("actionState") or State.COMPLETED.value)
    return ArchivedEntry(str(record["commitTime"]), str(record["actionType"]), State(state),
                         record)
