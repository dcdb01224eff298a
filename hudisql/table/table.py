"""A Hudi table opened from its base path: properties, timeline, schema, file slices, reads.

:class:`HudiTable` is the core's entry point for other modules and tools; it reads
snapshots (and time travel) in pure Python by merging every latest file slice.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from functools import cached_property
from typing import Any

import pyarrow as pa

from hudisql.errors import (
    CorruptTableError,
    HudiSqlError,
    ReadOptionError,
    UnsupportedFormatError,
)
from hudisql.table.format.fsview import FileSlice, FileSystemView
from hudisql.table.format.fsview import base_files_only as base_files_only_view
from hudisql.table.format.instant import Action, Instant
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.schema import avro_to_arrow, with_meta_fields
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.read.merge import read_file_slice

__all__ = ["HudiTable", "normalize_as_of"]

#: Writer schemas of completed instants by (timeline folder, instant file, modification
#: time). A completed instant file never changes; a table opened per SQL statement would
#: otherwise parse a commit's whole metadata (every write stat) again for its schema alone.
_COMMIT_SCHEMAS: OrderedDict[tuple[str, str, datetime], str | None] = OrderedDict()
_COMMIT_SCHEMAS_SIZE = 512
_COMMIT_SCHEMAS_LOCK = threading.Lock()


def _commit_schema(timeline: Timeline, instant: Instant) -> str | None:
    """The writer schema recorded with the completed ``instant``, or None (cached)."""
    mtime = instant.modification_time
    if mtime is None:  # not read from storage: no identity to cache by
        return timeline.commit_metadata(instant).schema
    key = (timeline.storage.full_path(timeline.timeline_dir), instant.file_name, mtime)
    with _COMMIT_SCHEMAS_LOCK:
        if key in _COMMIT_SCHEMAS:
            _COMMIT_SCHEMAS.move_to_end(key)
            return _COMMIT_SCHEMAS[key]
    schema = timeline.commit_metadata(instant).schema
    with _COMMIT_SCHEMAS_LOCK:
        _COMMIT_SCHEMAS[key] = schema
        while len(_COMMIT_SCHEMAS) > _COMMIT_SCHEMAS_SIZE:
            _COMMIT_SCHEMAS.popitem(last=False)
    return schema

# yyyy-MM-dd[[ T]HH:mm:ss[.SSS]], the other spelling Hudi accepts for time travel.
_ISO_INSTANT = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?)?$")


def avro_schema_to_arrow(avro_json: str) -> pa.Schema:
    """The Arrow schema (meta columns first) of a table's Avro schema JSON."""
    avro: dict[str, Any] = json.loads(avro_json)
    return avro_to_arrow(with_meta_fields(avro))


def normalize_as_of(as_of: str | None) -> str | None:
    """``as_of`` as a 17-digit instant time, or None.

    Accepts ``yyyyMMddHHmmssSSS``, ``yyyyMMddHHmmss`` (the whole second: ``999`` is added,
    as Hudi does), ``yyyy-MM-dd HH:mm:ss[.SSS]`` (likewise) and ``yyyy-MM-dd`` (the start
    of that day).

    Raises:
        HudiSqlError: ``as_of`` has none of these forms.
    """
    if as_of is None:
        return None
    text = str(as_of).strip()
    if text.isdigit() and len(text) == 17:
        return text
    if text.isdigit() and len(text) == 14:
        return text + "999"
    m = _ISO_INSTANT.match(text)
    if m:
        *date_time, millis = m.groups()
        if date_time[3] is None:
            return "".join(date_time[:3]) + "000000000"
        return "".join(date_time) + (millis.ljust(3, "0") if millis else "999")
    raise HudiSqlError(
        f"as_of={as_of!r} is not an instant time: give yyyyMMddHHmmssSSS (e.g. "
        "20250331030645735), 'yyyy-MM-dd HH:mm:ss[.SSS]' or 'yyyy-MM-dd'"
    )


