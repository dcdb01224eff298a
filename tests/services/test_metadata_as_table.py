"""The metadata table reads as a table (issue 26): ``hudisql.read_table``,
``spark.read.format("hudi").load`` and SQL (``CREATE TABLE ... USING hudi LOCATION``) on
``<table>/.hoodie/metadata`` give every built partition's merged records, column-stats
unions as Spark's Avro reader shapes them (``member<i>`` structs), after writes, the
metadata table's compaction and its log compaction."""

from __future__ import annotations

import pytest

import hudisql
from hudisql.errors import ReadOptionError, UnsupportedFormatError
from hudisql.metadata.records import is_live
from hudisql.metadata.table import MetadataTable
from hudisql.session import HudiSession
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from tests.services.indexing import SELF_SERVICE_OPTIONS, trips

pytestmark = [pytest.mark.slow]

OPTIONS = SELF_SERVICE_OPTIONS

#: Record type of each partition: files (2, and 1 for the partition list), column_stats,
#: bloom_filters, record_index, partition_stats, secondary index.
TYPES = {"files": {1, 2}, "column_stats": {3}, "bloom_filters": {4}, "record_index": {5},
         "partition_stats": {6}, "secondary_index_idx_rider": {7}}


def test_every_metadata_partition_reads_as_a_table(session: HudiSession) -> None:
    handle = trips(session)
    session.sql("CREATE INDEX idx_rider ON trips (rider)")
    session.sql("CALL run_indexer(table => 'trips', mode => 'scheduleAndExecute', "
                "index_types => 'COLUMN_STATS,PARTITION_STATS,BLOOM_FILTERS')")
    for n in range(5):  # log records of every partition; the metadata table compacts
        rows = [("a", 10 + n, f"r{n}", 1.5 + n, "sf"), (f"n{n}", 10 + n, "r1", 2.5, "la")]
        writer = session.spark.createDataFrame(
            rows, "uuid string, ts long, rider string, fare double, city string"
        ).write.format("hudi").mode("append")
        for key, value in OPTIONS.items():
            writer = writer.option(key, value)
        writer.save(handle.path)
    data = HudiTable.open(handle.path)
    mdt = MetadataTable(data)
    timeline = mdt.timeline
    assert timeline.completed([Action.COMMIT])  # the metadata table compacted itself
    assert any(f.action == Action.LOGCOMPACTION for i in timeline.completed([Action.DELTACOMMIT])
               for f in timeline.instant_files(i.timestamp))  # and log-compacted itself
    path = f"{handle.path}/.hoodie/metadata"

    # Pure Python: one row per live key of every built partition, merged as readers merge.
    table = hudisql.read_table(path)
    by_partition: dict[str, set[int]] = {}
    for partition, kind in zip(table.column("_hoodie_partition_path").to_pylist(),
                               table.column("type").to_pylist(), strict=True):
        by_partition.setdefault(partition, set()).add(kind)
    assert by_partition == TYPES
    expected = {(p, k) for p in TYPES for k, r in mdt.read_partition(p).items() if is_live(r)}
    keys = list(zip(table.column("_hoodie_partition_path").to_pylist(),
                    table.column("key").to_pylist(), strict=True))
    assert len(keys) == len(expected) and set(keys) == expected
    # Column stats of a double column: its union member is DoubleWrapper (member4).
    stats = [r for r in table.select(["ColumnStatsMetadata"]).to_pylist()
             if r["ColumnStatsMetadata"] and r["ColumnStatsMetadata"]["columnName"] == "fare"]
    assert stats and all(set(m for m, v in s["ColumnStatsMetadata"]["minValue"].items() if v)
                         == {"member4"} for s in stats)
    # The files partition lists the live files of a data partition.
    files = {r["key"]: r["filesystemMetadata"] for r in table.to_pylist() if r["type"] == 2}
    assert all(files[p] and not any(info["isDeleted"] for _, info in files[p])
               for p in ("city=sf", "city=la", "city=nyc"))

    # Spark's data source and SQL on the path (an external table) read the same rows.
    frame = session.spark.read.format("hudi").load(path)
    assert sorted((r[0], r[1]) for r in frame.select("_hoodie_partition_path", "key")
                  .collect()) == sorted(keys)
    assert frame.schema["ColumnStatsMetadata"].dataType["minValue"].dataType.names[:2] == [
        "member0", "member1"]
    session.sql(f"CREATE TABLE trips_metadata USING hudi LOCATION '{path}'")
    counted = session.sql("SELECT type, count(*) AS n FROM trips_metadata GROUP BY type "
                          "ORDER BY type").collect()
    assert [r.type for r in counted] == [1, 2, 3, 4, 5, 6, 7]
    assert sum(r.n for r in counted) == len(keys)

    # What a metadata table does not answer is refused, naming it.
    with pytest.raises(ReadOptionError, match="is a metadata table: time travel"):
        hudisql.read_table(path, as_of=data.timeline.last_completed().timestamp)
    with pytest.raises(UnsupportedFormatError, match="is a metadata table"):
        HudiTable.open(path).read()
