"""The timeline: both layouts on real tables, every action and state, queries, atomic writes."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hudisql.errors import (
    CorruptTableError,
    InstantExistsError,
    InvalidInstantTransitionError,
    UnsupportedTableVersionError,
    WriteError,
)
from hudisql.table.format import instant as instant_module
from hudisql.table.format import timeline as timeline_module
from hudisql.table.format.commit_metadata import (
    CommitMetadata,
    InstantInfo,
    RollbackMetadata,
    RollbackPlan,
    WriteStat,
)
from hudisql.table.format.instant import Action, Instant, State
from hudisql.table.format.properties import TableProperties, new_table_properties
from hudisql.table.format.timeline import Timeline
from hudisql.table.io.storage import Storage
from tests.fixtures import table_path
from tests.table.test_properties import snapshot

WritableTable = Callable[[str], Path]
R, F, C = State.REQUESTED, State.INFLIGHT, State.COMPLETED


@pytest.fixture(autouse=True)
def _restore_issued_times(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Some tests make instants far in the future; later tests must not inherit those times.
    monkeypatch.setattr(instant_module, "_last_issued", instant_module._last_issued)
    yield


def load(root: Path) -> Timeline:
    storage = Storage(str(root))
    return Timeline.load(storage, TableProperties.load(storage))


def new_table(root: Path, version: int = 6) -> Timeline:
    """An empty table of ``version`` at ``root`` and its timeline."""
    storage = Storage(str(root))
    props = new_table_properties("t", "MERGE_ON_READ", ["id"])
    if version != 6:
        props = props.updated(**{"hoodie.table.version": str(version),
                                 "hoodie.timeline.layout.version": "2"})
    props.save(storage, comment="test table")
    storage.makedirs(props.timeline_dir)
    return Timeline.load(storage, TableProperties.load(storage))


def touch(root: Path, *names: str, content: bytes = b"") -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def summary(timeline: Timeline) -> list[tuple[str, str, str, str | None]]:
    return [(i.timestamp, i.action, i.state.value, i.completion_time) for i in timeline.instants]


# -- the fixtures' timelines -----------------------------------------------------------------

V6_DC = (".deltacommit.requested", ".deltacommit.inflight", ".deltacommit")
V6_C = (".commit.requested", ".inflight", ".commit")

# name: [(timestamp, action, completion time, the instant's file names)]
FIXTURE_TIMELINES: dict[str, list[tuple[str, str, str | None, list[str]]]] = {
    "v6_trips_8i1u": [
        ("20250331030642808", "deltacommit", None, [f"20250331030642808{s}" for s in V6_DC]),
        ("20250331030645735", "deltacommit", None, [f"20250331030645735{s}" for s in V6_DC]),
    ],
    "v6_trips_8i3d": [
        ("20250618054711154", "deltacommit", None, [f"20250618054711154{s}" for s in V6_DC]),
        ("20250618054714114", "deltacommit", None, [f"20250618054714114{s}" for s in V6_DC]),
    ],
    "v6_simplekeygen_nonhivestyle": [
        ("20250121000547796", "deltacommit", None, [f"20250121000547796{s}" for s in V6_DC]),
        ("20250121000557095", "deltacommit", None, [f"20250121000557095{s}" for s in V6_DC]),
    ],
    "v6_nonpartitioned_rollback": [
        ("20250126040823628", "deltacommit", None, [f"20250126040823628{s}" for s in V6_DC]),
        ("20250126040936578", "rollback", None, [
            "20250126040936578.rollback.requested", "20250126040936578.rollback.inflight",
            "20250126040936578.rollback"]),
        ("20250126060846931", "deltacommit", None, [f"20250126060846931{s}" for s in V6_DC]),
    ],
    "v6_nonpartitioned": [
        ("20240418173550988", "commit", None, [f"20240418173550988{s}" for s in V6_C]),
        ("20240418173551906", "commit", None, [f"20240418173551906{s}" for s in V6_C]),
    ],
    "v8_trips_8i1u": [
        ("20250713011913147", "deltacommit", "20250713011913490", [
            "20250713011913147.deltacommit.requested", "20250713011913147.deltacommit.inflight",
            "20250713011913147_20250713011913490.deltacommit"]),
        ("20250713011914363", "deltacommit", "20250713011914662", [
            "20250713011914363.deltacommit.requested", "20250713011914363.deltacommit.inflight",
            "20250713011914363_20250713011914662.deltacommit"]),
    ],
    "v8_nonpartitioned": [
        ("20250713010535797", "commit", "20250713010536200", [
            "20250713010535797.commit.requested", "20250713010535797.inflight",
            "20250713010535797_20250713010536200.commit"]),
        ("20250713010536861", "commit", "20250713010537206", [
            "20250713010536861.commit.requested", "20250713010536861.inflight",
            "20250713010536861_20250713010537206.commit"]),
    ],
}


def test_every_fixture_table_has_an_expected_timeline(fixture_table_name: str) -> None:
    assert fixture_table_name in FIXTURE_TIMELINES


@pytest.mark.parametrize("name", sorted(FIXTURE_TIMELINES))
def test_fixture_timelines_load_exactly(name: str) -> None:
    root = table_path(name)
    timeline = load(root)
    expected = FIXTURE_TIMELINES[name]
    assert summary(timeline) == [(ts, a, "COMPLETED", ct) for ts, a, ct, _ in expected]
    assert timeline.pending() == []
    for ts, _, _, files in expected:
        states = timeline.instant_files(ts)
        assert [f.file_name for f in states] == files
        assert [f.state for f in states] == [R, F, C]
        for f in states:
            path = root / timeline.timeline_dir / f.file_name
            assert f.modification_time is not None
            assert abs(f.modification_time.timestamp() - path.stat().st_mtime) < 0.001
    last = expected[-1]
    assert timeline.last_completed() == timeline.get(last[0])
    assert timeline.last_completed_without_holes() == timeline.last_completed(
        ["commit", "deltacommit"]
    )


@pytest.mark.parametrize("name", sorted(FIXTURE_TIMELINES))
def test_loading_and_querying_a_fixture_changes_nothing(name: str) -> None:
    root = table_path(name)
    before = snapshot(root)
    timeline = load(root)
    for instant in timeline.instants:
        timeline.is_completed(instant.timestamp)
        for f in timeline.instant_files(instant.timestamp):
            if f.action in ("commit", "deltacommit"):
                timeline.commit_metadata(f)
    timeline.rolled_back_instants()
    timeline.latest_schema()
    assert snapshot(root) == before


@pytest.mark.parametrize("name", sorted(FIXTURE_TIMELINES))
def test_latest_schema_is_the_last_commits_schema(name: str) -> None:
    root = table_path(name)
    timeline = load(root)
    last = timeline.last_completed(["commit", "deltacommit"])
    assert last is not None
    raw = (root / timeline.timeline_dir / last.file_name).read_bytes()
    if raw.startswith(b"Obj"):
        expected = CommitMetadata.parse(raw).extra_metadata["schema"]
    else:
        expected = json.loads(raw)["extraMetadata"]["schema"]
    assert timeline.latest_schema() == expected
    assert json.loads(expected)["name"] == f"{name}_record"


def test_commit_metadata_of_v6_and_v8_fixtures(fixture_table_name: str) -> None:
    timeline = load(table_path(fixture_table_name))
    for instant in timeline.completed(["commit", "deltacommit"]):
        metadata = timeline.commit_metadata(instant)
        assert metadata.write_stats(), instant
        assert metadata.schema
        assert metadata.operation_type and metadata.operation_type.startswith(
            ("UPSERT", "DELETE")
        )


def test_the_rollback_fixture_names_what_it_undid() -> None:
    timeline = load(table_path("v6_nonpartitioned_rollback"))
    assert timeline.rolled_back_instants() == {"20250126040826878"}
    plan = timeline.rollback_plan("20250126040936578")
    assert plan.instant_to_rollback == InstantInfo("20250126040826878", "deltacommit")
    metadata = timeline.rollback_metadata("20250126040936578")
    assert metadata.commits_rollback == ["20250126040826878"]


def test_is_completed_on_the_rollback_fixture() -> None:
    timeline = load(table_path("v6_nonpartitioned_rollback"))
    assert timeline.is_completed("20250126040823628")
    assert timeline.is_completed("20250126040936578")
    assert timeline.is_completed("20250126060846931")
    assert not timeline.is_completed("20250126040826878")  # rolled back, files gone
    assert not timeline.is_completed("20250126050000000")  # never on the timeline
    assert not timeline.is_completed("29990101000000000")
    # before the first active instant: archived, so completed
    assert timeline.start_timestamp == "20250126040823628"
    assert timeline.is_completed("20240101000000000")


def test_an_archived_instant_that_a_rollback_names_is_not_completed(
    writable_table: WritableTable,
) -> None:
    root = writable_table("v6_nonpartitioned_rollback")
    timeline = load(root)
    assert timeline.is_completed("20240101000000000")
    rollback = timeline.create_requested(Action.ROLLBACK, content=RollbackPlan(
        InstantInfo("20240101000000000", "deltacommit")).to_avro())
    rollback = timeline.transition_to_inflight(rollback)
    timeline.complete(rollback, RollbackMetadata(
        rollback.timestamp, ["20240101000000000"]).to_avro())
    assert not timeline.is_completed("20240101000000000")
    fresh = timeline.reload()
    assert fresh.rolled_back_instants() == {"20250126040826878", "20240101000000000"}
    assert not fresh.is_completed("20240101000000000")
    assert fresh.is_completed("20231231000000000")


def test_an_empty_timeline(tmp_path: Path) -> None:
    timeline = new_table(tmp_path)
    assert timeline.instants == [] and len(timeline) == 0
    assert timeline.last_completed() is None
    assert timeline.last_completed_without_holes() is None
    assert timeline.start_timestamp is None
    assert not timeline.is_completed("20240101000000000")
    assert timeline.latest_schema() is None


# -- every action and state ----------------------------------------------------------------------

def ts(n: int) -> str:
    return f"20250101000000{n:03d}"


LAYOUT1_FILES = [
    *(f"{ts(1)}{s}" for s in V6_DC),
    *(f"{ts(2)}{s}" for s in V6_C),
    f"{ts(3)}.compaction.requested", f"{ts(3)}.compaction.inflight", f"{ts(3)}.commit",
    f"{ts(4)}.logcompaction.requested", f"{ts(4)}.logcompaction.inflight",
    f"{ts(4)}.deltacommit",
    f"{ts(5)}.clean.requested", f"{ts(5)}.clean.inflight", f"{ts(5)}.clean",
    f"{ts(7)}.savepoint.inflight", f"{ts(7)}.savepoint",
    f"{ts(8)}.replacecommit.requested", f"{ts(8)}.replacecommit.inflight",
    f"{ts(8)}.replacecommit",
    f"{ts(9)}.indexing.requested", f"{ts(9)}.indexing.inflight", f"{ts(9)}.indexing",
    f"{ts(10)}.restore.requested", f"{ts(10)}.restore.inflight", f"{ts(10)}.restore",
    f"{ts(11)}.compaction.requested",
    f"{ts(12)}.deltacommit.requested", f"{ts(12)}.deltacommit.inflight",
    f"{ts(13)}.clean.requested",
    f"{ts(14)}.logcompaction.requested", f"{ts(14)}.logcompaction.inflight",
    f"{ts(15)}.indexing.requested",
    f"{ts(16)}.replacecommit.requested",
    f"{ts(17)}.savepoint.inflight",
    f"{ts(18)}.rollback.requested", f"{ts(18)}.rollback.inflight",
    f"{ts(19)}.restore.requested",
]
LAYOUT1_INSTANTS = [
    (ts(1), "deltacommit", "COMPLETED", None), (ts(2), "commit", "COMPLETED", None),
    (ts(3), "commit", "COMPLETED", None), (ts(4), "deltacommit", "COMPLETED", None),
    (ts(5), "clean", "COMPLETED", None), (ts(6), "rollback", "COMPLETED", None),
    (ts(7), "savepoint", "COMPLETED", None), (ts(8), "replacecommit", "COMPLETED", None),
    (ts(9), "indexing", "COMPLETED", None), (ts(10), "restore", "COMPLETED", None),
    (ts(11), "compaction", "REQUESTED", None), (ts(12), "deltacommit", "INFLIGHT", None),
    (ts(13), "clean", "REQUESTED", None), (ts(14), "logcompaction", "INFLIGHT", None),
    (ts(15), "indexing", "REQUESTED", None), (ts(16), "replacecommit", "REQUESTED", None),
    (ts(17), "savepoint", "INFLIGHT", None), (ts(18), "rollback", "INFLIGHT", None),
    (ts(19), "restore", "REQUESTED", None),
]


def test_layout_1_every_action_and_state(tmp_path: Path) -> None:
    new_table(tmp_path)
    touch(tmp_path / ".hoodie", *LAYOUT1_FILES)
    touch(tmp_path / ".hoodie", f"{ts(6)}.rollback.requested", f"{ts(6)}.rollback.inflight")
    touch(tmp_path / ".hoodie", f"{ts(6)}.rollback",
          content=RollbackMetadata(ts(6), [ts(0)]).to_avro())
    # not instants: archived instants, folders, temporary files, other files
    touch(tmp_path / ".hoodie", "archived/.commits_.archive.1_1-0-1",
          f"archived/{ts(0)}.commit", f".{ts(20)}.commit.5f2a.tmp", "metadata/.hoodie/x",
          "hoodie.properties.backup")
    timeline = load(tmp_path)
    assert summary(timeline) == LAYOUT1_INSTANTS
    assert [i.timestamp for i in timeline.completed()] == [ts(n) for n in range(1, 11)]
    assert [i.timestamp for i in timeline.pending()] == [ts(n) for n in range(11, 20)]
    assert [i.timestamp for i in timeline.completed(["commit"])] == [ts(2), ts(3)]
    assert [i.timestamp for i in timeline.pending("clean")] == [ts(13)]
    assert timeline.last_completed() == timeline.get(ts(10))
    assert timeline.last_completed(["deltacommit"]) == timeline.get(ts(4))
    # the write timeline's first hole is the requested compaction at 11
    assert timeline.last_completed_without_holes() == timeline.get(ts(8))
    assert timeline.last_completed_without_holes(None) == timeline.get(ts(10))
    assert [f.file_name for f in timeline.instant_files(ts(3))] == [
        f"{ts(3)}.compaction.requested", f"{ts(3)}.compaction.inflight", f"{ts(3)}.commit"]
    assert timeline.rolled_back_instants() == {ts(0)}
    assert not timeline.is_completed(ts(0))  # archived but rolled back
    assert timeline.get(ts(20)) is None


def test_layout_2_every_form(tmp_path: Path) -> None:
    new_table(tmp_path, version=8)
    c = "20250102000000"  # completion times: 20250102000000<n>
    touch(
        tmp_path / ".hoodie/timeline",
        f"{ts(1)}.deltacommit.requested", f"{ts(1)}.deltacommit.inflight",
        f"{ts(1)}_{c}101.deltacommit",
        f"{ts(2)}.commit.requested", f"{ts(2)}.inflight", f"{ts(2)}_{c}102.commit",
        f"{ts(3)}.compaction.requested", f"{ts(3)}.compaction.inflight", f"{ts(3)}_{c}103.commit",
        f"{ts(4)}.clustering.requested", f"{ts(4)}.clustering.inflight",
        f"{ts(4)}_{c}104.replacecommit",
        f"{ts(5)}.logcompaction.requested", f"{ts(5)}.logcompaction.inflight",
        f"{ts(5)}_{c}105.deltacommit",
        f"{ts(6)}.clean.requested", f"{ts(6)}.clean.inflight", f"{ts(6)}_{c}106.clean",
        f"{ts(7)}.clustering.requested",
        f"{ts(8)}.deltacommit.requested", f"{ts(8)}.deltacommit.inflight",
        # archived instants (LSM history) are not loaded
        f"history/{ts(0)}_{c}100.commit", "history/_version_", "history/manifest_1",
    )
    timeline = load(tmp_path)
    assert timeline.layout == 2 and timeline.timeline_dir == ".hoodie/timeline"
    assert summary(timeline) == [
        (ts(1), "deltacommit", "COMPLETED", f"{c}101"),
        (ts(2), "commit", "COMPLETED", f"{c}102"),
        (ts(3), "commit", "COMPLETED", f"{c}103"),
        (ts(4), "replacecommit", "COMPLETED", f"{c}104"),
        (ts(5), "deltacommit", "COMPLETED", f"{c}105"),
        (ts(6), "clean", "COMPLETED", f"{c}106"),
        (ts(7), "clustering", "REQUESTED", None),
        (ts(8), "deltacommit", "INFLIGHT", None),
    ]
    assert timeline.last_completed_without_holes() == timeline.get(ts(5))
    assert timeline.is_completed(ts(0))  # archived


def _rfc45_timeline(root: Path, states: list[tuple[str, State]]) -> Timeline:
    new_table(root)
    for n, (action, state) in enumerate(states, start=1):
        touch(root / ".hoodie", Instant(ts(n), action, state).file_name)
    return load(root)


def test_no_holes_follows_rfc_45_case_5(tmp_path: Path) -> None:
    # | DC | DC | DC | CLEAN | DC | DC | COMPACT | DC | INDEXING | DC |
    # | C  | C  | C  | I     | C  | C  | R       | C  | R        | I  |
    timeline = _rfc45_timeline(tmp_path, [
        ("deltacommit", C), ("deltacommit", C), ("deltacommit", C), ("clean", F),
        ("deltacommit", C), ("deltacommit", C), ("compaction", R), ("deltacommit", C),
        ("indexing", R), ("deltacommit", F),
    ])
    assert timeline.last_completed_without_holes() == timeline.get(ts(6))  # DC6
    assert timeline.last_completed_without_holes(actions=None) == timeline.get(ts(3))  # DC3
    assert timeline.last_completed() == timeline.get(ts(8))


def test_no_holes_first_example_of_rfc_45(tmp_path: Path) -> None:
    # C1, C2, ... C5 (inflight), C6, C7, C8: the latest completed instant without a hole is C4
    timeline = _rfc45_timeline(tmp_path, [("commit", C)] * 4 + [("commit", F)] +
                               [("commit", C)] * 3)
    assert timeline.last_completed_without_holes() == timeline.get(ts(4))


def test_no_holes_when_the_first_instant_is_pending(tmp_path: Path) -> None:
    timeline = _rfc45_timeline(tmp_path, [("deltacommit", R), ("deltacommit", C)])
    assert timeline.last_completed_without_holes() is None


def test_instant_files_carry_their_modification_times(tmp_path: Path) -> None:
    timeline = new_table(tmp_path)
    inst = timeline.create_requested(Action.DELTACOMMIT)
    inst = timeline.transition_to_inflight(inst)
    timeline.complete(inst, CommitMetadata().to_json())
    times = {R: 1_700_000_000, F: 1_700_000_060, C: 1_700_000_125}
    for state, when in times.items():
        name = Instant(inst.timestamp, "deltacommit", state).file_name
        os.utime(tmp_path / ".hoodie" / name, (when, when))
    files = timeline.reload().instant_files(inst.timestamp)
    assert [(f.state, f.modification_time) for f in files] == [
        (state, datetime.fromtimestamp(when, UTC)) for state, when in times.items()
    ]


# -- writes -----------------------------------------------------------------------------------


def test_requested_inflight_completed_lifecycle(tmp_path: Path) -> None:
    timeline = new_table(tmp_path)
    hoodie = tmp_path / ".hoodie"
    requested = timeline.create_requested(Action.DELTACOMMIT)
    ts_ = requested.timestamp
    assert len(ts_) == 17 and requested.is_requested
    assert (hoodie / f"{ts_}.deltacommit.requested").read_bytes() == b""
    assert timeline.get(ts_) == requested and timeline.pending() == [requested]

    profile = CommitMetadata(operation_type="UPSERT")
    inflight = timeline.transition_to_inflight(requested, profile.to_json())
    assert (hoodie / f"{ts_}.deltacommit.inflight").read_bytes() == profile.to_json()
    assert timeline.get(ts_) == inflight and inflight.is_inflight

    metadata = CommitMetadata(extra_metadata={"schema": '{"type":"record"}'},
                              operation_type="UPSERT")
    metadata.add_write_stat(WriteStat(file_id="f-0", path="p/f-0_1-0-1_x.parquet",
                                      partition_path="p", num_writes=3, num_inserts=3))
    completed = timeline.complete(inflight, metadata.to_json())
    assert completed == Instant(ts_, "deltacommit", C)
    assert sorted(p.name for p in hoodie.iterdir() if p.name.startswith(ts_)) == [
        f"{ts_}.deltacommit", f"{ts_}.deltacommit.inflight", f"{ts_}.deltacommit.requested"]
    # the timeline object reflects its own writes, and a reload agrees
    assert timeline.is_completed(ts_) and timeline.pending() == []
    assert timeline.commit_metadata(ts_) == metadata
    assert timeline.latest_schema() == '{"type":"record"}'
    fresh = timeline.reload()
    assert summary(fresh) == summary(timeline)
    assert fresh.commit_metadata(ts_) == metadata
    assert [f.name for f in hoodie.iterdir() if f.name.endswith(".tmp")] == []


@pytest.mark.parametrize(
    ("action", "names"),
    [
        ("commit", [".commit.requested", ".inflight", ".commit"]),
        ("compaction", [".compaction.requested", ".compaction.inflight", ".commit"]),
        ("logcompaction", [".logcompaction.requested", ".logcompaction.inflight",
                           ".deltacommit"]),
        ("clean", [".clean.requested", ".clean.inflight", ".clean"]),
        ("replacecommit", [".replacecommit.requested", ".replacecommit.inflight",
                           ".replacecommit"]),
        ("indexing", [".indexing.requested", ".indexing.inflight", ".indexing"]),
    ],
)
def test_lifecycle_file_names_per_action(tmp_path: Path, action: str, names: list[str]) -> None:
    timeline = new_table(tmp_path)
    inst = timeline.create_requested(action)
    inst = timeline.transition_to_inflight(inst)
    done = timeline.complete(inst, b"")
    assert done.action == names[-1][1:]
    on_disk = sorted(p.name for p in (tmp_path / ".hoodie").iterdir()
                     if p.name.startswith(inst.timestamp))
    assert on_disk == sorted(inst.timestamp + n for n in names)
    assert summary(timeline.reload()) == [(inst.timestamp, names[-1][1:], "COMPLETED", None)]


def test_savepoints_start_inflight(tmp_path: Path) -> None:
    timeline = new_table(tmp_path)
    with pytest.raises(InvalidInstantTransitionError, match="create_inflight"):
        timeline.create_requested(Action.SAVEPOINT)
    with pytest.raises(InvalidInstantTransitionError, match="create_requested"):
        timeline.create_inflight(Action.DELTACOMMIT)
    savepoint = timeline.create_inflight(Action.SAVEPOINT)
    done = timeline.complete(savepoint, b"{}")
    assert [f.file_name for f in timeline.reload().instant_files(done.timestamp)] == [
        f"{done.timestamp}.savepoint.inflight", f"{done.timestamp}.savepoint"]


def test_new_instants_are_later_than_every_instant_on_disk(tmp_path: Path) -> None:
    timeline = new_table(tmp_path)
    first = timeline.create_requested(Action.DELTACOMMIT)
    second = timeline.create_requested(Action.CLEAN)
    assert first.timestamp < second.timestamp
    # another writer (or a skewed clock) put an instant far ahead
    touch(tmp_path / ".hoodie", "20991231000000000.clean.requested")
    third = timeline.create_requested(Action.DELTACOMMIT)
    assert third.timestamp > "20991231000000000"


def test_an_explicit_instant_time_that_exists_is_refused(tmp_path: Path) -> None:
    timeline = new_table(tmp_path)
    timeline.create_requested(Action.DELTACOMMIT, ts(1))
    before = snapshot(tmp_path)
    with pytest.raises(InstantExistsError, match=ts(1)):
        timeline.create_requested(Action.DELTACOMMIT, ts(1))
    with pytest.raises(InstantExistsError, match=ts(1)):
        timeline.create_requested(Action.CLEAN, ts(1))  # any action: times are unique
    with pytest.raises(WriteError, match="not an instant time"):
        timeline.create_requested(Action.DELTACOMMIT, "2025-01-01")
    with pytest.raises(WriteError, match="'merge' is not a timeline action"):
        timeline.create_requested("merge")
    assert snapshot(tmp_path) == before


def test_out_of_order_transitions_are_refused(tmp_path: Path) -> None:
    timeline = new_table(tmp_path)
    requested = timeline.create_requested(Action.DELTACOMMIT)
    with pytest.raises(InvalidInstantTransitionError, match="not inflight"):
        timeline.complete(requested, b"")
    inflight = timeline.transition_to_inflight(requested)
    with pytest.raises(InvalidInstantTransitionError, match="not requested"):
        timeline.transition_to_inflight(inflight)
    completed = timeline.complete(inflight, b"")
    with pytest.raises(InvalidInstantTransitionError, match="not requested"):
        timeline.transition_to_inflight(completed)
    with pytest.raises(InvalidInstantTransitionError, match="not inflight"):
        timeline.complete(completed, b"")
    # a stale requested instant of an instant that completed meanwhile
    with pytest.raises(InvalidInstantTransitionError, match="completed already"):
        timeline.transition_to_inflight(requested)
    # a second completion by a writer holding the inflight instant loses
    before = snapshot(tmp_path)
    with pytest.raises(InstantExistsError, match="already exists"):
        timeline.complete(inflight, b"other")
    assert snapshot(tmp_path) == before


def test_transitions_of_an_instant_rolled_back_meanwhile_are_refused(tmp_path: Path) -> None:
    timeline = new_table(tmp_path)
    requested = timeline.create_requested(Action.DELTACOMMIT)
    inflight = timeline.transition_to_inflight(requested)
    # another process rolls the failed instant back: its files go
    other = timeline.reload()
    other_inflight = other.get(requested.timestamp)
    assert other_inflight is not None
    other.delete_pending(other_inflight)
    with pytest.raises(InvalidInstantTransitionError, match="rolled back"):
        timeline.complete(inflight, b"")
    with pytest.raises(InvalidInstantTransitionError, match="rolled back"):
        timeline.transition_to_inflight(requested)
    assert list((tmp_path / ".hoodie").glob(f"{requested.timestamp}*")) == []


def test_delete_pending(tmp_path: Path) -> None:
    timeline = new_table(tmp_path)
    compaction = timeline.transition_to_inflight(timeline.create_requested(Action.COMPACTION))
    timeline.delete_pending(compaction, keep_requested=True)
    assert [f.file_name for f in timeline.instant_files(compaction.timestamp)] == [
        f"{compaction.timestamp}.compaction.requested"]
    assert timeline.get(compaction.timestamp) == Instant(compaction.timestamp, "compaction", R)
    timeline.delete_pending(compaction)
    assert timeline.get(compaction.timestamp) is None
    assert timeline.reload().instants == []

    done = timeline.complete(timeline.transition_to_inflight(
        timeline.create_requested(Action.DELTACOMMIT)), b"")
    before = snapshot(tmp_path)
    with pytest.raises(InvalidInstantTransitionError, match="roll it back"):
        timeline.delete_pending(done)
    with pytest.raises(InvalidInstantTransitionError, match="roll it back"):
        timeline.delete_pending(Instant(done.timestamp, "deltacommit", F))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["v8_trips_8i1u", "v8_nonpartitioned"])
def test_a_version_8_timeline_of_layout_1_is_read_only(writable_table: WritableTable,
                                                      name: str) -> None:
    root = writable_table(name)
    props_file = root / ".hoodie" / "hoodie.properties"
    props_file.write_text(props_file.read_text().replace(
        "hoodie.timeline.layout.version=2", "hoodie.timeline.layout.version=1"))
    timeline = load(root)
    before = snapshot(root)
    last = timeline.instants[-1] if timeline.instants else Instant("20250101000000000",
                                                                  "deltacommit", F)
    with pytest.raises(UnsupportedTableVersionError, match="hudisql writes versions 6"):
        timeline.create_requested(Action.DELTACOMMIT)
    with pytest.raises(UnsupportedTableVersionError):
        timeline.delete_pending(last)
    with pytest.raises(UnsupportedTableVersionError):
        timeline.complete(Instant(last.timestamp, last.action, F), b"")
    assert snapshot(root) == before


# -- racing writers ------------------------------------------------------------------------------


def race(n: int, attempt: Callable[[int], object]) -> list[object]:
    """Run ``attempt(i)`` in ``n`` threads released together; each result or exception."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = attempt(i)
        except Exception as e:  # the race's loser: the test inspects it
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def winners_and_losers(results: list[object]) -> tuple[list[Instant], list[object]]:
    won = [r for r in results if isinstance(r, Instant)]
    lost = [r for r in results if not isinstance(r, Instant)]
    return won, lost