class HudiTable:
    """One Hudi table: its storage, ``hoodie.properties``, timeline, schema and file slices.

    Open with :meth:`HudiTable.open`; the object is a snapshot of the timeline at open time
    (call :meth:`reload` to see later commits).
    """

    def __init__(self, storage: Storage, properties: TableProperties, timeline: Timeline) -> None:
        self.storage = storage
        self.properties = properties
        self.timeline = timeline

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> HudiTable:
        """Open the table at ``path`` (a local path or ``scheme://`` URI).

        Raises:
            TableNotFoundError: ``path`` holds no ``.hoodie/hoodie.properties``.
            CorruptTableError: hoodie.properties or an instant file is malformed.
            UnsupportedTableVersionError: the table version is not 6, 8 or 9.
        """
        storage = Storage(os.fspath(path))
        properties = TableProperties.load(storage)
        return cls(storage, properties, Timeline.load(storage, properties))

    def reload(self) -> HudiTable:
        """The same table re-opened: current properties and timeline."""
        properties = TableProperties.load(self.storage)
        return HudiTable(self.storage, properties, Timeline.load(self.storage, properties))

    def __repr__(self) -> str:
        return f"HudiTable({self.name!r}, {self.storage.base_uri!r}, v{self.properties.version})"

    @property
    def name(self) -> str:
        """The table name (``hoodie.table.name``)."""
        return self.properties.table_name

    @property
    def base_path(self) -> str:
        """The table's base path as given to :meth:`open`."""
        return self.storage.base_uri

    # -- schema ----------------------------------------------------------------------------

    @cached_property
    def avro_schema(self) -> str:
        """The table's Avro schema (JSON, without meta fields) as of the last commit.

        Raises:
            CorruptTableError: no commit and no ``hoodie.table.create.schema`` records it.
        """
        return self.avro_schema_as_of(None)

    @cached_property
    def schema(self) -> pa.Schema:
        """The table's Arrow schema, the five meta columns first.

        Raises:
            CorruptTableError: no commit and no ``hoodie.table.create.schema`` records it.
        """
        return avro_schema_to_arrow(self.avro_schema)

    def avro_schema_as_of(self, as_of: str | None) -> str:
        """The Avro schema (JSON) of the last completed write no later than ``as_of``.

        Falls back to ``hoodie.table.create.schema`` when no such commit records a schema.

        Raises:
            CorruptTableError: nothing records the table's schema.
        """
        as_of = normalize_as_of(as_of)
        rolled_back = self.timeline.rolled_back_instants()
        for instant in reversed(self.timeline.completed()):
            if not instant.is_write or instant.timestamp in rolled_back:
                continue
            if as_of is not None and instant.timestamp > as_of:
                continue
            schema = _commit_schema(self.timeline, instant)
            if schema:
                return schema
        boundary = self.timeline.archive_boundary
        if as_of is not None and boundary is not None and as_of < boundary:
            archived = self._archived_schema(as_of, rolled_back)
            if archived:
                return archived
        if self.properties.create_schema:
            return self.properties.create_schema
        raise CorruptTableError(
            f"table {self.name} at {self.base_path}: no completed commit"
            f"{'' if as_of is None else f' up to {as_of}'} records a schema and "
            "hoodie.properties has no hoodie.table.create.schema; write to the table first"
        )

    def _archived_schema(self, as_of: str, rolled_back: set[str]) -> str | None:
        """The schema of the last archived write no later than ``as_of`` (loads the archive)."""
        from hudisql.table.services.archive import ArchivedTimeline

        for entry in reversed(ArchivedTimeline(self.storage, self.timeline).completed()):
            if entry.timestamp > as_of or entry.timestamp in rolled_back:
                continue
            metadata = entry.commit_metadata()
            if metadata is not None and metadata.schema:
                return metadata.schema
        return None

    def check_readable_as_of(self, as_of: str | None) -> None:
        """Refuse a read as of an instant whose files a clean may have deleted.

        A ``KEEP_LATEST_COMMITS`` clean keeps what readers as of its earliest commit to
        retain (or later) need; a reader as of an earlier instant could miss deleted file
        slices and read wrong rows, so it is refused instead.

        Raises:
            ReadOptionError: ``as_of`` is older than the latest clean's earliest commit to
                retain (names both and what to do).
        """
        as_of = normalize_as_of(as_of)
        last = self.timeline.last_completed([Action.CLEAN]) if as_of is not None else None
        if as_of is None or last is None:
            return
        from hudisql.table.format.service_plans import CleanMetadata

        clean = CleanMetadata.parse(self.timeline.read_content(last), last.file_name)
        retained = clean.earliest_commit_to_retain
        if retained and as_of < retained:
            raise ReadOptionError(
                f"table {self.name} cannot be read as of {as_of}: that instant was cleaned "
                f"(the clean at {last.timestamp} deleted file slices readers before {retained} "
                f"need); read as of {retained} or later, or keep more history with "
                "hoodie.cleaner.commits.retained"
            )

    def schema_as_of(self, as_of: str | None) -> pa.Schema:
        """The Arrow schema (meta columns first) as of ``as_of``; see :meth:`avro_schema_as_of`."""
        return avro_schema_to_arrow(self.avro_schema_as_of(as_of))

    # -- file slices and reads -------------------------------------------------------------

    def file_system_view(self, as_of: str | None = None) -> FileSystemView:
        """The file-system view of the table as of ``as_of`` (default: latest)."""
        return FileSystemView(self.storage, self.properties, self.timeline, normalize_as_of(as_of))

    def file_slices(
        self, as_of: str | None = None, partitions: Sequence[str] | None = None
    ) -> list[FileSlice]:
        """The latest file slice of every file group as of ``as_of``.

        Args:
            partitions: relative partition paths to list (default: every partition).
        """
        view = self.file_system_view(as_of)
        if partitions is None:
            return view.latest_file_slices()
        return [s for p in partitions for s in view.latest_file_slices(p)]

    def read(
        self, as_of: str | None = None, columns: Sequence[str] | None = None, *,
        base_files_only: bool = False,
    ) -> pa.Table:
        """Read the table's snapshot (or its state as of ``as_of``) into Arrow.

        Args:
            as_of: an instant time; see :func:`normalize_as_of` for accepted forms.
            columns: the columns to return, in that order (default: all, meta columns first).
            base_files_only: Hudi's read-optimized query: each slice's base file alone (log
                files ignored; slices of log files only hold no rows).

        Returns:
            A ``pyarrow.Table`` of the merged rows of every latest file slice.

        Raises:
            HudiSqlError: ``as_of`` is malformed or a column is not in the table.
            CorruptTableError: the table's schema cannot be found.
            UnsupportedFormatError: a metadata table, whose records merge by Hudi's metadata
                payload (read it with ``hudisql.read_table``).
        """
        if self.properties.is_metadata_table:
            raise UnsupportedFormatError(
                f"{self.base_path} is a metadata table: its records merge by Hudi's metadata "
                "payload, not by record key; read it with hudisql.read_table(path) or "
                "spark.read.format('hudi').load(path)")
        as_of = normalize_as_of(as_of)
        self.check_readable_as_of(as_of)
        schema = self.schema_as_of(as_of)
        if columns is not None:
            unknown = [c for c in columns if c not in schema.names]
            if unknown:
                raise HudiSqlError(
                    f"table {self.name} has no column(s) {unknown}; its columns are {schema.names}"
                )
        view = self.file_system_view(as_of)
        tables = [
            read_file_slice(
                self.storage,
                self.properties,
                self.timeline,
                file_slice,
                as_of,
                columns,
                schema=schema,
                visible=view.visible,
            )
            for file_slice in (base_files_only_view(view.latest_file_slices())
                               if base_files_only else view.latest_file_slices())
        ]
        if not tables:
            empty = schema.empty_table()
            return empty if columns is None else empty.select(list(columns))
        return pa.concat_tables(tables)
