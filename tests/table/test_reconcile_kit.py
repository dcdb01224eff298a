"""Helpers (no tests) for the reconciliation tests: a real v6 MOR table written attempt by attempt.

:class:`RetryTable` lays down a real table directory (hoodie.properties, timeline instant
files, a parquet base file written by the core's ``write_base_file``) with one file group,
then lets a test write the log blocks of task attempts exactly as a retried or speculative
Spark task would leave them: Hudi-format blocks from the core's encoders, stamped with
``BLOCK_IDENTIFIER = "<attempt>,<seq>"``, written by ``LogFileWriter`` (a new log file per
block by default, so attempts can interleave), with corrupt tails where a task died
mid-write. Commits record their committed log files (rule (a)) through the module's own
``record_committed_log_files``, from write stats as the driver would have them.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from hudisql.table.format.commit_metadata import CommitMetadata, RollbackMetadata, WriteStat
from hudisql.table.format.filenames import LogFileName
from hudisql.table.format.fsview import FileSystemView
from hudisql.table.format.instant import Action
from hudisql.table.format.log.format import DeleteRecord, HeaderKey, block_identifier
from hudisql.table.format.log.writer import (
    LogFileWriter,
    encode_avro_data_block,
    encode_delete_block,
    encode_rollback_block,
)
from hudisql.table.format.properties import new_table_properties
from hudisql.table.format.schema import META_COLUMNS, arrow_to_avro
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.merge import SliceReadReport, merge_file_slice
from hudisql.table.read.reconcile import BLOCK_ATTEMPT_STAT_KEY, record_committed_log_files
from hudisql.table.write.files import write_base_file

SCHEMA = pa.schema([("id", pa.string()), ("val", pa.string())])
FILE_ID = "3f0c8a52-6d1e-4b7a-9c55-0a1b2c3d4e5f-0"
BASE = "20240201000000000"


def ts(i: int) -> str:
    """The ``i``-th instant time after :data:`BASE`."""
    return f"20240201{i + 1:09d}"


def cut(block: bytes, keep: int | None = None) -> bytes:
    """``block`` cut short as a task that died mid-write leaves it (default: half of it)."""
    return block[: len(block) // 2 if keep is None else keep]


class RetryTable:
    """A real v6 MOR table (no precombine field: later in log order wins) with one file group."""

    def __init__(self, root: Path, base_rows: dict[str, str] | None = None) -> None:
        self.storage = Storage(str(root))
        self.avro = arrow_to_avro(SCHEMA, "t", with_meta=True)
        self.avro_text = json.dumps(self.avro)
        self.props = new_table_properties(
            "t", "MERGE_ON_READ", ["id"], create_schema=json.dumps(arrow_to_avro(SCHEMA, "t"))
        )
        self.props.save(self.storage)
        self.timeline = Timeline.load(self.storage, self.props)
        self._task = 0
        rows = base_rows if base_rows is not None else {"b0": "base", "b1": "base"}
        self._begin(BASE)
        stat = write_base_file(
            self.storage, "", FILE_ID, BASE, self._token(), self._records(BASE, rows),
            self.avro_text,
        )
        meta = CommitMetadata(extra_metadata={"schema": self.avro_text}, operation_type="INSERT")
        meta.add_write_stat(stat)
        self._complete(BASE, meta)

    # -- timeline ------------------------------------------------------------------------

    def _begin(self, instant: str) -> None:
        requested = self.timeline.create_requested(Action.DELTACOMMIT, instant)
        self.timeline.transition_to_inflight(requested)

    def _complete(self, instant: str, meta: CommitMetadata) -> None:
        inflight = self.timeline.get(instant)
        assert inflight is not None
        self.timeline.complete(inflight, meta.to_json())

    def begin(self, instant: str) -> str:
        """Start ``instant`` (requested, then inflight), as the driver does before the tasks."""
        self._begin(instant)
        return instant

    def commit(
        self,
        instant: str,
        committed: Sequence[str] = (),
        attempt: int | None = None,
        *,
        record: bool = True,
        file_id: str = FILE_ID,
    ) -> CommitMetadata:
        """Complete ``instant``, its write stats naming the log files ``committed`` wrote.

        ``record`` adds rule (a)'s record (built from those stats); without it the commit is
        what another writer leaves: stats, but no statement that they are complete.
        """
        meta = CommitMetadata(extra_metadata={"schema": self.avro_text}, operation_type="UPSERT")
        names = list(committed)
        if names:
            extra: dict[str, Any] = {} if attempt is None else {BLOCK_ATTEMPT_STAT_KEY: attempt}
            meta.add_write_stat(
                WriteStat(
                    file_id=file_id, path=names[0], prev_commit=BASE, partition_path="",
                    log_version=1, log_offset=0, base_file=None, log_files=names, extra=extra,
                )
            )
        if record:
            record_committed_log_files(meta)
        self._complete(instant, meta)
        return meta

    def rollback(self, rollback_time: str, target: str, *, command_block: bool = True) -> None:
        """Roll back ``target``: a rollback command block in a new log file, then the instant."""
        if command_block:
            with self._writer(max_file_size=1 << 20) as writer:
                writer.append(encode_rollback_block(rollback_time, target))
        requested = self.timeline.create_requested(Action.ROLLBACK, rollback_time)
        inflight = self.timeline.transition_to_inflight(requested)
        meta = RollbackMetadata(start_rollback_time=rollback_time, commits_rollback=[target])
        self.timeline.complete(inflight, meta.to_avro())

    # -- blocks and files ----------------------------------------------------------------

    def _token(self) -> str:
        self._task += 1
        return f"0-1-{self._task}"

    def _records(self, instant: str, rows: dict[str, str]) -> pa.Table:
        n = len(rows)
        columns = {
            "_hoodie_commit_time": [instant] * n,
            "_hoodie_commit_seqno": [f"{instant}_0_{i}" for i in range(n)],
            "_hoodie_record_key": list(rows),
            "_hoodie_partition_path": [""] * n,
            "_hoodie_file_name": [FILE_ID] * n,
            "id": list(rows),
            "val": list(rows.values()),
        }
        meta = [pa.field(name, pa.string()) for name in META_COLUMNS]
        return pa.table(columns, schema=pa.schema(meta + list(SCHEMA)))

    def _header(self, instant: str, ident: tuple[int, int] | None) -> dict[HeaderKey, str]:
        header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: self.avro_text}
        if ident is not None:
            header[HeaderKey.BLOCK_IDENTIFIER] = block_identifier(*ident)
        return header

    def data(
        self, instant: str, ident: tuple[int, int] | None, rows: dict[str, str],
        compacts: Sequence[str] = (),
    ) -> bytes:
        """An Avro data block of ``instant`` with ``rows`` (id -> val).

        ``compacts``: the instants whose blocks it replaces (a log compaction's block).
        """
        header = self._header(instant, ident)
        if compacts:
            header[HeaderKey.COMPACTED_BLOCK_TIMES] = ",".join(compacts)
        return encode_avro_data_block(self._records(instant, rows), self.avro, header)

    def delete(self, instant: str, ident: tuple[int, int] | None, keys: Sequence[str]) -> bytes:
        """A delete block of ``instant`` (natural order: no ordering value)."""
        records = [DeleteRecord(k, "", 0) for k in keys]
        return encode_delete_block(records, self._header(instant, ident))

    def _writer(self, max_file_size: int) -> LogFileWriter:
        return LogFileWriter(self.storage, "", FILE_ID, BASE, self._token(), max_file_size)

    def write(
        self, blocks: Sequence[bytes], *, max_file_size: int = 1, tail: bytes = b""
    ) -> list[str]:
        """One task attempt's log files: ``blocks`` through one writer, then a torn ``tail``.

        The default ``max_file_size`` puts every block in a file of its own. Returns the names.
        """
        with self._writer(max_file_size) as writer:
            for block in blocks:
                writer.append(block)
        names = [posixpath.basename(rel) for rel, _ in writer.close()]
        if tail:
            last = names[-1]
            self.storage.write_bytes(last, self.storage.read_bytes(last) + tail)
        return names

    def write_raw(self, data: bytes) -> str:
        """A new log file holding ``data`` as is (e.g. blocks of two attempts appended in turn)."""
        versions = [
            parsed.version
            for status in self.storage.list_dir("")
            if (parsed := LogFileName.parse(status.name)) is not None
        ]
        name = LogFileName(FILE_ID, BASE, max(versions, default=0) + 1, self._token()).format()
        self.storage.create_if_absent(name, data)
        return name

    def interleave(self, *attempts: Sequence[bytes]) -> list[list[str]]:
        """Attempts running at once: their blocks alternate between their writers' files."""
        writers = [self._writer(max_file_size=1) for _ in attempts]
        for i in range(max(len(a) for a in attempts)):
            for writer, blocks in zip(writers, attempts, strict=True):
                if i < len(blocks):
                    writer.append(blocks[i])
        return [[posixpath.basename(rel) for rel, _ in w.close()] for w in writers]

    # -- reads ---------------------------------------------------------------------------

    def merge(
        self, mode: str = "full", as_of: str | None = None
    ) -> tuple[pa.Table, SliceReadReport]:
        """The merged slice read through a fresh file-system view, and its report."""
        timeline = self.timeline.reload()
        view = FileSystemView(self.storage, self.props, timeline, as_of)
        (file_slice,) = view.latest_file_slices()
        return merge_file_slice(
            self.storage, self.props, timeline, file_slice, as_of, visible=view.visible,
            reconcile=mode,
        )

    def values(self, mode: str = "full", as_of: str | None = None) -> dict[str, str]:
        """``id -> val`` of the merged slice."""
        table, _ = self.merge(mode, as_of)
        return {row["id"]: row["val"] for row in table.to_pylist()}

    def verdicts(self, mode: str = "full") -> list[tuple[str, tuple[int, int] | None, str]]:
        """``(log file name, block identifier, verdict)`` of every block, in log order."""
        _, report = self.merge(mode)
        return [
            (posixpath.basename(v.block.log_file), v.block.block_identifier, str(v.verdict))
            for v in report.verdicts
        ]
