"""The parser's pass-through corpus run through HudiSession.sql gives what spark.sql gives.

Every statement goes through the router (table names looked up in the catalog, DML and DDL
on the corpus's parquet tables handed back to Spark) and must reach Spark byte-identical.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from hudisql.session import HudiSession
from tests.parser.test_corpus import TEXT, _normalize, reference_split

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def run_corpus(spark: SparkSession, run: Callable[[str], DataFrame], location: Path
               ) -> list[tuple[str, list[str]]]:
    """Run the corpus statement by statement in a fresh database; return each result."""
    views_before = {t.name for t in spark.catalog.listTables() if t.isTemporary}
    spark.sql(f"CREATE DATABASE corpus LOCATION '{location}'")
    spark.sql("USE corpus")
    roots = (f"file:{location}", str(location))
    results = []
    try:
        for text in reference_split(TEXT):
            frame = run(text)
            shown = sorted(_normalize(repr(row), roots) for row in frame.collect())
            results.append((frame.schema.simpleString(), shown))
    finally:
        spark.sql("USE default")
        spark.sql("DROP DATABASE IF EXISTS corpus CASCADE")
        for table in spark.catalog.listTables():
            if table.isTemporary and table.name not in views_before:
                spark.catalog.dropTempView(table.name)
    return results


def test_corpus_through_the_router_matches_spark(
    session: HudiSession, tmp_path: Path, monkeypatch: Any
) -> None:
    spark = session.spark
    seen: list[str] = []
    original = spark.sql

    def recording(text: str, *args: Any, **kwargs: Any) -> DataFrame:
        seen.append(text)
        return original(text, *args, **kwargs)

    raw = run_corpus(spark, spark.sql, tmp_path / "raw")
    monkeypatch.setattr(spark, "sql", recording)
    routed = run_corpus(spark, session.sql, tmp_path / "routed")
    monkeypatch.undo()
    statements = reference_split(TEXT)
    assert len(routed) == len(raw) == len(statements)
    for text, mine, theirs in zip(statements, routed, raw, strict=True):
        assert mine == theirs, text
    # Every statement reached Spark as written (SHOW TABLES too: its Spark rows are merged).
    for text in statements:
        assert text in seen, text
