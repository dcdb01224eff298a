"""History benchmark (issue 28): does a small commit cost the same after years of commits?

N small SQL commits on one merge-on-read table with the defaults (automatic clean and
archival on): an ``INSERT`` of 20 new rows, every 4th commit an ``UPDATE`` of 20 existing
rows. Reports the median commit time of the first 25 and of the last 25 commits and their
ratio (goal <= 1.2), the files under ``.hoodie`` at the end (goal: bounded by the archival
settings, not by N), and a point query and a ``count(*)`` at commits 25, N/2 and N. With
``--profile`` it also profiles commit 12 and the last commit (cProfile, top functions by
cumulative time; both UPDATEs when the commit count is a multiple of 4, so that their
function-call counts, which the machine's load does not change, compare the work done).
The machine's load is printed with the figures. With ``--compare`` it profiles every commit of
the first 25 and of the last 25 and prints the functions whose call counts grew most between
the two windows (calls do not depend on the load, so this says what grows with the table's
age: more log files, more instants, more services).

Run: ``.venv/bin/python benchmarks/bench_history.py --commits 400``
(``--commits`` defaults to the issue's 2,000; ``--no-services`` turns automatic clean and
archival off, for the comparison; ``--table-version 6`` makes version-6 tables instead of
the default version: ``hoodie.write.table.version``). ``--warmup`` commits (default 25)
first go to a table of their own, so the first 25 timed commits measure a young table and
not a cold process (Spark's first jobs, Python imports, the JIT).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import hudisql

ROWS = 20


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def _statement(n: int, inserted: int) -> tuple[str, int]:
    """The SQL of commit ``n`` (1-based) and the rows inserted so far after it."""
    if n % 4 == 0 and inserted >= ROWS:
        first = (n * 7) % (inserted - ROWS + 1)
        return (f"UPDATE h SET v = 'u{n}', ts = {n} WHERE id >= {first} AND id < "
                f"{first + ROWS}", inserted)
    values = ", ".join(f"({inserted + i}, 'v{n}', {n})" for i in range(ROWS))
    return f"INSERT INTO h VALUES {values}", inserted + ROWS


def _files(root: Path) -> tuple[int, int]:
    """(files under .hoodie, instant files of the active timeline: in ``.hoodie/timeline``
    on table versions 8 and 9, in ``.hoodie`` itself on version 6)."""
    hoodie = root / ".hoodie"
    everything = sum(1 for p in hoodie.rglob("*") if p.is_file())
    active_dir = hoodie / "timeline" if (hoodie / "timeline").is_dir() else hoodie
    active = sum(1 for p in active_dir.iterdir() if p.is_file() and p.name[:1].isdigit())
    return everything, active


def _queries(session: Any, inserted: int, table: str = "h"
             ) -> tuple[float, float, int]:
    start = time.perf_counter()
    got = session.sql(f"SELECT * FROM {table} WHERE id = {inserted // 2}").collect()
    point = time.perf_counter() - start
    assert len(got) == 1, got
    start = time.perf_counter()
    count = session.sql(f"SELECT count(*) FROM {table}").collect()[0][0]
    counted = time.perf_counter() - start
    return point, counted, int(count)


def _profile(session: Any, sql: str, label: str) -> float:
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    session.sql(sql)
    profiler.disable()
    took = time.perf_counter() - start
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
    print(f"--- profile of {label} ({took:.2f} s) ---")
    print("\n".join(out.getvalue().splitlines()[:60]))
    return took


def _window_growth(first: cProfile.Profile, last: cProfile.Profile, top: int = 30) -> None:
    """Print the functions whose call counts grew most from the first window to the last."""
    def by_function(profile: cProfile.Profile) -> dict[str, tuple[int, float]]:
        out: dict[str, tuple[int, float]] = {}
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        for (path, line, name), row in stats.items():
            key = f"{'/'.join(path.split('/')[-2:])}:{line}({name})"
            calls, cumulative = out.get(key, (0, 0.0))
            out[key] = (calls + row[1], cumulative + row[3])
        return out

    a, b = by_function(first), by_function(last)
    total_a, total_b = sum(c for c, _ in a.values()), sum(c for c, _ in b.values())
    print(f"--- function calls of the first 25 commits {total_a}, of the last 25 {total_b} "
          f"(x{total_b / max(total_a, 1):.2f}); most grown (calls first -> last, cumulative "
          "seconds first -> last) ---")
    grown = sorted(set(a) | set(b), key=lambda k: a.get(k, (0, 0.0))[0] - b.get(k, (0, 0.0))[0])
    for key in grown[:top]:
        (ca, ta), (cb, tb) = a.get(key, (0, 0.0)), b.get(key, (0, 0.0))
        print(f"{ca:9d} -> {cb:9d}   {ta:7.3f} -> {tb:7.3f} s   {key}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=2000, help="commits to make")
    parser.add_argument("--no-services", action="store_true",
                        help="hoodie.clean.automatic=false and hoodie.archive.automatic=false")
    parser.add_argument("--profile", action="store_true", help="profile commit 12 and the last")
    parser.add_argument("--compare", action="store_true",
                        help="profile the first and last 25 commits; print what grew")
    parser.add_argument("--table-version", type=int, default=None,
                        help="hoodie.write.table.version of the tables (default: hudisql's)")
    parser.add_argument("--warmup", type=int, default=25,
                        help="commits made first on a table of their own (not timed)")
    args = parser.parse_args()
    n_commits = max(args.commits, 50)
    conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}
    if args.no_services:
        conf.update({"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"})
    version_property = ("" if args.table_version is None else
                        f", 'hoodie.write.table.version' = '{args.table_version}'")
    work = Path(tempfile.mkdtemp(prefix="bench_history_"))
    session = hudisql.connect(warehouse=str(work / "wh"), conf=conf)
    for name in ("warm", "h"):
        session.sql(f"CREATE TABLE {name} (id INT, v STRING, ts BIGINT) USING hudi "
                    "TBLPROPERTIES (type = 'mor', primaryKey = 'id', preCombineField = 'ts'"
                    f"{version_property})")
    warm = 0
    for n in range(1, args.warmup + 1):
        sql, warm = _statement(n, warm)
        session.sql(sql.replace(" h ", " warm "))
    if args.warmup:
        _queries(session, warm, "warm")
    root = Path(session.table("h").path)
    version = (root / ".hoodie" / "hoodie.properties").read_text().split(
        "hoodie.table.version=")[1].split()[0]
    print(f"{n_commits} commits, table version {version}, services "
          f"{'off' if args.no_services else 'on'}; start: {_load()}")
    checkpoints = {25, n_commits // 2, n_commits}
    times: list[float] = []
    inserted = 0
    windows = {"first": cProfile.Profile(), "last": cProfile.Profile()}
    started = time.perf_counter()
    for n in range(1, n_commits + 1):
        sql, inserted = _statement(n, inserted)
        window = None if not args.compare else (
            "first" if n <= 25 else "last" if n > n_commits - 25 else None)
        if args.profile and n in (12, n_commits):
            times.append(_profile(session, sql, f"commit {n}"))
        elif window is not None:
            start = time.perf_counter()
            windows[window].enable()
            session.sql(sql)
            windows[window].disable()
            times.append(time.perf_counter() - start)
        else:
            start = time.perf_counter()
            session.sql(sql)
            times.append(time.perf_counter() - start)
        if n in checkpoints:
            point, counted, rows = _queries(session, inserted)
            everything, active = _files(root)
            assert rows == inserted, (rows, inserted)
            print(f"commit {n:5d}: median of the last 25 commits "
                  f"{statistics.median(times[-25:]):.3f} s; point query {point:.3f} s, "
                  f"count(*) {counted:.3f} s ({rows} rows); files under .hoodie {everything}, "
                  f"active instant files {active}; {_load()}", flush=True)
        elif n % 50 == 0:
            print(f"commit {n:5d}: median of the last 25 {statistics.median(times[-25:]):.3f} s"
                  f" ({_load()})", flush=True)
    first, last = statistics.median(times[:25]), statistics.median(times[-25:])
    everything, active = _files(root)
    print(f"median commit: first 25 {first:.3f} s, last 25 {last:.3f} s, ratio "
          f"{last / first:.2f} (goal <= 1.2)")
    print(f"files under .hoodie at the end: {everything} (active instant files {active}); "
          f"total {time.perf_counter() - started:.0f} s; end: {_load()}")
    if args.compare:
        _window_growth(windows["first"], windows["last"])
    session.close()


if __name__ == "__main__":
    main()
