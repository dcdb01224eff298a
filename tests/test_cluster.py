"""hudisql on a Spark standalone cluster: a master and one worker on 127.0.0.1.

The master and worker are started with ``bin/spark-class`` from the pyspark package
(``SPARK_HOME`` = that package), on free ports, logging to a temporary directory. A driver
in its own process connects with ``spark.master=spark://...``, writes (an upsert as Spark
jobs) and reads back, planned as ``t.read()`` and through the ``hudi`` data source. The
worker's environment does not hold this checkout, so executors can only import hudisql
from the zip that ``hudisql.connect()`` ships with ``addPyFile``. Master and worker are
stopped whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from tests.fixtures import TEST_JVM_OPTS

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
SPARK_HOME = Path(pyspark.__file__).resolve().parent
#: How long the master and the worker may take to come up (a loaded 2-core machine).
START_TIMEOUT_S = 60.0

_DRIVER = """
import json, os, sys
sys.path.insert(0, sys.argv[3])  # the driver imports hudisql from the checkout
import pyarrow as pa
import hudisql
from hudisql.table.write.create import create_table

master, path = sys.argv[1], sys.argv[2]
session = hudisql.connect(warehouse=os.path.join(os.path.dirname(path), "wh"), conf={
    "spark.master": master, "spark.cores.max": "1", "spark.executor.cores": "1",
    "spark.executor.memory": "512m", "spark.sql.shuffle.partitions": "2",
    "spark.executor.extraJavaOptions": sys.argv[4]})
spark = session.spark
try:
    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("city", pa.string()),
                        ("fare", pa.float64())])
    create_table(path, "cluster_trips", schema, "id", "city", "ts", "MERGE_ON_READ")
    handle = session.table_at(path)
    first = [(f"k{i}", 1, "sf" if i % 2 else "nyc", float(i)) for i in range(6)]
    handle.upsert(spark.createDataFrame(first, "id string, ts long, city string, fare double"))
    update = [("k1", 2, "sf", 100.0), ("k9", 2, "nyc", 9.0)]
    handle.upsert(spark.createDataFrame(update, "id string, ts long, city string, fare double"))
    got = spark.read.format("hudi").load(path).select("id", "city", "fare").collect()
    # The data source itself on the executors (a plain load is planned as t.read()).
    by_source = spark.read.format("hudi").option("hudisql.read.direct.parquet", "false").load(
        path).select("id", "city", "fare").collect()
    where = spark.sparkContext.parallelize([0], 1).map(
        lambda _: __import__("hudisql").__file__).collect()
    print("RESULT" + json.dumps({"rows": sorted([r.id, r.city, r.fare] for r in got),
                                 "by_source": sorted([r.id, r.city, r.fare] for r in by_source),
                                 "executor_hudisql": where[0],
                                 "master": spark.sparkContext.master}))
finally:
    session.stop()
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spark_env(log_dir: Path) -> dict[str, str]:
    """An environment without this checkout on any path: executors must get the zip."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_")) and k != "PYTHONPATH"}
    # The master, the worker and the driver on the suite's JVM options (tests/fixtures.py).
    env.update(SPARK_DAEMON_JAVA_OPTS=TEST_JVM_OPTS, SPARK_SUBMIT_OPTS=TEST_JVM_OPTS)
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOG_DIR=str(log_dir),
               SPARK_WORKER_DIR=str(log_dir / "work"), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable)
    return env


def _start(args: list[str], log: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], stdout=out,
                                stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes]) -> None:
    """Block until ``text`` appears in ``log``; fail if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            pytest.fail(f"{log.name} exited ({proc.returncode}): {log.read_text()[-2000:]}")
        time.sleep(0.2)  # polling a log for readiness, not timing a race
    pytest.fail(f"no {text!r} in {log.name} after {START_TIMEOUT_S}s: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[str]:
    """A standalone master and one worker (1 core, 1g) on 127.0.0.1; yields the master URL."""
    logs = tmp_path / "logs"
    (logs / "work").mkdir(parents=True)
    env = _spark_env(logs)
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        master = _start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", str(port), "--webui-port", str(_free_port())],
                        logs / "master.log", env, tmp_path)
        procs.append(master)
        _wait_for(logs / "master.log", "I have been elected leader", master)
        worker = _start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                         "--webui-port", str(_free_port()), "--cores", "1", "--memory", "1g",
                         url], logs / "worker.log", env, tmp_path)
        procs.append(worker)
        _wait_for(logs / "worker.log", "Successfully registered with master", worker)
        yield url
    finally:
        for proc in reversed(procs):
            _stop(proc)


def test_write_and_read_on_a_standalone_cluster(standalone: str, tmp_path: Path) -> None:
    env = _spark_env(tmp_path)
    proc = subprocess.run([sys.executable, "-c", _DRIVER, standalone, str(tmp_path / "trips"),
                           str(REPO), TEST_JVM_OPTS], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    out = json.loads(line.removeprefix("RESULT"))
    assert out["master"] == standalone
    # The executor imported hudisql from the shipped zip, not from this checkout.
    assert ".zip" in out["executor_hudisql"] and str(REPO) not in out["executor_hudisql"]
    expected = [[f"k{i}", "sf" if i % 2 else "nyc", float(i)] for i in range(6)]
    expected[1] = ["k1", "sf", 100.0]
    assert out["rows"] == sorted([*expected, ["k9", "nyc", 9.0]]) == out["by_source"]
