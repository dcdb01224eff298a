"""Stage-by-stage profile of one small commit early and late in a table's history (issue 28).

    .venv/bin/python benchmarks/profile_history.py [--commits 300] [--at 10,150,300]
    .venv/bin/python benchmarks/profile_history.py --core [--table-type cow|mor]
        [--metadata] [--commits 1000]

SQL (the default): makes ``--commits`` small SQL commits on one merge-on-read table with
the defaults (the statements of ``bench_history.py``: an INSERT of 20 rows, every 4th an
UPDATE of 20 rows; automatic clean and archival on). Spark tasks run in other processes
and show as time in ``collect``: only the driver is profiled.

``--core``: no Spark. Each commit upserts the same 20 records through the table core's
``WriteClient`` and then runs the automatic services as a SQL write does
(``run_inline_services``), so the data stays the same size while the history grows: what
a commit costs more late than early is history's doing. ``--table-type mor`` runs inline
compaction (``hoodie.compact.inline``) so that log files do not pile up; ``--metadata``
gives the table a metadata table (files, column stats, record index).

For each profiled commit (``--at``; default 10, N/2 and N) it prints, side by side:

- the wall time, and (SQL) the driver's calls into the JVM (py4j commands);
- each stage's cumulative time and call count (timeline load, table open, staging,
  tagging and writing, the commit, the metadata table, clean planning and clean, the
  archival check and archival, the catalog);
- the storage operations of the process by kind and area (the active timeline, the
  archived timeline, the metadata table, other ``.hoodie`` files, data files): counts do
  not depend on the machine's load, so they show what grows with history.

The machine's load is printed with the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_history import _statement

import hudisql
from hudisql.table.io.storage import Storage

#: Stage label -> ``file.py:function`` suffixes of cProfile keys whose cumulative time counts.
STAGES: dict[str, tuple[str, ...]] = {
    "statement (all)": ("router.py:run_statement",),
    "catalog snapshot/commit": ("store.py:snapshot", "store.py:commit_write",
                                "store.py:open_write", "catalog.py:write_transaction"),
    "table open": ("table.py:open",),
    "timeline load": ("timeline.py:load",),
    "file-system view": ("fsview.py:file_groups", "fsview.py:__init__"),
    "staging (Spark job)": ("pipeline.py:_stage",),
    "tag + write (Spark jobs)": ("pipeline.py:_tag_and_write",),
    "existing keys (core)": ("writer.py:_existing",),
    "write slices (core)": ("slices.py:write_slice",),
    "transaction start": ("transaction.py:start",),
    "transaction commit": ("transaction.py:commit",),
    "metadata table": ("participant.py:prepare", "participant.py:commit",
                       "participant.py:participants_for"),
    "inline services": ("inline.py:run_inline_services",),
    "compaction": ("compaction.py:run_compaction", "compaction.py:schedule_compaction"),
    "clean check": ("clean.py:clean_needed",),
    "clean plan": ("clean.py:plan_clean",),
    "clean run": ("clean.py:run_clean",),
    "archive check": ("archive.py:archive_needed",),
    "archive run": ("archive.py:run_archive",),
    "archived timeline": ("archive.py:__init__",),
}

_OPS = ("read_bytes", "open_input_file", "list_dir", "list_recursive", "exists", "is_file",
        "size", "write_bytes", "write_atomic", "create_if_absent", "delete", "delete_dir")
COUNTS: Counter[tuple[str, str]] = Counter()
#: Every commit's storage operations, in order.
OPS: list[Counter[tuple[str, str]]] = []


def _area(path: str) -> str:
    if "/.hoodie/metadata" in path:
        return "metadata table"
    if "/.hoodie/archived" in path:
        return "archived timeline"
    if "/.hoodie/." in path or path.endswith("hoodie.properties"):
        return ".hoodie (other)"
    if "/.hoodie" in path:
        return "active timeline"
    return "data"


def _counting(op: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def counted(self: Storage, rel: str = "", *args: Any, **kwargs: Any) -> Any:
        COUNTS[(op, _area(f"{self.base_path.rstrip('/')}/{rel}"))] += 1
        return method(self, rel, *args, **kwargs)
    return counted


def _instrument() -> None:
    for op in _OPS:
        setattr(Storage, op, _counting(op, getattr(Storage, op)))


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def _stages(stats: pstats.Stats) -> dict[str, tuple[float, int]]:
    out: dict[str, tuple[float, int]] = {}
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for label, suffixes in STAGES.items():
        cum, calls = 0.0, 0
        for (file, _, name), (_, ncalls, _, ct, _) in raw.items():
            key = f"{os.path.basename(file)}:{name}"
            if key in suffixes:
                cum += ct
                calls += ncalls
        out[label] = (cum, calls)
    return out


def _py4j(stats: pstats.Stats) -> int:
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    return sum(v[1] for (file, _, name), v in raw.items()
               if file.endswith("clientserver.py") and name == "send_command")


Profile = tuple[float, int, dict[str, tuple[float, int]], Counter[Any]]


def _measure(n: int, write: Callable[[], Any], profiles: dict[int, Profile], at: list[int],
             top: int, label: str) -> float:
    """Run commit ``n`` (profiled when in ``at``); returns its wall time."""
    profiler = cProfile.Profile() if n in at else None
    COUNTS.clear()
    start = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    write()
    if profiler is not None:
        profiler.disable()
    took = time.perf_counter() - start
    OPS.append(Counter(COUNTS))
    if profiler is not None:
        stats = pstats.Stats(profiler)
        profiles[n] = (took, _py4j(stats), _stages(stats), Counter(COUNTS))
        print(f"commit {n}: {took:.3f} s ({label}); {_load()}", flush=True)
        if top:
            stats.sort_stats("cumulative").print_stats(top)
    return took


def _sql(args: argparse.Namespace, at: list[int], work: Path,
         profiles: dict[int, Profile]) -> list[float]:
    session = hudisql.connect(warehouse=str(work / "wh"),
                              conf={"spark.ui.enabled": "false",
                                    "spark.sql.shuffle.partitions": "2"})
    session.sql("CREATE TABLE h (id INT, v STRING, ts BIGINT) USING hudi "
                "TBLPROPERTIES (type = 'mor', primaryKey = 'id', preCombineField = 'ts')")
    times: list[float] = []
    inserted = 0
    for n in range(1, args.commits + 1):
        sql, inserted = _statement(n, inserted)
        times.append(_measure(n, lambda sql=sql: session.sql(sql), profiles, at, args.top,
                              "UPDATE" if sql.startswith("UPDATE") else "INSERT"))
        if n % 50 == 0:
            print(f"commit {n}: median of the last 25 {statistics.median(times[-25:]):.3f} s "
                  f"({_load()})", flush=True)
    session.close()
    return times


def _core(args: argparse.Namespace, at: list[int], work: Path,
          profiles: dict[int, Profile]) -> list[float]:
    import pyarrow as pa

    from hudisql.metadata.build import build_partitions
    from hudisql.metadata.participant import participants_for
    from hudisql.services.inline import run_inline_services
    from hudisql.services.maintenance import Maintenance
    from hudisql.table.write.create import create_table
    from hudisql.txn.writer import WriteClient

    schema = pa.schema([("id", pa.int32()), ("v", pa.string()), ("ts", pa.int64())])
    mor = args.table_type == "mor"
    table = create_table(work / "h", "h", schema, "id", (), "ts",
                         "MERGE_ON_READ" if mor else "COPY_ON_WRITE")
    options = {"hoodie.compact.inline": "true"} if mor else {}
    client = WriteClient(table)
    client.insert([{"id": i, "v": "v0", "ts": 0} for i in range(20)])
    if args.metadata:
        table = build_partitions(client.table, ["files", "column_stats", "record_index"])
    maintenance = Maintenance(str(work / "h"), options)
    times: list[float] = []
    for n in range(1, args.commits + 1):
        def commit(n: int = n) -> None:
            table = maintenance.open_table()
            writer = WriteClient(table, options=options,
                                 participants=participants_for(table, options))
            writer.upsert([{"id": i, "v": f"v{n}", "ts": n} for i in range(20)])
            run_inline_services(maintenance)
        times.append(_measure(n, commit, profiles, at, args.top, "upsert"))
        if n % 100 == 0:
            print(f"commit {n}: median of the last 25 {statistics.median(times[-25:]):.3f} s "
                  f"({_load()})", flush=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--at", default="", help="commits to profile (default: 10, N/2, N)")
    parser.add_argument("--top", type=int, default=0, help="also print the top N functions")
    parser.add_argument("--core", action="store_true", help="the table core, no Spark")
    parser.add_argument("--table-type", choices=("cow", "mor"), default="cow")
    parser.add_argument("--metadata", action="store_true", help="with a metadata table")
    args = parser.parse_args()
    n_commits = args.commits
    at = sorted({int(x) for x in args.at.split(",") if x} or {10, n_commits // 2, n_commits})
    _instrument()
    work = Path(tempfile.mkdtemp(prefix="profile_history_"))
    mode = (f"core, {args.table_type}{', metadata table' if args.metadata else ''}"
            if args.core else "SQL")
    print(f"{n_commits} commits ({mode}), profiling {at}; start: {_load()}", flush=True)
    profiles: dict[int, Profile] = {}
    times = (_core if args.core else _sql)(args, at, work, profiles)
    cols = sorted(profiles)
    print("\n" + f"{'':34}" + "".join(f"{'commit ' + str(c):>22}" for c in cols))
    print(f"{'wall time (s)':34}" + "".join(f"{profiles[c][0]:>22.3f}" for c in cols))
    print(f"{'py4j commands':34}" + "".join(f"{profiles[c][1]:>22d}" for c in cols))
    for label in STAGES:
        cells = [profiles[c][2][label] for c in cols]
        print(f"{label:34}" + "".join(f"{t:>14.3f} s {k:>4}x" for t, k in cells))
    keys = sorted({k for c in cols for k in profiles[c][3]}, key=lambda k: (k[1], k[0]))
    print("\nstorage operations (count)")
    for key in keys:
        print(f"  {key[1] + ' ' + key[0]:32}" + "".join(
            f"{profiles[c][3].get(key, 0):>22d}" for c in cols))
    mid = len(OPS) // 2

    def medians(per: list[int]) -> tuple[float, float, float]:
        # Means: commits alternate between kinds (with a clean or not), a median flips.
        return (statistics.mean(per[:25]), statistics.mean(per[mid - 12:mid + 13]),
                statistics.mean(per[-25:]))

    print("\nstorage operations per commit, mean of the first 25, the middle 25 and the "
          "last 25 commits")
    for area in sorted({k[1] for ops in OPS for k in ops}):
        print(f"  {area:32}" + "".join(f"{m:>10.1f}" for m in medians(
            [sum(v for k, v in ops.items() if k[1] == area) for ops in OPS])))
        for key in sorted(k for k in {k for ops in OPS for k in ops} if k[1] == area):
            found = medians([ops.get(key, 0) for ops in OPS])
            if len(set(found)) > 1:
                print(f"    {key[0]:30}" + "".join(f"{m:>10.1f}" for m in found))
    print(f"  {'all':32}" + "".join(
        f"{m:>10.1f}" for m in medians([sum(ops.values()) for ops in OPS])))
    hoodie = work / ("h" if args.core else "wh/h") / ".hoodie"
    files = sum(1 for p in hoodie.rglob("*") if p.is_file())
    print(f"\nmedian commit: first 25 {statistics.median(times[:25]):.3f} s, last 25 "
          f"{statistics.median(times[-25:]):.3f} s; files under .hoodie {files}; "
          f"end: {_load()}")


if __name__ == "__main__":
    main()
