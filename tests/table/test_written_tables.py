"""Tables written by the core read back identically through the ``hudi`` reader and hudisql.

Each scenario creates a table (merge-on-read and copy-on-write, partitioned and not),
inserts, upserts (log blocks on MOR, rewritten base files on COW), deletes, crashes a
write midway and rolls it back, and writes again. After every step both readers must
return exactly the rows the test expects. The written files are then held against the
shape of the fixtures Apache Hudi wrote: file names (docs/FORMAT.md's regexes), property keys,
log block headers, commit metadata keys, parquet footers, rollback instants. Key sets
are taken from the fixture files themselves.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi import HudiTable as RsTable

import hudisql
from hudisql.table.format.filenames import BaseFileName, LogFileName
from hudisql.table.format.log.format import ORDERING_TYPES, BlockType, DeleteRecord, HeaderKey
from hudisql.table.format.log.reader import decode_delete_block, scan_log_file
from hudisql.table.format.properties import parse_properties
from hudisql.table.io.storage import Storage
from hudisql.table.read.reconcile import BLOCK_ATTEMPT_STAT_KEY, COMMITTED_LOG_FILES_KEY
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient, create_table
from tests.fixtures import VERSION_6, copy_table, table_path

# docs/FORMAT.md's log file regex, and the base file / file id / timeline names it describes.
LOG_NAME = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(.cdc)?)?")
BASE_NAME = re.compile(r"^(.+)_(\d+-\d+-\d+)_(\d{17})\.parquet$")
FILE_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+$")
TIMELINE_NAME = re.compile(
    r"^\d{17}\.((deltacommit|commit|rollback)(\.(requested|inflight))?|inflight)$"
)
V6_FIXTURES = ("v6_trips_8i1u", "v6_trips_8i3d", "v6_nonpartitioned_rollback",
               "v6_simplekeygen_nonhivestyle", "v6_nonpartitioned")
BLOOM_KEYS = {"org.apache.hudi.bloomfilter", "hoodie_bloom_filter_type_code"}

SCHEMA = pa.schema([
    ("id", pa.string()), ("ts", pa.int64()), ("v", pa.string()), ("ok", pa.bool_()),
    ("day", pa.date32()), ("at", pa.timestamp("us", tz="UTC")),
    ("amount", pa.decimal128(10, 2)), ("tags", pa.list_(pa.string())),
    ("info", pa.struct([("a", pa.string()), ("n", pa.int32())])), ("city", pa.string()),
])
CITIES = ("sf", "la", "ny")
Expected = dict[str, tuple[int, str]]


class Crash(Exception):
    """A failure injected at one step of a write."""


def record(i: int, ts: int, value: str) -> dict[str, Any]:
    return {
        "id": f"k{i}", "ts": ts, "v": value, "ok": i % 2 == 0, "day": dt.date(2024, 1, 1 + i),
        "at": dt.datetime(2024, 1, 1, i, tzinfo=dt.UTC), "amount": Decimal(f"{i}.25"),
        "tags": [f"t{i}", None], "info": {"a": f"a{i}", "n": i}, "city": CITIES[i % 3],
    }


def read_both(path: Path) -> list[dict[str, Any]]:
    """The table's rows (sorted by key) after asserting both readers return the same."""
    ours = hudisql.read_table(str(path))
    batches = RsTable(str(path)).read()
    if not batches:  # the hudi reader returns no batch (and so no schema) for no rows
        assert ours.num_rows == 0
        return []
    theirs = pa.Table.from_batches(batches)
    assert ours.column_names == theirs.column_names
    key = "_hoodie_record_key"
    ours_rows: list[dict[str, Any]] = ours.sort_by(key).to_pylist()
    theirs_rows = theirs.sort_by(key).to_pylist()
    assert ours_rows == theirs_rows
    return ours_rows


