"""Table service plans and metadata as Hudi's Avro containers: round trips, the embedded
schemas readable by a generic Avro reader, and clear errors for malformed files."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from hudisql.errors import CorruptTableError
from hudisql.table.format.commit_metadata import write_avro_container
from hudisql.table.format.instant import Action, Instant, State
from hudisql.table.format.service_plans import (
    COMPACTION_PLAN_SCHEMA,
    LOG_COMPACTION_EXECUTOR,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    CompactionOperation,
    CompactionPlan,
    CompactionStrategy,
)

OP = CompactionOperation(
    "fid-0", "city=sf", "20240101000000000",
    [".fid-0_20240101000000000.log.1_0-1-1", ".fid-0_20240101000000000.log.2_0-1-2"],
    "fid-0_0-1-0_20240101000000000.parquet", {"TOTAL_LOG_FILES": 2.0})


def test_compaction_plan_round_trips_and_is_plain_avro() -> None:
    plan = CompactionPlan([OP], {"k": "v"}, strategy=CompactionStrategy(LOG_COMPACTION_EXECUTOR),
                          preserve_hoodie_metadata=True)
    data = plan.to_avro()
    assert CompactionPlan.parse(data) == plan
    [record] = list(fastavro.reader(io.BytesIO(data)))
    assert record["version"] == 2
    assert record["operations"][0]["deltaFilePaths"] == OP.delta_file_paths
    assert record["strategy"]["compactorClassName"] == LOG_COMPACTION_EXECUTOR


def test_a_version_1_plan_names_files_by_path() -> None:
    record = {**OP.to_record(), "deltaFilePaths": ["/t/city=sf/" + OP.delta_file_paths[0]],
              "dataFilePath": "/t/city=sf/" + str(OP.data_file_path)}
    data = write_avro_container(COMPACTION_PLAN_SCHEMA, [{
        "operations": [record], "extraMetadata": None, "version": 1, "strategy": None,
        "preserveHoodieMetadata": None}])
    [op] = CompactionPlan.parse(data).operations
    assert op.delta_file_paths == OP.delta_file_paths[:1]
    assert op.data_file_path == OP.data_file_path


def test_cleaner_plan_and_clean_metadata_round_trip() -> None:
    plan = CleanerPlan("KEEP_LATEST_COMMITS",
                       Instant("20240101000000000", Action.COMMIT, State.COMPLETED),
                       {"city=sf": [CleanFileInfo("/t/city=sf/a.parquet")]})
    assert CleanerPlan.parse(plan.to_avro()) == plan
    meta = CleanMetadata("KEEP_LATEST_COMMITS", "20240102000000000", "20240101000000000",
                         partition_metadata={"city=sf": CleanPartitionMetadata(
                             "city=sf", "KEEP_LATEST_COMMITS", ["a.parquet"], ["a.parquet"])})
    again = CleanMetadata.parse(meta.to_avro())
    assert again == meta and again.total_files_deleted == 1


@pytest.mark.parametrize(("parse", "other"), [
    (CompactionPlan.parse, CleanerPlan("X").to_avro()),
    (CleanerPlan.parse, CompactionPlan().to_avro()),
    (CleanMetadata.parse, CompactionPlan().to_avro()),
])
def test_malformed_content_is_a_clear_error(parse: Any, other: bytes) -> None:
    with pytest.raises(CorruptTableError, match=r"of instant 001.*malformed"):
        parse(b"not avro", "001")
    with pytest.raises(CorruptTableError, match="malformed"):
        parse(other, "001")
