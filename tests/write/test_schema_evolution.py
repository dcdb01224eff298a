"""Schema evolution users do: ALTER TABLE ADD COLUMNS commits, writes adding columns, refusals.

Also the RFC-82 races with a schema-changing ALTER and with a Spark pipeline writer as the
transaction under test (both commit through the write ``Transaction``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudisql.errors import ConcurrentSchemaEvolutionError, WriteError
from hudisql.table.table import HudiTable
from hudisql.txn.schema_evolution import (
    EVOLUTION_ON_WRITE,
    RECONCILE_SCHEMA,
    add_columns,
    alter_schema,
)
from hudisql.txn.writer import WriteClient
from hudisql.write.pipeline import SparkWriter
from tests.write.test_schema_conflict import (
    BASE_COLUMNS,
    EVOLVE,
    S1,
    TABLE_TYPES,
    Writer,
    assert_readers_agree,
    assert_rolled_back,
    commit_columns,
    expected_rows,
    new_table,
    race,
    rows,
)


def snapshot(path: str) -> dict[str, bytes]:
    """Every file of the table with its content."""
    return {str(p.relative_to(path)): p.read_bytes() for p in Path(path).rglob("*")
            if p.is_file()}


def columns_of(path: str) -> list[str]:
    """The table's columns (meta columns left out)."""
    return [n for n in HudiTable.open(path).schema.names if not n.startswith("_hoodie_")]


# -- ALTER TABLE ADD COLUMNS -----------------------------------------------------------------


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_add_columns_is_a_commit_and_older_files_and_log_blocks_read_null(
        spark: Any, tmp_path: Path, table_type: str) -> None:
    path = new_table(tmp_path, table_type, seeded=True)
    client = WriteClient(HudiTable.open(path))
    client.upsert(rows("s", 1, []).set_column(1, "ts", pa.array([5])))  # a log block on MOR
    instant = add_columns(path, [pa.field("x", pa.string()), pa.field("n", pa.int32())])
    timeline = HudiTable.open(path).timeline
    done = timeline.get(instant)
    assert done is not None and done.is_completed
    metadata = timeline.commit_metadata(done)
    assert metadata.operation_type == "ALTER_SCHEMA" and metadata.write_stats() == []
    assert commit_columns(path, instant) == [*BASE_COLUMNS, "x", "n"]
    # A later write with the new columns: older base files and log blocks read null.
    WriteClient(HudiTable.open(path)).insert(
        rows("w", 2, ["x"]).append_column("n", pa.array([1, 2], pa.int32())))
    columns = [*BASE_COLUMNS, "x", "n"]
    expected = sorted([("s0", 5, 0.0, "la", None, None), ("s1", 1, 1.0, "sf", None, None),
                       ("w0", 1, 0.0, "la", "x-w0", 1), ("w1", 1, 1.0, "sf", "x-w1", 2)])
    assert_readers_agree(spark, path, columns, expected)


def test_add_columns_refuses_existing_names_and_required_columns(tmp_path: Path) -> None:
    path = new_table(tmp_path, "MERGE_ON_READ", seeded=True)
    before = snapshot(path)
    with pytest.raises(WriteError, match="ADD COLUMNS FARE: the table already has a column"):
        add_columns(path, [pa.field("FARE", pa.float64())])
    with pytest.raises(WriteError, match="new column 'x' must be nullable"):
        add_columns(path, [pa.field("x", pa.string(), nullable=False)])
    with pytest.raises(WriteError, match="needs at least one column"):
        add_columns(path, [])
    assert snapshot(path) == before


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s.remove(s.get_field_index("uuid")),
     r"table trips at .*: the new schema drops the record key field 'uuid'"),
    (lambda s: s.remove(s.get_field_index("city")), "drops the partition field 'city'"),
    (lambda s: s.remove(s.get_field_index("fare")), "drops column 'fare'"),
    (lambda s: s.set(s.get_field_index("uuid"), pa.field("uuid", pa.int64())),
     "changes the record key field 'uuid' from string to int64"),
    (lambda s: s.set(s.get_field_index("fare"), pa.field("fare", pa.string())),
     "column 'fare' cannot change from double to string"),
    (lambda s: s.set(s.get_field_index("fare"), pa.field("fare", pa.int32())),
     "column 'fare' cannot change from double to int32"),
])
@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_alter_refuses_breaking_changes_and_leaves_the_table_unchanged(
        tmp_path: Path, table_type: str, change: Any, message: str) -> None:
    path = new_table(tmp_path, table_type, seeded=True)
    before = snapshot(path)
    with pytest.raises(WriteError, match=message):
        alter_schema(path, change(S1))
    assert snapshot(path) == before


def test_alter_accepts_an_avro_promotion(tmp_path: Path) -> None:
    path = new_table(tmp_path, "COPY_ON_WRITE", seeded=True)
    add_columns(path, [pa.field("n", pa.int32())])
    schema = pa.schema([f for f in HudiTable.open(path).schema if not f.name.startswith("_")])
    instant = alter_schema(path, schema.set(schema.get_field_index("n"), pa.field("n", pa.int64())))
    assert HudiTable.open(path).schema.field("n").type == pa.int64()
    assert commit_columns(path, instant) == [*BASE_COLUMNS, "n"]


# -- writes that add columns -----------------------------------------------------------------


