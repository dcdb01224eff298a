"""The metadata table at ``.hoodie/metadata``: a merge-on-read Hudi table of index records.

Its own ``hoodie.properties`` (record key ``key``, HFile base files), its own timeline of
deltacommits, one folder per metadata partition and a fixed set of file groups per
partition, created up front (:meth:`MetadataTable.initialize_partition`). Every deltacommit
uses the instant time of the data-table action it indexes; each writes new log files
(HFILE_DATA blocks of ``HoodieMetadataRecord``, delete blocks for record-index deletes),
never appending to existing ones. Partition builds write HFile base files at the
partition's initialization instant (``<base instant>010``), so later log files extend the
same file slice. A metadata table earlier hudisql wrote keeps parquet base files and Avro
data blocks until it is converted (:mod:`hudisql.metadata.formats`).

A reader sees a metadata instant when it is completed on the metadata timeline and its
data-table instant is completed (and not rolled back) on the data timeline; merges follow
:func:`hudisql.metadata.records.merge_records`.
"""

from __future__ import annotations

import contextlib
import io
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudisql.errors import MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.arrow_records import stored_columns
from hudisql.metadata.config import (
    load_index_definitions,
    save_index_definitions,
    set_partition_state,
)
from hudisql.metadata.formats import (
    EXTENSIONS,
    HFILE,
    PARQUET,
    encode_data_block,
    hfile_base_file,
    record_schema_text,
)
from hudisql.metadata.partitions import PartitionSpec, partition_spec
from hudisql.metadata.reader import read_partition
from hudisql.metadata.records import PartitionUpdate, Record, SharedRecords
from hudisql.table.format import properties as P
from hudisql.table.format.commit_metadata import CommitMetadata, WriteStat
from hudisql.table.format.filenames import BaseFileName, LogFileName, write_token
from hudisql.table.format.fsview import VisibleInstants
from hudisql.table.format.instant import Action, Instant, State
from hudisql.table.format.log.format import DeleteRecord, HeaderKey
from hudisql.table.format.log.writer import encode_delete_block
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.table import HudiTable
from hudisql.table.write.files import (
    MARKER_DIR,
    create_log_files,
    write_marker,
    write_partition_metadata,
)

__all__ = [
    "BUILD_TOKEN",
    "INIT_SUFFIX",
    "METADATA_PATH",
    "MetadataTable",
    "data_instant_of",
    "drop_index",
    "init_instant_time",
    "metadata_properties",
]

METADATA_PATH = ".hoodie/metadata"
#: Hudi's suffix of a partition's initialization instant (``<data instant>010``).
INIT_SUFFIX = "010"
#: The data instant of a build on a table with no completed instant yet.
SOLO_INSTANT = "0" * 17
#: Hudi's key of a table's base file format (a metadata table's: ``HFILE``).
BASE_FORMAT_KEY = "hoodie.table.base.file.format"
#: The key earlier hudisql also wrote into its (parquet) metadata tables.
LEGACY_FORMAT_KEY = "hoodie.metadata.base.file.format"
#: The write token of the files the metadata table writes itself (builds, deltacommits).
BUILD_TOKEN = write_token(0, 0, 0)


def init_instant_time(base_instant: str | None, offset: int = 0) -> str:
    """A metadata instant a partition is initialized (and built) at, after ``base_instant``.

    Hudi's ``<base instant><010 + offset>``: partitions built on one base instant take
    successive offsets.
    """
    if not 0 <= offset < 990:
        raise MetadataTableError(f"initialization offset {offset} is out of range")
    return f"{base_instant or SOLO_INSTANT}{int(INIT_SUFFIX) + offset:03d}"


def data_instant_of(metadata_instant: str) -> str:
    """The data-table instant a metadata instant belongs to (its first 17 digits)."""
    return metadata_instant[:17] if len(metadata_instant) > 17 else metadata_instant


