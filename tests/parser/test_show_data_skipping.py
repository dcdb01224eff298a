"""``CALL show_data_skipping``: its forms and errors (line, column, message)."""

from __future__ import annotations

import pytest

from hudisql.errors import SqlParseError
from hudisql.parser import ShowDataSkipping, TableName, parse_script

FORMS = [
    ("CALL show_data_skipping(table => 't', filter => \"rider = 'x'\")",
     ShowDataSkipping(TableName(("t",)), None, "rider = 'x'")),
    ("CALL show_data_skipping(path => '/data/t', filter => 'fare > 1')",
     ShowDataSkipping(None, "/data/t", "fare > 1")),
    ("CALL system.show_data_skipping('db.t', NULL, 'a = 1', '20240101120000123')",
     ShowDataSkipping(TableName(("db", "t")), None, "a = 1", "20240101120000123")),
]

ERRORS = [
    ("CALL show_data_skipping(table => 't')", 1, 6, "show_data_skipping needs filter"),
    ("CALL show_data_skipping(filter => 'a = 1')", 1, 6, "exactly one of table"),
    ("CALL show_data_skipping(table => 't', path => '/p', filter => 'a = 1')", 1, 6,
     "exactly one of table"),
    ("CALL show_data_skipping(table => 't', filter => 'a = ')", 1, 49,
     "filter 'a = ' is not a SQL predicate"),
    ("CALL show_data_skipping(table => 't', filter => 'SELECT 1')", 1, 49, "not a predicate"),
    ("CALL show_data_skipping(table => 't', filter => 'a = 1', as_of => 'soon')", 1, 67,
     "'soon' is not an instant time"),
]


@pytest.mark.parametrize(("sql", "command"), FORMS, ids=[f[0][:50] for f in FORMS])
def test_form(sql: str, command: ShowDataSkipping) -> None:
    (statement,) = parse_script(sql)
    assert statement.command == command


@pytest.mark.parametrize(("sql", "line", "column", "message"), ERRORS,
                         ids=[e[0][:60] for e in ERRORS])
def test_error(sql: str, line: int, column: int, message: str) -> None:
    with pytest.raises(SqlParseError) as caught:
        parse_script(sql)
    assert (caught.value.line, caught.value.column) == (line, column), str(caught.value)
    assert message in str(caught.value)
