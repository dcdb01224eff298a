"""The indexing action's plans (RFC-45): ``HoodieIndexPlan`` and ``HoodieIndexCommitMetadata``.

``<ts>.indexing.requested`` (and the inflight file) hold an :class:`IndexPlan`: which
metadata-table partitions to build and, per partition, the base instant it is built up to
(``indexUptoInstant``). The completed ``<ts>.indexing`` holds :class:`IndexCommitMetadata`:
the partitions built and the instant each one caught up to. Both are Avro object containers
in Apache Hudi's schemas (``HoodieIndexPlan.avsc``, ``HoodieIndexCommitMetadata.avsc``,
``HoodieIndexPartitionInfo.avsc``; the 1.x version with ``extraMetadata``). No Spark here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hudisql.errors import CorruptTableError
from hudisql.table.format.commit_metadata import read_avro_container, write_avro_container
from hudisql.table.format.instant import Action, Instant, State
from hudisql.table.format.timeline import Timeline

_STRING = '{"type":"string","avro.java.string":"String"}'
_PARTITION_INFO = (
    '{"type":"record","name":"HoodieIndexPartitionInfo","namespace":"org.apache.hudi.avro.model",'
    '"fields":[{"name":"version","type":["int","null"],"default":1},'
    f'{{"name":"metadataPartitionPath","type":["null",{_STRING}],"default":null}},'
    f'{{"name":"indexUptoInstant","type":["null",{_STRING}],"default":null}},'
    '{"name":"extraMetadata","type":["null",{"type":"map","values":'
    f'{_STRING},"avro.java.string":"String"}}],"default":null}}]}}'
)

#: Hudi's ``HoodieIndexPlan`` schema (the content of ``<ts>.indexing.requested``).
INDEX_PLAN_SCHEMA = (
    '{"type":"record","name":"HoodieIndexPlan","namespace":"org.apache.hudi.avro.model",'
    '"fields":[{"name":"version","type":["int","null"],"default":1},'
    '{"name":"indexPartitionInfos","type":["null",{"type":"array","items":'
    f"{_PARTITION_INFO}}}],\"default\":null}}]}}"
)

#: Hudi's ``HoodieIndexCommitMetadata`` schema (the content of a completed ``<ts>.indexing``).
INDEX_COMMIT_METADATA_SCHEMA = (
    '{"type":"record","name":"HoodieIndexCommitMetadata","namespace":"org.apache.hudi.avro.model",'
    '"fields":[{"name":"version","type":["int","null"],"default":1},'
    f'{{"name":"operationType","type":["null",{_STRING}],"default":null}},'
    '{"name":"indexPartitionInfos","type":["null",{"type":"array","items":'
    f"{_PARTITION_INFO}}}],\"default\":null}}]}}"
)


@dataclass(frozen=True)
class IndexPartitionInfo:
    """One metadata partition of an indexing instant (``HoodieIndexPartitionInfo``).

    ``index_upto_instant`` is the data instant the partition is (to be) built up to;
    ``extra_metadata`` is free-form (hudisql keeps nothing vital there).
    """

    metadata_partition_path: str
    index_upto_instant: str | None
    extra_metadata: Mapping[str, str] | None = None
    version: int = 1

    def to_record(self) -> dict[str, Any]:
        """The Avro record."""
        return {
            "version": self.version,
            "metadataPartitionPath": self.metadata_partition_path,
            "indexUptoInstant": self.index_upto_instant,
            "extraMetadata": None if self.extra_metadata is None else dict(self.extra_metadata),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> IndexPartitionInfo:
        """From the Avro record (older plans lack ``extraMetadata``)."""
        upto = record.get("indexUptoInstant")
        if isinstance(upto, Mapping):  # 0.x plans: a HoodieInstantInfo record
            upto = upto.get("commitTime")
        extra = record.get("extraMetadata")
        return cls(
            metadata_partition_path=str(record.get("metadataPartitionPath") or ""),
            index_upto_instant=None if upto is None else str(upto),
            extra_metadata=None if extra is None else dict(extra),
            version=int(record.get("version") or 1),
        )


def _infos(record: Mapping[str, Any]) -> list[IndexPartitionInfo]:
    return [IndexPartitionInfo.from_record(r) for r in record.get("indexPartitionInfos") or []]


@dataclass(frozen=True)
class IndexPlan:
    """The content of ``<ts>.indexing.requested``: the partitions to build, in order."""

    partition_infos: tuple[IndexPartitionInfo, ...]
    version: int = 1

    @property
    def partitions(self) -> list[str]:
        """The metadata partition paths the plan builds, in plan order."""
        return [info.metadata_partition_path for info in self.partition_infos]

    @property
    def base_instant(self) -> str | None:
        """The instant the plan's partitions are built up to (the first one's; all share it)."""
        return self.partition_infos[0].index_upto_instant if self.partition_infos else None

    def to_avro(self) -> bytes:
        """The plan as Hudi writes it: an Avro container in ``HoodieIndexPlan``."""
        record = {
            "version": self.version,
            "indexPartitionInfos": [i.to_record() for i in self.partition_infos],
        }
        return write_avro_container(INDEX_PLAN_SCHEMA, [record])

    @classmethod
    def parse(cls, data: bytes, instant: str | None = None) -> IndexPlan:
        """An index plan from an Avro container.

        Raises:
            CorruptTableError: not a ``HoodieIndexPlan`` container (names the instant).
        """
        record = _read(data, "HoodieIndexPlan", "index plan", instant)
        return cls(tuple(_infos(record)), int(record.get("version") or 1))


@dataclass(frozen=True)
class IndexCommitMetadata:
    """The content of a completed ``<ts>.indexing``: the partitions built and caught up to."""

    partition_infos: tuple[IndexPartitionInfo, ...]
    operation_type: str | None = "index"
    version: int = 1

    @property
    def partitions(self) -> list[str]:
        """The metadata partition paths this indexing completed."""
        return [info.metadata_partition_path for info in self.partition_infos]

    def to_avro(self) -> bytes:
        """The metadata as Hudi writes it: an Avro container in ``HoodieIndexCommitMetadata``."""
        record = {
            "version": self.version,
            "operationType": self.operation_type,
            "indexPartitionInfos": [i.to_record() for i in self.partition_infos],
        }
        return write_avro_container(INDEX_COMMIT_METADATA_SCHEMA, [record])

    @classmethod
    def parse(cls, data: bytes, instant: str | None = None) -> IndexCommitMetadata:
        """Indexing commit metadata from an Avro container.

        Raises:
            CorruptTableError: not a ``HoodieIndexCommitMetadata`` container.
        """
        record = _read(data, "HoodieIndexCommitMetadata", "indexing commit metadata", instant)
        return cls(tuple(_infos(record)), record.get("operationType"),
                   int(record.get("version") or 1))


def _read(data: bytes, name: str, kind: str, instant: str | None) -> dict[str, Any]:
    where = f" of instant {instant}" if instant else ""
    try:
        found, record = read_avro_container(data)
    except ValueError as exc:
        raise CorruptTableError(
            f"the {kind}{where} is malformed ({exc}); the file is damaged: roll the indexing "
            "back (CALL run_indexer(..., mode => 'dropindex')) and schedule it again"
        ) from None
    if found.rsplit(".", 1)[-1] != name:
        raise CorruptTableError(
            f"the {kind}{where} holds a {found or 'nameless'} record instead of {name}; the "
            "file is damaged: roll the indexing back and schedule it again"
        )
    return record


def index_plan(timeline: Timeline, timestamp: str) -> IndexPlan:
    """The plan of the indexing instant at ``timestamp`` (its requested file).

    Raises:
        CorruptTableError: no such requested file, or a malformed plan.
    """
    for f in timeline.instant_files(timestamp):
        if f.action == Action.INDEXING and f.state == State.REQUESTED:
            return IndexPlan.parse(timeline.read_content(f), f.file_name)
    raise CorruptTableError(
        f"no index plan {timestamp}.indexing.requested on the timeline of table "
        f"{timeline.storage.base_uri}; reload the timeline"
    )


def index_commit_metadata(timeline: Timeline, instant: Instant) -> IndexCommitMetadata:
    """The commit metadata of a completed indexing instant.

    Raises:
        CorruptTableError: the file is malformed (names the instant).
    """
    return IndexCommitMetadata.parse(timeline.read_content(instant), instant.file_name)


@dataclass
class PendingIndexing:
    """A requested or inflight indexing instant with its plan (for writers and the indexer)."""

    instant: Instant
    plan: IndexPlan = field(compare=False)


def pending_indexing(timeline: Timeline) -> list[PendingIndexing]:
    """The pending indexing instants of ``timeline``, oldest first, each with its plan.

    Raises:
        CorruptTableError: a plan is malformed.
    """
    return [PendingIndexing(i, index_plan(timeline, i.timestamp))
            for i in timeline.pending([Action.INDEXING])]
