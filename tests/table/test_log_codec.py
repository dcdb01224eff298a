"""The Avro record codec and block decoding: Avro shapes beyond Hudi's, and every decode error."""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import struct
import uuid
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudisql.errors import CorruptLogBlockError, UnsupportedFormatError
from hudisql.table.format.log import (
    BlockType,
    HeaderKey,
    decode_data_block,
    decode_delete_block,
    encode_avro_data_block,
    scan_blocks,
)
from hudisql.table.format.log.avro_codec import record_codec
from hudisql.table.format.log.format import encode_block

INSTANT = "20250101000000001"
HEADER = {HeaderKey.INSTANT_TIME: INSTANT}


def _block_of(schema: dict[str, Any], records: list[bytes], version: int = 3,
              count: int | None = None, tail: bytes = b"") -> bytes:
    """A data block whose records are the given Avro binaries (hand-made content)."""
    body = b"".join(struct.pack(">i", len(r)) + r for r in records)
    content = struct.pack(">ii", version, len(records) if count is None else count) + body + tail
    return encode_block(BlockType.AVRO_DATA, {**HEADER, HeaderKey.SCHEMA: json.dumps(schema)},
                        content)


def _fastavro_bytes(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return buf.getvalue()


def _decode(block: bytes) -> pa.Table:
    [info] = scan_blocks(block, "t.log")
    return decode_data_block(block, info)


RICH = {
    "type": "record", "name": "r", "namespace": "x", "fields": [
        {"name": "req", "type": "long"},
        {"name": "second_null", "type": ["string", "null"]},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "tm", "type": ["null", {"type": "int", "logicalType": "time-millis"}]},
        {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 30,
                                 "scale": 4}},
        {"name": "nothing", "type": "null"},
        {"name": "nested", "type": {"type": "record", "name": "N", "fields": [
            {"name": "a", "type": {"type": "array", "items": "int"}},
            {"name": "m", "type": {"type": "map", "values": ["null", "Color"]}},
        ]}},
        {"name": "again", "type": ["null", "N"]},
    ]}

RICH_RECORDS: list[dict[str, Any]] = [
    {"req": -1, "second_null": "zwölf", "e": "GREEN", "fx": b"\x00\x01\x02\x03",
     "u": str(uuid.UUID(int=7)), "tm": dt.time(1, 2, 3, 4000),
     "ltm": dt.datetime(2023, 4, 1, 12, 1, 2, 5000), "dec": Decimal("-123456789012345678.1234"),
     "nothing": None, "nested": {"a": [1, -2, 3], "m": {"k": "RED", "z": None}},
     "again": None},
    {"req": 2**62, "second_null": None, "e": "RED", "fx": b"abcd", "u": str(uuid.UUID(int=9)),
     "tm": None, "ltm": dt.datetime(1969, 12, 31, 23, 59, 59), "dec": Decimal("0.0000"),
     "nothing": None, "nested": {"a": [], "m": {}},
     "again": {"a": [5], "m": {"q": "GREEN"}}},
]


def test_avro_shapes_beyond_hudis_decode_like_fastavro_reads_them() -> None:
    block = _block_of(RICH, [_fastavro_bytes(RICH, r) for r in RICH_RECORDS])
    table = _decode(block)
    assert table.schema.field("req").nullable is False
    assert table.schema.field("second_null").nullable is True
    assert table.schema.field("fx").type == pa.binary(4)
    assert table.schema.field("ltm").type == pa.timestamp("ms")
    rows = table.to_pylist()
    for row, record in zip(rows, RICH_RECORDS, strict=True):
        for nested in ("nested", "again"):
            if row[nested] is not None:
                row[nested]["m"] = dict(row[nested]["m"])
        assert row == record
    # ...and encode back to exactly fastavro's bytes.
    again = encode_avro_data_block(table, json.dumps(RICH), HEADER)
    assert again == block


