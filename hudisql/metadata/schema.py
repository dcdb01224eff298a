"""``HoodieMetadataRecord``: the Avro schema of every metadata table record, as Hudi 1.0 has it.

Fields in Hudi's order (``key``, ``type``, ``filesystemMetadata``, ``BloomFilterMetadata``,
``ColumnStatsMetadata``, ``recordIndexMetadata``, ``SecondaryIndexMetadata``) and the value
wrappers of column statistics in Hudi's union order. Records travel as fastavro-style dicts;
a wrapped min/max value is a ``(wrapper name, {"value": v})`` pair.

Base files are parquet (hudisql's deviation from Hudi's HFile): the same record as a
parquet-avro shaped row, where a union of several records becomes a group with one
optional ``member<i>`` field per branch (:func:`to_parquet_rows`, :func:`from_parquet_rows`).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import fastavro
import pyarrow as pa

__all__ = [
    "METADATA_RECORD_SCHEMA",
    "WRAPPERS",
    "arrow_schema",
    "from_parquet_rows",
    "parsed_schema",
    "schema_text",
    "to_parquet_rows",
]

_NS = "org.apache.hudi.avro.model"


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {"namespace": _NS, "type": "record", "name": name,
            "fields": [{"name": "value", "type": value_type}]}


#: The column-stats value wrappers, in the union order of ``minValue``/``maxValue``.
WRAPPERS: list[tuple[str, Any]] = [
    ("BooleanWrapper", "boolean"),
    ("IntWrapper", "int"),
    ("LongWrapper", "long"),
    ("FloatWrapper", "float"),
    ("DoubleWrapper", "double"),
    ("BytesWrapper", "bytes"),
    ("StringWrapper", "string"),
    ("DateWrapper", {"type": "int"}),
    ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    ("TimestampMicrosWrapper", {"type": "long"}),
]


def _nullable(kind: Any, default: bool = True) -> dict[str, Any]:
    return {"type": ["null", kind], "default": None} if default else {"type": ["null", kind]}


def _column_stats() -> dict[str, Any]:
    wrappers = [_wrapper(name, kind) for name, kind in WRAPPERS]
    return {
        "doc": "Data file column statistics", "name": "HoodieMetadataColumnStats",
        "type": "record",
        "fields": [
            {"name": "fileName", **_nullable("string")},
            {"name": "columnName", **_nullable("string")},
            {"name": "minValue", "type": ["null", *wrappers], "default": None},
            {"name": "maxValue", "type": ["null", *(f"{_NS}.{n}" for n, _ in WRAPPERS)],
             "default": None},
            {"name": "valueCount", **_nullable("long")},
            {"name": "nullCount", **_nullable("long")},
            {"name": "totalSize", **_nullable("long")},
            {"name": "totalUncompressedSize", **_nullable("long")},
            {"name": "isDeleted", "type": "boolean"},
            {"name": "isTightBound", "type": "boolean", "default": False},
        ],
    }


METADATA_RECORD_SCHEMA: dict[str, Any] = {
    "namespace": _NS,
    "type": "record",
    "name": "HoodieMetadataRecord",
    "doc": "A record saved within the Metadata Table",
    "fields": [
        {"name": "key", "type": "string"},
        {"name": "type", "doc": "Type of the metadata record", "type": "int"},
        {"name": "filesystemMetadata", "type": ["null", {
            "type": "map",
            "values": {"type": "record", "name": "HoodieMetadataFileInfo", "fields": [
                {"name": "size", "type": "long"},
                {"name": "isDeleted", "type": "boolean"},
            ]},
        }]},
        {"name": "BloomFilterMetadata", "type": ["null", {
            "name": "HoodieMetadataBloomFilter", "type": "record", "fields": [
                {"name": "type", "type": "string"},
                {"name": "timestamp", "type": "string"},
                {"name": "bloomFilter", "type": "bytes"},
                {"name": "isDeleted", "type": "boolean"},
            ]}], "default": None},
        {"name": "ColumnStatsMetadata", "type": ["null", _column_stats()], "default": None},
        {"name": "recordIndexMetadata", "type": ["null", {
            "type": "record", "name": "HoodieRecordIndexInfo", "fields": [
                {"name": "partitionName", **_nullable("string")},
                {"name": "fileIdHighBits", **_nullable("long")},
                {"name": "fileIdLowBits", **_nullable("long")},
                {"name": "fileIndex", **_nullable("int")},
                {"name": "fileId", **_nullable("string")},
                {"name": "instantTime", **_nullable("long")},
                {"name": "fileIdEncoding", "type": "int", "default": 0},
            ]}], "default": None},
        {"name": "SecondaryIndexMetadata", "type": ["null", {
            "type": "record", "name": "HoodieSecondaryIndexInfo", "fields": [
                {"name": "isDeleted", "type": "boolean"},
            ]}], "default": None},
    ],
}


@cache
def schema_text() -> str:
    """The schema as the JSON text written to log block headers and base file footers."""
    return json.dumps(METADATA_RECORD_SCHEMA, separators=(",", ":"))


@cache
def parsed_schema() -> Any:
    """The schema parsed by fastavro (named types resolved)."""
    return fastavro.parse_schema(json.loads(schema_text()))


# ----------------------------------------------------------------------------- parquet shape

_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(),
}


def _names(schema: Any, known: dict[str, Any]) -> Any:
    """Resolve named references, recording record definitions by full and short name."""
    if isinstance(schema, str):
        return known.get(schema, schema)
    if isinstance(schema, list):
        return [_names(s, known) for s in schema]
    if schema.get("type") == "record":
        ns = schema.get("namespace", _NS)
        out = dict(schema)
        known[f"{ns}.{schema['name']}"] = out
        known[schema["name"]] = out
        out["fields"] = [dict(f, type=_names(f["type"], known)) for f in schema["fields"]]
        return out
    if schema.get("type") == "map":
        return dict(schema, values=_names(schema["values"], known))
    return schema


@cache
def _resolved() -> dict[str, Any]:
    resolved: dict[str, Any] = _names(json.loads(schema_text()), {})
    return resolved


def _arrow_type(schema: Any) -> pa.DataType:
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) == 1:
            return _arrow_type(branches[0])
        return pa.struct([pa.field(f"member{i}", _arrow_type(b)) for i, b in enumerate(branches)])
    if isinstance(schema, str):
        return _PRIMITIVES[schema]
    kind = schema["type"]
    if kind == "record":
        return pa.struct([pa.field(f["name"], _arrow_type(f["type"]),
                                   nullable=_is_nullable(f["type"])) for f in schema["fields"]])
    if kind == "map":
        return pa.map_(pa.string(), _arrow_type(schema["values"]))
    if schema.get("logicalType") == "decimal":
        return pa.binary()  # the unscaled big-endian bytes, as the Avro value
    return _arrow_type(kind)


def _is_nullable(schema: Any) -> bool:
    return isinstance(schema, list) and "null" in schema


@cache
def arrow_schema() -> pa.Schema:
    """The parquet-avro shaped Arrow schema of metadata base files."""
    root = _resolved()
    return pa.schema([pa.field(f["name"], _arrow_type(f["type"]), nullable=_is_nullable(f["type"]))
                      for f in root["fields"]])


def _record_name(schema: Any) -> str:
    return f"{schema.get('namespace', _NS)}.{schema['name']}"


def _to_row(schema: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) == 1:
            return _to_row(branches[0], value)
        name, inner = value
        short = name.rsplit(".", 1)[-1]
        row: dict[str, Any] = {f"member{i}": None for i in range(len(branches))}
        for i, b in enumerate(branches):
            if isinstance(b, dict) and b.get("name") == short:
                row[f"member{i}"] = _to_row(b, inner)
                return row
        raise ValueError(f"{name} is not a branch of the union")
    if isinstance(schema, dict) and schema.get("type") == "record":
        return {f["name"]: _to_row(f["type"], value.get(f["name"])) for f in schema["fields"]}
    if isinstance(schema, dict) and schema.get("type") == "map":
        return [(k, _to_row(schema["values"], v)) for k, v in value.items()]
    if isinstance(schema, dict) and schema.get("logicalType") == "decimal":
        return _decimal_bytes(value, int(schema["scale"]))
    return value


def _from_row(schema: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) == 1:
            return _from_row(branches[0], value)
        for i, b in enumerate(branches):
            member = value.get(f"member{i}")
            if member is not None:
                return (_record_name(b), _from_row(b, member))
        return None
    if isinstance(schema, dict) and schema.get("type") == "record":
        return {f["name"]: _from_row(f["type"], value.get(f["name"])) for f in schema["fields"]}
    if isinstance(schema, dict) and schema.get("type") == "map":
        return {k: _from_row(schema["values"], v) for k, v in value}
    if isinstance(schema, dict) and schema.get("logicalType") == "decimal":
        return _decimal_value(value, int(schema["scale"]))
    return value


def _decimal_bytes(value: Any, scale: int) -> bytes:
    from decimal import Decimal

    unscaled = int(Decimal(value).scaleb(scale).to_integral_value())
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return unscaled.to_bytes(length, "big", signed=True)


def _decimal_value(raw: bytes, scale: int) -> Any:
    from decimal import Decimal

    return Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale)


def to_parquet_rows(records: list[dict[str, Any]]) -> pa.Table:
    """Metadata records (fastavro dicts) as a base file table."""
    root = _resolved()
    rows = [_to_row(root, r) for r in records]
    return pa.Table.from_pylist(rows, schema=arrow_schema())


def from_parquet_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The metadata records (fastavro dicts) of a base file table."""
    root = _resolved()
    return [_from_row(root, r) for r in table.to_pylist()]
