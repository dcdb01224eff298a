"""Encoding blocks byte-compatibly with Hudi, and writing new log files."""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import hudi
import pyarrow as pa
import pytest

from hudisql.errors import WriteError
from hudisql.table.format.filenames import LogFileName
from hudisql.table.format.log import (
    BlockType,
    DeleteRecord,
    HeaderKey,
    LogFileWriter,
    block_identifier,
    decode_data_block,
    decode_delete_block,
    encode_avro_data_block,
    encode_delete_block,
    encode_rollback_block,
    scan_blocks,
    scan_log_file,
)
from hudisql.table.format.schema import arrow_to_records
from hudisql.table.io.storage import Storage
from tests.fixtures import LOG_FILES, copy_table, table_path

INSTANT = "20250101000000001"
SCHEMA = ('{"type":"record","name":"t_record","namespace":"hoodie.t","fields":['
          '{"name":"k","type":["null","string"],"default":null},'
          '{"name":"v","type":["null","long"],"default":null}]}')


# --------------------------------------------------------------------------- byte compatibility


def test_fixture_avro_block_re_encodes_byte_for_byte() -> None:
    data = LOG_FILES["valid_log_avro_data"].read_bytes()
    [info] = scan_blocks(data)
    table = decode_data_block(data, info)
    assert info.schema is not None
    assert encode_avro_data_block(table, info.schema, info.header) == data
    # Without a SCHEMA in the header it is added after INSTANT_TIME, as Hudi has it.
    assert encode_avro_data_block(
        table, info.schema, {HeaderKey.INSTANT_TIME: str(info.instant_time)}) == data


def test_fixture_delete_block_re_encodes_byte_for_byte() -> None:
    data = LOG_FILES["valid_log_delete"].read_bytes()
    [info] = scan_blocks(data)
    assert encode_delete_block(decode_delete_block(data, info), info.header) == data


def test_fixture_rollback_block_re_encodes_byte_for_byte() -> None:
    data = LOG_FILES["valid_log_rollback"].read_bytes()
    [info] = scan_blocks(data)
    assert info.instant_time and info.target_instant_time
    assert encode_rollback_block(info.instant_time, info.target_instant_time) == data


def test_sample_table_records_as_avro_agree_with_fastavro() -> None:
    # Every type of the sample table: decode Spark's parquet block, write it as Avro.
    [path] = table_path("v6_nonpartitioned_rollback").glob(".*.log.1_*")
    data = path.read_bytes()
    [info] = scan_blocks(data)
    table = decode_data_block(data, info)
    assert info.schema is not None
    block = encode_avro_data_block(table, info.schema, {HeaderKey.INSTANT_TIME: INSTANT})
    [out] = scan_blocks(block)
    assert decode_data_block(block, out).equals(table)
    # fastavro, an independent implementation, writes the same bytes and reads the same rows.
    parsed = fastavro.parse_schema(json.loads(info.schema))
    content = block[out.content_position:out.content_position + out.content_length]
    assert struct.unpack_from(">ii", content, 0) == (3, table.num_rows)
    pos = 8
    for record in arrow_to_records(table):
        (length,) = struct.unpack_from(">i", content, pos)
        raw = content[pos + 4:pos + 4 + length]
        pos += 4 + length
        expected = io.BytesIO()
        fastavro.schemaless_writer(expected, parsed, record)
        assert raw == expected.getvalue()
        assert fastavro.schemaless_reader(io.BytesIO(raw), parsed, None) == record
    assert pos == len(content)


# --------------------------------------------------------------------------- headers and errors


def test_data_block_headers_instant_schema_and_block_identifier() -> None:
    block = encode_avro_data_block(
        pa.table({"k": ["a"], "v": [1]}), SCHEMA,
        {HeaderKey.INSTANT_TIME: INSTANT, HeaderKey.BLOCK_IDENTIFIER: block_identifier(1, 4)})
    [info] = scan_blocks(block)
    assert list(info.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA,
                                 HeaderKey.BLOCK_IDENTIFIER]
    assert info.schema == SCHEMA and info.block_identifier == (1, 4)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ({}, "needs an INSTANT_TIME"),
        ({HeaderKey.INSTANT_TIME: "yesterday"}, "not an instant time"),
        ({HeaderKey.INSTANT_TIME: INSTANT, HeaderKey.BLOCK_IDENTIFIER: "1-2"},
         "'<attempt>,<sequence>'"),
        ({HeaderKey.INSTANT_TIME: INSTANT, HeaderKey.SCHEMA: '{"type":"record"}'},
         "SCHEMA header differs"),
        ({HeaderKey.INSTANT_TIME: INSTANT, 42: "x"}, "not a log block header key"),
    ],
)
def test_bad_data_block_headers_are_refused(header: dict[HeaderKey, str], message: str) -> None:
    with pytest.raises(WriteError, match=message):
        encode_avro_data_block(pa.table({"k": ["a"], "v": [1]}), SCHEMA, header)


