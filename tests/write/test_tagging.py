"""Upserts tag through Hudi's index types (``hoodie.index.type``): every type gives exactly
the rows of ``SIMPLE``.

One matrix: index type x MOR/COW x partitioned or not, for a plain upsert (updates,
inserts, deletes marked ``_hoodie_is_deleted``) and a delete; Spark task retries
(``local[2,4]``, the first attempt of each write task fails) in a driver of its own; two
writers whose instants are both written before either commits (a barrier). Each result is
the model's, which ``SIMPLE`` (a row of the matrix) gives too, read through the ``hudi``
data source and hudi-rs. Bad settings are refused before any instant.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudisql.errors import CommitConflictError, WriteError
from hudisql.metadata.bloom import BloomFilter
from hudisql.metadata.build import build_partitions
from hudisql.metadata.partitions import java_string_hash
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.table.write.records import PARTITION_PATH, RECORD_KEY
from hudisql.table.write.small_files import SMALL_FILE_LIMIT
from hudisql.write.driver_lookup import DRIVER_LOOKUP_MAX_RECORDS
from hudisql.write.index_settings import (
    BUCKET,
    BUCKET_HASH_FIELD,
    BUCKET_NUM,
    INDEX_TYPE,
    IndexSettings,
)
from hudisql.write.pipeline import FAULT_AFTER_FILES
from hudisql.write.tagging import (
    FOOTER_BLOOM,
    FOOTER_BLOOM_TYPE,
    _bucket_file_ids,
    bucket_file_id,
    bucket_id,
    keys_in_base_file,
)
from tests.fixtures import copy_table, table_path
from tests.write.conftest import TRIP_SCHEMA
from tests.write.trips import check

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
WAIT = 120.0  # a barrier never waits this long unless the other side failed
TYPES = ["SIMPLE", "BLOOM", "RECORD_INDEX", "BUCKET"]
CITIES = ("sf", "la", "ny")
Row = tuple[Any, ...]
TRIP_SCHEMA_DDL = "uuid string, ts long, rider string, fare double, city string"
MARKED = ("uuid string, ts long, rider string, fare double, city string, "
          "_hoodie_is_deleted boolean")


def _base(n: int = 30) -> list[Row]:
    return [(f"k{i:03d}", 1, f"rider-{i}", float(i), CITIES[i % 3]) for i in range(n)]


def _upsert() -> list[Row]:
    """Updates (newer ts), a stale update that loses, inserts, deletes of stored and absent
    keys, as (uuid, ts, rider, fare, city, deleted)."""
    updates = [(f"k{i:03d}", 2, f"new-{i}", 100.0 + i, CITIES[i % 3], False) for i in (0, 4, 8, 13)]
    stale = [("k005", 0, "stale", -1.0, CITIES[5 % 3], False)]
    inserts = [(f"n{i:03d}", 1, f"ins-{i}", 500.0 + i, CITIES[i % 3], False) for i in range(5)]
    deletes = [(f"k{i:03d}", 3, "x", 0.0, CITIES[i % 3], True) for i in (1, 2, 21)]
    absent = [("zz999", 3, "x", 0.0, "sf", True)]
    return updates + stale + inserts + deletes + absent


def _apply(rows: list[Row], upsert: list[Row]) -> list[Row]:
    """The model of an upsert with precombine ``ts``."""
    table = {r[0]: r for r in rows}
    for row in upsert:
        key, deleted = row[0], row[5]
        old = table.get(key)
        if old is not None and row[1] < old[1]:
            continue
        if deleted:
            table.pop(key, None)
        else:
            table[key] = row[:5]
    return sorted(table.values())


def _table(session: HudiSession, tmp_path: Path, index_type: str, table_type: str,
           partitioned: bool, name: str = "trips", buckets: int = 4) -> HudiTableHandle:
    """A trips table holding ``_base()``, ready for ``index_type``: bucketed, or with its
    record index or bloom filters built."""
    path = tmp_path / f"{name}_{index_type.lower()}_{table_type.lower()}_{int(partitioned)}"
    options = ({INDEX_TYPE: "BUCKET", BUCKET_NUM: str(buckets)}
               if index_type == "BUCKET" else {})
    create_table(str(path), name, TRIP_SCHEMA, "uuid", "city" if partitioned else (), "ts",
                 table_type, options)
    handle = session.table_at(str(path))
    handle.insert(session.spark.createDataFrame(_base(), TRIP_SCHEMA_DDL))
    if index_type == "RECORD_INDEX":
        _build(str(path), ("files", "record_index"))
    elif index_type == "BLOOM" and partitioned:  # unpartitioned: ranges (footers) only
        _build(str(path), ("files", "bloom_filters"))
    return handle


def _build(path: str, partitions: tuple[str, ...]) -> None:
    """Build metadata partitions from the table, as the indexer's end state."""
    build_partitions(HudiTable.open(path), partitions)


