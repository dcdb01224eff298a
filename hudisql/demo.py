"""The demo: hudisql's main job end to end, on the embedded defaults.

Local Spark, the SQLite catalog and a local warehouse (``./demo-warehouse``): create a
Merge-on-Read table in SQL, insert, update and delete rows through Spark write jobs, read
the table back through Spark and in pure Python, travel back in time, create indexes
(RFC-45), log-compact the table's log blocks (RFC-48), and show the timeline. Run it with
``./dev demo``, ``hudisql demo`` or ``python -m hudisql.demo``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hudisql.session import HudiSession

TABLE = "trips"

SETUP = f"""
DROP TABLE IF EXISTS {TABLE} PURGE;
CREATE TABLE {TABLE} (ts BIGINT, uuid STRING, rider STRING, driver STRING, fare DOUBLE,
                      city STRING)
USING hudi
PARTITIONED BY (city)
TBLPROPERTIES (type = 'mor', primaryKey = 'uuid', preCombineField = 'ts');
"""

INSERT = f"""
INSERT INTO {TABLE} VALUES
  (1695159649087, '334e26e9', 'rider-A', 'driver-K', 19.10, 'san_francisco'),
  (1695091554788, 'e96c4396', 'rider-C', 'driver-M', 27.70, 'san_francisco'),
  (1695046462179, '9909a8b1', 'rider-D', 'driver-L', 33.90, 'san_francisco'),
  (1695516137016, 'e3cf430c', 'rider-F', 'driver-P', 34.15, 'sao_paulo'),
  (1695376420876, '7a84095f', 'rider-G', 'driver-Q', 43.40, 'sao_paulo'),
  (1695173887231, '3eeb61f7', 'rider-I', 'driver-S', 41.06, 'chennai');
"""

CHANGES = [
    ("an update, written as a log block",
     f"UPDATE {TABLE} SET fare = 25.0 WHERE rider = 'rider-D'"),
    ("a delete, written as a delete block",
     f"DELETE FROM {TABLE} WHERE rider = 'rider-G'"),
]

QUERY = f"SELECT uuid, rider, driver, fare, city FROM {TABLE} ORDER BY uuid"


def _step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def run(warehouse: str) -> None:
    """Run the demo in ``warehouse`` (created if absent; the demo table is re-created)."""
    import hudisql
    from hudisql.table import HudiTable

    started = time.monotonic()
    _step(f"connect: local Spark, SQLite catalog, warehouse {warehouse}")
    session = hudisql.connect(warehouse=warehouse)
    try:
        _step("CREATE TABLE ... USING hudi (Merge-on-Read, partitioned by city)")
        session.sql_script(SETUP)
        _step("INSERT INTO: 6 rows, written by Spark tasks as base files")
        session.sql(INSERT)
        first = HudiTable.open(session.table(TABLE).path).timeline.last_completed()
        for title, statement in CHANGES:
            _step(f"{statement}  -- {title}")
            session.sql(statement)

        _step(f"{QUERY}  -- through the hudi Spark data source")
        session.sql(QUERY).show(truncate=False)

        path = session.table(TABLE).path
        _step("the same table read in pure Python (hudisql.read_table, no Spark)")
        rows = hudisql.read_table(path)
        print(rows.select(["uuid", "rider", "fare", "city"]).sort_by("uuid").to_pandas())

        agreed = _hudi_reader_rows(path)
        if agreed is not None:
            print(f"the hudi (hudi-rs) reader reads the same table: {agreed} rows")

        if first is not None:
            _step(f"time travel: the table as of the first commit {first.timestamp}")
            old = hudisql.read_table(path, as_of=first.timestamp)
            print(f"{old.num_rows} rows then, {rows.num_rows} now; rider-D's fare then: "
                  f"{_fare(old, 'rider-D')}, now: {_fare(rows, 'rider-D')}")

        _step(f"CREATE INDEX on {TABLE}: a record index on the key, a secondary index on rider")
        session.sql_script(f"CREATE INDEX record_index ON {TABLE} (uuid);\n"
                           f"CREATE INDEX idx_rider ON {TABLE} (rider);")
        session.sql(f"SHOW INDEXES FROM {TABLE}").show(truncate=False)
        differences = session.sql(f"CALL validate_metadata_table(table => '{TABLE}')").count()
        print(f"the metadata table matches the data table: {differences} differences")

        _step(f"RUN LOG COMPACTION ON {TABLE}: four more updates add log blocks, then "
              "log compaction stitches them into one")
        for n in range(4):
            session.sql(f"UPDATE {TABLE} SET fare = {40 + n}.5 "
                        "WHERE uuid IN ('334e26e9', 'e96c4396')")
        blocks, before = _valid_blocks(session), _rows(session)
        session.sql(f"RUN LOG COMPACTION ON {TABLE}").show(truncate=False)
        print(f"valid log blocks: {blocks} before, {_valid_blocks(session)} after; "
              f"the same rows: {_rows(session) == before}")

        _step(f"SHOW TIMELINE {TABLE}")
        session.sql(f"SHOW TIMELINE {TABLE}").select(
            "instant_time", "action", "state", "operation", "records_written",
            "records_deleted", "files_written",
        ).show(truncate=False)
        print(f"done in {time.monotonic() - started:.1f} s; the table is at {path}")
    finally:
        session.stop()


def _valid_blocks(session: HudiSession) -> int:
    """The table's log blocks that readers merge."""
    blocks = session.sql(f"CALL show_log_blocks(table => '{TABLE}')")
    return int(blocks.where("verdict = 'valid'").count())


def _rows(session: HudiSession) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in session.sql(f"SELECT uuid, fare FROM {TABLE}").collect())


def _hudi_reader_rows(path: str) -> int | None:
    """Rows the independent ``hudi`` PyPI reader sees, or None when it is not installed."""
    try:
        import hudi
    except ImportError:
        return None
    return int(sum(batch.num_rows for batch in hudi.HudiTable(path).read()))


def _fare(table: object, rider: str) -> float | None:
    import pyarrow as pa
    import pyarrow.compute as pc

    assert isinstance(table, pa.Table)
    hit = table.filter(pc.equal(table.column("rider"), rider))
    return hit.column("fare")[0].as_py() if hit.num_rows else None


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: ``python -m hudisql.demo [--warehouse DIR] [--fresh]``."""
    parser = argparse.ArgumentParser(prog="hudisql demo", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default=os.path.abspath("demo-warehouse"),
                        help="warehouse directory (default: ./demo-warehouse)")
    parser.add_argument("--fresh", action="store_true",
                        help="delete the warehouse (and its catalog) first")
    args = parser.parse_args(argv)
    if args.fresh:
        shutil.rmtree(args.warehouse, ignore_errors=True)
    run(args.warehouse)
    return 0


if __name__ == "__main__":
    sys.exit(main())
