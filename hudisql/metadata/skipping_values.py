"""Literals in a column's type, and whether a column's statistics admit a predicate.

A predicate's literal is converted to the column's Arrow type (from the table schema)
before it is compared with statistics; when that conversion is not exact (``1.5`` against
an integer column, a zone-less timestamp against a zoned column, a string against a
number) the predicate prunes nothing. Comparisons then happen in the form column stats
store values in (:func:`hudisql.metadata.records.stored_value`: dates as days, timestamps
as microseconds).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa

from hudisql.metadata.records import ColumnRange, stored_value, value_kind
from hudisql.metadata.skipping_model import Predicate

__all__ = ["INEXACT", "column_value", "comparable", "range_may_match"]


class _Inexact:
    """The marker of a literal that has no exact value in a column's type."""

    def __repr__(self) -> str:
        return "INEXACT"


#: :func:`column_value` of a literal that the column's type cannot hold exactly.
INEXACT: Any = _Inexact()

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?$")
#: Value kinds that compare with each other (see :func:`hudisql.metadata.records.value_kind`).
_FAMILY = {"int": "number", "long": "number", "float": "number", "double": "number",
           "decimal": "number", "string": "string", "date": "date",
           "timestamp": "timestamp", "bool": "bool"}


def _integral(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _int_value(value: Any, dtype: pa.DataType) -> Any:
    number = _integral(value)
    if number is None:
        return INEXACT
    try:
        pa.scalar(number, dtype)
    except (pa.ArrowInvalid, OverflowError):
        return INEXACT
    return number


def _float_value(value: Any) -> Any:
    # Spark compares a float column with a number literal as doubles.
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return INEXACT
    number = float(value)
    if math.isnan(number) or (isinstance(value, int) and int(number) != value):
        return INEXACT
    return number


def _decimal_value(value: Any, dtype: pa.Decimal128Type) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        return INEXACT
    number = Decimal(value)
    try:
        fitted = number.quantize(Decimal(1).scaleb(-dtype.scale))
    except InvalidOperation:
        return INEXACT
    if fitted != number or len(fitted.as_tuple().digits) > dtype.precision:
        return INEXACT
    return fitted


def _date_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return INEXACT
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and _DATE.match(value):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return INEXACT
    return INEXACT


def _timestamp_value(value: Any, dtype: pa.TimestampType, time_zone: str | None) -> Any:
    if isinstance(value, str) and _TIMESTAMP.match(value):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            return INEXACT
    if not isinstance(value, dt.datetime):
        return INEXACT
    zoned_column = dtype.tz is not None
    if zoned_column and value.tzinfo is None and time_zone is not None:
        # Spark reads a zone-less literal against a zoned column in the session's zone.
        try:
            value = value.replace(tzinfo=ZoneInfo(time_zone))
        except (ZoneInfoNotFoundError, ValueError):
            return INEXACT
    zoned_literal = value.tzinfo is not None
    # Without the session's zone a zone-less literal against a zoned column is not
    # decided here, nor a zoned literal against a zone-less column.
    return value if zoned_column == zoned_literal else INEXACT


def column_value(value: Any, dtype: pa.DataType, time_zone: str | None = None) -> Any:
    """``value`` (a predicate literal) as a value of Arrow type ``dtype``, or :data:`INEXACT`.

    ``time_zone``: the session's zone (an IANA name), in which a zone-less timestamp
    literal against a zoned timestamp column is read, as Spark reads it.
    """
    if value is None:
        return INEXACT
    kind = value_kind(dtype)
    if kind in ("int", "long"):
        return _int_value(value, dtype)
    if kind in ("float", "double"):
        return _float_value(value)
    if kind == "decimal":
        assert isinstance(dtype, pa.Decimal128Type | pa.Decimal256Type)
        return _decimal_value(value, dtype)
    if kind == "string":
        return value if isinstance(value, str) else INEXACT
    if kind == "bool":
        return value if isinstance(value, bool) else INEXACT
    if kind == "date":
        return _date_value(value)
    if kind == "timestamp":
        assert isinstance(dtype, pa.TimestampType)
        return _timestamp_value(value, dtype, time_zone)
    return INEXACT


def comparable(predicate: Predicate, dtype: pa.DataType, time_zone: str | None = None
               ) -> Predicate | None:
    """``predicate`` with its literals in the stored form of ``dtype``'s statistics (kind
    :func:`value_kind`), or None when a literal has no exact value in the column's type."""
    kind = value_kind(dtype)
    if kind is None or kind not in _FAMILY:
        return None
    if predicate.op in ("is_null", "is_not_null"):
        return predicate
    if predicate.op == "starts_with" and kind != "string":
        return None
    values = []
    for value in predicate.values:
        converted = column_value(value, dtype, time_zone)
        if converted is INEXACT:
            return None
        values.append(stored_value(kind, converted))
    if not values:
        return None
    return Predicate(predicate.column, predicate.op, tuple(values))


def _family_of(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float | Decimal):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _is_nan(value: Any) -> bool:
    return (isinstance(value, float) and math.isnan(value)) or (
        isinstance(value, Decimal) and value.is_nan())


def range_may_match(predicate: Predicate, stats: ColumnRange, column_kind: str) -> bool:
    """Whether a file (or partition) with statistics ``stats`` may hold a row matching
    ``predicate`` (its values from :func:`comparable` for a column of ``column_kind``).

    False only when the statistics rule every row out; any doubt (other value kinds after a
    type change, NaN bounds, missing bounds) keeps the file.
    """
    present = stats.value_count - stats.null_count
    if predicate.op == "is_null":
        # Bounds without counts: the counts are unknown, not zero.
        return stats.null_count > 0 or (stats.value_count <= 0 and stats.min_value is not None)
    if predicate.op == "is_not_null":
        return present > 0 or stats.min_value is not None
    lo, hi = stats.min_value, stats.max_value
    if lo is None or hi is None:
        return present > 0  # values without bounds may match; only nulls (or none) cannot
    family = _FAMILY.get(stats.kind)
    if family is None or family != _FAMILY.get(column_kind):
        return True
    if family in ("date", "timestamp"):
        family = "number"  # days and microseconds: integers
    if any(_family_of(v) != family for v in (lo, hi, *predicate.values)):
        return True
    if _is_nan(lo) or _is_nan(hi):
        return True
    return _bounds_admit(predicate, lo, hi, float_column=column_kind in ("float", "double"))


def _bounds_admit(predicate: Predicate, lo: Any, hi: Any, *, float_column: bool) -> bool:
    op, values = predicate.op, predicate.values
    if op in ("=", "in"):
        return any(lo <= v <= hi for v in values)
    if op == "<":
        return bool(lo < values[0])
    if op == "<=":
        return bool(lo <= values[0])
    if op in (">", ">="):
        # Spark orders NaN above every number, and statistics leave NaN out.
        if float_column:
            return True
        return bool(hi > values[0]) if op == ">" else bool(hi >= values[0])
    if op == "starts_with":
        prefix = values[0]
        return bool(hi >= prefix and (lo < prefix or lo.startswith(prefix)))
    return True
