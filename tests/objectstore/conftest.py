"""A real S3 API server for the object-store tests: moto's server on 127.0.0.1.

The ``AWS_*`` variables are set when this file is imported, before the suite's
SparkSession starts: Spark's Python workers inherit the driver's environment at launch,
and they write the tables' files through ``pyarrow.fs``, which reads these variables (and
boto3 too, for conditional PUTs). The server itself starts on first use
(:func:`s3_server`, once per test process) and stops at the end; each module makes its own
bucket (:func:`new_bucket`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


PORT = free_port()
ENDPOINT = f"http://127.0.0.1:{PORT}"
ACCESS_KEY = "hudisqltestaccesskey"
#: Distinctive, so that a test can grep every log, error and file for it.
SECRET = f"hudisql-secret-{uuid.uuid4().hex}"
REGION = "us-east-1"
ENV = {
    "AWS_ENDPOINT_URL": ENDPOINT,
    "AWS_ACCESS_KEY_ID": ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET,
    "AWS_REGION": REGION,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
}
os.environ.update(ENV)
for _name in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
    os.environ.pop(_name, None)

#: hudi-rs (the ``hudi`` package) takes the same settings as storage options.
HUDI_RS_OPTIONS = {
    "aws_endpoint_url": ENDPOINT,
    "aws_allow_http": "true",
    "aws_access_key_id": ACCESS_KEY,
    "aws_secret_access_key": SECRET,
    "aws_region": REGION,
}


@dataclass(frozen=True)
class S3Server:
    """The running server: its endpoint and the file its request log goes to."""

    endpoint: str
    log: Path

    def client(self):  # type: ignore[no-untyped-def]
        """A boto3 S3 client of the server."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key in ``bucket`` under ``prefix``."""
        pages = self.client().get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]


def start_moto(port: int, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """moto's S3 server on 127.0.0.1:``port``, its output in ``log``, once it answers."""
    endpoint = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            return proc
        except (urllib.error.URLError, ConnectionError, OSError):
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_moto(proc)
                raise RuntimeError(f"moto server did not start: {log.read_text()}") from None
            time.sleep(0.1)


def stop_moto(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server :func:`start_moto` started."""
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(20)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server in a subprocess on 127.0.0.1, for the whole test process."""
    log = tmp_path_factory.mktemp("moto") / "requests.log"
    proc = start_moto(PORT, log)
    try:
        yield S3Server(ENDPOINT, log)
    finally:
        stop_moto(proc)


def new_bucket(server: S3Server, stem: str) -> str:
    """A fresh bucket named after ``stem``."""
    name = f"{stem}-{uuid.uuid4().hex[:10]}".lower()
    server.client().create_bucket(Bucket=name)
    return name