def metadata_properties(data: HudiTable, base_format: str = HFILE) -> P.TableProperties:
    """The hoodie.properties of the metadata table of ``data``.

    Args:
        base_format: ``HFILE`` (Hudi's, the default) or ``PARQUET``, the format earlier
            hudisql wrote (kept to make such tables for tests of their conversion).
    """
    name = f"{data.name}_metadata"
    database = data.properties.database_name or "default"
    if data.properties.version >= 8:
        return _hudi1x_metadata_properties(data, name)
    values = {
        P.NAME: name,
        P.DATABASE: database,
        P.TABLE_TYPE: P.MERGE_ON_READ,
        P.VERSION: str(P.WRITE_VERSION),
        P.TIMELINE_LAYOUT: "1",
        P.RECORD_KEY_FIELDS: "key",
        P.KEYGEN_CLASS: "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
        P.PAYLOAD_CLASS: "org.apache.hudi.metadata.HoodieMetadataPayload",
        P.ARCHIVE_FOLDER: "archived",
        P.CREATE_SCHEMA: record_schema_text(data.properties.version),
        "hoodie.populate.meta.fields": "false",
        BASE_FORMAT_KEY: base_format,
        **({LEGACY_FORMAT_KEY: "parquet"} if base_format == PARQUET else {}),
        P.CHECKSUM: str(P.table_checksum(database, name)),
    }
    return P.TableProperties(values)


def _hudi1x_metadata_properties(data: HudiTable, name: str) -> P.TableProperties:
    """The hoodie.properties Hudi 1.0/1.1 give the metadata table of a version 8/9 table
    (the data table's version, timeline layout 2, HFile, Hudi's CUSTOM merge mode)."""
    version = str(data.properties.version)
    database = data.properties.database_name or "default"
    values = {
        P.NAME: name,
        P.DATABASE: database,
        P.TABLE_TYPE: P.MERGE_ON_READ,
        P.VERSION: version,
        "hoodie.table.initial.version": version,
        P.TIMELINE_LAYOUT: "2",
        P.TIMELINE_PATH: "timeline",
        P.TIMELINE_HISTORY_PATH: "history",
        P.ARCHIVE_FOLDER: "history",
        P.RECORD_KEY_FIELDS: "key",
        P.KEYGEN_TYPE: "HOODIE_TABLE_METADATA",
        P.PAYLOAD_CLASS: P.METADATA_PAYLOAD,
        P.MERGE_MODE: "CUSTOM",
        "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.populate.meta.fields": "false",
        "hoodie.table.timeline.timezone": "UTC",
        BASE_FORMAT_KEY: HFILE,
        P.CHECKSUM: str(P.table_checksum(database, name)),
    }
    return P.TableProperties(values)


def is_init_instant(timestamp: str) -> bool:
    """Whether a 17-digit metadata instant is one of Hudi 1.x's partition initialization
    instants (``00000000000000000``, ``...1``, ...: before any data instant)."""
    return len(timestamp) == 17 and timestamp.startswith("0000000000")


@dataclass
class Slice:
    """The latest slice of one metadata file group: its base instant, base file and logs."""

    file_id: str
    base_instant: str
    base_file: str | None
    log_files: list[str]


class _Visible(VisibleInstants):
    """Metadata instants a reader sees: completed here and valid on the data timeline."""

    def __init__(self, timeline: Timeline, data_timeline: Timeline) -> None:
        super().__init__(timeline)
        self._data = VisibleInstants(data_timeline)

    def __contains__(self, timestamp: object) -> bool:
        if not super().__contains__(timestamp):
            return False
        assert isinstance(timestamp, str)
        data = data_instant_of(timestamp)
        if data == SOLO_INSTANT or data in self._data:
            return True
        # Layout 2 (versions 8/9): partition initializations and the metadata table's own
        # services (compaction, log compaction, clean) take instants of their own.
        return self.timeline.layout >= 2 and (
            is_init_instant(timestamp) or self._own_service(timestamp))

    def _own_service(self, timestamp: str) -> bool:
        return any(f.action in _SERVICE_ACTIONS for f in self.timeline.instant_files(timestamp))


#: The actions of the metadata table's own services (their instants are no data instants).
_SERVICE_ACTIONS = frozenset({Action.COMPACTION, Action.COMMIT, Action.LOGCOMPACTION,
                              Action.CLEAN})


