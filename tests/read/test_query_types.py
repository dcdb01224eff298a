"""Hudi's query types on ``spark.read.format("hudi")`` and the table handle's ``read``.

``read_optimized`` is checked against hudi-rs's read-optimized mode; ``incremental``
(latest state and CDC) against the table core's pure-Python answer, which
``tests/table/test_incremental.py`` checks against hudi-rs and the written history.
"""

from __future__ import annotations

from typing import Any

import hudi
import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame

import hudisql
from hudisql.session import HudiSession
from hudisql.table.read.cdc import read_cdc
from hudisql.table.read.incremental import read_incremental
from tests.fixtures import table_path
from tests.read.test_datasource import rows, spark_rows
from tests.table.test_incremental import TABLE_TYPES, History, fares, make_history

pytestmark = pytest.mark.spark

QUERY = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"
FORMAT = "hoodie.datasource.query.incremental.format"


@pytest.fixture(scope="module", params=TABLE_TYPES)
def history(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> History:
    return make_history(tmp_path_factory.mktemp("history"), request.param)


def load(session: HudiSession, path: str, **options: str) -> DataFrame:
    reader = session.spark.read.format("hudi")
    for key, value in options.items():
        reader = reader.option(key.replace("_", "."), value)
    return reader.load(path)


def incremental(session: HudiSession, path: str, begin: str, end: str | None = None,
                fmt: str | None = None) -> DataFrame:
    reader = session.spark.read.format("hudi").option(QUERY, "incremental").option(BEGIN, begin)
    if end is not None:
        reader = reader.option(END, end)
    if fmt is not None:
        reader = reader.option(FORMAT, fmt)
    return reader.load(path)


@pytest.mark.parametrize("name", ["v6_trips_8i3d", "v6_trips_8i1u", "v6_nonpartitioned"])
def test_read_optimized_reads_base_files_only_as_hudi_rs(hudi_session: HudiSession,
                                                         name: str) -> None:
    path = str(table_path(name))
    got = load(hudi_session, path, **{QUERY: "read_optimized"}).toArrow()
    options = hudi.HudiReadOptions().with_hudi_option("hoodie.read.use.read_optimized.mode",
                                                      "true")
    oracle = pa.Table.from_batches(hudi.HudiTable(path).read(options))
    key = "_hoodie_record_key"
    assert sorted(got.column(key).to_pylist()) == sorted(oracle.column(key).to_pylist())
    if name == "v6_trips_8i3d":  # three deletes sit in log files: read-optimized ignores them
        assert got.num_rows == 8 and hudisql.read_table(path).num_rows == 5


def test_read_optimized_merge_on_read_ignores_log_updates(hudi_session: HudiSession,
                                                          history: History) -> None:
    got = fares(load(hudi_session, history.path, **{QUERY: "read_optimized"}).toArrow())
    options = hudi.HudiReadOptions().with_hudi_option("hoodie.read.use.read_optimized.mode",
                                                      "true")
    assert got == fares(pa.Table.from_batches(hudi.HudiTable(history.path).read(options)))
    assert got == fares(hudisql.read_table(history.path, query_type="read_optimized"))
    if "merge_on_read" in history.path:  # the updates went to log files: not read
        assert got["k00"] == 0.0 and got["k10"] == 10.0
    else:
        assert got == fares(hudisql.read_table(history.path))


def test_incremental_latest_state_matches_the_core(hudi_session: HudiSession,
                                                   history: History) -> None:
    table, at = history.table(), history.at  # version 9: bounds are completion times
    for begin, end in [(at(history.insert), at(history.late)),
                       (at(history.insert), at(history.update)),
                       (at(history.update), at(history.delete)), ("earliest", at(history.update)),
                       (at(history.delete), None)]:
        got = incremental(hudi_session, history.path, begin, end)
        assert spark_rows(got) == rows(read_incremental(table, begin, end)), (begin, end)
    k10 = incremental(hudi_session, history.path, at(history.delete)).where("uuid = 'k10'")
    assert [r.fare for r in k10.collect()] == [510.0]


def test_incremental_reads_only_the_written_file_groups(hudi_session: HudiSession,
                                                        history: History) -> None:
    got = incremental(hudi_session, history.path, history.at(history.delete),
                      history.at(history.late))
    written = history.table().timeline.commit_metadata(history.late).write_stats()
    assert got.rdd.getNumPartitions() == len(written)


def test_cdc_query_matches_the_core(hudi_session: HudiSession, history: History) -> None:
    begin, end = history.at(history.insert), history.at(history.late)
    got = incremental(hudi_session, history.path, begin, end, "cdc")
    assert got.columns == ["op", "ts_ms", "before", "after"]
    expected = read_cdc(history.table(), begin, end)
    key = ("op", "ts_ms", "before", "after")

    def ordered(table: pa.Table) -> list[tuple[Any, ...]]:
        return sorted(tuple(r[k] or "" for k in key) for r in table.to_pylist())

    assert ordered(got.toArrow()) == ordered(expected)
    assert sorted(r.op for r in got.collect()) == ["d"] * 3 + ["i"] * 5 + ["u"] * 6


def test_the_table_handle_reads_query_types(hudi_session: HudiSession,
                                            history: History) -> None:
    handle, at = hudi_session.table_at(history.path), history.at
    latest = handle.read(query_type="incremental", begin=at(history.insert),
                         end=at(history.update))
    assert fares(latest.toArrow()) == fares(
        read_incremental(history.table(), at(history.insert), at(history.update)))
    cdc = handle.read(**{QUERY: "incremental", BEGIN: at(history.delete), FORMAT: "cdc"})
    assert [r.op for r in cdc.collect()] == ["u"]
    named = handle.read(query_type="incremental", begin=at(history.delete),
                        incremental_format="cdc")
    assert named.columns == ["op", "ts_ms", "before", "after"] and named.count() == 1
    optimized = handle.read(query_type="read_optimized", columns=["uuid", "fare"])
    assert optimized.columns == ["uuid", "fare"]
    assert fares(optimized.toArrow()) == fares(
        hudisql.read_table(history.path, query_type="read_optimized"))


def test_read_table_takes_query_types(history: History) -> None:
    after_delete = history.at(history.delete)
    got = hudisql.read_table(history.path, query_type="incremental", begin=after_delete)
    assert fares(got) == {"k10": 510.0}
    cdc = hudisql.read_table(history.path, query_type="incremental", begin=after_delete,
                             incremental_format="cdc")
    assert cdc.column("op").to_pylist() == ["u"]
    optimized = fares(hudisql.read_table(history.path, query_type="read_optimized"))
    assert (optimized["k00"] == 0.0) == ("merge_on_read" in history.path)
    with pytest.raises(hudisql.ReadOptionError, match="is not one of"):
        hudisql.read_table(history.path, query_type="streaming")


@pytest.mark.parametrize(("options", "message"), [
    ({QUERY: "streaming"}, r"hoodie\.datasource\.query\.type='streaming' is not one of"),
    ({QUERY: "incremental", BEGIN: "29990101000000000"}, "no instant 29990101000000000"),
    ({QUERY: "incremental", BEGIN: "earliest", FORMAT: "debezium"}, "is not one of"),
    ({QUERY: "incremental", BEGIN: "earliest", "as.of.instant": "20250101000000000"},
     "do not go together"),
])
def test_bad_options_fail_at_load(hudi_session: HudiSession, history: History,
                                  options: dict[str, str], message: str) -> None:
    reader = hudi_session.spark.read.format("hudi")
    for key, value in options.items():
        reader = reader.option(key, value)
    with pytest.raises(AnalysisException, match=message):
        reader.load(history.path)


def test_incremental_without_begin_fails_when_read(hudi_session: HudiSession,
                                                   history: History) -> None:
    # Not at load(): a streaming read loads the same options without a begin (its
    # offsets are the range), and the data source cannot tell the two apart there.
    frame = hudi_session.spark.read.format("hudi").option(QUERY, "incremental").load(
        history.path)
    with pytest.raises(Exception, match=r"needs hoodie\.datasource\.read\.begin\.instanttime"):
        frame.collect()


def test_begin_after_end_fails_at_load(hudi_session: HudiSession, history: History) -> None:
    with pytest.raises(AnalysisException, match="swap them"):
        incremental(hudi_session, history.path, history.at(history.late),
                    history.at(history.insert))


@pytest.mark.parametrize("name", ["v6_trips_8i1u", "v8_trips_8i1u"])
def test_fixture_incremental_through_spark_as_hudi_rs(hudi_session: HudiSession,
                                                      name: str) -> None:
    path = str(table_path(name))
    # Version 8 (Hudi 1.0's own table): the range is by completion time.
    first, last = (i.completion_time or i.timestamp for i in history_instants(path))
    got = incremental(hudi_session, path, first, last).toArrow()
    options = (hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
               .with_start_timestamp(first).with_end_timestamp(last))
    oracle = pa.Table.from_batches(hudi.HudiTable(path).read(options))
    assert got.column("_hoodie_record_key").to_pylist() == oracle.column(
        "_hoodie_record_key").to_pylist()
    assert got.column("fare").to_pylist() == oracle.column("fare").to_pylist()


def history_instants(path: str) -> list[Any]:
    from hudisql.table import HudiTable

    return HudiTable.open(path).timeline.completed()


def test_an_overwrite_in_the_range_replaces_file_groups(hudi_session: HudiSession,
                                                        tmp_path_factory: pytest.TempPathFactory
                                                        ) -> None:
    from hudisql.write.pipeline import SparkWriter

    history = make_history(tmp_path_factory.mktemp("overwrite"), "MERGE_ON_READ")
    spark = hudi_session.spark
    rows_ = spark.createDataFrame([("k00", 5, 1.5, "sf"), ("k98", 5, 2.5, "sf")],
                                  "uuid string, ts long, fare double, city string")
    SparkWriter(spark, history.path).write(rows_, "insert_overwrite")
    table = history.table()
    overwrite = table.timeline.last_completed()
    assert overwrite is not None and overwrite.action == "replacecommit"
    after_late = history.at(history.late)
    latest = incremental(hudi_session, history.path, after_late).toArrow()
    assert fares(latest) == {"k00": 1.5, "k98": 2.5}
    assert rows(latest) == rows(read_incremental(table, after_late))
    changes = incremental(hudi_session, history.path, after_late, fmt="cdc").collect()
    sf_before = {k for k, v in fares(hudisql.read_table(history.path, as_of=history.late))
                 .items() if int(k[1:]) % 2 == 0}
    assert sorted((c.op, json_key(c.before or c.after)) for c in changes) == sorted(
        [("u", "k00"), ("i", "k98")] + [("d", k) for k in sf_before - {"k00"}])


def json_key(image: str) -> str:
    import json

    return str(json.loads(image)["uuid"])

