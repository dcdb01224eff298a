"""Spark statements about one table that Spark cannot answer for a hudi table.

Spark sees a hudi table as a Python data source table: it has no partition columns for
Spark, no statistics, and its properties are Spark's definition's, not the table's. So
these statements, when they name a hudi table, are answered here from the table and its
catalog entry, in Spark's result shapes:

- ``SHOW PARTITIONS t [PARTITION (col = value, ...)]``: the table's partitions as
  ``col=value/...`` (Hudi's partition paths, hive-style or not);
- ``SHOW TBLPROPERTIES t [(key)]``: the catalog entry's properties (``hoodie.*`` and those
  set by ALTER/ANALYZE);
- ``ANALYZE TABLE t COMPUTE STATISTICS [NOSCAN]``: the bytes of the latest file slices and
  (unless ``NOSCAN``) the row count, kept as Spark's ``spark.sql.statistics.*`` properties.

Every other statement goes to Spark unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot.tokenizer_core import Token, TokenType

from hudisql.errors import CatalogError, HudiSqlError, TableNotFoundError
from hudisql.parser import commands as c
from hudisql.sql import names
from hudisql.sql.frames import empty_frame, rows_frame
from hudisql.sql.spark_tables import spark_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudisql.catalog import TableEntry
    from hudisql.sql.router import StatementContext

#: Spark's property names for table statistics (what ANALYZE TABLE records).
TOTAL_SIZE = "spark.sql.statistics.totalSize"
NUM_ROWS = "spark.sql.statistics.numRows"

_PARTS = frozenset({TokenType.VAR, TokenType.IDENTIFIER, TokenType.DEFAULT})


class _Reader:
    """A cursor over one statement's tokens."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0

    def words(self, *wanted: str) -> bool:
        """Consume ``wanted`` when the next tokens spell it (case-insensitive)."""
        got = [t.text.upper() for t in self.tokens[self.i:self.i + len(wanted)]]
        if got != list(wanted):
            return False
        self.i += len(wanted)
        return True

    def name(self) -> c.TableName | None:
        """Consume a dotted table name, or None."""
        parts = []
        while self.i < len(self.tokens) and self.tokens[self.i].token_type in _PARTS:
            parts.append(self.tokens[self.i].text)
            self.i += 1
            if self.at(TokenType.DOT):
                self.i += 1
            else:
                break
        return c.TableName(tuple(parts)) if parts else None

    def at(self, kind: TokenType) -> bool:
        return self.i < len(self.tokens) and self.tokens[self.i].token_type == kind

    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def rest(self) -> list[Token]:
        return self.tokens[self.i:]


def answer(ctx: StatementContext) -> DataFrame | None:
    """The result of a statement this module answers for a hudi table, or None (Spark's)."""
    reader = _Reader(names.words(ctx.statement.text))
    for lead, handler in _FORMS:
        start = reader.i
        if reader.words(*lead):
            table = reader.name()
            try:
                entry = ctx.entry(table) if table is not None else None
            except TableNotFoundError:  # a name in another catalog: Spark's
                return None
            if entry is not None:
                return handler(ctx, entry, reader)
            return None
        reader.i = start
    return None


def _partition_spec(reader: _Reader, what: str) -> dict[str, str]:
    """``PARTITION (col = value, ...)`` as column -> value text (empty when absent).

    Raises:
        HudiSqlError: a malformed spec.
    """
    if reader.done():
        return {}
    rest = reader.rest()
    if rest[0].token_type != TokenType.PARTITION or len(rest) < 2 or (
            rest[1].token_type != TokenType.L_PAREN) or rest[-1].token_type != TokenType.R_PAREN:
        raise HudiSqlError(f"{what}: expected PARTITION (column = value, ...) after the table "
                           f"name, found {' '.join(t.text for t in rest)!r}")
    inner = rest[2:-1]
    spec: dict[str, str] = {}
    for i in range(0, len(inner), 4):
        item = inner[i:i + 3]
        if len(item) != 3 or item[1].token_type != TokenType.EQ:
            raise HudiSqlError(f"{what}: each partition item is column = value")
        spec[item[0].text.lower()] = item[2].text
    return spec


