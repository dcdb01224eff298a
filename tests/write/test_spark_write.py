"""Writes as Spark jobs: rows written read back identically through Spark and hudi-rs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudisql.errors import WriteError
from hudisql.session import HudiSession, HudiTableHandle

pytestmark = pytest.mark.spark

Row = tuple[str, int, str, float, str]

BASE: list[Row] = [
    ("u1", 1, "rider-A", 10.0, "sf"), ("u2", 1, "rider-B", 20.0, "sf"),
    ("u3", 1, "rider-C", 30.0, "la"), ("u4", 1, "rider-D", 40.0, "ny"),
]


def _df(session: HudiSession, rows: list[Row]) -> Any:
    return session.spark.createDataFrame(rows, "uuid string, ts long, rider string, "
                                               "fare double, city string")


def _spark_rows(handle: HudiTableHandle) -> list[Row]:
    df = handle.read().select("uuid", "ts", "rider", "fare", "city")
    return sorted(tuple(r) for r in df.collect())  # type: ignore[misc]


def _oracle_rows(handle: HudiTableHandle) -> list[Row]:
    table = pa.Table.from_batches(hudi.HudiTable(handle.path).read())
    if table.num_rows == 0:
        return []
    cols = table.select(["uuid", "ts", "rider", "fare", "city"]).to_pylist()
    return sorted(tuple(r.values()) for r in cols)  # type: ignore[misc]


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
@pytest.mark.parametrize("partitioned", [True, False])
def test_insert_upsert_delete_read_back(hudi_session: HudiSession,
                                        new_table: Callable[..., HudiTableHandle],
                                        table_type: str, partitioned: bool) -> None:
    handle = new_table(table_type, partitioned)
    first = handle.insert(_df(hudi_session, BASE), **{"hoodie.parquet.compression.codec": "zstd"})
    assert first.action == ("deltacommit" if table_type == "MERGE_ON_READ" else "commit")
    assert {pq.ParquetFile(f).metadata.row_group(0).column(0).compression
            for f in Path(handle.path).rglob("*.parquet")} == {"ZSTD"}
    assert _spark_rows(handle) == sorted(BASE)
    # u2 updated (newer ts), u3 stale update loses, u5 inserted
    handle.upsert(_df(hudi_session, [("u2", 2, "rider-B", 25.0, "sf"),
                                     ("u3", 0, "rider-C", 99.0, "la"),
                                     ("u5", 1, "rider-E", 50.0, "la")]))
    expected = sorted([BASE[0], ("u2", 2, "rider-B", 25.0, "sf"), BASE[2], BASE[3],
                       ("u5", 1, "rider-E", 50.0, "la")])
    assert _spark_rows(handle) == expected
    handle.delete(_df(hudi_session, [("u1", 9, "x", 0.0, "sf"), ("zz", 9, "x", 0.0, "sf")]))
    expected = [r for r in expected if r[0] != "u1"]
    assert _spark_rows(handle) == expected
    assert _oracle_rows(handle) == expected
    timeline = handle.core().timeline
    assert len(timeline.completed()) == 3
    assert not timeline.pending()


def test_bad_input_is_refused_and_table_unchanged(hudi_session: HudiSession,
                                                  new_table: Callable[..., HudiTableHandle]
                                                  ) -> None:
    handle = new_table()
    handle.insert(_df(hudi_session, BASE))
    before = sorted(p.name for p in __import__("pathlib").Path(handle.path).rglob("*"))
    spark = hudi_session.spark
    with pytest.raises(WriteError, match=r"null or empty record key field \(uuid\)"):
        handle.upsert(_df(hudi_session, [(None, 1, "r", 1.0, "sf")]))  # type: ignore[list-item]
    with pytest.raises(WriteError, match=r"lacks the column\(s\) \['uuid'\]"):
        handle.upsert(spark.createDataFrame([(1, "r", 1.0, "sf")],
                                            "ts long, rider string, fare double, city string"))
    with pytest.raises(WriteError, match="column 'fare' is boolean"):
        handle.upsert(spark.createDataFrame([("u9", 1, "r", True, "sf")],
                                            "uuid string, ts long, rider string, fare boolean,"
                                            " city string"))
    with pytest.raises(WriteError, match="unknown write operation 'merge'"):
        handle.write(_df(hudi_session, BASE), "merge")
    with pytest.raises(WriteError, match=r"compression\.codec='lzma' is not a parquet codec"):
        handle.upsert(_df(hudi_session, BASE), **{"hoodie.parquet.compression.codec": "lzma"})
    with pytest.raises(WriteError, match="'u1' is already in the table"):
        handle.insert(_df(hudi_session, BASE[:1]))
    after = sorted(p.name for p in __import__("pathlib").Path(handle.path).rglob("*"))
    assert _spark_rows(handle) == sorted(BASE)
    # The refused insert ran as far as tagging: its instant was rolled back, nothing else.
    stray = set(after) - set(before)
    assert all("rollback" in name for name in stray), stray


def test_write_to_a_table_with_damaged_properties_is_refused(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle]) -> None:
    from pathlib import Path

    from hudisql.errors import CorruptTableError

    handle = new_table()
    props = Path(handle.path) / ".hoodie" / "hoodie.properties"
    for backup in props.parent.glob("hoodie.properties.backup"):
        backup.unlink()
    props.write_text(props.read_text().replace("hoodie.table.checksum=", "hoodie.table.checksum=9"))
    before = sorted(str(p) for p in Path(handle.path).rglob("*"))
    with pytest.raises(CorruptTableError, match=r"hoodie\.properties"):
        handle.upsert(_df(hudi_session, BASE))
    assert sorted(str(p) for p in Path(handle.path).rglob("*")) == before
