"""SQL DML on hudi tables: the same results as the Python write API, and a failing statement
leaves the table as it was."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame

from hudisql.errors import WriteError
from hudisql.session import HudiSession
from hudisql.table import HudiTable
from hudisql.txn.writer import WriteClient

pytestmark = pytest.mark.spark

CREATE = ("CREATE TABLE {name} (id INT, name STRING, ts BIGINT, part STRING) USING hudi "
          "PARTITIONED BY (part) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', "
          "type = '{kind}')")
COLUMNS = ["id", "name", "ts", "part"]


def data(path: Path | str) -> list[tuple[object, ...]]:
    """The table's rows (data columns), sorted, read by the table core."""
    table = HudiTable.open(str(path)).read(columns=COLUMNS)
    return sorted(tuple(r[c] for c in COLUMNS) for r in table.to_pylist())


def batch(rows: list[tuple[int, str, int, str]]) -> pa.Table:
    ids, names, ts, parts = zip(*rows, strict=True)
    return pa.table({"id": pa.array(ids, pa.int32()), "name": list(names),
                     "ts": pa.array(ts, pa.int64()), "part": list(parts)})


@pytest.mark.parametrize("kind", ["mor", "cow"])
def test_sql_dml_matches_the_python_and_dataframe_write_apis(
    session: HudiSession, tmp_path: Path, kind: str
) -> None:
    sql_name, api_name = f"dml_sql_{kind}", f"dml_api_{kind}"
    session.sql(CREATE.format(name=sql_name, kind=kind))
    session.sql(CREATE.format(name=api_name, kind=kind))
    warehouse = tmp_path / "warehouse"
    api = WriteClient(HudiTable.open(str(warehouse / api_name)))

    counts = [r[0] for r in [
        session.sql(f"INSERT INTO {sql_name} VALUES (1, 'a', 1, 'p'), (2, 'b', 1, 'p'), "
                    "(3, 'c', 1, 'q')").collect()[0],
        session.sql(f"INSERT INTO {sql_name} PARTITION (part = 'q') (name, id, ts) "
                    "SELECT 'd', 4, 1").collect()[0],
        session.sql(f"UPDATE {sql_name} SET name = upper(name), ts = ts + 1 "
                    "WHERE part = 'p'").collect()[0],
        session.sql(f"DELETE FROM {sql_name} WHERE id = 3").collect()[0],
        session.sql(
            f"MERGE INTO {sql_name} AS t USING (SELECT 1 AS id, 'm' AS name, 9L AS ts, "
            "'p' AS part UNION ALL SELECT 4, 'gone', 9, 'q' UNION ALL SELECT 5, 'e', 9, 'q') "
            "AS s ON t.id = s.id WHEN MATCHED AND s.name = 'gone' THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET name = s.name, ts = s.ts "
            "WHEN NOT MATCHED THEN INSERT *").collect()[0],
    ]]
    assert counts == [3, 1, 2, 1, 3]

    api.upsert(batch([(1, "a", 1, "p"), (2, "b", 1, "p"), (3, "c", 1, "q")]))
    api.upsert(batch([(4, "d", 1, "q")]))
    api.upsert(batch([(1, "A", 2, "p"), (2, "B", 2, "p")]))
    api.delete(batch([(3, "c", 1, "q")]).select(["id", "part"]))
    api.upsert(batch([(1, "m", 9, "p"), (5, "e", 9, "q")]))
    api.delete(batch([(4, "d", 1, "q")]).select(["id", "part"]))

    # The same changes through the Spark DataFrame API (HudiTableHandle, one commit each).
    frames_name = f"dml_frames_{kind}"
    session.sql(CREATE.format(name=frames_name, kind=kind))
    handle = session.table(frames_name)

    def frame(rows: list[tuple[int, str, int, str]]) -> DataFrame:
        return session.spark.createDataFrame(rows, "id INT, name STRING, ts BIGINT, part STRING")

    handle.insert(frame([(1, "a", 1, "p"), (2, "b", 1, "p"), (3, "c", 1, "q")]))
    handle.upsert(frame([(4, "d", 1, "q")]))
    handle.upsert(frame([(1, "A", 2, "p"), (2, "B", 2, "p")]))
    handle.delete(frame([(3, "c", 1, "q")]))
    handle.upsert(frame([(1, "m", 9, "p"), (5, "e", 9, "q")]).unionByName(
        frame([(4, "d", 1, "q")]).selectExpr("*", "true AS _hoodie_is_deleted"),
        allowMissingColumns=True))

    expected = [(1, "m", 9, "p"), (2, "B", 2, "p"), (5, "e", 9, "q")]
    assert data(warehouse / sql_name) == data(warehouse / api_name) == expected
    assert data(warehouse / frames_name) == expected
    shown = session.sql(f"SELECT id, name, ts, part FROM {sql_name} ORDER BY id").collect()
    assert [tuple(r) for r in shown] == expected
    assert session.sql(f"DELETE FROM {sql_name}").collect()[0][0] == 3
    assert data(warehouse / sql_name) == []


