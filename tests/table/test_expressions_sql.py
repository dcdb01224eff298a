"""SQL UPDATE and MERGE on MOR tables write expression blocks; readers apply them once.

Also checks that the hudi-rs reader (which does not know expression blocks) refuses such a
table instead of misreading it, until a compaction folds the expressions into base files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import hudi
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import hudisql
from hudisql.catalog import SqlCatalog
from hudisql.errors import WriteError
from hudisql.session import HudiSession
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.read.expressions import block_expressions
from hudisql.table.table import HudiTable

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CREATE = ("CREATE TABLE {name} (id INT, c BIGINT, name STRING, ts BIGINT) USING hudi "
          "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = '{kind}')")


@pytest.fixture
def session(spark: SparkSession, tmp_path: Path) -> Iterator[HudiSession]:
    """A HudiSession on the shared SparkSession with a catalog of its own."""
    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=str(tmp_path / "warehouse"), poll_interval=0)
    yield hudisql.connect(spark, warehouse=tmp_path / "warehouse", catalog=catalog)
    catalog.close()


def _rows(path: Path) -> dict[int, tuple[object, object]]:
    table = HudiTable.open(str(path)).read(columns=["id", "c", "name"]).to_pylist()
    return {r["id"]: (r["c"], r["name"]) for r in table}


def _expression_blocks(path: Path) -> list[dict[str, str]]:
    table = HudiTable.open(str(path))
    found = []
    for file_slice in table.file_slices():
        for log in file_slice.log_files:
            for block in scan_log_file(table.storage, log.path):
                ops = block_expressions(block)
                if ops is not None:
                    found.append(ops)
    return found


def test_update_and_merge_add_at_read_time_on_mor(session: HudiSession, tmp_path: Path) -> None:
    session.sql(CREATE.format(name="counts", kind="mor"))
    path = tmp_path / "warehouse" / "counts"
    session.sql("INSERT INTO counts VALUES (1, 10, 'a', 1), (2, 20, 'b', 1), (3, NULL, 'c', 1)")

    assert session.sql("UPDATE counts SET c = c + 1 WHERE id = 1").collect()[0][0] == 1
    assert _expression_blocks(path) == [{"c": "add"}]
    merged = session.sql(
        "MERGE INTO counts AS t USING (SELECT 1 AS id, 5L AS c UNION ALL SELECT 2, 7 "
        "UNION ALL SELECT 3, 1 UNION ALL SELECT 9, 100) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET c = t.c + s.c, name = upper(s.c)").collect()[0][0]
    assert merged == 3  # the source row without a match is not inserted
    assert _expression_blocks(path) == [{"c": "add"}, {"c": "add", "name": "set"}]
    session.sql("UPDATE counts SET c = c - 2 WHERE id IN (1, 2)")
    expected = {1: (14, "5"), 2: (25, "7"), 3: (None, "1")}
    assert _rows(path) == expected
    shown = session.sql("SELECT id, c, name FROM counts ORDER BY id").collect()
    assert {r["id"]: (r["c"], r["name"]) for r in shown} == expected

    # hudi-rs does not know expression blocks: it refuses them (never wrong rows) ...
    with pytest.raises(Exception, match="Invalid metadata key"):
        hudi.HudiTable(str(path)).read()
    # ... until a compaction folds them into base files.
    from hudisql.services.compaction import run_compaction
    from hudisql.table.table import HudiTable

    assert run_compaction(HudiTable.open(str(path))) is not None
    other = pa.Table.from_batches(hudi.HudiTable(str(path)).read()).to_pylist()
    assert {r["id"]: (r["c"], r["name"]) for r in other} == expected


def test_a_merge_with_repeated_matches_is_refused(session: HudiSession, tmp_path: Path) -> None:
    session.sql(CREATE.format(name="dups", kind="mor"))
    session.sql("INSERT INTO dups VALUES (1, 10, 'a', 1)")
    before = _rows(tmp_path / "warehouse" / "dups")
    with pytest.raises(WriteError, match="match the target row"):
        session.sql("MERGE INTO dups AS t USING (SELECT 1 AS id, 1L AS c UNION ALL "
                    "SELECT 1, 2) AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET c = t.c + s.c")
    assert _rows(tmp_path / "warehouse" / "dups") == before
    assert _expression_blocks(tmp_path / "warehouse" / "dups") == []


def test_cow_tables_and_other_assignments_write_whole_rows(
    session: HudiSession, tmp_path: Path
) -> None:
    session.sql(CREATE.format(name="cow", kind="cow"))
    session.sql(CREATE.format(name="mor", kind="mor"))
    for name in ("cow", "mor"):
        session.sql(f"INSERT INTO {name} VALUES (1, 10, 'a', 1), (2, 20, 'b', 1)")
        session.sql(f"UPDATE {name} SET c = c + 1 WHERE id = 1")
        session.sql(f"UPDATE {name} SET name = upper(name), c = c * 2 WHERE id = 2")
        assert _rows(tmp_path / "warehouse" / name) == {1: (11, "a"), 2: (40, "B")}
    # Only the MOR table's additive UPDATE became an expression block.
    assert _expression_blocks(tmp_path / "warehouse" / "mor") == [{"c": "add"}]
