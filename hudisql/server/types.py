"""Spark types as PostgreSQL types: OIDs, sizes, typmods, and values in text or binary form.

The built-in rows of ``pg_type`` come from :data:`PG_TYPES` (real PostgreSQL OIDs, so
drivers' hard-coded tables agree); :func:`pg_type_of` maps a Spark type to a row and a
typmod; :func:`encode_column` turns one Arrow column of a result batch into wire values.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

TEXT_FORMAT = 0
BINARY_FORMAT = 1


@dataclass(frozen=True)
class PgType:
    """One built-in PostgreSQL type (a ``pg_type`` row)."""

    oid: int
    name: str
    size: int
    category: str
    array_oid: int
    input: str
    receive: str


PG_TYPES: tuple[PgType, ...] = (
    PgType(16, "bool", 1, "B", 1000, "boolin", "boolrecv"),
    PgType(17, "bytea", -1, "U", 1001, "byteain", "bytearecv"),
    PgType(18, "char", 1, "Z", 1002, "charin", "charrecv"),
    PgType(19, "name", 64, "S", 1003, "namein", "namerecv"),
    PgType(20, "int8", 8, "N", 1016, "int8in", "int8recv"),
    PgType(21, "int2", 2, "N", 1005, "int2in", "int2recv"),
    PgType(23, "int4", 4, "N", 1007, "int4in", "int4recv"),
    PgType(24, "regproc", 4, "N", 1008, "regprocin", "regprocrecv"),
    PgType(25, "text", -1, "S", 1009, "textin", "textrecv"),
    PgType(26, "oid", 4, "N", 1028, "oidin", "oidrecv"),
    PgType(114, "json", -1, "U", 199, "json_in", "json_recv"),
    PgType(700, "float4", 4, "N", 1021, "float4in", "float4recv"),
    PgType(701, "float8", 8, "N", 1022, "float8in", "float8recv"),
    PgType(1042, "bpchar", -1, "S", 1014, "bpcharin", "bpcharrecv"),
    PgType(1043, "varchar", -1, "S", 1015, "varcharin", "varcharrecv"),
    PgType(1082, "date", 4, "D", 1182, "date_in", "date_recv"),
    PgType(1083, "time", 8, "D", 1183, "time_in", "time_recv"),
    PgType(1114, "timestamp", 8, "D", 1115, "timestamp_in", "timestamp_recv"),
    PgType(1184, "timestamptz", 8, "D", 1185, "timestamptz_in", "timestamptz_recv"),
    PgType(1186, "interval", 16, "T", 1187, "interval_in", "interval_recv"),
    PgType(1700, "numeric", -1, "N", 1231, "numeric_in", "numeric_recv"),
    PgType(2205, "regclass", 4, "N", 2210, "regclassin", "regclassrecv"),
    PgType(2249, "record", -1, "P", 2287, "record_in", "record_recv"),
    PgType(2950, "uuid", 16, "U", 2951, "uuid_in", "uuid_recv"),
)
BY_OID = {t.oid: t for t in PG_TYPES}

#: ``format_type`` names of the built-in types (what ``\d`` and tools print).
DISPLAY_NAMES = {
    16: "boolean", 17: "bytea", 18: '"char"', 19: "name", 20: "bigint", 21: "smallint",
    23: "integer", 24: "regproc", 25: "text", 26: "oid", 114: "json", 700: "real",
    701: "double precision", 1042: "character", 1043: "character varying", 1082: "date",
    1083: "time without time zone", 1114: "timestamp without time zone",
    1184: "timestamp with time zone", 1186: "interval", 1700: "numeric",
    2205: "regclass", 2249: "record", 2950: "uuid",
}


def pg_type_of(spark_type: T.DataType) -> tuple[PgType, int]:
    """The PostgreSQL type and typmod a Spark column is sent as (-1: no typmod).

    Nested types (arrays, maps, structs) go as ``json`` text.
    """
    if isinstance(spark_type, T.DecimalType):
        return BY_OID[1700], ((spark_type.precision << 16) | spark_type.scale) + 4
    if isinstance(spark_type, T.VarcharType):
        return BY_OID[1043], spark_type.length + 4
    if isinstance(spark_type, T.CharType):
        return BY_OID[1042], spark_type.length + 4
    if isinstance(spark_type, (T.ArrayType, T.MapType, T.StructType)):
        return BY_OID[114], -1
    oid = _SIMPLE_OIDS.get(type(spark_type), 25)
    return BY_OID[oid], -1


_SIMPLE_OIDS: dict[type, int] = {
    T.BooleanType: 16, T.ByteType: 21, T.ShortType: 21, T.IntegerType: 23, T.LongType: 20,
    T.FloatType: 700, T.DoubleType: 701, T.StringType: 25, T.BinaryType: 17,
    T.DateType: 1082, T.TimestampType: 1184, T.TimestampNTZType: 1114, T.NullType: 25,
    T.DayTimeIntervalType: 1186,
}


def format_type(oid: int, typmod: int) -> str:
    """``format_type(oid, typmod)``: the type's SQL name with its modifiers."""
    name = DISPLAY_NAMES.get(oid)
    if name is None:
        return "???"
    if oid == 1700 and typmod >= 4:
        return f"numeric({(typmod - 4) >> 16},{(typmod - 4) & 0xFFFF})"
    if oid in (1042, 1043) and typmod >= 4:
        return f"{name}({typmod - 4})"
    return name


