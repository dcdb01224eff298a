"""Data skipping returns exactly a full scan's rows (issue #13's matrix).

Predicates (=, IN, <, <=, >, >=, IS NULL, IS NOT NULL, LIKE 'x%', a conjunction, an OR, a
partition column, a column no index covers) x index types (record index on ``uuid``,
secondary index on ``rider``, column stats on ``fare``, ``rider`` and ``ts``, partition
stats, none) x read paths (SQL by name, reused DataFrames, temp views,
self-joins, unions) on a merge-on-read and a copy-on-write table whose slices have log
files and not. Skipping is on (the default). Each path runs all predicates in one query
(a UNION ALL, itself the union-of-one-table case), against the same query on a full scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlglot
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sqlglot import exp

import hudisql
from hudisql.metadata.participant import participants_for
from hudisql.read.pruning import select_slices
from hudisql.session import HudiSession
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("rider", pa.string()),
                    ("fare", pa.float64()), ("seq", pa.int64()), ("city", pa.string())])
CITIES = ("c0", "c1", "c2")

#: (predicate, whether an index or the partition path must prune some slice).
PREDICATES: list[tuple[str, bool]] = [
    ("uuid = 'u2-c1-0'", True),                        # record index, bloom filters
    ("uuid IN ('u0-c0-1', 'u3-c0-2')", True),  # one partition; u3 written after the index
    ("rider = 'r31'", True),                           # secondary index
    ("rider IN ('r00', 'r21')", True),
    ("fare = 211.0", True),                            # column stats, partition stats
    ("fare < 50", True),
    ("fare <= 100", True),
    ("ts > 2", True),                                  # (column stats on an integer:
    ("ts >= 3", True),                                 # > on a double never prunes, NaN)
    ("fare IS NULL", True),
    ("fare IS NOT NULL", False),
    ("rider LIKE 'r1%'", True),
    ("seq = 2", False),                                # no index
    ("city = 'c1'", True),                             # partition path
    ("ts > 2 AND rider = 'r31'", True),
    ("fare < 50 OR rider = 'r31'", False),
]


def _batch(b: int) -> list[dict[str, Any]]:
    """Batch ``b``: 4 rows per city, each batch a new file group per city; fares and riders
    clustered by file group (``fare = 100b + 10c + i``)."""
    return [{"uuid": f"u{b}-{city}-{i}", "ts": b, "rider": f"r{b}{i % 2}",
             "fare": None if (b, c, i) == (0, 0, 3) else float(100 * b + 10 * c + i),
             "seq": i, "city": city}
            for c, city in enumerate(CITIES) for i in range(4)]


def _build(session: HudiSession, root: Path, name: str, table_type: str) -> HudiTable:
    """The table: 4 insert batches, every index, then writes the indexes must follow."""
    path = root / name
    client = WriteClient(create_table(path, name, SCHEMA, "uuid", ["city"], "ts", table_type))
    for b in range(3):
        client.insert(_batch(b))
    session.sql(f"CREATE TABLE {name} USING hudi LOCATION '{path}'")
    session.sql(f"CREATE INDEX idx_rider ON {name} (rider)")  # and the record index on uuid
    session.sql(f"CREATE INDEX stats ON {name} USING column_stats (fare, rider, ts)")
    session.sql(f"CREATE INDEX keys_bloom ON {name} USING bloom_filters (uuid)")
    session.sql(f"CREATE INDEX rider_bloom ON {name} USING bloom_filters (rider)")
    session.sql(f"CALL run_indexer(table => '{name}', mode => 'scheduleAndExecute', "
                "index_types => 'PARTITION_STATS')")
    table = HudiTable.open(str(path))
    client = WriteClient(table, participants=participants_for(table))
    # An update moving a fare out of its file's range, a delete, a new batch.
    client.upsert([{**_batch(1)[0], "ts": 9, "fare": 999.5}])
    client.delete(["u2-c1-1"])
    client.insert(_batch(3))
    return HudiTable.open(str(path))


@pytest.fixture(scope="module")
def tables(hudi_session: HudiSession, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[dict[str, HudiTable]]:
    root = tmp_path_factory.mktemp("skipping")
    built = {"skip_mor": _build(hudi_session, root, "skip_mor", "MERGE_ON_READ"),
             "skip_cow": _build(hudi_session, root, "skip_cow", "COPY_ON_WRITE")}
    yield built
    for name in built:
        assert hudi_session.sql(
            f"CALL validate_metadata_table(table => '{name}')").collect() == []


#: The predicates the costlier paths run (one per index kind, an OR, a conjunction).
SOME = [0, 2, 5, 11, 15]


def _union(source: str, predicates: dict[int, str]) -> str:
    return " UNION ALL ".join(f"SELECT {i} AS q, uuid FROM {source} WHERE {p}"
                              for i, p in predicates.items())


def _grouped(df: DataFrame, wanted: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {i: [] for i in wanted}
    for row in df.collect():
        out[row.q].append(row.uuid)
    return {q: sorted(uuids) for q, uuids in out.items()}


@pytest.fixture(scope="module")
def full_scans(hudi_session: HudiSession, tables: dict[str, HudiTable]
               ) -> dict[str, dict[int, list[str]]]:
    """The expected rows: every predicate over the snapshot as the pure-Python reader
    reads it (no Spark data source, no pruning)."""
    spark = hudi_session.spark
    out = {}
    for name, table in tables.items():
        spark.createDataFrame(hudisql.read_table(table.base_path).select(
            SCHEMA.names)).createOrReplaceTempView("skip_full_scan")
        try:
            out[name] = _grouped(spark.sql(_union("skip_full_scan", dict(enumerate(
                p for p, _ in PREDICATES)))), list(range(len(PREDICATES))))
        finally:
            spark.catalog.dropTempView("skip_full_scan")
        assert sum(map(len, out[name].values())) > 0
    return out


def _qualified(predicate: str, alias: str) -> str:
    tree = sqlglot.parse_one(predicate, read="spark")
    for col in tree.find_all(exp.Column):
        col.set("table", exp.to_identifier(alias))
    return tree.sql(dialect="spark")


def _expected(full: dict[int, list[str]], wanted: list[int]) -> dict[int, list[str]]:
    return {q: full[q] for q in wanted}


@pytest.mark.parametrize("name", ["skip_mor", "skip_cow"])
def test_sql_by_name_and_self_joins(hudi_session: HudiSession,
                                    full_scans: dict[str, dict[int, list[str]]],
                                    name: str) -> None:
    full = full_scans[name]
    everything = list(range(len(PREDICATES)))
    # Every predicate, one view per reference (a union of one table), each pruned by its own.
    union = _union(name, {i: p for i, (p, _) in enumerate(PREDICATES)})
    assert _grouped(hudi_session.sql(union), everything) == full
    # Self-joins: each side pruned by its own qualified conjuncts.
    joined = " UNION ALL ".join(
        f"SELECT {i} AS q, a.uuid FROM {name} a JOIN {name} b ON a.uuid = b.uuid "
        f"WHERE {_qualified(PREDICATES[i][0], 'a')} AND {_qualified(PREDICATES[i][0], 'b')}"
        for i in SOME)
    assert _grouped(hudi_session.sql(joined), SOME) == _expected(full, SOME)
    spark = hudi_session.spark
    assert not [t.name for t in spark.catalog.listTables() if t.isTemporary]  # none left


@pytest.mark.parametrize("name", ["skip_mor", "skip_cow"])
def test_reused_dataframes_and_temp_views(hudi_session: HudiSession,
                                          tables: dict[str, HudiTable],
                                          full_scans: dict[str, dict[int, list[str]]],
                                          name: str) -> None:
    spark = hudi_session.spark
    full = full_scans[name]
    handle = hudi_session.table(name)
    frames = [handle.read(where=PREDICATES[i][0]).select(F.lit(i).alias("q"), "uuid")
              for i in SOME]
    frames += [spark.read.format("hudi").option("hudisql.read.where", PREDICATES[i][0])
               .load(tables[name].base_path).where(PREDICATES[i][0])
               .select(F.lit(i).alias("q"), "uuid") for i in SOME]
    both = frames[0]
    for frame in frames[1:]:
        both = both.unionByName(frame)
    twice = {q: sorted(u + u) for q, u in _expected(full, SOME).items()}
    assert _grouped(both, SOME) == twice
    assert _grouped(both.where("q >= 0"), SOME) == twice  # the same relations again
    # A temp view of a pruned read, queried with and without a filter.
    predicate = PREDICATES[5][0]
    handle.read(where=predicate).createOrReplaceTempView("skip_view")
    try:
        assert sorted(r.uuid for r in spark.sql(
            f"SELECT uuid FROM skip_view WHERE {predicate}").collect()) == full[5]
        assert spark.sql("SELECT count(*) AS n FROM skip_view").collect()[0].n == len(full[5])
    finally:
        spark.catalog.dropTempView("skip_view")


@pytest.mark.parametrize("name", ["skip_mor", "skip_cow"])
def test_indexes_prune_slices_and_queries_read_only_the_kept_ones(
        hudi_session: HudiSession, tables: dict[str, HudiTable], name: str) -> None:
    table = tables[name]
    slices = table.file_slices()
    assert len(slices) == 12  # 4 batches x 3 cities, one file group each
    if name == "skip_mor":
        logs = [s for s in slices if s.log_files]
        assert 0 < len(logs) < len(slices)  # slices with logs and slices without
    for predicate, prunes in PREDICATES:
        kept = select_slices(table, slices, predicate).kept
        if prunes:
            assert len(kept) < len(slices), predicate
        off = select_slices(table, slices, predicate, data_skipping=False).kept
        assert {s.file_id for s in kept} <= {s.file_id for s in off}
    # The point lookup reads fewer slices than the table has; with skipping off, all.
    lookup = "uuid = 'u2-c1-0'"
    pruned = len(select_slices(table, slices, lookup).kept)
    assert pruned < len(slices)
    assert len(select_slices(table, slices, lookup, data_skipping=False).kept) == len(slices)
    # Bloom filters prune where they apply: of record keys (base files alone), of a
    # column's values (every file of a slice).
    steps = {st.index: st for st in select_slices(table, slices, lookup).steps}
    assert steps["bloom_filters"].after < steps["bloom_filters"].before
    for predicate in ("rider = 'r31'", "rider IN ('r00', 'r21')"):
        steps = {st.index: st for st in select_slices(table, slices, predicate).steps}
        bloom = steps["expr_index_rider_bloom"]
        assert bloom.after < bloom.before, predicate
    # Spark's parquet reader reads only the kept base files (with driver reads off; those of
    # slices with logs too, merged by Spark); with skipping off, all of them.
    hudi_session.sql("SET hudisql.read.local.max.bytes=0")
    try:
        files = hudi_session.sql(f"SELECT * FROM {name} WHERE {lookup}").inputFiles()
        kept = select_slices(table, slices, lookup).kept
        assert len(files) == len([s for s in kept if s.base_file is not None])
        hudi_session.sql("SET hoodie.enable.data.skipping=false")
        off = hudi_session.sql(f"SELECT * FROM {name} WHERE {lookup}")
        assert len(off.inputFiles()) == len([s for s in slices if s.base_file is not None])
        assert [r.uuid for r in off.collect()] == ["u2-c1-0"]
    finally:
        hudi_session.sql("SET hoodie.enable.data.skipping=true")
        hudi_session.sql("RESET hudisql.read.local.max.bytes")
    # With them on (the default), the kept slice is read on the driver: no file for Spark.
    local = hudi_session.sql(f"SELECT * FROM {name} WHERE {lookup}")
    assert local.inputFiles() == [] and [r.uuid for r in local.collect()] == ["u2-c1-0"]