def test_records_that_do_not_fit_the_schema_are_refused() -> None:
    header = {HeaderKey.INSTANT_TIME: INSTANT}
    with pytest.raises(WriteError, match=r"\['extra'\] are not in the Avro schema"):
        encode_avro_data_block(pa.table({"k": ["a"], "extra": [1]}), SCHEMA, header)
    with pytest.raises(WriteError, match="column 'v' of type string"):
        encode_avro_data_block(pa.table({"v": ["not a number"]}), SCHEMA, header)
    required = ('{"type":"record","name":"r","fields":[{"name":"n","type":"long"},'
                '{"name":"s","type":{"type":"record","name":"S","fields":['
                '{"name":"x","type":"int"}]}}]}')
    with pytest.raises(WriteError, match="null value in n"):
        encode_avro_data_block(pa.table({"n": [1, None], "s": [{"x": 1}] * 2}), required, header)
    with pytest.raises(WriteError, match=r"column 's' .* has nulls"):
        encode_avro_data_block(pa.table({"n": [1], "s": [{"x": None}]}), required, header)
    with pytest.raises(WriteError, match="'n' is required"):
        encode_avro_data_block(pa.table({"s": [{"x": 1}]}), required, header)
    enum = ('{"type":"record","name":"r","fields":[{"name":"e","type":'
            '{"type":"enum","name":"E","symbols":["A","B"]}}]}')
    with pytest.raises(WriteError, match="'C' is not a symbol of the enum e"):
        encode_avro_data_block(pa.table({"e": ["A", "C"]}), enum, header)


def test_missing_nullable_columns_are_written_as_nulls_and_types_cast() -> None:
    block = encode_avro_data_block(pa.table({"v": pa.array([7], pa.int8())}), SCHEMA,
                                   {HeaderKey.INSTANT_TIME: INSTANT})
    [info] = scan_blocks(block)
    assert decode_data_block(block, info).to_pylist() == [{"k": None, "v": 7}]


def test_rollback_block_headers_as_hudi_writes_them() -> None:
    block = encode_rollback_block("20250101000000002", INSTANT, block_identifier(0, 0))
    [info] = scan_blocks(block)
    assert info.block_type == BlockType.COMMAND and info.is_rollback_command
    assert info.header == {HeaderKey.INSTANT_TIME: "20250101000000002",
                           HeaderKey.COMMAND_BLOCK_TYPE: "0",
                           HeaderKey.TARGET_INSTANT_TIME: INSTANT,
                           HeaderKey.BLOCK_IDENTIFIER: "0,0"}
    with pytest.raises(WriteError, match="TARGET_INSTANT_TIME"):
        encode_rollback_block(INSTANT, "bad")


# --------------------------------------------------------------------------- delete blocks


def test_delete_ordering_values_keep_their_union_branch() -> None:
    records = [
        DeleteRecord("k1", "p", None), DeleteRecord("k2", "p", 5),
        DeleteRecord("k3", "p", 5, "long"), DeleteRecord("k4", "p", 2**40),
        DeleteRecord("k5", None, 1.5), DeleteRecord(None, "p", "x"),
        DeleteRecord("k7", "p", b"\x00\x01"), DeleteRecord("k8", "p", Decimal("-12.5")),
        DeleteRecord("k9", "p", dt.date(2023, 4, 1)),
        DeleteRecord("k10", "p", dt.datetime(2023, 4, 1, 12, 1, 2, 3, tzinfo=dt.UTC)),
        DeleteRecord("k11", "p", dt.time(1, 2, 3, 4000), "time-micros"),
        DeleteRecord("k12", "p", True),
        DeleteRecord("k13", "p", 2.5, "float"),
    ]
    block = encode_delete_block(records, {HeaderKey.INSTANT_TIME: INSTANT})
    [info] = scan_blocks(block)
    decoded = decode_delete_block(block, info)
    assert decoded == records
    assert [d.ordering_type for d in decoded] == [
        "null", "int", "long", "long", "double", "string", "bytes", "decimal", "date",
        "timestamp-micros", "time-micros", "boolean", "float"]
    # fastavro reads the same list with the schema Hudi 0.14/0.15 writes with.
    parsed = fastavro.parse_schema(_HUDI_DELETE_RECORD_LIST)
    content = block[info.content_position:info.content_position + info.content_length]
    blob: Any = fastavro.schemaless_reader(io.BytesIO(content[8:]), parsed, None)
    assert [r["recordKey"] for r in blob["deleteRecordList"]] == [r.record_key for r in records]
    assert blob["deleteRecordList"][7]["orderingVal"] == {"value": Decimal("-12.5")}
    assert blob["deleteRecordList"][11]["orderingVal"] == {"value": True}


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "org.apache.hudi.avro.model",
            "fields": [{"name": "value", "type": value_type}]}


