"""Reads across time in Spark SQL text: ``TIMESTAMP AS OF`` and ``hudi_table_changes``.

Spark hands ``t TIMESTAMP AS OF '<instant>'`` to the table's own time travel, which a
Python data source has not (and it rejects an instant like ``20250331030642808`` as a
timestamp), and it knows no ``hudi_table_changes`` function. Before a pass-through
statement reaches Spark, each is rewritten in its original text, nothing else changed:

* ``<hudi table> TIMESTAMP|VERSION AS OF <literal>`` (also ``FOR SYSTEM_TIME`` /
  ``FOR SYSTEM_VERSION AS OF``) becomes a DataFrame of
  ``spark.read.format("hudi").option("as.of.instant", ...)`` on the table's location,
  aliased as the table's name unless the statement gives an alias. The literal is an
  instant (``yyyyMMddHHmmssSSS``, UTC) or a time (``'yyyy-MM-dd HH:mm:ss[.SSS]'``, read
  in the session's time zone as Spark reads a timestamp literal, then in UTC), checked
  against the timeline first. Not Spark's options clause (``t WITH ('as.of.instant' =
  ...)``): Spark resolves every reference to one catalog table in a query to the same
  relation, so a self-join of a table with its past would read one version twice.
* ``hudi_table_changes('<table or path>', 'latest_state' | 'cdc', '<begin>' [, '<end>'])``
  becomes a DataFrame of the matching incremental read (Hudi's options).

The DataFrames are the statement's own, referred to by placeholders in its text and bound
as ``spark.sql`` DataFrame parameters (:mod:`hudisql.sql.statement_frames`): no temporary
view is left in the session. Not a Python UDTF: a UDTF runs as one task that cannot reach
the catalog, while the DataFrame is the ``hudi`` data source's read, one input partition
per written file slice (or per write and partition for CDC).

Names of tables that are not hudi tables are left alone: Spark decides about them.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlglot.tokenizer_core import Token, TokenType

from hudisql.errors import ReadOptionError, TableNotFoundError
from hudisql.parser import commands as c
from hudisql.parser.position import line_and_column
from hudisql.read.options import (
    AS_OF_INSTANT,
    BEGIN_INSTANT,
    CDC,
    END_INSTANT,
    INCREMENTAL,
    INCREMENTAL_FORMAT,
    LATEST_STATE,
    QUERY_TYPE,
)
from hudisql.sql.names import catalog_name, words
from hudisql.sql.spark_tables import quote_identifier
from hudisql.sql.statement_frames import StatementFrames

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.sql.router import StatementContext
    from hudisql.table.table import HudiTable

#: The table-valued function's name, as Hudi's Spark SQL has it.
TABLE_CHANGES = "hudi_table_changes"
_NAME = frozenset({TokenType.VAR, TokenType.IDENTIFIER})
_LITERAL = frozenset({TokenType.STRING, TokenType.NUMBER})
#: The session's time zone, in which a time travel literal's time is read.
SESSION_TIME_ZONE = "spark.sql.session.timeZone"
_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,3}))?)?$")
_OFFSET = re.compile(r"^(?:GMT|UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$")
_TEMPORAL = frozenset({"TIMESTAMP", "VERSION"})
_SYSTEM = frozenset({"SYSTEM_TIME", "SYSTEM_VERSION"})
#: Statements without these words are handed on without tokenizing them.
_MAY_REWRITE = re.compile(rf"(?i)\bAS\s+OF\b|\b{TABLE_CHANGES}\b")


@dataclass(frozen=True)
class _Edit:
    """Replace characters ``start..end`` (inclusive) of the statement with ``text``."""

    start: int
    end: int
    text: str


def rewrite(ctx: StatementContext, text: str, frames: StatementFrames) -> str:
    """``text`` with its time travel on hudi tables and its table-changes calls rewritten
    to placeholders of DataFrames added to ``frames``; returns the text.

    Raises:
        ReadOptionError: a bad instant, range or query type (names line and column).
        TableNotFoundError: ``hudi_table_changes`` of a name that is not a hudi table.
    """
    if not _MAY_REWRITE.search(text):
        return text
    tokens = words(text)
    edits: list[_Edit] = []
    for i in range(len(tokens)):
        edit = (_time_travel(ctx, text, tokens, i, frames)
                or _table_changes(ctx, text, tokens, i, frames))
        if edit is not None and (not edits or edit.start > edits[-1].end):
            edits.append(edit)
    for edit in reversed(edits):
        text = text[:edit.start] + edit.text + text[edit.end + 1:]
    return text


def _where(ctx: StatementContext, text: str, offset: int) -> str:
    """``line L, column C`` of ``offset`` in the script (the statement's own position added)."""
    line, column = line_and_column(text, offset)
    if line == 1:
        column += ctx.statement.column - 1
    return f"line {line + ctx.statement.line - 1}, column {column}"


def _name_before(tokens: list[Token], end: int) -> tuple[c.TableName, int] | None:
    """The dotted name whose last part is ``tokens[end]``, and the index of its first part."""
    if end < 0 or not _is_name(tokens[end]):
        return None
    parts = [tokens[end].text]
    i = end
    while i >= 2 and tokens[i - 1].token_type == TokenType.DOT and _is_name(tokens[i - 2]):
        parts.insert(0, tokens[i - 2].text)
        i -= 2
    return c.TableName(tuple(parts)), i


def _is_name(token: Token) -> bool:
    # Name parts may be words the tokenizer reads as keywords (``default.t``).
    return token.token_type in _NAME or token.text.isidentifier()


def _temporal_clause(tokens: list[Token], i: int) -> int | None:
    """The index of the ``OF`` ending a temporal clause that starts at ``tokens[i]``."""
    words_ = [t.text.upper() for t in tokens[i:i + 4]]
    if len(words_) >= 3 and words_[0] in _TEMPORAL and words_[1:3] == ["AS", "OF"]:
        return i + 2
    if len(words_) == 4 and words_[0] == "FOR" and words_[1] in _SYSTEM and \
            words_[2:4] == ["AS", "OF"]:
        return i + 3
    return None


def _time_travel(ctx: StatementContext, text: str, tokens: list[Token], i: int,
                 frames: StatementFrames) -> _Edit | None:
    of = _temporal_clause(tokens, i)
    named = _name_before(tokens, i - 1) if of is not None else None
    if of is None or named is None:
        return None
    name, first = named
    entry = ctx.entry(name) if catalog_name(name, "default") is not None else None
    if entry is None:
        return None  # not a hudi table: Spark's own time travel (or its error)
    clause = " ".join(t.text.upper() for t in tokens[i:of + 1])
    if of + 1 >= len(tokens) or tokens[of + 1].token_type not in _LITERAL:
        raise ReadOptionError(
            f"{_where(ctx, text, tokens[i].start)}: {clause} on hudi table {name} takes a "
            "literal: an instant ('20250331030642808', as SHOW TIMELINE lists them) or a "
            "time ('2025-03-31 03:06:42.808')")
    from hudisql.table.read.incremental import check_time_travel

    literal = tokens[of + 1]
    try:
        given = in_utc(literal.text, ctx.spark.conf.get(SESSION_TIME_ZONE, None))
        instant = check_time_travel(_open(entry.location), given, clause)
    except ReadOptionError as exc:
        raise ReadOptionError(f"{_where(ctx, text, literal.start)}: {exc}") from exc
    table = _open(entry.location)
    view = frames.add(_frame(ctx, table, {AS_OF_INSTANT: instant}))
    follows = tokens[of + 2] if of + 2 < len(tokens) else None
    aliased = follows is not None and (follows.token_type == TokenType.ALIAS
                                       or follows.token_type in _NAME)
    alias = "" if aliased else f" AS {quote_identifier(name.parts[-1])}"
    return _Edit(tokens[first].start, literal.end, view + alias)


def in_utc(text: str, zone: str | None) -> str:
    """A time travel literal with its time (``yyyy-MM-dd[ HH:mm:ss[.SSS]]``) read in the
    session's time zone ``zone``, as Spark reads a timestamp literal, and written in UTC,
    the zone of instant times; an instant (digits) or a time in a UTC session as given.

    Raises:
        ReadOptionError: a time in a session whose zone hudisql cannot read.
    """
    found = _TIME.match(text.strip())
    if found is None or zone is None or zone.strip().upper() in ("UTC", "Z", "GMT", "+00:00"):
        return text
    day, clock, millis = found.groups()
    try:
        local = dt.datetime.fromisoformat(f"{day} {clock or '00:00:00'}.{millis or '0'}")
        moment = local.replace(tzinfo=_zone(zone)).astimezone(dt.UTC)
    except (ValueError, ZoneInfoNotFoundError) as exc:
        raise ReadOptionError(
            f"time {text!r}: the session's time zone {zone!r} is not one hudisql reads; give "
            "the instant (yyyyMMddHHmmssSSS, UTC, as SHOW TIMELINE lists it)") from exc
    # A time to the second means its whole second, a day its start (normalize_as_of).
    ms = "" if millis is None and clock is not None else f".{moment.microsecond // 1000:03d}"
    return moment.strftime("%Y-%m-%d %H:%M:%S") + ms


def _zone(zone: str) -> dt.tzinfo:
    """A Spark session time zone: a region (``America/Los_Angeles``) or an offset."""
    offset = _OFFSET.match(zone.strip())
    if offset is None:
        return ZoneInfo(zone.strip())
    sign, hours, minutes = offset.groups()
    delta = dt.timedelta(hours=int(hours), minutes=int(minutes or 0))
    return dt.timezone(-delta if sign == "-" else delta)


def _table_changes(ctx: StatementContext, text: str, tokens: list[Token], i: int,
                   frames: StatementFrames) -> _Edit | None:
    if tokens[i].text.lower() != TABLE_CHANGES or i + 1 >= len(tokens) or \
            tokens[i + 1].token_type != TokenType.L_PAREN:
        return None
    args: list[str] = []
    j = i + 2
    while j < len(tokens) and tokens[j].token_type != TokenType.R_PAREN:
        if tokens[j].token_type in _LITERAL:
            args.append(tokens[j].text)
        elif tokens[j].token_type != TokenType.COMMA:
            raise _usage(ctx, text, tokens[j].start, f"{tokens[j].text!r} is not a literal")
        j += 1
    where = _where(ctx, text, tokens[i].start)
    if j >= len(tokens) or not 3 <= len(args) <= 4:
        raise _usage(ctx, text, tokens[i].start, f"it was given {len(args)} arguments")
    target, kind, begin, *rest = args
    if kind.lower() not in (LATEST_STATE, CDC):
        raise _usage(ctx, text, tokens[i].start, f"query type {kind!r} is unknown")
    path = _table_location(ctx, target, where)
    from hudisql.table.read.incremental import resolve_range

    table = _open(path)
    try:
        resolve_range(table, begin, rest[0] if rest else None)
    except ReadOptionError as exc:
        raise ReadOptionError(f"{where}: {TABLE_CHANGES}({target!r}, ...): {exc}") from exc
    options = {QUERY_TYPE: INCREMENTAL, INCREMENTAL_FORMAT: kind.lower(), BEGIN_INSTANT: begin}
    if rest:
        options[END_INSTANT] = rest[0]
    return _Edit(tokens[i].start, tokens[j].end, frames.add(_frame(ctx, table, options)))


def _usage(ctx: StatementContext, text: str, offset: int, problem: str) -> ReadOptionError:
    return ReadOptionError(
        f"{_where(ctx, text, offset)}: {TABLE_CHANGES} takes ('<table or path>', "
        f"'{LATEST_STATE}' | '{CDC}', '<begin instant>' [, '<end instant>']), string "
        f"literals; {problem}")


def _table_location(ctx: StatementContext, target: str, where: str) -> str:
    """The base path ``hudi_table_changes`` reads: a path as given, or a hudi table's.

    Raises:
        TableNotFoundError: a name that is not a hudi table in the catalog.
    """
    if "/" in target or "\\" in target:
        return target
    name = c.TableName(tuple(part.strip("`") for part in target.split(".")))
    _, entries = ctx.router.resolve_names(ctx.spark, [name])
    wanted = ctx.name_of(name)
    if wanted not in entries:
        raise TableNotFoundError(
            f"{where}: {TABLE_CHANGES}({target!r}, ...): {wanted} is not a hudi table in the "
            f"catalog; list them with SHOW TABLES IN {wanted.database}, or give the table's "
            "base path")
    return entries[wanted].location


def _frame(ctx: StatementContext, table: HudiTable, options: dict[str, str]) -> DataFrame:
    """``table`` read by the ``hudi`` data source with ``options``; returns the DataFrame."""
    reader = ctx.spark.read.format("hudi")
    for option, value in options.items():
        reader = reader.option(option, value)
    return reader.load(table.base_path)


def _open(path: str) -> HudiTable:
    from hudisql.table.table import HudiTable

    return HudiTable.open(path)
