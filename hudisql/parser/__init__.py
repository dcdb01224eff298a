"""The hudisql SQL dialect: script splitting, statement classification, typed commands.

Imports nothing but sqlglot (and :mod:`hudisql.errors`). ``parse_script(text)`` returns
the statements; hudisql's own become commands, every other statement passes to Spark as
its original text, byte for byte.
"""

from __future__ import annotations

from hudisql.parser.commands import (
    AlterTableAddColumns,
    AlterTableRename,
    Assignment,
    ColumnSpec,
    Command,
    CreateIndex,
    CreateTable,
    Delete,
    DropIndex,
    DropTable,
    IndexColumn,
    Insert,
    Merge,
    MergeClause,
    RefreshIndex,
    RollbackToInstant,
    RunIndexer,
    ShowCommits,
    ShowDataSkipping,
    ShowIndexes,
    ShowLogBlocks,
    ShowMetadataTable,
    ShowTimeline,
    TableName,
    Unparsed,
    Update,
    ValidateMetadataTable,
)
from hudisql.parser.dialect import Hudi
from hudisql.parser.parser import HudiParser
from hudisql.parser.procedures import PROCEDURES
from hudisql.parser.script import Statement, parse_script
from hudisql.parser.services import ShowTableService, TableService
from hudisql.parser.statements import STATEMENTS

__all__ = [
    "PROCEDURES",
    "STATEMENTS",
    "AlterTableAddColumns",
    "AlterTableRename",
    "Assignment",
    "ColumnSpec",
    "Command",
    "CreateIndex",
    "CreateTable",
    "Delete",
    "DropIndex",
    "DropTable",
    "Hudi",
    "HudiParser",
    "IndexColumn",
    "Insert",
    "Merge",
    "MergeClause",
    "RefreshIndex",
    "RollbackToInstant",
    "RunIndexer",
    "ShowCommits",
    "ShowDataSkipping",
    "ShowIndexes",
    "ShowLogBlocks",
    "ShowMetadataTable",
    "ShowTableService",
    "ShowTimeline",
    "Statement",
    "TableName",
    "TableService",
    "Unparsed",
    "Update",
    "ValidateMetadataTable",
    "parse_script",
]
