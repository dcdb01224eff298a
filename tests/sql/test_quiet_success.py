"""A statement that succeeds logs no ERROR (issue 26): PySpark logs every analysis Spark
refuses as an ERROR with a stack trace (``SQLQueryContextLogger``,
``DataFrameQueryContextLogger``) even when the caller expects the refusal, so hudisql never
probes by letting Spark fail. A script of UPDATE, DELETE and MERGE with conditions runs
with those loggers and Spark's own captured; the demo's and the notebooks' output is
checked in ``tests/test_demo.py`` and ``tests/test_notebooks.py``, Spark Connect's in
``tests/test_connect.py``."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from pyspark.logger import PySparkLogger

from hudisql.errors import WriteError
from hudisql.session import HudiSession

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: The loggers PySpark reports refused analyses to.
LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")

SCRIPT = """
CREATE TABLE quiet (id INT, name STRING, fare DOUBLE, ts BIGINT, part STRING) USING hudi
  PARTITIONED BY (part) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor');
INSERT INTO quiet VALUES (1, 'a', 1.0, 1, 'p'), (2, 'b', 2.0, 1, 'p'), (3, 'c', 3.0, 1, 'q');
UPDATE quiet SET name = 'z', fare = fare * 2 WHERE id IN (1, 2) AND name <> 'b';
DELETE FROM quiet WHERE name = 'b' OR fare > 100;
MERGE INTO quiet t USING (SELECT 3 AS id, 'm' AS name, 9.0 AS fare, 2 AS ts, 'q' AS part
                          UNION ALL SELECT 4, 'n', 4.0, 2, 'p') s
  ON t.id = s.id AND t.part = s.part
  WHEN MATCHED AND s.fare > t.fare THEN UPDATE SET name = s.name, fare = s.fare
  WHEN NOT MATCHED AND s.id > 3 THEN INSERT *;
"""


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def pyspark_logs() -> Iterator[list[logging.LogRecord]]:
    """What PySpark's query-context loggers log while the test runs. The shell and the
    notebook magic raise these loggers to CRITICAL in their process (they show the error
    once themselves); a test of either that ran earlier in this worker must not hide them."""
    handler = _Records()
    loggers = [PySparkLogger.getLogger(name) for name in LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    yield handler.records
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_dml_with_conditions_logs_no_error(session: HudiSession,
                                           pyspark_logs: list[logging.LogRecord]) -> None:
    session.sql_script(SCRIPT)
    rows = session.sql("SELECT id, name, fare FROM quiet ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, "z", 2.0, ), (3, "m", 9.0), (4, "n", 4.0)]
    assert [r.getMessage()[:200] for r in pyspark_logs if r.levelno >= logging.ERROR] == []
    # A real error still shows: Spark's refusal of an unknown column is logged, and raised.
    with pytest.raises(WriteError, match="UNRESOLVED_COLUMN"):
        session.sql("UPDATE quiet SET name = 'y' WHERE nope = 1")
    assert any(r.levelno >= logging.ERROR for r in pyspark_logs)
