"""SHOW TIMELINE and Hudi's CALL procedures (``CALL show_commits(table => 't')``).

CALL parsing is generic: a procedure name, then positional and/or named (``name => value``)
literal arguments, bound against the procedure's parameter table in :data:`PROCEDURES`.
Adding a procedure is one :class:`Procedure` entry and, if new, one command class.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from hudisql.errors import SqlParseError
from hudisql.parser.commands import (
    Command,
    RollbackToInstant,
    RunIndexer,
    ShowCommits,
    ShowDataSkipping,
    ShowIndexes,
    ShowLogBlocks,
    ShowMetadataTable,
    ShowTimeline,
    TableName,
    ValidateMetadataTable,
)
from hudisql.parser.tokens import Unterminated

if t.TYPE_CHECKING:
    from hudisql.parser.parser import HudiParser

SHOW_TIMELINE_FORM = "SHOW TIMELINE [ON] <table | 'path'> [ARCHIVED] [LIMIT n]"
_TYPE_NAMES = {str: "a quoted string", int: "a whole number", bool: "true or false"}


def parse_show_timeline(p: HudiParser) -> ShowTimeline:
    """``SHOW TIMELINE [ON] <table | 'path'> [ARCHIVED] [LIMIT n]``."""
    p.match_words("ON")
    if not p._curr or p.peek_words("LIMIT"):
        raise p.error(
            f"SHOW TIMELINE needs a table name or a quoted path; the form is {SHOW_TIMELINE_FORM}"
        )
    table, path = None, None
    if p._curr.token_type in (TokenType.STRING, TokenType.RAW_STRING):
        path = p.parse_string("the table path")
    else:
        table = p.parse_table_name(f"a table name or a quoted path ({SHOW_TIMELINE_FORM})")
    archived = p.match_words("ARCHIVED")
    limit = p.parse_count("LIMIT") if p.match_words("LIMIT") else None
    p.expect_end(SHOW_TIMELINE_FORM)
    return ShowTimeline(table=table, path=path, limit=limit, archived=bool(archived))


@dataclass(frozen=True)
class Argument:
    """A literal CALL argument, the token of its value and of its name (None when absent)."""

    value: object
    token: Token | None
    name_token: Token | None = None


@dataclass(frozen=True)
class Parameter:
    """A procedure parameter: its name, Python type, and whether it must be given."""

    name: str
    kind: type
    required: bool = False
    default: object = None


@dataclass(frozen=True)
class Procedure:
    """A CALL procedure: its parameters in positional order and how to build its command."""

    name: str
    parameters: tuple[Parameter, ...]
    build: t.Callable[[HudiParser, dict[str, Argument], Token], Command]


def _table(p: HudiParser, arg: Argument) -> TableName:
    """Read a ``table => 'db.t'`` argument as a table name."""
    text = str(arg.value)
    try:
        tokens = p.dialect.tokenize(text)
        sub = type(p)(dialect=p.dialect)
        sub.sql, sub._tokens, sub._tokens_size, sub._index = text, tokens, len(tokens), -1
        sub._advance()
        name = sub.parse_table_name("a table name")
        sub.expect_end("a table name")
    except (SqlParseError, ParseError, TokenError, Unterminated):
        raise p.error(
            f"{text!r} is not a table name; write it as 'table' or 'db.table'", arg.token
        ) from None
    return name


def _limit(p: HudiParser, arg: Argument) -> int:
    value = t.cast(int, arg.value)
    if value < 0:
        raise p.error(f"limit must be a whole number of 0 or more, not {value}", arg.token)
    return value


def _build_show_timeline(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    table, path = args["table"], args["path"]
    if (table.value is None) == (path.value is None):
        raise p.error("show_timeline needs exactly one of table => '...' or path => '...'", at)
    return ShowTimeline(
        table=_table(p, table) if table.value is not None else None,
        path=t.cast("str | None", path.value),
        limit=_limit(p, args["limit"]),
        archived=bool(args["showArchived"].value),
    )


def _build_show_commits(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    return ShowCommits(_table(p, args["table"]), _limit(p, args["limit"]))


def _build_show_archived_commits(p: HudiParser, args: dict[str, Argument], at: Token) -> (
        Command):
    start, end = args["start_ts"], args["end_ts"]
    return ShowCommits(
        _table(p, args["table"]), _limit(p, args["limit"]), archived=True,
        start_ts=_instant_time(p, start, "start_ts") if start.value else None,
        end_ts=_instant_time(p, end, "end_ts") if end.value else None)


def _build_rollback(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    text = _instant_time(p, args["instant_time"], "instant_time")
    return RollbackToInstant(_table(p, args["table"]), text)


def _build_show_log_blocks(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    file_id = args["file_id"].value
    return ShowLogBlocks(_table(p, args["table"]), None if file_id is None else str(file_id))


def _service_procedures() -> list[Procedure]:
    from hudisql.parser.services import build_clean, build_run, build_show

    target = (Parameter("table", str), Parameter("path", str))
    return [
        *(Procedure(f"run_{s}", (Parameter("op", str, default="run"), *target,
                                  Parameter("timestamp", int)), build_run(s))
          for s in ("compaction", "log_compaction")),
        *(Procedure(f"show_{s}", (*target, Parameter("limit", int, default=20)), build_show(s))
          for s in ("compaction", "log_compaction")),
        Procedure("run_clean", (*target, Parameter("options", str)), build_clean),
    ]


def _clustering_procedures() -> list[Procedure]:
    from hudisql.parser.clustering import clustering_procedures

    return clustering_procedures()


def _upgrade_procedures() -> list[Procedure]:
    from hudisql.parser.upgrade import upgrade_procedures

    return upgrade_procedures()


#: run_indexer's modes, lower-cased as Hudi's HoodieIndexer matches them.
INDEXER_MODES = ("schedule", "execute", "scheduleandexecute", "dropindex")
#: Metadata partition types run_indexer builds (Hudi's ``MetadataPartitionType`` names).
INDEX_TYPE_NAMES = ("FILES", "COLUMN_STATS", "BLOOM_FILTERS", "RECORD_INDEX", "PARTITION_STATS")
_NAMED_PARTITION_PREFIXES = ("secondary_index_", "expr_index_")


def _instant_time(p: HudiParser, arg: Argument, what: str) -> str:
    text = str(arg.value)
    if not (text.isdigit() and len(text) in (14, 17)):
        raise p.error(
            f"{what} {text!r} is not an instant time; give its 14 or 17 digits "
            "(yyyyMMddHHmmss[SSS]) as SHOW TIMELINE lists them",
            arg.token,
        )
    return text


def _build_run_indexer(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    mode_arg, types_arg = args["mode"], args["index_types"]
    mode = str(mode_arg.value).strip().lower()
    if mode not in INDEXER_MODES:
        raise p.error(
            f"run_indexer mode {mode_arg.value!r} is unknown; use 'schedule', 'execute', "
            "'scheduleAndExecute' or 'dropindex'", mode_arg.token)
    types: list[str] = []
    for item in str(types_arg.value or "").split(","):
        name = item.strip()
        if not name:
            continue
        if name.upper() in INDEX_TYPE_NAMES:
            types.append(name.upper())
        elif name.lower().startswith(_NAMED_PARTITION_PREFIXES):
            types.append(name.lower())
        else:
            raise p.error(
                f"index type {name!r} is unknown; use {', '.join(INDEX_TYPE_NAMES)} or a "
                "metadata partition named secondary_index_<name> / expr_index_<name>",
                types_arg.token)
    if len(set(types)) != len(types):
        raise p.error("an index type is given twice in index_types; give each once",
                      types_arg.token)
    if not types and mode != "execute":
        raise p.error(f"run_indexer in mode {mode} needs index_types => 'COLUMN_STATS,...'", at)
    instant = args["instant_time"]
    return RunIndexer(
        _table(p, args["table"]), mode, tuple(types),
        None if instant.value is None else _instant_time(p, instant, "instant_time"))


def _build_show_mdt(what: str) -> t.Callable[[HudiParser, dict[str, Argument], Token], Command]:
    def build(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
        partition = args.get("partition", Argument(None, None)).value
        columns = args.get("targetColumns", Argument(None, None)).value
        return ShowMetadataTable(
            _table(p, args["table"]), t.cast(t.Any, what),
            None if partition is None else str(partition),
            tuple(c.strip() for c in str(columns or "").split(",") if c.strip()))
    return build


def _build_show_indexes(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    return ShowIndexes(_table(p, args["table"]))


def _build_validate_mdt(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    return ValidateMetadataTable(_table(p, args["table"]))


def _build_show_data_skipping(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    from hudisql.parser.predicates import parse_predicates
    from hudisql.parser.services import _table_or_path

    table, path = _table_or_path(p, args, at, "show_data_skipping")
    arg = args["filter"]
    text = str(arg.value)
    try:
        parse_predicates(text)
    except SqlParseError as exc:
        raise p.error(f"filter => {exc}", arg.token) from None
    as_of = args["as_of"]
    return ShowDataSkipping(
        table, path, text,
        None if as_of.value is None else _instant_time(p, as_of, "as_of"))


PROCEDURES: dict[str, Procedure] = {
    proc.name: proc
    for proc in (
        Procedure(
            "show_timeline",
            (Parameter("table", str), Parameter("path", str), Parameter("limit", int, default=20),
             Parameter("showArchived", bool)),
            _build_show_timeline,
        ),
        Procedure(
            "show_commits",
            (Parameter("table", str, required=True), Parameter("limit", int, default=10)),
            _build_show_commits,
        ),
        Procedure(
            "show_archived_commits",
            (Parameter("table", str, required=True), Parameter("limit", int, default=10),
             Parameter("start_ts", str), Parameter("end_ts", str)),
            _build_show_archived_commits,
        ),
        Procedure(
            "show_log_blocks",
            (Parameter("table", str, required=True), Parameter("file_id", str)),
            _build_show_log_blocks,
        ),
        Procedure(
            "rollback_to_instant",
            (Parameter("table", str, required=True), Parameter("instant_time", str, True)),
            _build_rollback,
        ),
        *_service_procedures(),
        *_clustering_procedures(),
        *_upgrade_procedures(),
        Procedure(
            "run_indexer",
            (Parameter("table", str, required=True), Parameter("mode", str, required=True),
             Parameter("index_types", str), Parameter("instant_time", str)),
            _build_run_indexer,
        ),
        Procedure("show_metadata_table_partitions", (Parameter("table", str, True),),
                  _build_show_mdt("partitions")),
        Procedure("show_metadata_table_files",
                  (Parameter("table", str, True), Parameter("partition", str)),
                  _build_show_mdt("files")),
        Procedure("show_metadata_table_column_stats",
                  (Parameter("table", str, True), Parameter("partition", str),
                   Parameter("targetColumns", str)),
                  _build_show_mdt("column_stats")),
        Procedure("validate_metadata_table", (Parameter("table", str, True),),
                  _build_validate_mdt),
        Procedure("show_indexes", (Parameter("table", str, True),), _build_show_indexes),
        Procedure("show_data_skipping",
                  (Parameter("table", str), Parameter("path", str),
                   Parameter("filter", str, required=True), Parameter("as_of", str)),
                  _build_show_data_skipping),
    )
}


def parse_call(p: HudiParser) -> Command:
    """``CALL [system.]procedure(arg, ..., name => arg, ...)``.

    Raises:
        SqlParseError: unknown procedure (the error lists the known ones), unknown or
            repeated parameter, missing required argument, or a value of the wrong type.
    """
    name_token = p._curr
    parts = p.parse_dotted_name("a procedure name after CALL")
    # Hudi's docs write CALL system.<procedure>; 'system' has no meaning there.
    if len(parts) == 2 and parts[0].lower() == "system":
        parts = parts[1:]
    name = ".".join(parts).lower()
    procedure = PROCEDURES.get(name)
    if procedure is None:
        raise p.error(
            f"unknown procedure {'.'.join(parts)!r}; hudisql knows {', '.join(sorted(PROCEDURES))}",
            name_token,
        )
    given = parse_arguments(p, procedure)
    p.expect_end(f"CALL {procedure.name}(...)")
    return procedure.build(p, bind_arguments(p, procedure, given, name_token), name_token)


def parse_arguments(p: HudiParser, procedure: Procedure) -> list[tuple[str | None, Argument]]:
    """Consume ``( [name =>] literal, ... )`` and return the arguments in order."""
    p.expect_token(TokenType.L_PAREN, "(", f"after CALL {procedure.name}")
    given: list[tuple[str | None, Argument]] = []
    while p._curr and p._curr.token_type != TokenType.R_PAREN:
        name, name_token = None, None
        if p._next.token_type == TokenType.FARROW:
            name_token = p._curr
            name = p.parse_identifier("a parameter name")
            p._advance()
        start = p._curr
        given.append((name, Argument(parse_literal(p), start, name_token)))
        if not p._match(TokenType.COMMA):
            break
    p.expect_token(TokenType.R_PAREN, ")", f"to close the arguments of {procedure.name}")
    return given


def parse_literal(p: HudiParser) -> object:
    """Consume a literal argument: a string, a whole number (maybe negative), true, false."""
    token = p._curr
    negative = p._match(TokenType.DASH)
    if p._match(TokenType.NUMBER) and p._prev.text.isdigit():
        return -int(p._prev.text) if negative else int(p._prev.text)
    if not negative:
        if p._match_set((TokenType.STRING, TokenType.RAW_STRING)):
            return p._prev.text
        if p.match_words("TRUE") or p.match_words("FALSE"):
            return p._prev.text.upper() == "TRUE"
        if p.match_words("NULL"):
            return None
    raise p.error(
        "procedure arguments are literals: a quoted string, a whole number, true or false",
        token if token else None,
    )


def bind_arguments(
    p: HudiParser, procedure: Procedure, given: list[tuple[str | None, Argument]], at: Token
) -> dict[str, Argument]:
    """Match positional and named arguments to ``procedure``'s parameters, checking types."""
    by_name = {param.name.lower(): param for param in procedure.parameters}
    bound: dict[str, Argument] = {}
    named_seen = False
    for position, (name, arg) in enumerate(given):
        if name is None:
            if named_seen:
                raise p.error("a positional argument cannot follow a named one", arg.token)
            if position >= len(procedure.parameters):
                raise p.error(
                    f"{procedure.name} takes at most {len(procedure.parameters)} arguments",
                    arg.token,
                )
            param = procedure.parameters[position]
        else:
            named_seen = True
            found = by_name.get(name.lower())
            if found is None:
                raise p.error(
                    f"{procedure.name} has no parameter {name!r}; its parameters are "
                    f"{', '.join(q.name for q in procedure.parameters)}",
                    arg.name_token,
                )
            param = found
        if param.name in bound:
            raise p.error(f"argument {param.name} is given twice", arg.name_token or arg.token)
        kind_ok = isinstance(arg.value, param.kind) and not (
            param.kind is int and isinstance(arg.value, bool)
        )
        if arg.value is not None and not kind_ok:
            raise p.error(
                f"{param.name} must be {_TYPE_NAMES[param.kind]}, not {arg.value!r}", arg.token
            )
        bound[param.name] = arg
    for param in procedure.parameters:
        given_arg = bound.get(param.name)
        if given_arg is None or given_arg.value is None:
            if param.required:
                raise p.error(f"{procedure.name} needs {param.name} => ...", at)
            bound[param.name] = Argument(param.default, given_arg.token if given_arg else None)
    return bound
