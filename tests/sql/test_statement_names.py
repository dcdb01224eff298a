"""Every statement that names a hudi table finds it, whatever the statement, in a session
where Spark has not seen the table yet; SHOW PARTITIONS lists the table's partitions."""

from __future__ import annotations

import pytest

from hudisql.catalog import TableName
from hudisql.session import HudiSession
from hudisql.sql.spark_tables import SparkTables

pytestmark = pytest.mark.spark


def _fresh(session: HudiSession, table: str) -> None:
    """Make Spark forget the table, as in a new application (the catalog still has it)."""
    SparkTables.of(session.spark).forget(session.spark, TableName("default", table))


@pytest.fixture
def trips(session: HudiSession) -> str:
    session.sql("""
        CREATE TABLE names_trips (ts BIGINT, uuid STRING, fare DOUBLE, city STRING)
        USING hudi PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'uuid');
        INSERT INTO names_trips VALUES (1, 'a', 1.0, 'sf'), (2, 'b', 2.0, 'la'),
          (3, 'c', 3.0, 'sf')""")
    return "names_trips"


@pytest.mark.parametrize("statement", [
    "SHOW COLUMNS IN {t}",
    "SHOW COLUMNS FROM {t} IN default",
    "SHOW TBLPROPERTIES {t}",
    "SHOW CREATE TABLE {t}",
    "DESCRIBE {t}",
    "DESCRIBE TABLE EXTENDED {t}",
    "DESC {t} fare",
    "CACHE TABLE {t}",
    "CACHE LAZY TABLE {t}",
    "UNCACHE TABLE IF EXISTS {t}",
    "REFRESH TABLE {t}",
    "ANALYZE TABLE {t} COMPUTE STATISTICS",
    "ANALYZE TABLE {t} COMPUTE STATISTICS NOSCAN",
    "SHOW PARTITIONS {t}",
    "SHOW TABLE EXTENDED LIKE '{t}'",
    "SELECT count(*) FROM {t}",
])
def test_a_statement_finds_the_table_in_a_fresh_session(
        session: HudiSession, trips: str, statement: str) -> None:
    _fresh(session, trips)
    session.sql(statement.format(t=trips)).collect()
    session.spark.sql(f"UNCACHE TABLE IF EXISTS {trips}")


def test_show_partitions_lists_the_tables_partitions(session: HudiSession, trips: str) -> None:
    _fresh(session, trips)
    got = [r[0] for r in session.sql(f"SHOW PARTITIONS {trips}").collect()]
    assert got == ["city=la", "city=sf"]
    got = [r[0] for r in session.sql(
        f"SHOW PARTITIONS default.{trips} PARTITION (city = 'sf')").collect()]
    assert got == ["city=sf"]


def test_show_tblproperties_shows_the_tables_properties(
        session: HudiSession, trips: str) -> None:
    _fresh(session, trips)
    props = dict(tuple(r) for r in session.sql(f"SHOW TBLPROPERTIES {trips}").collect())
    assert props["hoodie.table.name"] == trips
    assert props["hoodie.table.recordkey.fields"] == "uuid"
    [row] = session.sql(f"SHOW TBLPROPERTIES {trips} ('hoodie.table.partition.fields')").collect()
    assert tuple(row) == ("hoodie.table.partition.fields", "city")


def test_analyze_table_records_the_tables_statistics(session: HudiSession, trips: str) -> None:
    _fresh(session, trips)
    session.sql(f"ANALYZE TABLE {trips} COMPUTE STATISTICS")
    props = dict(tuple(r) for r in session.sql(f"SHOW TBLPROPERTIES {trips}").collect())
    assert props["spark.sql.statistics.numRows"] == "3"
    assert int(props["spark.sql.statistics.totalSize"]) > 0
    from hudisql.errors import HudiSqlError
    with pytest.raises(HudiSqlError, match="not column statistics"):
        session.sql(f"ANALYZE TABLE {trips} COMPUTE STATISTICS FOR COLUMNS fare")
