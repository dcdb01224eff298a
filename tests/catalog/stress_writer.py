"""One writer of the many-writers stress test, in its own process with its own session.

Usage: ``python -m tests.catalog.stress_writer <warehouse> <catalog url> <k> <rounds> <m>``.
Prints ``READY`` once its session is up, waits for ``GO`` on stdin (the start barrier),
then runs ``rounds`` rounds of UPDATE, MERGE and INSERT on table ``stress`` with the
default settings, retrying a statement only on CommitConflictError, printing
``COMMITTED <n>`` after each statement. Its last line is ``DONE <json counts>`` or
``ERR <error class> <message>``.
"""

from __future__ import annotations

import json
import sys
import time


def statements(k: int, rounds: int, m: int) -> list[str]:
    """Writer ``k``'s statements, round after round: each adds 1 + 10 to ``v`` of the rows
    ``id % 3 = k`` below ``m`` and inserts one new row."""
    mine = ", ".join(f"({i})" for i in range(k, m, 3))
    out = []
    for r in range(rounds):
        out += [
            f"UPDATE stress SET v = v + 1 WHERE id % 3 = {k} AND id < {m}",
            f"MERGE INTO stress t USING (SELECT * FROM VALUES {mine} AS s(id)) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = t.v + 10",
            f"INSERT INTO stress VALUES ({inserted_id(k, r)}, {k}, 0)",
        ]
    return out


def inserted_id(k: int, r: int) -> int:
    """The id writer ``k`` inserts in round ``r``."""
    return 1000 + 100 * k + r


def main() -> None:
    """Run one writer (see the module docstring)."""
    import hudisql
    from hudisql.errors import CommitConflictError

    warehouse, url, k, rounds, m = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    session = hudisql.connect(warehouse=warehouse, catalog=url, conf={
        "spark.master": "local[1]", "spark.app.name": f"stress-writer-{k}",
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"})
    print("READY", flush=True)
    sys.stdin.readline()  # GO
    counts = {"statements": 0, "conflicts": 0, "seconds": 0.0}
    started = time.monotonic()
    try:
        for statement in statements(k, rounds, m):
            while True:
                began = time.monotonic()
                try:
                    session.sql(statement).collect()
                    break
                except CommitConflictError as exc:
                    counts["conflicts"] += 1  # retried: nothing of it is visible
                    print(f"conflict after {time.monotonic() - began:.1f}s: {exc}",
                          file=sys.stderr, flush=True)
            counts["statements"] += 1
            print(f"committed in {time.monotonic() - began:.1f}s: {statement}",
                  file=sys.stderr, flush=True)
            print(f"COMMITTED {counts['statements']}", flush=True)
        counts["seconds"] = round(time.monotonic() - started, 1)
        print("DONE " + json.dumps(counts), flush=True)
    except Exception as exc:
        print(f"ERR {type(exc).__name__} {' '.join(str(exc).split())}", flush=True)
    finally:
        session.stop()


if __name__ == "__main__":
    main()
