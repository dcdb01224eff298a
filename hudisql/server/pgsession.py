"""One client's session: its Spark session, settings, transaction state and cursors, and
how one statement's text becomes a result.

Spark has no transactions, so a transaction block is the client's bracket: every
statement runs (and a write commits) as it comes; an error puts the block in the failed
state PostgreSQL clients expect (``25P02`` until ROLLBACK); ``ROLLBACK`` after a block that
wrote says, as a WARNING, that those writes stay committed. Cursors (``DECLARE [BINARY]
... CURSOR [WITH HOLD] FOR``) keep their Arrow stream open between FETCHes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hudisql.server import guard
from hudisql.server.cancel import RunningStatement
from hudisql.server.onerow import literal_row, one_row_select
from hudisql.server.pgcatalog import Activity, CatalogContext, build_views
from hudisql.server.results import Field, RowSource, frame_batches, frame_fields
from hudisql.server.rowstatements import inline_row_statements
from hudisql.server.sqlstate import ServerError
from hudisql.server.sqltext import (
    Translation,
    TranslationContext,
    first_words,
    looks_postgres,
    translate,
)
from hudisql.server.types import BY_OID

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.session import HudiSession

SERVER_VERSION = "16.0"
VERSION_TEXT = f"PostgreSQL {SERVER_VERSION} (hudisql, Spark SQL over Apache Hudi tables)"

#: Statements whose rows the client gets (tag ``SELECT n``); other statements' results are
#: run and summed up in their tag.
QUERY_WORDS = {"SELECT", "WITH", "VALUES", "TABLE", "FROM", "SHOW", "DESCRIBE", "DESC",
               "EXPLAIN", "CALL", "("}
DML_WORDS = {"INSERT", "UPDATE", "DELETE", "MERGE"}

#: Settings reported at startup (ParameterStatus) and answerable by SHOW.
STARTUP_SETTINGS = {
    "server_version": SERVER_VERSION, "server_encoding": "UTF8", "client_encoding": "UTF8",
    "DateStyle": "ISO, MDY", "integer_datetimes": "on", "standard_conforming_strings": "on",
    "TimeZone": "UTC", "IntervalStyle": "postgres", "is_superuser": "off",
    "application_name": "", "default_transaction_read_only": "off",
    "in_hot_standby": "off",
}
OTHER_SETTINGS = {
    "transaction_isolation": "read committed", "search_path": '"$user", public',
    "max_identifier_length": "63", "extra_float_digits": "1", "lc_collate": "C.UTF-8",
    "lc_ctype": "C.UTF-8", "statement_timeout": "0", "transaction_read_only": "off",
    "bytea_output": "hex", "lock_timeout": "0", "max_index_keys": "32",
    "idle_in_transaction_session_timeout": "0", "datestyle": "ISO, MDY",
}


@dataclass
class Outcome:
    """What a statement produced: its command tag word(s), rows to send, notices."""

    tag: str
    source: RowSource | None = None
    count: int | None = None
    limit: int = 0
    keep: bool = False  # the source belongs to a cursor: not closed after sending
    notices: list[str] = field(default_factory=list)
    statuses: list[tuple[str, str]] = field(default_factory=list)

    def command_tag(self, sent: int) -> str:
        """The CommandComplete tag once ``sent`` rows went out."""
        if self.tag == "INSERT":
            return f"INSERT 0 {self.count or 0}"
        if self.tag in DML_WORDS:
            return f"{self.tag} {self.count or 0}"
        if self.tag in ("SELECT", "FETCH", "MOVE"):
            return f"{self.tag} {sent if self.count is None else self.count}"
        return self.tag


@dataclass
class Cursor:
    """A ``DECLARE``d cursor: its rows, and whether it outlives the transaction."""

    source: RowSource
    hold: bool


_DECLARE = re.compile(r"^\s*DECLARE\s+(\"(?:[^\"]|\"\")+\"|\w+)\s+((?:\w+\s+)*?)CURSOR\s+"
                      r"(?:(WITH|WITHOUT)\s+HOLD\s+)?FOR\s+(.+)$", re.I | re.S)
_FETCH = re.compile(r"^\s*(FETCH|MOVE)\s*(.*?)\s*(?:(?:FROM|IN)\s+)?(\"(?:[^\"]|\"\")+\"|\w+)\s*$",
                    re.I | re.S)
_SET = re.compile(r"^\s*SET\s+(?:(SESSION|LOCAL)\s+)?([\w.]+)\s*(?:=|\bTO\b)\s*(.*?)\s*$",
                  re.I | re.S)
_SET_TIME_ZONE = re.compile(r"^\s*SET\s+(?:(?:SESSION|LOCAL)\s+)?TIME\s+ZONE\s+(.*?)\s*$",
                            re.I | re.S)


def _name(word: str) -> str:
    if word.startswith('"'):
        return word[1:-1].replace('""', '"')
    return word.lower()


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def cancelled_error() -> ServerError:
    """The error of a statement its client cancelled (SQLSTATE 57014, as PostgreSQL)."""
    return ServerError("57014", "canceling statement due to user request")


class PgSession:
    """A connection's state and statement runner.

    Args:
        hudi: the connection's own hudisql session (on its own Spark session).
        user: the user's name; ``read_only``: refuse statements that write.
        pid: the backend id the client was told (its cancel key's first half).
        application_name: from the startup packet.
    """

    def __init__(self, hudi: HudiSession, user: str, read_only: bool, pid: int,
                 application_name: str = "") -> None:
        self.hudi = hudi
        self.user = user
        self.read_only = read_only
        self.pid = pid
        self.settings = {**STARTUP_SETTINGS, **OTHER_SETTINGS,
                         "application_name": application_name,
                         "session_authorization": user}
        if read_only:
            self.settings["default_transaction_read_only"] = "on"
        self.status = "I"  # I: idle, T: in a block, E: failed block
        self.wrote_in_block = 0
        self.cursors: dict[str, Cursor] = {}
        #: The statement running now, and the client's cancel of it.
        self.statement = RunningStatement(hudi.spark.interruptAll)
        #: True while the running statement is a translation of the client's text (its
        #: errors' positions would not point into what the client sent).
        self.translated = False
        #: The server's connections for ``pg_stat_activity`` (set by the connection).
        self.activity: Callable[[], list[Activity]] = list
        self._last_translation: tuple[str, Translation | None] | None = None

    @property
    def running(self) -> str | None:
        """The statement running now (None between statements)."""
        return self.statement.text

    # ------------------------------------------------------------------ cancel

    def check_cancel(self) -> None:
        """Raise when the client cancelled the running statement (SQLSTATE 57014)."""
        if self.statement.cancelled.is_set():
            raise cancelled_error()

    def cancel(self) -> bool:
        """Stop the running statement: its Spark jobs (every job of this connection's
        Spark session, so also the next partition an open cursor prefetches), and the rows
        still to send; returns False when no statement runs."""
        return self.statement.cancel()

    # ------------------------------------------------------------------ statements

    def execute(self, text: str) -> Outcome:
        """Run one statement; returns what it produced.

        Raises:
            Exception: the statement failed (the caller reports it; the block is failed).
        """
        words = first_words(text, 3)
        head = words[0] if words else ""
        if self.status == "E" and head not in ("ROLLBACK", "ABORT", "COMMIT", "END"):
            raise ServerError("25P02", "current transaction is aborted, commands ignored "
                                       "until end of transaction block",
                              hint="send ROLLBACK")
        handler = _SERVER_COMMANDS.get(head)
        if handler is not None:
            outcome = handler(self, text, words)
            if outcome is not None:
                return outcome
        return self.run_sql(text)

    def run_sql(self, text: str) -> Outcome:
        """Run Spark SQL or a hudisql statement (translating PostgreSQL SQL when needed)."""
        guard.check_allowed(text)
        if self.read_only:
            guard.check_read_only(text)
        inlined = inline_row_statements(text, self._hold_rows)
        if inlined is not None:
            # Positions of errors in the rewritten text would not point into the client's.
            self.translated = True
            text = inlined
        literal = self._literal_answer(text)
        if literal is not None:
            return literal
        frame, local = self.frame(text)
        outcome = self.outcome(text, frame, local)
        if self.status == "T" and outcome.tag not in ("SELECT",):
            self.wrote_in_block += 1
        return outcome

    def _hold_rows(self, statement: str, view: str) -> None:
        """Run a row statement found inside a query and keep its rows as ``view``."""
        if self.read_only:
            guard.check_read_only(statement)
        frame = self.hudi.sql(statement)
        if not frame.columns:
            raise ServerError("42809", f"{' '.join(first_words(statement, 2))} returns no "
                                       "rows: only statements that return rows (SHOW, CALL "
                                       "show_...) can be read as a table")
        frame.createOrReplaceTempView(view)

    def frame(self, text: str) -> tuple[DataFrame, bool]:
        """The statement's DataFrame (commands have run by then), and whether its rows are
        read on the driver with no Spark job (a select list with no table)."""
        frame, ran = self._frame(text)
        one_row = one_row_select(ran)
        if one_row is None:
            return frame, False
        return self.hudi.sql(one_row), True

    def _frame(self, text: str) -> tuple[DataFrame, str]:
        """The statement's DataFrame and the text that made it (``text`` or its
        translation)."""
        if looks_postgres(text):
            translated = self._translate(text)
            if translated is not None:
                self.translated = True
                return self.hudi.sql(translated), translated
        try:
            return self.hudi.sql(text), text
        except Exception as exc:
            if "Parse" not in type(exc).__name__:
                raise
            translated = self._translate(text)
            if translated is None or translated.strip() == text.strip():
                raise
            try:
                self.translated = True
                return self.hudi.sql(translated), translated
            except Exception:
                self.translated = False
                raise exc from None  # the client's own text's error, with its position

    def _literal_answer(self, text: str) -> Outcome | None:
        """The answer to a select list of literals (after translation), read without Spark
        (see :mod:`hudisql.server.onerow`); None for other statements."""
        candidate = text
        if looks_postgres(text):
            translation = self._translation(text)
            if translation is None or translation.views:
                return None
            candidate = translation.sql
        columns = literal_row(candidate)
        if columns is None:
            return None
        fields = [Field(c.name, c.oid, BY_OID[c.oid].size, -1) for c in columns]
        return Outcome("SELECT", RowSource.of_values(fields, [c.value for c in columns]))

    def _translation(self, text: str) -> Translation | None:
        """``text`` translated to Spark SQL (None: sqlglot cannot read it); the last one
        is kept, as a statement is often translated twice (literal answer, then frame)."""
        import sqlglot.errors

        if self._last_translation is not None and self._last_translation[0] == text:
            return self._last_translation[1]
        context = TranslationContext(self.user, self.current_schema(), self.pid,
                                     VERSION_TEXT)
        try:
            translation: Translation | None = translate(text, context)
        except sqlglot.errors.SqlglotError:
            translation = None
        self._last_translation = (text, translation)
        return translation

    def _translate(self, text: str) -> str | None:
        translation = self._translation(text)
        if translation is None:
            return None
        build_views(self.hudi, translation.views,
                    CatalogContext(self.user, self.settings, self.activity()))
        return translation.sql

    def current_schema(self) -> str:
        """Spark's current database (the PostgreSQL schema tools see first)."""
        return str(self.hudi.spark.catalog.currentDatabase())

    def outcome(self, text: str, frame: DataFrame, local: bool = False) -> Outcome:
        """``frame`` as rows to send (queries) or a tag (commands, run to the end);
        ``local``: its rows are read on the driver with no Spark job."""
        words = first_words(text, 2)
        head = words[0] if words else ""
        if head in DML_WORDS:
            rows = frame.collect() if frame.columns else []
            count = int(rows[0][0]) if rows and "num_affected_rows" in frame.columns else 0
            return Outcome(head, count=count)
        if head in QUERY_WORDS:
            source = RowSource(frame_fields(frame), frame_batches(frame, local),
                               self.check_cancel)
            return Outcome("SELECT", source)
        frame.collect()  # a command's effect may be lazy
        return Outcome(" ".join(words) if head in ("CREATE", "DROP", "ALTER") else head)

    def describe(self, text: str) -> RowSource | None:
        """The result columns a prepared query will have, without running it (None: the
        statement returns no rows or is not a plain query)."""
        words = first_words(text, 1)
        if not words or words[0] not in ("SELECT", "WITH", "VALUES", "TABLE", "("):
            return None
        guard.check_allowed(text)
        if self.read_only:
            guard.check_read_only(text)
        text = inline_row_statements(text, self._hold_rows) or text
        frame, _ = self._frame(text)
        return RowSource(frame_fields(frame), iter(()))

    # ------------------------------------------------------------------ transactions

    def end_block(self) -> list[str]:
        """End the transaction block: close cursors without HOLD; returns notices."""
        notices = []
        if self.wrote_in_block:
            notices.append(f"{self.wrote_in_block} statement(s) of this transaction block "
                           "changed data or definitions as they ran; Spark has no "
                           "transactions, so ROLLBACK did not undo them")
        for name in [n for n, c in self.cursors.items() if not c.hold]:
            self.cursors.pop(name).source.close()
        self.status = "I"
        self.wrote_in_block = 0
        return notices

    def close(self) -> None:
        """Close every cursor and detach the hudisql session (Spark's session stays with the
        server's application)."""
        for cursor in self.cursors.values():
            cursor.source.close()
        self.cursors.clear()
        self.hudi.close()