#: Unions of several types, as Hudi's metadata records hold them (column-stats wrappers).
UNIONS = {"type": "record", "name": "r", "namespace": "x", "fields": [
    {"name": "w", "type": ["null", *[{"type": "record", "name": f"W{i}", "fields": [
        {"name": "value", "type": kind}]} for i, kind in enumerate(
        ["boolean", "string", {"type": "bytes", "logicalType": "decimal", "precision": 30,
                               "scale": 15}])]]},
    {"name": "plain", "type": ["string", "null", "int", {"type": "array", "items": "long"}]},
    {"name": "number", "type": ["int", "long"]},
    {"name": "real", "type": ["null", "float", "double"]},
    {"name": "tail", "type": ["null", "long"]},
]}
UNION_RECORDS: list[dict[str, Any]] = [
    {"w": ("x.W0", {"value": True}), "plain": "a", "number": 1, "real": 0.5, "tail": 1},
    {"w": ("x.W2", {"value": Decimal("-1.5")}), "plain": None, "number": 2**40, "real": None,
     "tail": None},
    {"w": None, "plain": 7, "number": -3, "real": 2.25, "tail": 3},
    {"w": ("x.W1", {"value": "zwölf"}), "plain": [1, 2], "number": 0, "real": -1.0, "tail": 4},
]


def test_unions_of_several_types_decode_as_members_and_encode_back() -> None:
    block = _block_of(UNIONS, [_fastavro_bytes(UNIONS, r) for r in UNION_RECORDS])
    table = _decode(block)
    assert [f.name for f in table.schema.field("w").type] == ["member0", "member1", "member2"]
    assert table.schema.field("number").type == pa.int64()
    assert table.schema.field("real").type == pa.float64()
    assert table.column("w").to_pylist() == [
        {"member0": {"value": True}, "member1": None, "member2": None},
        {"member0": None, "member1": None, "member2": {"value": Decimal("-1.5").quantize(
            Decimal("1e-15"))}},
        None,
        {"member0": None, "member1": {"value": "zwölf"}, "member2": None}]
    assert table.column("plain").to_pylist() == [
        {"member0": "a", "member1": None, "member2": None}, None,
        {"member0": None, "member1": 7, "member2": None},
        {"member0": None, "member1": None, "member2": [1, 2]}]
    assert table.column("number").to_pylist() == [1, 2**40, -3, 0]
    assert table.column("tail").to_pylist() == [1, None, 3, 4]
    # Encoded back, fastavro reads the same values (a widened number takes the wider branch).
    again = encode_avro_data_block(table, json.dumps(UNIONS), HEADER)
    assert _decode(again).equals(table)
    [info] = scan_blocks(again, "t.log")
    content = io.BytesIO(again[info.content_position:info.content_position + info.content_length])
    _, count = struct.unpack(">ii", content.read(8))
    parsed = fastavro.parse_schema(UNIONS)
    read = []
    for _ in range(count):
        (length,) = struct.unpack(">i", content.read(4))
        read.append(fastavro.schemaless_reader(io.BytesIO(content.read(length)), parsed,
                                               return_record_name=True))
    assert read == UNION_RECORDS


def test_java_style_array_blocks_with_negative_counts_decode() -> None:
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": {"type": "array", "items": "long"}}]}
    # Two blocks: count -2 with its byte size, then count 1, then the end.
    raw = bytes([3, 4, 4, 6, 2, 8, 0])  # -2 items in 2 bytes: 2, 3; then 1 item: 4; end
    assert _decode(_block_of(schema, [raw])).column("a").to_pylist() == [[2, 3, 4]]


def test_special_floats_survive_bit_for_bit() -> None:
    table = pa.table({"d": [math.inf, -math.inf, -0.0, math.nan], "f": pa.array(
        [math.nan, 1e38, -0.0, None], pa.float32())})
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "d", "type": "double"}, {"name": "f", "type": ["null", "float"]}]}
    block = encode_avro_data_block(table, json.dumps(schema), HEADER)
    decoded = _decode(block)
    for name in ("d", "f"):
        assert (decoded.column(name).combine_chunks().buffers()[1]
                == table.column(name).combine_chunks().buffers()[1])