# ---------------------------------------------------------------------- values out

Encoder = Callable[[Any], bytes]


def _text_float(value: float) -> bytes:
    if value != value:
        return b"NaN"
    if value in (float("inf"), float("-inf")):
        return b"Infinity" if value > 0 else b"-Infinity"
    text = repr(value)
    return (text[:-2] if text.endswith(".0") else text).encode()  # PostgreSQL prints 33, not 33.0


def _text_timestamp(value: dt.datetime) -> bytes:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
        return (value.replace(tzinfo=None).isoformat(sep=" ") + "+00").encode()
    return value.isoformat(sep=" ").encode()


def _text_nested(value: Any) -> bytes:
    return json.dumps(value, default=str, ensure_ascii=False).encode()


def _text_interval(value: dt.timedelta) -> bytes:
    seconds = value.total_seconds()
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{int(days)} days {sign}{int(hours):02}:{int(minutes):02}:{secs:09.6f}".encode()


_TEXT: dict[int, Encoder] = {
    16: lambda v: b"t" if v else b"f",
    17: lambda v: b"\\x" + bytes(v).hex().encode(),
    700: _text_float, 701: _text_float,
    1082: lambda v: v.isoformat().encode(),
    1114: _text_timestamp, 1184: _text_timestamp,
    1186: _text_interval,
    114: _text_nested,
}

_EPOCH_DATE = dt.date(2000, 1, 1)
_EPOCH = dt.datetime(2000, 1, 1)
_EPOCH_TZ = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


def _micros(value: dt.datetime) -> bytes:
    delta = value - (_EPOCH_TZ if value.tzinfo is not None else _EPOCH)
    return struct.pack("!q", (delta.days * 86400 + delta.seconds) * 1_000_000
                       + delta.microseconds)


def _binary_numeric(value: decimal.Decimal) -> bytes:
    """PostgreSQL's binary numeric: base-10000 digits, weight, sign, display scale."""
    sign_, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):  # NaN
        return struct.pack("!hhhh", 0, 0, 0xC000, 0)
    scale = max(0, -exponent)
    text = "".join(map(str, digits)) or "0"
    if exponent < 0:
        text = text.zfill(1 - exponent)  # 0.01: digits "1" -> "001", one integer digit
    integer = text[:len(text) + exponent] if exponent < 0 else text + "0" * exponent
    fraction = text[len(text) + exponent:] if exponent < 0 else ""
    integer = integer.lstrip("0")
    integer = "0" * (-len(integer) % 4) + integer
    fraction = fraction + "0" * (-len(fraction) % 4)
    groups = [int(integer[i:i + 4]) for i in range(0, len(integer), 4)]
    weight = len(groups) - 1
    groups += [int(fraction[i:i + 4]) for i in range(0, len(fraction), 4)]
    while groups and groups[-1] == 0:
        groups.pop()
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    if not groups:
        weight = 0
    header = struct.pack("!hhHh", len(groups), weight, 0x4000 if sign_ else 0, scale)
    return header + b"".join(struct.pack("!h", g) for g in groups)