@pytest.mark.parametrize("n", [2, 6])
def test_racing_writers_create_one_instant_exactly_once(tmp_path: Path, n: int) -> None:
    new_table(tmp_path)
    writers = [load(tmp_path) for _ in range(n)]  # separate writers, separate timelines
    results = race(n, lambda i: writers[i].create_requested(
        Action.DELTACOMMIT, ts(1), content=str(i).encode()))
    won, lost = winners_and_losers(results)
    assert len(won) == 1
    assert len(lost) == n - 1 and all(isinstance(e, InstantExistsError) for e in lost)
    files = [p for p in (tmp_path / ".hoodie").iterdir() if p.name.startswith(ts(1))]
    assert [p.name for p in files] == [f"{ts(1)}.deltacommit.requested"]
    assert files[0].read_bytes() == str(results.index(won[0])).encode()  # the winner's


def test_racing_writers_move_an_instant_inflight_once(tmp_path: Path) -> None:
    new_table(tmp_path)
    requested = load(tmp_path).create_requested(Action.DELTACOMMIT, ts(1))
    writers = [load(tmp_path) for _ in range(2)]
    results = race(2, lambda i: writers[i].transition_to_inflight(requested, str(i).encode()))
    won, lost = winners_and_losers(results)
    assert len(won) == 1 and isinstance(lost[0], InstantExistsError)
    content = (tmp_path / ".hoodie" / f"{ts(1)}.deltacommit.inflight").read_bytes()
    assert content == str(results.index(won[0])).encode()


