"""Expression indexes and bloom filter indexes through SQL (issue 12): created, shown,
refreshed and dropped; their records as Hudi lays them out; kept exact by every kind of
commit on merge-on-read and copy-on-write tables. Their bad input is in test_indexes.py
(refused, every byte kept)."""

from __future__ import annotations

import json
from pathlib import Path

from hudisql.metadata.bloom import BloomFilter
from hudisql.metadata.keys import bloom_filter_key, column_stats_key
from hudisql.metadata.records import column_range
from hudisql.metadata.table import MetadataTable
from hudisql.metadata.validate import validate_metadata_table
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.table import HudiTable
from tests.services.indexing import TRIPS, trips
from tests.write.trips import rs_rows, spark_rows

DAY = "expr_index_idx_day"
LOWER = "expr_index_idx_lower"
EXPRESSIONS = [
    "CREATE INDEX idx_day ON trips USING column_stats (ts) "
    "OPTIONS (expr = 'from_unixtime', format = 'yyyy-MM-dd')",
    "CREATE INDEX idx_lower ON trips USING bloom_filters (rider) OPTIONS (expr = 'lower')",
    "CREATE INDEX idx_keys ON trips USING bloom_filters (uuid)",
]
ALL = ["bloom_filters", DAY, LOWER, "files"]


def _indexed(session: HudiSession) -> HudiTableHandle:
    handle = trips(session)
    for statement in EXPRESSIONS:
        session.sql(statement)
    return handle


def _exact(handle: HudiTableHandle) -> None:
    """Every partition validates (none skipped), and hudi-rs reads what Spark reads."""
    result = validate_metadata_table(HudiTable.open(handle.path))
    assert result.ok, str(result)
    assert not result.skipped
    assert sorted(result.partitions) == ALL
    assert rs_rows(handle) == spark_rows(handle)


def _base_file(handle: HudiTableHandle, partition: str) -> Path:
    (found,) = [p for p in Path(handle.path, partition).glob("*.parquet")]
    return found


def test_create_show_and_the_records_hudi_lays_out(session: HudiSession) -> None:
    handle = trips(session)
    before = rs_rows(handle)
    for statement in EXPRESSIONS:
        assert session.sql(statement).collect()[0].result is True
    shown = sorted(tuple(r) for r in session.sql("SHOW INDEXES IN trips").collect())
    assert shown == [("idx_day", "column_stats", "ts", "built", DAY),
                     ("idx_keys", "bloom_filters", "uuid", "built", "bloom_filters"),
                     ("idx_lower", "bloom_filters", "rider", "built", LOWER)]
    table = HudiTable.open(handle.path)
    assert sorted(table.properties.metadata_partitions) == ALL
    # index.json as Hudi 1.x writes it: the function is ``expr``, the options kept whole;
    # the index version Hudi 1.1 gives expression indexes of the table's version (none on
    # version 6, V1 on 8, V2 on 9 whatever the index type: HoodieIndexVersion).
    defs = json.loads(Path(handle.path, ".hoodie/.index_defs/index.json").read_text())
    version = {6: {}, 8: {"version": "V1"}, 9: {"version": "V2"}}[table.properties.version]
    assert defs["indexDefinitions"][DAY] == {
        "indexName": DAY, "indexType": "column_stats", "indexFunction": "from_unixtime",
        "sourceFields": ["ts"], "indexOptions": {"expr": "from_unixtime",
                                                 "format": "yyyy-MM-dd"}, **version}
    assert defs["indexDefinitions"][LOWER]["indexFunction"] == "lower"
    assert defs["indexDefinitions"][LOWER].get("version") == version.get("version")
    mdt = MetadataTable(table)
    assert sorted(mdt.file_group_ids(DAY)) == ["expr-index-idx-day-0000-0",
                                               "expr-index-idx-day-0001-0"]
    # Column stats of the expression's values, keyed as column_stats keys the source column.
    sf = _base_file(handle, "city=sf")
    day = mdt.read_partition(DAY)
    record = day[column_stats_key("ts", "city=sf", sf.name)]
    assert record["type"] == 3
    found = column_range(record)
    assert (found.column, found.kind, found.min_value, found.max_value) == (
        "ts", "string", "1970-01-01", "1970-01-01")
    assert (found.value_count, found.null_count, found.total_size) == (2, 0, sf.stat().st_size)
    # A bloom filter of lower(rider) per file, keyed as bloom_filters keys.
    blooms = mdt.read_partition(LOWER)
    meta = blooms[bloom_filter_key("city=sf", sf.name)]["BloomFilterMetadata"]
    bloom = BloomFilter.deserialize(meta["bloomFilter"], meta["type"])
    assert bloom.might_contain("r1") and not bloom.might_contain("R1")
    # The table's own bloom filters partition: the record keys of each base file.
    keys = mdt.read_partition("bloom_filters")[bloom_filter_key("city=sf", sf.name)]
    key_bloom = BloomFilter.deserialize(keys["BloomFilterMetadata"]["bloomFilter"])
    assert key_bloom.might_contain("a") and key_bloom.might_contain("c")
    _exact(handle)
    assert rs_rows(handle) == before


