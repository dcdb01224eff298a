"""UPDATE and MERGE on merge-on-read tables as expression writes (``table/read/expressions.py``).

``UPDATE t SET c = c + 1 WHERE ...`` and ``MERGE INTO t USING s ON ... WHEN MATCHED THEN
UPDATE SET c = t.c + s.c`` do not read the stored value of ``c`` at write time: the rows
written carry the record key and the operand (``1``, ``s.c``), in an expression block, and
every reader adds it to the value it merged so far, as Hudi's expression payload does.
This is what makes a duplicated block (a retried Spark task) visible, and why reconciliation
(``table/read/reconcile.py``) must drop it.

The statement takes this path when every SET assignment of its one update clause is
``col = col + <operand>`` / ``col = col - <operand>`` (``add``) or ``col = <operand>``
(``set``), where the operand does not read the target row: a literal for UPDATE, any
expression over the source's columns for MERGE (target columns qualified by the target's
name or alias; an unqualified column is ambiguous and takes the ordinary path). Anything
else (conditions on the target are fine: they pick the rows, at write time) takes the
ordinary path that writes whole rows. The Python API (:mod:`hudisql.write.dml`) follows
the same rule for values given as SQL text; a Column value always takes the ordinary path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from hudisql.errors import WriteError
from hudisql.table.read.expressions import ExpressionOp

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["ExpressionPlan", "expression_columns", "merge_plan", "quote_identifier",
           "refuse_repeated_keys", "update_plan"]


def quote_identifier(part: str) -> str:
    """One name part back-quoted for Spark (any characters allowed)."""
    return "`" + part.replace("`", "``") + "`"


@dataclass
class ExpressionPlan:
    """Column -> op (``add`` / ``set``) and column -> the operand's Spark SQL."""

    ops: dict[str, str] = field(default_factory=dict)
    operands: dict[str, str] = field(default_factory=dict)


def _parse(sql: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError:
        return None


def _reads_target(node: exp.Expr, targets: set[str], unqualified: bool) -> bool:
    """True when ``node`` reads a target column (``unqualified``: a bare column does)."""
    for column in node.find_all(exp.Column):
        qualifier = column.table.lower()
        if (qualifier in targets) or (not qualifier and unqualified):
            return True
    return False


def _ambiguous(node: exp.Expr) -> bool:
    return any(not col.table for col in node.find_all(exp.Column))


def _is_target_column(node: exp.Expr, column: str, targets: set[str],
                      unqualified: bool) -> bool:
    if not isinstance(node, exp.Column) or node.name.lower() != column.lower():
        return False
    qualifier = node.table.lower()
    return qualifier in targets or (not qualifier and unqualified)


def _one(column: str, value: str, targets: set[str], *, update: bool) -> tuple[str, str] | None:
    """(op, operand SQL) of ``column = value``, or None when it needs the stored row."""
    node = _parse(value)
    if node is None:
        return None
    node = node.unnest()
    # UPDATE reads one table: bare columns are the target's. MERGE: they are ambiguous.
    if not update and _ambiguous(node):
        return None
    if not _reads_target(node, targets, update):
        return ExpressionOp.SET.value, node.sql(dialect="spark")
    if isinstance(node, exp.Add | exp.Sub):
        left, right = node.left.unnest(), node.right.unnest()
        if isinstance(node, exp.Add) and _is_target_column(right, column, targets, update):
            left, right = right, left
        if _is_target_column(left, column, targets, update) and not _reads_target(
                right, targets, update):
            operand = right.sql(dialect="spark")
            return ExpressionOp.ADD.value, (f"-({operand})" if isinstance(node, exp.Sub)
                                            else operand)
    return None


def _plan(values: dict[str, str], targets: set[str], *, update: bool) -> ExpressionPlan | None:
    plan = ExpressionPlan()
    for column, value in values.items():
        found = _one(column, value, targets, update=update)
        if found is None:
            return None
        plan.ops[column], plan.operands[column] = found
    if all(op == ExpressionOp.SET for op in plan.ops.values()):
        return None  # nothing reads the stored value: the ordinary path says the same
    return plan


def update_plan(values: dict[str, str], targets: Sequence[str]) -> ExpressionPlan | None:
    """The expression plan of an UPDATE's assignments (column -> value SQL), or None.

    ``targets``: the names the statement may qualify target columns with (table, alias).
    """
    return _plan(values, {t.lower() for t in targets}, update=True)


def merge_plan(values: dict[str, str], target_alias: str) -> ExpressionPlan | None:
    """The expression plan of a MERGE's one ``WHEN MATCHED THEN UPDATE SET`` clause, or None.

    ``values``: the clause's assignments (column -> value SQL), already checked; target
    columns must be qualified by ``target_alias`` (a bare column is ambiguous).
    """
    return _plan(values, {target_alias.lower()}, update=False)


def expression_columns(plan: ExpressionPlan, columns: Sequence[tuple[str, str]],
                       kept: Sequence[str], target: str | None) -> list[Column]:
    """The columns of an expression write: operands, the target's ``kept`` columns (keys,
    partition and ordering fields, qualified by ``target`` when given), and NULL for every
    other column (kept at merge time); each cast to the table's type."""
    from pyspark.sql import functions as F

    out = []
    for name, kind in columns:
        if name in plan.operands:
            value = F.expr(plan.operands[name])
        elif name in kept:
            qualified = quote_identifier(name) if target is None else (
                f"{quote_identifier(target)}.{quote_identifier(name)}")
            value = F.col(qualified)
        else:
            value = F.lit(None)
        out.append(value.cast(kind).alias(name))
    return out


def refuse_repeated_keys(frame: DataFrame, keys: Sequence[str], table: str) -> None:
    """Refuse a MERGE where several source rows match one target row (as Spark does).

    Raises:
        WriteError: names a repeated key; nothing is written.
    """
    from pyspark.sql import functions as F

    cols = [F.col(quote_identifier(k)) for k in keys]
    repeated = frame.groupBy(*cols).count().where(F.col("count") > 1).limit(1).collect()
    if repeated:
        row = repeated[0].asDict()
        raise WriteError(
            f"MERGE INTO {table}: {row.pop('count')} source rows match the target row with key "
            f"{row}; each target row may be updated by one source row only: deduplicate "
            "the source"
        )
