"""Version 9's column statistics values (Hudi 1.1's ``valueType``).

Hudi 1.1 keeps a column statistic of a version 9 table as a *primitive* wrapper (a
decimal as the bytes of its unscaled value, a date as its day number, a timestamp as its
microseconds) beside ``valueType``, the ordinal of Hudi's ``ValueType`` enum with, for a
decimal, ``"precision,scale"``. A null ``valueType`` (``V1``) is the earlier form, where
the wrapper itself says the logical type (``DecimalWrapper``, ``DateWrapper``, ...): how
hudisql keeps statistics in memory and in version 6 and 8 metadata tables.

:func:`to_value_type` writes a record in version 9's form; :func:`from_value_type` reads
either form back into hudisql's (and drops ``valueType``).
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import cache
from typing import Any

from hudisql.metadata import schema as S

__all__ = ["from_value_type", "reader_schema", "to_value_type"]

_NS = "org.apache.hudi.avro.model."
#: hudisql's wrapper -> (Hudi's ValueType ordinal, the primitive wrapper it is kept in).
_TO_V2 = {
    "BooleanWrapper": (2, "BooleanWrapper"), "IntWrapper": (3, "IntWrapper"),
    "LongWrapper": (4, "LongWrapper"), "FloatWrapper": (5, "FloatWrapper"),
    "DoubleWrapper": (6, "DoubleWrapper"), "StringWrapper": (7, "StringWrapper"),
    "BytesWrapper": (8, "BytesWrapper"), "DecimalWrapper": (10, "BytesWrapper"),
    "DateWrapper": (12, "IntWrapper"), "TimeMicrosWrapper": (14, "LongWrapper"),
    "TimestampMicrosWrapper": (16, "LongWrapper"),
}
#: Hudi's ValueType ordinal -> (hudisql's wrapper, factor to microseconds or None).
_FROM_V2: dict[int, tuple[str, int | None]] = {
    2: ("BooleanWrapper", None), 3: ("IntWrapper", None), 4: ("LongWrapper", None),
    5: ("FloatWrapper", None), 6: ("DoubleWrapper", None), 7: ("StringWrapper", None),
    8: ("BytesWrapper", None), 9: ("BytesWrapper", None), 11: ("StringWrapper", None),
    12: ("DateWrapper", None), 13: ("TimeMicrosWrapper", 1000),
    14: ("TimeMicrosWrapper", 1), 15: ("TimestampMicrosWrapper", 1000),
    16: ("TimestampMicrosWrapper", 1), 18: ("TimestampMicrosWrapper", 1000),
    19: ("TimestampMicrosWrapper", 1),
}
_DECIMAL = 10
#: The precision written with a decimal's scale (hudisql's statistics do not carry the
#: column's; Hudi uses it only to round, and 38 digits round nothing).
_DECIMAL_PRECISION = 38
_STATS = "ColumnStatsMetadata"


def to_value_type(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its column statistics (if any) in version 9's form."""
    stats = record.get(_STATS)
    if not stats or stats.get("valueType") is not None:
        return record
    wrapper = next((w for w in (stats.get("minValue"), stats.get("maxValue")) if w), None)
    if wrapper is None:
        return record
    name = wrapper[0].rsplit(".", 1)[-1]
    ordinal, primitive = _TO_V2.get(name, (None, name))
    if ordinal is None:
        return record
    info = None
    if ordinal == _DECIMAL:
        scale = max(-_exponent(w[1]["value"]) for w in (stats["minValue"], stats["maxValue"])
                    if w)
        info = f"{_DECIMAL_PRECISION},{scale}"

    def convert(w: Any) -> Any:
        if w is None:
            return None
        value = w[1]["value"]
        if ordinal == _DECIMAL:
            unscaled = int(Decimal(value).scaleb(scale))
            value = unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)
        return (_NS + primitive, {"value": value})

    return {**record, _STATS: {
        **stats, "minValue": convert(stats.get("minValue")),
        "maxValue": convert(stats.get("maxValue")),
        "valueType": {"typeOrdinal": ordinal, "additionalInfo": info}}}