# ---------------------------------------------------------------------- server commands

Handler = Callable[[PgSession, str, list[str]], "Outcome | None"]


def _begin(s: PgSession, text: str, words: list[str]) -> Outcome:
    notices = []
    if s.status != "I":
        notices.append("there is already a transaction in progress")
    else:
        s.status = "T"
    return Outcome("BEGIN" if words[0] != "START" else "START TRANSACTION", notices=notices)


def _commit(s: PgSession, text: str, words: list[str]) -> Outcome:
    failed = s.status == "E"
    if s.status == "I":
        return Outcome("COMMIT", notices=["there is no transaction in progress"])
    s.wrote_in_block = 0  # a commit of what ran: nothing to warn about
    s.end_block()
    return Outcome("ROLLBACK" if failed else "COMMIT")


def _rollback(s: PgSession, text: str, words: list[str]) -> Outcome:
    if len(words) > 1 and words[1] in ("TO",):
        if s.status == "E":
            s.status = "T"
        return Outcome("ROLLBACK")
    if s.status == "I":
        return Outcome("ROLLBACK", notices=["there is no transaction in progress"])
    return Outcome("ROLLBACK", notices=s.end_block())


def _savepoint(s: PgSession, text: str, words: list[str]) -> Outcome:
    if s.status == "I":
        raise ServerError("25P01", f"{words[0]} can only be used in transaction blocks")
    return Outcome(words[0])


