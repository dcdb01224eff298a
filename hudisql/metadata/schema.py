"""``HoodieMetadataRecord``: the Avro schema of every metadata table record, as Hudi 1.0 has it.

Fields in Hudi's order (``key``, ``type``, ``filesystemMetadata``, ``BloomFilterMetadata``,
``ColumnStatsMetadata``, ``recordIndexMetadata``, ``SecondaryIndexMetadata``) and the value
wrappers of column statistics in Hudi's union order. Records travel as fastavro-style dicts;
a wrapped min/max value is a ``(wrapper name, {"value": v})`` pair.

The index builders hand records around as Arrow rows in the shape Spark's Avro reader
gives the record (the "base-file shape": the base files of earlier hudisql's parquet
metadata tables, and the metadata table read as a table), where a union of several
records becomes a struct with one optional ``member<i>`` field per branch
(:func:`to_parquet_rows`, :func:`from_parquet_rows`); HFile base files hold them in Avro
(:mod:`hudisql.metadata.formats`).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from functools import cache
from typing import Any

import fastavro
import pyarrow as pa

from hudisql.table.format.schema import avro_to_arrow

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


@cache
def arrow_schema() -> pa.Schema:
    """The Arrow schema of metadata base files: the record as Spark's Avro reader (and
    :func:`hudisql.table.format.schema.avro_to_arrow`, so the log blocks' records) shape it, so a
    merged read of the metadata table unifies base files and log blocks: a union of
    several records is a struct of one ``member<i>`` field per branch, decimals decimal128,
    ``time-micros`` time64[us]."""
    return avro_to_arrow(METADATA_RECORD_SCHEMA)


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
        return Decimal(value).quantize(Decimal(1).scaleb(-int(schema["scale"])))
    return value  # time-micros: microseconds, which Arrow takes as a time64[us] value


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
        if isinstance(value, bytes):  # base files written before decimal128: unscaled bytes
            return Decimal(int.from_bytes(value, "big", signed=True)).scaleb(
                -int(schema["scale"]))
        return value
    if isinstance(value, dt.time):  # time-micros: back to microseconds
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 \
            + value.microsecond
    return value


def to_parquet_rows(records: list[dict[str, Any]], schema: pa.Schema | None = None
                    ) -> pa.Table:
    """Metadata records (fastavro dicts) as a base file table (``schema``: another shape
    of the record's columns, such as version 9's, whose unions have more branches; the
    fields the records lack are null, with valid values under them, so the table casts to
    any type whose fields are not nullable)."""
    root = _resolved()
    rows = [_to_row(root, r) for r in records]
    return pa.Table.from_pylist(rows, schema=schema or arrow_schema())


def from_parquet_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The metadata records (fastavro dicts) of a base file table."""
    root = _resolved()
    return [_from_row(root, r) for r in table.to_pylist()]
