"""The ``hudisql`` command: an interactive SQL shell like ``spark-sql``, or a script runner.

``hudisql`` starts the shell (statements end at ``;`` and may span lines; history is kept
in ``~/.hudisql_history`` or ``$HUDISQL_HISTORY``); ``hudisql -e "<sql>"`` and ``hudisql -f
file.sql`` run a script and exit; ``hudisql demo`` runs the README's demo; ``hudisql
timeline TABLE --out timeline.png|html`` draws a table's timeline; ``hudisql serve`` serves
BI and SQL tools over the PostgreSQL protocol (:mod:`hudisql.server.command`). Results print
as aligned tables followed by a timing line (on stderr, so stdout holds the results only).
The exit status is 0 when every statement ran, 1 when one failed, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from hudisql.errors import SqlParseError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.session import HudiSession

PROMPT = "hudisql> "
CONTINUATION = "       > "
HISTORY_ENV = "HUDISQL_HISTORY"
_QUIT = {"exit", "quit"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line; ``--conf`` may repeat. Exits with status 2 on bad arguments."""
    parser = argparse.ArgumentParser(
        prog="hudisql",
        description="Spark SQL with Apache Hudi's table services: a shell, or run a script.",
        epilog="'hudisql demo [--warehouse DIR] [--fresh]' runs the README's demo; "
               "'hudisql timeline TABLE --out timeline.png|html' draws a table's timeline; "
               "'hudisql serve --help': a PostgreSQL-protocol server for BI tools.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("-e", dest="execute", metavar="SQL", help="run these statements, exit")
    source.add_argument("-f", dest="file", metavar="FILE", help="run the script in FILE, exit")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark or hoodie.* setting (repeatable)")
    parser.add_argument("--warehouse", help="the directory of managed tables")
    parser.add_argument("--catalog", help="catalog URL (sqlite:///..., postgresql://...) or name")
    args = parser.parse_args(argv)
    args.conf = conf_settings(parser, args.conf)
    return args


def conf_settings(parser: argparse.ArgumentParser, items: Sequence[str]) -> dict[str, str]:
    """The ``--conf KEY=VALUE`` items as settings; a malformed one is the parser's error
    (it exits with the usage)."""
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--conf {item!r} is not KEY=VALUE")
        conf[key.strip()] = value
    return conf


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hudisql`` command; returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["demo"]:
        demo = importlib.import_module("hudisql.demo")
        return int(demo.main(words[1:]))
    if words[:1] == ["timeline"]:
        return timeline_main(words[1:])
    if words[:1] == ["serve"]:
        serve = importlib.import_module("hudisql.server.command")
        return int(serve.main(words[1:]))
    args = parse_args(words)
    if args.file is not None:
        try:
            script = Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            print(f"Error: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
            return 1
    else:
        script = args.execute
    if script is not None:
        from hudisql.parser import parse_script

        try:
            parse_script(script)  # a script that does not parse never waits for Spark
        except SqlParseError as exc:
            print(format_error(exc), file=sys.stderr)
            return 1
    session = _connect(args)
    try:
        if script is not None:
            return run_script(session, script, sys.stdout, sys.stderr)
        return Shell(session).loop()
    finally:
        session.stop()


def timeline_main(argv: Sequence[str]) -> int:
    """``hudisql timeline TABLE --out FILE``: draw a table's timeline to a PNG or HTML file.

    TABLE is a catalog table's name (``t`` or ``db.t``) or a table's base path. No Spark is
    started. Returns 0, or 1 when the table cannot be found or the file not written.
    """
    parser = argparse.ArgumentParser(
        prog="hudisql timeline",
        description="Draw a Hudi table's timeline (and its metadata table's): instants on a "
                    "time axis by action and state.")
    parser.add_argument("table", help="a catalog table name (t, db.t) or a table's base path")
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="the picture to write: a .png or .html file")
    parser.add_argument("--title", help="the chart's title (default: timeline of <table>)")
    parser.add_argument("--warehouse", help="the directory of managed tables")
    parser.add_argument("--catalog", help="catalog URL (sqlite:///..., postgresql://...) or name")
    args = parser.parse_args(argv)
    from hudisql.errors import HudiSqlError
    from hudisql.sql.timeline_chart import timeline_chart

    try:
        location = _table_location(args.table, args.warehouse, args.catalog)
        chart = timeline_chart(location, args.title or f"timeline of {args.table}")
        written = chart.save(args.out)
    except (HudiSqlError, OSError) as exc:
        print(format_error(exc), file=sys.stderr)
        return 1
    print(f"{written}: {len(chart.instants)} instants", file=sys.stderr)
    return 0


def _table_location(table: str, warehouse: str | None, catalog: str | None) -> str:
    """The base path of ``table``: itself when it holds a Hudi table, else the catalog's.

    Raises:
        TableNotFoundError: neither a Hudi table's path nor a table in the catalog.
    """
    if (Path(table) / ".hoodie" / "hoodie.properties").is_file() or "://" in table:
        return table
    if os.sep in table or table.startswith("."):
        from hudisql.errors import TableNotFoundError

        raise TableNotFoundError(f"{table} holds no Hudi table (no .hoodie/hoodie.properties); "
                                 "give a table's base path or a catalog table's name")
    from hudisql.sql.router import SqlRouter
    from hudisql.table.io.locations import absolute_location

    router = SqlRouter(catalog, absolute_location(warehouse or "spark-warehouse"))
    try:
        return router.catalog.load_table(table).location
    finally:
        router.close()


def quiet_spark_error_logs() -> None:
    """Stop PySpark logging every failed query as JSON: the shell shows the error once."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def _connect(args: argparse.Namespace) -> HudiSession:
    import hudisql

    quiet_spark_error_logs()

    conf = {"hudisql.log.level": "ERROR", **args.conf}
    session: HudiSession = hudisql.connect(warehouse=args.warehouse, conf=conf,
                                           catalog=args.catalog)
    return session


def run_script(session: HudiSession, script: str, out: TextIO, err: TextIO) -> int:
    """Run ``script``, printing each statement's result; returns 0, or 1 at the first error."""
    try:
        from hudisql.parser import parse_script

        statements = parse_script(script)
    except SqlParseError as exc:
        print(format_error(exc), file=err)
        return 1
    for statement in statements:
        started = time.monotonic()
        try:
            frame = session.sql_script(statement.text)[0]
            shown = print_result(frame, out)
        except Exception as exc:
            print(format_error(exc), file=err)
            if len(statements) > 1:
                print(f"  (statement at line {statement.line}, column {statement.column} "
                      "of the script)", file=err)
            return 1
        print(timing_line(time.monotonic() - started, shown), file=err)
    return 0


class Shell:
    """The interactive loop: read lines until a statement ends with ``;``, run, repeat."""

    def __init__(self, session: HudiSession) -> None:
        self.session = session
        self.history = os.environ.get(HISTORY_ENV) or str(Path.home() / ".hudisql_history")

    def loop(self) -> int:
        """Read and run statements until EOF or ``exit;``; returns 0."""
        readline = _readline()
        if readline is not None:
            with contextlib.suppress(OSError):  # no history yet
                readline.read_history_file(self.history)
        buffer: list[str] = []
        try:
            while True:
                try:
                    line = input(CONTINUATION if buffer else PROMPT)
                except EOFError:
                    print()
                    break
                except KeyboardInterrupt:
                    print()
                    buffer = []  # Ctrl-C drops the statement being typed, as spark-sql does
                    continue
                buffer.append(line)
                text = "\n".join(buffer)
                if not statement_complete(text):
                    continue
                buffer = []
                if text.strip().rstrip(";").strip().lower() in _QUIT:
                    break
                run_script(self.session, text, sys.stdout, sys.stdout)
        finally:
            if readline is not None:
                try:
                    readline.write_history_file(self.history)
                except OSError as exc:
                    print(f"warning: history not saved to {self.history}: {exc.strerror}",
                          file=sys.stderr)
        return 0


def _readline() -> Any:
    try:
        import readline
    except ImportError:  # not on every platform
        return None
    return readline


def statement_complete(text: str) -> bool:
    """True when ``text`` ends with a ``;`` that is not inside a string or comment.

    Text with an unterminated string or comment is not complete (the next line may close
    it); other malformed text is complete, so that running it reports the error.
    """
    if not text.rstrip().endswith(";"):
        return False
    from sqlglot.tokenizer_core import TokenType

    from hudisql.parser import Hudi
    from hudisql.parser.tokens import HudiTokenizer, tokenize

    try:
        tokens = tokenize(HudiTokenizer(dialect=Hudi()), text)
    except SqlParseError as exc:
        return "unterminated" not in str(exc)
    return bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON


def format_error(exc: BaseException) -> str:
    """An error as the shell shows it: ``Error: <message>`` and its notes, no traceback."""
    message = str(exc).strip()
    if type(exc).__module__.startswith("pyspark") or type(exc).__module__.startswith("py4j"):
        # Spark's messages go on with the analyzed plan or a JVM stack trace.
        message = message.splitlines()[0] if message else type(exc).__name__
    notes = getattr(exc, "__notes__", [])
    lines = [f"Error: {message}", *[f"  {n}" for n in notes]]
    return "\n".join(lines)


def timing_line(seconds: float, rows: int | None) -> str:
    """``Time taken: 1.234 seconds[, Fetched n row(s)]``, as spark-sql prints it."""
    fetched = "" if rows is None else f", Fetched {rows} row(s)"
    return f"Time taken: {seconds:.3f} seconds{fetched}"


def print_result(frame: DataFrame, out: TextIO) -> int | None:
    """Print ``frame`` as an aligned table; returns its row count (None: no columns)."""
    if not frame.columns:
        frame.collect()  # run it: a command's effect may be lazy
        return None
    rows = [[cell(v) for v in row] for row in frame.collect()]
    out.write(format_table(list(frame.columns), rows))
    out.flush()
    return len(rows)


def cell(value: object) -> str:
    """One value as the shell shows it (NULL for None)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (bytes, bytearray)):
        return "X'" + bytes(value).hex().upper() + "'"
    return str(value)


def format_table(columns: list[str], rows: list[list[str]]) -> str:
    """``rows`` under a header of ``columns``, in bordered columns as wide as their widest value."""
    widths = [len(c) for c in columns]
    for row in rows:
        widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+\n"

    def line(values: list[str]) -> str:
        return "|" + "|".join(f" {v.ljust(w)} " for v, w in zip(values, widths, strict=True)) + (
            "|\n")

    return border + line(columns) + border + "".join(line(r) for r in rows) + border


if __name__ == "__main__":
    sys.exit(main())
