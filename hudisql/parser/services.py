"""Table service statements: log compaction (ours), compaction (Hudi's), clean (Hudi's CALL).

Forms::

    SCHEDULE LOG COMPACTION ON <table>
    RUN LOG COMPACTION ON <table> [AT <instant>]
    SHOW LOG COMPACTION ON <table> [LIMIT n]
    (RUN | SCHEDULE) COMPACTION ON (<table> | '<path>') [AT <instant>]
    SHOW COMPACTION ON (<table> | '<path>') [LIMIT n]
    CALL run_compaction(op => 'schedule' | 'execute' | 'run' | 'scheduleAndExecute',
                        table => '...' | path => '...', timestamp => <instant>)
    CALL show_compaction(table => | path =>, limit => n)
    CALL run_log_compaction(op => ..., table => | path =>, timestamp => <instant>)
    CALL show_log_compaction(table => | path =>, limit => n)
    CALL run_clean(table => | path =>, options => 'k=v,k=v')
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from sqlglot.tokenizer_core import Token, TokenType

from hudisql.parser.commands import Command, TableName

if t.TYPE_CHECKING:
    from hudisql.parser.parser import HudiParser
    from hudisql.parser.procedures import Argument

__all__ = ["ShowTableService", "TableService"]

Service = t.Literal["compaction", "log_compaction", "clean"]
Operation = t.Literal["schedule", "execute", "run"]


@dataclass(frozen=True)
class TableService(Command):
    """Schedule and/or execute a table service on a table (by name) or a path.

    ``operation``: ``schedule`` (plan only), ``execute`` (run the plan at ``instant``, or
    the pending ones), ``run`` (``instant``'s plan, else schedule one and execute it).
    """

    service: Service
    operation: Operation
    table: TableName | None = None
    path: str | None = None
    instant: str | None = None
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ShowTableService(Command):
    """SHOW (LOG) COMPACTION: the service's instants, newest first."""

    service: Service
    table: TableName | None = None
    path: str | None = None
    limit: int = 20


def _form(service: Service, show: bool = False) -> str:
    words = "LOG COMPACTION" if service == "log_compaction" else "COMPACTION"
    target = "<table>" if service == "log_compaction" else "(<table> | '<path>')"
    if show:
        return f"SHOW {words} ON {target} [LIMIT n]"
    return f"(RUN | SCHEDULE) {words} ON {target} [AT <instant>]"


def _target(p: HudiParser, service: Service, form: str) -> tuple[TableName | None, str | None]:
    p.expect_words("ON", what=form)
    if p._curr and p._curr.token_type in (TokenType.STRING, TokenType.RAW_STRING):
        if service == "log_compaction":
            raise p.error(f"log compaction takes a table name, not a path; the form is {form}")
        return None, p.parse_string("the table path")
    return p.parse_table_name(f"the table ({form})"), None


def _instant(p: HudiParser, token: Token | None, text: str) -> str:
    if not (text.isdigit() and len(text) in (14, 17)):
        raise p.error(
            f"{text!r} is not an instant time; give its 14 or 17 digits (yyyyMMddHHmmss[SSS]) "
            "as SHOW TIMELINE lists them", token)
    return text


def _service_statement(service: Service, operation: Operation) -> t.Callable[
        [HudiParser], Command]:
    form = _form(service)

    def parse(p: HudiParser) -> Command:
        table, path = _target(p, service, form)
        instant = None
        if p.match_words("AT"):
            if operation == "schedule":
                raise p.error(f"SCHEDULE plans a new instant: AT is for RUN; the form is {form}")
            token = p._curr
            if token is None or token.token_type not in (TokenType.NUMBER, TokenType.STRING):
                raise p.error(f"AT needs an instant time; the form is {form}")
            p._advance()
            instant = _instant(p, token, token.text)
        p.expect_end(form)
        return TableService(service, operation, table, path, instant)

    return parse


def _show_statement(service: Service) -> t.Callable[[HudiParser], Command]:
    form = _form(service, show=True)

    def parse(p: HudiParser) -> Command:
        table, path = _target(p, service, form)
        limit = p.parse_count("LIMIT") if p.match_words("LIMIT") else 20
        p.expect_end(form)
        return ShowTableService(service, table, path, limit)

    return parse


#: The statement table entries (merged into ``parser.statements.STATEMENTS``).
SERVICE_STATEMENTS: dict[tuple[str, ...], t.Callable[[HudiParser], Command]] = {
    ("SCHEDULE", "LOG", "COMPACTION"): _service_statement("log_compaction", "schedule"),
    ("RUN", "LOG", "COMPACTION"): _service_statement("log_compaction", "run"),
    ("SHOW", "LOG", "COMPACTION"): _show_statement("log_compaction"),
    ("SCHEDULE", "COMPACTION"): _service_statement("compaction", "schedule"),
    ("RUN", "COMPACTION"): _service_statement("compaction", "run"),
    ("SHOW", "COMPACTION"): _show_statement("compaction"),
}

_OPS: dict[str, Operation] = {"schedule": "schedule", "execute": "execute", "run": "run",
                              "scheduleandexecute": "run"}


def _table_or_path(p: HudiParser, args: dict[str, Argument], at: Token, name: str) -> tuple[
        TableName | None, str | None]:
    from hudisql.parser.procedures import _table

    table, path = args["table"], args["path"]
    if (table.value is None) == (path.value is None):
        raise p.error(f"{name} needs exactly one of table => '...' or path => '...'", at)
    return (_table(p, table) if table.value is not None else None,
            t.cast("str | None", path.value))


def build_run(service: Service) -> t.Callable[[HudiParser, dict[str, Argument], Token], Command]:
    """The CALL run_compaction / run_log_compaction builder."""
    name = f"run_{service}"

    def build(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
        op_arg = args["op"]
        operation = _OPS.get(str(op_arg.value).lower())
        if operation is None:
            raise p.error(
                f"op {op_arg.value!r} is not one of 'schedule', 'execute', 'run' "
                "(or 'scheduleAndExecute')", op_arg.token)
        table, path = _table_or_path(p, args, at, name)
        if service == "log_compaction" and path is not None:
            raise p.error(f"{name} takes table => '...', not a path", at)
        stamp = args["timestamp"]
        instant = None
        if stamp.value is not None:
            instant = _instant(p, stamp.token, str(stamp.value))
            if operation == "schedule":
                raise p.error("op => 'schedule' plans a new instant: timestamp is for "
                              "'execute' or 'run'", stamp.token)
        return TableService(service, operation, table, path, instant)

    return build


def build_show(service: Service) -> t.Callable[[HudiParser, dict[str, Argument], Token], Command]:
    """The CALL show_compaction / show_log_compaction builder."""
    def build(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
        from hudisql.parser.procedures import _limit

        table, path = _table_or_path(p, args, at, f"show_{service}")
        return ShowTableService(service, table, path, _limit(p, args["limit"]))

    return build


def build_clean(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    """The CALL run_clean builder: ``options => 'hoodie.cleaner.commits.retained=2,...'``."""
    table, path = _table_or_path(p, args, at, "run_clean")
    options: dict[str, str] = {}
    raw = args["options"]
    for item in str(raw.value or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise p.error(f"options must be 'key=value,key=value', not {raw.value!r}", raw.token)
        options[key.strip()] = value.strip()
    return TableService("clean", "run", table, path, None, options)
