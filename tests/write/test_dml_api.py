"""The Python DML API (HudiTableHandle.update / delete / merge): row-for-row results read by
Spark and by hudi-rs, expression writes, refusals that leave every file as it was, and
managed tables' writes bracketed by a catalog write id."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from hudisql.catalog import SqlCatalog
from hudisql.errors import WriteError
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table import HudiTable
from hudisql.table.format.log.reader import scan_log_file
from hudisql.table.read.expressions import block_expressions
from hudisql.write.dml import DmlResult
from tests.write.trips import Row, check, crash_when_written, frame, spark_rows

pytestmark = pytest.mark.spark

SEED: list[Row] = [("a", 1, "ann", 10.0, "sf"), ("b", 1, "bob", 20.0, "sf"),
                   ("c", 1, "cid", 30.0, "la"), ("d", 1, "dan", 40.0, "la")]


def snapshot(path: str) -> dict[str, bytes]:
    """Every file of the table with its content."""
    return {str(p.relative_to(path)): p.read_bytes() for p in Path(path).rglob("*")
            if p.is_file()}


def expression_ops(handle: HudiTableHandle, done: DmlResult) -> list[dict[str, str] | None]:
    """The expression marking of every log block the commit ``done`` wrote."""
    assert done.commit is not None
    storage = HudiTable.open(handle.path).storage
    paths = [stat.path for stat in done.commit.stats]
    return [block_expressions(block) for path in paths if path
            for block in scan_log_file(storage, path)]


# Each table kind and layout once; the string and Column forms split across them.
VARIANTS = [("MERGE_ON_READ", True, "text"), ("MERGE_ON_READ", False, "column"),
            ("COPY_ON_WRITE", True, "column"), ("COPY_ON_WRITE", False, "text")]


@pytest.mark.parametrize(("table_type", "partitioned", "form"), VARIANTS)
def test_update_delete_merge_read_back_row_for_row(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle],
    table_type: str, partitioned: bool, form: str,
) -> None:
    handle = new_table(table_type, partitioned)
    text = form == "text"
    handle.insert(frame(hudi_session, SEED))
    commits = len(handle.core().timeline.completed())

    # UPDATE: two columns of the rows over 15; the others untouched.
    done = handle.update(
        {"rider": "upper(rider)", "ts": "ts + 1"} if text
        else {"rider": F.upper("rider"), "ts": F.col("ts") + 1},
        "fare > 15" if text else F.col("fare") > 15)
    assert done.num_affected_rows == 3 and done.commit is not None
    rows = [SEED[0], ("b", 2, "BOB", 20.0, "sf"), ("c", 2, "CID", 30.0, "la"),
            ("d", 2, "DAN", 40.0, "la")]
    check(handle, rows)

    # DELETE by condition.
    done = handle.delete("rider = 'CID'" if text else F.col("rider") == "CID")
    assert done.num_affected_rows == 1
    rows = [r for r in rows if r[0] != "c"]
    check(handle, rows)

    # MERGE: delete, update and insert in one commit; the first clause that holds wins.
    source = frame(hudi_session, [("a", 5, "gone", 0.0, "sf"), ("b", 5, "bea", 21.0, "sf"),
                                  ("e", 5, "eve", 50.0, "la"), ("f", 5, "skip", 60.0, "la")])
    builder = handle.merge(source, "t.uuid = s.uuid" if text
                           else F.col("t.uuid") == F.col("s.uuid"))
    if text:
        builder = (builder.when_matched_delete("s.rider = 'gone'")
                   .when_matched_update({"rider": "s.rider", "ts": "s.ts"})
                   .when_not_matched_insert_all("s.rider <> 'skip'"))
    else:
        builder = (builder.when_matched_delete(F.col("s.rider") == "gone")
                   .when_matched_update({"rider": F.col("s.rider"), "ts": F.col("s.ts")})
                   .when_not_matched_insert(
                       {"uuid": F.col("s.uuid"), "ts": F.col("s.ts"), "rider": F.col("s.rider"),
                        "fare": F.col("s.fare"), "city": F.col("s.city")},
                       F.col("s.rider") != "skip"))
    done = builder.execute()
    assert done.num_affected_rows == 3
    check(handle, [("b", 5, "bea", 20.0, "sf"), ("d", 2, "DAN", 40.0, "la"),
                   ("e", 5, "eve", 50.0, "la")])
    # One commit per call.
    assert len(handle.core().timeline.completed()) == commits + 3
    # A call that matches nothing commits nothing.
    assert handle.delete("fare < 0") == DmlResult(0, None)
    assert len(handle.core().timeline.completed()) == commits + 3


def test_expression_writes_on_merge_on_read(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle],
) -> None:
    handle = new_table("MERGE_ON_READ", partitioned=True)
    handle.insert(frame(hudi_session, SEED))
    # SET fare = fare + <literal>: the stored value is read when the log is merged.
    done = handle.update({"fare": "fare + 1.5"}, "city = 'sf'")
    assert done.num_affected_rows == 2
    assert expression_ops(handle, done) == [{"fare": "add"}]
    # MERGE ... SET fare = t.fare + s.fare as text: also an expression write; unmatched
    # source rows insert nothing.
    source = frame(hudi_session, [("a", 9, "x", 100.0, "sf"), ("z", 9, "x", 1.0, "la")])
    done = (handle.merge(source, "t.uuid = s.uuid")
            .when_matched_update({"fare": "t.fare + s.fare"}).execute())
    assert done.num_affected_rows == 1
    assert expression_ops(handle, done) == [{"fare": "add"}]
    # A Column value takes the ordinary path: whole rows, which hudi-rs reads too.
    done = handle.update({"fare": F.col("fare") + 1}, "uuid = 'c'")
    assert expression_ops(handle, done) == [None]
    # hudi-rs does not apply expression blocks; Spark's reads through hudisql do.
    assert spark_rows(handle) == [("a", 1, "ann", 111.5, "sf"), ("b", 1, "bob", 21.5, "sf"),
                                  ("c", 1, "cid", 31.0, "la"), ("d", 1, "dan", 40.0, "la")]


def test_bad_input_is_refused_naming_the_table_and_leaves_every_file(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle],
) -> None:
    handle = new_table("MERGE_ON_READ", partitioned=True)
    handle.insert(frame(hudi_session, SEED))
    before = snapshot(handle.path)
    label = handle.path
    source = frame(hudi_session, SEED[:2])
    refusals: list[tuple[Callable[[], object], str]] = [
        (lambda: handle.update({"nope": "1"}), "has no column nope"),
        (lambda: handle.update({"uuid": "'x'"}), "record key or partition column"),
        (lambda: handle.update({"trips.city": "'x'"}), "record key or partition column"),
        (lambda: handle.update({}), "assigns no column"),
        (lambda: handle.update({"fare": "fare +"}), "does not parse"),
        (lambda: handle.update({"fare": "1"}, "nope > 1"), "UNRESOLVED_COLUMN"),
        (lambda: handle.delete(F.col("nope") == 1), "UNRESOLVED_COLUMN"),
        (lambda: handle.merge(source, "t.uuid = s.uuid").execute(), "has no clause"),
        (lambda: handle.merge(source, "t.uuid = s.uuid", source_alias="t"), "different aliases"),
        (lambda: handle.merge(source, "x.uuid = s.uuid").when_matched_delete().execute(),
         "refer to target columns as t.<column>"),
        (lambda: handle.merge(source.drop("fare"), "t.uuid = s.uuid")
         .when_not_matched_insert_all().execute(), "lacks fare"),
        (lambda: handle.merge(source, "t.uuid = s.uuid")
         .when_not_matched_insert({"uuid": "s.uuid", "tip": "1"}).execute(), "has no column tip"),
        (lambda: handle.merge(source, "t.uuid = s.uuid").when_matched_delete()
         .when_matched_update_all().execute(), "unreachable"),
        # Two source rows for one target row: refused (the expression path counts them).
        (lambda: handle.merge(source.unionByName(source), "t.uuid = s.uuid")
         .when_matched_update({"fare": "t.fare + s.fare"}).execute(), "2 source rows match"),
    ]
    for call, message in refusals:
        with pytest.raises(WriteError, match=message) as raised:
            call()
        assert label in str(raised.value), message
    assert snapshot(handle.path) == before
    check(handle, SEED)


def test_a_managed_tables_handle_writes_inside_catalog_write_ids(
    managed: tuple[HudiSession, SqlCatalog],
) -> None:
    session, theirs = managed
    session.sql("CREATE TABLE dml_m (uuid STRING, ts BIGINT, rider STRING, fare DOUBLE, "
                "city STRING) USING hudi PARTITIONED BY (city) TBLPROPERTIES "
                "(primaryKey = 'uuid', preCombineField = 'ts', type = 'mor')")
    handle = session.table("dml_m")

    def write_ids() -> Any:
        found = theirs.begin_statement(["dml_m"]).get("dml_m").valid_write_ids
        assert found is not None
        return found

    start = write_ids().high_watermark
    handle.upsert(frame(session, SEED))  # the existing write methods are bracketed too
    assert write_ids().high_watermark == start + 1
    handle.update({"rider": "upper(rider)"}, "dml_m.fare > 35")
    assert write_ids().high_watermark == start + 2
    assert ("d", 1, "DAN", 40.0, "la") in spark_rows(handle)

    # A write that fails after its files are written: rolled back, its write id aborted.
    before = spark_rows(handle)

    with crash_when_written(session):
        handle.delete("uuid = 'a'")
    after = write_ids()
    assert after.high_watermark == start + 3 and len(after.aborted_ids) == 1
    assert spark_rows(handle) == before

    # SQL shares the implementation: the target is named by its table name or alias.
    session.sql("UPDATE default.dml_m SET fare = fare * 2 WHERE dml_m.uuid = 'a'")
    session.sql("DELETE FROM dml_m AS m WHERE m.uuid = 'b'")
    assert [(r[0], r[3]) for r in spark_rows(handle)] == [("a", 20.0), ("c", 30.0),
                                                          ("d", 40.0)]
    assert write_ids().high_watermark == start + 5
