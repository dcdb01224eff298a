"""CREATE / DROP / SHOW / REFRESH INDEX and the indexing procedures on real tables: what is
built, that it is exact, and that every refused statement leaves every byte as it was."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from hudisql.errors import (
    HudiSqlError,
    IndexExistsError,
    IndexingError,
    IndexNotFoundError,
    LockError,
    SqlParseError,
    TableNotFoundError,
)
from hudisql.metadata.table import MetadataTable
from hudisql.services.indexes import TableIndexes
from hudisql.session import HudiSession
from hudisql.table.format.filenames import BaseFileName
from hudisql.table.format.index_plan import index_commit_metadata
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from hudisql.table.write.files import MARKER_DIR
from tests.services.indexing import assert_exact, snapshot, trips
from tests.write.trips import rs_rows


def _indexes(session: HudiSession) -> list[tuple[str, str, str, str]]:
    return [tuple(r) for r in session.sql("SHOW INDEXES FROM trips").collect()]


def test_create_index_builds_a_secondary_index_with_its_record_index(
        session: HudiSession) -> None:
    handle = trips(session)
    before = rs_rows(handle)
    seen: list[tuple[int, int]] = []
    session.index_progress = lambda done, total: seen.append((done, total))
    result = session.sql("CREATE INDEX idx_rider ON trips (rider)").collect()
    assert result == [Row(result=True, instant_time=None)]
    assert _indexes(session) == [
        ("record_index", "record_index", "", "built", "record_index"),
        ("idx_rider", "secondary_index", "rider", "built", "secondary_index_idx_rider"),
    ]
    table = HudiTable.open(handle.path)
    assert table.properties.metadata_partitions == [
        "files", "record_index", "secondary_index_idx_rider"]
    assert table.properties.metadata_partitions_inflight == []
    (done,) = table.timeline.completed([Action.INDEXING])
    assert index_commit_metadata(table.timeline, done).partitions == [
        "files", "record_index", "secondary_index_idx_rider"]
    assert seen and seen[-1][0] == seen[-1][1]  # progress ends at all units built
    mdt = MetadataTable(table)
    for partition in ("record_index", "secondary_index_idx_rider"):
        # Every file group has its base file: four keys leave most of the ten empty.
        names = [BaseFileName.parse(s.name) for s in mdt.storage.list_dir(partition)]
        assert sorted(n.file_id for n in names if n) == mdt.file_group_ids(partition)
        assert len(mdt.file_group_ids(partition)) == 10
    # The pieces the build's first job wrote for its second are gone.
    assert not [s.path for s in table.storage.list_recursive(MARKER_DIR)
                if "/index/" in s.path or s.path.endswith("/index")]
    assert_exact(handle.path)
    assert session.sql("CALL validate_metadata_table(table => 'trips')").collect() == []
    # The data table still reads row for row the same through hudi-rs.
    assert rs_rows(handle) == before


def test_several_index_types_build_in_one_run(session: HudiSession) -> None:
    handle = trips(session)
    (row,) = session.sql("CALL run_indexer(table => 'trips', mode => 'scheduleAndExecute', "
                         "index_types => 'COLUMN_STATS,RECORD_INDEX,PARTITION_STATS')").collect()
    table = HudiTable.open(handle.path)
    (done,) = table.timeline.completed([Action.INDEXING])
    assert row.instant_time == done.timestamp
    assert sorted(table.properties.metadata_partitions) == [
        "column_stats", "files", "partition_stats", "record_index"]
    assert_exact(handle.path)
    partitions = session.sql("CALL show_metadata_table_partitions(table => 'trips')").collect()
    assert sorted(r.partition for r in partitions) == ["city=la", "city=nyc", "city=sf"]
    files = session.sql("CALL show_metadata_table_files(table => 'trips', partition => 'city=sf')")
    assert {r.partition for r in files.collect()} == {"city=sf"}
    stats = session.sql("CALL show_metadata_table_column_stats(table => 'trips', "
                        "targetColumns => 'fare')").collect()
    assert sorted((r.min_value, r.max_value) for r in stats) == [
        ("27.7", "27.7"), ("5.0", "19.1"), ("8.5", "8.5")]


def test_schedule_then_execute_and_nothing_left_to_execute(session: HudiSession) -> None:
    handle = trips(session)
    (scheduled,) = session.sql("CALL run_indexer(table => 'trips', mode => 'schedule', "
                               "index_types => 'RECORD_INDEX')").collect()
    assert [r[:2] for r in _indexes(session)] == [("record_index", "record_index")]
    assert _indexes(session)[0][3] == "building"
    table = HudiTable.open(handle.path)
    assert table.properties.metadata_partitions_inflight == ["files", "record_index"]
    (executed,) = session.sql("CALL run_indexer(table => 'trips', mode => 'execute')").collect()
    assert executed.instant_time == scheduled.instant_time
    assert _indexes(session)[0][3] == "built"
    with pytest.raises(IndexingError, match="no pending indexing instant to execute"):
        session.sql("CALL run_indexer(table => 'trips', mode => 'execute')")
    assert_exact(handle.path)


def test_python_api_behind_every_statement(session: HudiSession) -> None:
    handle = trips(session)
    indexes = handle.indexes
    assert indexes.create("stats", ["fare", "ts"], using="column_stats") is not None
    assert indexes.create("stats", ["fare"], using="column_stats", if_not_exists=True) is None
    assert [(i.name, i.columns, i.partition) for i in indexes.list()] == [
        ("stats", ("fare", "ts"), "column_stats")]
    assert indexes.refresh("stats") is not None
    assert_exact(handle.path)
    assert indexes.drop("stats") is True
    assert indexes.drop("stats", if_exists=True) is False
    assert indexes.list() == []
    table = HudiTable.open(handle.path)
    assert table.properties.metadata_partitions == ["files"]


def test_indexes_are_listed_by_the_names_create_index_gave(session: HudiSession) -> None:
    handle = trips(session)
    session.sql("CREATE INDEX fare_stats ON trips USING column_stats (fare)")
    session.sql("CREATE INDEX keys_bloom ON trips USING bloom_filters (uuid)")
    session.sql("CREATE INDEX idx_rider ON trips (rider)")
    session.sql("CALL run_indexer(table => 'trips', mode => 'scheduleAndExecute', "
                "index_types => 'PARTITION_STATS')")
    listed = [
        ("fare_stats", "column_stats", "fare", "built", "column_stats"),
        ("idx_rider", "secondary_index", "rider", "built", "secondary_index_idx_rider"),
        ("keys_bloom", "bloom_filters", "uuid", "built", "bloom_filters"),
        ("partition_stats", "partition_stats", "", "built", "partition_stats"),
        ("record_index", "record_index", "", "built", "record_index"),
    ]
    assert sorted(_indexes(session)) == listed
    shown = session.sql("CALL show_indexes(table => 'trips')")
    assert shown.columns == ["index_name", "index_type", "col_name", "state",
                             "metadata_partition"]
    assert sorted(tuple(r) for r in shown.collect()) == listed
    hudi1x = HudiTable.open(handle.path).properties.version >= 8
    if hudi1x:
        # Versions 8/9 keep partition stats of the column stats' columns (Hudi 1.x): a
        # refresh of the column stats rebuilds them too.
        session.sql("REFRESH INDEX fare_stats ON trips")
        assert sorted(_indexes(session)) == listed
        assert_exact(handle.path)
    # DROP INDEX takes the name as given (and the partition, as before).
    session.sql("DROP INDEX fare_stats ON trips")
    session.sql("DROP INDEX secondary_index_idx_rider ON trips")
    # Versions 8/9: the partition stats went with the column stats they followed.
    assert [r[0] for r in sorted(_indexes(session))] == (
        ["keys_bloom", "record_index"] if hudi1x
        else ["keys_bloom", "partition_stats", "record_index"])
    if hudi1x:
        # Partition stats of the default columns; column stats of one column would change
        # them: refused, every byte kept.
        session.sql("CALL run_indexer(table => 'trips', mode => 'scheduleAndExecute', "
                    "index_types => 'PARTITION_STATS')")
        before = snapshot(handle.path)
        with pytest.raises(IndexingError, match="DROP INDEX partition_stats ON trips first"):
            session.sql("CREATE INDEX fare_stats ON trips USING column_stats (fare)")
        assert snapshot(handle.path) == before


def test_refresh_rebuilds_and_drop_removes(session: HudiSession) -> None:
    handle = trips(session)
    session.sql("CREATE INDEX record_index ON trips (uuid)")
    first = HudiTable.open(handle.path).timeline.completed([Action.INDEXING])
    session.sql("REFRESH INDEX record_index ON TABLE trips")
    table = HudiTable.open(handle.path)
    assert len(table.timeline.completed([Action.INDEXING])) == len(first) + 1
    assert_exact(handle.path)
    session.sql("DROP INDEX record_index ON trips")
    assert _indexes(session) == []
    assert not (HudiTable.open(handle.path).storage.exists(".hoodie/metadata/record_index"))
    session.sql("DROP INDEX IF EXISTS record_index ON trips")


# (statement, error class, fragments the message must hold)
BAD_INPUT: list[tuple[str, type[HudiSqlError], tuple[str, ...]]] = [
    ("CREATE INDEX idx ON trips (nope)", IndexingError,
     ("CREATE INDEX idx at line 1, column 1", "index idx on table trips",
      "column nope is not a column of the table")),
    ("CREATE INDEX idx ON trips USING hash (rider)", SqlParseError,
     ("line 1, column 33", "index idx on table trips", "unknown index type 'hash'")),
    ("CREATE INDEX idx_fare ON trips (rider)", IndexExistsError,
     ("CREATE INDEX idx_fare", "index idx_fare on table trips",
      "has index idx_fare already")),
    ("CREATE INDEX idx_fare ON trips USING column_stats (fare)", IndexExistsError,
     ("index idx_fare on table trips", "already")),
    ("CREATE INDEX record_index ON trips (uuid)", IndexExistsError,
     ("index record_index on table trips", "has index record_index already")),
    ("CREATE INDEX idx ON trips (uuid)", IndexingError,
     ("index idx on table trips", "name it record_index")),
    ("CREATE INDEX idx ON trips (uuid, rider)", IndexingError,
     ("mix record key fields and other columns",)),
    ("CREATE INDEX idx ON trips (rider, fare)", IndexingError,
     ("a secondary index covers exactly one column",)),
    ("CREATE INDEX idx ON trips USING bloom_filters (rider) OPTIONS (expr = 'split', "
     "pattern = ',')", IndexingError,
     ("index idx on table trips: hudisql does not build expression indexes on split",)),
    ("DROP INDEX nope ON trips", IndexNotFoundError,
     ("DROP INDEX nope at line 1, column 1", "table trips has no index nope",
      "SHOW INDEXES FROM trips")),
    ("REFRESH INDEX nope ON trips", IndexNotFoundError, ("REFRESH INDEX nope", "no index nope")),
    ("CREATE INDEX idx ON plain (a)", TableNotFoundError,
     ("CREATE INDEX idx at line 1, column 1", "default.plain is not a hudi table")),
    ("CREATE INDEX idx ON nosuch (a)", TableNotFoundError, ("default.nosuch",)),
    ("SELECT 1;\nDROP INDEX nope ON trips", IndexNotFoundError,
     ("DROP INDEX nope at line 2, column 1",)),
    # Expression and bloom filter indexes
    ("CREATE INDEX idx ON trips USING column_stats (ts) OPTIONS (expr = 'nope')",
     SqlParseError, ("index idx on table trips", "unknown expression function 'nope'")),
    ("CREATE INDEX idx ON trips USING hash (ts) OPTIONS (expr = 'lower')", SqlParseError,
     ("index idx on table trips", "unknown index type 'hash'")),
    ("CREATE INDEX idx ON trips USING bloom_filters (nope) OPTIONS (expr = 'lower')",
     IndexingError, ("CREATE INDEX idx at line 1, column 1", "index idx on table trips",
                     "column nope is not a column of the table")),
    ("CREATE INDEX idx ON trips USING column_stats (rider) OPTIONS (expr = 'regexp_replace', "
     "pattern = 'a', replacement = 'b')", IndexingError,
     ("CREATE INDEX idx at line 1", "index idx on table trips",
      "does not build expression indexes on regexp_replace")),
    ("CREATE INDEX idx ON trips USING column_stats (ts) OPTIONS (expr = 'lower')",
     IndexingError, ("index idx on table trips", "lower does not apply to column ts")),
    ("CREATE INDEX idx ON trips USING column_stats (rider) OPTIONS (expr = 'substring')",
     IndexingError, ("index idx on table trips", "substring needs option(s) len, pos")),
    ("CREATE INDEX idx ON trips USING bloom_filters (rider, city)", IndexingError,
     ("index idx on table trips", "covers exactly one column")),
]


@pytest.mark.parametrize(("sql", "error", "fragments"), BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
def test_bad_input_is_refused_and_leaves_every_byte(
        indexed_trips: HudiSession, sql: str, error: type[HudiSqlError],
        fragments: tuple[str, ...]) -> None:
    session = indexed_trips
    path = session.table("trips").path
    before = snapshot(path)
    with pytest.raises(error) as caught:
        session.sql_script(sql)
    for fragment in fragments:
        assert fragment in str(caught.value)
    # The table, its metadata table, hoodie.properties and index.json: byte for byte.
    assert snapshot(path) == before


def test_the_indexer_refuses_without_a_lock_and_changes_nothing(session: HudiSession) -> None:
    handle = trips(session)
    before = snapshot(handle.path)
    options = {k: v for k, v in session.options.items() if k != "hoodie.write.lock.provider"}
    with pytest.raises(LockError, match=r"set hoodie\.write\.lock\.provider=file"):
        TableIndexes(handle.path, options, session.spark).create("idx", ["rider"])
    assert snapshot(handle.path) == before


def test_footer_only_partitions_build_the_same_on_the_driver_as_in_spark(
        session: HudiSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small table's files, column stats and partition stats are built on the driver
    (no Spark job); a table over the size limit gets them from Spark jobs: the records are
    the same, and both validate."""
    from hudisql.services import index_build

    handle = trips(session)
    session.sql("INSERT INTO trips VALUES (9, 'a', 'r9', 1.5, 'sf')")  # a log file
    built: dict[str, dict[str, object]] = {}
    jobs: list[int] = []
    for name in ("stage_rows", "_run_together"):  # the two-job and the one-job builds
        job = getattr(index_build, name)
        monkeypatch.setattr(index_build, name, lambda *a, job=job: jobs.append(1) or job(*a))
    for limit in (index_build.DRIVER_BUILD_MAX_SLICES, 0):
        monkeypatch.setattr(index_build, "DRIVER_BUILD_MAX_SLICES", limit)
        jobs.clear()
        session.sql("CALL run_indexer(table => 'trips', mode => 'scheduleAndExecute', "
                    "index_types => 'COLUMN_STATS,PARTITION_STATS')").collect()
        assert bool(jobs) == (limit == 0)  # a Spark job only over the limit
        assert_exact(handle.path)
        mdt = MetadataTable(HudiTable.open(handle.path))
        built[str(limit)] = {p: mdt.read_partition(p)
                             for p in ("files", "column_stats", "partition_stats")}
        for index_type in ("column_stats", "partition_stats", "files"):
            session.sql(f"CALL run_indexer(table => 'trips', mode => 'dropindex', "
                        f"index_types => '{index_type}')").collect()
    driver, spark = built.values()
    assert driver == spark and driver["column_stats"]