_BINARY: dict[int, Encoder] = {
    16: lambda v: b"\x01" if v else b"\x00",
    17: bytes,
    20: struct.Struct("!q").pack, 21: struct.Struct("!h").pack, 23: struct.Struct("!i").pack,
    26: struct.Struct("!I").pack,
    700: struct.Struct("!f").pack, 701: struct.Struct("!d").pack,
    1082: lambda v: struct.pack("!i", (v - _EPOCH_DATE).days),
    1114: _micros, 1184: _micros,
    1700: _binary_numeric,
}


def binary_supported(oid: int) -> bool:
    """True when values of type ``oid`` can be sent in binary (text types always can)."""
    return oid in _BINARY or oid in (25, 1043, 1042, 19, 114)


def encode_column(column: pa.Array | pa.ChunkedArray, oid: int,
                  fmt: int) -> list[bytes | None]:
    """One result column's values on the wire, in text (0) or binary (1) format."""
    if fmt == BINARY_FORMAT and oid in _BINARY:
        encode = _BINARY[oid]
        return [None if v is None else encode(v) for v in column.to_pylist()]
    if oid in (20, 21, 23, 26, 25, 1043, 1042, 19, 1700):
        # Arrow's own cast to strings is many times faster than Python's str() per value.
        try:
            strings = pc.cast(column, pa.string()) if not pa.types.is_string(column.type) \
                else column
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            strings = None
        if strings is not None:
            return [None if v is None else v.encode() for v in strings.to_pylist()]
    encode = _TEXT.get(oid, lambda v: str(v).encode())
    return [None if v is None else encode(v) for v in column.to_pylist()]


# ---------------------------------------------------------------------- values in

def parameter_literal(value: bytes | None, oid: int, fmt: int) -> str:
    """A bound ``$n`` value as a Spark SQL literal.

    Raises:
        ValueError: a binary value of a type the server cannot read.
    """
    if value is None:
        return "NULL"
    if fmt == BINARY_FORMAT:
        decoded = _decode_binary(value, oid)
        if isinstance(decoded, bool):
            return "TRUE" if decoded else "FALSE"
        if isinstance(decoded, (int, float)):
            return repr(decoded)
        if isinstance(decoded, bytes):
            return f"X'{decoded.hex()}'"
        return sql_string(str(decoded))
    text = value.decode("utf-8")
    if oid in (20, 21, 23, 26) and _is_integer(text):
        return text.strip()
    if oid in (700, 701, 1700):
        try:
            decimal.Decimal(text)
        except decimal.InvalidOperation:
            return sql_string(text)
        return text.strip() if oid == 1700 else f"CAST({sql_string(text)} AS DOUBLE)"
    if oid == 16:
        return "TRUE" if text.strip().lower() in ("t", "true", "1", "on", "yes") else "FALSE"
    if oid == 17 and text.startswith("\\x"):
        return f"X'{text[2:]}'"
    if oid == 1082:
        return f"DATE {sql_string(text)}"
    if oid in (1114, 1184):
        return f"TIMESTAMP {sql_string(text)}"
    return sql_string(text)


def _is_integer(text: str) -> bool:
    stripped = text.strip().lstrip("+-")
    return stripped.isdigit()


def _decode_binary(value: bytes, oid: int) -> Any:
    formats = {20: "!q", 21: "!h", 23: "!i", 26: "!I", 700: "!f", 701: "!d"}
    if oid in formats:
        return struct.unpack(formats[oid], value)[0]
    if oid == 16:
        return value != b"\x00"
    if oid == 17:
        return value
    if oid in (0, 25, 1043, 1042, 19, 114):
        return value.decode("utf-8")
    if oid == 1082:
        return _EPOCH_DATE + dt.timedelta(days=struct.unpack("!i", value)[0])
    if oid in (1114, 1184):
        return _EPOCH + dt.timedelta(microseconds=struct.unpack("!q", value)[0])
    raise ValueError(f"binary parameters of type oid {oid} are not supported; send it as text")


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal: quotes doubled (which PostgreSQL reads too,
    so a bound statement can still be translated), backslashes escaped for Spark."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
