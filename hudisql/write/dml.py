"""UPDATE, DELETE and MERGE as Python calls: one implementation for SQL and the table handle.

The rows a call writes are built with the DataFrame API over the table's current snapshot
(read through the ``hudi`` data source): values and conditions are Spark SQL strings
(evaluated with ``F.expr``) or Columns. The rows are computed once, before the commit
starts (a call reading its own target sees the table as it was), then written by the
Spark write pipeline (:class:`~hudisql.write.pipeline.SparkWriter`) as one commit; a write
that fails is rolled back by the pipeline before the error is raised.

- :func:`update`: the changed rows, whole, as an upsert; on a merge-on-read table, SET
  strings of the form ``c = c + <literal>`` are an expression write instead
  (:mod:`hudisql.write.dml_expressions`): the stored value is read at merge time.
- :func:`delete`: the matching rows' keys, as a delete.
- :func:`merge`: a :class:`MergeBuilder` (in the manner of Delta Lake's): the source LEFT
  JOIN the target, each source row takes the first clause whose condition holds, and the
  updates, inserts and deletes are one upsert commit (deleted rows flagged
  ``_hoodie_is_deleted``). A MERGE whose one clause is ``when_matched_update`` with
  strings ``c = t.c + s.c`` on a merge-on-read table is an expression write.

Bad input (an unknown column, a record key in SET, a MERGE with no clause, a name that
does not resolve) raises :class:`~hudisql.errors.WriteError` before anything is written.
A :class:`DmlTable` may carry a commit bracket (the SQL layer's catalog write id) and the
pipeline's step hook.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa
from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from hudisql.errors import WriteError
from hudisql.table.format.schema import META_COLUMNS, avro_to_arrow
from hudisql.table.table import HudiTable
from hudisql.table.write.records import RECORD_KEY
from hudisql.txn.transaction import StepHook
from hudisql.write.dml_expressions import (
    ExpressionPlan,
    expression_columns,
    merge_plan,
    quote_identifier,
    refuse_repeated_keys,
    update_plan,
)
from hudisql.write.pipeline import IS_DELETED, SparkWriter, WriteResult

__all__ = ["CommitBracket", "DmlResult", "DmlTable", "MergeBuilder", "Value", "data_columns",
           "delete", "merge", "update", "write_rows"]

#: A SET value, a condition, or an INSERT value: Spark SQL text or a Column.
Value = str | Column
#: Makes the context manager a commit runs in (e.g. a catalog write id).
CommitBracket = Callable[[], AbstractContextManager[object]]

_MATCHED = "__hudisql_matched"
_CLAUSE = "__hudisql_clause"


@dataclass(frozen=True)
class DmlTable:
    """The target of a DML call: a hudi table on a SparkSession, and how its writes commit.

    ``name`` is shown in errors (default: the path); ``qualifiers`` are the names besides
    an alias that may qualify the target's columns (its table name); ``reader`` returns
    its rows (default: the ``hudi`` data source at ``path``); ``bracket`` makes the
    context every commit runs in; ``on_step`` is the write pipeline's step hook.
    """

    spark: SparkSession
    path: str
    options: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    qualifiers: tuple[str, ...] = ()
    reader: Callable[[], DataFrame] | None = None
    bracket: CommitBracket | None = None
    on_step: StepHook | None = None

    @property
    def label(self) -> str:
        """The table as errors name it."""
        return self.name or self.path

    def read(self) -> DataFrame:
        """The table's current snapshot as a lazy DataFrame."""
        if self.reader is not None:
            return self.reader()
        return self.spark.read.format("hudi").load(self.path)


@dataclass(frozen=True)
class DmlResult:
    """What a DML call did: the rows it affected and its commit (None: no row, no commit)."""

    num_affected_rows: int
    commit: WriteResult | None = None


