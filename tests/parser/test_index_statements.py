"""CREATE / DROP / SHOW / REFRESH INDEX and the indexing procedures: one line per grammar form
and per error (line, column, message)."""

from __future__ import annotations

import pytest

from hudisql.errors import SqlParseError
from hudisql.parser import (
    Command,
    CreateIndex,
    DropIndex,
    IndexColumn,
    RefreshIndex,
    RunIndexer,
    ShowIndexes,
    ShowMetadataTable,
    TableName,
    ValidateMetadataTable,
    parse_script,
)
from hudisql.parser.index import index_spec_problem


def T(*parts: str) -> TableName:
    return TableName(parts)


CI, IC = CreateIndex, IndexColumn

# fmt: off
FORMS: list[tuple[str, Command]] = [
    # CREATE INDEX: record index / secondary index (no USING)
    ("CREATE INDEX record_index ON t (uuid)", CI("record_index", T("t"), (IC("uuid"),))),
    ("create index idx_rider on table db.trips (rider)",
     CI("idx_rider", T("db", "trips"), (IC("rider"),))),
    ("CREATE INDEX IF NOT EXISTS idx ON t (`a b`)",
     CI("idx", T("t"), (IC("a b"),), if_not_exists=True)),
    ("CREATE INDEX record_index ON t (k1, k2)",
     CI("record_index", T("t"), (IC("k1"), IC("k2")))),
    ("CREATE INDEX idx ON t (s.x)", CI("idx", T("t"), (IC("s.x"),))),
    # expression indexes (USING)
    ("CREATE INDEX idx_ts ON t USING column_stats (ts) OPTIONS (expr = 'from_unixtime', "
     "format = 'yyyy-MM-dd')",
     CI("idx_ts", T("t"), (IC("ts"),), "column_stats",
        {"expr": "from_unixtime", "format": "yyyy-MM-dd"})),
    ("CREATE INDEX idx ON t USING BLOOM_FILTERS (city OPTIONS (expr='lower'))",
     CI("idx", T("t"), (IC("city", {"expr": "lower"}),), "bloom_filters")),
    ("CREATE INDEX idx ON t USING bloom_filters (city) OPTIONS (numentries 1000, fpp 0.01)",
     CI("idx", T("t"), (IC("city"),), "bloom_filters", {"numentries": "1000", "fpp": "0.01"})),
    # beyond Hudi: identity column stats over plain columns
    ("CREATE INDEX stats ON t USING column_stats (fare, ts)",
     CI("stats", T("t"), (IC("fare"), IC("ts")), "column_stats")),
    ("CREATE INDEX idx ON t (rider) OPTIONS ('hoodie.metadata.record.index.enable' = 'true')",
     CI("idx", T("t"), (IC("rider"),), options={"hoodie.metadata.record.index.enable": "true"})),
    # DROP / SHOW / REFRESH
    ("DROP INDEX idx ON t", DropIndex("idx", T("t"))),
    ("DROP INDEX IF EXISTS record_index ON TABLE db.t",
     DropIndex("record_index", T("db", "t"), True)),
    ("SHOW INDEXES FROM t", ShowIndexes(T("t"))),
    ("show indexes in table db.t", ShowIndexes(T("db", "t"))),
    ("REFRESH INDEX idx ON t", RefreshIndex("idx", T("t"))),
    ("REFRESH INDEX idx ON TABLE db.t", RefreshIndex("idx", T("db", "t"))),
    # procedures
    ("CALL run_indexer(table => 't', mode => 'scheduleAndExecute', index_types => "
     "'column_stats, RECORD_INDEX')",
     RunIndexer(T("t"), "scheduleandexecute", ("COLUMN_STATS", "RECORD_INDEX"))),
    ("CALL run_indexer(table => 't', mode => 'SCHEDULE', index_types => 'BLOOM_FILTERS')",
     RunIndexer(T("t"), "schedule", ("BLOOM_FILTERS",))),
    ("CALL run_indexer(table => 't', mode => 'execute')", RunIndexer(T("t"), "execute")),
    ("CALL run_indexer('t', 'execute', NULL, '20240101120000123')",
     RunIndexer(T("t"), "execute", (), "20240101120000123")),
    ("CALL system.run_indexer(table => 't', mode => 'dropindex', "
     "index_types => 'secondary_index_idx')",
     RunIndexer(T("t"), "dropindex", ("secondary_index_idx",))),
    ("CALL show_metadata_table_partitions(table => 't')",
     ShowMetadataTable(T("t"), "partitions")),
    ("CALL show_metadata_table_files(table => 't', partition => 'city=sf')",
     ShowMetadataTable(T("t"), "files", "city=sf")),
    ("CALL show_metadata_table_column_stats(table => 't', targetColumns => 'fare, ts')",
     ShowMetadataTable(T("t"), "column_stats", columns=("fare", "ts"))),
    ("CALL validate_metadata_table(table => 'db.t')", ValidateMetadataTable(T("db", "t"))),
]

