"""Access to the real Apache Hudi tables in ``tests/data/hudi`` for tests (see its README).

The tables ship as zip files (with macOS ``__MACOSX`` debris, which is ignored). They are
extracted once per test session into a temporary directory; tests that change a table take
a private copy with :func:`copy_table`.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "data" / "hudi"

#: JVM options of the suite's Spark JVMs: the client compiler only and the serial collector.
#: They live seconds to minutes on small data, so the server compiler's work (about half a
#: short driver's CPU time) never pays back. ``tests/conftest.py`` sets them for every driver.
TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: ``create_table`` options of a version 6 table (Hudi 0.14/0.15's format), for tests of
#: what only version 6 has on disk: timeline layout 1's file names, ``.hoodie/archived``,
#: instant-time incremental ranges. New tables are version 9 without them.
VERSION_6 = {"hoodie.write.table.version": "6"}

#: Every fixture table by name, with its zip path relative to FIXTURES.
TABLE_ZIPS = {
    "v6_trips_8i1u": "quickstart_trips_table/mor/avro/v6_trips_8i1u.zip",
    "v6_trips_8i3d": "quickstart_trips_table/mor/avro/v6_trips_8i3d.zip",
    "v8_trips_8i1u": "quickstart_trips_table/mor/avro/v8_trips_8i1u.zip",
    "v6_nonpartitioned_rollback": "sample_table/mor/parquet/v6_nonpartitioned_rollback.zip",
    "v6_simplekeygen_nonhivestyle": "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle.zip",
    "v6_nonpartitioned": "sample_table/cow/v6_nonpartitioned.zip",
    "v8_nonpartitioned": "sample_table/cow/v8_nonpartitioned.zip",
}

#: Version-9 tables (Hudi 1.1.1) with HFile metadata tables, record and secondary indexes.
#: Kept apart from TABLE_ZIPS, whose tests cover every table of it.
HFILE_TABLE_ZIPS = {
    "v9_txns_complex_meta": "sample_table/mor/avro/v9_txns_complex_meta.zip",
}

#: Single log files by kind.
LOG_FILES = {
    kind: next(p for p in (FIXTURES / "log_files" / kind).iterdir() if p.name.startswith("."))
    for kind in ("valid_log_avro_data", "valid_log_delete", "valid_log_parquet_data",
                 "valid_log_rollback")
}


@cache
def _extract_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="hudisql-fixtures-"))


@cache
def table_path(name: str) -> Path:
    """The extracted directory of fixture table ``name`` (shared: do not modify it)."""
    dest = _extract_root() / name
    with zipfile.ZipFile(FIXTURES / (TABLE_ZIPS.get(name) or HFILE_TABLE_ZIPS[name])) as zf:
        for member in zf.namelist():
            if not member.startswith("__MACOSX") and not member.endswith(".DS_Store"):
                zf.extract(member, dest)
    return dest / name


def copy_table(name: str, dest_dir: Path) -> Path:
    """A private, writable copy of fixture table ``name`` below ``dest_dir``."""
    target = Path(dest_dir) / name
    shutil.copytree(table_path(name), target)
    return target


def core_rows_of(path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """The table's rows in ``columns``, sorted, as hudisql's own reader gives them."""
    from hudisql.table import HudiTable

    table = HudiTable.open(path).read(columns=columns)
    return sorted(tuple(r[c] for c in columns) for r in table.to_pylist())


def rs_rows_of(path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """The same rows as the hudi (hudi-rs) reader gives them."""
    import hudi
    import pyarrow as pa

    table = pa.Table.from_batches(hudi.HudiTable(path).read())
    return sorted(tuple(r[c] for c in columns) for r in table.select(columns).to_pylist())