def _set(s: PgSession, text: str, words: list[str]) -> Outcome | None:
    zone = _SET_TIME_ZONE.match(text)
    if zone:
        value = _unquote(zone.group(1))
        s.hudi.spark.conf.set("spark.sql.session.timeZone", value)
        s.settings["TimeZone"] = value
        return Outcome("SET", statuses=[("TimeZone", value)])
    if len(words) > 1 and words[1] == "SESSION" and "CHARACTERISTICS" in words[2:] + [
            w.upper() for w in text.split()[:4]]:
        return Outcome("SET")
    if len(words) > 1 and words[1] == "TRANSACTION":
        return Outcome("SET")
    match = _SET.match(text)
    if match is None or "." in match.group(2):
        return None  # Spark's SET (spark.*, hoodie.* keys) runs in Spark
    name, value = match.group(2), _unquote(match.group(3))
    known = {k.lower(): k for k in s.settings}
    key = known.get(name.lower(), name.lower())
    if key == "TimeZone":
        s.hudi.spark.conf.set("spark.sql.session.timeZone", value)
    if key == "search_path":
        first = value.split(",")[0].strip().strip('"')
        if first and s.hudi.spark.catalog.databaseExists(first):
            s.hudi.spark.catalog.setCurrentDatabase(first)
    s.settings[key] = value
    reported = key in STARTUP_SETTINGS
    return Outcome("SET", statuses=[(key, value)] if reported else [])


