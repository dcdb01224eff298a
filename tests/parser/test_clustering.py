"""The clustering statements and procedures: one line per form, one per error."""

from __future__ import annotations

import pytest

from hudisql.errors import SqlParseError
from hudisql.parser import parse_script
from hudisql.parser.clustering import RunClustering, ShowClustering
from hudisql.parser.commands import Command, TableName

T = TableName(("t",))
SEL = {"hoodie.clustering.plan.partition.filter.mode": "SELECTED_PARTITIONS",
       "hoodie.clustering.plan.strategy.partition.selected": "city=sf,city=la"}

FORMS: list[tuple[str, Command]] = [
    ("RUN CLUSTERING ON t", RunClustering("run", T)),
    ("RUN CLUSTERING ON db.t ORDER BY a, b USING ZORDER",
     RunClustering("run", TableName(("db", "t")), order=("a", "b"), layout="z-order")),
    ("run clustering on t order by a using hilbert",
     RunClustering("run", T, order=("a",), layout="hilbert")),
    ("RUN CLUSTERING ON '/data/t' ORDER BY `my col` USING LINEAR",
     RunClustering("run", None, "/data/t", order=("my col",), layout="linear")),
    ("SCHEDULE CLUSTERING ON t ORDER BY a", RunClustering("schedule", T, order=("a",))),
    ("SHOW CLUSTERING ON t", ShowClustering(T)),
    ("SHOW CLUSTERING ON '/data/t' LIMIT 3", ShowClustering(None, "/data/t", 3)),
    ("CALL run_clustering(table => 't')", RunClustering("run", T)),
    ("CALL run_clustering(table => 't', order => 'a, b', order_strategy => 'z-order', "
     "predicate => \"city = 'sf'\", op => 'scheduleAndExecute')",
     RunClustering("run", T, order=("a", "b"), layout="z-order", predicate="city = 'sf'")),
    ("CALL run_clustering(path => '/p', op => 'schedule', selected_partitions => "
     "'city=sf,city=la', options => 'hoodie.clustering.plan.strategy.max.num.groups=2')",
     RunClustering("schedule", None, "/p", options={
         "hoodie.clustering.plan.strategy.max.num.groups": "2", **SEL})),
    ("CALL run_clustering(table => 't', op => 'execute', instants => "
     "'20240101000000000,20240102000000000')",
     RunClustering("execute", T, instants=("20240101000000000", "20240102000000000"))),
    ("CALL show_clustering(table => 't', limit => 5)", ShowClustering(T, None, 5)),
]


@pytest.mark.parametrize("sql, command", FORMS)
def test_form(sql: str, command: Command) -> None:
    [statement] = parse_script(sql)
    assert statement.command == command


ERRORS: list[tuple[str, int, int, str]] = [
    ("RUN CLUSTERING t", 1, 16, "expected ON here"),
    ("RUN CLUSTERING ON t USING SPIRAL", 1, 27, "USING takes LINEAR, ZORDER or HILBERT"),
    ("RUN CLUSTERING ON t ORDER a", 1, 21, "unexpected 'ORDER'"),
    ("RUN CLUSTERING ON t ORDER BY", 1, 29, "expected a sort column"),
    ("SHOW CLUSTERING ON t LIMIT x", 1, 28, "LIMIT"),
    ("CALL run_clustering(op => 'run')", 1, 6, "run_clustering needs exactly one of table"),
    ("CALL run_clustering(table => 't', op => 'go')", 1, 41, "op 'go' is not one of"),
    ("CALL run_clustering(table => 't', order_strategy => 'spiral')", 1, 53,
     "order_strategy 'spiral' is not 'linear', 'z-order' or 'hilbert'"),
    ("CALL run_clustering(table => 't', op => 'execute', order => 'a')", 1, 61,
     "order shapes a new plan"),
    ("CALL run_clustering(table => 't', op => 'schedule', instants => '20240101000000000')",
     1, 65, "instants are for 'execute'"),
    ("CALL run_clustering(table => 't', instants => 'x')", 1, 47, "'x' is not an instant time"),
    ("CALL run_clustering(table => 't', options => 'novalue')", 1, 46, "options must be"),
    ("CALL run_clustering(table => 't', limit => 3)", 1, 35, "has no parameter 'limit'"),
]


@pytest.mark.parametrize("sql, line, column, message", ERRORS)
def test_error(sql: str, line: int, column: int, message: str) -> None:
    with pytest.raises(SqlParseError) as info:
        parse_script(sql)
    assert (info.value.line, info.value.column) == (line, column)
    assert message in str(info.value)