def check(path: Path, expected: Expected, partitioned: bool) -> None:
    rows = read_both(path)
    assert {r["id"]: (r["ts"], r["v"]) for r in rows} == expected
    assert len(rows) == len(expected)
    for r in rows:
        assert r["_hoodie_record_key"] == r["id"]
        assert r["_hoodie_partition_path"] == (f"city={r['city']}" if partitioned else "")
        assert re.match(rf"^{r['_hoodie_commit_time']}_\d+_\d+$", r["_hoodie_commit_seqno"])
        assert r == {**r, **{k: v for k, v in record(int(r["id"][1:]), r["ts"], r["v"]).items()}}


def crash_at_second_file() -> Callable[[str, str], None]:
    seen = []

    def hook(event: str, detail: str) -> None:
        if event == "file":
            seen.append(detail)
            if len(seen) == 2:
                raise Crash(detail)

    return hook


def write_scenario(root: Path, table_type: str, partitioned: bool) -> tuple[Path, dict[str, Any]]:
    """Create, insert, upsert, delete, crash and roll back, write again; check each step."""
    path = root / "t"
    table = create_table(path, "t", SCHEMA, "id", ["city"] if partitioned else [], "ts",
                         table_type, options=VERSION_6)  # compared with 0.x's fixtures
    client = WriteClient(table)
    expected: Expected = {}
    check(path, expected, partitioned)
    insert = client.insert([record(i, 1, "first") for i in range(8)])
    expected.update({f"k{i}": (1, "first") for i in range(8)})
    check(path, expected, partitioned)
    upsert = client.upsert([record(0, 2, "updated"), record(1, 0, "stale"), record(8, 1, "new")])
    expected.update({"k0": (2, "updated"), "k8": (1, "new")})
    check(path, expected, partitioned)
    delete = client.delete(["k2", "k3"])
    del expected["k2"], expected["k3"]
    check(path, expected, partitioned)
    client.on_step = crash_at_second_file()
    with pytest.raises(Crash):
        client.upsert([record(4, 9, "failed"), record(5, 9, "failed"), record(9, 9, "failed")])
    client.on_step = lambda e, d: None
    [failed] = client.table.reload().timeline.pending()
    check(path, expected, partitioned)
    rollback = client.rollback(failed.timestamp)
    check(path, expected, partitioned)
    after = client.upsert([record(4, 3, "after")])
    expected["k4"] = (3, "after")
    check(path, expected, partitioned)
    steps = {"insert": insert, "upsert": upsert, "delete": delete, "after": after,
             "failed": failed.timestamp, "rollback": rollback}
    return path, steps


SCENARIOS = [
    pytest.param((t, p), id=f"{t.lower()}-{'partitioned' if p else 'nonpartitioned'}")
    for t in ("MERGE_ON_READ", "COPY_ON_WRITE")
    for p in (True, False)
]


@pytest.fixture(scope="module", params=SCENARIOS)
def written(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any], str]:
    """One scenario's table (written once per module; the tests only read it)."""
    table_type, partitioned = request.param
    path, steps = write_scenario(tmp_path_factory.mktemp("written"), table_type, partitioned)
    return path, steps, table_type


def test_both_readers_return_the_expected_rows_after_every_step(
    written: tuple[Path, dict[str, Any], str],
) -> None:
    path, steps, table_type = written
    # The steps themselves checked both readers; here: how each write went to storage.
    upsert, delete = steps["upsert"], steps["delete"]
    updates = [s for s in upsert.write_stats() if s.num_update_writes]
    inserts = [s for s in upsert.write_stats() if s.num_inserts]
    assert inserts and all(BASE_NAME.match(Path(s.path).name) for s in inserts)
    if table_type == "MERGE_ON_READ":
        assert updates and all(LOG_NAME.match(Path(s.path).name) for s in updates)
        assert all(s.log_files and s.base_file for s in updates + delete.write_stats())
        assert sum(s.num_deletes for s in delete.write_stats()) == 2
    else:
        assert updates and all(BASE_NAME.match(Path(s.path).name) for s in updates)
        assert all(s.prev_commit == steps["insert"].instant_time for s in updates)
        assert sum(s.num_deletes for s in delete.write_stats()) == 2
    for stat in HudiTable.open(str(path)).timeline.commit_metadata(
        steps["after"].instant_time
    ).write_stats():
        assert (path / (stat.path or "")).stat().st_size == stat.file_size_in_bytes


