"""``CALL upgrade_table(table => 't', to_version => 9)``: Hudi's procedure, to versions 8/9.

``to_version`` is a number (``8``, ``9``, or the same quoted) or Hudi's version name
(``'EIGHT'``, ``'NINE'``), as Hudi's ``upgrade_table`` takes it.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlglot.tokenizer_core import Token

from hudisql.parser.commands import Command, TableName

if t.TYPE_CHECKING:
    from hudisql.parser.parser import HudiParser
    from hudisql.parser.procedures import Argument, Procedure

__all__ = ["UpgradeTable", "upgrade_procedures"]

_NAMES = {"SIX": 6, "EIGHT": 8, "NINE": 9}


@dataclass(frozen=True)
class UpgradeTable(Command):
    """``CALL upgrade_table(table => 't', to_version => 9)``."""

    table: TableName
    to_version: int


def _version(p: HudiParser, arg: Argument) -> int:
    raw = arg.value
    text = str(raw).strip().upper()
    if isinstance(raw, bool) or not (text.isdigit() or text in _NAMES):
        raise p.error(f"to_version must be 8 or 9 ('EIGHT' or 'NINE'), not {raw!r}", arg.token)
    return int(text) if text.isdigit() else _NAMES[text]


def _build(p: HudiParser, args: dict[str, Argument], at: Token) -> Command:
    from hudisql.parser.procedures import _table

    return UpgradeTable(_table(p, args["table"]), _version(p, args["to_version"]))


def upgrade_procedures() -> list[Procedure]:
    """``upgrade_table`` with Hudi's parameter names (``to_version`` a number or a name)."""
    from hudisql.parser.procedures import Parameter, Procedure

    return [Procedure("upgrade_table", (Parameter("table", str, required=True),
                                        Parameter("to_version", object, required=True)),
                      _build)]
