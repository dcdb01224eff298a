"""The metadata record encoder and decoder give fastavro's bytes and values."""

from __future__ import annotations

import io

import fastavro
import pyarrow as pa
import pytest

from hudisql.errors import MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.avro import data_block_content, decode_record, encode_record
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.records import record_index_record, secondary_index_record
from tests.metadata.test_records import sample_records


def fastavro_bytes(record: dict[str, object]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, S.parsed_schema(), record)
    return buf.getvalue()


@pytest.mark.parametrize("index", range(len(sample_records())))
def test_same_bytes_and_values_as_fastavro(index: int) -> None:
    record = sample_records()[index]
    raw = encode_record(record)
    assert raw == fastavro_bytes(record)
    back = fastavro.schemaless_reader(io.BytesIO(raw), S.parsed_schema(), None,
                                      return_record_name=True, return_record_name_override=True)
    assert decode_record(raw) == back == record


def test_every_wrapper_and_large_values() -> None:
    from decimal import Decimal

    from hudisql.metadata.records import ColumnRange, column_stats_record

    for kind, lo, hi in [("bool", False, True), ("int", -(2**31), 2**31 - 1),
                         ("long", -(2**63), 2**63 - 1), ("float", -1.5, 3.25),
                         ("double", -1e300, 1e300), ("bytes", b"\x00", b"\xff" * 9),
                         ("string", "", "\u20ac" * 3), ("date", -1, 20000),
                         ("decimal", Decimal("-12345678901234.5"), Decimal("0.000000000000001")),
                         ("time", 0, 86_399_999_999), ("timestamp", -1, 2**50)]:
        record = column_stats_record("p", "f", ColumnRange("c", kind, lo, hi, 1, 2, 3, 4))
        assert encode_record(record) == fastavro_bytes(record)
        assert decode_record(encode_record(record)) == record


def test_damaged_bytes_are_reported() -> None:
    raw = encode_record(sample_records()[0])
    with pytest.raises(MetadataTableError):
        decode_record(raw[:-3])
    with pytest.raises(MetadataTableError):
        decode_record(raw + b"\x00")


def test_shared_payload_records_encode_as_the_records_they_stand_for() -> None:
    """Records that differ only in their key (a file group's record index entries, the
    secondary index entries of one kind) are encoded with one payload: the block content
    is byte for byte the one of the records written one by one, keys of every length
    (one- and two-byte length prefixes, non-ASCII) included."""
    location = RecordLocation("city=sf", "0b2c1d7e-5f4a-4c3b-9a8d-7e6f5a4b3c2d-0",
                              "20261124121212123")
    keys = ["a", "k" * 63, "k" * 64, "ключ-é", "k" * 300, "a"]
    templates = [record_index_record("", location),
                 secondary_index_record("r1", "", deleted=True)]
    one_by_one = [{**t, "key": k} for t in templates for k in keys]
    shared = data_block_content([], [(keys, t) for t in templates])
    assert shared == data_block_content(one_by_one)
    as_arrow = pa.array(keys, pa.string())
    assert data_block_content([], [(as_arrow, t) for t in templates]) == shared
    assert data_block_content([], [(as_arrow.slice(2, 3), templates[0])]) == data_block_content(
        [{**templates[0], "key": k} for k in keys[2:5]])
    assert [decode_record(r) for r in _records_of(shared)] == one_by_one


def _records_of(content: bytes) -> list[bytes]:
    count = int.from_bytes(content[4:8], "big")
    out, pos = [], 8
    for _ in range(count):
        size = int.from_bytes(content[pos:pos + 4], "big")
        out.append(content[pos + 4:pos + 4 + size])
        pos += 4 + size
    assert pos == len(content)
    return out
