"""DataFrames a SQL statement's text refers to: ``spark.sql(text, **frames)`` without views.

Before a pass-through statement reaches Spark, hudisql replaces some table references in
its text with DataFrames (a pruned read per hudi table reference, :mod:`hudisql.sql.reads`;
time travel and ``hudi_table_changes``, :mod:`hudisql.sql.time_travel`). Each DataFrame gets
a placeholder, a plain identifier (``hudi_frame_<hex>``) that sqlglot and hudisql's own
scans read as a table name; :meth:`StatementFrames.sql` turns the placeholders into
PySpark's DataFrame parameters (``spark.sql("SELECT * FROM {t}", t=df)``). On Spark Connect
those are relations of the statement's plan, resolved with it whenever it is analyzed; on
classic Spark PySpark registers and drops them around the eager analysis itself. No
temporary view of hudisql's outlives the statement or depends on when Spark analyzes it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Placeholders start with this prefix (and end with a random suffix).
PLACEHOLDER_PREFIX = "hudi_frame_"


@dataclass
class StatementFrames:
    """The DataFrames one statement's text refers to, by placeholder."""

    frames: dict[str, DataFrame] = field(default_factory=dict)

    def add(self, frame: DataFrame) -> str:
        """Give ``frame`` a placeholder to put in the statement's text; returns it."""
        name = PLACEHOLDER_PREFIX + uuid.uuid4().hex[:16]
        self.frames[name] = frame
        return name

    def __bool__(self) -> bool:
        return bool(self.frames)

    def sql(self, spark: SparkSession, text: str) -> DataFrame:
        """``spark.sql`` of ``text`` with each placeholder bound to its DataFrame; returns
        the statement's DataFrame, analyzed (so that a bad statement fails here).

        Raises:
            AnalysisException: Spark cannot analyze the statement.
        """
        if not self.frames:
            return spark.sql(text)
        # PySpark formats the text with str.format: the statement's own braces are escaped.
        formatted = text.replace("{", "{{").replace("}", "}}")
        used = {}
        for name, frame in self.frames.items():
            if name in formatted:
                formatted = formatted.replace(name, "{" + name + "}")
                used[name] = frame
        result = spark.sql(formatted, None, **used)
        # Spark Connect analyzes lazily; classic Spark already did (and caches the schema).
        result.schema  # noqa: B018 - analysis on demand
        return result
