"""Table service statements and procedures: one line per grammar form, per error."""

from __future__ import annotations

import pytest

from hudisql.errors import SqlParseError
from hudisql.parser import Command, ShowTableService, TableName, TableService, parse_script

TS = "20240101000000000"
LC, CO = "log_compaction", "compaction"


def T(*parts: str) -> TableName:
    return TableName(parts)


S, SH = TableService, ShowTableService

# fmt: off
FORMS: list[tuple[str, Command]] = [
    ("SCHEDULE LOG COMPACTION ON t", S(LC, "schedule", T("t"))),
    ("RUN LOG COMPACTION ON db.t", S(LC, "run", T("db", "t"))),
    (f"run log compaction on t at {TS}", S(LC, "run", T("t"), instant=TS)),
    (f"RUN LOG COMPACTION ON t AT '{TS}'", S(LC, "run", T("t"), instant=TS)),
    ("SHOW LOG COMPACTION ON t", SH(LC, T("t"))),
    ("SHOW LOG COMPACTION ON t LIMIT 3", SH(LC, T("t"), limit=3)),
    ("SCHEDULE COMPACTION ON t", S(CO, "schedule", T("t"))),
    ("RUN COMPACTION ON `my db`.t", S(CO, "run", T("my db", "t"))),
    (f"RUN COMPACTION ON '/data/t' AT {TS}", S(CO, "run", path="/data/t", instant=TS)),
    ("SHOW COMPACTION ON '/data/t' LIMIT 0", SH(CO, path="/data/t", limit=0)),
    ("CALL run_compaction(op => 'schedule', table => 't')", S(CO, "schedule", T("t"))),
    ("CALL run_compaction(op => 'execute', path => '/p')", S(CO, "execute", path="/p")),
    (f"CALL run_compaction('run', 't', NULL, {TS})", S(CO, "run", T("t"), instant=TS)),
    ("CALL run_compaction(op => 'scheduleAndExecute', table => 't')", S(CO, "run", T("t"))),
    ("CALL run_log_compaction(table => 't')", S(LC, "run", T("t"))),
    ("CALL show_compaction(table => 't', limit => 5)", SH(CO, T("t"), limit=5)),
    ("CALL system.show_log_compaction(table => 'db.t')", SH(LC, T("db", "t"))),
    ("CALL run_clean(table => 't')", S("clean", "run", T("t"))),
    ("CALL run_clean(path => '/p', options => 'hoodie.cleaner.commits.retained=2, a=b')",
     S("clean", "run", path="/p", options={"hoodie.cleaner.commits.retained": "2", "a": "b"})),
]
# fmt: on


@pytest.mark.parametrize(("sql", "command"), FORMS, ids=[f[0][:60] for f in FORMS])
def test_grammar_form(sql: str, command: Command) -> None:
    (statement,) = parse_script(sql)
    assert statement.command == command
    assert statement.text == sql


# fmt: off
ERRORS: list[tuple[str, int, int, str]] = [
    ("RUN LOG COMPACTION t", 1, 20, "expected ON here, found 't'"),
    ("RUN LOG COMPACTION ON '/p'", 1, 23, "log compaction takes a table name, not a path"),
    (f"SCHEDULE LOG COMPACTION ON t AT {TS}", 1, 33, "AT is for RUN"),
    ("RUN LOG COMPACTION ON t AT 12", 1, 28, "'12' is not an instant time"),
    ("RUN LOG COMPACTION ON t AT", 1, 27, "AT needs an instant time"),
    ("RUN COMPACTION ON t LIMIT 3", 1, 21, "unexpected 'LIMIT'"),
    ("SHOW COMPACTION ON t LIMIT -1", 1, 28, "found '-1'"),
    ("SHOW LOG COMPACTION t", 1, 21, "expected ON here"),
    ("CALL run_compaction(op => 'compact', table => 't')", 1, 27, "op 'compact' is not one of"),
    ("CALL run_compaction(op => 'run')", 1, 6, "exactly one of table => '...' or path => '...'"),
    (f"CALL run_compaction(op => 'schedule', table => 't', timestamp => {TS})", 1, 66,
     "timestamp is for 'execute' or 'run'"),
    ("CALL run_log_compaction(path => '/p')", 1, 6, "takes table => '...', not a path"),
    ("CALL run_clean(table => 't', options => 'retained')", 1, 41, "options must be 'key=value"),
]
# fmt: on


@pytest.mark.parametrize(("sql", "line", "column", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_error(sql: str, line: int, column: int, message: str) -> None:
    with pytest.raises(SqlParseError) as caught:
        parse_script(sql)
    assert (caught.value.line, caught.value.column) == (line, column), str(caught.value)
    assert message in str(caught.value)
