"""A user's session keeps its time zone (issue 26): ``hudisql.connect(spark)`` leaves
``spark.sql.session.timeZone`` as the user set it, timestamps stay instants, and time travel
by an instant (UTC) or by a time (read in the session's zone) reads the right rows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from zoneinfo import ZoneInfo

import pytest
from pyspark.sql import SparkSession

import hudisql
from hudisql.session import HudiSession
from hudisql.table import HudiTable

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ZONE = "spark.sql.session.timeZone"
LOS_ANGELES = "America/Los_Angeles"


@pytest.fixture
def los_angeles(spark: SparkSession) -> Iterator[SparkSession]:
    """The shared session with the user's time zone, put back afterwards."""
    before = spark.conf.get(ZONE)
    spark.conf.set(ZONE, LOS_ANGELES)
    yield spark
    spark.conf.set(ZONE, before)


def _local_time(instant: str) -> str:
    """The instant's moment as a wall-clock time in Los Angeles (``yyyy-MM-dd HH:mm:ss.SSS``)."""
    moment = dt.datetime.strptime(instant, "%Y%m%d%H%M%S%f").replace(tzinfo=dt.UTC)
    local = moment.astimezone(ZoneInfo(LOS_ANGELES))
    return local.strftime("%Y-%m-%d %H:%M:%S.") + f"{local.microsecond // 1000:03d}"


def test_a_users_time_zone_is_kept_and_time_travel_reads_the_right_rows(
        los_angeles: SparkSession, make_session: Callable[[], HudiSession]) -> None:
    session = make_session()  # hudisql.connect(spark, ...) on the user's session
    assert los_angeles.conf.get(ZONE) == LOS_ANGELES
    session.sql("CREATE TABLE tz_trips (id INT, name STRING, at TIMESTAMP, ts BIGINT) USING hudi "
                "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor')")
    session.sql("INSERT INTO tz_trips VALUES (1, 'a', TIMESTAMP '2024-01-01 10:00:00', 1), "
                "(2, 'x', TIMESTAMP '2024-07-01 10:00:00', 1)")
    path = session.table("tz_trips").path
    first = HudiTable.open(path).timeline.last_completed().timestamp
    session.sql("UPDATE tz_trips SET name = 'b' WHERE at = TIMESTAMP '2024-01-01 10:00:00'")
    second = HudiTable.open(path).timeline.last_completed().timestamp
    assert los_angeles.conf.get(ZONE) == LOS_ANGELES

    # A timestamp is an instant: 10:00 in Los Angeles is 18:00 (winter) / 17:00 UTC.
    shown = session.sql("SELECT id, name, date_format(at, 'yyyy-MM-dd HH:mm') AS at "
                        "FROM tz_trips ORDER BY id").collect()
    assert [tuple(r) for r in shown] == [(1, "b", "2024-01-01 10:00"),
                                         (2, "x", "2024-07-01 10:00")]
    stored = {r["id"]: r["at"] for r in hudisql.read_table(path).to_pylist()}
    assert stored == {1: dt.datetime(2024, 1, 1, 18, tzinfo=dt.UTC),
                      2: dt.datetime(2024, 7, 1, 17, tzinfo=dt.UTC)}

    def name_as_of(literal: str) -> str:
        (row,) = session.sql(f"SELECT name FROM tz_trips TIMESTAMP AS OF '{literal}' "
                             "WHERE id = 1").collect()
        return str(row.name)

    # Instant times are UTC; a time is read in the session's zone, as Spark reads one.
    assert (name_as_of(first), name_as_of(second)) == ("a", "b")
    assert (name_as_of(_local_time(first)), name_as_of(_local_time(second))) == ("a", "b")
