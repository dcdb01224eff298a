"""Time travel and incremental queries in SQL: ``TIMESTAMP AS OF`` and ``hudi_table_changes``.

Results are checked against the table core's pure-Python reads (``hudisql.read_table``),
which ``tests/table/test_incremental.py`` checks against hudi-rs. The tables are version 9:
incremental ranges are by completion time (:func:`completions`), time travel by instant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

import hudisql
from hudisql.errors import ReadOptionError, TableNotFoundError
from hudisql.session import HudiSession
from hudisql.table import HudiTable
from hudisql.txn.writer import WriteClient, create_table
from tests.fixtures import table_path

pytestmark = pytest.mark.spark

CREATE = ("CREATE TABLE {name} (id INT, name STRING, ts BIGINT, part STRING) USING hudi "
          "PARTITIONED BY (part) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', "
          "type = '{kind}')")


def names(frame: Any) -> dict[int, str]:
    return {r.id: r.name for r in frame.collect()}


def core_names(path: Path, **kwargs: Any) -> dict[int, str]:
    return {r["id"]: r["name"] for r in hudisql.read_table(str(path), **kwargs).to_pylist()}


def commits(path: Path) -> list[str]:
    return [i.timestamp for i in HudiTable.open(str(path)).timeline.completed()]


def completions(path: Path) -> list[str]:
    """The completion times of the completed instants: where incremental ranges end."""
    return [i.completion_time or i.timestamp
            for i in HudiTable.open(str(path)).timeline.completed()]


@pytest.fixture(params=["MERGE_ON_READ", "COPY_ON_WRITE"])
def trips(request: pytest.FixtureRequest, session: HudiSession, tmp_path: Path) -> Path:
    """Catalog table ``trips`` with an insert, an update and a delete (three commits),
    written by the table core (fast) and registered by LOCATION."""
    path = tmp_path / "trips"
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("ts", pa.int64()),
                        ("part", pa.string())])
    create_table(str(path), "trips", schema, "id", "part", "ts", request.param)
    client = WriteClient(HudiTable.open(str(path)))
    client.insert(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "name": ["a", "b", "c"],
                            "ts": [1, 1, 1], "part": ["p", "p", "q"]}, schema=schema))
    client.upsert(pa.table({"id": pa.array([2], pa.int32()), "name": ["B"], "ts": [2],
                            "part": ["p"]}, schema=schema))
    client.delete(["3"])
    session.sql(f"CREATE TABLE trips USING hudi LOCATION '{path}'")
    return path


def test_timestamp_as_of_an_instant(session: HudiSession, trips: Path) -> None:
    first, second, _ = commits(trips)
    got = session.sql(f"SELECT id, name FROM trips TIMESTAMP AS OF '{first}'")
    assert names(got) == {1: "a", 2: "b", 3: "c"} == core_names(trips, as_of=first)
    oracle = pa.Table.from_batches(hudi.HudiTable(str(trips)).read(
        hudi.HudiReadOptions().with_as_of_timestamp(first)))
    assert names(got) == dict(zip(oracle.column("id").to_pylist(),
                                  oracle.column("name").to_pylist(), strict=True))
    aliased = session.sql(
        f"SELECT x.id, x.name FROM trips TIMESTAMP AS OF '{second}' AS x WHERE x.id > 1")
    assert names(aliased) == {2: "B", 3: "c"}
    version = session.sql(f"SELECT id, name FROM default.trips VERSION AS OF {second} t")
    assert names(version) == core_names(trips, as_of=second)
    assert names(session.sql("SELECT id, name FROM trips")) == {1: "a", 2: "B"}


def test_timestamp_as_of_a_time_string(session: HudiSession, trips: Path) -> None:
    first = commits(trips)[0]
    dashed = (f"{first[:4]}-{first[4:6]}-{first[6:8]} {first[8:10]}:{first[10:12]}:"
              f"{first[12:14]}.{first[14:]}")
    got = session.sql(f"SELECT id, name FROM trips TIMESTAMP AS OF '{dashed}'")
    assert names(got) == core_names(trips, as_of=first)
    day = session.sql(f"SELECT id FROM trips TIMESTAMP AS OF '{dashed[:10]}'")
    assert day.count() == 0  # a date alone is the start of that day, before the first commit
    joined = session.sql(
        f"SELECT now.id, old.name AS name FROM trips AS now JOIN trips FOR SYSTEM_TIME AS OF "
        f"'{dashed}' old ON now.id = old.id")
    assert names(joined) == {1: "a", 2: "b"}


def test_timestamp_as_of_on_a_fixture_table(session: HudiSession) -> None:
    path = table_path("v6_trips_8i1u")
    session.sql(f"CREATE TABLE fixture_trips USING hudi LOCATION '{path}'")
    got = session.sql("SELECT rider, fare FROM fixture_trips TIMESTAMP AS OF "
                      "'20250331030642808' WHERE rider = 'rider-D'")
    assert [r.fare for r in got.collect()] == [pytest.approx(33.9)]


def test_timestamp_as_of_bad_input(session: HudiSession, trips: Path) -> None:
    with pytest.raises(ReadOptionError, match=r"line 1, column \d+: .*no instant "
                                              r"29990101000000000 on the timeline"):
        session.sql("SELECT * FROM trips TIMESTAMP AS OF '29990101000000000'")
    with pytest.raises(ReadOptionError, match="is not an instant time"):
        session.sql("SELECT * FROM trips TIMESTAMP AS OF 'last tuesday'")
    with pytest.raises(ReadOptionError, match="takes a literal"):
        session.sql("SELECT * FROM trips TIMESTAMP AS OF current_timestamp()")


def test_table_changes_latest_state(session: HudiSession, trips: Path) -> None:
    first, second, third = completions(trips)
    inserted = commits(trips)[0]
    got = session.sql(
        f"SELECT id, name FROM hudi_table_changes('trips', 'latest_state', '{first}')")
    assert names(got) == {2: "B"}
    everything = session.sql(
        "SELECT id, name, _hoodie_commit_time FROM "
        f"hudi_table_changes('default.trips', 'latest_state', 'earliest', '{first}') c "
        "ORDER BY c.id")
    assert [(r.id, r.name, r._hoodie_commit_time) for r in everything.collect()] == [
        (1, "a", inserted), (2, "b", inserted), (3, "c", inserted)]
    by_path = session.sql(
        f"SELECT id, name FROM hudi_table_changes('{trips}', 'latest_state', '{second}')")
    assert names(by_path) == {}
    expected = core_names(trips, query_type="incremental", begin=first, end=third)
    assert names(session.sql(
        f"SELECT * FROM hudi_table_changes('trips', 'LATEST_STATE', '{first}', '{third}')"
    )) == expected


def test_table_changes_cdc(session: HudiSession, trips: Path) -> None:
    first, second, third = commits(trips)
    done = completions(trips)
    got = session.sql(
        "SELECT op, ts_ms, before, after FROM hudi_table_changes('trips', 'cdc', 'earliest') "
        "ORDER BY ts_ms, op")
    changes = [(r.op, r.ts_ms, json.loads(r.before or r.after)["id"]) for r in got.collect()]
    assert changes == [("i", first, 1), ("i", first, 2), ("i", first, 3), ("u", second, 2),
                       ("d", third, 3)]
    update = session.sql(
        f"SELECT before, after FROM hudi_table_changes('trips', 'cdc', '{done[0]}', '{done[1]}')"
    ).collect()
    assert [json.loads(r.before)["name"] for r in update] == ["b"]
    assert [json.loads(r.after)["name"] for r in update] == ["B"]


def test_table_changes_bad_input(session: HudiSession, trips: Path) -> None:
    first, _, third = completions(trips)
    with pytest.raises(ReadOptionError, match="swap them"):
        session.sql(f"SELECT * FROM hudi_table_changes('trips', 'cdc', '{third}', '{first}')")
    with pytest.raises(ReadOptionError, match="query type 'snapshot' is unknown"):
        session.sql("SELECT * FROM hudi_table_changes('trips', 'snapshot', 'earliest')")
    with pytest.raises(ReadOptionError, match="given 2 arguments"):
        session.sql("SELECT * FROM hudi_table_changes('trips', 'cdc')")
    between = next(t for t in (str(int(first) + n) for n in range(1, 100))
                   if t not in commits(trips) + completions(trips))
    with pytest.raises(ReadOptionError, match=f"line 2, column 3: .*no instant {between}"):
        session.sql(f"SELECT * FROM\n  hudi_table_changes('trips', 'cdc', '{between}')")
    with pytest.raises(TableNotFoundError, match="nothing_here is not a hudi table"):
        session.sql("SELECT * FROM hudi_table_changes('nothing_here', 'cdc', 'earliest')")


def test_incremental_etl_into_another_hudi_table(session: HudiSession, trips: Path) -> None:
    first = commits(trips)[0]
    session.sql(CREATE.format(name="trips_copy", kind="cow"))
    session.sql("INSERT INTO trips_copy SELECT id, name, ts, part FROM "
                f"hudi_table_changes('trips', 'latest_state', '{completions(trips)[0]}')")
    session.sql("INSERT INTO trips_copy SELECT id, name, ts, part FROM trips "
                f"TIMESTAMP AS OF '{first}' WHERE id = 3")
    assert names(session.sql("SELECT id, name FROM trips_copy")) == {2: "B", 3: "c"}


def test_time_travel_on_other_tables_is_spark_business(session: HudiSession) -> None:
    session.sql("CREATE TABLE plain_parquet (id INT) USING parquet")
    try:
        with pytest.raises(AnalysisException) as excinfo:
            session.sql("SELECT * FROM plain_parquet TIMESTAMP AS OF '2025-01-01 00:00:00'")
        assert "hudi_read_" not in str(excinfo.value)  # Spark saw the statement as typed
        assert "plain_parquet" in str(excinfo.value)
    finally:
        session.spark.sql("DROP TABLE plain_parquet")


def test_catalog_table_options_take_an_incremental_query(session: HudiSession,
                                                         trips: Path) -> None:
    first = completions(trips)[0]
    got = session.sql(
        "SELECT id, name FROM trips WITH ('hoodie.datasource.query.type' = 'incremental', "
        f"'hoodie.datasource.read.begin.instanttime' = '{first}')")
    assert names(got) == {2: "B"}
    with pytest.raises(AnalysisException, match="hudi_table_changes"):
        session.sql(
            "SELECT * FROM trips WITH ('hoodie.datasource.query.type' = 'incremental', "
            "'hoodie.datasource.query.incremental.format' = 'cdc', "
            "'hoodie.datasource.read.begin.instanttime' = 'earliest')").collect()


def test_timestamp_as_of_stays_before_a_pending_write(session: HudiSession, trips: Path) -> None:
    def crash(event: str, _: str) -> None:
        if event == "validating":
            raise RuntimeError("injected crash")

    third = commits(trips)[-1]
    schema = HudiTable.open(str(trips)).schema
    with pytest.raises(RuntimeError):
        WriteClient(HudiTable.open(str(trips)), on_step=crash).upsert(pa.table(
            {"id": pa.array([1], pa.int32()), "name": ["x"], "ts": [9], "part": ["p"]},
            schema=pa.schema([schema.field(n) for n in ("id", "name", "ts", "part")])))
    assert names(session.sql(f"SELECT id, name FROM trips TIMESTAMP AS OF '{third}'")) == {
        1: "a", 2: "B"}
    with pytest.raises(ReadOptionError, match="first pending write"):
        session.sql("SELECT * FROM trips TIMESTAMP AS OF '2999-01-01 00:00:00'")
