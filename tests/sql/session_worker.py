"""A hudisql session in its own process, driven line by line: for the cross-process tests.

Usage: ``python -m tests.sql.session_worker <warehouse> <catalog url>``. Each input line
is a SQL script; the answer is one line ``OK <json rows>`` or ``ERR <error class> <message>``.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    """Serve scripts from stdin until it closes."""
    import hudisql

    session = hudisql.connect(warehouse=sys.argv[1], catalog=sys.argv[2],
                              conf={"spark.master": "local[1]", "spark.app.name": "worker"})
    print("READY", flush=True)
    for line in sys.stdin:
        try:
            rows = [list(r) for r in session.sql(line).collect()]
            print("OK " + json.dumps(rows, default=str), flush=True)
        except Exception as exc:
            message = " ".join(str(exc).split())
            print(f"ERR {type(exc).__name__} {message}", flush=True)
    session.stop()


if __name__ == "__main__":
    main()