def _write(handle: HudiTableHandle, session: HudiSession, rows: list[Row], index_type: str,
           **options: str) -> Any:
    df = session.spark.createDataFrame(rows, MARKED)
    return handle.upsert(df, **{INDEX_TYPE: index_type, **options})


def _one_group_per_bucket(handle: HudiTableHandle, buckets: int) -> None:
    """Each partition's file groups are distinct buckets (ids start with the number)."""
    groups = [(s.partition_path, s.file_id) for s in handle.core().file_slices()]
    assert len({(p, int(f[:8])) for p, f in groups}) == len(groups)
    assert all(int(f[:8]) < buckets for _, f in groups)


def _snapshot(path: str) -> list[tuple[str, bytes]]:
    return sorted((str(p.relative_to(path)), p.read_bytes())
                  for p in Path(path).rglob("*") if p.is_file())


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "flat"])
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
@pytest.mark.parametrize("index_type", TYPES)
def test_upsert_and_delete_give_simple_rows(hudi_session: HudiSession, tmp_path: Path,
                                            index_type: str, table_type: str,
                                            partitioned: bool) -> None:
    handle = _table(hudi_session, tmp_path, index_type, table_type, partitioned)
    expected = _apply(_base(), _upsert())
    _write(handle, hudi_session, _upsert(), index_type)
    # A second upsert meets slices with log files (merge-on-read) or rewritten files.
    again = [("n001", 5, "again", 1.0, CITIES[1], False), ("k004", 5, "again", 2.0, "la", False),
             ("n900", 1, "fresh", 3.0, "ny", False), ("k010", 9, "x", 0.0, CITIES[1], True)]
    expected = _apply(expected, again)
    _write(handle, hudi_session, again, index_type)
    # A delete of stored and absent keys.
    gone = [r for r in expected if r[0] in ("k003", "n002")] + [("zz1", 1, "x", 0.0, "sf")]
    handle.delete(hudi_session.spark.createDataFrame(gone, TRIP_SCHEMA_DDL),
                  **{INDEX_TYPE: index_type})
    expected = [r for r in expected if r[0] not in ("k003", "n002")]
    check(handle, expected)
    if index_type == "BUCKET":
        _one_group_per_bucket(handle, 4)


def test_driver_lookup_tags_as_the_spark_join(hudi_session: HudiSession,
                                              tmp_path: Path) -> None:
    """The SIMPLE lookup joined on the driver (the default for small writes) and Spark's
    shuffle join (``hudisql.write.driver.lookup.max.records=0``) tag alike: the same updates
    reach the same stored file groups, and the rows are the model's."""
    handle = _table(hudi_session, tmp_path, "SIMPLE", "MERGE_ON_READ", True)
    # A second file group per partition (small files off), so lookups span groups.
    _write(handle, hudi_session, [(f"m{i:03d}", 1, "m", 1.0, CITIES[i % 3], False)
                                  for i in range(9)], "SIMPLE", **{SMALL_FILE_LIMIT: "0"})
    expected = _apply(_apply(_base(), [(f"m{i:03d}", 1, "m", 1.0, CITIES[i % 3], False)
                                       for i in range(9)]), _upsert())
    stored = {(s.partition_path, s.file_id) for s in handle.core().file_slices()}
    updated = {}
    for limit in ("0", "1000"):
        copy = tmp_path / f"copy_{limit}"
        shutil.copytree(handle.core().base_path, copy)
        target = hudi_session.table_at(str(copy))
        result = _write(target, hudi_session, [*_upsert(), ("m004", 7, "u", 2.0, "la", False)],
                        "SIMPLE", **{DRIVER_LOOKUP_MAX_RECORDS: limit, SMALL_FILE_LIMIT: "0"})
        updated[limit] = sorted((s.partition_path, s.file_id, s.num_update_writes)
                                for s in result.stats if (s.partition_path, s.file_id) in stored)
        check(target, _apply(expected, [("m004", 7, "u", 2.0, "la", False)]))
    assert updated["0"] == updated["1000"] and updated["0"]