@dataclass(frozen=True)
class _Shape:
    """What a DML call needs to know of the table's schema and keys."""

    columns: list[tuple[str, str]]
    keys: list[str]
    fixed: frozenset[str]
    ordering: str | None
    is_mor: bool
    keyless: bool = False

    def stored_key(self, alias: str | None = None) -> list[Column]:
        """A keyless table's ``_hoodie_record_key`` column of the target (qualified by
        ``alias``), which a write of its stored rows must carry; [] for a keyed table."""
        if not self.keyless:
            return []
        name = quote_identifier(RECORD_KEY)
        return [F.col(f"{quote_identifier(alias)}.{name}" if alias else name).alias(RECORD_KEY)]

    @property
    def kept(self) -> list[str]:
        """Columns an expression write takes from the target row: keys, partition, ordering."""
        return self.keys + ([self.ordering] if self.ordering else [])


def data_columns(table: HudiTable) -> list[tuple[str, str]]:
    """The table's columns without meta columns: (name, Spark SQL type) in order."""
    from pyspark.sql.pandas.types import from_arrow_schema

    avro = json.loads(table.avro_schema)
    avro["fields"] = [f for f in avro["fields"] if f["name"] not in META_COLUMNS]
    schema = from_arrow_schema(avro_to_arrow(avro), prefer_timestamp_ntz=False)
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def _shape(table: DmlTable) -> _Shape:
    core = HudiTable.open(table.path)
    props = core.properties
    # A keyless table's rows are addressed by their stored (generated) key.
    record_keys = [RECORD_KEY] if props.keyless else props.record_key_fields
    keys = record_keys + [f for f in props.partition_fields if f not in record_keys]
    return _Shape(data_columns(core), keys,
                  frozenset(f.lower() for f in props.record_key_fields + props.partition_fields),
                  props.precombine_field, props.is_mor, props.keyless)


def write_rows(table: DmlTable, frame: DataFrame, operation: str,
               expressions: Mapping[str, str] | None = None) -> DmlResult:
    """Write ``frame``'s rows as one commit of the Spark write pipeline; returns the count.

    ``operation`` is a :meth:`SparkWriter.write` operation (``delete``: ``frame`` holds the
    key and partition columns). The rows are computed once, before the commit starts; no
    rows is no commit, except for an overwrite (which still empties what it overwrites).
    ``expressions`` makes it an expression write.

    Raises:
        WriteError: rows that do not fit the table (nothing written).
        CommitConflictError: a concurrent write touched the same file groups.
    """
    writer = SparkWriter(table.spark, table.path, dict(table.options), on_step=table.on_step)
    limit = writer.local_max_records(operation, expressions)
    if limit:
        # A few rows are collected once and written by the driver: one Spark job in all
        # (hudisql.write.local_write); more go through the Spark pipeline as below.
        head = frame.limit(limit + 1).toArrow()
        if head.num_rows <= limit:
            return _commit(table, writer, frame, head.num_rows, operation, expressions, head)
    rows = frame.localCheckpoint(eager=True)
    return _commit(table, writer, rows, rows.count(), operation, expressions)


def _commit(table: DmlTable, writer: SparkWriter, rows: DataFrame, count: int,
            operation: str, expressions: Mapping[str, str] | None,
            collected: pa.Table | None = None) -> DmlResult:
    if count == 0 and not operation.startswith("insert_overwrite"):
        return DmlResult(0)
    with table.bracket() if table.bracket is not None else contextlib.nullcontext():
        result = writer.write(rows, operation, expressions, rows=collected)
    return DmlResult(int(count), result)


def _column(value: Value, table: DmlTable, what: str) -> Column:
    """``value`` as a Column (SQL text is parsed by Spark when the statement's rows are
    analysed, in :func:`_resolving`; a text that does not parse is named there).

    Raises:
        WriteError: empty text, or neither text nor a Column.
    """
    if isinstance(value, Column):
        return value
    if not isinstance(value, str) or not value.strip():
        raise WriteError(f"table {table.label}: {what} must be Spark SQL text or a Column, "
                         f"not {value!r}")
    return F.expr(value)


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _unparsed_text(exc: ParseException) -> str | None:
    """The SQL text a parse error quotes (Spark shows it after ``== SQL ==``)."""
    found = re.search(r"== SQL ==\n(.*?)\n-*\^", str(exc), re.DOTALL)
    return found.group(1) if found else None


