"""``df.write.format("hudi")``: Hudi's options, save modes, every operation, task retries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hudi
import pyarrow as pa
import pytest

from hudisql.errors import WriteError
from hudisql.session import HudiSession
from hudisql.table.format.filenames import BaseFileName
from hudisql.table.table import HudiTable
from hudisql.write.pipeline import FAULT_AFTER_FILES

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
COLUMNS = "uuid string, ts long, rider string, fare double, city string"
Row = tuple[str, int, str, float, str]
BASE: list[Row] = [
    ("u1", 1, "rider-A", 10.0, "sf"), ("u2", 1, "rider-B", 20.0, "sf"),
    ("u3", 1, "rider-C", 30.0, "la"), ("u4", 1, "rider-D", 40.0, "ny"),
]
OPTIONS = {"hoodie.table.name": "trips", "hoodie.datasource.write.recordkey.field": "uuid",
           "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.partitionpath.field": "city"}


def _save(session: HudiSession, rows: list[Row], path: Path, mode: str = "append",
          **options: str) -> None:
    writer = session.spark.createDataFrame(rows, COLUMNS).write.format("hudi").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(str(path))


def _spark_rows(session: HudiSession, path: Path) -> list[Row]:
    df = session.spark.read.format("hudi").load(str(path))
    return sorted(tuple(r) for r in df.select("uuid", "ts", "rider", "fare", "city").collect())


def _oracle(path: Path) -> list[Row]:
    table = pa.Table.from_batches(hudi.HudiTable(str(path)).read())
    if not table.num_rows:
        return []
    cols = table.select(["uuid", "ts", "rider", "fare", "city"]).to_pylist()
    return sorted(tuple(r.values()) for r in cols)  # type: ignore[misc]


def _operations(path: Path) -> list[tuple[str, str | None]]:
    timeline = HudiTable.open(str(path)).timeline
    return [(str(i.action), timeline.commit_metadata(i).operation_type)
            for i in timeline.completed()]


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_every_operation_and_both_modes(hudi_session: HudiSession, tmp_path: Path,
                                        table_type: str) -> None:
    path = tmp_path / "t"
    opts = {**OPTIONS, "hoodie.datasource.write.table.type": table_type}
    op = "hoodie.datasource.write.operation"
    _save(hudi_session, BASE[:2], path, "append", **opts)  # creates the table, upserts
    props = HudiTable.open(str(path)).properties
    assert (props.table_type, props.record_key_fields, props.partition_fields,
            props.precombine_field) == (table_type, ["uuid"], ["city"], "ts")
    _save(hudi_session, BASE[2:3], path, **{op: "insert"})
    _save(hudi_session, BASE[3:], path, **{op: "bulk_insert"})
    _save(hudi_session, [("u1", 2, "rider-A", 11.0, "sf")], path, **{op: "upsert"})
    _save(hudi_session, [BASE[1]], path, **{op: "delete"})
    expected = sorted([("u1", 2, "rider-A", 11.0, "sf"), BASE[2], BASE[3]])
    assert _spark_rows(hudi_session, path) == expected
    _save(hudi_session, [("n1", 1, "rider-N", 1.0, "la")], path, **{op: "insert_overwrite"})
    expected = sorted([("u1", 2, "rider-A", 11.0, "sf"), ("n1", 1, "rider-N", 1.0, "la"),
                       BASE[3]])
    assert _spark_rows(hudi_session, path) == expected
    assert _oracle(path) == expected
    _save(hudi_session, [("o1", 1, "rider-O", 5.0, "ny")], path, "overwrite")
    assert _spark_rows(hudi_session, path) == [("o1", 1, "rider-O", 5.0, "ny")]
    assert _oracle(path) == [("o1", 1, "rider-O", 5.0, "ny")]
    write = "deltacommit" if table_type == "MERGE_ON_READ" else "commit"
    assert _operations(path) == [
        (write, "UPSERT"), (write, "INSERT"), (write, "BULK_INSERT"), (write, "UPSERT"),
        (write, "DELETE"), ("replacecommit", "INSERT_OVERWRITE"),
        ("replacecommit", "INSERT_OVERWRITE_TABLE")]


def test_overwrite_creates_an_absent_table_and_ignore_errorifexists(
        hudi_session: HudiSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    _save(hudi_session, BASE, path, "overwrite", **OPTIONS)
    assert _spark_rows(hudi_session, path) == sorted(BASE)
    # Hudi's default is non-hive-style partition paths.
    assert {s.partition_path for s in HudiTable.open(str(path)).file_slices()} == {
        "sf", "la", "ny"}
    _save(hudi_session, [("x", 1, "r", 1.0, "sf")], path, "ignore", **OPTIONS)
    with pytest.raises(WriteError, match="already there and the save mode is errorifexists"):
        _save(hudi_session, [("x", 1, "r", 1.0, "sf")], path, "errorifexists", **OPTIONS)
    assert _spark_rows(hudi_session, path) == sorted(BASE)
    assert len(HudiTable.open(str(path)).timeline.completed()) == 1


@pytest.mark.parametrize(("options", "mode", "message"), [
    ({"hoodie.datasource.write.recordkey.field": "uuid"}, "append",
     "option hoodie.table.name is not set"),
    ({**OPTIONS, "hoodie.datasource.write.operation": "merge"}, "append",
     "option hoodie.datasource.write.operation='merge' is not an operation"),
    ({**OPTIONS, "hoodie.datasource.write.table.type": "HASH"}, "append",
     "option hoodie.datasource.write.table.type='HASH' is not COPY_ON_WRITE"),
    ({**OPTIONS, "hoodie.datasource.write.partitionpath.field": "region"}, "append",
     r"option hoodie.datasource.write.partitionpath.field names \['region'\]"),
    ({**OPTIONS, "hoodie.datasource.write.operation": "delete"}, "overwrite",
     "save mode overwrite replaces the table's rows"),
])
def test_bad_options_on_create_are_refused_and_nothing_is_written(
        hudi_session: HudiSession, tmp_path: Path, options: dict[str, str], mode: str,
        message: str) -> None:
    path = tmp_path / "t"
    with pytest.raises(WriteError, match=message):
        _save(hudi_session, BASE, path, mode, **options)
    assert not path.exists()


def test_options_that_contradict_the_table_are_refused(hudi_session: HudiSession,
                                                       tmp_path: Path) -> None:
    path = tmp_path / "t"
    _save(hudi_session, BASE, path, **OPTIONS)
    before = sorted(str(p) for p in path.rglob("*"))
    for key, value in [("hoodie.datasource.write.recordkey.field", "rider"),
                       ("hoodie.datasource.write.table.type", "MERGE_ON_READ"),
                       ("hoodie.datasource.write.precombine.field", "fare")]:
        with pytest.raises(WriteError, match=f"option {key}='{value}' differs from the table"):
            _save(hudi_session, BASE, path, **{**OPTIONS, key: value})
    assert sorted(str(p) for p in path.rglob("*")) == before
    # Other formats are untouched by the interception.
    hudi_session.spark.createDataFrame(BASE, COLUMNS).write.format("json").save(
        str(tmp_path / "plain"))
    assert hudi_session.spark.read.json(str(tmp_path / "plain")).count() == 4


_CHILD = """
import json, sys
import hudisql
brief = json.loads(sys.argv[1])
session = hudisql.connect(conf={"spark.master": "local[2,4]"})
rows = [tuple(r) for r in brief["rows"]]
df = session.spark.createDataFrame(rows, brief["columns"]).repartition(2)
writer = df.write.format("hudi").mode("append")
for key, value in brief["options"].items():
    writer = writer.option(key, value)
writer.save(brief["path"])
session.stop()
"""


@pytest.mark.slow
def test_task_retries_commit_only_the_successful_attempts(hudi_session: HudiSession,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "t"
    _save(hudi_session, BASE, path, **OPTIONS)  # 3 file groups to update
    updates = [(u, 2, r, f + 1, c) for u, _, r, f, c in BASE] + [("u9", 2, "r", 9.0, "la")]
    brief = {"path": str(path), "rows": updates, "columns": COLUMNS,
             "options": {**OPTIONS, FAULT_AFTER_FILES: "1"}}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(brief)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The first attempts failed after one file each: Spark retried them.
    assert "injected failure" in proc.stderr
    expected = sorted(updates)
    assert _spark_rows(hudi_session, path) == expected
    assert _oracle(path) == expected
    table = HudiTable.open(str(path))
    last = table.timeline.completed()[-1]
    assert len(table.timeline.completed()) == 2 and not table.timeline.pending()
    committed = {s.path for s in table.timeline.commit_metadata(last).write_stats()}
    on_disk = {str(p.relative_to(path)) for p in path.rglob("*.parquet")
               if (n := BaseFileName.parse(p.name)) is not None and n.instant == last.timestamp}
    assert on_disk == committed
