"""A write that evolves a managed table's schema reaches the catalog: SQL sees the new columns.

Schema evolution on write (``hoodie.schema.on.write.evolution.enable``) adds columns in the
commit itself, not through ALTER TABLE; the catalog entry must follow it, in this session and
in any other on the same catalog, or SQL would plan statements over the old columns.
"""

from __future__ import annotations

from collections.abc import Callable

from hudisql.session import HudiSession


def test_a_dataframe_write_that_adds_a_column_is_seen_by_sql_in_every_session(
        make_session: Callable[[], HudiSession]) -> None:
    a, b = make_session(), make_session()
    a.sql("""CREATE TABLE orders (id INT, status STRING, ts BIGINT) USING hudi
             TBLPROPERTIES (type = 'mor', primaryKey = 'id', preCombineField = 'ts')""")
    a.sql("INSERT INTO orders VALUES (1, 'new', 1), (2, 'new', 1), (3, 'new', 1)")
    assert b.sql("SELECT * FROM orders").columns[-3:] == ["id", "status", "ts"]

    wider = a.spark.createDataFrame([(3, "packed", 2, "fragile")],
                                    "id INT, status STRING, ts BIGINT, note STRING")
    a.table("orders").upsert(wider, **{"hoodie.schema.on.write.evolution.enable": "true"})

    for session in (a, b):
        assert session.sql("SELECT * FROM orders").columns[-4:] == ["id", "status", "ts", "note"]
    # A statement planned over the table's columns works with the new one (it failed with
    # UNRESOLVED_COLUMN 'note' when the catalog kept the old schema).
    b.sql("UPDATE orders SET status = 'delivered', ts = 5 WHERE id = 3")
    rows = {r["id"]: (r["status"], r["note"])
            for r in a.sql("SELECT id, status, note FROM orders").collect()}
    assert rows == {1: ("new", None), 2: ("new", None), 3: ("delivered", "fragile")}