class Crash(Exception):
    """An injected failure."""


def test_a_failing_statement_leaves_the_table_as_it_was(
    session: HudiSession, tmp_path: Path
) -> None:
    session.sql(CREATE.format(name="dml_fail", kind="mor"))
    session.sql("INSERT INTO dml_fail VALUES (1, 'a', 1, 'p'), (2, 'b', 1, 'q')")
    path = tmp_path / "warehouse" / "dml_fail"
    before = data(path)
    write_ids = str(session.catalog.begin_statement(["dml_fail"]).get("dml_fail").valid_write_ids)

    def crash(event: str, detail: str) -> None:
        if event == "written":  # files written, the commit not yet completed
            raise Crash(detail)

    session.router.on_write_step = crash  # type: ignore[union-attr]
    try:
        with pytest.raises(Crash):
            session.sql("UPDATE dml_fail SET name = 'x' WHERE id = 1")
        with pytest.raises(Crash):
            session.sql("MERGE INTO dml_fail USING (SELECT 3 AS id, 'c' AS name, 1L AS ts, "
                        "'q' AS part) s ON dml_fail.id = s.id WHEN NOT MATCHED THEN INSERT *")
    finally:
        session.router.on_write_step = None  # type: ignore[union-attr]
    with pytest.raises(WriteError, match="record key or partition column"):
        session.sql("UPDATE dml_fail SET id = 5 WHERE id = 1")
    with pytest.raises(PySparkException):
        session.sql("INSERT INTO dml_fail VALUES (CAST('x' AS INT), 'a', 1, 'p')")
    with pytest.raises(WriteError, match="query gives 2 columns but 4 are expected"):
        session.sql("INSERT OVERWRITE dml_fail SELECT 9, 'z'")
    with pytest.raises(WriteError, match="query gives 2 columns but 4 are expected"):
        session.sql("INSERT INTO dml_fail SELECT 9, 'z'")

    assert data(path) == before
    table = HudiTable.open(str(path))
    assert table.timeline.pending() == []  # the crashed writes were rolled back
    assert [i.action for i in table.timeline.instants].count("rollback") == 2
    # Each crashed write's write id was aborted: the catalog's list names them.
    after = session.catalog.begin_statement(["dml_fail"]).get("dml_fail").valid_write_ids
    assert after is not None and str(after) != write_ids
    assert len(after.aborted_ids) == 2


def _commits(path: Path) -> list[str]:
    timeline = HudiTable.open(str(path)).timeline
    return [i.action for i in timeline.completed() if i.action != "rollback"]


@pytest.mark.parametrize("kind", ["mor", "cow"])
def test_insert_overwrite_replaces_as_spark_means_and_merge_is_one_commit(
    session: HudiSession, tmp_path: Path, kind: str
) -> None:
    name = f"dml_over_{kind}"
    path = tmp_path / "warehouse" / name
    session.sql(CREATE.format(name=name, kind=kind))
    session.sql(f"INSERT INTO {name} VALUES (1, 'a', 1, 'p'), (2, 'b', 1, 'p'), (3, 'c', 1, 'q')")

    # A PARTITION clause replaces that partition only.
    session.sql(f"INSERT OVERWRITE {name} PARTITION (part = 'p') SELECT 7, 'x', 1")
    assert data(path) == [(3, "c", 1, "q"), (7, "x", 1, "p")]
    assert _commits(path)[-1] == "replacecommit"

    # A MERGE that updates, deletes and inserts is one commit.
    before = len(_commits(path))
    session.sql(
        f"MERGE INTO {name} AS t USING (SELECT 7 AS id, 'y' AS name, 2L AS ts, 'p' AS part "
        "UNION ALL SELECT 3, 'gone', 2, 'q' UNION ALL SELECT 9, 'n', 2, 'q') AS s "
        "ON t.id = s.id WHEN MATCHED AND s.name = 'gone' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET name = s.name, ts = s.ts WHEN NOT MATCHED THEN INSERT *")
    assert data(path) == [(7, "y", 2, "p"), (9, "n", 2, "q")]
    assert len(_commits(path)) == before + 1

    # Without a PARTITION clause (Spark's static overwrite mode) the whole table is replaced.
    session.sql(f"INSERT OVERWRITE {name} SELECT 8, 'z', 3, 'q'")
    assert data(path) == [(8, "z", 3, "q")]
    # An overwrite with no rows still empties what it overwrites.
    session.sql(f"INSERT OVERWRITE {name} SELECT id, name, ts, part FROM {name} WHERE false")
    assert data(path) == []
    assert set(_commits(path)[-2:]) == {"replacecommit"}
    # Rolling back the latest overwrite (a completed replacecommit) brings its rows back.
    latest = HudiTable.open(str(path)).timeline.last_completed()
    assert latest is not None and latest.action == "replacecommit"
    session.sql(f"CALL rollback_to_instant(table => '{name}', "
                f"instant_time => '{latest.timestamp}')").collect()
    assert data(path) == [(8, "z", 3, "q")]
