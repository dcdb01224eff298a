"""``hudisql serve`` benchmark: a large SELECT through psycopg against the same query's
``toArrow()`` in process, and statements per second for small queries.

Run: ``.venv/bin/python benchmarks/bench_serve.py [--rows 1000000] [--small 200]
[--repeat 3]``. The
query is ``SELECT id, id * 0.5 AS half, concat('row-', id) AS label FROM range(rows)``
(three columns: bigint, double, string), fetched whole by a psycopg cursor over the
server (text format) from a client process of its own, as a BI tool is (a client in the
server's process would compete with it for the GIL), and by ``spark.sql(...).toArrow()``
in the server's own process; the best of ``--repeat`` runs of each. The peer: the same
rows from PostgreSQL itself (a throw-away server of Debian's, as the catalog tests start)
to the same client, which shows what the client's own decoding costs.
The goal of the issue: the server within 1.5x of ``toArrow()``. Prints the machine's load.

Measured 2026-11-28 08:11, idle (load 1.1), ``--rows 1000000 --small 200``: toArrow()
0.37 s; PostgreSQL 15 to the same client 0.66 s (1.78x toArrow: the client's own decoding);
hudisql serve 1.23 s (3.33x toArrow, 1.85x PostgreSQL: batches stream through mapInArrow and
toLocalIterator, 1.02 s in process against toArrow's 0.40 s, to avoid collecting the whole
result on the driver); 4,608 small statements per second.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


_CLIENT = """
import sys, time, psycopg
dsn, query, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
with psycopg.connect(dsn, autocommit=True) as conn:
    started = time.perf_counter()
    fetched = conn.execute(query).fetchall()
    elapsed = time.perf_counter() - started
assert len(fetched) == rows, len(fetched)
print(elapsed)
"""


def _fetch_in_client(dsn: str, query: str, rows: int) -> float:
    """Seconds a psycopg client in another process takes to run ``query`` and fetch it all."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", _CLIENT, dsn, query, str(rows)],
                          check=True, capture_output=True, text=True)
    return float(done.stdout.strip())


def _postgres_peer(rows: int, repeat: int) -> float:
    """Best seconds of the client fetching the same rows from a real PostgreSQL server."""
    from tests.catalog.pg_server import PostgresServer

    server = PostgresServer().start()
    try:
        dsn = f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres"
        query = (f"SELECT id, id * 0.5 AS half, 'row-' || id AS label "
                 f"FROM generate_series(0, {rows - 1}) AS id")
        return min(_fetch_in_client(dsn, query, rows) for _ in range(repeat))
    finally:
        server.stop()


def _version_of_peer() -> str:
    from tests.catalog.pg_server import _bindir

    return _bindir().parent.name


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=200, help="small statements to time")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; best is kept")
    args = parser.parse_args()
    import psycopg

    import hudisql
    from hudisql.server import PgServer, ServerConfig

    query = (f"SELECT id, id * 0.5 AS half, concat('row-', id) AS label "
             f"FROM range(0, {args.rows}, 1, 4)")
    with tempfile.TemporaryDirectory() as tmp:
        hudi = hudisql.connect(warehouse=tmp, conf={"spark.master": "local[2]"})
        with PgServer(ServerConfig(port=0), hudi=hudi) as server:
            dsn = f"host=127.0.0.1 port={server.port} user=bench dbname=hudisql"
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(query.replace(str(args.rows), "1000")).fetchall()  # warm-up
                hudi.spark.sql(query.replace(str(args.rows), "1000")).toArrow()
                in_process = served = float("inf")
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    arrow = hudi.spark.sql(query).toArrow()
                    in_process = min(in_process, time.perf_counter() - started)
                    assert arrow.num_rows == args.rows
                    served = min(served, _fetch_in_client(dsn, query, args.rows))
                started = time.perf_counter()
                for i in range(args.small):
                    conn.execute("SELECT %s AS n", [i]).fetchone()
                small = args.small / (time.perf_counter() - started)
        hudi.stop()
    peer = _postgres_peer(args.rows, args.repeat)
    print(f"{args.rows} rows: toArrow() in process {in_process:.2f} s, through psycopg "
          f"{served:.2f} s ({served / in_process:.2f}x; goal <= 1.5x)")
    print(f"the same rows from PostgreSQL {_version_of_peer()} to the same client: "
          f"{peer:.2f} s (hudisql serve / PostgreSQL {served / peer:.2f}x, reported)")
    print(f"small statements (SELECT $1): {small:.1f} per second over one connection")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