@pytest.mark.slow
def test_task_retries_give_simple_rows(hudi_session: HudiSession, tmp_path: Path) -> None:
    """Each index type's upsert in a driver whose write tasks fail once (``local[2,4]``)."""
    handles = {t: _table(hudi_session, tmp_path, t, "MERGE_ON_READ", True) for t in TYPES}
    writes = [{"path": h.path, "rows": _upsert(),
               "options": {INDEX_TYPE: t, FAULT_AFTER_FILES: "1"}} for t, h in handles.items()]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    brief = {"master": "local[2,4]", "writes": writes}
    proc = subprocess.run([sys.executable, "-m", "tests.write.tagging_child", json.dumps(brief)],
                          cwd=REPO, env=env, text=True, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("RESULT ") == len(TYPES)
    expected = _apply(_base(), _upsert())
    for handle in handles.values():
        check(handle, expected)
        assert not handle.core().timeline.pending()


@pytest.mark.parametrize("index_type", TYPES)
def test_concurrent_writers_give_simple_rows(hudi_session: HudiSession, tmp_path: Path,
                                             index_type: str) -> None:
    """Two upserts to other partitions, both written before either commits: both commit."""
    handle = _table(hudi_session, tmp_path, index_type, "MERGE_ON_READ", True)
    upsert = _upsert()
    parts = {c: [r for r in upsert if r[4] == c] for c in ("sf", "la")}
    written = threading.Barrier(2, timeout=WAIT)
    errors: list[BaseException] = []

    def hook(event: str, detail: str) -> None:
        if event == "written":
            written.wait()

    def run(rows: list[Row]) -> None:
        try:
            from hudisql.write.pipeline import SparkWriter

            df = hudi_session.spark.createDataFrame(rows, MARKED)
            SparkWriter(hudi_session.spark, handle.path,
                        hudi_session.write_options(handle.path, {INDEX_TYPE: index_type}),
                        on_step=hook).write(df, "upsert")
        except BaseException as exc:
            errors.append(exc)
            written.abort()

    threads = [threading.Thread(target=run, args=(rows,)) for rows in parts.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 2)
    assert not any(t.is_alive() for t in threads), "a writer is stuck"
    assert not errors, errors
    check(handle, _apply(_base(), parts["sf"] + parts["la"]))


def test_concurrent_first_inserts_into_one_bucket_conflict(hudi_session: HudiSession,
                                                           tmp_path: Path) -> None:
    """Two writers creating one bucket's file group name the same group: one is refused
    (with random ids both would commit and the bucket would hold two file groups)."""
    path = tmp_path / "one_bucket"
    create_table(str(path), "trips", TRIP_SCHEMA, "uuid", (), "ts", "MERGE_ON_READ",
                 {INDEX_TYPE: "BUCKET", BUCKET_NUM: "1"})
    handle = hudi_session.table_at(str(path))
    written = threading.Barrier(2, timeout=WAIT)
    outcome: list[BaseException | None] = []

    def hook(event: str, detail: str) -> None:
        if event == "written":
            written.wait()

    def run(key: str) -> None:
        from hudisql.write.pipeline import SparkWriter

        df = hudi_session.spark.createDataFrame([(key, 1, "r", 1.0, "sf")], TRIP_SCHEMA_DDL)
        try:
            SparkWriter(hudi_session.spark, handle.path, hudi_session.write_options(handle.path),
                        on_step=hook).write(df, "upsert")
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in ("a1", "b1")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 2)
    assert len(outcome) == 2 and outcome.count(None) == 1
    assert isinstance(next(e for e in outcome if e is not None), CommitConflictError)
    assert len({s.file_id for s in handle.core().file_slices()}) == 1
    assert len(handle.read().collect()) == 1