class MetadataTable:
    """The metadata table of one data table (versions 6, 8 and 9: a version 8/9 table's
    metadata table is layout 2 like Hudi 1.x's, its log files named after the deltacommit
    that wrote them and sliced by completion time)."""

    def __init__(self, data: HudiTable) -> None:
        """The metadata table of ``data``.

        Raises:
            MetadataTableError: ``data`` is a version hudisql does not write.
        """
        if data.properties.version not in P.WRITABLE_VERSIONS:
            raise MetadataTableError(
                f"table {data.name} at {data.base_path} is version {data.properties.version}: "
                "hudisql keeps the metadata table of versions "
                f"{', '.join(map(str, P.WRITABLE_VERSIONS))} only: manage its indexes with "
                "Apache Hudi"
            )
        self.data = data
        self.storage = Storage(data.storage.base_uri.rstrip("/") + "/" + METADATA_PATH)
        self._props: P.TableProperties | None = None
        self._timeline: Timeline | None = None

    # -- table ---------------------------------------------------------------------------

    @staticmethod
    def exists_for(data: HudiTable) -> bool:
        """Whether ``data`` has a metadata table folder with its hoodie.properties."""
        return data.storage.is_file(f"{METADATA_PATH}/{P.PROPERTIES_FILE}")

    def create_if_absent(self, base_format: str = HFILE) -> MetadataTable:
        """Lay down the metadata table's hoodie.properties and folders unless they exist
        (``base_format``: see :func:`metadata_properties`)."""
        if not self.storage.is_file(P.PROPERTIES_FILE):
            from hudisql.table.write.create import LAYOUT_2_FOLDERS, TIMELINE_FOLDERS

            layout_2 = self.data.properties.version >= 8
            for folder in LAYOUT_2_FOLDERS if layout_2 else TIMELINE_FOLDERS:
                self.storage.makedirs(folder)
            with contextlib.suppress(FileExistsError):  # another writer was first
                self.storage.create_if_absent(
                    P.PROPERTIES_FILE,
                    P.format_properties(
                        metadata_properties(self.data, base_format)).encode("ascii"),
                )
        self._props = self._timeline = None
        return self

    @property
    def properties(self) -> P.TableProperties:
        """The metadata table's hoodie.properties.

        Raises:
            MetadataTableError: the data table has no metadata table.
        """
        if self._props is None:
            if not self.storage.is_file(P.PROPERTIES_FILE):
                raise MetadataTableError(
                    f"table {self.data.name} at {self.data.base_path} has no metadata table "
                    f"({METADATA_PATH}); create an index first"
                )
            self._props = P.TableProperties.load(self.storage)
        return self._props

    @property
    def base_format(self) -> str:
        """``HFILE``, or ``PARQUET`` for a metadata table earlier hudisql wrote: the format
        of the base files and (with it) of the data blocks this table's writers write."""
        found = self.properties.get(BASE_FORMAT_KEY, HFILE).upper()
        if found not in EXTENSIONS:
            raise MetadataTableError(
                f"the metadata table of table {self.data.name} at {self.data.base_path} keeps "
                f"{found} base files; hudisql reads and writes HFILE (and earlier PARQUET)")
        return found

    @property
    def record_schema(self) -> str:
        """The ``HoodieMetadataRecord`` schema text its files carry (by table version)."""
        return record_schema_text(self.data.properties.version)

    @property
    def value_types(self) -> bool:
        """Whether column statistics are kept in version 9's form (``valueType``)."""
        return self.data.properties.version >= 9

    @property
    def timeline(self) -> Timeline:
        """The metadata table's timeline (loaded once; :meth:`reload` to see new instants)."""
        if self._timeline is None:
            self._timeline = Timeline.load(self.storage, self.properties)
        return self._timeline

    def reload(self, data: HudiTable | None = None) -> MetadataTable:
        """Forget cached properties and timelines (optionally with a newer data table)."""
        if data is not None:
            self.data = data
        self._props = self._timeline = None
        return self

    # -- partitions and file groups -------------------------------------------------------

    def partitions(self) -> list[str]:
        """Partition folders present in the metadata table (built or not)."""
        if not self.storage.exists(""):
            return []
        return sorted(s.name for s in self.storage.list_dir("")
                      if s.is_dir and not s.name.startswith("."))

    def file_group_ids(self, partition: str) -> list[str]:
        """The file group ids of a partition, in index order ([] when not initialized)."""
        if not self.storage.exists(partition):
            return []
        ids: set[str] = set()
        for status in self.storage.list_dir(partition):
            base = BaseFileName.parse(status.name)
            log = LogFileName.parse(status.name) if base is None else None
            if base is not None:
                ids.add(base.file_id)
            elif log is not None:
                ids.add(log.file_id)
        return sorted(ids)

    def initialize_partition(self, partition: str, count: int, instant_time: str) -> list[str]:
        """Create a partition's ``count`` file groups, each with an empty log file.

        Done under the table lock when an index is scheduled (RFC-45 race 3c): writers that
        commit later find every file group. The metadata deltacommit ``instant_time`` is
        left inflight until the build completes it (:meth:`complete_instant`).

        Returns:
            The file group ids.

        Raises:
            MetadataTableError: the partition already has file groups (drop it first), or a
                bad count.
        """
        spec = partition_spec(partition)
        if count < 1:
            raise MetadataTableError(
                f"metadata partition {partition} needs at least one file group, not {count}"
            )
        if self.file_group_ids(partition):
            raise MetadataTableError(
                f"metadata partition {partition} of table {self.data.name} is initialized "
                "already; drop it before initializing it again"
            )
        self.create_if_absent()
        instant = self._begin(instant_time)
        write_partition_metadata(self.storage, partition, instant.timestamp)
        ids = spec.file_group_ids(count)
        empty = encode_delete_block([], {HeaderKey.INSTANT_TIME: instant_time})
        for file_id in ids:
            create_log_files(self.storage, partition, file_id, instant_time, instant_time,
                              BUILD_TOKEN, [empty], 1 << 30)
        return ids

    def write_base_files(
        self, partition: str, records: Sequence[Record] | pa.Table, instant_time: str
    ) -> list[WriteStat]:
        """Write a partition's records as one base file per file group.

        ``instant_time`` is the partition's initialization instant (the file groups' slice).
        Records (dicts, or rows in the base-file shape) are routed by key.

        Raises:
            MetadataTableError: the partition is not initialized.
        """
        ids = self.require_groups(partition)
        rows = records if isinstance(records, pa.Table) else S.to_parquet_rows(list(records))
        owner = pa.array(partition_spec(partition).route(rows.column("key"), len(ids)))
        return [self.write_base_file(partition, file_id, rows.filter(pc.equal(owner, index)),
                                     instant_time)
                for index, file_id in enumerate(ids)]

    def write_base_file(
        self, partition: str, file_id: str, rows: pa.Table, instant_time: str,
        routed: bool = False, base_format: str | None = None,
    ) -> WriteStat:
        """Write one file group's base file: ``rows`` (base-file shape; payload columns
        may be left out), sorted by key, each key once. An HFile (:attr:`base_format`) of
        the records in Avro; or, in a parquet metadata table, the rows without the payload
        columns null in every row (readers restore them: reader.py).

        A pure function of storage, so a Spark task can write its file group; the rows must
        all route to ``file_id``. A re-run replaces the file (a half-built partition).

        Args:
            routed: the caller routed the rows with :meth:`PartitionSpec.route` itself (an
                index build's writer): they are not hashed again to check.
            base_format: the format to write (default :attr:`base_format`; a compaction
                writes HFile into a parquet metadata table it converts).

        Raises:
            MetadataTableError: a row whose key belongs to another file group, or a column
                not in the base-file shape.
        """
        ids = self.require_groups(partition)
        index = ids.index(file_id) if file_id in ids else -1
        spec = partition_spec(partition)
        if index < 0:
            raise MetadataTableError(
                f"metadata partition {partition} has no file group {file_id} (it has "
                f"{', '.join(ids)})")
        if (rows.num_rows and not routed
                and (spec.route(rows.column("key"), len(ids)) != index).any()):
            raise MetadataTableError(
                f"rows given for file group {file_id} of metadata partition {partition} hold "
                "keys of other file groups; route them with PartitionSpec.route"
            )
        try:
            rows = stored_columns(rows)
        except MetadataTableError as exc:
            raise MetadataTableError(
                f"rows given for file group {file_id} of metadata partition {partition}: "
                f"{exc}") from None
        keys = rows.column("key")
        if rows.num_rows > 1 and not pc.all(pc.less_equal(
                keys.slice(0, rows.num_rows - 1), keys.slice(1))).as_py():
            rows = rows.sort_by("key")  # a costly take over every column: only when needed
        written = base_format or self.base_format
        name = BaseFileName(file_id, BUILD_TOKEN, instant_time, EXTENSIONS[written]).format()
        rel = posixpath.join(partition, name)
        if written == HFILE:
            data = hfile_base_file(rows, self.record_schema, value_types=self.value_types)
        else:
            data = _parquet_base_file(rows)
        write_marker(self.storage, instant_time, partition, name, "CREATE")
        self.storage.delete(rel)
        self.storage.create_if_absent(rel, data)
        return WriteStat(file_id=file_id, path=rel, num_writes=rows.num_rows,
                         num_inserts=rows.num_rows, partition_path=partition,
                         total_write_bytes=len(data), file_size_in_bytes=len(data))

    def complete_instant(self, instant_time: str, stats: Iterable[WriteStat] = ()) -> None:
        """Complete the metadata deltacommit ``instant_time`` (commit metadata: ``stats``)."""
        timeline = self.timeline
        instant = timeline.get(instant_time)
        if instant is None or instant.is_completed:
            raise MetadataTableError(
                f"metadata instant {instant_time} of table {self.data.name} is "
                f"{'completed' if instant else 'not on the metadata timeline'}; nothing to complete"
            )
        metadata = CommitMetadata(operation_type="UPSERT_PREPPED",
                                  extra_metadata={"schema": self.record_schema})
        for stat in stats:
            metadata.add_write_stat(stat)
        timeline.complete(instant, metadata.to_json())
        # Completed: a rollback finds the files in the commit metadata, not the markers.
        self.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")
        self._timeline = None
    def build_partition(
        self, partition: str, records: Sequence[Record], base_instant: str | None, count: int
    ) -> str:
        """Initialize, build and complete a partition from scratch; returns its instant.

        The from-scratch path (tests, validation, rebuilds) of what the indexer does in
        steps: :meth:`initialize_partition`, :meth:`write_base_files`,
        :meth:`complete_instant`.
        """
        ts = self.new_init_instant(base_instant)
        self.initialize_partition(partition, count, ts)
        stats = self.write_base_files(partition, records, ts)
        self.complete_instant(ts, stats)
        return ts

    def new_init_instant(self, base_instant: str | None) -> str:
        """The first initialization instant after ``base_instant`` not on the metadata timeline.

        Layout 2 (versions 8/9): Hudi 1.x's ``00000000000000000``, ``...1``, ...: the first
        one not on the metadata timeline (``base_instant`` is not part of it).
        """
        timeline = self.create_if_absent().timeline
        if timeline.layout >= 2:
            number = 0
            while timeline.instant_files(f"{number:017d}"):
                number += 1
            return f"{number:017d}"
        offset = 0
        while timeline.get(init_instant_time(base_instant, offset)) is not None:
            offset += 1
        return init_instant_time(base_instant, offset)

    def drop_partition(self, partition: str) -> None:
        """Remove a metadata partition's folder and every file in it (idempotent)."""
        partition_spec(partition)
        self.storage.delete_dir(partition)

    # -- deltacommits ---------------------------------------------------------------------

    def _begin(self, instant_time: str) -> Instant:
        timeline = self.timeline
        current = timeline.get(instant_time)
        if current is not None:
            if current.is_completed:
                raise MetadataTableError(
                    f"metadata instant {instant_time} of table {self.data.name} is completed "
                    "already; roll it back before writing it again"
                )
            return current if current.is_inflight else timeline.transition_to_inflight(current)
        requested = timeline.create_requested(Action.DELTACOMMIT, instant_time)
        inflight = timeline.transition_to_inflight(requested)
        self._timeline = None
        return inflight

    def write_deltacommit(
        self, instant_time: str, updates: Mapping[str, PartitionUpdate]
    ) -> CommitMetadata:
        """Write one metadata deltacommit: each partition's records to its file groups.

        A deltacommit already at ``instant_time`` (a retried commit) is rolled back first.
        Every partition must be initialized.

        Returns:
            The metadata deltacommit's commit metadata.

        Raises:
            MetadataTableError: a partition without file groups.
        """
        for partition in updates:
            self.require_groups(partition)
        if self.timeline.get(instant_time) is not None:
            self.rollback(instant_time)
        instant = self._begin(instant_time)
        schema = self.record_schema
        metadata = CommitMetadata(operation_type="UPSERT_PREPPED",
                                  extra_metadata={"schema": schema})
        header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema}
        base_format = self.base_format
        for partition, update in updates.items():
            if not update:
                metadata.partition_to_write_stats.setdefault(partition, [])
                continue
            ids = self.require_groups(partition)
            slices = self.latest_slices(partition, ids, for_write=True)
            spec = partition_spec(partition)
            routed = _route(spec, update.records, len(ids))
            deleted = _route(spec, update.deletes, len(ids))
            shared = [(_route_array(spec, s.key_array(), len(ids)), s.template)
                      for s in update.shared]
            for index, file_id in enumerate(ids):
                rows, gone = routed.get(index, []), deleted.get(index, [])
                alike = [SharedRecords(keys[index], t) for keys, t in shared if index in keys]
                n_rows = len(rows) + sum(len(s.keys) for s in alike)
                if not n_rows and not gone:
                    continue
                blocks = []
                if n_rows:
                    blocks.append(encode_data_block(base_format, header, rows, alike,
                                                    value_types=self.value_types))
                if gone:
                    blocks.append(encode_delete_block(
                        [DeleteRecord(k, "", 0) for k in gone],
                        {HeaderKey.INSTANT_TIME: instant_time},
                    ))
                base = slices[file_id].base_instant
                # Layout 2 names a log file after the deltacommit that writes it.
                named = instant_time if self.timeline.layout >= 2 else base
                written = create_log_files(self.storage, partition, file_id, named,
                                            instant_time, BUILD_TOKEN, blocks, 1 << 30)
                for rel, size in written:
                    metadata.add_write_stat(WriteStat(
                        file_id=file_id, path=rel, prev_commit=base, num_writes=n_rows,
                        num_deletes=len(gone), num_update_writes=n_rows,
                        partition_path=partition, total_write_bytes=size,
                        file_size_in_bytes=size, log_files=[posixpath.basename(rel)],
                    ))
        self.timeline.complete(instant, metadata.to_json())
        self.storage.delete_dir(f"{MARKER_DIR}/{instant_time}")
        self._timeline = None
        return metadata

    def has_completed(self, instant_time: str) -> bool:
        """Whether the metadata deltacommit ``instant_time`` completed (RFC-45 catch-up)."""
        instant = self.timeline.get(instant_time)
        return instant is not None and instant.is_completed

    def rollback(self, instant_time: str) -> bool:
        """Undo the metadata deltacommit ``instant_time``: its files, then its instant files.

        Idempotent and safe after a crash: the files come from the completed commit metadata
        or, for a pending one, from its markers. Readers ignore the instant throughout (its
        data-table instant is pending or rolled back).

        Returns:
            Whether there was anything to undo.
        """
        if not self.storage.is_file(P.PROPERTIES_FILE):
            return False
        timeline = self.timeline
        states = timeline.instant_files(instant_time)
        marker_dir = f"{MARKER_DIR}/{instant_time}"
        files: set[str] = set()
        completed = next((i for i in states if i.is_completed), None)
        if completed is not None:
            for stat in timeline.commit_metadata(completed).write_stats():
                if stat.path:
                    files.add(stat.path)
        if self.storage.exists(marker_dir):
            for status in self.storage.list_recursive(marker_dir):
                if not status.is_dir and ".marker." in status.name:
                    rel = posixpath.relpath(status.path, marker_dir)
                    files.add(rel.rsplit(".marker.", 1)[0])
        if not states and not files:
            return False
        for rel in sorted(files):
            self.storage.delete(rel)
        for state in (State.COMPLETED, State.INFLIGHT, State.REQUESTED):
            for instant in states:
                if instant.state == state:
                    self.storage.delete(f"{timeline.timeline_dir}/{instant.file_name}")
        self.storage.delete_dir(marker_dir)
        self._timeline = None
        return True

    # -- reads ----------------------------------------------------------------------------

    def require_groups(self, partition: str) -> list[str]:
        ids = self.file_group_ids(partition)
        if not ids:
            raise MetadataTableError(
                f"metadata partition {partition} of table {self.data.name} has no file groups: "
                "initialize it (schedule its index) first"
            )
        return ids

    def latest_slices(
        self, partition: str, ids: Sequence[str], *, for_write: bool = False
    ) -> dict[str, Slice]:
        """Each file group's latest slice: the newest base instant on the metadata timeline.

        For writes any state counts (a partition being built is pending); for reads only
        instants a reader sees.
        """
        timeline = self.timeline
        visible = self.visible_instants()

        def ok(ts: str) -> bool:
            return timeline.get(ts) is not None if for_write else ts in visible

        bases: dict[str, dict[str, str]] = {i: {} for i in ids}
        logs: dict[str, list[LogFileName]] = {i: [] for i in ids}
        for status in self.storage.list_dir(partition):
            base = BaseFileName.parse(status.name)
            if base is not None and base.file_id in bases and ok(base.instant):
                bases[base.file_id][base.instant] = status.name
                continue
            log = LogFileName.parse(status.name)
            if log is not None and log.file_id in logs and log.extension == "log":
                logs[log.file_id].append(log)
        if timeline.layout >= 2:
            return self._slices_by_completion(partition, ids, bases, logs, ok)
        out = {}
        for file_id in ids:
            candidates = set(bases[file_id]) | {
                lg.base_instant for lg in logs[file_id] if timeline.get(lg.base_instant)
            }
            if not candidates:
                raise MetadataTableError(
                    f"file group {file_id} of metadata partition {partition} has no slice on "
                    "the metadata timeline: drop the partition and build it again"
                )
            ordered = sorted(candidates)
            base_ts = ordered[-1]
            slice_logs = self._slice_logs(logs[file_id], base_ts)
            base_file = bases[file_id].get(base_ts)
            pending = timeline.get(base_ts)
            if (not for_write and base_file is None and len(ordered) > 1 and pending is not None
                    and pending.action == Action.COMPACTION and not pending.is_completed):
                # A compaction still running: its slice's logs extend the slice it compacts.
                base_ts = ordered[-2]
                base_file = bases[file_id].get(base_ts)
                slice_logs = self._slice_logs(logs[file_id], base_ts) + slice_logs
            out[file_id] = Slice(file_id, base_ts, base_file, slice_logs)
        return out

    def _slices_by_completion(
        self, partition: str, ids: Sequence[str], bases: Mapping[str, Mapping[str, str]],
        logs: Mapping[str, Sequence[LogFileName]], ok: Any,
    ) -> dict[str, Slice]:
        """Layout 2: each log file (named after its deltacommit) belongs to the slice of the
        latest base file no later than that deltacommit's completion (pending: the latest)."""
        timeline = self.timeline
        out = {}
        for file_id in ids:
            ordered = sorted(bases[file_id])
            kept: list[tuple[str, str, LogFileName]] = []
            for lg in logs[file_id]:
                if not ok(lg.base_instant):
                    continue
                instant = timeline.get(lg.base_instant)
                done = instant.completion_time if instant is not None else None
                kept.append((done or "\uffff", lg.base_instant, lg))
            if not ordered and not kept:
                raise MetadataTableError(
                    f"file group {file_id} of metadata partition {partition} has no slice on "
                    "the metadata timeline: drop the partition and build it again"
                )
            base_ts = ordered[-1] if ordered else min(k[1] for k in kept)
            slice_logs = sorted(
                (k for k in kept if not ordered or k[0] >= base_ts),
                key=lambda k: (k[0], k[1], k[2].version, k[2].write_token or ""))
            out[file_id] = Slice(file_id, base_ts, bases[file_id].get(base_ts),
                                 [k[2].format() for k in slice_logs])
        return out

    @staticmethod
    def _slice_logs(logs: Sequence[LogFileName], base_instant: str) -> list[str]:
        return [lg.format() for lg in sorted(
            (lg for lg in logs if lg.base_instant == base_instant),
            key=lambda lg: (lg.version, lg.write_token or ""))]

    def visible_instants(self) -> VisibleInstants:
        return _Visible(self.timeline, self.data.timeline)

    def read_partition(
        self, partition: str, keys: Iterable[str] | None = None,
        prefixes: Iterable[str] | None = None,
    ) -> dict[str, Record]:
        """The merged records of a partition, by key (deletion markers included).

        Args:
            keys: only these keys (looked up in their file groups only).
            prefixes: only keys starting with one of these.

        Raises:
            MetadataTableError: the partition is not initialized.
        """
        return read_partition(self, partition, keys, prefixes)


