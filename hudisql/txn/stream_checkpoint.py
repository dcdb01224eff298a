"""The streaming sink's checkpoint in commit metadata: which micro-batch each commit wrote.

A streaming query writes each micro-batch as one commit whose extra metadata records, under
Apache Hudi's own key ``_hudi_streaming_sink_checkpoint``, ``{"<identifier>": "<batchId>"}``
(``hoodie.datasource.write.streaming.checkpoint.identifier``, Hudi's default
``default_single_writer``), so Hudi's ``HoodieStreamingSink`` can continue a table hudisql fed
and the reverse. The last batch a query committed is found as Hudi finds it: the completed
write instants, newest first, up to the first whose checkpoint names the identifier.

Spark replays only the last batch of a query after a restart, with the same id: a batch id
equal to the last committed one is skipped. A *smaller* one means the checkpoint folder was
reset or two queries share the identifier; Hudi skips it silently (and loses the data), here
it is an error. :func:`record_batch` runs the check again under the table lock, inside
:class:`~hudisql.txn.transaction.Transaction`, when the write's options carry the batch id
(:data:`BATCH_ID`, set by the sink): two runs of one batch can never both complete.
No Spark here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from hudisql.errors import CorruptTableError, StreamingCheckpointError
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import WRITE_ACTIONS
from hudisql.table.table import HudiTable

__all__ = [
    "BATCH_ID",
    "CHECKPOINT_IDENTIFIER",
    "DEFAULT_IDENTIFIER",
    "SINK_CHECKPOINT_KEY",
    "BatchAlreadyCommittedError",
    "CommittedBatch",
    "check_batch",
    "identifier_of",
    "last_committed_batch",
    "record_batch",
]

#: The commit metadata key Hudi's streaming sink writes (``HoodieStreamingSink``).
SINK_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"
#: Names the writer whose batch ids a commit records (several queries, one table).
CHECKPOINT_IDENTIFIER = "hoodie.datasource.write.streaming.checkpoint.identifier"
#: Hudi's default identifier for a single streaming writer.
DEFAULT_IDENTIFIER = "default_single_writer"
#: The write option the sink sets to the micro-batch's id (hudisql's; never user-set).
BATCH_ID = "hudisql.write.streaming.batch.id"


@dataclass(frozen=True)
class CommittedBatch:
    """The last micro-batch a streaming writer committed: its id and the instant holding it."""

    batch_id: int
    instant: str


class BatchAlreadyCommittedError(StreamingCheckpointError):
    """Under the lock, the batch turned out to be committed already (a concurrent or earlier
    run of it completed first); the sink skips it. ``committed`` is that commit."""

    def __init__(self, message: str, committed: CommittedBatch) -> None:
        super().__init__(message)
        self.committed = committed


def identifier_of(options: Mapping[str, str]) -> str:
    """The streaming checkpoint identifier of a write's options (Hudi's default if unset)."""
    given = str(options.get(CHECKPOINT_IDENTIFIER) or "").strip()
    return given or DEFAULT_IDENTIFIER


def _batch_of(metadata: CommitMetadata, identifier: str, table: str, instant: str) -> int | None:
    text = metadata.extra_metadata.get(SINK_CHECKPOINT_KEY)
    if not text:
        return None
    try:
        value = json.loads(text).get(identifier)
        return None if value is None else int(value)
    except (ValueError, TypeError, AttributeError) as exc:
        raise CorruptTableError(
            f"table {table}: instant {instant} has a malformed {SINK_CHECKPOINT_KEY} "
            f"({text!r}): {exc}") from exc


def last_committed_batch(table: HudiTable, identifier: str) -> CommittedBatch | None:
    """The newest completed write (active timeline) whose checkpoint names ``identifier``,
    as Hudi's ``CommitUtils.getValidCheckpointForCurrentWriter`` finds it; None if none does."""
    timeline = table.timeline
    for instant in reversed(timeline.completed(WRITE_ACTIONS)):
        batch = _batch_of(timeline.commit_metadata(instant), identifier, table.name,
                          instant.timestamp)
        if batch is not None:
            return CommittedBatch(batch, instant.timestamp)
    return None


def check_batch(table: HudiTable, identifier: str, batch_id: int) -> CommittedBatch | None:
    """Whether micro-batch ``batch_id`` must be written: None when it must, the commit
    holding it when it is committed already (skip it).

    Raises:
        StreamingCheckpointError: the writer committed a *later* batch: the query's
            checkpoint was reset, or another query uses the same identifier.
    """
    last = last_committed_batch(table, identifier)
    if last is None or batch_id > last.batch_id:
        return None
    if batch_id == last.batch_id:
        return last
    raise StreamingCheckpointError(
        f"table {table.name}: streaming batch {batch_id} is older than batch {last.batch_id}, "
        f"which the writer {identifier!r} ({CHECKPOINT_IDENTIFIER}) committed in instant "
        f"{last.instant}: the query's checkpoint location was reset or replaced, or another "
        f"query writes with the same identifier. Nothing was written. Restore the checkpoint "
        f"folder, or give this query its own identifier (option {CHECKPOINT_IDENTIFIER}) to "
        "write its batches again")


def record_batch(table: HudiTable, metadata: CommitMetadata, options: Mapping[str, str]) -> None:
    """Under the table lock: check the write's batch (when the options carry one) against the
    timeline as it is now, and record it in ``metadata``'s checkpoint.

    Raises:
        BatchAlreadyCommittedError: the batch is committed already (the write is rolled back
            and the sink skips it).
        StreamingCheckpointError: a later batch of the writer is committed.
    """
    text = options.get(BATCH_ID)
    if text is None:
        return
    identifier = identifier_of(options)
    batch_id = int(text)
    done = check_batch(table, identifier, batch_id)
    if done is not None:
        raise BatchAlreadyCommittedError(
            f"table {table.name}: streaming batch {batch_id} of writer {identifier!r} is "
            f"committed already, in instant {done.instant}", done)
    metadata.extra_metadata[SINK_CHECKPOINT_KEY] = json.dumps(
        {identifier: str(batch_id)}, separators=(",", ":"))