#: HoodieDeleteRecordList as Hudi 0.14/0.15 declares it: orderingVal is a union of one-field
#: wrapper records (which encode exactly as their bare value types).
_HUDI_DELETE_RECORD_LIST: dict[str, Any] = {
    "type": "record", "name": "HoodieDeleteRecordList", "namespace": "org.apache.hudi.avro.model",
    "fields": [{"name": "deleteRecordList", "type": {"type": "array", "items": {
        "type": "record", "name": "HoodieDeleteRecord", "fields": [
            {"name": "recordKey", "type": ["null", "string"], "default": None},
            {"name": "partitionPath", "type": ["null", "string"], "default": None},
            {"name": "orderingVal", "default": None, "type": [
                "null",
                _wrapper("BooleanWrapper", "boolean"), _wrapper("IntWrapper", "int"),
                _wrapper("LongWrapper", "long"), _wrapper("FloatWrapper", "float"),
                _wrapper("DoubleWrapper", "double"), _wrapper("BytesWrapper", "bytes"),
                _wrapper("StringWrapper", "string"),
                _wrapper("DateWrapper", {"type": "int", "logicalType": "date"}),
                _wrapper("DecimalWrapper", {"type": "bytes", "logicalType": "decimal",
                                            "precision": 30, "scale": 15}),
                _wrapper("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
                _wrapper("TimestampMicrosWrapper",
                         {"type": "long", "logicalType": "timestamp-micros"}),
            ]},
        ]}}}],
}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (DeleteRecord("k", "p", 1, "boolean"), "does not fit boolean"),
        (DeleteRecord("k", "p", 2**40, "int"), "does not fit int"),
        (DeleteRecord("k", "p", Decimal("0.0000000000000001")), "decimal places"),
        (DeleteRecord("k", "p", object()), "has no branch"),
        (DeleteRecord("k", "p", 1, "uuid"), "not one of"),
        (DeleteRecord("k", "p", "2023-01-01", "date"), "not a date"),
    ],
)
def test_bad_ordering_values_are_refused(record: DeleteRecord, message: str) -> None:
    with pytest.raises(WriteError, match=message):
        encode_delete_block([record], {HeaderKey.INSTANT_TIME: INSTANT})


def test_empty_delete_list_round_trips() -> None:
    block = encode_delete_block([], {HeaderKey.INSTANT_TIME: INSTANT})
    [info] = scan_blocks(block)
    assert decode_delete_block(block, info) == []


# --------------------------------------------------------------------------- log files


def _block(key: str) -> bytes:
    return encode_avro_data_block(pa.table({"k": [key], "v": [1]}), SCHEMA,
                                  {HeaderKey.INSTANT_TIME: INSTANT})


