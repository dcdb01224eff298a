"""SQL names of hudi tables are case-insensitive, as in Spark SQL and the Hive metastore:
every statement reaches one table whichever case it is written in, and a table an earlier
hudisql stored in mixed case stays reachable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from hudisql.catalog import TableName, db
from hudisql.errors import TableAlreadyExistsError
from hudisql.session import HudiSession
from hudisql.table import HudiTable

pytestmark = pytest.mark.spark

CREATE = ("CREATE TABLE {name} (id INT, v STRING) USING hudi "
          "TBLPROPERTIES (primaryKey = 'id', type = 'mor')")


def rows(session: HudiSession, sql: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in session.sql(sql).collect()]


def test_every_statement_reaches_one_table_whatever_the_case(
    session: HudiSession, tmp_path: Path
) -> None:
    session.sql(CREATE.format(name="Case_Trips"))
    location = tmp_path / "warehouse" / "case_trips"  # the normalized name
    assert session.catalog.load_table("CASE_TRIPS").location == str(location)
    assert HudiTable.open(str(location)).properties.table_name == "case_trips"

    assert rows(session, "INSERT INTO CASE_TRIPS VALUES (1, 'a'), (2, 'b')") == [(2,)]
    assert rows(session, "UPDATE case_trips SET v = 'c' WHERE Case_Trips.id = 1") == [(1,)]
    assert rows(session, "DELETE FROM `CASE_TRIPS` WHERE id = 2") == [(1,)]
    merged = rows(session, "MERGE INTO default.Case_Trips USING (SELECT 3 AS id, 'x' AS v) "
                           "AS s ON CASE_TRIPS.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert merged == [(1,)]
    assert rows(session, "SELECT id, v FROM Default.CASE_trips ORDER BY id") == [
        (1, "c"), (3, "x")]
    assert rows(session, "SELECT count(*) FROM case_trips a JOIN CASE_TRIPS b ON a.id = b.id"
                ) == [(2,)]

    timeline = [(r.instant_time, r.action, r.state)
                for r in session.sql("SHOW TIMELINE CaSe_TrIpS").collect()]
    assert len(timeline) == 4 and all(state == "COMPLETED" for _, _, state in timeline)
    assert [(r.instant_time, r.action, r.state)
            for r in session.sql("SHOW TIMELINE default.case_trips").collect()] == timeline

    handle = session.table("CASE_Trips")
    assert handle.path == str(location)
    assert handle.managed_name == TableName("default", "case_trips")
    assert sorted(tuple(r) for r in handle.read(columns=["id", "v"]).collect()) == [
        (1, "c"), (3, "x")]

    session.sql("ALTER TABLE CASE_TRIPS RENAME TO Case_Rides")
    assert session.catalog.list_tables() == [TableName("default", "case_rides")]
    assert rows(session, "SELECT count(*) FROM CASE_RIDES") == [(2,)]
    assert rows(session, "SHOW TABLES LIKE 'case_*'") == [("default", "case_rides", False)]
    session.sql("DROP TABLE case_RIDES")
    assert session.catalog.list_tables() == []


def test_creating_a_name_that_differs_only_in_case_fails(session: HudiSession) -> None:
    session.sql(CREATE.format(name="case_t"))
    session.sql("INSERT INTO case_t VALUES (1, 'kept')")
    with pytest.raises(TableAlreadyExistsError, match=r"table default\.case_t already exists"):
        session.sql(CREATE.format(name="CASE_T"))
    with pytest.raises(TableAlreadyExistsError, match=r"table default\.case_t already exists"):
        session.sql(CREATE.format(name="`Case_T`"))
    session.sql(CREATE.format(name="IF NOT EXISTS Case_T"))
    assert rows(session, "SELECT id, v FROM Case_T") == [(1, "kept")]
    assert [t.table for t in session.catalog.list_tables()] == ["case_t"]


def test_a_table_stored_in_mixed_case_by_earlier_hudisql_stays_reachable(
    make_session: Callable[[], HudiSession], catalog_url: str, tmp_path: Path
) -> None:
    before = make_session()
    location = tmp_path / "warehouse" / "Case_Legacy"  # where earlier hudisql put it
    before.sql(CREATE.format(name="case_legacy") + f" LOCATION '{location}'")
    before.sql("INSERT INTO case_legacy VALUES (1, 'a'), (2, 'b')")
    table_id = before.catalog.load_table("case_legacy").table_id
    # What earlier hudisql stored for `CREATE TABLE Case_Legacy`: the name as written.
    engine = sa.create_engine(catalog_url)
    with engine.begin() as conn:
        conn.execute(sa.update(db.tables).where(db.tables.c.table_id == table_id)
                     .values(name="Case_Legacy"))

    after = make_session()
    assert rows(after, "SELECT id, v FROM CASE_LEGACY ORDER BY id") == [(1, "a"), (2, "b")]
    after.sql("INSERT INTO Case_Legacy VALUES (3, 'c')")
    entry = after.catalog.load_table("case_legacy")
    assert (entry.table_id, entry.location) == (table_id, str(location))
    with engine.connect() as conn:
        assert conn.execute(sa.select(db.tables.c.name)).scalars().all() == ["case_legacy"]
    engine.dispose()
    # The session opened before the rename sees the table and the new row as well.
    assert rows(before, "SELECT count(*) FROM case_legacy") == [(3,)]
    assert rows(before, "SHOW TABLES LIKE 'case_legacy'") == [("default", "case_legacy", False)]