def from_value_type(record: Any) -> Any:
    """``record`` with its column statistics in hudisql's form (``valueType`` dropped)."""
    stats = record.get(_STATS)
    if not stats or "valueType" not in stats:
        return record
    stats = dict(stats)
    value_type = stats.pop("valueType")
    if value_type is None or value_type["typeOrdinal"] == 0:
        return {**record, _STATS: stats}
    ordinal = value_type["typeOrdinal"]
    if ordinal == 1:
        stats["minValue"] = stats["maxValue"] = None
        return {**record, _STATS: stats}
    scale = 0
    if ordinal == _DECIMAL:
        scale = int((value_type.get("additionalInfo") or "0,0").split(",")[1])
    wrapper, factor = _FROM_V2.get(ordinal, (None, None))

    def convert(w: Any) -> Any:
        if w is None:
            return None
        value = w[1]["value"]
        if ordinal == _DECIMAL:
            return (_NS + "DecimalWrapper",
                    {"value": Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale)})
        if wrapper is None:
            return w
        if factor is not None and value is not None:
            value = int(value) * factor
        return (_NS + wrapper, {"value": value})

    stats["minValue"] = convert(stats.get("minValue"))
    stats["maxValue"] = convert(stats.get("maxValue"))
    return {**record, _STATS: stats}


def _exponent(value: Any) -> int:
    exponent = Decimal(value).as_tuple().exponent
    return exponent if isinstance(exponent, int) else 0


@cache
def reader_schema() -> Any:
    """hudisql's record schema with ``valueType`` in its column statistics: the reader
    schema of records another schema wrote (Hudi 1.1's), so that version 9's statistics
    reach :func:`from_value_type`."""
    import fastavro

    schema = json.loads(S.schema_text())

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "record" and node.get("name") == "HoodieMetadataColumnStats":
                node["fields"].append({"name": "valueType", "default": None, "type": [
                    "null", {"type": "record", "name": "HoodieValueTypeInfo", "fields": [
                        {"name": "typeOrdinal", "type": "int"},
                        {"name": "additionalInfo", "type": ["null", "string"],
                         "default": None}]}]})
                return
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return fastavro.parse_schema(schema)


# ------------------------------------------------------------------ secondary index keys


def secondary_source(values: Any, version: str | None) -> Any:
    """The values a secondary index of index version ``version`` keys: Hudi 1.1's ``V2``
    keys a date by its day number (``19737``, its Avro form), ``V1`` and hudisql's
    version-6 indexes by its ISO text (``2024-01-15``). Other types are returned as they
    are (their text is the same in both, or see :func:`v2_keys_match`)."""
    import pyarrow as pa

    if version == "V2" and pa.types.is_date(values.type):
        return values.cast(pa.date32()).cast(pa.int32())
    return values


def secondary_texts(pairs: Any, dtype: Any) -> Any:
    """Secondary (value text, key) pairs of a ``V2`` index on a column of ``dtype``: the
    ISO texts of dates become day numbers (see :func:`secondary_source`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_date(dtype) or not pairs.num_rows:
        return pairs
    days = pc.cast(pc.cast(pairs.column("value"), pa.date32()), pa.int32())
    return pairs.set_column(pairs.schema.get_field_index("value"), "value",
                            pc.cast(days, pa.string()))


def v2_keys_match(dtype: Any) -> bool:
    """Whether hudisql keys a ``V2`` secondary index on a column of ``dtype`` exactly as
    Hudi 1.1 does: strings, integers, booleans and (by :func:`secondary_source`) dates. A
    lookup on another type would not find Hudi's keys; readers scan instead."""
    import pyarrow as pa

    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
                or pa.types.is_integer(dtype) or pa.types.is_boolean(dtype)
                or pa.types.is_date(dtype))
