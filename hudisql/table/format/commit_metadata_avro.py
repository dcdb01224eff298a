"""Commit metadata as timeline layout 2 (table versions 8 and 9) stores it: Avro containers.

Hudi 1.x writes the metadata of ``commit``, ``deltacommit`` and ``replacecommit`` instants
(inflight and completed) as an Avro object container of ``HoodieCommitMetadata`` or, for a
replacecommit, ``HoodieReplaceCommitMetadata`` (``CommitMetadataSerDeV2``); hudi-rs parses
layout-2 commit metadata as Avro only, so JSON there would make it refuse the table.
The schemas below are the texts Hudi embedded in files of the version 8 and 9 test tables
(``tests/data/hudi/``), kept verbatim as data. Fields the schema does not have (hudisql's
own write-stat keys) are left out: hudisql keeps what it needs across commits in
``extraMetadata``, which is a string map in both encodings.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from hudisql.table.format.commit_metadata import CommitMetadata, write_avro_container

__all__ = [
    "COMMIT_METADATA_SCHEMA",
    "REPLACE_COMMIT_METADATA_SCHEMA",
    "encode_commit_metadata",
    "to_avro",
]

#: Hudi 1.x's ``HoodieCommitMetadata`` schema, as in a deltacommit Hudi 1.0 wrote.
COMMIT_METADATA_SCHEMA = (
    '{"type":"record","name":"HoodieCommitMetadata","namespace":"org.apache.hudi.avro.model",'
    '"fields":[{"name":"partitionToWriteStats","type":["null",{"type":"map","values":{"type":'
    '"array","items":{"type":"record","name":"HoodieWriteStat","fields":[{"name":"fileId","ty'
    'pe":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"path'
    '","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":'
    '"prevCommit","type":["null",{"type":"string","avro.java.string":"String"}],"default":nul'
    'l},{"name":"numWrites","type":["null","long"],"default":null},{"name":"numDeletes","type'
    '":["null","long"],"default":null},{"name":"numUpdateWrites","type":["null","long"],"defa'
    'ult":null},{"name":"totalWriteBytes","type":["null","long"],"default":null},{"name":"tot'
    'alWriteErrors","type":["null","long"],"default":null},{"name":"partitionPath","type":["n'
    'ull",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"totalLogRec'
    'ords","type":["null","long"],"default":null},{"name":"totalLogFiles","type":["null","lon'
    'g"],"default":null},{"name":"totalUpdatedRecordsCompacted","type":["null","long"],"defau'
    'lt":null},{"name":"numInserts","type":["null","long"],"default":null},{"name":"totalLogB'
    'locks","type":["null","long"],"default":null},{"name":"totalCorruptLogBlock","type":["nu'
    'll","long"],"default":null},{"name":"totalRollbackBlocks","type":["null","long"],"defaul'
    't":null},{"name":"fileSizeInBytes","type":["null","long"],"default":null},{"name":"logVe'
    'rsion","type":["null","int"],"default":null},{"name":"logOffset","type":["null","long"],'
    '"default":null},{"name":"baseFile","type":["null",{"type":"string","avro.java.string":"S'
    'tring"}],"default":null},{"name":"logFiles","type":["null",{"type":"array","items":{"typ'
    'e":"string","avro.java.string":"String"},"default":null}],"default":null},{"name":"cdcSt'
    'ats","type":["null",{"type":"map","values":"long","avro.java.string":"String","default":'
    'null}],"default":null},{"name":"prevBaseFile","type":["null",{"type":"string","avro.java'
    '.string":"String"}],"default":null},{"name":"minEventTime","type":["null","long"],"defau'
    'lt":null},{"name":"maxEventTime","type":["null","long"],"default":null},{"name":"runtime'
    'Stats","type":["null",{"type":"record","name":"HoodieRuntimeStats","fields":[{"name":"to'
    'talScanTime","type":["null","long"],"default":null},{"name":"totalCreateTime","type":["n'
    'ull","long"],"default":null},{"name":"totalUpsertTime","type":["null","long"],"default":'
    'null}]}],"default":null},{"name":"totalLogFilesCompacted","type":["null","long"],"defaul'
    't":null},{"name":"totalLogReadTimeMs","type":["null","long"],"default":null},{"name":"to'
    'talLogSizeCompacted","type":["null","long"],"default":null},{"name":"tempPath","type":["'
    'null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"numUpdates'
    '","type":["null","long"],"default":null}]}},"avro.java.string":"String"}],"default":null'
    '},{"name":"compacted","type":["null","boolean"],"default":null},{"name":"extraMetadata",'
    '"type":["null",{"type":"map","values":{"type":"string","avro.java.string":"String"},"avr'
    'o.java.string":"String","default":null}],"default":null},{"name":"version","type":["int"'
    ',"null"],"default":1},{"name":"operationType","type":["null",{"type":"string","avro.java'
    '.string":"String"}],"default":null}]}'
)

#: Hudi 1.x's ``HoodieReplaceCommitMetadata`` schema, as in a replacecommit Hudi 1.1 wrote.
REPLACE_COMMIT_METADATA_SCHEMA = (
    '{"type":"record","name":"HoodieReplaceCommitMetadata","namespace":"org.apache.hudi.avro.'
    'model","fields":[{"name":"partitionToWriteStats","type":["null",{"type":"map","values":{'
    '"type":"array","items":{"type":"record","name":"HoodieWriteStat","fields":[{"name":"file'
    'Id","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name'
    '":"path","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},{'
    '"name":"prevCommit","type":["null",{"type":"string","avro.java.string":"String"}],"defau'
    'lt":null},{"name":"numWrites","type":["null","long"],"default":null},{"name":"numDeletes'
    '","type":["null","long"],"default":null},{"name":"numUpdateWrites","type":["null","long"'
    '],"default":null},{"name":"totalWriteBytes","type":["null","long"],"default":null},{"nam'
    'e":"totalWriteErrors","type":["null","long"],"default":null},{"name":"partitionPath","ty'
    'pe":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"tota'
    'lLogRecords","type":["null","long"],"default":null},{"name":"totalLogFiles","type":["nul'
    'l","long"],"default":null},{"name":"totalUpdatedRecordsCompacted","type":["null","long"]'
    ',"default":null},{"name":"numInserts","type":["null","long"],"default":null},{"name":"to'
    'talLogBlocks","type":["null","long"],"default":null},{"name":"totalCorruptLogBlock","typ'
    'e":["null","long"],"default":null},{"name":"totalRollbackBlocks","type":["null","long"],'
    '"default":null},{"name":"fileSizeInBytes","type":["null","long"],"default":null},{"name"'
    ':"logVersion","type":["null","int"],"default":null},{"name":"logOffset","type":["null","'
    'long"],"default":null},{"name":"baseFile","type":["null",{"type":"string","avro.java.str'
    'ing":"String"}],"default":null},{"name":"logFiles","type":["null",{"type":"array","items'
    '":{"type":"string","avro.java.string":"String"},"default":null}],"default":null},{"name"'
    ':"cdcStats","type":["null",{"type":"map","values":"long","avro.java.string":"String","de'
    'fault":null}],"default":null},{"name":"prevBaseFile","type":["null",{"type":"string","av'
    'ro.java.string":"String"}],"default":null},{"name":"minEventTime","type":["null","long"]'
    ',"default":null},{"name":"maxEventTime","type":["null","long"],"default":null},{"name":"'
    'runtimeStats","type":["null",{"type":"record","name":"HoodieRuntimeStats","fields":[{"na'
    'me":"totalScanTime","type":["null","long"],"default":null},{"name":"totalCreateTime","ty'
    'pe":["null","long"],"default":null},{"name":"totalUpsertTime","type":["null","long"],"de'
    'fault":null}]}],"default":null},{"name":"totalLogFilesCompacted","type":["null","long"],'
    '"default":null},{"name":"totalLogReadTimeMs","type":["null","long"],"default":null},{"na'
    'me":"totalLogSizeCompacted","type":["null","long"],"default":null},{"name":"tempPath","t'
    'ype":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"num'
    'Updates","type":["null","long"],"default":null}]}},"avro.java.string":"String"}],"defaul'
    't":null},{"name":"compacted","type":["null","boolean"],"default":null},{"name":"extraMet'
    'adata","type":["null",{"type":"map","values":{"type":"string","avro.java.string":"String'
    '"},"avro.java.string":"String"}],"default":null},{"name":"version","type":["int","null"]'
    ',"default":1},{"name":"operationType","type":["null",{"type":"string","avro.java.string"'
    ':"String"}],"default":null},{"name":"partitionToReplaceFileIds","type":["null",{"type":"'
    'map","values":{"type":"array","items":{"type":"string","avro.java.string":"String"}},"av'
    'ro.java.string":"String"}],"default":null}]}'
)


#: Counters Hudi 1.x writes as 0 when it has nothing to say (the others stay null).
_ZERO_LONGS = {"totalLogReadTimeMs": 0, "numUpdates": 0}


@cache
def _stat_fields() -> tuple[tuple[str, Any], ...]:
    """The HoodieWriteStat fields (name, Avro type), in schema order."""
    schema = json.loads(COMMIT_METADATA_SCHEMA)
    stats = schema["fields"][0]["type"][1]["values"]["items"]
    return tuple((f["name"], f["type"]) for f in stats["fields"])


def _is_long(avro_type: Any) -> bool:
    return isinstance(avro_type, list) and "long" in avro_type


def _stat_record(stat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, avro_type in _stat_fields():
        value = stat.get(name)
        if name == "runtimeStats" and isinstance(value, dict):
            value = {k: value.get(k) for k in ("totalScanTime", "totalCreateTime",
                                               "totalUpsertTime")}
        elif name == "cdcStats" and not isinstance(value, dict):
            value = None
        elif _is_long(avro_type) and not isinstance(value, int):
            value = _ZERO_LONGS.get(name)
        elif name == "logVersion" and not isinstance(value, int):
            value = None
        out[name] = value
    return out


def to_avro(metadata: CommitMetadata, replace: bool) -> dict[str, Any]:
    """``metadata`` as the ``HoodieCommitMetadata`` (or, when ``replace``,
    ``HoodieReplaceCommitMetadata``) record Hudi 1.x writes."""
    record: dict[str, Any] = {
        "partitionToWriteStats": {
            partition: [_stat_record(stat.to_dict()) for stat in stats]
            for partition, stats in metadata.partition_to_write_stats.items()
        },
        "compacted": metadata.compacted,
        "extraMetadata": dict(metadata.extra_metadata),
        "version": None,  # Hudi 1.x leaves it null
        "operationType": metadata.operation_type,
    }
    if replace:
        record["partitionToReplaceFileIds"] = {
            p: list(ids) for p, ids in metadata.partition_to_replace_file_ids.items()
        }
    return record


def encode_commit_metadata(metadata: CommitMetadata, replace: bool) -> bytes:
    """The Avro container of ``metadata`` as a layout-2 instant file holds it."""
    schema = REPLACE_COMMIT_METADATA_SCHEMA if replace else COMMIT_METADATA_SCHEMA
    return write_avro_container(schema, [to_avro(metadata, replace)])
