"""SQL writes on Apache Hudi 1.x tables (versions 8 and 9): a table Hudi 1.0 wrote and a
new version-9 table, INSERT / UPDATE / DELETE / MERGE through Spark, read back by hudi-rs
row for row (it lists files by completion time, as Hudi 1.x does)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from hudisql.errors import SqlParseError, WriteError
from hudisql.session import HudiSession
from hudisql.table import HudiTable
from hudisql.table.format.properties import TableProperties
from tests.fixtures import copy_table, core_rows_of, rs_rows_of

pytestmark = [pytest.mark.spark, pytest.mark.slow]

COLUMNS = ["_hoodie_record_key", "ts", "uuid", "rider", "fare", "city"]


def core_rows(path: str) -> list[tuple[Any, ...]]:
    return core_rows_of(path, COLUMNS)


def rs_rows(path: str) -> list[tuple[Any, ...]]:
    return rs_rows_of(path, COLUMNS)


def fares(path: str) -> dict[str, float]:
    return {r[2]: r[4] for r in core_rows(path)}


def statements(session: HudiSession, name: str) -> None:
    session.sql(f"INSERT INTO {name} VALUES (1795159649087, 'new-1', 'rider-Z', 'driver-Z', "
                "1.5, 'chennai')")
    # A literal: `fare = fare + 100` on merge-on-read writes an expression block, which
    # hudi-rs refuses by design (docs/FORMAT.md).
    session.sql(f"UPDATE {name} SET fare = 119.1, ts = 1795159649088 WHERE rider = 'rider-A'")
    session.sql(f"DELETE FROM {name} WHERE rider = 'rider-C'")
    session.sql(f"""MERGE INTO {name} t USING (SELECT 'new-1' AS uuid, 7.5 AS fare,
        1795159649099 AS ts) s ON t.uuid = s.uuid
        WHEN MATCHED THEN UPDATE SET fare = s.fare, ts = s.ts""")


def test_sql_writes_on_a_table_hudi_1_0_wrote(session: HudiSession, tmp_path: Path) -> None:
    path = str(copy_table("v8_trips_8i1u", tmp_path))
    session.sql(f"CREATE TABLE v8_trips USING hudi LOCATION '{path}'")
    before = fares(path)
    rider = {r[3]: r[2] for r in core_rows(path)}
    statements(session, "v8_trips")
    expected = dict(before)
    expected[rider["rider-A"]] = 119.1
    del expected[rider["rider-C"]]
    expected["new-1"] = 7.5
    assert fares(path) == pytest.approx(expected)
    assert rs_rows(path) == core_rows(path)
    props = TableProperties.load(HudiTable.open(path).storage)
    assert (props.version, props.timeline_layout) == (8, 2)


def test_sql_writes_on_a_new_version_9_table(session: HudiSession) -> None:
    session.sql("""CREATE TABLE v9_trips (ts BIGINT, uuid STRING, rider STRING, driver STRING,
        fare DOUBLE, city STRING) USING HUDI PARTITIONED BY (city)
        TBLPROPERTIES (type = 'mor', primaryKey = 'uuid', preCombineField = 'ts',
        'hoodie.write.table.version' = '9')""")
    path = session.table("v9_trips").path
    props = TableProperties.load(HudiTable.open(path).storage)
    assert (props.version, props.timeline_layout) == (9, 2)
    assert props["hoodie.table.ordering.fields"] == "ts"
    session.sql("""INSERT INTO v9_trips VALUES
        (1, 'u1', 'rider-A', 'driver-K', 19.1, 'sf'), (2, 'u2', 'rider-B', 'driver-L', 27.7, 'sf'),
        (3, 'u3', 'rider-C', 'driver-M', 33.9, 'la')""")
    statements(session, "v9_trips")
    assert fares(path) == pytest.approx({"u1": 119.1, "u2": 27.7, "new-1": 7.5})
    assert rs_rows(path) == core_rows(path)


def test_call_upgrade_table(session: HudiSession) -> None:
    session.sql("""CREATE TABLE v6_up (ts BIGINT, uuid STRING, rider STRING, driver STRING,
        fare DOUBLE, city STRING) USING HUDI PARTITIONED BY (city)
        TBLPROPERTIES (type = 'mor', primaryKey = 'uuid', preCombineField = 'ts',
        'hoodie.write.table.version' = '6')""")
    path = session.table("v6_up").path
    session.sql("""INSERT INTO v6_up VALUES (1, 'u1', 'rider-A', 'driver-K', 19.1, 'sf'),
        (3, 'u3', 'rider-C', 'driver-M', 33.9, 'la')""")
    # Indexes built by CREATE INDEX on version 6 are rebuilt at version 9.
    session.sql("CREATE INDEX idx_rider ON v6_up (rider)")  # and the record index
    assert TableProperties.load(HudiTable.open(path).storage).version == 6
    result = session.sql("CALL upgrade_table(table => 'v6_up', to_version => 9)").collect()
    assert [r.result for r in result] == [True]
    props = TableProperties.load(HudiTable.open(path).storage)
    assert props.version == 9
    assert {"files", "record_index", "secondary_index_idx_rider"} <= set(
        props.metadata_partitions)
    # Built as CREATE INDEX builds (Spark jobs), at one initialization instant.
    mdt_timeline = Path(path) / ".hoodie/metadata/.hoodie/timeline"
    assert [n.split("_")[0] for n in os.listdir(mdt_timeline)
            if n.endswith(".deltacommit")] == ["00000000000000000"]
    session.sql("UPDATE v6_up SET fare = 20.5, ts = 2 WHERE uuid = 'u1'")
    assert fares(path) == pytest.approx({"u1": 20.5, "u3": 33.9})
    assert [r.fare for r in session.sql(
        "SELECT fare FROM v6_up WHERE rider = 'rider-C'").collect()] == [33.9]
    assert session.sql("CALL validate_metadata_table(table => 'v6_up')").collect() == []
    assert rs_rows(path) == core_rows(path)
    with pytest.raises(SqlParseError, match="to_version must be 8 or 9"):
        session.sql("CALL upgrade_table(table => 'v6_up', to_version => 'TEN')")


def test_df_write_creates_a_version_8_table(session: HudiSession, tmp_path: Path) -> None:
    path = str(tmp_path / "dfw")
    options = {"hoodie.table.name": "dfw", "hoodie.datasource.write.recordkey.field": "uuid",
               "hoodie.datasource.write.precombine.field": "ts",
               "hoodie.datasource.write.partitionpath.field": "city",
               "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    df = session.spark.createDataFrame(
        [(1, "u1", "rider-A", "driver-K", 19.1, "sf"), (2, "u2", "rider-B", "driver-L", 7.0,
                                                        "la")],
        "ts long, uuid string, rider string, driver string, fare double, city string")
    df.write.format("hudi").mode("append").options(**options).option(
        "hoodie.write.table.version", "8").save(path)
    props = TableProperties.load(HudiTable.open(path).storage)
    assert (props.version, props.timeline_layout) == (8, 2)
    assert rs_rows(path) == core_rows(path) and len(core_rows(path)) == 2
    # Appending with another version asked for is refused, the table unchanged.
    before = core_rows(path)
    with pytest.raises(WriteError, match="is version 8, but the write sets"):
        df.write.format("hudi").mode("append").options(**options).option(
            "hoodie.write.table.version", "9").save(path)
    assert core_rows(path) == before


def test_sql_on_hudi_1_1s_table_with_its_metadata_table(
        session: HudiSession, tmp_path: Path) -> None:
    """Hudi 1.1's version-9 table with its HFile metadata table (record, secondary and
    stats indexes): every statement keeps it (the suite validates it after the test), and
    hudi-rs, which lists the table through it, reads the same rows and slices."""
    path = str(copy_table("v9_txns_complex_meta", tmp_path))
    session.sql(f"CREATE TABLE v9_meta USING hudi LOCATION '{path}'")
    session.sql("""INSERT INTO v9_meta SELECT 'TXN-900', 'ACC-Z', 1700000009000,
        TIMESTAMP '2024-03-01 10:00:00', DATE '2024-03-01', CAST(5.00 AS DECIMAL(15,2)), 'EUR',
        'debit', 'hudisql', false, CAST(0.10 AS DECIMAL(10,2)), NULL, 'eu'""")
    session.sql("UPDATE v9_meta SET merchant_name = 'updated', txn_ts = txn_ts + 1 "
                "WHERE txn_id = 'TXN-001'")
    session.sql("DELETE FROM v9_meta WHERE txn_id = 'TXN-003'")
    session.sql("""MERGE INTO v9_meta t USING (SELECT 'TXN-900' AS txn_id, 'ACC-Z' AS account_id,
        1700000009999 AS txn_ts) s ON t.txn_id = s.txn_id AND t.account_id = s.account_id
        WHEN MATCHED THEN UPDATE SET txn_ts = s.txn_ts""")
    session.sql("CREATE INDEX idx_currency ON v9_meta (currency)")
    session.sql("RUN LOG COMPACTION ON v9_meta")
    session.sql("RUN COMPACTION ON v9_meta")
    session.sql("CALL run_clean(table => 'v9_meta', "
                "options => 'hoodie.cleaner.commits.retained=1')")
    table = hudi.HudiTable(path)
    ours = HudiTable.open(path).read().drop_columns(["_hoodie_file_name"])
    theirs = pa.Table.from_batches(table.read()).select(ours.column_names)
    assert ours.sort_by("_hoodie_record_key").to_pylist() == theirs.sort_by(
        "_hoodie_record_key").to_pylist()
    mine = sorted((s.file_id, s.base_file.name if s.base_file else "",
                   tuple(sorted(lg.name for lg in s.log_files)))
                  for s in HudiTable.open(path).file_system_view().latest_file_slices())
    assert sorted((s.file_id, s.base_file_name or "", tuple(sorted(s.log_file_names)))
                  for s in table.get_file_slices()) == mine
    assert table.compute_table_stats()[0] > 0
    keys = {r["_hoodie_record_key"]: r for r in ours.to_pylist()}
    assert keys["txn_id:TXN-001,account_id:ACC-A"]["merchant_name"] == "updated"
    assert "txn_id:TXN-003,account_id:ACC-A" not in keys
    assert keys["txn_id:TXN-900,account_id:ACC-Z"]["txn_ts"] == 1700000009999
    assert "secondary_index_idx_currency" in TableProperties.load(
        HudiTable.open(path).storage).metadata_partitions
