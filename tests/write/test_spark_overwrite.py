"""insert_overwrite as Spark jobs, and deletes inside upserts (``_hoodie_is_deleted``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from hudisql.errors import WriteError
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.write.pipeline import SparkWriter

pytestmark = pytest.mark.spark

Row = tuple[str, int, str, float, str]
COLUMNS = "uuid string, ts long, rider string, fare double, city string"
BASE: list[Row] = [
    ("u1", 1, "rider-A", 10.0, "sf"), ("u2", 1, "rider-B", 20.0, "sf"),
    ("u3", 1, "rider-C", 30.0, "la"), ("u4", 1, "rider-D", 40.0, "ny"),
]


def _df(session: HudiSession, rows: list[Any], schema: str = COLUMNS) -> Any:
    return session.spark.createDataFrame(rows, schema)


def _rows(handle: HudiTableHandle) -> list[Row]:
    df = handle.read().select("uuid", "ts", "rider", "fare", "city")
    return sorted(tuple(r) for r in df.collect())  # type: ignore[misc]


def _oracle(handle: HudiTableHandle) -> list[Row]:
    batches = hudi.HudiTable(handle.path).read()
    table = pa.Table.from_batches(batches) if batches else pa.table({})
    if not table.num_rows:
        return []
    cols = table.select(["uuid", "ts", "rider", "fare", "city"]).to_pylist()
    return sorted(tuple(r.values()) for r in cols)  # type: ignore[misc]


def _groups(handle: HudiTableHandle) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for s in handle.core().file_slices():
        out.setdefault(s.partition_path, set()).add(s.file_id)
    return out


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_insert_overwrite_replaces_the_written_partitions_only(
        hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle],
        table_type: str) -> None:
    handle = new_table(table_type)
    handle.insert(_df(hudi_session, BASE))
    handle.upsert(_df(hudi_session, [("u2", 2, "rider-B", 25.0, "sf")]))  # sf gets a 2nd slice
    before = _groups(handle)
    new_sf = [("n1", 3, "rider-N", 1.0, "sf"), ("u1", 3, "rider-A2", 2.0, "sf")]
    result = handle.insert_overwrite(_df(hudi_session, new_sf))
    assert result.action == "replacecommit"
    expected = sorted([*new_sf, BASE[2], BASE[3]])
    assert _rows(handle) == expected
    assert _oracle(handle) == expected
    core = handle.core()
    done = core.timeline.get(result.instant_time)
    assert done is not None and done.is_completed
    metadata = core.timeline.commit_metadata(done)
    assert metadata.operation_type == "INSERT_OVERWRITE"
    # Exactly the sf file groups committed before, named as Hudi names them.
    assert {p: set(ids) for p, ids in metadata.partition_to_replace_file_ids.items()} == {
        "city=sf": before["city=sf"]}
    if core.properties.version == 6:  # version 6's completed file is JSON (8/9: Avro, above)
        raw = json.loads(core.storage.read_bytes(f".hoodie/{result.instant_time}.replacecommit"))
        assert set(raw["partitionToReplaceFileIds"]["city=sf"]) == before["city=sf"]
    assert _groups(handle)["city=la"] == before["city=la"]

    # insert_overwrite_table: every partition replaced, only the new rows remain.
    final = [("z1", 4, "rider-Z", 9.0, "la")]
    result = handle.insert_overwrite_table(_df(hudi_session, final))
    assert _rows(handle) == final
    assert _oracle(handle) == final
    metadata = handle.core().timeline.commit_metadata(result.instant_time)
    assert metadata.operation_type == "INSERT_OVERWRITE_TABLE"
    assert set(metadata.partition_to_replace_file_ids) == {"city=sf", "city=la", "city=ny"}
    # An upsert after the overwrite sees only the new file groups.
    handle.upsert(_df(hudi_session, [("z1", 5, "rider-Z", 8.0, "la")]))
    assert _rows(handle) == [("z1", 5, "rider-Z", 8.0, "la")]
    assert _oracle(handle) == [("z1", 5, "rider-Z", 8.0, "la")]


def test_failed_overwrite_is_rolled_back(hudi_session: HudiSession,
                                         new_table: Callable[..., HudiTableHandle]) -> None:
    handle = new_table("MERGE_ON_READ", partitioned=False)
    handle.insert(_df(hudi_session, BASE))
    seen: list[str] = []

    def crash(event: str, instant: str) -> None:
        if event == "written":
            seen.append(instant)
            raise RuntimeError("injected failure before completing")

    writer = SparkWriter(hudi_session.spark, handle.path, {}, crash)
    with pytest.raises(RuntimeError, match="injected failure"):
        writer.write(_df(hudi_session, [("n1", 3, "r", 1.0, "sf")]), "insert_overwrite_table")
    timeline = handle.core().timeline
    assert not timeline.pending()
    assert seen[0] in timeline.rolled_back_instants()
    assert not [p for p in Path(handle.path).rglob("*.parquet") if seen[0] in p.name]
    assert _rows(handle) == sorted(BASE)
    assert _oracle(handle) == sorted(BASE)


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_upsert_with_deleted_rows_is_one_commit(hudi_session: HudiSession,
                                                new_table: Callable[..., HudiTableHandle],
                                                table_type: str) -> None:
    handle = new_table(table_type)
    handle.insert(_df(hudi_session, BASE))
    schema = COLUMNS + ", _hoodie_is_deleted boolean"
    batch = [("u1", 2, "rider-A", 11.0, "sf", False),   # update
             ("u2", 1, "rider-B", 20.0, "sf", True),    # delete, same file group as u1
             ("u3", 1, "rider-C", 30.0, "la", True),    # delete, a file group of its own
             ("u9", 1, "rider-X", 90.0, "ny", True),    # delete of an absent key: nothing
             ("u5", 1, "rider-E", 50.0, "ny", None)]    # insert (null marker: not deleted)
    before = len(handle.core().timeline.completed())
    result = handle.upsert(_df(hudi_session, batch, schema))
    assert len(handle.core().timeline.completed()) == before + 1
    expected = sorted([("u1", 2, "rider-A", 11.0, "sf"), BASE[3], ("u5", 1, "rider-E", 50.0, "ny")])
    assert _rows(handle) == expected
    assert _oracle(handle) == expected
    by_partition = {s.partition_path: s for s in result.stats if s.num_deletes}
    assert {p: s.num_deletes for p, s in by_partition.items()} == {"city=sf": 1, "city=la": 1}
    if table_type == "MERGE_ON_READ":  # the update and the delete share one log file
        sf = by_partition["city=sf"]
        assert sf.num_update_writes == 1 and sf.path is not None and ".log." in sf.path


def test_marked_rows_of_an_insert_are_not_written(hudi_session: HudiSession,
                                                  new_table: Callable[..., HudiTableHandle]
                                                  ) -> None:
    handle = new_table("COPY_ON_WRITE")
    schema = COLUMNS + ", _hoodie_is_deleted boolean"
    handle.insert(_df(hudi_session, [(*BASE[0], False), (*BASE[1], True)], schema))
    assert _rows(handle) == [BASE[0]]
    with pytest.raises(WriteError, match="'_hoodie_is_deleted' marks deletes and must be boolean"):
        handle.upsert(_df(hudi_session, [(*BASE[0], "yes")], COLUMNS + ", _hoodie_is_deleted "
                                                                         "string"))


def test_overwrite_table_with_no_rows_empties_it(hudi_session: HudiSession,
                                                 new_table: Callable[..., HudiTableHandle]
                                                 ) -> None:
    handle = new_table("COPY_ON_WRITE")
    handle.insert(_df(hudi_session, BASE))
    result = handle.insert_overwrite_table(_df(hudi_session, []))
    assert result.action == "replacecommit" and result.stats == []
    assert _rows(handle) == []
    assert _oracle(handle) == []
    # insert_overwrite of no rows names no partition: it replaces nothing.
    handle.insert(_df(hudi_session, BASE[:1]))
    handle.insert_overwrite(_df(hudi_session, []))
    assert _rows(handle) == [BASE[0]]