#: About how many bytes (in memory) of records one row group of a base file holds.
ROW_GROUP_BYTES = 2 << 20
#: The base files' dictionary-encoded columns: the record type and the record index's
#: location fields (the data file groups a metadata file group's keys live in).
_DICTIONARY = ["type", *(f"recordIndexMetadata.{name}" for name in (
    "partitionName", "fileIdHighBits", "fileIdLowBits", "fileIndex", "fileId", "instantTime",
    "fileIdEncoding"))]
#: At most this many rows per row group: a lookup decodes every column of its row group.
ROW_GROUP_MAX_ROWS = 1 << 15


def _parquet_base_file(rows: pa.Table) -> bytes:
    """A base file of a parquet metadata table (one earlier hudisql wrote)."""
    sink = io.BytesIO()
    # The payload columns null in every row are left out (stored_columns): writing
    # their fifty-odd null leaf columns was more than half the time of writing an
    # index's base file, and a lookup decoded them too.
    # Row groups of about two megabytes: a lookup by key decodes only the row groups
    # whose key range holds it (rows are sorted by key), not the whole file. Statistics
    # of the key only (what lookups prune by), dictionaries only for the record type
    # and the record index's locations (few per file group; parquet falls back to
    # plain pages when there are many): half the write time of the defaults, and
    # smaller files. Sorted keys share long prefixes, which DELTA_BYTE_ARRAY stores
    # once: with snappy, a 500k-key record index file writes in 14% less time than
    # plain zstd pages, reads in half the time, and is a fifth smaller.
    pq.write_table(rows, sink, compression="snappy", store_schema=False,
                   row_group_size=_row_group_rows(rows), use_dictionary=_DICTIONARY,
                   column_encoding={"key": "DELTA_BYTE_ARRAY"}, write_statistics=["key"])
    return sink.getvalue()


