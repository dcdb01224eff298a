"""The indexing action's Avro plans: round trips in Hudi's schemas, the timeline's view."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pytest

from hudisql.errors import CorruptTableError
from hudisql.sql.timeline import timeline_rows
from hudisql.table.format.index_plan import (
    IndexCommitMetadata,
    IndexPartitionInfo,
    IndexPlan,
    index_commit_metadata,
    index_plan,
    pending_indexing,
)
from hudisql.table.format.instant import Action
from hudisql.table.format.properties import TableProperties, new_table_properties
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from hudisql.table.table import HudiTable

PLAN = IndexPlan((IndexPartitionInfo("files", "20240101000000000"),
                  IndexPartitionInfo("secondary_index_idx", "20240101000000000",
                                     {"hudisql.metadata.init.instant": "20240101000000000010"})))


def test_plan_round_trips_as_hudis_avro_record() -> None:
    data = PLAN.to_avro()
    reader = fastavro.reader(io.BytesIO(data))
    schema = reader.writer_schema
    assert isinstance(schema, dict)
    assert schema["name"] == "org.apache.hudi.avro.model.HoodieIndexPlan"
    (record,) = list(reader)
    assert isinstance(record, dict)
    assert record["version"] == 1
    infos = record["indexPartitionInfos"]
    assert [i["metadataPartitionPath"] for i in infos] == ["files", "secondary_index_idx"]
    assert infos[0]["indexUptoInstant"] == "20240101000000000"
    assert IndexPlan.parse(data) == PLAN
    assert PLAN.partitions == ["files", "secondary_index_idx"]
    assert PLAN.base_instant == "20240101000000000"


def test_commit_metadata_round_trips() -> None:
    metadata = IndexCommitMetadata(PLAN.partition_infos)
    parsed = IndexCommitMetadata.parse(metadata.to_avro())
    assert parsed == metadata and parsed.operation_type == "index"


def test_a_0x_plan_with_an_instant_record_reads() -> None:
    info = IndexPartitionInfo.from_record({"version": 1, "metadataPartitionPath": "files",
                                           "indexUptoInstant": {"commitTime": "001",
                                                                "action": "commit"}})
    assert info.index_upto_instant == "001" and info.extra_metadata is None


@pytest.mark.parametrize("data", [b"", b"Obj\x01garbage", IndexCommitMetadata(()).to_avro()])
def test_a_damaged_plan_is_a_clear_error(data: bytes) -> None:
    with pytest.raises(CorruptTableError, match=r"index plan of instant 1\.indexing\.requested"):
        IndexPlan.parse(data, "1.indexing.requested")


def _table(root: Path) -> Timeline:
    storage = Storage(str(root))
    new_table_properties("t", "MERGE_ON_READ", ["id"]).save(storage)
    return Timeline.load(storage, TableProperties.load(storage))


def test_timeline_reads_pending_and_completed_indexing(tmp_path: Path) -> None:
    timeline = _table(tmp_path)
    requested = timeline.create_requested(Action.INDEXING, "20240101000000001", PLAN.to_avro())
    assert [p.plan for p in pending_indexing(timeline)] == [PLAN]
    assert index_plan(timeline, requested.timestamp) == PLAN
    inflight = timeline.transition_to_inflight(requested, PLAN.to_avro())
    done = timeline.complete(inflight, IndexCommitMetadata(PLAN.partition_infos).to_avro())
    assert pending_indexing(timeline.reload()) == []
    assert index_commit_metadata(timeline, done).partitions == PLAN.partitions
    rows = timeline_rows(HudiTable.open(str(tmp_path)))
    assert [(r.action, r.state, r.operation) for r in rows] == [
        ("indexing", "COMPLETED", "index files,secondary_index_idx")]


def test_show_timeline_names_a_pending_plans_partitions(tmp_path: Path) -> None:
    timeline = _table(tmp_path)
    timeline.create_requested(Action.INDEXING, "20240101000000001", PLAN.to_avro())
    (row,) = timeline_rows(HudiTable.open(str(tmp_path)))
    assert (row.state, row.operation) == ("REQUESTED", "index files,secondary_index_idx")
    with pytest.raises(CorruptTableError, match=r"no index plan 2\.indexing\.requested"):
        index_plan(timeline, "2")
