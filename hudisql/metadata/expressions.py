"""The functions of expression indexes, computed in Arrow exactly as Spark computes them.

An expression index (``CREATE INDEX idx ON t USING column_stats (ts)
OPTIONS (expr = 'from_unixtime', format = 'yyyy-MM-dd')``) indexes a function of one column.
Apache Hudi applies the function with Spark (``ExpressionIndexSparkFunctions``); hudisql
keeps its indexes below Spark (every commit updates them, in pure Python too), so it
computes the same function in Arrow. Only the functions (and input types) for which Arrow
gives Spark's answer value for value are built; the others of Hudi's list are refused with a
clear error (:data:`UNSUPPORTED_FUNCTIONS`).

Time zone: Spark evaluates time functions in the session time zone; these functions
compute in UTC (the zone of the sessions hudisql starts) whatever a session's zone is.

Formats (option ``format``) are Spark's (Java ``DateTimeFormatter``) patterns made of
``yyyy yy MM dd HH mm ss``, quoted text (``'T'``) and punctuation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import MetadataTableError

__all__ = [
    "SUPPORTED_FUNCTIONS",
    "UNSUPPORTED_FUNCTIONS",
    "IndexExpression",
    "java_format_to_strftime",
]

#: Options every expression accepts (Hudi's ``expr``; bloom filter and hudisql's own keys).
_COMMON_OPTIONS = frozenset({"expr", "filtertype", "numentries", "fpp", "maxentries"})
_UTC = "UTC"
_DEFAULT_TIME_FORMAT = "yyyy-MM-dd HH:mm:ss"

_STRING = "string"
_DATE = "date"
_TIMESTAMP = "timestamp"
_INTEGER = "integer"


def _kind(dtype: pa.DataType) -> str | None:
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return _STRING
    if pa.types.is_date(dtype):
        return _DATE
    if pa.types.is_timestamp(dtype):
        return _TIMESTAMP
    if pa.types.is_integer(dtype):
        return _INTEGER
    return None


# ------------------------------------------------------------------------------ formats

_LETTERS = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M",
            "ss": "%S"}
_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|[^A-Za-z']")


def java_format_to_strftime(pattern: str) -> str:
    """A Spark datetime pattern as an Arrow ``strftime``/``strptime`` format.

    Raises:
        MetadataTableError: a pattern letter run hudisql does not compute exactly.
    """
    out = []
    pos = 0
    for match in _TOKEN.finditer(pattern):
        if match.start() != pos:
            break
        pos = match.end()
        token = match.group(0)
        if token.startswith("'"):
            text = token[1:-1].replace("''", "'") if len(token) > 2 else "'"
            out.append(text.replace("%", "%%"))
        elif token[0].isalpha():
            if token not in _LETTERS:
                raise MetadataTableError(
                    f"format {pattern!r}: pattern {token!r} is not one hudisql computes; use "
                    f"{', '.join(_LETTERS)}, punctuation and quoted text")
            out.append(_LETTERS[token])
        else:
            out.append(token.replace("%", "%%"))
    if pos != len(pattern):
        raise MetadataTableError(f"format {pattern!r} has an unclosed quote")
    return "".join(out)


# ------------------------------------------------------------------------------ helpers


def _plain(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    return values


def _utc_seconds(values: pa.Array) -> pa.Array:
    """Dates and timestamps as UTC timestamps of whole seconds (floor), as Spark formats them."""
    if pa.types.is_date(values.type):
        return values.cast(pa.date32()).cast(pa.timestamp("s")).cast(pa.timestamp("s", _UTC))
    ts = values if values.type.tz is not None else pc.assume_timezone(values, _UTC)
    floored = pc.floor_temporal(ts, unit="second")
    return floored.cast(pa.timestamp("s", _UTC))


def _to_date(values: pa.Array) -> pa.Array:
    if pa.types.is_date(values.type):
        return values.cast(pa.date32())
    floored = pc.floor_temporal(_utc_seconds(values), unit="day")
    return floored.cast(pa.timestamp("s")).cast(pa.date32())


def _int(options: Mapping[str, str], name: str, function: str) -> int:
    raw = options.get(name)
    if raw is None:
        raise MetadataTableError(f"expression {function} needs option {name} (an integer)")
    try:
        return int(raw)
    except ValueError:
        raise MetadataTableError(
            f"expression {function}: option {name}={raw!r} is not an integer") from None


def _substring(values: pa.Array, pos: int, length: int) -> pa.Array:
    """Spark's ``substring(col, pos, len)``: 1-based ``pos`` (0 as 1, negative from the end)."""
    if length <= 0:
        return pc.if_else(pc.is_null(values), pa.scalar(None, pa.string()), "")
    if pos >= 0:
        start = max(pos - 1, 0)
        return pc.utf8_slice_codeunits(values, start=start, stop=start + length)

    def one(text: str | None) -> str | None:
        if text is None:
            return None
        start = len(text) + pos
        end = start + length
        start = max(start, 0)
        return text[start:end] if start < end else ""

    return pa.array([one(v) for v in values.to_pylist()], pa.string())


