"""Expression index functions: Arrow gives Spark's answer, value for value, and bad
definitions are refused with a message saying what to use."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from hudisql.errors import MetadataTableError
from hudisql.metadata.expressions import IndexExpression, java_format_to_strftime

UTC = dt.UTC
ROWS = pa.table({
    "s": pa.array(["  Hello World ", "ÄBc", None, "", "x", "2024-03-05", "xxabcxx"]),
    "secs": pa.array([0, 1_700_000_000, None, -86_401, 951_782_400, 4_102_444_799, 59],
                     pa.int64()),
    "d": pa.array([dt.date(2024, 2, 29), dt.date(1969, 12, 31), None, dt.date(2000, 1, 1),
                   dt.date(1999, 12, 31), dt.date(2024, 12, 31), dt.date(1970, 1, 1)]),
    "t": pa.array([dt.datetime(2024, 2, 29, 23, 59, 59, 999_999, tzinfo=UTC),
                   dt.datetime(1969, 12, 31, 23, 0, 0, 500_000, tzinfo=UTC), None,
                   dt.datetime(2000, 1, 1, 0, 0, tzinfo=UTC),
                   dt.datetime(1999, 12, 31, 12, 30, 5, tzinfo=UTC),
                   dt.datetime(2024, 7, 4, 8, 1, 2, tzinfo=UTC),
                   dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)], pa.timestamp("us", "UTC")),
})

# (function, options, column, the Spark SQL expression it must equal)
CASES = [
    ("identity", {}, "s", "s"),
    ("lower", {}, "s", "lower(s)"),
    ("upper", {}, "s", "upper(s)"),
    ("trim", {}, "s", "trim(s)"),
    ("ltrim", {}, "s", "ltrim(s)"),
    ("rtrim", {}, "s", "rtrim(s)"),
    ("trim", {"trimString": "x"}, "s", "trim(BOTH 'x' FROM s)"),
    ("length", {}, "s", "length(s)"),
    ("substring", {"pos": "2", "len": "3"}, "s", "substring(s, 2, 3)"),
    ("substring", {"pos": "0", "len": "2"}, "s", "substring(s, 0, 2)"),
    ("substring", {"pos": "-3", "len": "2"}, "s", "substring(s, -3, 2)"),
    ("substring", {"pos": "1", "len": "0"}, "s", "substring(s, 1, 0)"),
    ("from_unixtime", {}, "secs", "from_unixtime(secs)"),
    ("from_unixtime", {"format": "yyyy-MM-dd"}, "secs", "from_unixtime(secs, 'yyyy-MM-dd')"),
    ("from_unixtime", {"format": "yyyy/MM/dd'T'HH"}, "secs",
     "from_unixtime(secs, 'yyyy/MM/dd\\'T\\'HH')"),
    ("date_format", {"format": "yyyyMMdd HH:mm:ss"}, "t", "date_format(t, 'yyyyMMdd HH:mm:ss')"),
    ("date_format", {"format": "yy-MM"}, "d", "date_format(d, 'yy-MM')"),
    ("year", {}, "t", "year(t)"),
    ("month", {}, "d", "month(d)"),
    ("day", {}, "t", "day(t)"),
    ("hour", {}, "t", "hour(t)"),
    ("to_date", {}, "t", "to_date(t)"),
    ("to_date", {}, "d", "to_date(d)"),
    ("date_add", {"days": "3"}, "d", "date_add(d, 3)"),
    ("date_sub", {"days": "40"}, "t", "date_sub(t, 40)"),
    ("unix_timestamp", {}, "t", "unix_timestamp(t)"),
    ("unix_timestamp", {}, "d", "unix_timestamp(d)"),
]


@pytest.mark.parametrize(("function", "options", "column", "sql"), CASES,
                         ids=[f"{c[0]}:{c[3]}" for c in CASES])
def test_arrow_computes_what_spark_computes(spark: SparkSession, function: str,
                                            options: dict[str, str], column: str,
                                            sql: str) -> None:
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    values = ROWS.column(column).to_pylist()
    schema = {"s": "s string", "secs": "secs bigint", "d": "d date", "t": "t timestamp"}[column]
    spark_values = [r[0] for r in spark.createDataFrame([(v,) for v in values], schema)
                    .selectExpr(sql).collect()]
    expression = IndexExpression.of(function, options)
    expression.check_input(column, ROWS.schema.field(column).type)
    ours = expression.apply(ROWS.column(column)).to_pylist()
    assert ours == spark_values


@pytest.mark.parametrize(("function", "options", "message"), [
    ("nope", {}, "hudisql does not build expression indexes on nope"),
    ("regexp_replace", {"pattern": "a", "replacement": "b"}, "Java regular expressions"),
    ("lower", {"format": "yyyy"}, "expression lower does not take option(s) format"),
    ("substring", {"pos": "1"}, "expression substring needs option(s) len"),
    ("substring", {"pos": "x", "len": "1"}, "option pos='x' is not an integer"),
    ("from_unixtime", {"format": "yyyy-MMM"}, "pattern 'MMM' is not one hudisql computes"),
    ("date_format", {"format": "yyyy'T"}, "unclosed quote"),
])
def test_bad_expressions_are_refused(function: str, options: dict[str, str],
                                     message: str) -> None:
    with pytest.raises(MetadataTableError, match=message.replace("(", r"\(").replace(
            ")", r"\)")):
        IndexExpression.of(function, options)


def test_a_column_the_function_does_not_take_is_refused() -> None:
    with pytest.raises(MetadataTableError, match="lower does not apply to column ts of type int64"):
        IndexExpression.of("lower", {}).check_input("ts", pa.int64())
    with pytest.raises(MetadataTableError, match="to_date does not apply to column s of type"):
        IndexExpression.of("to_date", {}).check_input("s", pa.string())


def test_java_patterns_become_strftime_formats() -> None:
    assert java_format_to_strftime("yyyy-MM-dd HH:mm:ss") == "%Y-%m-%d %H:%M:%S"
    assert java_format_to_strftime("yyyy'T'HH''%") == "%YT%H'%%"
