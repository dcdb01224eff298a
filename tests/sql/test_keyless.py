"""Keyless tables (Hudi 0.14+ auto-generated record keys): created without primaryKey,
keys ``<instant>_<task partition>_<row>``, and UPDATE/DELETE/MERGE addressing the stored
``_hoodie_record_key`` of the rows they match. Both readers see the same rows."""

from __future__ import annotations

import re
from typing import Any

import pytest

from hudisql.session import HudiSession
from hudisql.table import HudiTable
from hudisql.table.format.properties import TableProperties
from tests.fixtures import core_rows_of, rs_rows_of

pytestmark = pytest.mark.spark

COLUMNS = ["_hoodie_record_key", "_hoodie_partition_path", "ts", "uuid", "rider", "fare",
           "city"]


def core_rows(path: str) -> list[tuple[Any, ...]]:
    return core_rows_of(path, COLUMNS)


def rs_rows(path: str) -> list[tuple[Any, ...]]:
    return rs_rows_of(path, COLUMNS)


def keys_by_rider(path: str) -> dict[str, str]:
    return {r[4]: r[0] for r in core_rows(path)}


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_keyless_table_insert_update_delete_merge(session: HudiSession, kind: str) -> None:
    session.sql(f"""
        CREATE TABLE keyless_{kind} (ts BIGINT, uuid STRING, rider STRING, fare DOUBLE,
          city STRING) USING HUDI TBLPROPERTIES (type = '{kind}') PARTITIONED BY (city)""")
    path = session.table(f"keyless_{kind}").path
    props = TableProperties.load(HudiTable.open(path).storage)
    assert "hoodie.table.recordkey.fields" not in props
    assert props.keygenerator_class == "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert props.get("hoodie.populate.meta.fields", "true") == "true"

    session.sql(f"""INSERT INTO keyless_{kind} VALUES
        (1, 'u1', 'rider-A', 19.1, 'sf'), (2, 'u2', 'rider-B', 27.7, 'sf'),
        (3, 'u3', 'rider-C', 33.9, 'la')""")
    first = HudiTable.open(path).timeline.last_completed()
    assert first is not None
    keys = keys_by_rider(path)
    assert len(set(keys.values())) == 3
    shape = re.compile(rf"^{first.timestamp}_\d+_\d+$")
    assert all(shape.match(k) for k in keys.values()), keys

    session.sql(f"UPDATE keyless_{kind} SET fare = 25.0 WHERE rider = 'rider-B'")
    # `c = c + literal` on merge-on-read is an expression write: it carries the stored key.
    session.sql(f"UPDATE keyless_{kind} SET fare = fare + 1 WHERE rider = 'rider-A'")
    session.sql(f"DELETE FROM keyless_{kind} WHERE rider = 'rider-C'")
    session.sql(f"""MERGE INTO keyless_{kind} AS t
        USING (SELECT 1L AS ts, 'u1' AS uuid, 'rider-A' AS rider, 1.0 AS fare, 'sf' AS city
               UNION ALL SELECT 4L, 'u4', 'rider-D', 40.0, 'la') AS s
        ON t.uuid = s.uuid
        WHEN MATCHED THEN UPDATE SET t.fare = t.fare + s.fare
        WHEN NOT MATCHED THEN INSERT *""")
    rows = core_rows(path)
    assert [(r[4], r[5]) for r in sorted(rows, key=lambda r: r[4])] == [
        ("rider-A", 21.1), ("rider-B", 25.0), ("rider-D", 40.0)]
    after = keys_by_rider(path)
    # Updated rows keep their generated key; the merged-in row got one of the MERGE's write.
    assert after["rider-A"] == keys["rider-A"] and after["rider-B"] == keys["rider-B"]
    last = HudiTable.open(path).timeline.last_completed()
    assert last is not None and after["rider-D"].startswith(f"{last.timestamp}_")
    if kind == "mor":
        # hudi-rs refuses the expression blocks (never wrong rows) until a compaction folds
        # them into base files; the rows stay the same through it.
        with pytest.raises(Exception, match="Invalid metadata key"):
            rs_rows(path)
        session.sql(f"RUN COMPACTION ON keyless_{kind}")
        assert core_rows(path) == rows
    assert rs_rows(path) == rows


def test_keyless_ctas_and_a_keyless_delete_needs_stored_keys(session: HudiSession) -> None:
    session.sql("CREATE TABLE keyless_ctas USING hudi PARTITIONED BY (city) AS "
                "SELECT id AS ts, concat('u', id) AS uuid, 'r' AS rider, 1.5 AS fare, "
                "IF(id % 2 = 0, 'sf', 'la') AS city FROM range(10)")
    path = session.table("keyless_ctas").path
    rows = core_rows(path)
    assert len({r[0] for r in rows}) == 10
    assert rs_rows(path) == rows
    handle = session.table("keyless_ctas")
    df = session.spark.createDataFrame([(1, "u1", "r", 1.5, "la")],
                                       "ts long, uuid string, rider string, fare double, "
                                       "city string")
    from hudisql.errors import WriteError
    with pytest.raises(WriteError, match="is keyless"):
        handle.delete(df)
    assert core_rows(path) == rows
