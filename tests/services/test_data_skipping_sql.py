"""``CALL show_data_skipping`` and ``handle.data_skipping``: what each index prunes."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from hudisql.errors import SqlParseError
from hudisql.metadata.keys import partition_stats_key
from hudisql.metadata.records import column_range
from hudisql.metadata.table import MetadataTable
from hudisql.session import HudiSession
from hudisql.table.table import HudiTable
from tests.services.indexing import assert_exact, trips


def test_show_data_skipping_reports_each_index_and_the_totals(session: HudiSession) -> None:
    handle = trips(session)  # three partitions, one file slice each
    session.sql("CALL run_indexer(table => 'trips', mode => 'scheduleAndExecute', "
                "index_types => 'COLUMN_STATS,RECORD_INDEX,PARTITION_STATS')").collect()
    rows = session.sql(
        "CALL show_data_skipping(table => 'trips', filter => \"fare < 6\")").collect()
    assert rows == [
        Row(index_name="partition_stats", file_slices_before=3, file_slices_after=1, skipped=2,
            note=None),
        Row(index_name="column_stats", file_slices_before=1, file_slices_after=1, skipped=0,
            note=None),
        Row(index_name="total", file_slices_before=3, file_slices_after=1, skipped=2, note=None),
    ]
    # The record key: the record index keeps d's file group (and, since one key may live
    # in several partitions, the other partitions' slices); column stats rule those out.
    rows = session.sql(f"CALL show_data_skipping(path => '{handle.path}', "
                       "filter => \"uuid = 'd'\")").collect()
    assert [(r.index_name, r.file_slices_before, r.file_slices_after) for r in rows] == [
        ("record_index", 3, 3), ("partition_stats", 3, 1), ("column_stats", 1, 1),
        ("total", 3, 1)]
    (total,) = session.sql("CALL show_data_skipping(table => 'trips', "
                           "filter => \"lower(rider) = 'x'\")").collect()
    assert (total.index_name, total.file_slices_after, total.note) == (
        "total", 3, "no index applies to this filter")
    # The Python door gives the same figures.
    result = handle.data_skipping("fare < 6")
    assert (result.total, len(result.kept)) == (3, 1)
    assert [s.index for s in result.steps] == ["partition_stats", "column_stats"]
    assert {s.partition_path for s in result.kept} == {"city=sf"}
    # With skipping switched off (SET in Spark), the totals say reads skip nothing.
    session.spark.conf.set("hoodie.enable.data.skipping", "false")
    try:
        *_, total = session.sql(
            "CALL show_data_skipping(table => 'trips', filter => 'fare < 6')").collect()
        assert total.file_slices_after == 1 and "reads skip nothing" in total.note
    finally:
        session.spark.conf.unset("hoodie.enable.data.skipping")
    with pytest.raises(SqlParseError, match="not a SQL predicate"):
        handle.data_skipping("fare <")
    with pytest.raises(SqlParseError, match="line 1, column 53"):
        session.sql("CALL show_data_skipping(table => 'trips', filter => 'fare <')")
    assert_exact(handle.path)


def test_an_expression_update_keeps_its_partition(session: HudiSession) -> None:
    # UPDATE ... SET ts = ts + 100 on merge-on-read writes operands, not values: no file's
    # statistics hold the new ts, so neither column stats nor partition stats may rule
    # out the slice (partition stats of a partition with log files are not trusted).
    handle = trips(session)
    session.sql("CALL run_indexer(table => 'trips', mode => 'scheduleAndExecute', "
                "index_types => 'COLUMN_STATS,PARTITION_STATS')").collect()
    session.sql("UPDATE trips SET ts = ts + 100 WHERE uuid = 'c'").collect()
    matching = {r.city for r in session.sql("SELECT city FROM trips WHERE ts > 50").collect()}
    assert matching == {"sf"}
    # The partition's stats do not show the new value: trusting them would drop sf.
    table = HudiTable.open(handle.path)
    (record,) = MetadataTable(table).read_partition(
        "partition_stats", keys=[partition_stats_key("ts", "city=sf")]).values()
    assert column_range(record).max_value < 50
    result = handle.data_skipping("ts > 50")
    assert {s.partition_path for s in result.kept} == {"city=sf"}
    # Partition stats rule out la and nyc (no log files there) and leave sf to column stats.
    assert [(s.index, s.before, s.after) for s in result.steps] == [
        ("partition_stats", 3, 1), ("column_stats", 1, 1)]
    assert_exact(handle.path)