# ---------------------------------------------------------------------------- functions


@dataclass(frozen=True)
class _Function:
    """One expression: the input kinds it takes, its options, and how Arrow computes it."""

    inputs: frozenset[str]
    options: frozenset[str]
    compute: Callable[[pa.Array, Mapping[str, str]], pa.Array]
    required: frozenset[str] = field(default=frozenset())


def _fmt(options: Mapping[str, str]) -> str:
    return java_format_to_strftime(options.get("format", _DEFAULT_TIME_FORMAT))


def _from_unixtime(v: pa.Array, o: Mapping[str, str]) -> pa.Array:
    return pc.strftime(v.cast(pa.int64()).cast(pa.timestamp("s", _UTC)), format=_fmt(o))


def _unix_timestamp(v: pa.Array, o: Mapping[str, str]) -> pa.Array:
    """Seconds since the epoch; of a timestamp, its microseconds divided as Java divides
    (toward zero: 1969-12-31 23:00:00.5 is -3599, as in Spark)."""
    if pa.types.is_date(v.type):
        return _utc_seconds(v).cast(pa.int64())
    micros = v.cast(pa.timestamp("us", v.type.tz)).cast(pa.int64())
    return pc.divide(micros, pa.scalar(1_000_000, pa.int64()))


def _shift_days(sign: int) -> Callable[[pa.Array, Mapping[str, str]], pa.Array]:
    def run(v: pa.Array, o: Mapping[str, str]) -> pa.Array:
        days = _to_date(v).cast(pa.int32())
        shifted = pc.add(days, pa.scalar(sign * _int(o, "days", "date_add"), pa.int32()))
        return shifted.cast(pa.date32())
    return run


def _part(fn: Callable[[pa.Array], pa.Array]) -> Callable[[pa.Array, Mapping[str, str]],
                                                            pa.Array]:
    def run(v: pa.Array, o: Mapping[str, str]) -> pa.Array:
        source = v if pa.types.is_date(v.type) else _utc_seconds(v)
        return fn(source).cast(pa.int32())
    return run


def _trim(fn: Callable[..., pa.Array]) -> Callable[[pa.Array, Mapping[str, str]], pa.Array]:
    def run(v: pa.Array, o: Mapping[str, str]) -> pa.Array:
        return fn(v, characters=o.get("trimstring", " "))  # Spark trims spaces only
    return run


