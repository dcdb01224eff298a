"""``df.write.format("hudi")`` save modes as Hudi's datasource has them: overwrite with any
operation replaces the rows as a replacecommit (the timeline kept), error/errorifexists and
ignore as Spark defines them; and a save from a SparkSession hudisql never extended is
refused with what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudisql.errors import WriteError
from hudisql.session import HudiSession
from hudisql.table.table import HudiTable
from tests.write.test_spark_save import BASE, COLUMNS, OPTIONS, _oracle, _save, _spark_rows

pytestmark = pytest.mark.spark

OPERATION = "hoodie.datasource.write.operation"


@pytest.mark.parametrize("operation", ["insert", "upsert", "bulk_insert"])
def test_overwrite_with_any_operation_replaces_the_rows(
        hudi_session: HudiSession, tmp_path: Path, operation: str) -> None:
    path = tmp_path / "t"
    _save(hudi_session, BASE, path, "overwrite", **{**OPTIONS, OPERATION: operation})
    first = [i.timestamp for i in HudiTable.open(str(path)).timeline.completed()]
    new = [("n1", 2, "rider-N", 1.0, "sf")]
    _save(hudi_session, new, path, "overwrite", **{**OPTIONS, OPERATION: operation})
    assert _spark_rows(hudi_session, path) == new
    assert _oracle(path) == new
    timeline = HudiTable.open(str(path)).timeline
    done = timeline.completed()
    assert [i.timestamp for i in done[:-1]] == first  # the timeline is kept
    assert (done[-1].action, timeline.commit_metadata(done[-1]).operation_type) == (
        "replacecommit", "INSERT_OVERWRITE_TABLE")


def test_error_and_errorifexists_refuse_an_existing_table_ignore_skips_it(
        hudi_session: HudiSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    _save(hudi_session, BASE, path, "error", **OPTIONS)  # absent: created
    before = sorted(p.name for p in (path / ".hoodie").iterdir())
    for mode in ("error", "errorifexists", "default"):
        with pytest.raises(WriteError, match="save mode is errorifexists"):
            _save(hudi_session, [("x", 1, "r", 1.0, "sf")], path, mode, **OPTIONS)
    _save(hudi_session, [("x", 1, "r", 1.0, "sf")], path, "ignore", **OPTIONS)
    assert _spark_rows(hudi_session, path) == sorted(BASE)
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == before


def test_a_plain_spark_session_is_told_to_call_connect(
        hudi_session: HudiSession, tmp_path: Path) -> None:
    plain = hudi_session.spark.newSession()  # same application, never given to connect()
    path = tmp_path / "t"
    writer = plain.createDataFrame(BASE, COLUMNS).write.format("hudi").mode("overwrite")
    with pytest.raises(WriteError, match=r"call hudisql\.connect\(spark\)"):
        writer.options(**OPTIONS).save(str(path))
    assert not path.exists()