def _row_group_rows(rows: pa.Table) -> int:
    """Rows per row group so that a group holds about :data:`ROW_GROUP_BYTES` of the
    columns that hold values (the payloads a partition does not use are all null: the
    file leaves them out, though their cached null runs are large in memory), at most
    :data:`ROW_GROUP_MAX_ROWS`."""
    count = int(rows.num_rows)
    if not count:
        return 1
    used = sum(int(c.nbytes) for c in rows.columns if c.null_count < count)
    per_row = max(1, used // count)
    return max(1, min(count, ROW_GROUP_MAX_ROWS, ROW_GROUP_BYTES // per_row))


def _route_array(spec: PartitionSpec, keys: pa.Array, count: int) -> dict[int, pa.Array]:
    """Keys (an Arrow array) by the file group they go to, each group's a zero-copy slice
    of the keys ordered by group."""
    if not len(keys):
        return {}
    groups = spec.route(keys, count)
    order = np.argsort(groups, kind="stable")
    ordered = keys.take(pa.array(order))
    found, starts, counts = np.unique(groups[order], return_index=True, return_counts=True)
    return {int(g): ordered.slice(int(s), int(n))
            for g, s, n in zip(found.tolist(), starts.tolist(), counts.tolist(), strict=True)}


def _route(spec: PartitionSpec, items: Sequence[Any], count: int) -> dict[int, list[Any]]:
    """Records (or keys) by the file group they go to."""
    out: dict[int, list[Any]] = {}
    if not items:
        return out
    keys = [item if isinstance(item, str) else item["key"] for item in items]
    for item, index in zip(items, spec.route(keys, count).tolist(), strict=True):
        out.setdefault(index, []).append(item)
    return out


def drop_index(data: HudiTable, partition: str) -> HudiTable:
    """Remove a metadata partition: from hoodie.properties and index.json, then its files.

    The table config goes first (callers hold the table lock), so no commit writes to the
    partition while its folder goes; a crash in between leaves a folder nobody reads, which
    a re-run removes. Idempotent.

    Returns:
        The data table reloaded.
    """
    partition_spec(partition)
    data = set_partition_state(data, partition, None)
    definitions = load_index_definitions(data)
    if partition in definitions:
        del definitions[partition]
        data = save_index_definitions(data, definitions)
    if MetadataTable.exists_for(data):
        MetadataTable(data).drop_partition(partition)
    return data