def test_racing_writers_complete_an_instant_once(tmp_path: Path) -> None:
    new_table(tmp_path)
    timeline = load(tmp_path)
    inflight = timeline.transition_to_inflight(timeline.create_requested(Action.COMMIT, ts(1)))
    writers = [load(tmp_path) for _ in range(2)]
    results = race(2, lambda i: writers[i].complete(inflight, str(i).encode()))
    won, lost = winners_and_losers(results)
    assert len(won) == 1 and isinstance(lost[0], InstantExistsError)
    assert (tmp_path / ".hoodie" / f"{ts(1)}.commit").read_bytes() == str(
        results.index(won[0])).encode()


def test_racing_writers_without_times_get_distinct_instants(tmp_path: Path) -> None:
    new_table(tmp_path)
    writers = [load(tmp_path) for _ in range(4)]
    results = race(4, lambda i: writers[i].create_requested(Action.DELTACOMMIT))
    won, lost = winners_and_losers(results)
    assert lost == [] and len({w.timestamp for w in won}) == 4
    assert len(load(tmp_path).pending()) == 4


def test_a_time_taken_by_another_process_meanwhile_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeline = new_table(tmp_path)
    real = instant_module.new_instant_time
    asked: list[str | None] = []

    def clashing(after: str | None = None) -> str:
        asked.append(after)
        if len(asked) == 1:
            # another process takes this very time between our listing and our create
            touch(tmp_path / ".hoodie", f"{ts(5)}.deltacommit.requested", content=b"theirs")
            return ts(5)
        return real(after=after)

    monkeypatch.setattr(timeline_module, "new_instant_time", clashing)
    ours = timeline.create_requested(Action.DELTACOMMIT, content=b"ours")
    assert asked == [None, ts(5)]
    assert ours.timestamp > ts(5)
    assert (tmp_path / ".hoodie" / f"{ts(5)}.deltacommit.requested").read_bytes() == b"theirs"
    assert (tmp_path / ".hoodie" / ours.file_name).read_bytes() == b"ours"


