"""Writing data commits that carry their metadata deltacommit (the participant seam).

:func:`commit_with` runs one ``WriteClient`` write and has the given participants write
alongside it under the same instant, before the instant completes, as the commit
protocol's transaction does: the write stops at its ``validating`` step, its commit
metadata is gathered from the files it wrote (its markers), each participant's
``on_commit`` runs, then the instant completes. A participant that raises leaves the
instant pending, as a failed commit does.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Sequence

from hudisql.metadata.participant import CommitParticipant
from hudisql.table.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.filenames import BaseFileName, LogFileName
from hudisql.table.reconcile import record_committed_log_files
from hudisql.table.schema import META_COLUMNS
from hudisql.table.table import HudiTable
from hudisql.table.write_files import MARKER_DIR
from hudisql.table.writer import WriteClient


class _Stop(Exception):
    """Stops a write at its validating step."""


def _stop_at_validating(event: str, detail: str) -> None:
    if event == "validating":
        raise _Stop(detail)


def _gather(table: HudiTable, ts: str, operation: str) -> CommitMetadata:
    avro = json.loads(table.avro_schema)
    avro["fields"] = [f for f in avro["fields"] if f["name"] not in META_COLUMNS]
    metadata = CommitMetadata(operation_type=operation,
                              extra_metadata={"schema": json.dumps(avro)})
    root = f"{MARKER_DIR}/{ts}"
    for status in table.storage.list_recursive(root):
        if status.is_dir or ".marker." not in status.name:
            continue
        rel = posixpath.relpath(status.path, root).rsplit(".marker.", 1)[0]
        partition, name = posixpath.split(rel)
        base, log = BaseFileName.parse(name), LogFileName.parse(name)
        file_id = base.file_id if base is not None else log.file_id if log is not None else ""
        size = table.storage.size(rel)
        metadata.add_write_stat(WriteStat(
            file_id=file_id, path=rel, partition_path=partition, file_size_in_bytes=size,
            total_write_bytes=size, log_files=[name] if log is not None else [],
            prev_commit=log.base_instant if log is not None else None,
        ))
    if table.properties.is_mor:
        record_committed_log_files(metadata)
    return metadata


def commit_with(
    client: WriteClient,
    write: Callable[[WriteClient], object],
    participants: Sequence[CommitParticipant],
    operation: str = "UPSERT",
) -> str:
    """Run ``write(client)`` as one commit with ``participants``; returns its instant time."""
    client.on_step = _stop_at_validating
    try:
        write(client)
    except _Stop as stop:
        ts = str(stop.args[0])
    else:
        raise AssertionError("the write did not reach its validating step")
    finally:
        client.on_step = lambda event, detail: None
    table = client.table.reload()
    inflight = table.timeline.get(ts)
    assert inflight is not None and inflight.is_inflight
    metadata = _gather(table, ts, operation)
    for participant in participants:
        participant.on_commit(table, inflight, metadata)
    table.timeline.complete(inflight, metadata.to_json())
    table.storage.delete_dir(f"{MARKER_DIR}/{ts}")
    return ts