def _show(s: PgSession, text: str, words: list[str]) -> Outcome | None:
    rest = " ".join(words[1:]).lower()
    phrase = " ".join(text.split()[1:4]).lower().rstrip(";").removesuffix(" level")
    name = {"transaction isolation": "transaction_isolation", "time zone": "TimeZone"}.get(phrase)
    if name is None and len(words) == 2:
        known = {k.lower(): k for k in s.settings}
        name = known.get(rest)
        if rest == "all":
            rows = [(k, v, "") for k, v in sorted(s.settings.items())]
            return Outcome("SHOW", RowSource.of_rows(["name", "setting", "description"], rows))
    if name is None:
        return None  # SHOW TABLES, SHOW TIMELINE, ...: Spark's and hudisql's
    return Outcome("SHOW", RowSource.of_rows([name.lower()], [(s.settings[name],)]))


def _reset(s: PgSession, text: str, words: list[str]) -> Outcome:
    defaults = {**STARTUP_SETTINGS, **OTHER_SETTINGS}
    if len(words) > 1 and words[1] == "ALL":
        s.settings.update(defaults)
    elif len(words) > 1:
        known = {k.lower(): k for k in defaults}
        key = known.get(words[1].lower())
        if key:
            s.settings[key] = defaults[key]
    return Outcome("RESET")


