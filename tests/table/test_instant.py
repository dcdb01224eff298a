"""Instants: file names of both timeline layouts, ordering, and new instant times."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from hudisql.table.format import instant as instant_module
from hudisql.table.format.instant import (
    Action,
    Instant,
    State,
    format_instant_time,
    instant_file_name,
    new_instant_time,
    parse_instant_file_name,
    parse_instant_time,
)

TS = "20250331030642808"
CT = "20250331030645735"
R, F, C = State.REQUESTED, State.INFLIGHT, State.COMPLETED


@pytest.fixture(autouse=True)
def _restore_issued_times(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Tests issue times far in the future; other tests of this process must not inherit them.
    monkeypatch.setattr(instant_module, "_last_issued", instant_module._last_issued)
    yield


# (file name, layout) -> (timestamp, action, state, completion time) or None
NAMES: list[tuple[str, int, tuple[str, str, State, str | None] | None]] = [
    (f"{TS}.commit.requested", 1, (TS, "commit", R, None)),
    (f"{TS}.inflight", 1, (TS, "commit", F, None)),
    (f"{TS}.commit", 1, (TS, "commit", C, None)),
    (f"{TS}.deltacommit.requested", 1, (TS, "deltacommit", R, None)),
    (f"{TS}.deltacommit.inflight", 1, (TS, "deltacommit", F, None)),
    (f"{TS}.deltacommit", 1, (TS, "deltacommit", C, None)),
    (f"{TS}.compaction.requested", 1, (TS, "compaction", R, None)),
    (f"{TS}.compaction.inflight", 1, (TS, "compaction", F, None)),
    (f"{TS}.logcompaction.requested", 1, (TS, "logcompaction", R, None)),
    (f"{TS}.logcompaction.inflight", 1, (TS, "logcompaction", F, None)),
    (f"{TS}.clean.requested", 1, (TS, "clean", R, None)),
    (f"{TS}.clean.inflight", 1, (TS, "clean", F, None)),
    (f"{TS}.clean", 1, (TS, "clean", C, None)),
    (f"{TS}.rollback.requested", 1, (TS, "rollback", R, None)),
    (f"{TS}.rollback.inflight", 1, (TS, "rollback", F, None)),
    (f"{TS}.rollback", 1, (TS, "rollback", C, None)),
    (f"{TS}.restore.requested", 1, (TS, "restore", R, None)),
    (f"{TS}.restore.inflight", 1, (TS, "restore", F, None)),
    (f"{TS}.restore", 1, (TS, "restore", C, None)),
    (f"{TS}.savepoint.inflight", 1, (TS, "savepoint", F, None)),
    (f"{TS}.savepoint", 1, (TS, "savepoint", C, None)),
    (f"{TS}.replacecommit.requested", 1, (TS, "replacecommit", R, None)),
    (f"{TS}.replacecommit.inflight", 1, (TS, "replacecommit", F, None)),
    (f"{TS}.replacecommit", 1, (TS, "replacecommit", C, None)),
    (f"{TS}.indexing.requested", 1, (TS, "indexing", R, None)),
    (f"{TS}.indexing.inflight", 1, (TS, "indexing", F, None)),
    (f"{TS}.indexing", 1, (TS, "indexing", C, None)),
    ("00000000000000010.deltacommit", 1, ("00000000000000010", "deltacommit", C, None)),
    (f"{TS}001.commit", 1, (f"{TS}001", "commit", C, None)),
    # layout 2: completed files carry the completion time
    (f"{TS}_{CT}.commit", 2, (TS, "commit", C, CT)),
    (f"{TS}_{CT}.deltacommit", 2, (TS, "deltacommit", C, CT)),
    (f"{TS}_{CT}.replacecommit", 2, (TS, "replacecommit", C, CT)),
    (f"{TS}_{CT}.rollback", 2, (TS, "rollback", C, CT)),
    (f"{TS}.clustering.requested", 2, (TS, "clustering", R, None)),
    (f"{TS}.clustering.inflight", 2, (TS, "clustering", F, None)),
    (f"{TS}.inflight", 2, (TS, "commit", F, None)),
    (f"{TS}.deltacommit", 2, (TS, "deltacommit", C, None)),
    # not instant files
    ("hoodie.properties", 1, None),
    ("hoodie.properties.backup", 1, None),
    (f".{TS}.commit.0a1b.tmp", 1, None),
    ("archived", 1, None),
    (f"{TS}.unknownaction", 1, None),
    (f"{TS}.deltacommit.bogus", 1, None),
    (f"{TS}.deltacommit.requested.crc", 1, None),
    (f"{TS}_{CT}.commit", 1, None),  # the layout-2 form is not valid in layout 1
    (f"{TS}_{CT}.commit.requested", 2, None),
    ("abc.commit", 1, None),
    (f"{TS}.Commit", 1, None),
]


@pytest.mark.parametrize(("name", "layout", "expected"), NAMES)
def test_parse_instant_file_name(
    name: str, layout: int, expected: tuple[str, str, State, str | None] | None
) -> None:
    instant = parse_instant_file_name(name, layout)
    if expected is None:
        assert instant is None
        return
    assert instant is not None
    assert (instant.timestamp, instant.action, instant.state, instant.completion_time) == expected
    assert instant.file_name == name


@pytest.mark.parametrize(
    ("action", "state", "completion", "name"),
    [
        ("commit", R, None, f"{TS}.commit.requested"),
        ("commit", F, None, f"{TS}.inflight"),
        ("commit", C, None, f"{TS}.commit"),
        ("deltacommit", F, None, f"{TS}.deltacommit.inflight"),
        ("compaction", F, None, f"{TS}.compaction.inflight"),
        ("compaction", C, None, f"{TS}.commit"),
        ("logcompaction", C, None, f"{TS}.deltacommit"),
        ("clustering", C, None, f"{TS}.replacecommit"),
        ("indexing", C, None, f"{TS}.indexing"),
        ("savepoint", F, None, f"{TS}.savepoint.inflight"),
        ("deltacommit", C, CT, f"{TS}_{CT}.deltacommit"),
        ("compaction", C, CT, f"{TS}_{CT}.commit"),
    ],
)
def test_instant_file_name(action: str, state: State, completion: str | None, name: str) -> None:
    assert instant_file_name(TS, action, state, completion) == name


def test_instant_file_name_refuses_an_unknown_action() -> None:
    with pytest.raises(ValueError, match="'merge' is not a timeline action"):
        instant_file_name(TS, "merge", R)


@pytest.mark.parametrize("action", list(Action))
@pytest.mark.parametrize("state", list(State))
def test_every_action_and_state_round_trips_through_its_file_name(
    action: Action, state: State
) -> None:
    for layout, completion in ((1, None), (2, CT if state == C else None)):
        name = instant_file_name(TS, action, state, completion)
        parsed = parse_instant_file_name(name, layout)
        assert parsed is not None
        expected = instant_module.COMPLETED_AS.get(action, action) if state == C else action
        assert (parsed.timestamp, parsed.action, parsed.state, parsed.completion_time) == (
            TS, expected, state, completion
        )


def test_instants_order_by_time_then_state() -> None:
    a = Instant("2", "deltacommit", C)
    b = Instant("1", "commit", C)
    c = Instant("2", "deltacommit", R)
    d = Instant("2", "deltacommit", F)
    assert sorted([a, b, c, d]) == [b, c, d, a]
    assert max([c, a, d]) is a
    # the file's modification time is not part of an instant's identity
    assert Instant("2", "clean", C, modification_time=datetime.now(UTC)) == Instant("2", "clean", C)


def test_instant_states_and_with_state() -> None:
    requested = Instant(TS, "compaction", R)
    assert requested.is_requested and not requested.is_inflight and not requested.is_completed
    assert requested.file_name == f"{TS}.compaction.requested"
    done = requested.with_state(C)
    assert done.is_completed and done.action == "commit" and done.file_name == f"{TS}.commit"
    assert requested.is_write and not Instant(TS, "clean", R).is_write
    assert str(done) == f"{TS}.commit (completed)"


# -- instant times -------------------------------------------------------------------------------


def test_new_instant_time_is_now_in_utc_as_17_digits() -> None:
    before = datetime.now(UTC) - timedelta(milliseconds=1)
    ts = new_instant_time()
    after = datetime.now(UTC) + timedelta(seconds=1)
    assert len(ts) == 17 and ts.isdigit()
    assert format_instant_time(before) <= ts <= format_instant_time(after)
    assert format_instant_time(parse_instant_time(ts)) == ts


def test_new_instant_time_is_later_than_after() -> None:
    assert new_instant_time(after="20991231235959999") == "21000101000000000"
    # a metadata-table suffix: strictly greater as text
    ts = new_instant_time(after="21000101000000000001")
    assert ts > "21000101000000000001" and len(ts) == 17
    # not a calendar time: counts on
    assert new_instant_time(after="99999999999999999") == "999999999999999990"
    assert new_instant_time(after="99999999999999998999") > "99999999999999998999"


def test_new_instant_time_never_repeats_in_one_process() -> None:
    frozen = datetime(2030, 1, 1, tzinfo=UTC)
    times = [new_instant_time(now=frozen) for _ in range(5)]
    assert times == [
        "20300101000000000", "20300101000000001", "20300101000000002", "20300101000000003",
        "20300101000000004",
    ]


def test_new_instant_times_are_unique_across_racing_threads() -> None:
    n, per_thread = 4, 250
    barrier = threading.Barrier(n)
    results: list[list[str]] = [[] for _ in range(n)]

    def issue(i: int) -> None:
        barrier.wait()
        results[i] = [new_instant_time() for _ in range(per_thread)]

    threads = [threading.Thread(target=issue, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [ts for r in results for ts in r]
    assert len(set(everything)) == n * per_thread
    for r in results:
        assert r == sorted(r) and len(set(r)) == per_thread  # increasing in each thread


@pytest.mark.parametrize("bad", ["2025", "2025033103064280x", "", "20251399000000000"])
def test_parse_instant_time_rejects_non_times(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_instant_time(bad)
