"""INSERT maps the query's columns to the table's by position, as Spark does (a column list:
by the names it lists), whatever the query names its outputs."""

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
    session.sql("INSERT INTO by_position SELECT id, concat('p', id % 2), 0, 0 FROM range(600)")
    got = rows(session, "by_position")
    assert len(got) == 600
    assert got[:2] == [(0, "p0", 0, 0), (1, "p1", 0, 0)]
    # Outputs named like other table columns still go by position, not by name.
    session.sql("INSERT INTO by_position SELECT 1000 AS b, 'p0' AS a, 7 AS id, 8 AS part")
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
    session.sql("INSERT INTO star_source VALUES (1, 'p0', 10, 11), (2, 'p1', 20, 21)")
    session.sql("CREATE TABLE star_copy USING hudi PARTITIONED BY (part) "
                "TBLPROPERTIES (primaryKey = 'id') AS SELECT * FROM star_source")
    copy = HudiTable.open(session.table("star_copy").path)
    assert [n for n in copy.schema.names if not n.startswith("_hoodie_")] == [
        "id", "part", "a", "b"]
    assert rows(session, "star_copy") == rows(session, "star_source")
    session.sql(CREATE.format(name="star_target"))
    session.sql("INSERT INTO star_target SELECT * FROM star_source")
    session.sql("INSERT INTO star_target SELECT 'x' AS _HOODIE_FILE_NAME, 3, 'p0', 30, 31")
    assert rows(session, "star_target") == [*rows(session, "star_source"), (3, "p0", 30, 31)]