# -- the shape of the fixtures -------------------------------------------------------------


@cache
def fixture_property_keys() -> dict[str, frozenset[str]]:
    return {
        name: frozenset(parse_properties(
            (table_path(name) / ".hoodie/hoodie.properties").read_text()))
        for name in V6_FIXTURES
    }


def fixture_commit_files() -> list[Path]:
    return [f for name in V6_FIXTURES for f in (table_path(name) / ".hoodie").iterdir()
            if re.match(r"^\d{17}\.(deltacommit|commit)$", f.name)]


def fixture_inflight_files() -> list[Path]:
    return [f for name in V6_FIXTURES for f in (table_path(name) / ".hoodie").iterdir()
            if re.match(r"^\d{17}\.(deltacommit\.)?inflight$", f.name) and f.stat().st_size]


def stat_key_sets(files: list[Path]) -> tuple[set[frozenset[str]], set[frozenset[str]]]:
    """Key sets of base-file stats and of log-file stats in these commit files."""
    base: set[frozenset[str]] = set()
    log: set[frozenset[str]] = set()
    for f in files:
        for stats in json.loads(f.read_text())["partitionToWriteStats"].values():
            for stat in stats:
                (log if "logFiles" in stat else base).add(frozenset(stat))
    return base, log


def data_files(root: Path) -> list[Path]:
    return [f for f in root.rglob("*") if f.is_file() and ".hoodie" not in f.relative_to(
        root).parts[:1] and f.name != ".hoodie_partition_metadata"]


def header_keys(root: Path) -> dict[BlockType, set[frozenset[HeaderKey]]]:
    out: dict[BlockType, set[frozenset[HeaderKey]]] = {}
    storage = Storage(str(root))
    for f in data_files(root):
        if LogFileName.parse(f.name) is None:
            continue
        for block in scan_log_file(storage, str(f.relative_to(root))):
            out.setdefault(block.block_type, set()).add(frozenset(block.header))
    return out


def test_file_names_match_the_format(written: tuple[Path, dict[str, Any], str]) -> None:
    path, _, _ = written
    for fixture in V6_FIXTURES:  # the patterns hold for what Hudi wrote
        for f in data_files(table_path(fixture)):
            assert BASE_NAME.match(f.name) or LOG_NAME.match(f.name), f
    files = data_files(path)
    assert files
    for f in files:
        parsed = BaseFileName.parse(f.name) or LogFileName.parse(f.name)
        assert parsed is not None and FILE_ID.match(parsed.file_id), f
        assert BASE_NAME.match(f.name) or LOG_NAME.match(f.name), f
    for f in (path / ".hoodie").iterdir():
        assert f.is_dir() or f.name == "hoodie.properties" or TIMELINE_NAME.match(f.name), f


def test_property_keys_match_the_fixtures(written: tuple[Path, dict[str, Any], str]) -> None:
    path, _, table_type = written
    ours = set(parse_properties((path / ".hoodie/hoodie.properties").read_text()))
    fixtures = fixture_property_keys()
    like = "v6_nonpartitioned_rollback" if table_type == "MERGE_ON_READ" else "v6_nonpartitioned"
    assert fixtures[like] - {"hoodie.table.partition.fields"} <= ours
    assert ours <= set().union(*fixtures.values())


def test_partition_metadata_matches_the_fixtures(
    written: tuple[Path, dict[str, Any], str],
) -> None:
    path, _, _ = written
    fixture = parse_properties((table_path("v6_trips_8i1u") / "city=chennai/"
                                ".hoodie_partition_metadata").read_text())
    found = list(path.rglob(".hoodie_partition_metadata"))
    assert found
    for f in found:
        ours = parse_properties(f.read_text())
        assert set(ours) == set(fixture)
        depth = len(f.parent.relative_to(path).parts)
        assert ours["partitionDepth"] == str(depth)