def test_writer_creates_version_one_with_hudis_name(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    writer = LogFileWriter(storage, "city=x", "f1-0", "20250101000000000", "0-13-60")
    assert writer.append(_block("a")) == ("city=x/.f1-0_20250101000000000.log.1_0-13-60", 0)
    rel, pos = writer.append(_block("b"))
    files = writer.close()
    assert files == [(rel, (tmp_path / rel).stat().st_size)]
    assert pos == len(_block("a"))
    infos = scan_log_file(storage, rel)
    data = (tmp_path / rel).read_bytes()
    assert [decode_data_block(data, i).column("k")[0].as_py() for i in infos] == ["a", "b"]


def test_writer_never_appends_to_an_existing_file(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    existing = tmp_path / "p" / ".f1-0_20250101000000000.log.3_0-1-1"
    existing.parent.mkdir()
    existing.write_bytes(_block("old"))
    other_group = tmp_path / "p" / ".f2-0_20250101000000000.log.9_0-1-1"
    other_group.write_bytes(b"")
    with LogFileWriter(storage, "p", "f1-0", "20250101000000000", "0-1-1") as writer:
        rel, _ = writer.append(_block("new"))
    assert rel == "p/.f1-0_20250101000000000.log.4_0-1-1"
    assert existing.read_bytes() == _block("old")


def test_concurrent_writers_of_one_file_group_get_distinct_files(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    first = LogFileWriter(storage, "", "f1-0", "20250101000000000", "0-1-1")
    second = LogFileWriter(storage, "", "f1-0", "20250101000000000", "1-1-2")
    first.append(_block("a"))
    second.append(_block("b"))  # sees the first writer's open file: takes the next version
    assert [p for p, _ in first.close() + second.close()] == [
        ".f1-0_20250101000000000.log.1_0-1-1", ".f1-0_20250101000000000.log.2_1-1-2"]


def test_writer_rolls_over_once_a_file_exceeds_max_size(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    block = _block("x")
    writer = LogFileWriter(storage, "p", "f1-0", "20250101000000000", "0-1-1",
                           max_file_size=2 * len(block))
    written = [writer.append(_block(str(i))) for i in range(7)]
    files = writer.close()
    # Rolled over when a file already exceeds the limit: 3 blocks per file.
    assert [LogFileName.parse(p).version for p, _ in files] == [1, 2, 3]  # type: ignore[union-attr]
    assert [s for _, s in files] == [3 * len(block), 3 * len(block), len(block)]
    assert [w[0] for w in written] == [files[0][0]] * 3 + [files[1][0]] * 3 + [files[2][0]]
    keys = []
    for rel, _ in files:
        data = (tmp_path / rel).read_bytes()
        keys += [decode_data_block(data, i).column("k")[0].as_py()
                 for i in scan_log_file(storage, rel)]
    assert keys == [str(i) for i in range(7)]


def test_writer_refuses_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    with pytest.raises(WriteError, match="do not make a log file name"):
        LogFileWriter(storage, "p", "bad_id", "20250101000000000", "0-1-1")
    writer = LogFileWriter(storage, "p", "f1-0", "20250101000000000", "0-1-1")
    with pytest.raises(WriteError, match="magic"):
        writer.append(b"not a block" * 10)
    with pytest.raises(WriteError, match="not one whole log block"):
        writer.append(_block("a") + b"x")
    assert writer.close() == []
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(WriteError, match="closed"):
        writer.append(_block("a"))


# --------------------------------------------------------------------------- the hudi reader


def _hudi_rows(root: Path) -> list[tuple[str, float]]:
    table = pa.Table.from_batches(hudi.HudiTable(str(root)).read())
    return sorted((r["rider"], r["fare"]) for r in table.select(["rider", "fare"]).to_pylist())


GROUP = ("city=san_francisco", "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0", "20250331030642808")


def test_hudi_reader_merges_our_data_and_delete_blocks(tmp_path: Path) -> None:
    root = copy_table("v6_trips_8i1u", tmp_path)
    [log] = root.glob("city=san_francisco/.*.log.*")
    data = log.read_bytes()
    [info] = scan_blocks(data)
    rows = decode_data_block(data, info).to_pylist()
    rows[0].update(fare=77.7, ts=rows[0]["ts"] + 1)  # rider-D's update, newer still
    assert info.schema is not None and info.instant_time is not None
    table = pa.Table.from_pylist(rows, schema=decode_data_block(data, info).schema)
    update = encode_avro_data_block(table, info.schema, {HeaderKey.INSTANT_TIME: info.instant_time,
                                                         HeaderKey.BLOCK_IDENTIFIER: "0,0"})
    delete = encode_delete_block(
        [DeleteRecord("334e26e9-8355-45cc-97c6-c31daf0df330", "city=san_francisco", 0, "long")],
        {HeaderKey.INSTANT_TIME: info.instant_time, HeaderKey.SCHEMA: info.schema})
    before = _hudi_rows(root)
    assert ("rider-A", 19.1) in before and ("rider-D", 25.0) in before
    with LogFileWriter(Storage(str(root)), *GROUP, "0-99-1") as writer:
        writer.append(update)
        writer.append(delete)
    after = _hudi_rows(root)
    assert ("rider-D", 77.7) in after
    assert "rider-A" not in {r for r, _ in after}
    assert len(after) == len(before) - 1


def test_hudi_reader_honours_our_rollback_block(tmp_path: Path) -> None:
    root = copy_table("v6_trips_8i1u", tmp_path)
    with LogFileWriter(Storage(str(root)), *GROUP, "1-0-1") as writer:
        writer.append(encode_rollback_block("20250331030645736", "20250331030645735"))
    # The update of rider-D (25.0) is voided: the base file's 33.9 shows again.
    assert ("rider-D", 33.9) in _hudi_rows(root)