def show_partitions(ctx: StatementContext, entry: TableEntry, reader: _Reader) -> DataFrame:
    """SHOW PARTITIONS of a hudi table: one ``col=value[/col=value]`` row per partition.

    Raises:
        CatalogError: the table is not partitioned, or the spec names a column that is not
            a partition column.
    """
    from hudisql.table.table import HudiTable

    what = f"SHOW PARTITIONS {entry.name}"
    table = HudiTable.open(entry.location)
    fields = table.properties.partition_fields
    if not fields:
        raise CatalogError(f"{what}: the table is not partitioned; SHOW PARTITIONS lists the "
                           "partitions of a table created with PARTITIONED BY")
    spec = _partition_spec(reader, what)
    unknown = [k for k in spec if k not in {f.lower() for f in fields}]
    if unknown:
        raise CatalogError(f"{what}: {unknown} are not partition columns; the table is "
                           f"partitioned by {', '.join(fields)}")
    rows = []
    for path in sorted({s.partition_path for s in table.file_slices()}):
        values = [v.split("=", 1)[1] if table.properties.hive_style_partitioning else v
                  for v in path.split("/")]
        pairs = dict(zip([f.lower() for f in fields], values, strict=False))
        if all(pairs.get(k) == v for k, v in spec.items()):
            rows.append(("/".join(f"{f}={v}" for f, v in zip(fields, values, strict=False)),))
    return rows_frame(ctx.spark, rows, (("partition", "STRING"),))


def show_tblproperties(ctx: StatementContext, entry: TableEntry, reader: _Reader
                       ) -> DataFrame:
    """SHOW TBLPROPERTIES of a hudi table: its catalog properties (``key``, ``value``)."""
    props = dict(entry.properties)
    rest = reader.rest()
    if len(rest) == 3 and rest[0].token_type == TokenType.L_PAREN:
        key = rest[1].text
        value = props.get(key, f"Table {entry.name} does not have property: {key}")
        return rows_frame(ctx.spark, [(key, value)], (("key", "STRING"), ("value", "STRING")))
    if rest:
        raise HudiSqlError(f"SHOW TBLPROPERTIES {entry.name}: expected nothing or (key) after "
                           f"the table name, found {' '.join(t.text for t in rest)!r}")
    return rows_frame(ctx.spark, sorted(props.items()),
                      (("key", "STRING"), ("value", "STRING")))


def analyze_table(ctx: StatementContext, entry: TableEntry, reader: _Reader) -> DataFrame:
    """ANALYZE TABLE t COMPUTE STATISTICS [NOSCAN]: size (and row count) into the catalog.

    Raises:
        HudiSqlError: column statistics (``FOR COLUMNS``), which hudi tables do not keep.
    """
    from hudisql.table.table import HudiTable

    what = f"ANALYZE TABLE {entry.name}"
    if not reader.words("COMPUTE", "STATISTICS"):
        raise HudiSqlError(f"{what}: expected COMPUTE STATISTICS [NOSCAN]")
    noscan = reader.words("NOSCAN")
    if not reader.done():
        raise HudiSqlError(
            f"{what}: only table statistics (COMPUTE STATISTICS [NOSCAN]) are kept for hudi "
            "tables, not column statistics; drop the FOR COLUMNS clause")
    table = HudiTable.open(entry.location)
    size = 0
    for file_slice in table.file_slices():
        size += file_slice.base_file.size if file_slice.base_file is not None else 0
        size += sum(f.size for f in file_slice.log_files)
    stats = {TOTAL_SIZE: str(size)}
    if not noscan:
        stats[NUM_ROWS] = str(ctx.spark.table(spark_name(entry.name)).count())
    ctx.catalog.alter_table(entry.name, set_properties=stats)
    return empty_frame(ctx.spark)


_FORMS: tuple[tuple[tuple[str, ...], Callable[..., DataFrame]], ...] = (
    (("SHOW", "PARTITIONS"), show_partitions),
    (("SHOW", "TBLPROPERTIES"), show_tblproperties),
    (("ANALYZE", "TABLE"), analyze_table),
)
