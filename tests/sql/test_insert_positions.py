"""INSERT maps the query's columns to the table's by position, as Spark does (a column list:
by the names it lists), whatever the query names its outputs. The table's columns are in
Spark's order: CREATE TABLE and CTAS move the partition columns last."""

from __future__ import annotations

import pytest

from hudisql.session import HudiSession
from hudisql.table import HudiTable

pytestmark = pytest.mark.spark

CREATE = ("CREATE TABLE {name} (id BIGINT, part STRING, a INT, b INT) USING hudi "
          "PARTITIONED BY (part) TBLPROPERTIES (primaryKey = 'id')")


def rows(session: HudiSession, name: str) -> list[tuple[object, ...]]:
    table = HudiTable.open(session.table(name).path).read(columns=["id", "part", "a", "b"])
    return sorted((r["id"], r["part"], r["a"], r["b"]) for r in table.to_pylist())


def test_unnamed_and_duplicate_outputs_map_by_position(session: HudiSession) -> None:
    session.sql(CREATE.format(name="by_position"))
    # Spark names both literals `0`: looked up by name they were ambiguous.
    session.sql("INSERT INTO by_position SELECT id, 0, 0, concat('p', id % 2) FROM range(600)")
    got = rows(session, "by_position")
    assert len(got) == 600
    assert got[:2] == [(0, "p0", 0, 0), (1, "p1", 0, 0)]
    # Outputs named like other table columns still go by position, not by name.
    session.sql("INSERT INTO by_position SELECT 1000 AS b, 7 AS id, 8 AS part, 'p0' AS a")
    assert (1000, "p0", 7, 8) in rows(session, "by_position")


def test_a_column_list_maps_by_the_listed_names(session: HudiSession) -> None:
    session.sql(CREATE.format(name="by_list"))
    session.sql("INSERT INTO by_list (b, a, part, id) SELECT 1, 1, 'x', 5")
    session.sql("INSERT INTO by_list (id, part, b) SELECT 6 AS b, 'y' AS b, 2 AS b")
    assert rows(session, "by_list") == [(5, "x", 1, 1), (6, "y", None, 2)]


def test_select_star_from_a_hudi_table_leaves_its_meta_columns_out(
        session: HudiSession) -> None:
    """CREATE TABLE ... AS SELECT * and INSERT ... SELECT * over a hudi table write its data
    columns: Hudi drops the query's _hoodie_* meta columns (any case), as Apache Hudi does."""
    session.sql(CREATE.format(name="star_source"))
    session.sql("INSERT INTO star_source VALUES (1, 10, 11, 'p0'), (2, 20, 21, 'p1')")
    session.sql("CREATE TABLE star_copy USING hudi PARTITIONED BY (part) "
                "TBLPROPERTIES (primaryKey = 'id') AS SELECT * FROM star_source")
    copy = HudiTable.open(session.table("star_copy").path)
    assert [n for n in copy.schema.names if not n.startswith("_hoodie_")] == [
        "id", "a", "b", "part"]
    assert rows(session, "star_copy") == rows(session, "star_source")
    session.sql(CREATE.format(name="star_target"))
    session.sql("INSERT INTO star_target SELECT * FROM star_source")
    session.sql("INSERT INTO star_target SELECT 'x' AS _HOODIE_FILE_NAME, 3, 30, 31, 'p0'")
    assert rows(session, "star_target") == [*rows(session, "star_source"), (3, "p0", 30, 31)]


def test_partition_columns_go_last_as_spark_and_hudi_lay_them_out(session: HudiSession) -> None:
    """Spark moves a datasource table's partition columns to the end of its schema (in
    PARTITIONED BY order), and Apache Hudi's CTAS its query's: a Hudi user's positional
    INSERT VALUES and SELECT * see the same columns here."""
    session.sql("CREATE TABLE laid_out (dt STRING, id BIGINT, hh INT, v STRING) USING hudi "
                "PARTITIONED BY (hh, DT) TBLPROPERTIES (primaryKey = 'id')")
    session.sql("INSERT INTO laid_out VALUES (1, 'one', 10, '2026-11-24')")
    frame = session.sql("SELECT * FROM laid_out")
    assert [n for n in frame.columns if not n.startswith("_hoodie_")] == ["id", "v", "hh", "dt"]
    assert [tuple(r)[-4:] for r in frame.collect()] == [(1, "one", 10, "2026-11-24")]
    described = [r[0] for r in session.sql("DESCRIBE TABLE laid_out").collect()
                 if not r[0].startswith("_hoodie_")]
    assert described[:4] == ["id", "v", "hh", "dt"]
    session.sql("CREATE TABLE laid_out_copy USING hudi PARTITIONED BY (dt) "
                "TBLPROPERTIES (primaryKey = 'id') AS SELECT dt, id, v FROM laid_out")
    copy = session.sql("SELECT * FROM laid_out_copy")
    assert [n for n in copy.columns if not n.startswith("_hoodie_")] == ["id", "v", "dt"]
    assert [tuple(r)[-3:] for r in copy.collect()] == [(1, "one", "2026-11-24")]