def _discard(s: PgSession, text: str, words: list[str]) -> Outcome:
    if s.status != "I":
        raise ServerError("25001", "DISCARD ALL cannot run inside a transaction block")
    for cursor in s.cursors.values():
        cursor.source.close()
    s.cursors.clear()
    return Outcome(" ".join(words[:2]))


def _declare(s: PgSession, text: str, words: list[str]) -> Outcome:
    match = _DECLARE.match(text)
    if match is None:
        raise ServerError("42601", "syntax error in DECLARE: expected DECLARE name [BINARY] "
                                   "CURSOR [WITH HOLD] FOR query")
    name, options, hold, query = match.groups()
    hold_flag = (hold or "").upper() == "WITH"
    if not hold_flag and s.status == "I":
        raise ServerError("25P01", "DECLARE CURSOR can only be used in transaction blocks",
                          hint="BEGIN first, or DECLARE ... CURSOR WITH HOLD")
    cursor_name = _name(name)
    if cursor_name in s.cursors:
        raise ServerError("42P03", f'cursor "{cursor_name}" already exists')
    try:
        outcome = s.run_sql(query)
    except Exception as exc:
        exc.position_offset = match.start(4)  # type: ignore[attr-defined]
        raise
    if outcome.source is None:
        raise ServerError("42P11", "DECLARE CURSOR needs a query that returns rows")
    if "BINARY" in options.upper():
        outcome.source.set_formats([1])
    s.cursors[cursor_name] = Cursor(outcome.source, hold_flag)
    return Outcome("DECLARE CURSOR")


def _fetch(s: PgSession, text: str, words: list[str]) -> Outcome:
    match = _FETCH.match(text)
    if match is None:
        raise ServerError("42601", "syntax error in FETCH: expected FETCH [n|ALL|NEXT] "
                                   "[FROM] cursor")
    verb, direction, name = match.group(1).upper(), match.group(2).upper().split(), match.group(3)
    cursor = s.cursors.get(_name(name))
    if cursor is None:
        raise ServerError("34000", f'cursor "{_name(name)}" does not exist')
    if direction[:1] == ["FORWARD"]:
        direction = direction[1:]
    if not direction or direction == ["NEXT"]:
        count = 1
    elif direction == ["ALL"]:
        count = 0
    elif len(direction) == 1 and direction[0].isdigit():
        count = int(direction[0])
        if count == 0:
            raise ServerError("0A000", "FETCH 0 (the current row) is not supported: cursors "
                                       "only move forward")
    else:
        raise ServerError("0A000", f"FETCH {' '.join(direction)} is not supported: cursors "
                                   "only move forward (NEXT, n, ALL)")
    if verb == "MOVE":
        moved = cursor.source.fetch(count, lambda _: None)
        return Outcome("MOVE", count=moved)
    return Outcome("FETCH", cursor.source, limit=count, keep=True)


def _close(s: PgSession, text: str, words: list[str]) -> Outcome:
    target = text.split()[1] if len(text.split()) > 1 else ""
    if target.upper().rstrip(";") == "ALL":
        for cursor in s.cursors.values():
            cursor.source.close()
        s.cursors.clear()
        return Outcome("CLOSE CURSOR ALL")
    cursor = s.cursors.pop(_name(target.rstrip(";")), None)  # type: ignore[arg-type]
    if cursor is None:
        raise ServerError("34000", f'cursor "{_name(target)}" does not exist')
    cursor.source.close()
    return Outcome("CLOSE CURSOR")


def _unsupported(s: PgSession, text: str, words: list[str]) -> Outcome:
    raise ServerError("0A000", f"{words[0]} is not supported by hudisql serve")


_SERVER_COMMANDS: dict[str, Handler] = {
    "BEGIN": _begin, "START": _begin, "COMMIT": _commit, "END": _commit,
    "ROLLBACK": _rollback, "ABORT": _rollback, "SAVEPOINT": _savepoint,
    "RELEASE": _savepoint, "SET": _set, "SHOW": _show, "RESET": _reset,
    "DISCARD": _discard, "DECLARE": _declare, "FETCH": _fetch, "MOVE": _fetch,
    "CLOSE": _close, "LISTEN": _unsupported, "UNLISTEN": _unsupported,
    "NOTIFY": _unsupported, "COPY": _unsupported, "PREPARE": _unsupported,
    "EXECUTE": _unsupported, "DEALLOCATE": lambda s, t, w: Outcome("DEALLOCATE"),
    "CHECKPOINT": _unsupported, "VACUUM": _unsupported, "LOCK": _unsupported,
}