_TIME_INPUTS = frozenset({_DATE, _TIMESTAMP})
_FUNCTIONS: dict[str, _Function] = {
    "identity": _Function(frozenset({_STRING, _DATE, _TIMESTAMP, _INTEGER, "other"}),
                          frozenset(), lambda v, o: v),
    "lower": _Function(frozenset({_STRING}), frozenset(), lambda v, o: pc.utf8_lower(v)),
    "upper": _Function(frozenset({_STRING}), frozenset(), lambda v, o: pc.utf8_upper(v)),
    "trim": _Function(frozenset({_STRING}), frozenset({"trimstring"}), _trim(pc.utf8_trim)),
    "ltrim": _Function(frozenset({_STRING}), frozenset({"trimstring"}), _trim(pc.utf8_ltrim)),
    "rtrim": _Function(frozenset({_STRING}), frozenset({"trimstring"}), _trim(pc.utf8_rtrim)),
    "length": _Function(frozenset({_STRING}), frozenset(),
                        lambda v, o: pc.utf8_length(v).cast(pa.int32())),
    "substring": _Function(frozenset({_STRING}), frozenset({"pos", "len"}),
                           lambda v, o: _substring(v, _int(o, "pos", "substring"),
                                                   _int(o, "len", "substring")),
                           frozenset({"pos", "len"})),
    "year": _Function(_TIME_INPUTS, frozenset(), _part(pc.year)),
    "month": _Function(_TIME_INPUTS, frozenset(), _part(pc.month)),
    "day": _Function(_TIME_INPUTS, frozenset(), _part(pc.day)),
    "hour": _Function(frozenset({_TIMESTAMP}), frozenset(), _part(pc.hour)),
    "date_format": _Function(_TIME_INPUTS, frozenset({"format"}),
                             lambda v, o: pc.strftime(_utc_seconds(v), format=_fmt(o)),
                             frozenset({"format"})),
    "from_unixtime": _Function(frozenset({_INTEGER}), frozenset({"format"}), _from_unixtime),
    # On dates and timestamps only: parsing strings, Spark fails a bad one (ANSI mode) or
    # reads it leniently, where Arrow's strptime is strict.
    "unix_timestamp": _Function(_TIME_INPUTS, frozenset(), _unix_timestamp),
    "to_date": _Function(_TIME_INPUTS, frozenset(), lambda v, o: _to_date(v)),
    "date_add": _Function(_TIME_INPUTS, frozenset({"days"}), _shift_days(1),
                          frozenset({"days"})),
    "date_sub": _Function(_TIME_INPUTS, frozenset({"days"}), _shift_days(-1),
                          frozenset({"days"})),
}

#: Expression functions hudisql builds indexes on.
SUPPORTED_FUNCTIONS: tuple[str, ...] = tuple(sorted(_FUNCTIONS))
#: Hudi's functions hudisql refuses: Java regular expressions, arrays, Spark's lenient
#: timestamp parsing have no exact Arrow counterpart.
UNSUPPORTED_FUNCTIONS: dict[str, str] = {
    "regexp_replace": "Java regular expressions differ from Arrow's (RE2)",
    "regexp_extract": "Java regular expressions differ from Arrow's (RE2)",
    "split": "it makes arrays, which column stats and bloom filters do not index",
    "to_timestamp": "Spark's lenient timestamp parsing has no exact Arrow counterpart",
}


@dataclass(frozen=True)
class IndexExpression:
    """The function of one expression index (``function`` with its ``options``)."""

    function: str
    options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, function: str, options: Mapping[str, str]) -> IndexExpression:
        """The expression, its options checked (names lower-cased).

        Raises:
            MetadataTableError: a function hudisql does not compute, an option the function
                does not take, a missing or malformed option.
        """
        name = function.lower()
        if name not in _FUNCTIONS:
            why = UNSUPPORTED_FUNCTIONS.get(name)
            reason = f" ({why})" if why else ""
            raise MetadataTableError(
                f"hudisql does not build expression indexes on {function}{reason}; it "
                f"builds {', '.join(SUPPORTED_FUNCTIONS)}")
        lowered = {k.lower(): v for k, v in options.items()
                   if not k.lower().startswith(("hoodie.", "hudisql."))}
        spec = _FUNCTIONS[name]
        extra = sorted(set(lowered) - spec.options - _COMMON_OPTIONS)
        if extra:
            allowed = ", ".join(sorted(spec.options)) or "none"
            raise MetadataTableError(
                f"expression {name} does not take option(s) {', '.join(extra)} (its options: "
                f"{allowed})")
        missing = sorted(spec.required - set(lowered))
        if missing:
            raise MetadataTableError(f"expression {name} needs option(s) {', '.join(missing)}")
        expression = cls(name, lowered)
        if "format" in lowered:
            java_format_to_strftime(lowered["format"])
        for number in ("pos", "len", "days"):
            if number in lowered:
                _int(lowered, number, name)
        return expression

    def check_input(self, column: str, dtype: pa.DataType) -> None:
        """Refuse a column type the function does not take (as Spark would, or inexactly).

        Raises:
            MetadataTableError: the column's type is not one the function computes on.
        """
        kind = _kind(dtype) or "other"
        accepted = _FUNCTIONS[self.function].inputs
        if kind not in accepted:
            raise MetadataTableError(
                f"expression {self.function} does not apply to column {column} of type "
                f"{dtype}; it takes {' or '.join(sorted(k for k in accepted if k != 'other'))} "
                "columns")

    def apply(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """The expression's value for each of ``values`` (nulls stay null)."""
        return _FUNCTIONS[self.function].compute(_plain(values), self.options)
