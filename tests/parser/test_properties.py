"""Properties over generated scripts: only SqlParseError escapes, and texts are exact slices."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hudisql.errors import SqlParseError
from hudisql.parser import parse_script

# Fragments that start hudisql statements, continue them, or break them.
FRAGMENTS = [
    "SHOW TIMELINE", "ON", "LIMIT", "CALL", "show_commits", "show_timeline", "rollback_to_instant",
    "(", ")", ",", "=>", "=", "CREATE TABLE", "USING hudi", "USING parquet", "TBLPROPERTIES",
    "PARTITIONED BY", "LOCATION", "AS", "SELECT", "INSERT INTO", "INSERT OVERWRITE", "VALUES",
    "UPDATE", "SET", "WHERE", "DELETE FROM", "MERGE INTO", "WHEN", "MATCHED", "NOT", "THEN",
    "DELETE", "INSERT", "*", "DROP TABLE", "IF EXISTS", "ALTER TABLE", "ADD COLUMNS",
    "RENAME TO", "WITH", "t", "db.t", "`q t`", "id", "INT", "STRING", "1", "-1", "2.5", "'x'",
    "'a;b'", "'mor'", "'id'", "'20240101120000123'", "true", "NULL", "-- c\n", "/* c; */",
    ";", "\n", "+", ">", "CASE", "END", "AND", "BY", "SOURCE", "TARGET", "PURGE", "'",
    "`", "/*", "X'1F'", "{#",
]


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=24))
def test_parse_script_fails_only_with_sql_parse_error(fragments: list[str]) -> None:
    script = " ".join(fragments)
    try:
        statements = parse_script(script)
    except SqlParseError as error:
        assert error.line is not None and error.column is not None
        assert 1 <= error.line <= script.count("\n") + 1
        return
    for s in statements:
        assert s.text and s.text == script[s.start : s.end] and s.text == s.text.strip()
        # A statement re-parsed alone is the same one statement with the same command.
        (again,) = parse_script(s.text)
        assert (again.text, again.command) == (s.text, s.command)