@contextlib.contextmanager
def _resolving(verb: str, hint: str) -> Iterator[None]:
    """Turn Spark's parse and analysis errors (bad SQL text, unknown columns, aliases) into
    a WriteError.

    The statement's rows are analysed once, against the real table and source, by the
    caller (``rows.schema``): no probe that Spark is expected to refuse, since PySpark logs
    every refused analysis as an ERROR with a stack trace even when the caller expects it.
    """
    try:
        yield
    except ParseException as exc:
        text = _unparsed_text(exc)
        what = f" {text!r}" if text else " a SQL text"
        raise WriteError(f"{verb}:{what} does not parse: {_first_line(exc)}; write a Spark "
                         "SQL expression") from exc
    except AnalysisException as exc:
        raise WriteError(f"{verb}: {_first_line(exc)}; {hint}") from exc


def _target_column(column: str, table: DmlTable, shape: _Shape,
                   prefixes: Sequence[str | None]) -> str:
    """The table's name of ``column`` (a ``prefix.`` naming the target is dropped).

    Raises:
        WriteError: the table has no such column.
    """
    names = {n.lower(): n for n, _ in shape.columns}
    head, _, tail = column.rpartition(".")
    wanted = {p.lower() for p in [*table.qualifiers, *prefixes] if p}
    if head and head.strip("`").lower() in wanted:
        column = tail
    found = names.get(column.strip("`").lower())
    if found is None:
        raise WriteError(f"table {table.label} has no column {column}; its columns are "
                         f"{', '.join(names.values())}")
    return found


def _assigned(table: DmlTable, shape: _Shape, values: Mapping[str, Value],
              prefixes: Sequence[str | None], what: str, allow_keys: bool = False
              ) -> dict[str, Value]:
    """Column -> value of SET (or INSERT) assignments, keyed by the table's column names;
    record key and partition columns are refused unless ``allow_keys`` (MERGE).

    Raises:
        WriteError: no assignment, an unknown column, a key column.
    """
    if not values:
        raise WriteError(f"{what} on table {table.label} assigns no column; give at least "
                         "one column and its value")
    out: dict[str, Value] = {}
    for column, value in values.items():
        name = _target_column(column, table, shape, prefixes)
        if name.lower() in shape.fixed and not allow_keys:
            raise WriteError(
                f"column {name} of table {table.label} is a record key or partition column "
                "and cannot be updated; delete the row and insert it with the new value")
        out[name] = value
    return out


def _target(table: DmlTable, alias: str | None) -> DataFrame:
    frame = table.read()
    return frame.alias(alias) if alias else frame


def update(table: DmlTable, set: Mapping[str, Value], where: Value | None = None, *,
           alias: str | None = None) -> DmlResult:
    """UPDATE: the rows ``where`` holds for (all rows: None) get the ``set`` values.

    ``set`` maps column names to values (SQL text over the target's columns, or Columns);
    ``alias`` names the target in them (besides its table name). Returns the rows changed
    and the upsert commit.

    Raises:
        WriteError: no or unknown columns, a record key or partition column in ``set``, a
            value or condition that does not resolve (nothing is written).
    """
    verb = f"UPDATE {table.label}"
    shape = _shape(table)
    values = _assigned(table, shape, set, [alias], "UPDATE")
    plan = _update_plan(table, shape, values, alias)
    hint = (f"refer to the table's columns by name{f' or as {alias}.<column>' if alias else ''}")
    with _resolving(verb, hint):
        rows = _target(table, alias)
        if where is not None:
            rows = rows.where(_column(where, table, "the UPDATE condition"))
        if plan is not None:  # the stored value is read when the log is merged, not now
            rows = rows.select(*expression_columns(plan, shape.columns, shape.kept, alias),
                               *shape.stored_key())
        else:
            rows = rows.select(*[
                (_column(values[name], table, f"the value of {name}") if name in values
                 else F.col(quote_identifier(name))).cast(kind).alias(name)
                for name, kind in shape.columns], *shape.stored_key())
        _ = rows.schema  # analysed here (lazily built on Spark Connect) for the error
    return write_rows(table, rows, "upsert", plan.ops if plan is not None else None)