def test_commit_metadata_keys_match_the_fixtures(
    written: tuple[Path, dict[str, Any], str],
) -> None:
    path, _, table_type = written
    ours_completed = [f for f in (path / ".hoodie").iterdir()
                      if re.match(r"^\d{17}\.(deltacommit|commit)$", f.name)]
    fixture_top = {frozenset(json.loads(f.read_text())) for f in fixture_commit_files()}
    for f in ours_completed:
        assert frozenset(json.loads(f.read_text())) in fixture_top, f
    base, log = stat_key_sets(fixture_commit_files())
    our_base, ours_with_attempt = stat_key_sets(ours_completed)
    # Log stats add the attempt of their BLOCK_IDENTIFIERs (hudisql's key; Hudi ignores it).
    our_log = {keys - {BLOCK_ATTEMPT_STAT_KEY} for keys in ours_with_attempt}
    assert all(BLOCK_ATTEMPT_STAT_KEY in keys for keys in ours_with_attempt)
    assert our_base and our_base <= base
    assert our_log <= log and bool(our_log) == (table_type == "MERGE_ON_READ")
    ours_inflight = [f for f in (path / ".hoodie").iterdir()
                     if re.match(r"^\d{17}\.(deltacommit\.)?inflight$", f.name)]
    fixture_inflight = fixture_inflight_files()
    inflight_top = {frozenset(json.loads(f.read_text())) for f in fixture_inflight}
    planned, _ = stat_key_sets(fixture_inflight)
    for f in ours_inflight:
        content = json.loads(f.read_text())
        assert frozenset(content) in inflight_top
        for stats in content["partitionToWriteStats"].values():
            assert {frozenset(s) for s in stats} <= planned
    for f in ours_completed:
        extra = json.loads(f.read_text())["extraMetadata"]
        assert json.loads(extra["schema"])["name"] == "t_record"
        mor = table_type == "MERGE_ON_READ"
        assert set(extra) == {"schema", *([COMMITTED_LOG_FILES_KEY] if mor else [])}


def test_log_headers_match_the_fixtures(written: tuple[Path, dict[str, Any], str]) -> None:
    path, _, table_type = written
    fixture: dict[BlockType, set[frozenset[HeaderKey]]] = {}
    for name in V6_FIXTURES:
        for kind, sets in header_keys(table_path(name)).items():
            fixture.setdefault(kind, set()).update(sets)
    ours = header_keys(path)
    if table_type == "COPY_ON_WRITE":
        assert ours == {}
        return
    assert set(ours) == {BlockType.AVRO_DATA, BlockType.DELETE}
    for kind, sets in ours.items():
        for keys in sets:
            # Hudi's keys, plus the block identifier (HUDI-6758) that 0.14 did not write yet.
            assert keys - {HeaderKey.BLOCK_IDENTIFIER} in fixture[kind]
            assert HeaderKey.BLOCK_IDENTIFIER in keys
    # Deletes carry the ordering value Spark writes (the same union branch and bytes).
    fixture_orderings = {(d.ordering_value, d.ordering_type) for d in deletes_in(
        table_path("v6_trips_8i3d"))}
    assert fixture_orderings == {(0, ORDERING_TYPES[2])}
    assert {(d.ordering_value, d.ordering_type) for d in deletes_in(path)} == fixture_orderings


def deletes_in(root: Path) -> list[DeleteRecord]:
    storage = Storage(str(root))
    out: list[DeleteRecord] = []
    for f in data_files(root):
        if LogFileName.parse(f.name) is None:
            continue
        data = f.read_bytes()
        for block in scan_log_file(storage, str(f.relative_to(root))):
            if block.block_type == BlockType.DELETE:
                out.extend(decode_delete_block(data, block))
    return out