@pytest.mark.parametrize("options,table_options,message", [
    ({INDEX_TYPE: "HASH"}, {}, "hoodie.index.type='HASH' in the write options is not an index"),
    ({INDEX_TYPE: "GLOBAL_BLOOM"}, {}, "an index type hudisql does not run"),
    ({INDEX_TYPE: "RECORD_INDEX"}, {}, "has no record index"),
    ({INDEX_TYPE: "BUCKET", BUCKET_NUM: "4"}, {}, "was not created with the bucket index"),
    ({BUCKET_NUM: "8"}, {INDEX_TYPE: "BUCKET", BUCKET_NUM: "4"},
     "has 4 buckets per partition .* not 8"),
    ({INDEX_TYPE: "SIMPLE"}, {INDEX_TYPE: "BUCKET", BUCKET_NUM: "4"}, "is bucketed"),
    ({BUCKET_HASH_FIELD: "rider"}, {INDEX_TYPE: "BUCKET", BUCKET_NUM: "4"},
     "hashes uuid into buckets"),
    ({}, {INDEX_TYPE: "BUCKET", BUCKET_NUM: "zero"}, "not a positive whole number"),
    ({DRIVER_LOOKUP_MAX_RECORDS: "-1"}, {}, "driver.lookup.max.records='-1' is not a number"),
], ids=["unknown", "unsupported", "no-record-index", "bucket-on-plain", "bucket-count",
        "other-type-on-bucketed", "hash-field", "bad-count", "bad-driver-lookup"])
def test_bad_index_settings_are_refused_before_any_instant(
        hudi_session: HudiSession, tmp_path: Path, options: dict[str, str],
        table_options: dict[str, str], message: str) -> None:
    path = tmp_path / "trips"
    create_table(str(path), "trips", TRIP_SCHEMA, "uuid", "city", "ts", "MERGE_ON_READ",
                 table_options)
    handle = hudi_session.table_at(str(path))
    if "zero" not in table_options.values():
        handle.insert(hudi_session.spark.createDataFrame(_base(6), TRIP_SCHEMA_DDL))
    before = _snapshot(str(path))
    df = hudi_session.spark.createDataFrame([("k001", 5, "r", 1.0, "la")], TRIP_SCHEMA_DDL)
    with pytest.raises(WriteError, match=message):
        handle.upsert(df, **options)
    assert _snapshot(str(path)) == before


def test_index_type_from_table_properties(hudi_session: HudiSession, tmp_path: Path) -> None:
    """A table created with ``hoodie.index.type`` tags with it by default; UPDATE, DELETE
    and MERGE, which write through the same pipeline, too."""
    path = tmp_path / "t"
    create_table(str(path), "trips", TRIP_SCHEMA, "uuid", "city", "ts", "COPY_ON_WRITE",
                 {INDEX_TYPE: "RECORD_INDEX"})
    handle = hudi_session.table_at(str(path))
    rows = hudi_session.spark.createDataFrame(_base(6), TRIP_SCHEMA_DDL)
    with pytest.raises(WriteError, match="has no record index"):
        handle.insert(rows)
    handle.bulk_insert(rows)  # looks no key up: needs no record index
    _build(str(path), ("files", "record_index"))
    handle.update({"fare": "fare + 1"}, "uuid = 'k001'")
    handle.delete("uuid = 'k002'")
    source = hudi_session.spark.createDataFrame([("k003", 7, "m", 9.0, "sf"),
                                                 ("m1", 1, "m", 8.0, "la")], TRIP_SCHEMA_DDL)
    (handle.merge(source, "t.uuid = s.uuid").when_matched_update_all()
     .when_not_matched_insert_all().execute())
    expected = {r[0]: r[3] for r in _base(6)} | {"k001": 2.0, "k003": 9.0, "m1": 8.0}
    del expected["k002"]
    assert {r["uuid"]: r["fare"] for r in handle.read().collect()} == expected


