"""The table of hudisql statements: leading key words -> the function that parses the rest.

This table is the whole grammar surface hudisql adds to Spark SQL. Every statement whose
leading words are not a key here passes through to Spark untouched. A later statement
(``CREATE INDEX``, ``RUN LOG COMPACTION``) is one more entry plus its command class.
"""

from __future__ import annotations

import typing as t

from hudisql.parser.clustering import CLUSTERING_STATEMENTS
from hudisql.parser.ddl import (
    parse_alter_table,
    parse_create_table,
    parse_drop_table,
    parse_replace_table,
)
from hudisql.parser.dml import (
    parse_delete,
    parse_insert_into,
    parse_insert_overwrite,
    parse_merge,
    parse_update,
    parse_with,
)
from hudisql.parser.index import (
    parse_create_index,
    parse_drop_index,
    parse_refresh_index,
    parse_show_indexes,
)
from hudisql.parser.procedures import parse_call, parse_show_timeline
from hudisql.parser.services import SERVICE_STATEMENTS

if t.TYPE_CHECKING:
    from hudisql.parser.parser import StatementParser

STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "TABLE"): parse_create_table,
    ("CREATE", "OR", "REPLACE", "TABLE"): parse_replace_table,
    ("REPLACE", "TABLE"): parse_replace_table,
    ("DROP", "TABLE"): parse_drop_table,
    ("ALTER", "TABLE"): parse_alter_table,
    ("INSERT", "INTO"): parse_insert_into,
    ("INSERT", "OVERWRITE"): parse_insert_overwrite,
    ("WITH",): parse_with,
    ("UPDATE",): parse_update,
    ("DELETE", "FROM"): parse_delete,
    ("MERGE", "INTO"): parse_merge,
    ("SHOW", "TIMELINE"): parse_show_timeline,
    ("CALL",): parse_call,
    **SERVICE_STATEMENTS,
    ("CREATE", "INDEX"): parse_create_index,
    ("DROP", "INDEX"): parse_drop_index,
    ("SHOW", "INDEXES"): parse_show_indexes,
    ("REFRESH", "INDEX"): parse_refresh_index,
    **CLUSTERING_STATEMENTS,
}
