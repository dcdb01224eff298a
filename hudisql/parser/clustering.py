"""Clustering statements: hudisql's SQL and Hudi's ``run_clustering`` / ``show_clustering``.

Forms::

    (RUN | SCHEDULE) CLUSTERING ON (<table> | '<path>') [ORDER BY a, b]
        [USING (LINEAR | ZORDER | HILBERT)]
    SHOW CLUSTERING ON (<table> | '<path>') [LIMIT n]
    CALL run_clustering(table => | path =>, predicate => '<partition predicate>',
                        order => 'a,b', order_strategy => 'linear' | 'z-order' | 'hilbert',
                        op => 'schedule' | 'execute' | 'scheduleAndExecute',
                        instants => '<ts>,<ts>', selected_partitions => 'p1,p2',
                        options => 'k=v,k=v', show_involved_partition => true)
    CALL show_clustering(table => | path =>, limit => n, show_involved_partition => true)
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from sqlglot.tokenizer_core import Token, TokenType

from hudisql.parser.commands import Command, TableName

if t.TYPE_CHECKING:
    from hudisql.parser.parser import HudiParser
    from hudisql.parser.procedures import Argument, Procedure

__all__ = ["CLUSTERING_STATEMENTS", "RunClustering", "ShowClustering", "clustering_procedures"]

Operation = t.Literal["schedule", "execute", "run"]
#: ``USING`` words and ``order_strategy`` values, as Hudi's layout strategy names.
LAYOUTS = {"LINEAR": "linear", "ZORDER": "z-order", "Z-ORDER": "z-order", "HILBERT": "hilbert"}
_OPS: dict[str, Operation] = {"schedule": "schedule", "execute": "execute", "run": "run",
                              "scheduleandexecute": "run"}


@dataclass(frozen=True)
class RunClustering(Command):
    """Schedule and/or execute a clustering of a table (by name) or a path.

    ``operation``: ``schedule`` (plan only), ``execute`` (run the plans at ``instants``, or
    every pending one), ``run`` (finish runs that died, then plan one and run it).
    ``order`` and ``layout`` (Hudi's name) override the table's sort settings;
    ``predicate`` selects partitions (on partition columns).
    """

    operation: Operation
    table: TableName | None = None
    path: str | None = None
    order: tuple[str, ...] = ()
    layout: str | None = None
    predicate: str | None = None
    instants: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    #: False: ``involved_partitions`` shows ``*`` (Hudi's ``show_involved_partition``).
    show_partitions: bool = True


@dataclass(frozen=True)
class ShowClustering(Command):
    """SHOW CLUSTERING / CALL show_clustering: the clustering instants, newest first."""

    table: TableName | None = None
    path: str | None = None
    limit: int = 20
    show_partitions: bool = True


_RUN_FORM = ("{verb} CLUSTERING ON (<table> | '<path>') [ORDER BY a, b] "
             "[USING LINEAR | ZORDER | HILBERT]")
_SHOW_FORM = "SHOW CLUSTERING ON (<table> | '<path>') [LIMIT n]"


def _target(p: HudiParser, form: str) -> tuple[TableName | None, str | None]:
    p.expect_words("ON", what=form)
    if p._curr and p._curr.token_type in (TokenType.STRING, TokenType.RAW_STRING):
        return None, p.parse_string("the table path")
    return p.parse_table_name(f"the table ({form})"), None


def _run_statement(operation: Operation) -> t.Callable[[HudiParser], Command]:
    form = _RUN_FORM.format(verb="RUN" if operation == "run" else "SCHEDULE")

    def parse(p: HudiParser) -> Command:
        table, path = _target(p, form)
        order: list[str] = []
        if p.match_words("ORDER", "BY"):
            order.append(p.parse_identifier(f"a sort column ({form})"))
            while p._match(TokenType.COMMA):
                order.append(p.parse_identifier(f"a sort column ({form})"))
        layout = None
        if p.match_words("USING"):
            token = p._curr
            word = "" if token is None else token.text.upper()
            if word not in LAYOUTS:
                raise p.error(f"USING takes LINEAR, ZORDER or HILBERT (the layout strategy), "
                              f"not {p.describe_current()}; the form is {form}", token)
            p._advance()
            layout = LAYOUTS[word]
        p.expect_end(form)
        return RunClustering(operation, table, path, tuple(order), layout)

    return parse


def _show_statement(p: HudiParser) -> Command:
    table, path = _target(p, _SHOW_FORM)
    limit = p.parse_count("LIMIT") if p.match_words("LIMIT") else 20
    p.expect_end(_SHOW_FORM)
    return ShowClustering(table, path, limit)


#: The statement table entries (merged into ``parser.statements.STATEMENTS``).
CLUSTERING_STATEMENTS: dict[tuple[str, ...], t.Callable[[HudiParser], Command]] = {
    ("RUN", "CLUSTERING"): _run_statement("run"),
    ("SCHEDULE", "CLUSTERING"): _run_statement("schedule"),
    ("SHOW", "CLUSTERING"): _show_statement,
}


def _names(raw: object) -> tuple[str, ...]:
    return tuple(n.strip() for n in str(raw or "").split(",") if n.strip())


def _options(p: HudiParser, arg: Argument) -> dict[str, str]:
    options: dict[str, str] = {}
    for item in str(arg.value or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise p.error(f"options must be 'key=value,key=value', not {arg.value!r}", arg.token)
        options[key.strip()] = value.strip()
    return options


def _build_run(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    from hudisql.parser.services import _instant, _table_or_path

    op_arg = args["op"]
    operation = _OPS.get(str(op_arg.value).lower())
    if operation is None:
        raise p.error(f"op {op_arg.value!r} is not one of 'schedule', 'execute' or "
                      "'scheduleAndExecute'", op_arg.token)
    table, path = _table_or_path(p, args, at, "run_clustering")
    layout = None
    strategy = args["order_strategy"]
    if strategy.value is not None:
        layout = LAYOUTS.get(str(strategy.value).strip().upper())
        if layout is None:
            raise p.error(f"order_strategy {strategy.value!r} is not 'linear', 'z-order' or "
                          "'hilbert'", strategy.token)
    instants = tuple(_instant(p, args["instants"].token, n) for n in _names(args["instants"].value))
    if instants and operation == "schedule":
        raise p.error("op => 'schedule' plans a new instant: instants are for 'execute'",
                      args["instants"].token)
    if operation == "execute":
        for name in ("order", "order_strategy", "predicate", "selected_partitions"):
            if args[name].value is not None:
                raise p.error(f"{name} shapes a new plan: op => 'execute' runs the pending "
                              "plans as they were planned; use 'scheduleAndExecute'",
                              args[name].token)
    options = _options(p, args["options"])
    selected = _names(args["selected_partitions"].value)
    if selected:
        options["hoodie.clustering.plan.partition.filter.mode"] = "SELECTED_PARTITIONS"
        options["hoodie.clustering.plan.strategy.partition.selected"] = ",".join(selected)
    predicate = args["predicate"].value
    return RunClustering(operation, table, path, _names(args["order"].value), layout,
                         None if predicate is None else str(predicate), instants, options,
                         bool(args["show_involved_partition"].value))


def _build_show(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    from hudisql.parser.procedures import _limit
    from hudisql.parser.services import _table_or_path

    table, path = _table_or_path(p, args, at, "show_clustering")
    return ShowClustering(table, path, _limit(p, args["limit"]),
                          bool(args["show_involved_partition"].value))


def clustering_procedures() -> list[Procedure]:
    """``run_clustering`` and ``show_clustering``, with Hudi's parameter names and order."""
    from hudisql.parser.procedures import Parameter, Procedure

    target = (Parameter("table", str), Parameter("path", str))
    return [
        Procedure("run_clustering", (
            *target, Parameter("predicate", str), Parameter("order", str),
            Parameter("show_involved_partition", bool, default=True),
            Parameter("op", str, default="scheduleAndExecute"),
            Parameter("order_strategy", str), Parameter("options", str),
            Parameter("instants", str), Parameter("selected_partitions", str),
        ), _build_run),
        Procedure("show_clustering", (
            *target, Parameter("limit", int, default=20),
            Parameter("show_involved_partition", bool, default=True),
        ), _build_show),
    ]