def test_a_write_adding_columns_is_refused_unless_evolution_on_write_is_enabled(
        tmp_path: Path) -> None:
    path = new_table(tmp_path, "MERGE_ON_READ", seeded=True)
    before = snapshot(path)
    refusal = rf"unknown \['x'\]; to add them set {EVOLUTION_ON_WRITE}=true"
    with pytest.raises(WriteError, match=refusal):
        WriteClient(HudiTable.open(path)).insert(rows("w", 2, ["x"]))
    assert snapshot(path) == before
    # Hudi's reconcile switch allows it too; dict records infer the new column's type.
    client = WriteClient(HudiTable.open(path), options={RECONCILE_SCHEMA: "true"})
    client.insert([{"uuid": "w9", "ts": 1, "fare": 1.0, "city": "sf", "n": 7}])
    assert HudiTable.open(path).schema.field("n").type == pa.int64()
    with pytest.raises(WriteError, match="new column 'm' holds only nulls"):
        client.insert([{"uuid": "w8", "ts": 1, "fare": 1.0, "city": "sf", "n": 1, "m": None}])


def test_a_copy_on_write_update_keeps_the_new_columns(tmp_path: Path) -> None:
    path = new_table(tmp_path, "COPY_ON_WRITE", seeded=True)
    client = WriteClient(HudiTable.open(path), options=EVOLVE)
    updated = rows("s", 2, ["x"]).set_column(1, "ts", pa.array([9, 9]))
    client.upsert(updated)
    got = HudiTable.open(path).read().select(["uuid", "ts", "x"]).to_pylist()
    assert sorted(got, key=lambda r: r["uuid"]) == [
        {"uuid": "s0", "ts": 9, "x": "x-s0"}, {"uuid": "s1", "ts": 9, "x": "x-s1"}]


# -- races with an ALTER and with a Spark writer as the transaction under test ---------------


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_alter_racing_a_write_that_adds_another_column_is_refused(tmp_path: Path,
                                                                  table_type: str) -> None:
    path = new_table(tmp_path, table_type, seeded=True)
    a = Writer("a", ["x"])
    result = race(path, lambda hook: a.run(path, hook),
                  lambda hook: add_columns(path, [pa.field("y", pa.string())], on_step=hook),
                  a_opens_first=False, b_validates=("written",))
    assert isinstance(result.b_error, ConcurrentSchemaEvolutionError)
    message = str(result.b_error)
    assert "RFC-82 case 8" in message and f"committed by {result.a_instant}" in message
    assert "columns added: y; columns removed: x" in message
    assert_rolled_back(path, str(result.b_instant))
    assert columns_of(path) == [*BASE_COLUMNS, "x"]


def test_alter_racing_a_write_that_adds_the_same_column_commits(tmp_path: Path) -> None:
    path = new_table(tmp_path, "MERGE_ON_READ", seeded=True)
    a = Writer("a", ["x"])
    result = race(path, lambda hook: a.run(path, hook),
                  lambda hook: add_columns(path, [pa.field("x", pa.string())], on_step=hook),
                  a_opens_first=False, b_validates=("written",))
    assert result.b_error is None
    assert commit_columns(path, str(result.b_instant)) == [*BASE_COLUMNS, "x"]


def _spark_write(spark: Any, path: str, writer: Writer, operation: str = "insert") -> Any:
    def run(hook: Any) -> str:
        data = rows(writer.prefix, writer.n, writer.extra)
        ddl = ", ".join(["uuid string", "ts long", "fare double", "city string",
                         *[f"{c} string" for c in writer.extra]])
        df = spark.createDataFrame([tuple(r.values()) for r in data.to_pylist()], ddl)
        options = {**(EVOLVE if writer.extra else {}), **writer.options}
        return SparkWriter(spark, path, options, on_step=hook).write(df, operation).instant_time
    return run


@pytest.mark.spark
@pytest.mark.parametrize(("table_type", "a_extra", "b_extra", "committed"), [
    ("MERGE_ON_READ", ["x"], [], [*BASE_COLUMNS, "x"]),      # case 6
    ("COPY_ON_WRITE", ["x"], ["x"], [*BASE_COLUMNS, "x"]),   # case 7
    ("MERGE_ON_READ", ["x"], ["y"], None),                   # case 8
    ("COPY_ON_WRITE", [], [], BASE_COLUMNS),                 # case 4
])
def test_spark_writer_under_test(spark: Any, tmp_path: Path, table_type: str,
                                 a_extra: list[str], b_extra: list[str],
                                 committed: list[str] | None) -> None:
    path = new_table(tmp_path, table_type, seeded=True)
    a, b = Writer("a", a_extra), Writer("b", b_extra)
    result = race(path, lambda hook: a.run(path, hook), _spark_write(spark, path, b),
                  a_opens_first=False, b_validates=("written",))
    if committed is None:
        assert isinstance(result.b_error, ConcurrentSchemaEvolutionError), result.b_error
        assert "RFC-82 case 8" in str(result.b_error)
        assert "columns added: y; columns removed: x" in str(result.b_error)
        assert_rolled_back(path, str(result.b_instant))
        columns = [*BASE_COLUMNS, *a_extra]
    else:
        assert result.b_error is None, result.b_error
        assert commit_columns(path, str(result.b_instant)) == committed
        columns = committed
    expected = expected_rows([(a, True), (b, committed is not None)], columns, seeded=True)
    assert_readers_agree(spark, path, columns, expected)