ERRORS: list[tuple[str, int, int, str]] = [
    ("CREATE INDEX idx ON t USING btree (a)", 1, 29, "index idx on table t: unknown index type 'btree' after USING"),  # noqa: E501
    ("CREATE INDEX idx ON t (a, b, A)", 1, 30, "column A is listed twice in index idx"),
    ("CREATE INDEX idx ON t USING column_stats (a) OPTIONS (expr = 'sqrt')", 1, 62, "unknown expression function 'sqrt'"),  # noqa: E501
    ("CREATE INDEX idx ON t (a) OPTIONS (expr = 'year')", 1, 43, "option expr makes an expression index: add USING column_stats"),  # noqa: E501
    ("CREATE INDEX idx ON t (a) OPTIONS (colour = 'red')", 1, 45, "unknown index option 'colour'"),
    ("CREATE INDEX idx ON t USING bloom_filters (a, b) OPTIONS (expr = 'lower')", 1, 1,
     "covers exactly one column"),
    ("CREATE INDEX idx ON t USING column_stats (a, b) OPTIONS (expr = 'year')", 1, 1, "covers exactly one column"),  # noqa: E501
    ("CREATE INDEX idx ON t USING column_stats (a OPTIONS (expr='year')) OPTIONS (expr='month')", 1, 82, "option expr is 'month' and 'year'"),  # noqa: E501
    ("CREATE INDEX idx ON t (a) OPTIONS (fpp = 1, FPP = 2)", 1, 51, "option FPP is given twice"),
    ("CREATE INDEX idx ON t", 1, 22, "expected ( to open the indexed columns"),
    ("CREATE INDEX idx ON t ()", 1, 24, "expected a column name to index"),
    ("CREATE INDEX idx ON t (a", 1, 25, "expected ) to close the indexed columns"),
    ("CREATE INDEX idx t (a)", 1, 18, "expected ON here, found 't'"),
    ("CREATE INDEX ON t (a)", 1, 14, "expected the index name"),
    ("CREATE INDEX idx ON t (a) extra", 1, 27, "unexpected 'extra' in CREATE INDEX"),
    ("CREATE INDEX idx ON t USING (a)", 1, 29, "expected an index type after USING"),
    ("DROP INDEX idx", 1, 15, "expected ON here"),
    ("DROP INDEX idx ON t CASCADE", 1, 21, "unexpected 'CASCADE' in DROP INDEX"),
    ("SHOW INDEXES t", 1, 14, "expected FROM or IN, found 't'"),
    ("SHOW INDEXES FROM", 1, 18, "expected the table name"),
    ("REFRESH INDEX idx ON", 1, 21, "expected the table name"),
    ("CALL run_indexer(table => 't', mode => 'build', index_types => 'FILES')", 1, 40, "run_indexer mode 'build' is unknown"),  # noqa: E501
    ("CALL run_indexer(table => 't', mode => 'schedule', index_types => 'HASH')", 1, 67, "index type 'HASH' is unknown"),  # noqa: E501
    ("CALL run_indexer(table => 't', mode => 'schedule', index_types => 'FILES,files')", 1, 67, "given twice"),  # noqa: E501
    ("CALL run_indexer(table => 't', mode => 'schedule')", 1, 6, "run_indexer in mode schedule needs index_types"),  # noqa: E501
    ("CALL run_indexer(table => 't')", 1, 6, "run_indexer needs mode"),
    ("CALL run_indexer(table => 't', mode => 'execute', instant_time => 'x')", 1, 67, "'x' is not an instant time"),  # noqa: E501
    ("CALL validate_metadata_table()", 1, 6, "validate_metadata_table needs table"),
    ("CALL show_metadata_table_files(table => 't', partition => 3)", 1, 59, "partition must be a quoted string"),  # noqa: E501
]
# fmt: on


@pytest.mark.parametrize(("sql", "command"), FORMS, ids=[f[0][:60] for f in FORMS])
def test_grammar_form(sql: str, command: Command) -> None:
    (statement,) = parse_script(sql)
    assert statement.command == command
    assert statement.text == sql


@pytest.mark.parametrize(("sql", "line", "column", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_error(sql: str, line: int, column: int, message: str) -> None:
    with pytest.raises(SqlParseError) as caught:
        parse_script(sql)
    error = caught.value
    assert (error.line, error.column) == (line, column), str(error)
    assert message in str(error)


def test_errors_point_into_a_script() -> None:
    with pytest.raises(SqlParseError) as caught:
        parse_script("SELECT 1;\nCREATE INDEX i ON t USING hash (a)")
    assert (caught.value.line, caught.value.column) == (2, 27)


def test_the_python_api_checks_definitions_the_same_way() -> None:
    assert index_spec_problem(None, ["a"], {}) is None
    assert index_spec_problem("column_stats", ["a", "b"], {}) is None
    problem = index_spec_problem("hash", ["a"], {})
    assert problem is not None and "unknown index type 'hash'" in problem[0]
    assert index_spec_problem(None, [], {}) == ("an index needs at least one column", None)
