"""Tagging time per index type (``hoodie.index.type``) on one local session.

    .venv/bin/python benchmarks/bench_tagging.py [--rows 1000000] [--updates 0.1]
        [--repeat 3] [--buckets 16] [--no-upsert]

Builds a MERGE_ON_READ table of ``--rows`` rows over 8 partitions (bulk insert) with a
record index (built by the indexer, as ``CREATE INDEX record_index`` does) and bloom
filters (the metadata table's ``bloom_filters``), and a bucketed copy of the same rows
(``--buckets`` per partition). Then, for an upsert of ``rows/5`` records of which
``--updates`` are updates: the tagging alone (staged records joined to their stored file
groups, forced by counting the tagged updates, best of ``--repeat``) and the whole upsert
(once, on a copy) per index type. Prints each type's times and their ratio to ``SIMPLE``;
every type must find the same number of stored keys (``BUCKET`` looks none up: its count
is of records whose bucket has a file group).

Keys are ``key-<n>``: increasing, so the bloom index's key ranges prune files the way
time-ordered keys do.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import functions as F

import hudisql
from benchmarks.bench_write_read import SCHEMA, _records, _timed
from hudisql.metadata.build import build_partitions
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.table.write.slices import check_writable
from hudisql.write.index_settings import BUCKET, BUCKET_NUM, INDEX_TYPE, INDEX_TYPES, IndexSettings
from hudisql.write.staging import stage_in_jvm
from hudisql.write.tagging import FILE_ID, TagContext, tag_records


def build_bloom_filters(path: str) -> None:
    """Build the table's ``bloom_filters`` metadata partition (hudisql's CREATE INDEX does
    not build it yet; its commits keep it once built)."""
    build_partitions(HudiTable.open(path), ["bloom_filters"])


def tag_once(session, path: str, batch, index_type: str) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """Seconds to tag ``batch`` against the table at ``path`` with ``index_type``, and how
    many records got a stored file group."""
    table = HudiTable.open(path)
    props = table.properties
    settings = IndexSettings.resolve({INDEX_TYPE: index_type}, table)
    staged = stage_in_jvm(batch, tuple(props.record_key_fields), tuple(props.partition_fields),
                          props.hive_style_partitioning, check_writable(table), True)
    assert staged is not None
    touched = [r[0] for r in staged.select("_hoodie_partition_path").distinct().collect()]
    ctx = TagContext(session.spark, table, max(1, session.spark.sparkContext.defaultParallelism))
    found: list[int] = []

    def run() -> None:
        tagged = tag_records(settings, ctx, staged, touched)
        found.append(tagged.frame.where(F.col(FILE_ID).isNotNull()).count())

    return _timed(run), found[-1]


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--updates", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3, help="tagging runs; best is kept")
    parser.add_argument("--buckets", type=int, default=16, help="BUCKET: buckets per partition")
    parser.add_argument("--no-upsert", action="store_true", help="time the tagging only")
    args = parser.parse_args()
    upsert_rows = args.rows // 5
    n_updates = int(upsert_rows * args.updates)
    work = Path(tempfile.mkdtemp(prefix="hudisql-bench-tagging-"))
    session = hudisql.connect(warehouse=work / "wh", conf={"spark.master": "local[2]"})
    spark = session.spark
    try:
        base = _records(spark, 0, args.rows, 1)
        path = str(work / "indexed")
        create_table(path, "bench", SCHEMA, "uuid", "city", "ts", "MERGE_ON_READ")
        handle = session.table_at(path)
        load = _timed(lambda: handle.bulk_insert(base))
        t_ri = _timed(lambda: handle.indexes.create("record_index", ["uuid"]))
        t_bloom = _timed(lambda: build_bloom_filters(path))
        bucketed = str(work / "bucketed")
        create_table(bucketed, "bench", SCHEMA, "uuid", "city", "ts", "MERGE_ON_READ",
                     {INDEX_TYPE: BUCKET, BUCKET_NUM: str(args.buckets)})
        t_bucket_load = _timed(lambda: session.table_at(bucketed).bulk_insert(base))
        batch = _records(spark, args.rows - n_updates, upsert_rows, 2).cache()
        batch.count()
        print(f"{args.rows} rows: bulk insert {load:.1f} s, record index {t_ri:.1f} s, "
              f"bloom filters {t_bloom:.1f} s, bucketed bulk insert {t_bucket_load:.1f} s; "
              f"upsert {upsert_rows} records, {n_updates} updates")
        results: dict[str, tuple[float, int, float | None]] = {}
        for index_type in INDEX_TYPES:
            target = bucketed if index_type == BUCKET else path
            runs = [tag_once(session, target, batch, index_type) for _ in range(args.repeat)]
            best = min(t for t, _ in runs)
            upsert = None
            if not args.no_upsert:
                copy = work / f"copy_{index_type.lower()}"
                shutil.copytree(target, copy)
                upsert = _timed(lambda c=copy, t=index_type: session.table_at(str(c)).upsert(
                    batch, **{INDEX_TYPE: t}))
            results[index_type] = (best, runs[-1][1], upsert)
        simple_tag, _, simple_upsert = results["SIMPLE"]
        print(f"{'index type':<14}{'tagging s':>10}{'x SIMPLE':>10}{'stored':>10}"
              f"{'upsert s':>10}{'x SIMPLE':>10}")
        for index_type, (tag, stored, upsert) in results.items():
            up = "" if upsert is None else f"{upsert:>10.2f}"
            up_ratio = ("" if upsert is None or simple_upsert is None
                        else f"{upsert / simple_upsert:>10.2f}")
            print(f"{index_type:<14}{tag:>10.2f}{tag / simple_tag:>10.2f}{stored:>10}{up}"
                  f"{up_ratio}")
        expected = {r for t, (_, r, _) in results.items() if t != BUCKET}
        assert expected == {n_updates}, f"stored keys found differ: {results}"
    finally:
        session.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
