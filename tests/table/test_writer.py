"""The writer: create_table, the per-slice write functions, WriteClient and rollback.

Every test writes a real table on local disk and checks what is on disk and what the
table core reads back. Failures are injected through ``WriteClient.on_step`` (an
exception raised at a named step), never with sleeps.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudisql
from hudisql.errors import (
    TableAlreadyExistsError,
    UnsupportedFormatError,
    UnsupportedTableVersionError,
    WriteError,
)
from hudisql.table.format.commit_metadata import (
    CommitMetadata,
    RollbackMetadata,
    RollbackPlan,
    WriteStat,
)
from hudisql.table.format.instant import Action
from hudisql.table.format.log.format import BlockType, DeleteRecord, HeaderKey
from hudisql.table.format.log.reader import decode_data_block, decode_delete_block, scan_log_file
from hudisql.table.format.log.writer import LogFileWriter, encode_avro_data_block
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.schema import META_COLUMNS, arrow_to_avro, with_meta_fields
from hudisql.table.io.storage import Storage
from hudisql.table.read.reconcile import BLOCK_ATTEMPT_STAT_KEY, record_committed_log_files
from hudisql.table.table import HudiTable
from hudisql.table.write.files import marker_path, write_base_file, write_log_file
from hudisql.txn.writer import TIMELINE_FOLDERS, WriteClient, create_table
from tests.fixtures import VERSION_6, copy_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string()),
                    ("city", pa.string())])
INSTANT = "20250101000000000"
FILE_ID = "0f0e0d0c-0b0a-4908-8706-050403020100-0"


class Crash(Exception):
    """The failure tests inject at one step of a write or rollback."""


def crash_at(event: str, nth: int = 1) -> Callable[[str, str], None]:
    """An on_step hook raising Crash the ``nth`` time ``event`` happens."""
    seen = {"n": 0}

    def hook(name: str, detail: str) -> None:
        if name == event:
            seen["n"] += 1
            if seen["n"] == nth:
                raise Crash(f"{event} {detail}")

    return hook


def rows(*items: tuple[str, int, str, str]) -> list[dict[str, Any]]:
    return [{"id": i, "ts": t, "v": v, "city": c} for i, t, v, c in items]


def snapshot(path: Path) -> dict[str, tuple[int, str, str]]:
    """key -> (ts, v, city) as hudisql reads the table."""
    table = hudisql.read_table(str(path))
    return {r["_hoodie_record_key"]: (r["ts"], r["v"], r["city"]) for r in table.to_pylist()}


def files_of(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


def make(tmp_path: Path, table_type: str = "MERGE_ON_READ", **kwargs: Any) -> WriteClient:
    kwargs.setdefault("partition_fields", ["city"])
    kwargs.setdefault("precombine_field", "ts")
    kwargs.setdefault("options", VERSION_6)  # these tests read layout 1's timeline files
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", table_type=table_type, **kwargs)
    return WriteClient(table)


# -- create_table --------------------------------------------------------------------------


def test_create_table_writes_properties_and_timeline_folders_only(tmp_path: Path) -> None:
    create_table(tmp_path / "t", "t", SCHEMA, "id", "city", "ts", "MERGE_ON_READ",
                 options=VERSION_6)
    root = tmp_path / "t"
    assert files_of(root) == {".hoodie/hoodie.properties"}
    dirs = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir()}
    assert dirs == set(TIMELINE_FOLDERS)
    props = TableProperties.load(Storage(str(root)))
    assert (props.version, props.table_type) == (6, "MERGE_ON_READ")
    assert props.record_key_fields == ["id"]
    assert (props.partition_fields, props.precombine_field) == (["city"], "ts")
    assert list(props)[-1] == "hoodie.table.checksum"
    assert json.loads(props.create_schema or "") == arrow_to_avro(SCHEMA, "t")


def test_create_table_refuses_an_existing_table(tmp_path: Path) -> None:
    create_table(tmp_path / "t", "t", SCHEMA, "id")
    before = (tmp_path / "t/.hoodie/hoodie.properties").read_bytes()
    with pytest.raises(TableAlreadyExistsError, match="already exists"):
        create_table(tmp_path / "t", "other", SCHEMA, "id", table_type="cow")
    assert (tmp_path / "t/.hoodie/hoodie.properties").read_bytes() == before


def test_create_table_refuses_a_damaged_table_folder(tmp_path: Path) -> None:
    (tmp_path / "t/.hoodie").mkdir(parents=True)
    (tmp_path / "t/.hoodie/20250101000000000.commit").write_text("{}")
    with pytest.raises(TableAlreadyExistsError, match=r"no hoodie\.properties"):
        create_table(tmp_path / "t", "t", SCHEMA, "id")
    assert files_of(tmp_path / "t") == {".hoodie/20250101000000000.commit"}


def test_create_table_refuses_a_file_as_location(tmp_path: Path) -> None:
    (tmp_path / "t").write_text("not a folder")
    with pytest.raises(WriteError, match="is a file, not a folder"):
        create_table(tmp_path / "t", "t", SCHEMA, "id")
    assert (tmp_path / "t").read_text() == "not a folder"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"record_key_fields": "nope"}, "record key field 'nope' is not a column"),
        ({"record_key_fields": [], "options": {"hoodie.populate.meta.fields": "false"}},
         "cannot be false"),
        ({"table_type": "MERGE_ON_WRITE"}, "unknown table type"),
        ({"partition_fields": ["zone"]}, "partition field 'zone' is not a column"),
        ({"precombine_field": "when"}, "precombine field 'when' is not a column"),
        ({"name": "1bad-name"}, "table name '1bad-name' is not valid"),
        ({"schema": SCHEMA.append(pa.field("_hoodie_x", pa.string()))}, "reserved prefix"),
        ({"schema": SCHEMA.append(pa.field("f", pa.float64())), "record_key_fields": "f"},
         "record key field 'f' has type double"),
        ({"schema": SCHEMA.append(pa.field("d", pa.duration("s")))}, "Avro cannot hold"),
        ({"options": {"hoodie.table.type": "COPY_ON_WRITE"}}, "set from create_table"),
        ({"options": {"spark.sql.x": "1"}}, "not a hoodie"),
        ({"options": {"hoodie.datasource.write.hive_style_partitioning": "maybe"}},
         "must be true or false"),
    ],
)
def test_create_table_rejects_bad_arguments_and_writes_nothing(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    args: dict[str, Any] = {"name": "t", "schema": SCHEMA, "record_key_fields": "id"}
    args.update(kwargs)
    with pytest.raises(WriteError, match=message):
        create_table(tmp_path / "t", **args)
    assert not (tmp_path / "t").exists()


# -- the per-slice functions ---------------------------------------------------------------


def staged(keys: list[str], commit_times: list[str | None] | None = None) -> pa.Table:
    n = len(keys)
    times = commit_times or [None] * n
    return pa.table({
        "_hoodie_commit_time": pa.array(times, pa.string()),
        "_hoodie_commit_seqno": pa.array([f"{t}_9_9" if t else None for t in times], pa.string()),
        "_hoodie_record_key": keys,
        "id": keys,
        "ts": list(range(n)),
        "v": [f"v{k}" for k in keys],
        "city": ["sf"] * n,
    })


def test_write_base_file_writes_meta_columns_footer_marker_and_partition_metadata(
    tmp_path: Path,
) -> None:
    storage = Storage(str(tmp_path))
    avro = arrow_to_avro(SCHEMA, "t")
    stat = write_base_file(storage, "city=sf", FILE_ID, INSTANT, "3-7-11",
                           staged(["b", "c", "a"]), avro)
    name = f"{FILE_ID}_3-7-11_{INSTANT}.parquet"
    assert stat.path == f"city=sf/{name}"
    assert (stat.num_writes, stat.num_inserts, stat.num_update_writes) == (3, 3, 0)
    assert stat.prev_commit == "null"
    assert stat.file_size_in_bytes == (tmp_path / stat.path).stat().st_size
    pf = pq.ParquetFile(tmp_path / stat.path)
    footer = {k.decode(): v.decode() for k, v in (pf.metadata.metadata or {}).items()}
    assert set(footer) == {"parquet.avro.schema", "writer.model.name",
                           "hoodie_min_record_key", "hoodie_max_record_key"}
    assert (footer["hoodie_min_record_key"], footer["hoodie_max_record_key"]) == ("a", "c")
    assert json.loads(footer["parquet.avro.schema"]) == with_meta_fields(avro)
    table = pf.read()
    assert table.column_names[:5] == list(META_COLUMNS)
    assert table.column("_hoodie_commit_seqno").to_pylist() == [
        f"{INSTANT}_3_{i}" for i in range(3)
    ]
    assert set(table.column("_hoodie_file_name").to_pylist()) == {name}
    assert set(table.column("_hoodie_partition_path").to_pylist()) == {"city=sf"}
    meta = (tmp_path / "city=sf/.hoodie_partition_metadata").read_text()
    assert "commitTime=" + INSTANT in meta and "partitionDepth=1" in meta
    assert (tmp_path / marker_path(INSTANT, "city=sf", name, "CREATE")).is_file()


def test_write_base_file_keeps_commit_time_of_carried_over_rows(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    old = "20240101000000000"
    records = staged(["a", "b"], [old, None])
    stat = write_base_file(storage, "", FILE_ID, INSTANT, "0-1-2", records,
                           arrow_to_avro(SCHEMA, "t"), prev_commit=old, num_updates=1)
    table = pq.read_table(tmp_path / (stat.path or ""))
    assert table.column("_hoodie_commit_time").to_pylist() == [old, INSTANT]
    assert table.column("_hoodie_commit_seqno").to_pylist() == [f"{old}_9_9", f"{INSTANT}_0_1"]
    assert (stat.prev_commit, stat.num_update_writes, stat.num_inserts) == (old, 1, 0)
    assert (tmp_path / marker_path(INSTANT, "", Path(stat.path or "").name, "MERGE")).is_file()


def test_write_base_file_refuses_rows_without_a_key(tmp_path: Path) -> None:
    records = staged(["a"]).set_column(2, "_hoodie_record_key", pa.array([None], pa.string()))
    with pytest.raises(WriteError, match="without a record key"):
        write_base_file(Storage(str(tmp_path)), "", FILE_ID, INSTANT, "0-0-0", records,
                        arrow_to_avro(SCHEMA, "t"))
    assert files_of(tmp_path) == set()


def test_write_log_file_writes_numbered_data_and_delete_blocks(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    avro = arrow_to_avro(SCHEMA, "t")
    deletes = [DeleteRecord("x", "city=sf", 5, "long")]
    stat = write_log_file(storage, "city=sf", FILE_ID, "20240101000000000", INSTANT, "2-0-4",
                          staged(["a", "b"]), avro, deletes=deletes, attempt=3,
                          block_sequence_start=5, base_file="base.parquet")
    log = f".{FILE_ID}_20240101000000000.log.1_2-0-4"
    assert stat.path == f"city=sf/{log}" and stat.log_files == [log]
    assert (stat.log_version, stat.log_offset, stat.base_file) == (1, 0, "base.parquet")
    assert (stat.num_writes, stat.num_update_writes, stat.num_deletes) == (2, 2, 1)
    blocks = scan_log_file(storage, stat.path)
    assert [b.block_type for b in blocks] == [BlockType.AVRO_DATA, BlockType.DELETE]
    assert [b.block_identifier for b in blocks] == [(3, 5), (3, 6)]
    assert all(b.instant_time == INSTANT for b in blocks)
    assert json.loads(blocks[0].schema or "") == with_meta_fields(avro)
    data = (tmp_path / stat.path).read_bytes()
    records = decode_data_block(data, blocks[0])
    seqnos = records.column("_hoodie_commit_seqno").to_pylist()
    assert seqnos == [f"{INSTANT}_2_0", f"{INSTANT}_2_1"]
    assert set(records.column("_hoodie_file_name").to_pylist()) == {FILE_ID}
    assert decode_delete_block(data, blocks[1]) == deletes
    assert (tmp_path / marker_path(INSTANT, "city=sf", log, "APPEND")).is_file()


def test_write_log_file_never_appends_and_omits_identifiers_without_attempt(
    tmp_path: Path,
) -> None:
    storage = Storage(str(tmp_path))
    avro = arrow_to_avro(SCHEMA, "t")
    first = write_log_file(storage, "", FILE_ID, "20240101000000000", INSTANT, "0-0-0",
                           staged(["a"]), avro)
    before = (tmp_path / (first.path or "")).read_bytes()
    second = write_log_file(storage, "", FILE_ID, "20240101000000000", "20250101000000001",
                            "0-0-0", staged(["a"]), avro)
    assert (first.log_version, second.log_version) == (1, 2)
    assert (tmp_path / (first.path or "")).read_bytes() == before
    assert [b.block_identifier for b in scan_log_file(storage, second.path or "")] == [None]


def test_write_log_file_rolls_over_and_keeps_counting_blocks(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    stat = write_log_file(storage, "", FILE_ID, "20240101000000000", INSTANT, "0-0-0",
                          staged(["a", "b"]), arrow_to_avro(SCHEMA, "t"),
                          deletes=[DeleteRecord("z", "", 0, "int")], attempt=0,
                          max_file_size=10)
    assert len(stat.log_files) == 2
    idents = [b.block_identifier for f in stat.log_files for b in scan_log_file(storage, f)]
    assert idents == [(0, 0), (0, 1)]
    assert stat.total_write_bytes == sum((tmp_path / f).stat().st_size for f in stat.log_files)


def test_a_losing_task_attempts_log_file_is_not_merged(tmp_path: Path) -> None:
    client = make(tmp_path, partition_fields=[])
    first = client.insert(rows(("a", 1, "x", "sf")))
    table = client.table
    [file_slice] = table.file_slices()
    pending = table.timeline.create_requested(Action.DELTACOMMIT)
    inflight = table.timeline.transition_to_inflight(pending)
    schema = table.avro_schema

    def attempt(number: int, ts: int, value: str) -> WriteStat:
        records = staged(["a"]).set_column(4, "ts", pa.array([ts], pa.int64()))
        records = records.set_column(5, "v", pa.array([value]))
        return write_log_file(table.storage, "", file_slice.file_id, first.instant_time,
                              pending.timestamp, f"0-1-{number}", records, schema,
                              attempt=number)

    # The committed attempt wrote first; a speculative copy that lost wrote after it, with a
    # greater precombine value: only the commit's record tells them apart.
    committed = attempt(1, 5, "attempt 1 committed")
    attempt(0, 9, "speculative attempt 0 lost")
    assert committed.extra == {BLOCK_ATTEMPT_STAT_KEY: 1}
    metadata = CommitMetadata(extra_metadata={"schema": schema}, operation_type="UPSERT")
    metadata.add_write_stat(committed)
    record_committed_log_files(metadata)
    table.timeline.complete(inflight, metadata.to_json())
    assert snapshot(tmp_path / "t") == {"a": (5, "attempt 1 committed", "sf")}


@pytest.mark.parametrize(
    ("records", "token", "attempt", "message"),
    [
        (None, "0-0-0", None, "nothing to write"),
        (staged(["a"]), "0-0", None, "is not <partitionId>-<stageId>-<attemptId>"),
        (staged(["a"]), "0-0-0", -1, "must not be negative"),
    ],
)
def test_write_log_file_refuses_bad_arguments_and_writes_nothing(
    tmp_path: Path, records: pa.Table | None, token: str, attempt: int | None, message: str
) -> None:
    with pytest.raises(WriteError, match=message):
        write_log_file(Storage(str(tmp_path)), "", FILE_ID, INSTANT, INSTANT, token, records,
                       arrow_to_avro(SCHEMA, "t"), attempt=attempt)
    with pytest.raises(WriteError, match="is not <partitionId>"):
        write_base_file(Storage(str(tmp_path)), "", FILE_ID, INSTANT, "x-1-2", staged(["a"]),
                        arrow_to_avro(SCHEMA, "t"))
    assert files_of(tmp_path) == set()


# -- WriteClient ---------------------------------------------------------------------------


def test_a_commit_goes_requested_inflight_completed_and_drops_its_markers(
    tmp_path: Path,
) -> None:
    client = make(tmp_path)
    events: list[str] = []
    client.on_step = lambda e, d: events.append(e)
    result = client.insert(rows(("a", 1, "x", "sf"), ("b", 1, "y", "la")))
    assert events == ["requested", "inflight", "file", "file", "validating", "completing",
                      "completed"]
    timeline = client.table.timeline
    states = [i.state.value for i in timeline.instant_files(result.instant_time)]
    assert states == ["REQUESTED", "INFLIGHT", "COMPLETED"]
    inflight = CommitMetadata.parse(
        (tmp_path / f"t/.hoodie/{result.instant_time}.deltacommit.inflight").read_bytes()
    )
    assert sorted(s.num_inserts for s in inflight.write_stats()) == [1, 1]
    assert inflight.file_ids() == result.metadata.file_ids()
    assert result.metadata.operation_type == "INSERT"
    assert json.loads(result.metadata.schema or "") == arrow_to_avro(SCHEMA, "t")
    assert not (tmp_path / f"t/.hoodie/.temp/{result.instant_time}").exists()


def test_precombine_within_a_batch_keeps_the_greatest_then_the_later(tmp_path: Path) -> None:
    client = make(tmp_path)
    client.insert(rows(("a", 2, "a2", "sf"), ("a", 5, "a5", "sf"), ("a", 3, "a3", "sf"),
                       ("b", 4, "b-first", "sf"), ("b", 4, "b-later", "sf")))
    assert snapshot(tmp_path / "t") == {"a": (5, "a5", "sf"), "b": (4, "b-later", "sf")}


def test_without_precombine_the_later_record_of_a_batch_wins(tmp_path: Path) -> None:
    client = make(tmp_path, precombine_field=None)
    client.insert(rows(("a", 9, "first", "sf"), ("a", 1, "second", "sf")))
    client.upsert(rows(("a", 0, "third", "sf")))
    assert snapshot(tmp_path / "t") == {"a": (0, "third", "sf")}


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_an_update_with_a_smaller_precombine_value_does_not_win(
    tmp_path: Path, table_type: str
) -> None:
    client = make(tmp_path, table_type)
    client.insert(rows(("a", 5, "stored", "sf"), ("b", 5, "stored", "sf")))
    client.upsert(rows(("a", 4, "older", "sf"), ("b", 5, "tie", "sf")))
    assert snapshot(tmp_path / "t") == {"a": (5, "stored", "sf"), "b": (5, "tie", "sf")}


def test_copy_on_write_under_commit_time_ordering_lets_the_later_write_win(
    tmp_path: Path,
) -> None:
    payload = {"hoodie.compaction.payload.class":
               "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"}
    client = make(tmp_path, "COPY_ON_WRITE", options=payload)
    client.insert(rows(("a", 5, "stored", "sf")))
    client.upsert(rows(("a", 4, "later", "sf")))
    assert snapshot(tmp_path / "t") == {"a": (4, "later", "sf")}


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([*rows(("a", 1, "x", "sf")), {"id": "b", "ts": 1, "v": "x"}], "lack the columns"),
        ([{"id": "a", "ts": 1, "v": "x", "city": "sf", "extra": 1}], "unknown \\[.extra.\\]"),
        ([{"id": "a", "ts": "soon", "v": "x", "city": "sf"}], "do not fit"),
        ([{"id": None, "ts": 1, "v": "x", "city": "sf"}], "record key field 'id' is null"),
        ([{"id": "a", "ts": None, "v": "x", "city": "sf"},
          {"id": "a", "ts": 1, "v": "y", "city": "sf"}], "precombine field 'ts' is null"),
        ([{"id": "a", "ts": 1, "v": "x", "city": "a/b"}], "cannot contain '/'"),
        ("not records", "must be a pyarrow Table"),
    ],
)
def test_bad_records_are_refused_before_anything_is_written(
    tmp_path: Path, records: Any, message: str
) -> None:
    client = make(tmp_path)
    client.insert(rows(("z", 1, "x", "sf")))
    before = files_of(tmp_path / "t")
    for operation in (client.insert, client.upsert):
        with pytest.raises(WriteError, match=message):
            operation(records)
    assert files_of(tmp_path / "t") == before


def test_rows_read_back_with_their_meta_columns_can_be_written_again(tmp_path: Path) -> None:
    client = make(tmp_path)
    client.insert(rows(("a", 1, "x", "sf"), ("b", 1, "y", "la")))
    read = hudisql.read_table(str(tmp_path / "t"))
    changed = read.set_column(read.schema.get_field_index("ts"), "ts",
                              pa.array([2, 2], pa.int64()))
    result = client.upsert(changed)
    assert sum(s.num_update_writes for s in result.write_stats()) == 2
    assert snapshot(tmp_path / "t") == {"a": (2, "x", "sf"), "b": (2, "y", "la")}


def test_insert_refuses_a_key_already_in_the_table(tmp_path: Path) -> None:
    client = make(tmp_path)
    client.insert(rows(("a", 1, "x", "sf")))
    before = files_of(tmp_path / "t")
    with pytest.raises(WriteError, match="record key 'a' is already in the table"):
        client.insert(rows(("b", 1, "x", "sf"), ("a", 2, "y", "sf")))
    assert files_of(tmp_path / "t") == before


def test_inserts_are_split_into_file_groups_of_at_most_the_limit(tmp_path: Path) -> None:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", precombine_field="ts")
    client = WriteClient(table, max_records_per_file=2)
    result = client.insert(rows(*[(f"k{i}", i, "v", "sf") for i in range(5)]))
    assert sorted(s.num_writes for s in result.write_stats()) == [1, 2, 2]
    assert len(result.metadata.file_ids()) == 3
    assert len(snapshot(tmp_path / "t")) == 5


def test_complex_keys_multiple_partition_fields_and_default_partition(tmp_path: Path) -> None:
    schema = pa.schema([("a", pa.int32()), ("b", pa.string()), ("day", pa.date32()),
                        ("zone", pa.string()), ("n", pa.int64())])
    table = create_table(tmp_path / "t", "t", schema, ["a", "b"], ["day", "zone"],
                         options={"hoodie.datasource.write.hive_style_partitioning": False})
    client = WriteClient(table)
    client.insert([{"a": 1, "b": "x", "day": datetime.date(2024, 3, 1), "zone": None, "n": 1}])
    read = hudisql.read_table(str(tmp_path / "t")).to_pylist()
    assert read[0]["_hoodie_record_key"] == "a:1,b:x"
    assert read[0]["_hoodie_partition_path"] == "2024-03-01/__HIVE_DEFAULT_PARTITION__"
    meta = (tmp_path / "t/2024-03-01/__HIVE_DEFAULT_PARTITION__/.hoodie_partition_metadata")
    assert "partitionDepth=2" in meta.read_text()
    client.delete([{"a": 1, "b": "x"}])
    assert hudisql.read_table(str(tmp_path / "t")).num_rows == 0


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_delete_by_key_or_by_record_in_its_partition(tmp_path: Path, table_type: str) -> None:
    client = make(tmp_path, table_type)
    client.insert(rows(("a", 1, "x", "sf"), ("b", 1, "x", "sf"), ("a", 1, "y", "la"),
                       ("c", 1, "z", "la")))
    client.delete([{"id": "a", "city": "la"}])
    assert sorted(snapshot(tmp_path / "t")) == ["a", "b", "c"]
    assert {r["city"] for r in hudisql.read_table(str(tmp_path / "t")).to_pylist()
            if r["id"] == "a"} == {"sf"}
    result = client.delete(["b", "c", "never-written"])
    assert sorted(snapshot(tmp_path / "t")) == ["a"]
    assert sum(s.num_deletes for s in result.write_stats()) == 2
    assert result.metadata.operation_type == "DELETE"


def test_delete_rejects_malformed_keys(tmp_path: Path) -> None:
    client = make(tmp_path)
    client.insert(rows(("a", 1, "x", "sf")))
    before = files_of(tmp_path / "t")
    with pytest.raises(WriteError, match="not one string"):
        client.delete("a")
    with pytest.raises(WriteError, match="empty record key"):
        client.delete(["a", ""])
    with pytest.raises(WriteError, match="lack the record key fields"):
        client.delete([{"city": "sf"}])
    assert files_of(tmp_path / "t") == before


def test_a_complex_key_generator_labels_even_a_single_key_field(tmp_path: Path) -> None:
    table = create_table(tmp_path / "t", "t", SCHEMA, "id", ["city", "v"], "ts")
    assert table.properties.keygenerator_class == "org.apache.hudi.keygen.ComplexKeyGenerator"
    WriteClient(table).insert(rows(("a", 1, "x", "sf")))
    [row] = hudisql.read_table(str(tmp_path / "t")).to_pylist()
    assert (row["_hoodie_record_key"], row["_hoodie_partition_path"]) == ("id:a", "city=sf/v=x")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator"},
         "uses the key generator"),
        ({"hoodie.datasource.write.partitionpath.urlencode": "true"}, "URL-encodes"),
        ({"hoodie.table.recordkey.fields": "fare"}, "'fare' is double"),
        ({"hoodie.table.recordkey.fields": "uuid,rider"}, "takes one record key field"),
    ],
)
def test_the_writer_refuses_tables_whose_keys_it_cannot_form(
    tmp_path: Path, changes: dict[str, str], message: str
) -> None:
    path = copy_table("v6_trips_8i1u", tmp_path)
    storage = Storage(str(path))
    TableProperties.load(storage).updated(**changes).save(storage)
    with pytest.raises(UnsupportedFormatError, match=message):
        WriteClient(HudiTable.open(path))


def test_the_writer_refuses_a_layout_that_does_not_go_with_the_version(tmp_path: Path) -> None:
    path = copy_table("v8_trips_8i1u", tmp_path)
    storage = Storage(str(path))
    TableProperties.load(storage).updated(**{"hoodie.timeline.layout.version": "1"}).save(storage)
    with pytest.raises(UnsupportedTableVersionError, match="is version 8 \\(timeline layout 1"):
        WriteClient(HudiTable.open(path))


# -- failures and rollback -----------------------------------------------------------------


def failed_upsert(client: WriteClient, event: str = "file", nth: int = 2) -> str:
    """Run an upsert that crashes at ``event``; returns its (pending) instant."""
    client.on_step = crash_at(event, nth)
    with pytest.raises(Crash) as info:
        client.upsert(rows(("a", 9, "failed", "sf"), ("b", 9, "failed", "la"),
                           ("n", 9, "failed", "ny")))
    client.on_step = lambda e, d: None
    note = " ".join(getattr(info.value, "__notes__", []))
    pending = client.table.reload().timeline.pending()
    assert len(pending) == 1 and pending[0].timestamp in note
    return pending[0].timestamp


BASELINE = {"a": (1, "x", "sf"), "b": (1, "y", "la")}


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_a_crash_mid_write_leaves_an_invisible_inflight_that_rollback_removes(
    tmp_path: Path, table_type: str
) -> None:
    client = make(tmp_path, table_type)
    client.insert(rows(("a", 1, "x", "sf"), ("b", 1, "y", "la")))
    before = files_of(tmp_path / "t")
    failed = failed_upsert(client)
    written = {f for f in files_of(tmp_path / "t") - before if not f.startswith(".hoodie/")}
    assert written  # the crash came after a data file was written
    assert snapshot(tmp_path / "t") == BASELINE
    rollback = client.rollback(failed)
    assert snapshot(tmp_path / "t") == BASELINE
    timeline = client.table.timeline
    assert timeline.get(failed) is None and failed in timeline.rolled_back_instants()
    assert [i.state.value for i in timeline.instant_files(rollback)] == [
        "REQUESTED", "INFLIGHT", "COMPLETED"]
    left = files_of(tmp_path / "t") - before
    assert {f for f in left if not f.startswith(".hoodie/")} <= {
        "city=ny/.hoodie_partition_metadata"}
    plan = timeline.rollback_plan(rollback)
    assert plan.instant_to_rollback is not None
    assert plan.instant_to_rollback.commit_time == failed
    metadata = timeline.rollback_metadata(rollback)
    assert metadata.commits_rollback == [failed] and metadata.total_files_deleted == 2
    client.upsert(rows(("a", 2, "after", "sf")))
    assert snapshot(tmp_path / "t") == {**BASELINE, "a": (2, "after", "sf")}


def test_a_crash_right_after_requested_is_rolled_back_with_an_empty_plan(
    tmp_path: Path,
) -> None:
    client = make(tmp_path)
    client.insert(rows(("a", 1, "x", "sf"), ("b", 1, "y", "la")))
    failed = failed_upsert(client, "requested", 1)
    rollback = client.rollback(failed)
    timeline = client.table.timeline
    assert timeline.rollback_plan(rollback).rollback_requests == []
    assert timeline.get(failed) is None
    assert snapshot(tmp_path / "t") == BASELINE


@pytest.mark.parametrize("crash", ["rollback_requested", "delete", "rollback_completed"])
def test_a_crashed_rollback_is_finished_by_running_it_again(tmp_path: Path, crash: str) -> None:
    client = make(tmp_path)
    client.insert(rows(("a", 1, "x", "sf"), ("b", 1, "y", "la")))
    failed = failed_upsert(client)
    client.on_step = crash_at(crash)
    with pytest.raises(Crash):
        client.rollback(failed)
    client.on_step = lambda e, d: None
    timeline = client.table.reload().timeline
    assert timeline.get(failed) is not None  # still pending: removed only after completion
    [pending_rollback] = [i for i in timeline.instants if i.action == Action.ROLLBACK]
    assert snapshot(tmp_path / "t") == BASELINE
    assert client.rollback(failed) == pending_rollback.timestamp
    timeline = client.table.timeline
    assert timeline.get(failed) is None
    assert [i.action for i in timeline.instants] == [Action.DELTACOMMIT, Action.ROLLBACK]
    assert snapshot(tmp_path / "t") == BASELINE
    # Rolling back again changes nothing and names the same rollback.
    assert client.rollback(failed) == pending_rollback.timestamp


def test_rollback_without_markers_finds_files_by_name_and_log_headers(tmp_path: Path) -> None:
    client = make(tmp_path)
    client.insert(rows(("a", 1, "x", "sf"), ("b", 1, "y", "la")))
    failed = failed_upsert(client, "file", 3)
    assert (tmp_path / f"t/.hoodie/.temp/{failed}").is_dir()
    Storage(str(tmp_path / "t")).delete_dir(f".hoodie/.temp/{failed}")
    rollback = client.rollback(failed)
    plan = client.table.timeline.rollback_plan(rollback)
    deleted = sorted(Path(p).name for r in plan.rollback_requests for p in r.files_to_be_deleted)
    assert len(deleted) == 3 and sum(n.endswith(".parquet") for n in deleted) == 1
    assert not [f for f in files_of(tmp_path / "t") if failed in f]
    assert snapshot(tmp_path / "t") == BASELINE


def test_rollback_voids_blocks_in_a_log_file_shared_with_other_instants(
    tmp_path: Path,
) -> None:
    client = make(tmp_path)
    first = client.insert(rows(("a", 1, "x", "sf")))
    table = client.table
    [file_slice] = table.file_slices()
    timeline = table.timeline
    pending = timeline.create_requested(Action.DELTACOMMIT)
    timeline.transition_to_inflight(pending)
    # An appending writer (Hudi on Spark 0.x) put a block of the failed instant after a
    # block of a completed one in the same log file.
    done = timeline.create_requested(Action.DELTACOMMIT, timestamp=str(int(pending.timestamp) + 1))
    done = timeline.transition_to_inflight(done)
    avro = json.dumps(with_meta_fields(arrow_to_avro(SCHEMA, "t")))

    def block(ts: str, value: str) -> bytes:
        records = pa.table({
            "_hoodie_commit_time": [ts], "_hoodie_commit_seqno": [f"{ts}_0_0"],
            "_hoodie_record_key": ["a"], "_hoodie_partition_path": ["city=sf"],
            "_hoodie_file_name": [file_slice.file_id], "id": ["a"], "ts": [5], "v": [value],
            "city": ["sf"],
        })
        return encode_avro_data_block(records, avro, {HeaderKey.INSTANT_TIME: ts})

    with LogFileWriter(table.storage, "city=sf", file_slice.file_id, first.instant_time,
                       "0-0-0") as writer:
        writer.append(block(done.timestamp, "good"))
        writer.append(block(pending.timestamp, "bad"))
    timeline.complete(done, CommitMetadata(extra_metadata={"schema": avro}).to_json())
    assert snapshot(tmp_path / "t") == {"a": (5, "good", "sf")}
    rollback = client.rollback(pending.timestamp)
    assert snapshot(tmp_path / "t") == {"a": (5, "good", "sf")}
    metadata = client.table.timeline.rollback_metadata(rollback)
    part = metadata.partition_metadata["city=sf"]
    assert part.success_delete_files == [] and len(part.rollback_log_files or {}) == 1
    [command_log] = list(part.rollback_log_files or {})
    rel = str(Path(command_log).relative_to(tmp_path / "t"))
    [command] = scan_log_file(Storage(str(tmp_path / "t")), rel)
    assert command.is_rollback_command and command.target_instant_time == pending.timestamp


@pytest.mark.parametrize(
    ("target", "message"),
    [("20000101000000000", "no instant 20000101000000000"),
     ("first", "later completed write\\(s\\) build on it")],
)
def test_rollback_refuses_unknown_instants_and_completed_ones_later_writes_build_on(
    tmp_path: Path, target: str, message: str
) -> None:
    client = make(tmp_path)
    result = client.insert(rows(("a", 1, "x", "sf")))
    client.upsert(rows(("a", 2, "y", "sf")))
    instant = result.instant_time if target == "first" else target
    before = files_of(tmp_path / "t")
    with pytest.raises(WriteError, match=message):
        client.rollback(instant)
    assert files_of(tmp_path / "t") == before


def test_rollback_plan_and_metadata_are_hudi_avro(tmp_path: Path) -> None:
    client = make(tmp_path)
    client.insert(rows(("a", 1, "x", "sf"), ("b", 1, "y", "la")))
    failed = failed_upsert(client)
    rollback = client.rollback(failed)
    hoodie = tmp_path / "t/.hoodie"
    plan = RollbackPlan.parse((hoodie / f"{rollback}.rollback.requested").read_bytes())
    metadata = RollbackMetadata.parse((hoodie / f"{rollback}.rollback").read_bytes())
    assert (hoodie / f"{rollback}.rollback.inflight").read_bytes() == b""
    planned = {p for r in plan.rollback_requests for p in r.files_to_be_deleted}
    done = {p for m in metadata.partition_metadata.values() for p in m.success_delete_files}
    assert planned == done and all(re.match(r"^/", p) for p in done)
