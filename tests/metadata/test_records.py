"""HoodieMetadataRecord layout, the parquet base-file shape, merge rules and column stats."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudisql.errors import MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.column_stats import base_file_ranges, default_stats_columns, table_ranges
from hudisql.metadata.keys import RecordLocation
from hudisql.metadata.records import (
    ColumnRange,
    all_partitions_record,
    bloom_filter_record,
    column_range,
    column_stats_record,
    files_record,
    is_live,
    live_files,
    merge_records,
    partition_stats_record,
    record_index_record,
    secondary_index_record,
)
from hudisql.table.io.storage import Storage


def test_fields_and_unions_in_hudis_order() -> None:
    fields = [f["name"] for f in S.METADATA_RECORD_SCHEMA["fields"]]
    assert fields == ["key", "type", "filesystemMetadata", "BloomFilterMetadata",
                      "ColumnStatsMetadata", "recordIndexMetadata", "SecondaryIndexMetadata"]
    stats = S.METADATA_RECORD_SCHEMA["fields"][4]["type"][1]
    assert [f["name"] for f in stats["fields"]] == [
        "fileName", "columnName", "minValue", "maxValue", "valueCount", "nullCount",
        "totalSize", "totalUncompressedSize", "isDeleted", "isTightBound"]
    branches = [b["name"] for b in stats["fields"][2]["type"][1:]]
    assert branches == ["BooleanWrapper", "IntWrapper", "LongWrapper", "FloatWrapper",
                        "DoubleWrapper", "BytesWrapper", "StringWrapper", "DateWrapper",
                        "DecimalWrapper", "TimeMicrosWrapper", "TimestampMicrosWrapper"]
    info = S.METADATA_RECORD_SCHEMA["fields"][5]["type"][1]
    assert [f["name"] for f in info["fields"]] == [
        "partitionName", "fileIdHighBits", "fileIdLowBits", "fileIndex", "fileId",
        "instantTime", "fileIdEncoding"]


def sample_records() -> list[dict[str, object]]:
    return [
        files_record("city=sf", {"a.parquet": 10}, ["old.parquet"]),
        all_partitions_record(["city=sf", ""]),
        column_stats_record("city=sf", "a.parquet",
                            ColumnRange("fare", "decimal", Decimal("1.5"), Decimal("99.25"), 1, 9,
                                        100, 200)),
        column_stats_record("", "b.parquet", ColumnRange(
            "at", "timestamp", dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
            dt.datetime(2024, 1, 2, tzinfo=dt.UTC), 0, 3)),
        partition_stats_record("city=sf", ColumnRange("n", "int", 1, 5, 0, 4)),
        bloom_filter_record("city=sf", "a.parquet", "20240101000000000", "DYNAMIC_V0", b"\x01"),
        record_index_record("k1", RecordLocation("city=sf", "a-0", "20240101000000000")),
        secondary_index_record(None, "k1", deleted=True),
    ]


def test_avro_and_parquet_round_trips() -> None:
    records = sample_records()
    for record in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, S.parsed_schema(), record)
        buf.seek(0)
        back = fastavro.schemaless_reader(buf, S.parsed_schema(), None, return_record_name=True,
                                          return_record_name_override=True)
        assert back == record
    sink = io.BytesIO()
    pq.write_table(S.to_parquet_rows(records), sink)
    table = pq.read_table(pa.BufferReader(sink.getvalue()))
    assert S.from_parquet_rows(table) == records
    # parquet-avro's shape: a union of several records is a group of member<i> fields.
    assert table.schema.field("ColumnStatsMetadata").type.field("minValue").type.field(
        8).name == "member8"


def test_files_records_merge_as_hudi_does() -> None:
    a = files_record("p", {"x": 10, "y": 5})
    b = files_record("p", {"x": 12, "z": 1}, ["y", "never-seen"])
    merged = merge_records(a, b)
    assert live_files(merged) == {"x": 12, "z": 1}
    # A deletion with nothing before it stays as a marker, as Java's Map.merge leaves it.
    assert merged["filesystemMetadata"]["never-seen"]["isDeleted"] is True
    assert live_files(merge_records(merged, files_record("p", {"y": 7}))) == {
        "x": 12, "z": 1, "y": 7}


def test_other_records_newest_wins() -> None:
    old = secondary_index_record("v", "k")
    gone = secondary_index_record("v", "k", deleted=True)
    assert not is_live(merge_records(old, gone)) and is_live(merge_records(gone, old))
    with pytest.raises(MetadataTableError, match="types"):
        merge_records(old, files_record("p", {}))


def test_column_range_of_a_record_round_trips() -> None:
    r = ColumnRange("day", "date", dt.date(2024, 1, 2), dt.date(2024, 3, 1), 2, 7, 11, 22)
    back = column_range(column_stats_record("p", "f", r))
    assert back == r and back.min_value == 19724  # days since the epoch
    wider = back.merged(ColumnRange("day", "date", dt.date(2023, 12, 31), None, 1, 1))
    assert (wider.min_value, wider.max_value, wider.null_count, wider.value_count) == (
        19722, r.max_value, 3, 8)


def test_footer_statistics_equal_statistics_of_the_data(tmp_path: Path) -> None:
    table = pa.table({
        "i": pa.array([3, None, -7, 12], pa.int32()),
        "l": pa.array([2**40, 5, None, -1], pa.int64()),
        "s": pa.array(["pear", "apple", None, "zoo"]),
        "d": pa.array([dt.date(2024, 5, 1), None, dt.date(2023, 1, 1), dt.date(2025, 1, 1)]),
        "t": pa.array([dt.datetime(2024, 1, 1, 5), None, None, dt.datetime(2020, 1, 1)],
                      pa.timestamp("us", "UTC")),
        "m": pa.array([Decimal("1.25"), Decimal("-3.50"), None, Decimal("10.00")],
                      pa.decimal128(10, 2)),
        "b": pa.array([True, False, None, None]),
        "nulls": pa.array([None, None, None, None], pa.float64()),
        "blob": pa.array([[1], [2], [3], [4]]),
    })
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=2)
    columns = default_stats_columns(table.schema)
    assert columns == ["i", "l", "s", "d", "t", "m", "b", "nulls"]
    from_footer = base_file_ranges(Storage(str(tmp_path)), "f.parquet", columns)
    from_data = table_ranges(table, columns)
    assert [(r.column, r.min_value, r.max_value, r.null_count, r.value_count)
            for r in from_footer] == [
        (r.column, r.min_value, r.max_value, r.null_count, r.value_count) for r in from_data]
    assert all(r.total_size > 0 for r in from_footer)


def test_expression_block_operands_get_no_statistics(tmp_path: Path) -> None:
    from hudisql.metadata.column_stats import log_file_ranges
    from hudisql.table.write.files import write_log_file
    from tests.metadata.conftest import new_table

    table = new_table(tmp_path / "t")
    (first,) = [s for s in table.file_slices() if s.partition_path == "city=sf"][:1]
    records = pa.table({"_hoodie_record_key": ["k000"], "_hoodie_partition_path": ["city=sf"],
                        "id": ["k000"], "ts": [1], "rider": ["r0"], "fare": [2.5],
                        "day": [dt.date(2024, 1, 1)], "city": ["sf"]})
    stat = write_log_file(table.storage, "city=sf", first.file_id, first.base_instant,
                          "20990101000000000", "0-0-0", records, table.avro_schema,
                          expressions={"fare": "add"})
    got = {r.column for r in log_file_ranges(table.storage, stat.path or "", ["ts", "fare"])}
    assert got == {"ts"}
