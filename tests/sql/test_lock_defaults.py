"""Which lock a table gets (issue #18, item 1): the catalog's for a table in the catalog,
the file lock for a table by path, and the provider the user names over either."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from hudisql.session import HudiSession
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.lock import LOCK_PROVIDER
from hudisql.txn.shared_lock import recorded_lock


def _create(session: HudiSession, name: str) -> HudiTable:
    session.sql(f"CREATE TABLE {name} (id STRING, v INT) USING hudi "
                "TBLPROPERTIES (primaryKey = 'id', type = 'mor')")
    return HudiTable.open(session.table(name).path)


def test_a_catalog_table_takes_the_catalog_lock(session: HudiSession, catalog_url: str) -> None:
    table = _create(session, "locked_by_catalog")
    session.sql("INSERT INTO locked_by_catalog VALUES ('a', 1)")
    assert recorded_lock(table) == f"catalog lock in {catalog_url}"
    session.sql("UPDATE locked_by_catalog SET v = v + 1")
    session.table("locked_by_catalog").update({"v": "v + 1"})
    assert recorded_lock(table) == f"catalog lock in {catalog_url}"
    assert session.sql("SELECT v FROM locked_by_catalog").collect()[0].v == 3


def test_a_table_by_path_takes_the_file_lock(session: HudiSession, tmp_path: Path) -> None:
    path = tmp_path / "by_path"
    create_table(str(path), "by_path", pa.schema([("id", pa.string()), ("v", pa.int32())]),
                 "id", table_type="MERGE_ON_READ")
    handle = session.table_at(str(path))
    handle.insert(session.spark.createDataFrame([("a", 1)], "id STRING, v INT"))
    lock = recorded_lock(HudiTable.open(str(path)))
    assert lock is not None and lock.startswith("file lock ")


def test_the_lock_the_user_names_wins(make_session: Callable[[], HudiSession]) -> None:
    session = make_session()
    session.options[LOCK_PROVIDER] = "in-process"
    table = _create(session, "locked_in_process")
    session.sql("INSERT INTO locked_in_process VALUES ('a', 1)")
    lock = recorded_lock(table)
    assert lock is not None and lock.startswith("in-process lock of process ")
