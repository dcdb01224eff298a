"""Commit metadata (v6 JSON, v8 Avro) and rollback plans and metadata (Avro), both ways."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hudisql.errors import CorruptTableError
from hudisql.table.format.commit_metadata import (
    NULL_COMMIT,
    CommitMetadata,
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    WriteStat,
)
from tests.fixtures import FIXTURES, TABLE_ZIPS, table_path

V6_COMMIT = FIXTURES / "commit_metadata" / "v6_commit.json"
V8_DELTACOMMIT = FIXTURES / "commit_metadata" / "v8_deltacommit.avro"
V6_DELTA_STAT_FILE = "v6_trips_8i1u/.hoodie/20250331030645735.deltacommit"
ROLLBACK = "v6_nonpartitioned_rollback/.hoodie/20250126040936578.rollback"


def fixture_file(rel: str) -> Path:
    name, rest = rel.split("/", 1)
    return table_path(name) / rest


def v6_json_instant_files() -> list[Path]:
    """Every JSON commit, deltacommit and inflight file of the v6 fixture tables."""
    files = []
    for name in sorted(TABLE_ZIPS):
        for path in sorted((table_path(name) / ".hoodie").iterdir()):
            if path.is_file() and path.stat().st_size and path.suffix in (
                ".commit", ".deltacommit", ".inflight"
            ):
                files.append(path)
    return files


def ordered(data: bytes) -> Any:
    """JSON with every object as a list of pairs, so that key order is compared too."""
    return json.loads(data, object_pairs_hook=list)


# -- reading ---------------------------------------------------------------------------------


def test_parse_the_v6_json_fixture() -> None:
    metadata = CommitMetadata.parse(V6_COMMIT.read_bytes())
    assert list(metadata.partition_to_write_stats) == [""]
    (stat,) = metadata.write_stats()
    assert stat.file_id == "a079bdb3-731c-4894-b855-abfcd6921007-0"
    assert stat.path == "a079bdb3-731c-4894-b855-abfcd6921007-0_0-203-274_20240418173551906.parquet"
    assert stat.prev_commit == "20240418173550988"
    assert (stat.num_writes, stat.num_deletes, stat.num_update_writes, stat.num_inserts) == (
        4, 0, 1, 1)
    assert (stat.total_write_bytes, stat.total_write_errors, stat.file_size_in_bytes) == (
        441520, 0, 441520)
    assert stat.partition_path == ""
    assert not stat.is_delta and stat.log_files == [] and stat.log_version is None
    assert stat.extra == {"runtimeStats": {"totalScanTime": 0, "totalUpsertTime": 105,
                                           "totalCreateTime": 0}}
    assert metadata.compacted is False
    assert metadata.operation_type == "UPSERT"
    assert json.loads(metadata.schema or "")["name"] == "v6_nonpartitioned_record"
    assert metadata.file_ids() == {"a079bdb3-731c-4894-b855-abfcd6921007-0"}


def test_parse_the_v8_avro_fixture() -> None:
    metadata = CommitMetadata.parse(V8_DELTACOMMIT.read_bytes())
    counts = {p: [(s.num_writes, s.num_inserts, s.prev_commit) for s in stats]
              for p, stats in metadata.partition_to_write_stats.items()}
    assert counts == {
        "city=san_francisco": [(4, 4, NULL_COMMIT)],
        "city=sao_paulo": [(2, 2, NULL_COMMIT)],
        "city=chennai": [(2, 2, NULL_COMMIT)],
    }
    stat = metadata.partition_to_write_stats["city=chennai"][0]
    assert stat.path == (
        "city=chennai/58fccab1-a55c-4b22-b74e-22b747ad4a44-0_2-252-391_20250713011913147.parquet"
    )
    assert stat.partition_path == "city=chennai" and stat.file_size_in_bytes == 436193
    assert stat.extra["numUpdates"] == 0  # Avro-only fields are kept
    assert metadata.operation_type == "UPSERT"
    assert json.loads(metadata.schema or "")["name"] == "v8_trips_8i1u_record"


def test_v6_json_and_v8_avro_of_the_same_write_parse_alike() -> None:
    v6 = CommitMetadata.parse(fixture_file("v6_trips_8i1u/.hoodie/20250331030642808.deltacommit")
                              .read_bytes())
    v8 = CommitMetadata.parse(V8_DELTACOMMIT.read_bytes())

    def shape(m: CommitMetadata) -> dict[str, list[tuple[int, int, int, str | None]]]:
        return {p: [(s.num_writes, s.num_inserts, s.num_update_writes, s.partition_path)
                    for s in stats] for p, stats in m.partition_to_write_stats.items()}

    assert shape(v6) == shape(v8)
    assert (v6.operation_type, v6.compacted) == (v8.operation_type, v8.compacted)
    schema = json.loads(v6.schema or "")
    assert schema["fields"] == json.loads(v8.schema or "")["fields"]


# -- writing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", v6_json_instant_files(), ids=lambda p: f"{p.parent.parent.name}/{p.name}"
)
def test_every_v6_json_instant_file_round_trips_exactly(path: Path) -> None:
    raw = path.read_bytes()
    metadata = CommitMetadata.parse(raw)
    written = metadata.to_json()
    assert ordered(written) == ordered(raw)  # same keys, same order, same values
    assert CommitMetadata.parse(written) == metadata


def test_written_write_stats_have_the_fixtures_keys() -> None:
    base = WriteStat(file_id="f-0", path="f-0_0-1-2_20250101000000000.parquet",
                     partition_path="", num_writes=1, num_inserts=1)
    hudi_base = json.loads(V6_COMMIT.read_bytes())["partitionToWriteStats"][""][0]
    assert list(base.to_dict()) == list(hudi_base)

    delta = WriteStat(file_id="f-0", path="p/.f-0_20250101000000000.log.1_0-1-2",
                      partition_path="p", num_writes=1, num_update_writes=1,
                      log_version=1, log_offset=0, base_file="f-0_0-1-2_20250101000000000.parquet",
                      log_files=[".f-0_20250101000000000.log.1_0-1-2"])
    hudi_delta_file = json.loads(fixture_file(V6_DELTA_STAT_FILE).read_bytes())
    hudi_delta = hudi_delta_file["partitionToWriteStats"]["city=san_francisco"][0]
    assert list(delta.to_dict()) == list(hudi_delta)

    metadata = CommitMetadata(extra_metadata={"schema": "{}"}, operation_type="UPSERT")
    metadata.add_write_stat(delta)
    assert list(json.loads(metadata.to_json())) == list(hudi_delta_file)
    assert list(metadata.partition_to_write_stats) == ["p"]


def test_avro_metadata_written_as_json_reads_back_equal() -> None:
    metadata = CommitMetadata.parse(V8_DELTACOMMIT.read_bytes())
    assert CommitMetadata.parse(metadata.to_json()) == metadata


def test_replace_commit_metadata() -> None:
    metadata = CommitMetadata(operation_type="CLUSTER",
                              partition_to_replace_file_ids={"p": ["f-0", "f-1"]})
    assert json.loads(metadata.to_json())["partitionToReplaceFileIds"] == {"p": ["f-0", "f-1"]}
    assert CommitMetadata.parse(metadata.to_json()) == metadata
    plain = CommitMetadata()
    assert "partitionToReplaceFileIds" not in json.loads(plain.to_json())
    assert json.loads(plain.to_json(replace=True))["partitionToReplaceFileIds"] == {}


def test_empty_content_is_empty_metadata() -> None:
    assert CommitMetadata.parse(b"") == CommitMetadata()
    assert CommitMetadata.parse(b"  \n") == CommitMetadata()
    assert CommitMetadata().schema is None


_texts = st.text(max_size=12)
_optional_texts = st.none() | _texts
_counts = st.integers(min_value=0, max_value=2**62)
_extras = st.dictionaries(
    st.text(max_size=8).map(lambda k: "x_" + k),
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    max_size=3,
)
_write_stats = st.builds(
    WriteStat,
    file_id=_texts, path=_optional_texts, prev_commit=_optional_texts, num_writes=_counts,
    num_deletes=_counts, num_update_writes=_counts, num_inserts=_counts,
    total_write_bytes=_counts, total_write_errors=_counts, partition_path=_optional_texts,
    file_size_in_bytes=_counts, log_version=st.none() | st.integers(1, 1000),
    log_offset=st.none() | _counts, base_file=_optional_texts,
    log_files=st.lists(_texts, max_size=3), extra=_extras,
)
_commit_metadata = st.builds(
    CommitMetadata,
    partition_to_write_stats=st.dictionaries(_texts, st.lists(_write_stats, max_size=3),
                                             max_size=3),
    compacted=st.booleans(),
    extra_metadata=st.dictionaries(_texts, _texts, max_size=3),
    operation_type=_optional_texts,
    partition_to_replace_file_ids=st.dictionaries(_texts, st.lists(_texts, max_size=3),
                                                  max_size=2),
)


@given(_commit_metadata)
def test_json_round_trip(metadata: CommitMetadata) -> None:
    written = metadata.to_json()
    parsed = CommitMetadata.parse(written, "20250101000000000.commit")
    assert parsed == metadata
    assert parsed.to_json() == written


# -- malformed content -----------------------------------------------------------------------

MALFORMED = [
    b"{not json",
    b"[1, 2]",
    b'{"partitionToWriteStats": []}',
    b'{"partitionToWriteStats": {"p": [5]}}',
    b'{"partitionToWriteStats": {"p": [{"numWrites": "many"}]}}',
    b'{"partitionToWriteStats": {"p": [{"numWrites": true}]}}',
    b'{"partitionToWriteStats": {"p": [{"logFiles": "a.log"}]}}',
    b'{"partitionToWriteStats": {"p": [{"fileId": 7}]}}',
    b'{"extraMetadata": [1]}',
    b"\xff\xfe\x00garbage",
    b"Obj\x01 but not a container",
]


@pytest.mark.parametrize("data", MALFORMED)
def test_malformed_commit_metadata_names_the_instant(data: bytes) -> None:
    with pytest.raises(CorruptTableError, match=r"instant 20250101000000000\.deltacommit"):
        CommitMetadata.parse(data, "20250101000000000.deltacommit")


def test_a_truncated_avro_container_is_malformed() -> None:
    data = V8_DELTACOMMIT.read_bytes()
    with pytest.raises(CorruptTableError, match="malformed"):
        CommitMetadata.parse(data[: len(data) // 2], "x.deltacommit")


def test_rollback_metadata_is_not_commit_metadata() -> None:
    data = fixture_file(ROLLBACK).read_bytes()
    with pytest.raises(CorruptTableError, match="HoodieRollbackMetadata, not commit metadata"):
        CommitMetadata.parse(data, "20250126040936578.rollback")


# -- rollback plan and metadata --------------------------------------------------------------

ROLLBACK_PLAN = ROLLBACK + ".requested"
TABLE_DIR = "/opt/data/external_tables/v6_nonpartitioned_rollback"
FAILED_LOG = f"{TABLE_DIR}/.0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.1_0-33-43"


def test_read_the_fixtures_rollback_plan() -> None:
    plan = RollbackPlan.parse(fixture_file(ROLLBACK_PLAN).read_bytes())
    assert plan == RollbackPlan(
        InstantInfo("20250126040826878", "deltacommit"),
        [
            RollbackRequest("", "", "", [
                f"{TABLE_DIR}/cd329d8f-0ce4-4654-84ab-2f769aae5034-0_1-33-44_"
                "20250126040826878.parquet"], {}),
            RollbackRequest("", "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0", "20250126040823628",
                            [], {f"file:{FAILED_LOG}": 11828}),
        ],
    )


def test_read_the_fixtures_rollback_metadata() -> None:
    metadata = RollbackMetadata.parse(fixture_file(ROLLBACK).read_bytes())
    assert metadata.start_rollback_time == "20250126040936578"
    assert metadata.commits_rollback == ["20250126040826878"]
    assert metadata.instants_rollback == [InstantInfo("20250126040826878", "deltacommit")]
    assert (metadata.time_taken_in_millis, metadata.total_files_deleted) == (195, 1)
    part = metadata.partition_metadata[""]
    assert part.success_delete_files == [
        f"{TABLE_DIR}/cd329d8f-0ce4-4654-84ab-2f769aae5034-0_1-33-44_20250126040826878.parquet"]
    assert part.failed_delete_files == []
    assert part.rollback_log_files == {
        f"file:{TABLE_DIR}/.0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1":
        105}
    assert part.log_files_from_failed_commit == {f"file:{FAILED_LOG}": 11828}
    assert metadata.rolled_back() == {"20250126040826878"}


@pytest.mark.parametrize(("rel", "cls"), [(ROLLBACK_PLAN, RollbackPlan),
                                          (ROLLBACK, RollbackMetadata)])
def test_we_write_rollback_files_byte_for_byte_as_hudi_does(
    rel: str, cls: type[RollbackPlan] | type[RollbackMetadata]
) -> None:
    hudis = fixture_file(rel).read_bytes()
    ours = cls.parse(hudis).to_avro()
    # An Avro container differs only in its random 16-byte sync marker.
    assert ours.replace(ours[-16:], hudis[-16:]) == hudis
    assert cls.parse(ours) == cls.parse(hudis)
    theirs_reader = fastavro.reader(io.BytesIO(hudis))
    ours_reader = fastavro.reader(io.BytesIO(ours))
    assert ours_reader.metadata == theirs_reader.metadata  # the schema text, verbatim
    assert list(ours_reader) == list(theirs_reader)


_paths = st.text(max_size=20)
_size_maps = st.none() | st.dictionaries(_paths, st.integers(0, 2**40), max_size=2)
_instant_infos = st.builds(InstantInfo, _texts, _texts)


@given(st.builds(
    RollbackMetadata,
    start_rollback_time=_texts,
    commits_rollback=st.lists(_texts, max_size=3),
    partition_metadata=st.dictionaries(_texts, st.builds(
        RollbackPartitionMetadata, _texts, st.lists(_paths, max_size=2),
        st.lists(_paths, max_size=2), _size_maps, _size_maps), max_size=2),
    time_taken_in_millis=st.integers(0, 2**40),
    total_files_deleted=st.integers(0, 2**30),
    instants_rollback=st.lists(_instant_infos, max_size=2),
))
def test_rollback_metadata_round_trip(metadata: RollbackMetadata) -> None:
    assert RollbackMetadata.parse(metadata.to_avro()) == metadata


@given(st.builds(
    RollbackPlan,
    instant_to_rollback=st.none() | _instant_infos,
    rollback_requests=st.lists(st.builds(
        RollbackRequest, _texts, _optional_texts, _optional_texts,
        st.lists(_paths, max_size=2), _size_maps), max_size=3),
))
def test_rollback_plan_round_trip(plan: RollbackPlan) -> None:
    assert RollbackPlan.parse(plan.to_avro()) == plan


def test_malformed_rollback_files_name_the_instant() -> None:
    commit = V8_DELTACOMMIT.read_bytes()
    for parse in (RollbackPlan.parse, RollbackMetadata.parse):
        for data in (b"", b"garbage", commit, fixture_file(ROLLBACK).read_bytes()[:300]):
            with pytest.raises(CorruptTableError, match=r"instant 20250101000000000\.rollback"):
                parse(data, "20250101000000000.rollback")