# -- malformed instant files ---------------------------------------------------------------------


def test_a_malformed_v6_commit_file_is_named(writable_table: WritableTable) -> None:
    root = writable_table("v6_trips_8i1u")
    (root / ".hoodie/20250331030645735.deltacommit").write_bytes(b'{"partitionToWriteStats": [')
    before = snapshot(root)
    timeline = load(root)  # loading reads names only
    assert timeline.is_completed("20250331030645735")
    for call in (lambda: timeline.commit_metadata("20250331030645735"), timeline.latest_schema):
        with pytest.raises(CorruptTableError, match=r"20250331030645735\.deltacommit") as e:
            call()
        assert str(root) in str(e.value)
    assert timeline.commit_metadata("20250331030642808").write_stats()  # others still read
    assert snapshot(root) == before


def test_a_truncated_v8_commit_file_is_named(writable_table: WritableTable) -> None:
    root = writable_table("v8_trips_8i1u")
    path = root / ".hoodie/timeline/20250713011914363_20250713011914662.deltacommit"
    path.write_bytes(path.read_bytes()[:700])
    before = snapshot(root)
    with pytest.raises(CorruptTableError,
                       match=r"20250713011914363_20250713011914662\.deltacommit"):
        load(root).commit_metadata("20250713011914363")
    assert snapshot(root) == before


def test_a_malformed_rollback_file_is_named(writable_table: WritableTable) -> None:
    root = writable_table("v6_nonpartitioned_rollback")
    (root / ".hoodie/20250126040936578.rollback").write_bytes(b"Obj\x01garbage")
    before = snapshot(root)
    timeline = load(root)
    with pytest.raises(CorruptTableError, match=r"20250126040936578\.rollback of table"):
        timeline.rolled_back_instants()
    with pytest.raises(CorruptTableError, match=r"20250126040936578\.rollback"):
        timeline.is_completed("20240101000000000")
    assert snapshot(root) == before


def test_reading_an_instant_that_vanished_says_reload(writable_table: WritableTable) -> None:
    root = writable_table("v6_trips_8i1u")
    timeline = load(root)
    (root / ".hoodie/20250331030645735.deltacommit").unlink()
    with pytest.raises(CorruptTableError, match="reload"):
        timeline.commit_metadata("20250331030645735")
    with pytest.raises(CorruptTableError, match="no instant 20990101000000000"):
        timeline.commit_metadata("20990101000000000")