def _build_ri_and_si(session: HudiSession) -> dict[str, dict[str, dict[str, object]]]:
    """Create the record index and a secondary index on trips; their records (validated)."""
    session.sql("CREATE INDEX record_index ON trips (uuid)")
    session.sql("CREATE INDEX idx_rider ON trips (rider)")
    handle = session.table("trips")
    assert_exact(handle.path)
    mdt = MetadataTable(HudiTable.open(handle.path))
    built = {p: mdt.read_partition(p) for p in ("record_index", "secondary_index_idx_rider")}
    session.sql("DROP INDEX idx_rider ON trips")
    session.sql("DROP INDEX record_index ON trips")
    return built


def test_one_job_and_two_job_builds_write_the_same_records(
        session: HudiSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small build runs as one Spark job whose tasks claim units, then file groups; over
    ONE_JOB_MAX_UNITS it runs as two jobs. Both write the same records, and both validate."""
    from hudisql.services import index_build

    trips(session)
    session.sql("INSERT INTO trips VALUES (9, 'e', 'r9', 1.5, 'sf')")  # a log file
    ran: list[str] = []
    for name in ("stage_rows", "_run_together"):
        job = getattr(index_build, name)
        monkeypatch.setattr(index_build, name,
                            lambda *a, job=job, name=name: ran.append(name) or job(*a))
    one = _build_ri_and_si(session)
    assert set(ran) == {"_run_together"}
    ran.clear()
    monkeypatch.setattr(index_build, "ONE_JOB_MAX_UNITS", 0)
    two = _build_ri_and_si(session)
    assert set(ran) == {"stage_rows"}
    assert one == two and one["record_index"] and one["secondary_index_idx_rider"]


def test_a_one_job_build_waiting_in_vain_is_finished_by_two_jobs(
        session: HudiSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit claimed by a task that died is never staged: the one-job tasks give up after
    ONE_JOB_PATIENCE and write nothing; the driver stages the units left (only those) and
    writes every file group as two jobs. A unit staged by an earlier attempt is kept (the
    task that claims it again reads the staged pieces). The records equal a normal build's."""
    from hudisql.services import index_build, index_tasks

    trips(session)
    expected = _build_ri_and_si(session)
    together = index_build._run_together
    staged: list[list[int]] = []
    stage = index_build.stage_rows

    def stale(spark, table, staging, units, targets, counts, *rest):  # type: ignore[no-untyped-def]
        table.storage.makedirs(staging)
        table.storage.create_if_absent(f"{staging}/u0000000.claim", b"")  # claimer died
        index_tasks.stage_unit(table, staging, 1, units[1], targets, counts, rest[0])
        found = together(spark, table, staging, units, targets, counts, *rest)
        assert found == []  # every task gave up
        return found

    def fallback(path, staging, units, chosen, *rest):  # type: ignore[no-untyped-def]
        staged.append(list(chosen))
        return stage(path, staging, units, chosen, *rest)

    monkeypatch.setattr(index_build, "ONE_JOB_PATIENCE", 0.5)
    monkeypatch.setattr(index_build, "_run_together", stale)
    monkeypatch.setattr(index_build, "stage_rows", fallback)
    assert _build_ri_and_si(session) == expected
    assert staged == [[0], [0]]  # per index: only the unit the dead task had claimed