def _hudi_bucket(key: str, fields: list[str], buckets: int) -> int:
    """Hudi's ``BucketIdentifier.getBucketId``: the hash values' ``List.hashCode``."""
    if "," in key and ":" in key:
        values: list[str | None] = []
        for pair in key.split(","):
            name, _, value = pair.partition(":")
            if name in fields:
                values.append(None if value == "__null__" else "" if value == "__empty__"
                              else value)
    else:
        values = [key]
    h = 1
    for value in values:
        h = (31 * h + (0 if value is None else java_string_hash(value))) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % buckets


@pytest.mark.parametrize("fields", [["a", "b"], ["b"]])
def test_bucket_ids_are_hudis(hudi_session: HudiSession, fields: list[str]) -> None:
    keys = ["abc", "k001", "z\u00e9\U0001f600", "a:1,b:x", "a:1,b:y", "b:__null__,a:2",
            "a:__empty__,b:q", "a:1", "plain,comma", "", "\U0001f600\U0001f601",
            # Values with ':' or none, repeated and unlisted fields, non-ASCII around ':'.
            "a:1:2,b:", "a:,b:c", ":x,a:y", "b:1,a:2,b:3", "a:\U0001f600,b:\u00e9",
            "\u4e2d:\u6587,b:\uffff", "a:x,b:__null__x"]
    settings = IndexSettings(BUCKET, 7, tuple(fields))
    df = hudi_session.spark.createDataFrame([(k,) for k in keys], f"{RECORD_KEY} string")
    got = {r[0]: r[1] for r in df.select(RECORD_KEY, bucket_id(settings)).collect()}
    assert got == {k: _hudi_bucket(k, fields, 7) for k in keys}
    assert got["abc"] == (31 + 96354) % 7  # Java: List.of("abc").hashCode() == 96385


def test_new_bucket_file_ids_from_the_driver_are_the_per_record_ones(
        hudi_session: HudiSession) -> None:
    """The writer names a new bucket's file group from digests computed once per partition
    on the driver; they are exactly :func:`bucket_file_id`'s (an MD5 per record), so two
    writers creating one bucket still name the same file group (and an overwrite's salted
    ids are its own)."""
    from pyspark.sql import functions as F

    parts = ["city=sf", "city=la", "", "a=1/b=x\u00e9"]
    rows = [(p, b) for p in parts for b in (0, 3, 12345678)]
    df = hudi_session.spark.createDataFrame(rows, f"{PARTITION_PATH} string, b int")
    got = df.select(PARTITION_PATH, bucket_file_id(F.col("b")).alias("per_record"),
                    _bucket_file_ids(F.col("b"), parts).alias("driver"),
                    bucket_file_id(F.col("b"), "s1").alias("salted"),
                    _bucket_file_ids(F.col("b"), parts[1:], "s1").alias("salted_driver"),
                    ).collect()
    assert all(r.per_record == r.driver for r in got)
    # An overwrite's salted ids too; a partition not listed gets null (the per-record id).
    assert all(r.salted == r.salted_driver for r in got if r[PARTITION_PATH] != parts[0])
    assert all(r.salted_driver is None for r in got if r[PARTITION_PATH] == parts[0])
    assert not {r.salted for r in got} & {r.driver for r in got}
    assert len({r.driver for r in got}) == len(rows)
    assert got[0].driver.startswith("00000000-") and got[0].driver.endswith("-0")