def test_parquet_footers_match_the_fixtures(written: tuple[Path, dict[str, Any], str]) -> None:
    path, _, _ = written
    fixture = {
        frozenset(k.decode() for k in (pq.ParquetFile(f).metadata.metadata or {})) - BLOOM_KEYS
        for name in V6_FIXTURES for f in data_files(table_path(name)) if f.suffix == ".parquet"
    }
    bases = [f for f in data_files(path) if f.suffix == ".parquet"]
    assert bases
    for f in bases:
        pf = pq.ParquetFile(f)
        keys = frozenset(k.decode() for k in (pf.metadata.metadata or {}))
        assert keys in fixture
        assert pf.schema_arrow.names[:5] == [
            "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
            "_hoodie_partition_path", "_hoodie_file_name"]


def avro_shape(path: Path) -> tuple[str, list[str]]:
    with path.open("rb") as f:
        reader = fastavro.reader(f)
        schema: Any = reader.writer_schema
        records: list[Any] = list(reader)
    assert len(records) == 1
    return str(schema["name"]), sorted(records[0])


def test_rollback_instant_matches_the_fixture(written: tuple[Path, dict[str, Any], str]) -> None:
    path, steps, _ = written
    fixture = table_path("v6_nonpartitioned_rollback") / ".hoodie/20250126040936578.rollback"
    ours = path / f".hoodie/{steps['rollback']}.rollback"
    for suffix in (".requested", ""):
        assert avro_shape(Path(f"{ours}{suffix}")) == avro_shape(Path(f"{fixture}{suffix}"))
    inflight = Path(f"{ours}.inflight")
    assert inflight.read_bytes() == Path(f"{fixture}.inflight").read_bytes() == b""
    assert not list((path / ".hoodie").glob(f"{steps['failed']}*"))
    assert not (path / f".hoodie/.temp/{steps['failed']}").exists()
    assert not [f for f in data_files(path) if steps["failed"] in f.name]


# -- writing to tables Hudi wrote -----------------------------------------------------------


def test_upserts_and_deletes_on_a_hudi_written_mor_table(tmp_path: Path) -> None:
    path = copy_table("v6_trips_8i1u", tmp_path)
    client = WriteClient(HudiTable.open(str(path)))
    before = {r["uuid"]: r for r in read_both(path)}
    rider_a = "334e26e9-8355-45cc-97c6-c31daf0df330"
    changed = {**before[rider_a], "fare": 99.5, "ts": before[rider_a]["ts"] + 1}
    new = {**changed, "uuid": "00000000-0000-0000-0000-000000000001", "city": "austin"}
    client.upsert([{k: v for k, v in r.items() if not k.startswith("_hoodie_")}
                   for r in (changed, new)])
    client.delete(["c8abbe79-8d89-47ea-b4ce-4d224bae5bfa"])
    after = {r["uuid"]: r for r in read_both(path)}
    assert set(after) == set(before) - {"c8abbe79-8d89-47ea-b4ce-4d224bae5bfa"} | {new["uuid"]}
    assert after[rider_a]["fare"] == 99.5 and after[new["uuid"]]["city"] == "austin"
    assert after[new["uuid"]]["_hoodie_partition_path"] == "city=austin"


@pytest.mark.parametrize("fixture", ["v6_nonpartitioned", "v6_nonpartitioned_rollback"])
def test_upserts_on_hudi_written_tables_with_nested_types(tmp_path: Path, fixture: str) -> None:
    path = copy_table(fixture, tmp_path)
    client = WriteClient(HudiTable.open(str(path)))
    before = {r["id"]: r for r in read_both(path)}
    data = {k: v for k, v in before[1].items() if not k.startswith("_hoodie_")}
    update = {**data, "name": "Alicia", "longField": data["longField"] + 1}
    fresh = {**data, "id": 99, "name": "Zed"}
    client.upsert([update, fresh])
    after = {r["id"]: r for r in read_both(path)}
    assert set(after) == set(before) | {99}
    assert after[1] == {**after[1], **update}
    assert after[99] == {**after[99], **fresh}
