"""Avro <-> Arrow schemas, checked against the schemas Hudi on Spark wrote into the fixtures."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudisql.errors import UnsupportedFormatError
from hudisql.table.format.schema import (
    META_COLUMNS,
    arrow_to_avro,
    arrow_to_records,
    avro_to_arrow,
    decimal_fixed_size,
    records_to_arrow,
    resolve_avro,
    with_meta_fields,
)
from tests.fixtures import table_path


def _properties(root: Path) -> dict[str, str]:
    out = {}
    for line in (root / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key] = value.replace("\\:", ":").replace("\\=", "=")
    return out


def _footer_schemas(name: str) -> list[tuple[Path, str]]:
    root = table_path(name)
    out = []
    for path in sorted(root.rglob("*.parquet")):
        if ".hoodie" in path.relative_to(root).parts:
            continue
        meta = pq.read_metadata(path).metadata
        if b"parquet.avro.schema" in meta:
            out.append((path, meta[b"parquet.avro.schema"].decode()))
    return out


SAMPLE_TABLES = ["v6_nonpartitioned", "v8_nonpartitioned", "v6_nonpartitioned_rollback",
                 "v6_simplekeygen_nonhivestyle"]


def test_meta_columns_are_hudis_five_in_order() -> None:
    assert META_COLUMNS == ("_hoodie_commit_time", "_hoodie_commit_seqno",
                            "_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name")


def test_every_type_of_the_sample_table_maps_to_the_arrow_type_parquet_has() -> None:
    [(path, text)] = _footer_schemas("v6_nonpartitioned")[:1]
    schema = avro_to_arrow(text)
    parquet_schema = pq.read_schema(path)
    assert schema.names == parquet_schema.names
    expected = {
        "id": pa.int32(), "name": pa.string(), "isActive": pa.bool_(),
        "byteField": pa.int32(), "shortField": pa.int32(), "intField": pa.int32(),
        "longField": pa.int64(), "floatField": pa.float32(), "doubleField": pa.float64(),
        "decimalField": pa.decimal128(10, 5), "dateField": pa.date32(),
        "timestampField": pa.timestamp("us", tz="UTC"), "binaryField": pa.binary(),
        "structField": pa.struct([
            pa.field("field1", pa.string()), pa.field("field2", pa.int32()),
            pa.field("child_struct", pa.struct([pa.field("child_field1", pa.float64()),
                                                pa.field("child_field2", pa.bool_())])),
        ]),
    }
    for name, arrow_type in expected.items():
        assert schema.field(name).type == arrow_type, name
        assert schema.field(name).nullable
        assert parquet_schema.field(name).type == arrow_type, name
    for meta in META_COLUMNS:
        assert schema.field(meta).type == pa.string()
    item = schema.field("arrayField").type.value_field
    assert item.nullable and item.type == pa.struct(
        [pa.field("arr_struct_f1", pa.string()), pa.field("arr_struct_f2", pa.int32())])
    map_type = schema.field("mapField").type
    assert map_type.key_type == pa.string() and map_type.item_field.nullable
    # Parquet's own reading of the file casts losslessly into our schema.
    table = pq.read_table(path)
    assert table.cast(schema).to_pylist() == table.to_pylist()


@pytest.mark.parametrize(
    "name", [*SAMPLE_TABLES, "v6_trips_8i1u", "v6_trips_8i3d", "v8_trips_8i1u"]
)
def test_arrow_to_avro_writes_exactly_the_footer_schema_hudi_wrote(name: str) -> None:
    footers = _footer_schemas(name)
    if name in ("v6_nonpartitioned_rollback", "v6_simplekeygen_nonhivestyle"):
        # Written by Spark's parquet writer (HoodieSparkRecordMerger): no Avro footer.
        assert footers == []
        return
    assert footers
    for _, text in footers:
        schema = avro_to_arrow(text)
        user = pa.schema([f for f in schema if f.name not in META_COLUMNS])
        avro = arrow_to_avro(user, name, with_meta=True)
        assert json.dumps(avro, separators=(",", ":")) == text


@pytest.mark.parametrize("name", [*SAMPLE_TABLES, "v6_trips_8i1u", "v8_trips_8i1u"])
def test_create_schema_with_type_first_unions_gives_the_same_arrow_schema(name: str) -> None:
    props = _properties(table_path(name))
    created = avro_to_arrow(props["hoodie.table.create.schema"])
    avro = json.loads(props["hoodie.table.create.schema"])
    assert avro["fields"][0]["type"][1] == "null"  # Spark writes [T, "null"] here
    # The same types the footer/log schema has, apart from the meta columns.
    regenerated = avro_to_arrow(arrow_to_avro(created, name))
    assert regenerated == created
    assert all(f.nullable for f in created)


def test_nested_names_follow_spark_namespaces() -> None:
    schema = pa.schema([
        ("s", pa.struct([("inner", pa.struct([("x", pa.int32())]))])),
        ("d", pa.decimal128(20, 2)),
        ("l", pa.list_(pa.struct([("y", pa.string())]))),
    ])
    avro = arrow_to_avro(schema, "tbl")
    assert avro["name"] == "tbl_record" and avro["namespace"] == "hoodie.tbl"
    s = avro["fields"][0]["type"][1]
    assert (s["name"], s["namespace"]) == ("s", "hoodie.tbl.tbl_record")
    inner = s["fields"][0]["type"][1]
    assert (inner["name"], inner["namespace"]) == ("inner", "hoodie.tbl.tbl_record.s")
    d = avro["fields"][1]["type"][1]
    assert d == {"type": "fixed", "name": "fixed", "namespace": "hoodie.tbl.tbl_record.d",
                 "size": 9, "logicalType": "decimal", "precision": 20, "scale": 2}
    item = avro["fields"][2]["type"][1]["items"]
    assert item[0] == "null" and item[1]["name"] == "l"


@pytest.mark.parametrize(
    ("arrow_type", "avro_type"),
    [
        (pa.int8(), "int"), (pa.int16(), "int"), (pa.uint16(), "int"), (pa.int32(), "int"),
        (pa.uint32(), "long"), (pa.int64(), "long"), (pa.float16(), "float"),
        (pa.float32(), "float"), (pa.float64(), "double"), (pa.bool_(), "boolean"),
        (pa.large_string(), "string"), (pa.large_binary(), "bytes"),
        (pa.date32(), {"type": "int", "logicalType": "date"}),
        (pa.timestamp("ns", tz="UTC"), {"type": "long", "logicalType": "timestamp-micros"}),
        (pa.timestamp("ms", tz="Asia/Kolkata"),
         {"type": "long", "logicalType": "timestamp-millis"}),
        (pa.timestamp("us"), {"type": "long", "logicalType": "local-timestamp-micros"}),
        (pa.time64("us"), {"type": "long", "logicalType": "time-micros"}),
        (pa.time32("ms"), {"type": "int", "logicalType": "time-millis"}),
        (pa.dictionary(pa.int8(), pa.string()), "string"),
    ],
)
def test_arrow_types_map_to_avro(arrow_type: pa.DataType, avro_type: object) -> None:
    avro = arrow_to_avro(pa.schema([("c", arrow_type)]), "t")
    assert avro["fields"][0] == {"name": "c", "type": ["null", avro_type], "default": None}


@pytest.mark.parametrize(
    ("arrow_type", "message"),
    [
        (pa.duration("s"), "Avro cannot hold"),
        (pa.map_(pa.int32(), pa.string()), "string keys"),
        (pa.month_day_nano_interval(), "Avro cannot hold"),
    ],
)
def test_arrow_types_without_avro_equivalent_are_refused(
    arrow_type: pa.DataType, message: str
) -> None:
    with pytest.raises(UnsupportedFormatError, match=message):
        arrow_to_avro(pa.schema([("col", arrow_type)]), "t")


def test_bad_column_names_are_refused_with_the_name() -> None:
    with pytest.raises(UnsupportedFormatError, match="'my col'"):
        arrow_to_avro(pa.schema([("my col", pa.int32())]), "t")


def test_table_names_are_sanitized_into_avro_names() -> None:
    avro = arrow_to_avro(pa.schema([("a", pa.int32())]), "my-table")
    assert avro["name"] == "my_table_record" and avro["namespace"] == "hoodie.my_table"


@pytest.mark.parametrize(
    ("avro_type", "arrow_type", "nullable"),
    [
        (["null", "long"], pa.int64(), True),
        (["string", "null"], pa.string(), True),
        ("double", pa.float64(), False),
        (["null"], pa.null(), True),
        ({"type": "long", "logicalType": "timestamp-millis"}, pa.timestamp("ms", tz="UTC"), False),
        ({"type": "long", "logicalType": "local-timestamp-micros"}, pa.timestamp("us"), False),
        ({"type": "int", "logicalType": "time-millis"}, pa.time32("ms"), False),
        ({"type": "long", "logicalType": "time-micros"}, pa.time64("us"), False),
        ({"type": "string", "logicalType": "uuid"}, pa.string(), False),
        ({"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
         pa.decimal128(30, 15), False),
        ({"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 0},
         pa.decimal256(50, 0), False),
        # unknown or misplaced logical types are ignored (Avro spec)
        ({"type": "long", "logicalType": "date"}, pa.int64(), False),
        ({"type": "string", "logicalType": "json"}, pa.string(), False),
        ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, pa.string(), False),
        ({"type": "fixed", "name": "F", "size": 3}, pa.binary(3), False),
    ],
)
def test_avro_types_map_to_arrow(avro_type: object, arrow_type: pa.DataType,
                                 nullable: bool) -> None:
    schema = avro_to_arrow({"type": "record", "name": "r", "fields": [
        {"name": "c", "type": avro_type}]})
    assert schema.field("c").type == arrow_type
    assert schema.field("c").nullable is nullable


def test_named_types_are_resolved_by_reference() -> None:
    schema = avro_to_arrow({
        "type": "record", "name": "r", "namespace": "ns", "fields": [
            {"name": "a", "type": {"type": "record", "name": "Point",
                                   "fields": [{"name": "x", "type": "int"}]}},
            {"name": "b", "type": ["null", "Point"]},
            {"name": "c", "type": "ns.Point"},
        ]})
    point = pa.struct([pa.field("x", pa.int32(), nullable=False)])
    assert [f.type for f in schema] == [point, point, point]
    assert [f.nullable for f in schema] == [False, True, False]


@pytest.mark.parametrize(
    ("union", "arrow", "nullable"),
    [
        # Spark's Avro reader (SchemaConverters.toSqlType): nulls left out, one nullable
        # member<i> per remaining branch in union order; int/long and float/double widened.
        (["int", "string"], pa.struct([pa.field("member0", pa.int32()),
                                       pa.field("member1", pa.string())]), False),
        (["string", "null", "boolean", {"type": "record", "name": "W", "fields": [
            {"name": "value", "type": "long"}]}],
         pa.struct([pa.field("member0", pa.string()), pa.field("member1", pa.bool_()),
                    pa.field("member2", pa.struct([pa.field("value", pa.int64(), False)]))]),
         True),
        (["long", "int"], pa.int64(), False),
        (["null", "float", "double"], pa.float64(), True),
        (["int", "double"], pa.struct([pa.field("member0", pa.int32()),
                                       pa.field("member1", pa.float64())]), False),
    ],
)
def test_unions_of_several_types_map_as_sparks_avro_reader_maps_them(
        union: list[Any], arrow: pa.DataType, nullable: bool) -> None:
    schema = avro_to_arrow({"type": "record", "name": "r", "fields": [
        {"name": "a", "type": union}]})
    assert schema.field("a").type == arrow and schema.field("a").nullable is nullable
    assert all(f.nullable for f in arrow) if pa.types.is_struct(arrow) else True


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ('{"type": "record", "name": "r", "fields": [{"name": "a", "type": "r"}]}', "recursive"),
        ('{"type": "record", "name": "r", "fields": [{"name": "a", "type": "Nope"}]}',
         "unknown Avro type"),
        ('{"type": "record", "name": ', "invalid JSON"),
        ('"string"', "must be an Avro record"),
    ],
)
def test_unusable_avro_schemas_are_refused(schema: str, message: str) -> None:
    with pytest.raises(UnsupportedFormatError, match=message):
        avro_to_arrow(schema)


def test_resolve_avro_gives_full_names() -> None:
    resolved = resolve_avro({"type": "record", "name": "r", "namespace": "a.b",
                             "fields": [{"name": "e", "type": {"type": "enum", "name": "E",
                                                               "symbols": ["X"]}}]})
    assert resolved["name"] == "a.b.r"
    assert resolved["fields"][0]["type"]["name"] == "a.b.E"


def test_decimal_fixed_sizes_match_spark() -> None:
    assert [decimal_fixed_size(p) for p in (1, 2, 9, 10, 18, 19, 38)] == [1, 1, 4, 5, 8, 9, 16]


def test_with_meta_fields_puts_the_meta_columns_first_once() -> None:
    avro = arrow_to_avro(pa.schema([("a", pa.int32())]), "t")
    with_meta = with_meta_fields(avro)
    assert [f["name"] for f in with_meta["fields"]] == [*META_COLUMNS, "a"]
    assert with_meta_fields(with_meta) == with_meta
    assert with_meta["fields"][0] == {"name": "_hoodie_commit_time", "type": ["null", "string"],
                                      "doc": "", "default": None}
    assert [f["name"] for f in avro["fields"]] == ["a"]  # the input is not changed


def test_records_round_trip_with_maps_as_dicts() -> None:
    schema = pa.schema([
        ("m", pa.map_(pa.string(), pa.struct([("v", pa.int64())]))),
        ("l", pa.list_(pa.map_(pa.string(), pa.int32()))),
        ("d", pa.decimal128(10, 5)), ("t", pa.timestamp("us", tz="UTC")), ("day", pa.date32()),
    ])
    records: list[dict[str, Any]] = [
        {"m": {"k": {"v": 1}}, "l": [{"a": 1}, None], "d": Decimal("1.50000"),
         "t": dt.datetime(2023, 4, 1, 12, 1, tzinfo=dt.UTC), "day": dt.date(2023, 4, 1)},
        {"m": None, "l": None, "d": None, "t": None, "day": None},
    ]
    table = records_to_arrow(records, schema)
    assert table.schema == schema
    assert arrow_to_records(table) == records