def test_bloom_on_hudi_written_files_gives_simple_rows(hudi_session: HudiSession,
                                                       tmp_path: Path) -> None:
    """Apache Hudi's base files carry bloom filters and key ranges in their footers: BLOOM
    tags through them (slices with logs read in full) and writes SIMPLE's rows."""
    rows: dict[str, list[Row]] = {}
    for index_type in ("SIMPLE", "BLOOM"):
        handle = hudi_session.table_at(str(copy_table("v6_trips_8i1u", tmp_path / index_type)))
        stored = handle.read().select("ts", "uuid", "rider", "driver", "fare", "city")
        picked = stored.orderBy("uuid").limit(3).collect()
        changes = [(r.ts + 1, r.uuid, r.rider, r.driver, r.fare + 1.0, r.city) for r in picked]
        changes.append((1, "new-uuid", "rider-N", "driver-N", 1.0, picked[0].city))
        df = hudi_session.spark.createDataFrame(changes, stored.schema)
        handle.upsert(df, **{INDEX_TYPE: index_type})
        rows[index_type] = sorted(tuple(r) for r in handle.read().select(
            "ts", "uuid", "rider", "driver", "fare", "city").collect())
        theirs = pa.Table.from_batches(hudi.HudiTable(handle.path).read()).select(
            ["ts", "uuid", "rider", "driver", "fare", "city"]).to_pylist()
        assert sorted(tuple(r.values()) for r in theirs) == rows[index_type]
    assert rows["BLOOM"] == rows["SIMPLE"]


def test_footer_bloom_filter_admits_stored_keys_only() -> None:
    """A Hudi-written base file's footer bloom filter holds its keys; a base file's keys
    are found exactly (the filter's false positives are dropped by the key read)."""
    table = HudiTable.open(str(table_path("v6_trips_8i1u")))
    file_slice = next(s for s in table.file_slices() if s.base_file is not None)
    assert file_slice.base_file is not None
    keys = pq.read_table(table.storage.open_input_file(file_slice.base_file.path),
                         columns=[RECORD_KEY]).column(RECORD_KEY).to_pylist()
    absent = [f"absent-{i}" for i in range(200)]
    meta = pq.read_metadata(table.storage.open_input_file(file_slice.base_file.path)).metadata
    bloom = BloomFilter.deserialize(meta[FOOTER_BLOOM.encode()],
                                    meta[FOOTER_BLOOM_TYPE.encode()].decode())
    assert bloom.might_contain_many(keys).all()
    assert bloom.might_contain_many(absent).sum() <= 1
    found = keys_in_base_file(table, file_slice, pa.chunked_array([pa.array(absent + keys[:2])]),
                          {})
    assert sorted(found.to_pylist()) == sorted(keys[:2])


def test_bucketed_bulk_insert_and_overwrite_keep_buckets(hudi_session: HudiSession,
                                                         tmp_path: Path) -> None:
    """Bulk inserts and overwrites of a bucketed table write bucket file groups too, so the
    next upsert finds every key in its bucket."""
    path = tmp_path / "bucketed"
    create_table(str(path), "trips", TRIP_SCHEMA, "uuid", "city", "ts", "COPY_ON_WRITE",
                 {INDEX_TYPE: "BUCKET", BUCKET_NUM: "3"})
    handle = hudi_session.table_at(str(path))
    handle.bulk_insert(hudi_session.spark.createDataFrame(_base(), TRIP_SCHEMA_DDL))
    _one_group_per_bucket(handle, 3)
    sf = [(f"s{i}", 1, "over", float(i), "sf") for i in range(6)]
    handle.insert_overwrite(hudi_session.spark.createDataFrame(sf, TRIP_SCHEMA_DDL))
    _one_group_per_bucket(handle, 3)
    expected = [r for r in _base() if r[4] != "sf"] + sf
    upsert = [("s1", 2, "up", 9.0, "sf", False), ("k001", 2, "up", 9.0, "la", False),
              ("s9", 1, "new", 1.0, "sf", False)]
    _write(handle, hudi_session, upsert, "BUCKET")
    _one_group_per_bucket(handle, 3)
    check(handle, _apply(sorted(expected), upsert))