def test_sliced_and_chunked_tables_encode_their_visible_rows() -> None:
    schema = pa.schema([
        ("l", pa.list_(pa.struct([("s", pa.string()), ("d", pa.decimal128(5, 2))]))),
        ("m", pa.map_(pa.string(), pa.list_(pa.int64()))),
        ("s", pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))])),
        ("k", pa.dictionary(pa.int32(), pa.string())),
    ])
    rows = [
        {"l": [{"s": f"s{i}", "d": Decimal(i) / 4}] * (i % 3), "m": [(f"k{i}", [i, i + 1])],
         "s": None if i % 4 == 1 else {"x": i, "y": [str(i)] * (i % 2)}, "k": f"v{i % 2}"}
        for i in range(9)
    ]
    full = pa.Table.from_pylist(rows, schema=schema)
    avro = {"type": "record", "name": "r", "fields": [
        {"name": "l", "type": ["null", {"type": "array", "items": ["null", {
            "type": "record", "name": "L", "fields": [
                {"name": "s", "type": ["null", "string"]},
                {"name": "d", "type": ["null", {"type": "fixed", "name": "D", "size": 3,
                                                "logicalType": "decimal", "precision": 5,
                                                "scale": 2}]}]}]}]},
        {"name": "m", "type": ["null", {"type": "map", "values": ["null", {
            "type": "array", "items": ["null", "long"]}]}]},
        {"name": "s", "type": ["null", {"type": "record", "name": "S", "fields": [
            {"name": "x", "type": ["null", "int"]},
            {"name": "y", "type": ["null", {"type": "array", "items": ["null", "string"]}]}]}]},
        {"name": "k", "type": ["null", "string"]},
    ]}
    sliced = full.slice(2, 5)
    chunked = pa.concat_tables([full.slice(0, 3), full.slice(3, 2), full.slice(5)])
    for table in (sliced, chunked):
        decoded = _decode(encode_avro_data_block(table, json.dumps(avro), HEADER))
        assert decoded.to_pylist() == table.to_pylist()


# --------------------------------------------------------------------------- decode errors

TWO_FIELDS = {"type": "record", "name": "r", "fields": [
    {"name": "s", "type": ["null", "string"]}, {"name": "n", "type": ["null", "long"]}]}
GOOD = _fastavro_bytes(TWO_FIELDS, {"s": "ok", "n": 5})


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (_block_of(TWO_FIELDS, [GOOD], count=2), "record"),
        (_block_of(TWO_FIELDS, [GOOD], tail=b"\x00"), "bytes follow the last record"),
        (_block_of(TWO_FIELDS, [GOOD + b"\x00"]), "record ends at"),
        (_block_of(TWO_FIELDS, [GOOD[:-1]]), "record ends at|IndexError"),
        (_block_of(TWO_FIELDS, [b"\x06" + GOOD[1:]]), "union index 6"),
        (_block_of(TWO_FIELDS, [b"\x02\x04\xff\xfe\x00"]), "UnicodeDecodeError"),
        (_block_of(TWO_FIELDS, [b"\x02\x03ab\x00"]), "negative length"),
        (_block_of(TWO_FIELDS, [GOOD], version=99), "unknown data block version 99"),
        (_block_of(TWO_FIELDS, [GOOD], count=-1), "record count -1"),
        (_block_of({"type": "record", "name": "r", "fields": [
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}}]},
            [b"\x02"]), "enum index 1"),
        (_block_of({"type": "record", "name": "r", "fields": [
            {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 2,
                                   "scale": 0}}]}, [b"\x04\x01\x00"]), "exceeds precision 2"),
        (encode_block(BlockType.AVRO_DATA, HEADER, b"\x00\x00\x00\x03\x00\x00\x00\x00"),
         "without a SCHEMA header"),
        (encode_block(BlockType.AVRO_DATA, {**HEADER, HeaderKey.SCHEMA: "{nope"},
                      b"\x00\x00\x00\x03\x00\x00\x00\x00"), "SCHEMA header is not usable"),
        (encode_block(BlockType.AVRO_DATA, {**HEADER, HeaderKey.SCHEMA: json.dumps(TWO_FIELDS)},
                      b"\x00\x00"), "shorter than its version"),
        (encode_block(BlockType.PARQUET_DATA, HEADER, b"PAR1 not parquet PAR1"),
         "parquet content does not read"),
    ],
)
def test_undecodable_data_blocks_raise_corrupt_with_position_and_instant(
    block: bytes, message: str
) -> None:
    [info] = scan_blocks(C_PREFIX + block, "p/t.log")[1:]
    with pytest.raises(CorruptLogBlockError, match=message) as err:
        decode_data_block(C_PREFIX + block, info)
    text = str(err.value)
    assert f"byte {len(C_PREFIX)} of p/t.log" in text and f"instant {INSTANT}" in text


