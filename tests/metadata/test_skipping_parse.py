"""Predicate text to index-usable conjuncts, and literals against column statistics."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from hudisql.errors import HudiSqlError, SqlParseError
from hudisql.metadata.records import ColumnRange
from hudisql.metadata.skipping import Predicate, parse_predicates
from hudisql.metadata.skipping_values import INEXACT, column_value, comparable, range_may_match

P = Predicate


@pytest.mark.parametrize(("text", "expected"), [
    ("a = 1", [P("a", "=", (1,))]),
    ("1 = a", [P("a", "=", (1,))]),
    ("a <=> 'x'", [P("a", "=", ("x",))]),
    ("5 < a", [P("a", ">", (5,))]),
    ("5 <= a AND a < 9", [P("a", ">=", (5,)), P("a", "<", (9,))]),
    ("a > -2.5", [P("a", ">", (Decimal("-2.5"),))]),
    ("a >= 1e3", [P("a", ">=", (1000.0,))]),
    ("a = 1L", [P("a", "=", (1,))]),
    ("a BETWEEN 1 AND 3", [P("a", ">=", (1,)), P("a", "<=", (3,))]),
    ("`rider name` IN ('x', 'y', NULL, 'x')", [P("rider name", "in", ("x", "y"))]),
    ("a IS NULL AND b IS NOT NULL", [P("a", "is_null"), P("b", "is_not_null")]),
    ("a LIKE 'ab%'", [P("a", "starts_with", ("ab",))]),
    ("a LIKE 'ab'", [P("a", "=", ("ab",))]),
    ("startswith(a, 'ab')", [P("a", "starts_with", ("ab",))]),
    ("d = DATE '2024-01-05'", [P("d", "=", (dt.date(2024, 1, 5),))]),
    ("t < TIMESTAMP '2024-01-05 10:00:00'", [P("t", "<", (dt.datetime(2024, 1, 5, 10),))]),
    ("flag = true", [P("flag", "=", (True,))]),
    ("(a = 1 AND (b = 2 AND (c = 3)))", [P("a", "=", (1,)), P("b", "=", (2,)),
                                         P("c", "=", (3,))]),
    # Conjuncts that prune nothing are left out; the rest stays.
    ("a = 1 AND (b = 2 OR c = 3)", [P("a", "=", (1,))]),
    ("NOT a = 1 AND b = 2", [P("b", "=", (2,))]),
    ("a = b AND lower(c) = 'x' AND t.a = 1 AND s.f.g = 1", []),
    ("a LIKE 'a_c%' AND a LIKE '%x' AND a ILIKE 'x%'", []),
    ("a = NULL AND a IN (SELECT 1) AND a IN (NULL)", []),
    ("a", []),
])
def test_parse_predicates(text: str, expected: list[Predicate]) -> None:
    assert parse_predicates(text) == expected


@pytest.mark.parametrize(("text", "where"), [
    ("a = ", (1, 3)),
    ("a = 1 AND AND b = 2", (1, 13)),
    ("SELECT * FROM t", (1, 1)),
    ("a = 1; DROP TABLE t", (1, 1)),
])
def test_bad_predicates_name_text_and_position(text: str, where: tuple[int, int]) -> None:
    with pytest.raises(SqlParseError) as info:
        parse_predicates(text)
    assert repr(text) in str(info.value)
    assert (info.value.line, info.value.column) == where
    assert "predicate" in str(info.value)


@pytest.mark.parametrize("text", ["", "   ", "a = 'open"])
def test_empty_or_untokenizable_text_is_refused(text: str) -> None:
    with pytest.raises(HudiSqlError, match="filter"):
        parse_predicates(text)


@pytest.mark.parametrize(("value", "dtype", "expected"), [
    (5, pa.int32(), 5),
    (Decimal("5.0"), pa.int64(), 5),
    (1000.0, pa.int64(), 1000),
    (Decimal("1.5"), pa.int64(), INEXACT),
    (1 << 40, pa.int32(), INEXACT),
    ("5", pa.int64(), INEXACT),
    (True, pa.int64(), INEXACT),
    (3, pa.float64(), 3.0),
    (Decimal("0.1"), pa.float64(), 0.1),
    ((1 << 60) + 1, pa.float64(), INEXACT),
    (Decimal("1.50"), pa.decimal128(5, 2), Decimal("1.50")),
    (Decimal("1.505"), pa.decimal128(5, 2), INEXACT),
    (1.5, pa.decimal128(5, 2), INEXACT),
    ("x", pa.string(), "x"),
    (1, pa.string(), INEXACT),
    ("2024-01-05", pa.date32(), dt.date(2024, 1, 5)),
    ("2024-1-5", pa.date32(), INEXACT),
    (dt.datetime(2024, 1, 5), pa.date32(), INEXACT),
    (dt.datetime(2024, 1, 5, 1), pa.timestamp("us"), dt.datetime(2024, 1, 5, 1)),
    ("2024-01-05 01:00:00", pa.timestamp("us"), dt.datetime(2024, 1, 5, 1)),
    (dt.datetime(2024, 1, 5, 1), pa.timestamp("us", "UTC"), INEXACT),  # session zone
    (dt.datetime(2024, 1, 5, tzinfo=dt.UTC), pa.timestamp("us", "UTC"),
     dt.datetime(2024, 1, 5, tzinfo=dt.UTC)),
    (True, pa.bool_(), True),
    (b"x", pa.binary(), INEXACT),
])
def test_literals_convert_only_when_exact(value: Any, dtype: pa.DataType, expected: Any) -> None:
    assert column_value(value, dtype) == expected or (
        expected is INEXACT and column_value(value, dtype) is INEXACT)


def _range(kind: str, lo: Any, hi: Any, nulls: int = 0, count: int = 10) -> ColumnRange:
    return ColumnRange("c", kind, lo, hi, nulls, count)


@pytest.mark.parametrize(("predicate", "dtype", "stats", "may"), [
    (P("c", "=", (5,)), pa.int64(), _range("long", 1, 4), False),
    (P("c", "=", (4,)), pa.int64(), _range("long", 1, 4), True),
    (P("c", "<", (1,)), pa.int64(), _range("long", 1, 4), False),
    (P("c", "<=", (1,)), pa.int64(), _range("long", 1, 4), True),
    (P("c", ">", (4,)), pa.int64(), _range("long", 1, 4), False),
    (P("c", ">=", (4,)), pa.int64(), _range("long", 1, 4), True),
    (P("c", "in", (0, 9)), pa.int64(), _range("long", 1, 4), False),
    (P("c", "in", (0, 3)), pa.int64(), _range("long", 1, 4), True),
    (P("c", ">", (9.0,)), pa.float64(), _range("double", 1.0, 4.0), True),  # NaN
    (P("c", "<", (0.5,)), pa.float64(), _range("double", 1.0, 4.0), False),
    (P("c", "=", (2,)), pa.float64(), _range("double", float("nan"), 4.0), True),
    (P("c", "=", (2,)), pa.int64(), _range("string", "a", "b"), True),  # type changed
    (P("c", "=", (2,)), pa.int32(), _range("int", None, None, 10, 10), False),  # all null
    (P("c", "is_null"), pa.int32(), _range("int", 1, 2, 0, 10), False),
    (P("c", "is_null"), pa.int32(), _range("int", 1, 2, 1, 10), True),
    (P("c", "is_not_null"), pa.int32(), _range("int", None, None, 10, 10), False),
    (P("c", "starts_with", ("ab",)), pa.string(), _range("string", "abz", "b"), True),
    (P("c", "starts_with", ("ab",)), pa.string(), _range("string", "aa", "ab"), True),
    (P("c", "starts_with", ("ab",)), pa.string(), _range("string", "aa", "aaz"), False),
    (P("c", "starts_with", ("ab",)), pa.string(), _range("string", "ac", "b"), False),
    (P("c", "=", (dt.date(2024, 1, 5),)), pa.date32(),
     _range("date", dt.date(2024, 1, 1), dt.date(2024, 1, 4)), False),
    (P("c", "=", (Decimal("1.50"),)), pa.decimal128(5, 2),
     _range("decimal", Decimal("1.00"), Decimal("1.49")), False),
])
def test_statistics_admit_a_predicate(predicate: Predicate, dtype: pa.DataType,
                                      stats: ColumnRange, may: bool) -> None:
    usable = comparable(predicate, dtype)
    assert usable is not None
    kind = {"int64": "long", "int32": "int", "double": "double", "string": "string",
            "date32[day]": "date", "decimal128(5, 2)": "decimal"}[str(dtype)]
    assert range_may_match(usable, stats, kind) is may
