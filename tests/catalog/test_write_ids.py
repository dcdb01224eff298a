"""ValidWriteIdList: Hive's string form and the comparison of TxnIdUtils.compare."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hudisql.catalog import Comparison, ValidWriteIdList
from hudisql.errors import CatalogError

V = ValidWriteIdList.of


def test_hive_string_form_round_trips() -> None:
    text = "default.t:4:9223372036854775807::"
    vwil = ValidWriteIdList.parse(text)
    assert (vwil.table, vwil.high_watermark, vwil.open_ids, vwil.aborted_ids) == (
        "default.t", 4, (), ())
    assert vwil.to_string() == text


def test_open_and_aborted_ids_are_written_with_the_minimum_open_id() -> None:
    vwil = ValidWriteIdList("db.t", 12, open_ids=(12, 7), aborted_ids=(8,))
    assert vwil.to_string() == "db.t:12:7:7,12:8"
    assert ValidWriteIdList.parse("db.t:12:7:7,12:8") == vwil
    assert vwil.invalid_ids == (7, 8, 12)


def test_table_names_with_colons_and_dots_round_trip() -> None:
    vwil = ValidWriteIdList("we:ird.db.t;x", 3, open_ids=(2,))
    assert ValidWriteIdList.parse(vwil.to_string()) == vwil


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("default.t:4", "expected"),
        ("default.t:x:9223372036854775807::", "high watermark 'x'"),
        ("default.t:4:9223372036854775807:a:", "open ids 'a'"),
        ("default.t:4:3:2:", "minOpenWriteId is 3"),
        ("default.t:4:9223372036854775807::9", "outside 1..4"),
        ("default.t:4:2:2:2", "both open and aborted"),
        ("default.t:-1:9223372036854775807::", "negative"),
    ],
)
def test_malformed_strings_are_refused_with_the_reason(text: str, says: str) -> None:
    with pytest.raises(CatalogError, match=says):
        ValidWriteIdList.parse(text)


def test_seed_request_against_older_cached_entry_is_fresh() -> None:
    # Request [12:7,8,12] against a cached [11:7,8]: write id 12 is open, nothing committed.
    assert V("t", 12, (7, 8, 12)).compare(V("t", 11, (7, 8))) is Comparison.EQUIVALENT


def test_seed_request_against_entry_with_write_id_8_committed_is_not_fresh() -> None:
    request, cached = V("t", 12, (7, 8, 12)), V("t", 12, (7, 12))
    assert not request.is_equivalent(cached)
    assert cached.compare(request) is Comparison.NEWER
    assert request.compare(cached) is Comparison.OLDER


def test_all_open_ranges_are_equivalent() -> None:
    assert V("t", 5, range(1, 6)).is_equivalent(V("t", 8, range(1, 9)))
    assert V("t", 0).is_equivalent(V("t", 5, range(1, 6)))


def test_commits_between_watermarks_make_lists_differ() -> None:
    assert V("t", 5).compare(V("t", 8)) is Comparison.OLDER
    assert V("t", 8).compare(V("t", 5)) is Comparison.NEWER
    assert not V("t", 5).is_equivalent(V("t", 8))


def test_aborted_ids_never_count_as_committed() -> None:
    assert V("t", 6, aborted=(6,)).is_equivalent(V("t", 5))
    assert V("t", 6, invalid=(6,), aborted=(6,)).is_equivalent(V("t", 6, invalid=(6,)))


def test_lists_each_with_a_commit_the_other_lacks_are_incomparable() -> None:
    assert V("t", 5, (3,)).compare(V("t", 5, (4,))) is Comparison.INCOMPARABLE


def test_state_transitions() -> None:
    base = V("t", 11, (7, 8))
    opened = base.with_open(12)
    assert opened == V("t", 12, (7, 8, 12)) and opened.is_equivalent(base)
    committed = opened.with_committed(8)
    assert committed == V("t", 12, (7, 12)) and committed.compare(opened) is Comparison.NEWER
    aborted = committed.with_aborted(12)
    assert aborted.aborted_ids == (12,) and aborted.is_equivalent(committed)
    assert committed.last_committed() == 11 and committed.is_committed(8)
    assert not committed.is_committed(7) and not committed.is_committed(13)


ids = st.integers(min_value=0, max_value=12)


@st.composite
def write_id_lists(draw: st.DrawFn) -> ValidWriteIdList:
    hwm = draw(ids)
    invalid = draw(st.sets(st.integers(1, hwm), max_size=hwm)) if hwm else set()
    aborted = draw(st.sets(st.sampled_from(sorted(invalid)))) if invalid else set()
    return ValidWriteIdList("db.t", hwm, tuple(invalid - aborted), tuple(aborted))


def committed(v: ValidWriteIdList) -> set[int]:
    return {w for w in range(1, v.high_watermark + 1) if w not in v.invalid_ids}


@given(write_id_lists())
def test_string_form_round_trips_for_any_list(v: ValidWriteIdList) -> None:
    assert ValidWriteIdList.parse(v.to_string()) == v


@given(write_id_lists(), write_id_lists())
def test_comparison_agrees_with_the_committed_sets(a: ValidWriteIdList, b: ValidWriteIdList) -> (
    None
):
    ca, cb = committed(a), committed(b)
    expected = (
        Comparison.EQUIVALENT if ca == cb else Comparison.NEWER if ca > cb
        else Comparison.OLDER if ca < cb else Comparison.INCOMPARABLE
    )
    assert a.compare(b) is expected
    mirrored = {Comparison.NEWER: Comparison.OLDER, Comparison.OLDER: Comparison.NEWER}
    assert b.compare(a) is mirrored.get(expected, expected)
