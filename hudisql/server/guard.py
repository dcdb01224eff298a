"""What a client's statement may not do: reach the server's shell or files, or write under
a read-only role.

Spark SQL can run a shell command (``SELECT TRANSFORM ... USING 'cmd'``), call Java
methods (``reflect``), load code (``ADD JAR``) and read any file by path
(``SELECT * FROM csv.`/etc/passwd` ``, ``LOAD DATA``); a server must refuse these for
every user. Sessions also run with ``spark.sql.runSQLOnFiles`` off. The read-only role
allows only statements that read (queries, SHOW, DESCRIBE, EXPLAIN, the inspection
procedures).
"""

from __future__ import annotations

import re

from hudisql.server.sqlstate import ServerError
from hudisql.server.sqltext import _scan, first_words

_FORBIDDEN = [
    (re.compile(r"\bTRANSFORM\s*\(", re.I), "TRANSFORM runs a shell command on the server"),
    (re.compile(r"\b(reflect|java_method|try_reflect)\s*\(", re.I),
     "reflect/java_method call Java methods on the server"),
    (re.compile(r"^\s*(ADD|LIST)\s+(JAR|FILE|ARCHIVE|JARS|FILES|ARCHIVES)\b", re.I),
     "ADD/LIST JAR|FILE|ARCHIVE load files into the server"),
    (re.compile(r"^\s*LOAD\s+DATA\b", re.I), "LOAD DATA reads files on the server"),
    (re.compile(r"\b(INSERT\s+OVERWRITE\s+(LOCAL\s+)?DIRECTORY)\b", re.I),
     "INSERT OVERWRITE DIRECTORY writes files on the server"),
    # Quoted names are blanked to '' before matching: csv.`/path` reads as csv. ''
    (re.compile(r"\b(csv|json|parquet|orc|text|avro|binaryFile|hudi)\s*\.\s*''", re.I),
     "a query on a file path reads the server's files; query a table by name"),
    (re.compile(r"^\s*(CREATE|REPLACE)\s+(TEMPORARY\s+)?FUNCTION\b", re.I),
     "CREATE FUNCTION loads code into the server"),
]

#: First words of statements that only read.
_READING = {"SELECT", "WITH", "VALUES", "TABLE", "FROM", "SHOW", "DESCRIBE", "DESC", "EXPLAIN",
            "USE"}
#: CALL procedures that only read (inspection).
_READING_CALLS = re.compile(r"^\s*CALL\s+(show_\w+|\w*validate\w*)\s*\(", re.I)
_WRITING_WORDS = re.compile(r"\b(INSERT|UPDATE|DELETE|MERGE|CREATE|DROP|ALTER|TRUNCATE|"
                            r"REFRESH|CACHE|UNCACHE|MSCK|RUN)\b", re.I)


def _code(text: str) -> str:
    return " ".join(text[s:e] if c else " '' " for s, e, c in _scan(text))


def check_allowed(text: str) -> None:
    """Refuse a statement that reaches the server's shell, code or files.

    Raises:
        ServerError: SQLSTATE 42501, naming what the statement does.
    """
    code = _code(text)
    for pattern, why in _FORBIDDEN:
        if pattern.search(code):
            raise ServerError("42501", f"statement refused: {why}",
                              hint="hudisql serve only runs SQL on the catalog's tables")


def check_read_only(text: str) -> None:
    """Refuse a statement that may write, for a read-only user.

    Raises:
        ServerError: SQLSTATE 25006.
    """
    words = first_words(text, 1)
    code = _code(text)
    if words and words[0] in _READING and not (
            words[0] in ("WITH", "FROM") and _WRITING_WORDS.search(code)):
        return
    if _READING_CALLS.match(code):
        return
    raise ServerError("25006", f"cannot run {' '.join(first_words(text, 2))} as a read-only "
                      "user: only queries, SHOW, DESCRIBE and EXPLAIN are allowed",
                      hint="ask for a readwrite user in the server's users file")
