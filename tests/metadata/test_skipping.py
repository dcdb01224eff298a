"""Data skipping with the metadata table's indexes: every slice holding a matching row is
kept (checked against a merged read of every slice), and each index actually prunes.

Tables are written with the pure-Python writer (5 records per file group, in key order,
so ``id`` and ``fare = 1.5 * i`` are clustered by file), indexed from scratch, then
changed through commits that keep the metadata table exact.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from hudisql.metadata.config import set_partition_state
from hudisql.metadata.skipping import parse_predicates, skip_file_slices
from hudisql.metadata.table import MetadataTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient
from tests.metadata.conftest import SCHEMA, row
from tests.metadata.skipping_helpers import (
    check_skipping,
    indexed_table,
    matching_slices,
    steps,
    writer,
)
from tests.metadata.test_build_validate import index_all

TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]


# ------------------------------------------------------------------ every index prunes


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize(("text", "kept", "index"), [
    ("id = 'k007'", 1, "record_index"),
    ("id IN ('k007', 'k031')", 2, "record_index"),
    ("`id` = 'k007' AND fare < 100", 1, "record_index"),
    ("id = 'k007' AND id = 'k008'", 0, "record_index"),  # no key satisfies both
    ("_hoodie_record_key IN ('k004', 'k005', 'k999')", 2, "record_index"),
    ("fare < 3", 1, "column_stats"),
    ("3 > fare", 1, "column_stats"),
    ("fare = 3", 1, "column_stats"),
    ("fare IN (0, 60)", 1, "column_stats"),
    ("id < 'k005'", 1, "column_stats"),
    ("id >= 'k035'", 1, "column_stats"),
    ("id BETWEEN 'k012' AND 'k013'", 1, "column_stats"),
    ("id LIKE 'k01%'", 2, "column_stats"),
    ("startswith(id, 'k03')", 2, "column_stats"),
    ("day = DATE '2024-01-05'", 3, "column_stats"),
    ("city IS NULL", 0, "column_stats"),
])
def test_each_index_prunes_and_keeps_every_match(
        tmp_path: Path, table_type: str, text: str, kept: int, index: str) -> None:
    table = indexed_table(tmp_path / "t", table_type)
    result, must = check_skipping(table, text)
    assert len(result.kept) == kept and result.total == 8
    assert steps(result)[index][1] < 8
    assert len(must) <= kept


@pytest.mark.parametrize("table_type", TYPES)
def test_partitioned_record_index_prunes_within_the_located_partition(
        tmp_path: Path, table_type: str) -> None:
    # The same key may live in several partitions (writes are not global): the record
    # index rules out only the other file groups of the partition it names.
    table = indexed_table(tmp_path / "t", table_type, partitioned=True)
    result, must = check_skipping(table, "id = 'k007'")
    assert steps(result)["record_index"] == (9, 7)
    assert steps(result)["bloom_filters"] == (7, 1) and len(must) == 1
    client = writer(table)
    copy = dict(row(7), city="sf")  # k007 also in partition sf
    client.upsert([copy])
    result, must = check_skipping(client.table, "id = 'k007'")
    assert len(must) == 2 and len(result.kept) == 2
    assert "secondary_index_idx_rider" not in steps(check_skipping(client.table,
                                                                   "rider = 'r1'")[0])


def test_partition_stats_prune_whole_partitions(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t", partitioned=True,
                          partitions=("files", "partition_stats", "column_stats"))
    result, must = check_skipping(table, "city = 'sf'")
    assert steps(result) == {"partition_stats": (9, 3), "column_stats": (3, 3)}
    assert len(must) == 3
    result, _ = check_skipping(table, "fare IN (0, 60)")
    assert steps(result)["partition_stats"] == (9, 3)
    # A partition with log files may hold values no file's statistics show (an expression
    # update's log), so its partition stats are not trusted; column stats decide there.
    client = writer(table)
    client.upsert([row(1, ts=2, fare=99.0)])  # k001: city la
    result, must = check_skipping(client.table, "city = 'sf'")
    assert steps(result) == {"partition_stats": (9, 6), "column_stats": (6, 3)}
    # IS NULL is not decided by partition stats (a file older than the column has nulls
    # its statistics do not count).
    result, _ = check_skipping(client.table, "rider IS NULL")
    assert "partition_stats" not in steps(result) and not result.kept


@pytest.mark.parametrize("table_type", TYPES)
def test_bloom_filters_rule_out_base_files_without_the_key(
        tmp_path: Path, table_type: str) -> None:
    table = indexed_table(tmp_path / "t", table_type, partitions=("files", "bloom_filters"))
    result, _ = check_skipping(table, "id IN ('k007', 'k031', 'nope')")
    assert steps(result) == {"bloom_filters": (8, 2)}
    client = writer(table)
    client.upsert([row(8, ts=2, fare=99.0)])  # k008's group gets a log file (MOR)
    result, must = check_skipping(client.table, "id = 'k009'")
    assert len(result.kept) == 1 and len(must) == 1
    result, _ = check_skipping(client.table, "id = 'k001'")
    # A slice with log files may hold keys its base file's bloom filter does not.
    assert len(result.kept) == (1 if table_type == "COPY_ON_WRITE" else 2)


def test_composite_key_uses_the_record_index_only_with_every_field(tmp_path: Path) -> None:
    table = create_table(tmp_path / "t", "trips", SCHEMA, ["id", "city"], "city", "ts")
    WriteClient(table, max_records_per_file=5).insert([row(i) for i in range(30)])
    table = index_all(table.reload(), ("files", "record_index", "column_stats"))
    result, must = check_skipping(table, "id = 'k007' AND city = 'la'")
    assert steps(result)["record_index"] == (6, 1) and len(must) == 1
    result, _ = check_skipping(table, "id = 'k007' AND city = 'sf'")  # no such record
    assert steps(result)["record_index"] == (6, 0)
    result, _ = check_skipping(table, "id = 'k007'")
    assert "record_index" not in steps(result) and len(result.kept) < 6


# ---------------------------------------------------------------- secondary index


def test_secondary_index_finds_the_file_groups_of_a_value(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t")
    client = writer(table)
    client.upsert([row(3, ts=2, rider="vip"), row(33, ts=2, rider="vip")])
    result, must = check_skipping(client.table, "rider = 'vip'")
    assert steps(result)["secondary_index_idx_rider"] == (8, 2) and len(must) == 2
    result, must = check_skipping(client.table, "rider IN ('vip', 'nobody')")
    assert len(result.kept) == 2
    # The value left k003: its old value no longer names k003's group alone.
    client.upsert([row(3, ts=3, rider="r3")])
    result, must = check_skipping(client.table, "rider = 'vip'")
    assert steps(result)["secondary_index_idx_rider"] == (8, 1) and len(must) == 1


# ------------------------------------------------------------ merge-on-read logs


def test_log_files_keep_their_slices_for_values_they_hold(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t", "MERGE_ON_READ")
    client = writer(table)
    # An update moves k001's fare far out of its base file's range, into a log file.
    client.upsert([row(1, ts=2, fare=1000.0)])
    result, must = check_skipping(client.table, "fare = 1000")
    assert len(result.kept) == 1 and len(must) == 1
    result, must = check_skipping(client.table, "fare < 3")
    assert len(result.kept) == 1  # the base file still says 0 and 1.5 (k000 stays)
    # A delete: the key leaves the record index, its slice holds a delete-only log file.
    client.delete(["k000", "k001"])
    result, must = check_skipping(client.table, "id = 'k001'")
    assert steps(result)["record_index"] == (8, 0) and not must
    # The delete-only log file has no column stats: its slice is kept.
    result, must = check_skipping(client.table, "fare < 3")
    assert len(result.kept) == 1 and not must
    # New keys land in new file groups; skipping finds them.
    client.upsert([row(100, ts=2, fare=500.0)])
    result, must = check_skipping(client.table, "id = 'k100' AND fare = 500")
    assert len(result.kept) == 1 and len(must) == 1


def test_null_tests_use_null_counts(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t", "MERGE_ON_READ", partitions=("files", "column_stats"))
    client = writer(table)
    client.upsert([{**row(12, ts=2), "rider": None}])
    result, must = check_skipping(client.table, "rider IS NULL")
    assert len(result.kept) == 1 and len(must) == 1
    result, _ = check_skipping(client.table, "rider IS NOT NULL")
    assert len(result.kept) == 8


# -------------------------------------------------------------- what prunes nothing


@pytest.mark.parametrize("text", [
    "id = 7",                        # a number against a string column
    "ts = 1.5",                      # not an integer
    "fare > 60",                     # doubles: NaN sorts above every number in Spark
    "fare = '3'",                    # a string against a double
    "id = 'k001' OR id = 'k002'",    # OR prunes nothing
    "lower(id) = 'k001'",            # a function of the column
    "nosuch = 1",                    # an unknown column
])
def test_predicates_that_prune_nothing(tmp_path: Path, text: str) -> None:
    table = indexed_table(tmp_path / "t", "COPY_ON_WRITE")
    result, _ = check_skipping(table, text)
    assert len(result.kept) == 8
    assert all(s.after == 8 for s in result.steps)


def test_column_names_resolve_case_insensitively(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t", "COPY_ON_WRITE")
    result, _ = check_skipping(table, "FARE < 3 AND Id = 'k001'")
    assert len(result.kept) == 1


@pytest.mark.metadata_stale
def test_a_file_without_stats_keeps_its_slice(tmp_path: Path) -> None:
    # apache/hudi#20296: Hudi dropped files the column stats index did not cover.
    table = indexed_table(tmp_path / "t", "COPY_ON_WRITE", partitions=("files",))
    slices = table.file_slices()
    # The slice of k000..k004 (file names are random: find it by its rows).
    (first_id,) = matching_slices(table, slices, parse_predicates("id = 'k000'"))
    first = next(s for s in slices if s.file_id == first_id)
    from hudisql.metadata.builders import build_partition_records

    records = [r for r in build_partition_records(table, "column_stats")
               if r["ColumnStatsMetadata"]["fileName"] != first.base_file.name]  # type: ignore
    mdt = MetadataTable(table)
    mdt.build_partition("column_stats", records, table.timeline.last_completed().timestamp, 2)
    table = set_partition_state(table, "column_stats", "completed")
    result, must = check_skipping(table, "id >= 'k035'")
    assert {s.file_id for s in result.kept} == must | {first.file_id}
    assert len(result.kept) == 2


def test_an_index_being_built_is_not_used(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t", "COPY_ON_WRITE")
    table = set_partition_state(table, "column_stats", "inflight")
    table = set_partition_state(table, "record_index", "inflight")
    result, _ = check_skipping(table, "fare < 3 AND id = 'k001'")
    assert "column_stats" not in steps(result) and "record_index" not in steps(result)
    table = set_partition_state(table, "column_stats", "completed")
    result, _ = check_skipping(table, "fare < 3 AND id = 'k001'")
    assert steps(result)["column_stats"][1] == 1


@pytest.mark.metadata_stale
def test_an_unreadable_index_prunes_nothing_and_says_why(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t", "COPY_ON_WRITE", partitions=("files", "column_stats"))
    folder = tmp_path / "t" / ".hoodie" / "metadata" / "column_stats"
    for base in folder.glob("*.hfile"):
        base.write_bytes(b"not an hfile")
    result = skip_file_slices(table, table.file_slices(), parse_predicates("fare < 3"))
    assert len(result.kept) == 8
    [step] = result.steps
    assert step.index == "column_stats" and step.after == 8 and "not used" in step.note


def test_tables_without_indexes_keep_everything(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t", partitions=())
    result, _ = check_skipping(table, "id = 'k001'")
    assert len(result.kept) == 8 and not result.steps


# ------------------------------------------------------------------------ as of


@pytest.mark.parametrize("table_type", TYPES)
def test_time_travel_uses_only_per_file_indexes(tmp_path: Path, table_type: str) -> None:
    table = indexed_table(tmp_path / "t", table_type)
    first = table.timeline.last_completed().timestamp
    client = writer(table)
    client.upsert([row(1, ts=2, fare=1000.0)])
    client.delete(["k007"])
    table = client.table
    # Latest snapshot: the record index runs.
    assert "record_index" in steps(check_skipping(table, "id = 'k001'")[0])
    # As of the first commit: the record index and partition stats describe today's table,
    # not that snapshot; column stats and bloom filters describe files, so they hold.
    result, must = check_skipping(table, "id = 'k007'", as_of=first)
    assert set(steps(result)) == {"bloom_filters", "column_stats"}
    assert len(result.kept) == 1 and len(must) == 1
    result, must = check_skipping(table, "fare = 1000", as_of=first)
    # Version 6's merge-on-read slices list the later log files (their blocks are left out
    # when read): the update's and the delete's (no stats) keep their slices; more is never
    # wrong. Versions 8/9 cut a slice at the snapshot's completion time: no later logs.
    later_logs = table_type != "COPY_ON_WRITE" and table.properties.version == 6
    assert len(result.kept) == (2 if later_logs else 0) and not must
    result, _ = check_skipping(table, "fare = 1000")
    assert len(result.kept) == (1 if table_type == "COPY_ON_WRITE" else 2)


@pytest.mark.parametrize("table_type", TYPES)
def test_a_column_null_in_a_whole_file_then_given_values(tmp_path: Path, table_type: str
                                                         ) -> None:
    # Found by the property test: its statistics read back without bounds (and without a
    # kind); merging them with a string range for partition stats failed the commit.
    table = create_table(tmp_path / "t", "trips", SCHEMA, "id", (), "ts", table_type)
    WriteClient(table, max_records_per_file=5).insert([{**row(i), "rider": None}
                                                       for i in range(10)])
    table = index_all(table.reload())
    client = writer(table)
    client.upsert([row(0, ts=2, rider="vip")])
    result, must = check_skipping(client.table, "rider = 'vip'")
    assert len(must) == 1 and len(result.kept) == 1


def test_timestamps_dates_and_decimals_compare_in_the_column_type(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()),
                        ("at", pa.timestamp("us", "UTC")), ("local", pa.timestamp("us")),
                        ("amount", pa.decimal128(10, 2))])
    start = dt.datetime(2024, 1, 1)
    table = create_table(tmp_path / "t", "events", schema, "id", (), "ts", "COPY_ON_WRITE")
    WriteClient(table, max_records_per_file=5).insert([
        {"id": f"e{i:02d}", "ts": 1, "at": (start + dt.timedelta(hours=i)).replace(
            tzinfo=dt.UTC), "local": start + dt.timedelta(hours=i),
         "amount": Decimal(i) / 4} for i in range(20)])
    table = index_all(table.reload(), ("files", "column_stats"))
    zoned = "at < TIMESTAMP '2024-01-01 03:00:00'"
    # Zone-less against a zoned column: decided only with the session's time zone.
    assert len(check_skipping(table, zoned)[0].kept) == 4
    assert len(check_skipping(table, zoned, time_zone="UTC")[0].kept) == 1
    assert len(check_skipping(table, zoned, time_zone="America/New_York")[0].kept) == 2
    assert len(check_skipping(
        table, "at >= TIMESTAMP '2024-01-01 15:00:00+00:00'")[0].kept) == 1
    assert len(check_skipping(table, "local < TIMESTAMP_NTZ '2024-01-01 03:00:00'")[0].kept) == 1
    assert len(check_skipping(table, "local >= '2024-01-01 15:00:00'")[0].kept) == 1
    assert len(check_skipping(table, "amount = 1.25")[0].kept) == 1  # e05
    assert len(check_skipping(table, "amount = 1.251")[0].kept) == 4  # not a decimal(10,2)
    assert len(check_skipping(table, "amount < 1")[0].kept) == 1


@pytest.mark.metadata_stale
def test_bloom_filters_still_run_when_the_record_index_cannot_be_read(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t", "COPY_ON_WRITE",
                          partitions=("files", "record_index", "bloom_filters"))
    for base in (tmp_path / "t" / ".hoodie" / "metadata" / "record_index").glob("*.hfile"):
        base.write_bytes(b"not an hfile")
    result = skip_file_slices(table, table.file_slices(), parse_predicates("id = 'k007'"))
    first, second = result.steps
    assert (first.index, first.after) == ("record_index", 8) and "not used" in first.note
    assert (second.index, second.before, second.after) == ("bloom_filters", 8, 1)


def test_a_damaged_index_definition_file_prunes_nothing(tmp_path: Path) -> None:
    table = indexed_table(tmp_path / "t", "COPY_ON_WRITE", partitions=("files", "column_stats"))
    definitions = tmp_path / "t" / ".hoodie" / ".index_defs" / "index.json"
    saved = definitions.read_bytes()  # written by the build (the secondary index's)
    definitions.write_text("{not json")
    try:
        result = skip_file_slices(table.reload(), table.file_slices(),
                                  parse_predicates("fare < 3"))
        assert len(result.kept) == 8
        [step] = result.steps
        assert step.after == 8 and "not used" in step.note and "index.json" in step.note
    finally:
        definitions.write_bytes(saved)  # the suite then validates the metadata table