def test_refresh_and_drop(session: HudiSession) -> None:
    handle = _indexed(session)
    session.sql("INSERT INTO trips VALUES (86400, 'e', 'R5', 1.0, 'la')")
    session.sql("REFRESH INDEX idx_day ON trips")
    session.sql("REFRESH INDEX idx_keys ON trips")
    _exact(handle)
    session.sql("DROP INDEX idx_day ON trips")
    session.sql("DROP INDEX idx_lower ON trips")
    session.sql("DROP INDEX idx_keys ON trips")
    assert session.sql("SHOW INDEXES FROM trips").collect() == []
    table = HudiTable.open(handle.path)
    assert table.properties.metadata_partitions == ["files"]
    defs = json.loads(Path(handle.path, ".hoodie/.index_defs/index.json").read_text())
    assert defs["indexDefinitions"] == {}
    assert not Path(handle.path, ".hoodie/metadata", DAY).exists()


def _writes(session: HudiSession, handle: HudiTableHandle) -> None:
    """Inserts, upserts, deletes and DML, each followed by the exact check."""
    session.sql("INSERT INTO trips VALUES (172800, 'e', 'MiXeD', 3.5, 'sf'), "
                "(5, 'f', 'R6', 4.5, 'nyc')")
    _exact(handle)
    session.sql("UPDATE trips SET ts = 259200, rider = 'UP' WHERE uuid = 'a'")
    _exact(handle)
    session.sql("DELETE FROM trips WHERE uuid = 'b'")
    _exact(handle)
    session.sql("""MERGE INTO trips t USING (SELECT 'c' AS uuid, 999999 AS ts, 'Mx' AS rider,
                   1.0 AS fare, 'sf' AS city UNION ALL SELECT 'g', 7, 'new', 2.0, 'la') s
                   ON t.uuid = s.uuid WHEN MATCHED THEN UPDATE SET *
                   WHEN NOT MATCHED THEN INSERT *""")
    _exact(handle)
    upsert = session.spark.createDataFrame(
        [(1_000_000_000, "d", "Zed", 8.5, "nyc"), (8, "h", "h", 1.5, "sf")],
        "ts long, uuid string, rider string, fare double, city string")
    handle.upsert(upsert)
    _exact(handle)


def test_every_commit_keeps_them_exact_on_merge_on_read(session: HudiSession) -> None:
    handle = _indexed(session)
    _writes(session, handle)
    (row,) = session.sql("RUN COMPACTION ON trips").collect()
    assert row["state"] == "COMPLETED"
    _exact(handle)
    (cleaned,) = session.sql("CALL run_clean(table => 'trips', options => "
                             "'hoodie.cleaner.commits.retained=1')").collect()
    assert cleaned["total_files_deleted"] > 0
    _exact(handle)
    session.sql("INSERT OVERWRITE trips SELECT 1, 'z', 'Over', 1.0, 'sf'")
    _exact(handle)


def test_every_commit_keeps_them_exact_on_copy_on_write(session: HudiSession) -> None:
    session.sql(TRIPS.replace("type = 'mor'", "type = 'cow'"))
    session.sql("INSERT INTO trips VALUES (1, 'a', 'r1', 19.1, 'sf'), (2, 'b', 'r2', 27.7, 'la'),"
                " (3, 'c', 'r1', 5.0, 'sf'), (4, 'd', 'r3', 8.5, 'nyc')")
    for statement in EXPRESSIONS:
        session.sql(statement)
    handle = session.table("trips")
    _writes(session, handle)
    (cleaned,) = session.sql("CALL run_clean(table => 'trips', options => "
                             "'hoodie.cleaner.commits.retained=1')").collect()
    assert cleaned["total_files_deleted"] > 0
    _exact(handle)


def test_run_indexer_builds_bloom_filters(session: HudiSession) -> None:
    handle = trips(session)
    session.sql("CALL run_indexer(table => 'trips', mode => 'scheduleAndExecute', "
                "index_types => 'BLOOM_FILTERS')")
    table = HudiTable.open(handle.path)
    assert sorted(table.properties.metadata_partitions) == ["bloom_filters", "files"]
    session.sql("INSERT INTO trips VALUES (9, 'q', 'r9', 1.0, 'la')")
    result = validate_metadata_table(HudiTable.open(handle.path))
    assert result.ok and "bloom_filters" in result.partitions, str(result)
    blooms = MetadataTable(HudiTable.open(handle.path)).read_partition("bloom_filters")
    bases = [p for p in Path(handle.path).glob("city=*/*.parquet")]
    assert len(bases) >= 3
    assert all(bloom_filter_key(p.parent.name, p.name) in blooms for p in bases)
