"""Requests per statement on S3: a point query, an UPDATE and SHOW TIMELINE on a
merge-on-read table with many file groups and instants, counted at a real S3 API server.

Run: ``.venv/bin/python benchmarks/bench_object_store.py`` (``--file-groups 200
--instants 100 --partitions 20`` by default). It starts moto's S3 server on 127.0.0.1
(``moto[server]``, the ``test`` extra) with its request log in a file, builds the table
(created by SQL, then written by the pure-Python writer with the metadata table kept: one
insert of one row per file group, one upsert per further instant, then the record index
built by SQL; the point query and the UPDATE name the partition and the key), and counts
the HTTP requests every statement makes, driver and executors together, by kind:
LIST (a bucket listing), GET, HEAD, PUT, DELETE and other.

Measured (defaults; moto 5.2.5, pyarrow 26; requests per statement, before -> after this
branch's changes: one flat listing of a partitioned table, hoodie.properties read without
looking for its backup, small objects in one GET and one PUT): point query 57 -> 27,
UPDATE 1550 -> 1211, SHOW TIMELINE 208 -> 103. The UPDATE reads every file slice: SQL
DML scans its target through the data source without slice pruning (its WHERE is applied
by Spark after the scan), the worst offender left.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: A request line of the server's log (werkzeug colours some: no quote right before it).
_LINE = re.compile(r'(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP/')


def _start_moto(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                 "-p", str(port)], stdout=out, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            return proc, endpoint
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(log.read_text()) from None
            time.sleep(0.1)


class RequestLog:
    """The server's request log, read from where the last count stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def mark(self) -> None:
        """Forget every request logged so far."""
        time.sleep(0.3)  # let the server write the lines of requests already answered
        self.offset = self.path.stat().st_size

    def count(self, keep: Path | None = None) -> collections.Counter[str]:
        """Requests logged since the last mark, by kind (their lines copied to ``keep``)."""
        time.sleep(0.3)
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        text = data.decode("utf-8", "replace")
        if keep is not None:
            keep.write_text(text)
        kinds: collections.Counter[str] = collections.Counter()
        for method, target in _LINE.findall(text):
            if target.startswith("/moto-api"):
                continue
            if method == "GET" and ("list-type=" in target or "prefix=" in target):
                kinds["LIST"] += 1
            elif method in {"GET", "HEAD", "PUT", "DELETE"}:
                kinds[method] += 1
            else:
                kinds["other"] += 1
        kinds["total"] = sum(kinds.values())
        return kinds


def build(hs, bucket: str, file_groups: int, instants: int,  # type: ignore[no-untyped-def]
          partitions: int) -> str:
    """The table: ``file_groups`` file groups (one row each) over ``partitions`` partitions
    (``p = id % partitions``), ``instants`` instants."""
    import pyarrow as pa

    from hudisql.metadata.participant import participants_for
    from hudisql.table.table import HudiTable
    from hudisql.txn.writer import WriteClient

    hs.sql("CREATE TABLE t (id INT, v DOUBLE, p INT) USING hudi PARTITIONED BY (p) "
           "TBLPROPERTIES (primaryKey = 'id', type = 'mor')")
    location = f"s3://{bucket}/wh/t"
    table = HudiTable.open(location)
    client = WriteClient(table, options=hs.write_options(location, in_catalog=True),
                         participants=participants_for(table), max_records_per_file=1)
    ids = list(range(file_groups))
    client.insert(pa.table({"id": pa.array(ids, pa.int32()), "v": [0.0] * file_groups,
                            "p": pa.array([i % partitions for i in ids], pa.int32())}))
    for n in range(instants - 2):  # the record index build is the last instant
        i = (n * 7) % file_groups
        client.upsert(pa.table({"id": pa.array([i], pa.int32()), "v": [float(n + 1)],
                                "p": pa.array([i % partitions], pa.int32())}))
    hs.sql("CREATE INDEX record_index ON t (id)")
    return location


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file-groups", type=int, default=200)
    parser.add_argument("--instants", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    proc, endpoint = _start_moto(work / "requests.log")
    os.environ.update(AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench",
                      AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1",
                      AWS_EC2_METADATA_DISABLED="true")
    try:
        import boto3

        import hudisql

        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        boto3.client("s3").create_bucket(Bucket=bucket)
        hs = hudisql.connect(warehouse=f"s3://{bucket}/wh",
                             catalog=f"sqlite:///{work}/catalog.db")
        started = time.monotonic()
        build(hs, bucket, args.file_groups, args.instants, args.partitions)
        print(f"built {args.file_groups} file groups in {args.partitions} partitions, "
              f"{args.instants} instants in "
              f"{time.monotonic() - started:.0f} s", file=sys.stderr)
        log = RequestLog(work / "requests.log")
        statements = {
            # The record index is not global: the partition names where a key may be.
            "point query": f"SELECT id, v FROM t WHERE p = {17 % args.partitions} AND id = 17",
            "UPDATE": f"UPDATE t SET v = -1.0 WHERE p = {42 % args.partitions} AND id = 42",
            "SHOW TIMELINE": "SHOW TIMELINE t",
        }
        print("| statement | seconds | total | LIST | GET | HEAD | PUT | DELETE | other |")
        print("|---|---|---|---|---|---|---|---|---|")
        for label, sql in statements.items():
            log.mark()
            began = time.monotonic()
            hs.sql(sql).collect()
            took = time.monotonic() - began
            c = log.count(work / f"{label.replace(' ', '_')}.log")
            print(f"| {label} | {took:.1f} | {c['total']} | {c['LIST']} | {c['GET']} | "
                  f"{c['HEAD']} | {c['PUT']} | {c['DELETE']} | {c['other']} |", flush=True)
        print(f"load: {os.getloadavg()[0]:.1f} (1 min); request lines in {work}")
        hs.stop()
    finally:
        proc.terminate()
        proc.wait(20)


if __name__ == "__main__":
    main()
