"""Snapshot reads split between Spark's parquet reader and the ``hudi`` data source.

Every case compares ``HudiTableHandle.read()`` (the split plan of ``hudisql.read.snapshot``)
row for row with the data source alone (``hudisql.read.direct.parquet=false``), which
``test_datasource.py`` checks against hudi-rs and the table core.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame

from hudisql.read import snapshot
from hudisql.read.options import DIRECT_PARQUET
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table import HudiTable
from hudisql.txn.writer import WriteClient, create_table
from hudisql.write.pipeline import SparkWriter
from tests.read.test_datasource import rows

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("rider", pa.string()),
                    ("fare", pa.float64()), ("city", pa.string())])
ONLY_SOURCE = {DIRECT_PARQUET: "false"}
UNSPLIT = {snapshot.SPLIT_TOUCHED: "false"}


def _records(keys: range, ts: int, fare: float = 1.0) -> pa.Table:
    n = len(keys)
    return pa.table({"uuid": [f"k{i:04d}" for i in keys], "ts": [ts] * n,
                     "rider": [f"r{i % 7}" for i in keys], "fare": [fare + i for i in keys],
                     "city": [f"c{i % 3}" for i in keys]}, schema=SCHEMA)


def _crash_when_validating(event: str, _: str) -> None:
    if event == "validating":  # every file is written: the write dies before it completes
        raise RuntimeError("injected crash")


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().optimizedPlan().toString())  # type: ignore[operator]


def _kinds(handle: HudiTableHandle, split: bool = True) -> tuple[int, int, int]:
    """(base files Spark reads alone, slices merged by Spark, slices read whole)."""
    plan = snapshot.plan_snapshot(handle.core(), None, split)
    assert plan is not None
    return len(plan.base_files), len(plan.merged), len(plan.whole)


def _same_rows(handle: HudiTableHandle, **kwargs: Any) -> DataFrame:
    """The default plan (slices with logs merged by Spark), the plan that reads those
    slices whole through the data source, and the data source alone read the same rows."""
    alone = rows(handle.read(**kwargs, **ONLY_SOURCE).toArrow())
    assert rows(handle.read(**kwargs, **UNSPLIT).toArrow()) == alone
    split = handle.read(**kwargs)
    assert rows(split.toArrow()) == alone
    return split


def test_every_fixture_reads_the_same_split(hudi_session: HudiSession,
                                            fixture_table: Path) -> None:
    handle = hudi_session.table_at(fixture_table)
    _same_rows(handle)
    plan = snapshot.plan_snapshot(handle.core())
    assert plan is not None
    # Spark's parquet reader takes part exactly when some slice has a parquet base file
    # (alone, or merged with its logs by Spark).
    assert ("parquet" in _plan(handle.read())) == bool(plan.base_files or plan.merged)
    completed = handle.core().timeline.completed()
    if len(completed) > 1:  # time travel to the first commit, split the same way
        _same_rows(handle, as_of=completed[0].timestamp)
    _same_rows(handle, columns=["_hoodie_commit_time", "_hoodie_record_key"])


@pytest.fixture
def mor(tmp_path: Path) -> HudiTable:
    """A partitioned merge-on-read table with a precombine field: 300 rows over 3 partitions."""
    path = str(tmp_path / "mor")
    create_table(path, "mor", SCHEMA, "uuid", "city", "ts", "MERGE_ON_READ")
    table = HudiTable.open(path)
    WriteClient(table).insert(_records(range(300), ts=1))
    return HudiTable.open(path)


def test_updates_deletes_stale_updates_and_inserts_in_logs(hudi_session: HudiSession,
                                                           mor: HudiTable) -> None:
    client = WriteClient(mor)
    client.upsert(_records(range(0, 300, 10), ts=2, fare=500.0))  # updates in every slice
    client.upsert(_records(range(5, 300, 50), ts=0, fare=900.0))  # stale: base rows win
    client.delete([f"k{i:04d}" for i in range(1, 300, 25)])
    client.upsert(_records(range(300, 320), ts=1))  # new keys
    handle = hudi_session.table_at(mor.base_path)
    split = _same_rows(handle)
    assert split.count() == 300 - 12 + 20
    fares = {r.uuid: r.fare for r in split.select("uuid", "fare").collect()}
    assert fares["k0010"] == 510.0 and fares["k0005"] == 6.0 and "k0001" not in fares
    assert _kinds(handle) == (3, 3, 0)  # 3 slices with logs, 3 new base files
    assert _kinds(handle, split=False) == (3, 0, 3)
    # Merged by Spark: one parquet scan minus the superseded positions, no Python source.
    plan = _plan(split)
    assert "LeftAnti" in plan and "row_index" in plan and "RelationV2" not in plan
    # A projection and a filter go through the same merge.
    _same_rows(handle, columns=["_hoodie_record_key", "fare"], where="fare > 100")
    read_optimized = _same_rows(handle, query_type="read_optimized")
    assert read_optimized.count() == 320 and "RelationV2" not in _plan(read_optimized)
    # Time travel to before the deletes: the split follows the snapshot.
    second = handle.core().timeline.completed()[1].timestamp
    assert _same_rows(handle, as_of=second).count() == 300


def test_a_rolled_back_write_and_a_stale_inflight_leave_no_rows(hudi_session: HudiSession,
                                                                 mor: HudiTable) -> None:
    with pytest.raises(RuntimeError):
        WriteClient(mor, on_step=_crash_when_validating).upsert(
            _records(range(0, 300, 3), ts=5, fare=7000.0))
    handle = hudi_session.table_at(mor.base_path)
    split = _same_rows(handle)
    assert split.where("fare >= 7000").count() == 0
    WriteClient(HudiTable.open(mor.base_path)).upsert(_records(range(0, 30), ts=6, fare=100.0))
    assert _same_rows(handle).where("fare >= 7000").count() == 0


def test_expression_blocks_read_whole_slices(hudi_session: HudiSession,
                                             mor: HudiTable) -> None:
    spark = hudi_session.spark
    bump = spark.createDataFrame([(f"k{i:04d}", 1, "", 2.5, f"c{i % 3}") for i in range(0, 9)],
                                 "uuid string, ts long, rider string, fare double, city string")
    SparkWriter(spark, mor.base_path).write(bump, "upsert", {"fare": "add"})
    handle = hudi_session.table_at(mor.base_path)
    split = _same_rows(handle)
    assert {r.fare for r in split.where("uuid = 'k0003'").collect()} == {6.5}
    assert _kinds(handle) == (0, 0, 3)


def test_too_many_touched_keys_read_whole(hudi_session: HudiSession, mor: HudiTable,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    WriteClient(mor).upsert(_records(range(0, 300, 2), ts=2, fare=50.0))
    monkeypatch.setattr(snapshot, "MAX_MERGED_KEYS", 60)  # 50 keys per slice: one fits
    handle = hudi_session.table_at(mor.base_path)
    _same_rows(handle)
    assert _kinds(handle) == (0, 1, 2)


def test_added_column_reads_null_in_old_base_files(hudi_session: HudiSession,
                                                   mor: HudiTable) -> None:
    wider = _records(range(0, 40), ts=3).append_column("tip", pa.array([1.5] * 40))
    WriteClient(mor, options={"hoodie.schema.on.write.evolution.enable": "true"}).upsert(wider)
    handle = hudi_session.table_at(mor.base_path)
    split = _same_rows(handle)
    tips = {r.uuid: r.tip for r in split.select("uuid", "tip").collect()}
    assert tips["k0001"] == 1.5 and tips["k0100"] is None


def test_copy_on_write_tables_read_by_spark_alone(hudi_session: HudiSession,
                                                  tmp_path: Path) -> None:
    path = str(tmp_path / "cow")
    create_table(path, "cow", SCHEMA, "uuid", None, "ts", "COPY_ON_WRITE")
    client = WriteClient(HudiTable.open(path))
    client.insert(_records(range(50), ts=1))
    client.upsert(_records(range(0, 50, 5), ts=2, fare=70.0))
    handle = hudi_session.table_at(path)
    _same_rows(handle)
    assert _kinds(handle) == (1, 0, 0)