def _update_plan(table: DmlTable, shape: _Shape, values: Mapping[str, Value],
                 alias: str | None) -> ExpressionPlan | None:
    """The expression plan of an UPDATE on a merge-on-read table with SQL-text values only."""
    texts = {k: v for k, v in values.items() if isinstance(v, str)}
    if not shape.is_mor or len(texts) != len(values):
        return None
    return update_plan(texts, [*table.qualifiers, *([alias] if alias else [])])


def delete(table: DmlTable, where: Value | None = None, *, alias: str | None = None
           ) -> DmlResult:
    """DELETE: the rows ``where`` holds for (all rows: None) are deleted in one commit.

    Returns the rows deleted and the commit.

    Raises:
        WriteError: a condition that does not resolve (nothing is written).
    """
    verb = f"DELETE FROM {table.label}"
    shape = _shape(table)
    with _resolving(verb, "refer to the table's columns by name"):
        rows = _target(table, alias)
        if where is not None:
            rows = rows.where(_column(where, table, "the DELETE condition"))
        rows = rows.select(*[F.col(quote_identifier(k)) for k in shape.keys])
        _ = rows.schema  # analysed here (lazily built on Spark Connect) for the error
    return write_rows(table, rows, "delete")


@dataclass(frozen=True)
class _Clause:
    """One WHEN clause; ``values`` None is ``*`` (every column from the source)."""

    matched: bool
    action: Literal["update", "delete", "insert"]
    condition: Value | None = None
    values: Mapping[str, Value] | None = None

    def describe(self) -> str:
        """The builder method that made this clause, e.g. ``when_matched_update_all``."""
        kind = "when_matched" if self.matched else "when_not_matched"
        star = self.values is None and self.action != "delete"
        return f"{kind}_{self.action}{'_all' if star else ''}"


def merge(table: DmlTable, source: DataFrame, on: Value, *, source_alias: str = "s",
          target_alias: str = "t") -> MergeBuilder:
    """Start a MERGE of ``source`` into ``table`` on condition ``on``; returns its builder.

    ``on`` (SQL text or a Column) refers to the source as ``source_alias`` and to the
    target as ``target_alias``; add clauses, then call :meth:`MergeBuilder.execute`.

    Raises:
        WriteError: an empty alias, or the same alias for source and target.
    """
    if not source_alias or not target_alias or source_alias.lower() == target_alias.lower():
        raise WriteError(
            f"MERGE INTO {table.label}: the source and target need two different aliases, got "
            f"source_alias={source_alias!r} and target_alias={target_alias!r}")
    return MergeBuilder(table, source, on, source_alias, target_alias)


