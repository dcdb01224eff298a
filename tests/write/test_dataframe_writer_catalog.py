"""``df.write.format("hudi").save(path)`` to a catalog table's location: a managed table's
commit runs inside a catalog write id that a second catalog instance (another session's
view) sees, a refused write aborts its write id, and other paths are written as before."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import hudisql
from hudisql.catalog import SqlCatalog, ValidWriteIdList
from hudisql.catalog.catalog import normalize_location
from hudisql.errors import WriteError
from hudisql.session import HudiSession
from hudisql.table import HudiTable
from tests.write.trips import crash_when_written, frame

Row = tuple[str, int, str, float, str]
SEED: list[Row] = [("a", 1, "ann", 10.0, "sf"), ("b", 1, "bob", 20.0, "la")]
CREATE = ("CREATE TABLE {} (uuid STRING, ts BIGINT, rider STRING, fare DOUBLE, city STRING) "
          "USING hudi PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'uuid', "
          "preCombineField = 'ts', type = 'mor')")
OPTIONS = {"hoodie.table.name": "plain", "hoodie.datasource.write.recordkey.field": "uuid",
           "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.partitionpath.field": "city"}


def save(session: HudiSession, rows: list[Row], path: str, **options: str) -> None:
    frame(session, rows).write.format("hudi").mode("append").options(**options).save(path)


def rows_at(session: HudiSession, path: str) -> list[Row]:
    df = session.spark.read.format("hudi").load(path)
    return sorted(tuple(r) for r in df.select("uuid", "ts", "rider", "fare", "city").collect())


def write_ids(catalog: SqlCatalog, name: str) -> ValidWriteIdList:
    found = catalog.begin_statement([name]).get(name).valid_write_ids
    assert found is not None
    return found


def last_completed(path: str) -> str | None:
    completed = HudiTable.open(path).timeline.completed()
    return completed[-1].timestamp if completed else None


def commits(path: str) -> list[str]:
    """The completed write instants of the table (rollbacks left out)."""
    return [i.timestamp for i in HudiTable.open(path).timeline.completed() if i.is_write]


@pytest.mark.spark
def test_a_save_to_a_managed_tables_location_commits_inside_a_write_id(
    managed: tuple[HudiSession, SqlCatalog],
) -> None:
    session, theirs = managed
    session.sql(CREATE.format("dfw_m"))
    cached = theirs.load_table("dfw_m")  # their cache now holds the entry before the writes
    location = cached.location
    start = write_ids(theirs, "dfw_m")

    save(session, SEED, location)
    after = write_ids(theirs, "dfw_m")
    assert (after.high_watermark, after.aborted_ids) == (start.high_watermark + 1, ())
    fresh = theirs.load_table("dfw_m")  # not the cached entry: its write ids moved on
    assert fresh.timeline.last_completed == last_completed(location) is not None
    assert fresh.timeline.completed == cached.timeline.completed + 1
    assert theirs.stats().refreshes >= 1

    # The same location spelled otherwise is the same catalog table.
    spelled = "file://" + os.path.join(location, "..", os.path.basename(location)) + "/"
    save(session, [("c", 1, "cid", 30.0, "sf")], spelled)
    assert write_ids(theirs, "dfw_m").high_watermark == start.high_watermark + 2
    assert theirs.load_table("dfw_m").timeline.last_completed == last_completed(location)
    expected = [*SEED, ("c", 1, "cid", 30.0, "sf")]
    assert rows_at(session, location) == sorted(expected)
    assert sorted(tuple(r) for r in session.sql(
        "SELECT uuid, ts, rider, fare, city FROM dfw_m").collect()) == sorted(expected)


@pytest.mark.spark
def test_a_refused_save_aborts_its_write_id_and_leaves_the_table_unchanged(
    managed: tuple[HudiSession, SqlCatalog],
) -> None:
    session, theirs = managed
    session.sql(CREATE.format("dfw_r"))
    location = theirs.load_table("dfw_r").location
    save(session, SEED, location)
    before_rows, before_commits = rows_at(session, location), commits(location)
    before_entry = theirs.load_table("dfw_r")
    start = write_ids(theirs, "dfw_r").high_watermark

    # Options that contradict the table: refused before any write id is allocated.
    with pytest.raises(WriteError, match="recordkey"):
        save(session, SEED, location, **{"hoodie.datasource.write.recordkey.field": "rider"})
    ids = write_ids(theirs, "dfw_r")
    assert (ids.high_watermark, ids.open_ids, ids.aborted_ids) == (start, (), ())

    # Records that do not fit (an insert of existing keys): the write id is aborted.
    with pytest.raises(WriteError):
        save(session, SEED, location, **{"hoodie.datasource.write.operation": "insert"})
    ids = write_ids(theirs, "dfw_r")
    assert (ids.high_watermark, ids.aborted_ids) == (start + 1, (start + 1,))

    # A failure after the files are written: rolled back, the write id aborted.
    with crash_when_written(session):
        save(session, [("a", 2, "ann", 99.0, "sf")], location)
    ids = write_ids(theirs, "dfw_r")
    assert (ids.high_watermark, ids.aborted_ids) == (start + 2, (start + 1, start + 2))
    assert not ids.open_ids and ids.last_committed() == start
    assert rows_at(session, location) == before_rows
    assert commits(location) == before_commits and not HudiTable.open(
        location).timeline.pending()
    assert theirs.load_table("dfw_r").timeline == before_entry.timeline


@pytest.mark.spark
def test_a_save_to_a_path_outside_the_catalog_writes_as_before(
    managed: tuple[HudiSession, SqlCatalog], tmp_path: Path,
) -> None:
    session, theirs = managed
    session.sql(CREATE.format("dfw_o"))
    head = theirs.store.head_event_id()
    path = str(tmp_path / "plain")

    save(session, SEED, path, **OPTIONS)  # creates the table, then upserts
    save(session, [("a", 2, "ann", 11.0, "sf")], path)
    assert rows_at(session, path) == sorted([("a", 2, "ann", 11.0, "sf"), SEED[1]])
    assert len(HudiTable.open(path).timeline.completed()) == 2
    assert theirs.store.head_event_id() == head  # the catalog was not changed at all
    assert theirs.tables_at(path) == []


@pytest.mark.spark
def test_a_save_to_an_external_tables_location_takes_no_write_id(
    managed: tuple[HudiSession, SqlCatalog], tmp_path: Path,
) -> None:
    session, theirs = managed
    path = str(tmp_path / "ext")
    save(session, SEED, path, **OPTIONS)
    session.sql(f"CREATE TABLE dfw_x USING hudi LOCATION '{path}'")
    registered = theirs.load_table("dfw_x")
    assert registered.external
    head = theirs.store.head_event_id()

    save(session, [("c", 1, "cid", 30.0, "sf")], path)
    # Nothing in the catalog moved for the write; the next load reads the new timeline.
    assert theirs.store.head_event_id() == head
    assert registered.timeline.last_completed != last_completed(path)
    assert theirs.load_table("dfw_x").timeline.last_completed == last_completed(path)


@pytest.mark.spark
def test_a_save_takes_the_sessions_default_options_under_its_own(
        spark: Any, tmp_path: Path) -> None:
    """``connect(conf={"hoodie...": ...})`` defaults apply to ``df.write`` as to the session's
    other writes (the newest live session over the SparkSession), the save's own options
    winning; once the session is closed they no longer apply."""
    session = hudisql.connect(spark, warehouse=tmp_path / "wh",
                              conf={"hoodie.parquet.compression.codec": "zstd"})
    try:
        save(session, SEED, str(tmp_path / "by_default"), **OPTIONS)
        save(session, SEED, str(tmp_path / "own"),
             **{**OPTIONS, "hoodie.parquet.compression.codec": "snappy"})
    finally:
        session.close()
    save(session, SEED, str(tmp_path / "closed"), **OPTIONS)
    assert codecs(tmp_path / "by_default") == {"ZSTD"}
    assert codecs(tmp_path / "own") == {"SNAPPY"}
    assert codecs(tmp_path / "closed") == {"GZIP"}
    assert session.spark.range(1).count() == 1, "close() leaves Spark running"


def codecs(path: Path) -> set[str]:
    return {pq.ParquetFile(f).metadata.row_group(0).column(0).compression
            for f in path.rglob("*.parquet")}


def test_tables_at_compares_locations_however_they_are_spelled(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/catalog.db"
    with SqlCatalog("c", uri=url, warehouse=str(tmp_path / "wh"), poll_interval=0) as catalog:
        loc = str(tmp_path / "wh" / "t")
        catalog.create_table("t", location=loc)
        catalog.create_table("u", location="file://" + str(tmp_path / "wh" / "u w"))
        catalog.create_table("s3t", location="s3://bucket/tables/t/")
        relative = os.path.relpath(loc)
        for spelling in (loc, loc + "/", "file:" + loc, "file://" + loc, "file:///" + loc[1:],
                         "file://localhost" + loc, relative, loc + "/../t"):
            assert [str(e.name) for e in catalog.tables_at(spelling)] == ["default.t"], spelling
        spaced = "file:" + str(tmp_path / "wh" / "u%20w")
        assert [str(e.name) for e in catalog.tables_at(spaced)] == ["default.u"]
        assert [e.managed for e in catalog.tables_at("s3://bucket/tables/t")] == [True]
        for other in (loc + "x", str(tmp_path / "wh"), loc + "/sub", "s3://bucket/tables"):
            assert catalog.tables_at(other) == [], other


@pytest.mark.parametrize(("spelling", "expected"), [
    ("/a/b", "/a/b"), ("/a/b/", "/a/b"), ("/a/./c/../b", "/a/b"), ("file:/a/b", "/a/b"),
    ("file:///a/b/", "/a/b"), ("file://localhost/a/b", "/a/b"), ("file:/a/b%20c", "/a/b c"),
    ("s3://bkt/a/b/", "s3://bkt/a/b"), ("gs://bkt/a", "gs://bkt/a"),
])
def test_normalize_location(spelling: str, expected: str) -> None:
    assert normalize_location(spelling) == expected
