"""Clustering through SQL, procedures and ``handle.maintenance``, as Spark jobs, on tables
with a metadata table (files, column stats, partition stats, record and secondary indexes):
rows equal through SQL, ``hudisql.read_table`` and hudi-rs; the indexes stay exact (the
suite's fixture validates them after each test too); pruning before and after."""

from __future__ import annotations

from pathlib import Path

import pytest

import hudisql
from hudisql.errors import CommitConflictError, TableServiceError
from hudisql.session import HudiSession
from hudisql.sql.timeline import timeline_rows
from hudisql.table.table import HudiTable
from tests.services.indexing import assert_exact, snapshot
from tests.services.kit import rows, rs_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CREATE = ("CREATE TABLE ev (id INT, v INT, ts BIGINT, city STRING) USING hudi "
          "PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', "
          "type = '{kind}')")


def _events(session: HudiSession, kind: str) -> Path:
    """Four inserts in arrival order (id), ``v`` uncorrelated with it, then an update that
    leaves log files (MOR) in some groups; column stats, partition stats, record and
    secondary indexes."""
    session.options["hoodie.parquet.small.file.limit"] = "0"  # one file group per insert
    session.sql(CREATE.format(kind=kind))
    for batch in range(4):
        values = ", ".join(f"({i}, {(i * 37) % 101}, 1, '{'sf' if i % 3 else 'la'}')"
                           for i in range(batch * 24, batch * 24 + 24))
        session.sql(f"INSERT INTO ev VALUES {values}")
    session.sql("CALL run_indexer(table => 'ev', mode => 'scheduleAndExecute', "
                "index_types => 'COLUMN_STATS,RECORD_INDEX,PARTITION_STATS')").collect()
    session.sql("CREATE INDEX idx_v ON ev (v)")
    # Whole rows (an UPDATE ... SET v = v + 1 would write expression blocks, which hudi-rs
    # refuses until they are compacted or clustered).
    changed = [(i, (i * 37) % 101 + 1, 2, "sf" if i % 3 else "la") for i in range(0, 96, 5)]
    session.table("ev").write(session.spark.createDataFrame(
        changed, "id INT, v INT, ts BIGINT, city STRING"), "upsert")
    return Path(session.table("ev").path)


def _kept(session: HudiSession, flt: str) -> int:
    *_, total = session.sql(f"CALL show_data_skipping(table => 'ev', filter => \"{flt}\")"
                            ).collect()
    return int(total.file_slices_after)


def test_run_clustering_sql_keeps_rows_and_indexes_and_prunes(session: HudiSession) -> None:
    # Merge-on-read with log files in the clustered groups (copy-on-write: the core tests).
    path = _events(session, "mor")
    table = HudiTable.open(str(path))
    assert any(s.has_log_files for s in table.file_slices())
    query = "SELECT id, v, ts, city, _hoodie_commit_time FROM ev ORDER BY id"
    before, sql_before = rows(path), session.sql(query).collect()
    kept_before = _kept(session, "v BETWEEN 10 AND 15")
    done = session.sql("RUN CLUSTERING ON ev ORDER BY v").collect()
    assert [(r.state, r.involved_partitions) for r in done] == [
        ("COMPLETED", "city=la,city=sf")]
    assert rows(path) == before == rs_rows(path)
    assert session.sql(query).collect() == sql_before
    assert hudisql.read_table(str(path)).num_rows == 96
    assert_exact(str(path))
    # Sorted by v, a range of v is in one file slice per partition at most.
    kept_after = _kept(session, "v BETWEEN 10 AND 15")
    assert kept_after <= 2 < kept_before
    # The secondary index and the record index find rows in their new file groups.
    want = sorted(r["id"] for r in before if r["v"] == 38)
    assert want and sorted(r.id for r in session.sql("SELECT id FROM ev WHERE v = 38"
                                                     ).collect()) == want
    assert [r.id for r in session.sql("SELECT id FROM ev WHERE id = 7").collect()] == [7]
    [shown] = session.sql("SHOW CLUSTERING ON ev").collect()
    assert (shown.timestamp, shown.state) == (done[0].timestamp, "COMPLETED")
    [row] = [r for r in timeline_rows(HudiTable.open(str(path)))
             if r.instant_time == done[0].timestamp]
    assert (row.action, row.operation) == ("clustering", "CLUSTER")
    # Rolled back, the table and its indexes are as before the clustering.
    session.sql(f"CALL rollback_to_instant(table => 'ev', instant_time => "
                f"'{done[0].timestamp}')").collect()
    assert rows(path) == before == rs_rows(path)
    assert _kept(session, "v BETWEEN 10 AND 15") == kept_before
    assert_exact(str(path))


def test_procedures_handle_inline_and_refusals(session: HudiSession) -> None:
    path = _events(session, "mor")
    before = rows(path)
    zorder = session.sql("CALL run_clustering(table => 'ev', order => 'v,id', "
                         "order_strategy => 'z-order', op => 'schedule', "
                         "predicate => \"city = 'sf'\")").collect()
    assert [(r.state, r.involved_partitions) for r in zorder] == [("REQUESTED", "city=sf")]
    same = snapshot(str(path))
    with pytest.raises(TableServiceError, match="sort column 'nope' is not a column"):
        session.sql("RUN CLUSTERING ON ev ORDER BY nope")
    with pytest.raises(TableServiceError, match="'v' is not a partition column"):
        session.sql("CALL run_clustering(table => 'ev', predicate => 'v > 3')")
    assert snapshot(str(path)) == same
    # A Spark write updating a file group under the pending clustering is refused.
    update = session.spark.createDataFrame([(1, 777, 9, "sf")],
                                           "id INT, v INT, ts BIGINT, city STRING")
    with pytest.raises(CommitConflictError, match="pending clustering"):
        session.table("ev").write(update, "upsert")
    assert rows(path) == before
    out = session.sql("CALL run_clustering(table => 'ev', op => 'execute', "
                      "show_involved_partition => false)").collect()
    assert [(r.timestamp, r.state, r.involved_partitions) for r in out] == [
        (zorder[0].timestamp, "COMPLETED", "*")]
    assert rows(path) == before == rs_rows(path)
    session.table("ev").write(update, "upsert")  # retried once the clustering completed
    before = rows(path)  # the new baseline
    assert [(r["v"], r["ts"]) for r in rows(path) if r["id"] == 1] == [(777, 9)]
    # A Z-order over (v, id) prunes on either column.
    assert _kept(session, "v BETWEEN 10 AND 15 AND city = 'sf'") < 8
    assert _kept(session, "id BETWEEN 10 AND 15 AND city = 'sf'") < 8
    handle = session.table("ev")
    results = handle.maintenance.run_clustering(order=["v"], layout="hilbert")
    assert [r.instant for r in results] and rows(path) == before == rs_rows(path)
    assert [r["state"] for r in handle.maintenance.show_clustering().to_pylist()] == [
        "COMPLETED", "COMPLETED"]
    # Inline: after the write that makes max.commits writes since the last clustering.
    df = session.spark.createDataFrame([(500, 1, 9, "la")],
                                       "id INT, v INT, ts BIGINT, city STRING")
    handle.write(df, "upsert", **{"hoodie.clustering.inline": "true",
                                  "hoodie.clustering.inline.max.commits": "1",
                                  "hoodie.clustering.plan.strategy.sort.columns": "v"})
    shown = handle.maintenance.show_clustering().to_pylist()
    assert len(shown) == 3 and shown[0]["state"] == "COMPLETED"
    assert rows(path) == rs_rows(path) and len(rows(path)) == 97
    assert_exact(str(path))