C_PREFIX = encode_block(BlockType.COMMAND, {HeaderKey.INSTANT_TIME: INSTANT}, b"")


def test_old_data_block_version_is_unsupported_not_corrupt() -> None:
    with pytest.raises(UnsupportedFormatError, match="version 1"):
        _decode(_block_of(TWO_FIELDS, [GOOD], version=1))


def test_parquet_block_without_schema_header_reads_as_written() -> None:
    buf = io.BytesIO()
    pq.write_table(pa.table({"a": [1, 2]}), buf)
    block = encode_block(BlockType.PARQUET_DATA, HEADER, buf.getvalue())
    assert _decode(block).to_pylist() == [{"a": 1}, {"a": 2}]


def test_parquet_block_columns_follow_the_schema_header() -> None:
    buf = io.BytesIO()
    pq.write_table(pa.table({"n": pa.array([1], pa.int32()), "extra": ["x"]}), buf)
    block = encode_block(BlockType.PARQUET_DATA,
                         {**HEADER, HeaderKey.SCHEMA: json.dumps(TWO_FIELDS)}, buf.getvalue())
    assert _decode(block).to_pylist() == [{"s": None, "n": 1}]


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        (struct.pack(">ii", 2, 0), UnsupportedFormatError, "Java-serialized"),
        (struct.pack(">ii", 77, 0), CorruptLogBlockError, "unknown delete block version 77"),
        (struct.pack(">ii", 3, 5) + b"\x00", CorruptLogBlockError, "length 5"),
        (struct.pack(">ii", 3, 3) + b"\x02\x04\x00", CorruptLogBlockError, "does not decode"),
        (struct.pack(">ii", 3, 6) + b"\x02\x00\x00\x1a\x00\x00", CorruptLogBlockError,
         "union index 13"),
        (struct.pack(">ii", 3, 2) + b"\x00\x00", CorruptLogBlockError, "1 bytes follow"),
    ],
)
def test_undecodable_delete_blocks(content: bytes, error: type[Exception], message: str) -> None:
    block = encode_block(BlockType.DELETE, HEADER, content)
    [info] = scan_blocks(block)
    with pytest.raises(error, match=message):
        decode_delete_block(block, info)


def test_delete_decoder_refuses_other_blocks() -> None:
    block = _block_of(TWO_FIELDS, [GOOD])
    [info] = scan_blocks(block)
    with pytest.raises(ValueError, match="not a delete"):
        decode_delete_block(block, info)


def test_codecs_are_cached_per_schema_text() -> None:
    text = json.dumps(TWO_FIELDS)
    assert record_codec(text) is record_codec(text)
    assert record_codec(TWO_FIELDS) is record_codec(json.dumps(TWO_FIELDS))
