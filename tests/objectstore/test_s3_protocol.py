"""The commit protocol on S3 (moto's server), without Spark: instant files are created by
conditional PUTs, never by rename; the file lock refuses object-store tables; two writers
with the catalog's lock both commit; bad locations and wrong credentials are refused
before anything is written.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from pathlib import Path

import boto3
import pyarrow as pa
import pytest

import hudisql
from hudisql.catalog.lock import CATALOG_URL_OPTION
from hudisql.errors import InstantExistsError, LockError, StorageLocationError
from hudisql.table.io.locations import check_location, join_location, redact
from hudisql.table.io.storage import Storage
from hudisql.table.io.storage_env import apply_hadoop_options
from hudisql.table.table import HudiTable
from hudisql.txn.lock import LOCK_PROVIDER, FileLockProvider
from hudisql.txn.writer import WriteClient, create_table
from tests.objectstore.conftest import (
    REGION,
    SECRET,
    S3Server,
    free_port,
    new_bucket,
    start_moto,
    stop_moto,
)

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.int64()), ("part", pa.string())])


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> str:
    return new_bucket(s3_server, "protocol")


def test_create_if_absent_is_a_conditional_put(bucket: str, s3_server: S3Server) -> None:
    storage = Storage(f"s3://{bucket}/cond")
    storage.create_if_absent(".hoodie/x.commit", b"first")
    with pytest.raises(FileExistsError):
        storage.create_if_absent(".hoodie/x.commit", b"second")
    assert storage.read_bytes(".hoodie/x.commit") == b"first"
    storage.write_atomic(".hoodie/hoodie.properties", b"a=1")
    storage.write_atomic(".hoodie/hoodie.properties", b"a=2")
    assert storage.read_bytes(".hoodie/hoodie.properties") == b"a=2"
    # No temporary objects and no rename: exactly the objects written.
    assert sorted(s3_server.keys(bucket, "cond/")) == [
        "cond/.hoodie/hoodie.properties", "cond/.hoodie/x.commit"]


@pytest.mark.parametrize("version", [6, 9])
def test_two_writers_racing_for_one_instant_file_one_wins(bucket: str, version: int) -> None:
    table = create_table(f"s3://{bucket}/race{version}", "race", SCHEMA, "id",
                         options={"hoodie.write.table.version": str(version)})
    # The table's own timeline: .hoodie/ at version 6, .hoodie/timeline/ at 8 and 9.
    timeline_dir = table.timeline.timeline_dir
    assert timeline_dir == (".hoodie" if version == 6 else ".hoodie/timeline")
    requested = f"{timeline_dir}/20260101000000000.deltacommit.requested"
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def create() -> None:
        timeline = HudiTable.open(table.base_path).timeline
        barrier.wait(60)
        try:
            # Each passes the "no instant at this time yet" check before any creates it:
            # only the store's conditional PUT can tell the winner.
            timeline.storage.create_if_absent(requested, b"")
            outcomes.append("created")
        except FileExistsError:
            outcomes.append("lost")

    threads = [threading.Thread(target=create) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == ["created"] + ["lost"] * 5
    timeline = HudiTable.open(table.base_path).timeline
    assert [(i.timestamp, i.action, i.state) for i in timeline.pending()
            if i.timestamp == "20260101000000000"] == [
        ("20260101000000000", "deltacommit", "REQUESTED")]
    with pytest.raises(InstantExistsError, match="20260101000000000"):
        timeline.create_requested("deltacommit", "20260101000000000")


def test_the_file_lock_refuses_an_object_store_table(bucket: str) -> None:
    with (pytest.raises(LockError, match=r"hoodie.write.lock.provider=catalog"),
          FileLockProvider().lock(f"s3://{bucket}/t", 1.0)):
        pass
    table = create_table(f"s3://{bucket}/filelock", "filelock", SCHEMA, "id")
    client = WriteClient(table, options={LOCK_PROVIDER: "file"})
    with pytest.raises(LockError, match="object store"):
        client.insert(pa.table({"id": ["a"], "v": [1], "part": ["x"]}))


def test_two_writers_with_the_catalog_lock_both_commit(bucket: str, tmp_path: Path) -> None:
    location = f"s3://{bucket}/two"
    create_table(location, "two", SCHEMA, "id", partition_fields="part")
    options = {LOCK_PROVIDER: "catalog", CATALOG_URL_OPTION: f"sqlite:///{tmp_path}/cat.db"}
    written = threading.Barrier(2)
    errors: list[BaseException] = []

    def write(part: str) -> None:
        def hook(event: str, _detail: str) -> None:
            if event == "validating":  # both have written their files before either commits
                written.wait(60)

        try:
            client = WriteClient(HudiTable.open(location), on_step=hook, options=options)
            client.insert(pa.table({"id": [part], "v": [1], "part": [part]}))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in ("p1", "p2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    table = HudiTable.open(location)
    assert len([i for i in table.timeline.instants if i.is_completed]) == 2
    got = hudisql.read_table(location).select(["id", "part"]).to_pylist()
    assert sorted((r["id"], r["part"]) for r in got) == [("p1", "p1"), ("p2", "p2")]


@pytest.mark.parametrize(("location", "message"), [
    ("nosuchfs://bucket/t", r"nosuchfs://bucket/t cannot be opened"),
    ("s3://no-such-bucket-hudisql/t", r"bucket 'no-such-bucket-hudisql' does not exist"),
    ("s3://b/t?access_key=AK&secret_key=TOPSECRET", r"carries credentials"),
])
def test_bad_locations_are_refused_by_name(location: str, message: str) -> None:
    with pytest.raises(StorageLocationError, match=message) as info:
        check_location(location)
    assert "TOPSECRET" not in str(info.value)
    assert "AWS_" in str(info.value) or "pyarrow" in str(info.value)


def test_locations_keep_their_scheme() -> None:
    assert join_location("s3://b/wh", "db.db", "t") == "s3://b/wh/db.db/t"
    assert join_location("s3://b/wh/?region=x", "t") == "s3://b/wh/t?region=x"
    assert redact("s3://b/t?secret_key=abc&region=x") == "s3://b/t?secret_key=***&region=x"
    assert redact("abfs://user:pw@c/t") == "abfs://user:***@c/t"


def test_hadoop_s3a_options_become_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    applied = apply_hadoop_options({
        "spark.hadoop.fs.s3a.endpoint": "127.0.0.1:9000",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": "AK", "spark.hadoop.fs.s3a.secret.key": "SK",
        "spark.master": "local[1]"})
    assert applied == ["AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
    assert os.environ["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9000"
    assert os.environ["AWS_SECRET_ACCESS_KEY"] == "SK"
    with pytest.raises(StorageLocationError, match="AWS_ACCESS_KEY_ID") as info:
        apply_hadoop_options({"spark.hadoop.fs.s3a.access.key": "OTHER"})
    assert "OTHER" not in str(info.value) and "AK" not in str(info.value)


def test_wrong_credentials_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    """A second moto server that checks credentials (its first request, the bucket's
    creation, is let through): the suite's keys are unknown to it, so a table there is
    refused by name, with what to set, and the bucket stays empty."""
    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "1"}
    proc = start_moto(port, tmp_path / "moto.log", env)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        boto3.client("s3", endpoint_url=endpoint, region_name=REGION).create_bucket(
            Bucket="guarded")
        location = f"s3://guarded/t?endpoint_override=127.0.0.1:{port}&scheme=http"
        with pytest.raises(StorageLocationError, match="cannot be reached") as info:
            create_table(location, "t", SCHEMA, ["id"], [])
        assert "s3://guarded/t" in str(info.value) and "AWS_ACCESS_KEY_ID" in str(info.value)
        assert SECRET not in str(info.value)
        with urllib.request.urlopen(f"{endpoint}/moto-api/data.json", timeout=10) as reply:
            state = json.load(reply)["s3"]
        assert [b["keys"] for b in state["FakeBucket"]] == [{}]
    finally:
        stop_moto(proc)

