"""Spark writes let the metadata table compact itself with the writer's options (issue 14,
item 6): ``df.write`` upserts on a table with a record index, a secondary index and column
stats, with ``hoodie.metadata.compact.max.delta.commits`` and
``hoodie.metadata.log.compaction.enable`` among the write options; the metadata table
compacts and log-compacts itself, stays exact, and hudi-rs reads the data table as hudisql
does."""

from __future__ import annotations

from hudisql.metadata.table import MetadataTable
from hudisql.session import HudiSession
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from tests.services.indexing import SELF_SERVICE_OPTIONS, assert_exact, trips
from tests.write.trips import rs_rows, spark_rows

OPTIONS = SELF_SERVICE_OPTIONS


def test_spark_writes_compact_the_metadata_table_with_their_options(
    session: HudiSession,
) -> None:
    handle = trips(session)
    session.sql("CREATE INDEX idx_rider ON trips (rider)")
    session.sql("CREATE INDEX stats ON trips USING column_stats (fare, ts, rider)")
    for n in range(6):
        rows = [("a", 10 + n, f"r{n}", 1.5 + n, "sf"), (f"n{n}", 10 + n, "r1", 2.5, "la")]
        writer = session.spark.createDataFrame(
            rows, "uuid string, ts long, rider string, fare double, city string"
        ).write.format("hudi").mode("append")
        for key, value in OPTIONS.items():
            writer = writer.option(key, value)
        writer.save(handle.path)
        assert_exact(handle.path)
    mdt = MetadataTable(HudiTable.open(handle.path))
    timeline = mdt.timeline
    compactions = [i.timestamp for i in timeline.completed([Action.COMMIT])]
    log_compactions = [i.timestamp for i in timeline.completed([Action.DELTACOMMIT])
                       if any(f.action == Action.LOGCOMPACTION
                              for f in timeline.instant_files(i.timestamp))]
    assert compactions and log_compactions
    data = HudiTable.open(handle.path)
    timeline_times = [i.timestamp for i in timeline.completed()]
    if data.properties.version < 8:
        # Version 6: at the data instant they follow, suffixed as Hudi 0.x does.
        assert all(c.endswith("001") for c in compactions)
        assert all(c.endswith("005") for c in log_compactions)
    else:
        # Versions 8/9 (Hudi 1.x): fresh 17-digit instant times of their own (no data
        # instant's), after data deltacommits, naming the files they write.
        data_times = {i.timestamp for i in data.timeline.instants}
        for service in compactions + log_compactions:
            assert len(service) == 17 and service.isdigit() and service not in data_times
            assert any(t in data_times for t in timeline_times if t < service)
            paths = [s.path for s in timeline.commit_metadata(service).write_stats()]
            assert paths and all(f"_{service}." in p for p in paths)
    assert rs_rows(handle) == spark_rows(handle)
    assert session.sql("CALL validate_metadata_table(table => 'trips')").collect() == []