@dataclass(frozen=True)
class MergeBuilder:
    """A MERGE of a source DataFrame into a hudi table, built clause by clause (each method
    returns a new builder); :meth:`execute` writes it as one commit.

    Clauses are tried in the order added; a source row takes the first whose kind
    (matched or not) and condition hold, and rows no clause takes are left alone.
    """

    table: DmlTable
    source: DataFrame
    on: Value
    source_alias: str
    target_alias: str
    clauses: tuple[_Clause, ...] = ()

    def _with(self, clause: _Clause) -> MergeBuilder:
        return dataclasses.replace(self, clauses=(*self.clauses, clause))

    def when_matched_update(self, set: Mapping[str, Value], condition: Value | None = None
                            ) -> MergeBuilder:
        """Matched target rows get the ``set`` values (other columns kept); returns a builder."""
        return self._with(_Clause(True, "update", condition, dict(set)))

    def when_matched_update_all(self, condition: Value | None = None) -> MergeBuilder:
        """Matched target rows take every column from the source row; returns a builder."""
        return self._with(_Clause(True, "update", condition))

    def when_matched_delete(self, condition: Value | None = None) -> MergeBuilder:
        """Matched target rows are deleted; returns a builder."""
        return self._with(_Clause(True, "delete", condition))

    def when_not_matched_insert(self, values: Mapping[str, Value],
                                condition: Value | None = None) -> MergeBuilder:
        """Unmatched source rows insert a row of ``values`` (other columns NULL); returns a
        builder."""
        return self._with(_Clause(False, "insert", condition, dict(values)))

    def when_not_matched_insert_all(self, condition: Value | None = None) -> MergeBuilder:
        """Unmatched source rows are inserted as they are (every column); returns a builder."""
        return self._with(_Clause(False, "insert", condition))

    def execute(self) -> DmlResult:
        """Run the MERGE as one commit; returns the rows updated, inserted and deleted.

        Raises:
            WriteError: no clause, an unreachable clause, unknown columns, a source that
                lacks a column ``*`` needs, a name that does not resolve, several source
                rows matching one target row (expression writes); nothing is written then.
        """
        table, verb = self.table, f"MERGE INTO {self.table.label}"
        if not self.clauses:
            raise WriteError(f"{verb}: the MERGE has no clause; add one (when_matched_update, "
                             "when_matched_delete, when_not_matched_insert, ...) before execute()")
        shape = _shape(table)
        clauses = [self._checked(c, i, shape) for i, c in enumerate(self.clauses)]
        hint = (f"refer to target columns as {self.target_alias}.<column> and source columns "
                f"as {self.source_alias}.<column>")
        plan = self._expression_plan(clauses, shape)
        with _resolving(verb, hint):
            if plan is not None:
                rows = self._expression_rows(clauses[0], plan, shape)
            else:
                rows = self._rows(clauses, shape)
            _ = rows.schema  # analysed here (lazily built on Spark Connect) for the error
        if plan is None:
            return write_rows(table, rows, "upsert")
        rows = rows.localCheckpoint(eager=True)
        refuse_repeated_keys(rows, shape.keys, table.label)
        writer = SparkWriter(table.spark, table.path, dict(table.options),
                             on_step=table.on_step)
        return _commit(table, writer, rows, rows.count(), "upsert", plan.ops)

    def _checked(self, clause: _Clause, index: int, shape: _Shape) -> _Clause:
        """``clause`` with its columns resolved to the table's names.

        Raises:
            WriteError: an unconditional clause before another of its kind, unknown
                columns, a ``*`` clause whose source lacks some of the table's columns.
        """
        verb = f"MERGE INTO {self.table.label}"
        later = any(c.matched == clause.matched for c in self.clauses[index + 1:])
        if clause.condition is None and later:
            raise WriteError(
                f"{verb}: clause {index + 1} ({clause.describe()}) has no condition, so the "
                "later clauses of its kind are unreachable; give it a condition or add it last")
        if clause.action == "delete":
            return clause
        if clause.values is None:
            have = {c.lower() for c in self.source.columns}
            missing = [n for n, _ in shape.columns if n.lower() not in have]
            if missing:
                raise WriteError(
                    f"{verb}: {clause.describe()} takes every column from the source, which "
                    f"lacks {', '.join(missing)}; add them to the source or name the columns "
                    f"with {clause.describe().removesuffix('_all')}")
            return clause
        what = "UPDATE SET" if clause.action == "update" else "INSERT"
        values = _assigned(self.table, shape, clause.values, [self.target_alias],
                           f"{verb} {what}", allow_keys=True)
        return dataclasses.replace(clause, values=values)

    def _expression_plan(self, clauses: list[_Clause], shape: _Shape) -> ExpressionPlan | None:
        """The plan of a one-clause ``when_matched_update`` on a merge-on-read table whose
        values are SQL text, as an expression write; None when it is not one."""
        if not shape.is_mor or len(clauses) != 1:
            return None
        [clause] = clauses
        if not clause.matched or clause.action != "update" or clause.values is None:
            return None
        texts = {k: v for k, v in clause.values.items() if isinstance(v, str)}
        if len(texts) != len(clause.values):
            return None
        return merge_plan(texts, self.target_alias)

    def _joined(self, how: str) -> tuple[DataFrame, Column]:
        """The source joined to the target (flagged by a column) and the matched test."""
        table = self.table
        target = table.read().withColumn(_MATCHED, F.lit(True)).alias(self.target_alias)
        source = self.source.alias(self.source_alias)
        on = _column(self.on, table, "the MERGE condition")
        joined = source.join(target, on=on, how=how)
        return joined, self._qualified(self.target_alias, _MATCHED).isNotNull()

    @staticmethod
    def _qualified(alias: str, name: str) -> Column:
        return F.col(f"{quote_identifier(alias)}.{quote_identifier(name)}")

    def _expression_rows(self, clause: _Clause, plan: ExpressionPlan, shape: _Shape
                         ) -> DataFrame:
        """The rows of an expression write: matched rows only, operands and target keys."""
        joined, _ = self._joined("inner")
        if clause.condition is not None:
            joined = joined.where(_column(clause.condition, self.table, "the clause condition"))
        return joined.select(
            *expression_columns(plan, shape.columns, shape.kept, self.target_alias),
            *shape.stored_key(self.target_alias))

    def _rows(self, clauses: list[_Clause], shape: _Shape) -> DataFrame:
        """Every source row's output: the first clause that holds decides what it writes."""
        joined, matched = self._joined("left")
        tests = []
        for clause in clauses:
            test = matched if clause.matched else ~matched
            if clause.condition is not None:
                test = test & _column(clause.condition, self.table, "a clause condition")
            tests.append(test)
        # Each output column repeats the clause tests in order, so the first clause that
        # holds decides both which clause a row takes and what it writes (one select).
        chosen = F.when(tests[0], F.lit(0))
        for i, test in enumerate(tests[1:], start=1):
            chosen = chosen.when(test, F.lit(i))
        outputs = [chosen.otherwise(F.lit(-1)).alias(_CLAUSE)]
        for name, kind in shape.columns:
            value = F.when(tests[0], self._value(clauses[0], name))
            for test, clause in zip(tests[1:], clauses[1:], strict=True):
                value = value.when(test, self._value(clause, name))
            outputs.append(value.cast(kind).alias(name))
        if shape.keyless:  # matched rows keep their stored key; inserted rows get a new one
            stored = self._qualified(self.target_alias, RECORD_KEY)
            key = F.when(tests[0], stored if clauses[0].matched else F.lit(None))
            for test, clause in zip(tests[1:], clauses[1:], strict=True):
                key = key.when(test, stored if clause.matched else F.lit(None))
            outputs.append(key.cast("string").alias(RECORD_KEY))
        deletes = [i for i, c in enumerate(clauses) if c.action == "delete"]
        taken = F.col(_CLAUSE)
        # One commit: rows of delete clauses carry the target's values and Hudi's delete flag.
        return (joined.select(*outputs).where(taken >= 0)
                .withColumn(IS_DELETED, taken.isin(deletes)).drop(_CLAUSE))

    def _value(self, clause: _Clause, name: str) -> Column:
        """Column ``name`` of the row ``clause`` writes (a delete: the target's)."""
        if clause.action == "delete":
            return self._qualified(self.target_alias, name)
        if clause.values is None:
            return self._qualified(self.source_alias, name)
        if name in clause.values:
            return _column(clause.values[name], self.table, f"the value of {name}")
        if clause.action == "update":
            return self._qualified(self.target_alias, name)
        return F.lit(None)
