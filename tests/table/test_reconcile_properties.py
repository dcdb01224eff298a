"""Property tests: random histories of task attempts read back exactly the committed attempts.

A history is a few instants on one file group. Each instant runs one or more task attempts
(attempt numbers in start order); every attempt writes a prefix of the instant's blocks
(data blocks and delete blocks), may die while writing the next one (a torn block at the
end of its last log file), and the last two may run at once (their log files interleave).
An instant is committed (one complete attempt's log files recorded), rolled back (a
rollback command block and a completed rollback), or left pending. The read must merge
exactly the committed attempts' blocks, in order, over the base file:

- rule (a) for any history: the committed attempt may be any complete one;
- rule (b) for the histories it can decide: the committed attempt is the last complete one
  (retries after failures, speculative copies killed before finishing or finishing first).

Every block of a data block writes its own key besides a shared one, so a single merged
spurious block changes the result.
"""

from __future__ import annotations

import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from hudisql.table.format.log.format import BlockType
from hudisql.table.read.merge import CorruptLogBlockWarning
from tests.table.test_reconcile_kit import RetryTable, cut, ts

BASE_ROWS = {"b0": "base", "b1": "base", "k0": "base"}
SHARED_KEYS = ["b0", "b1", "k0", "k1"]


@dataclass(frozen=True)
class Attempt:
    """One task attempt: its attempt number, how many blocks it wrote whole, and whether it
    died mid-block."""

    number: int
    written: int
    torn: bool


@dataclass(frozen=True)
class InstantHistory:
    """What happened to one instant: its blocks' kinds and keys, its attempts, its fate."""

    kinds: tuple[tuple[str, str], ...]  # per sequence number: ("data"|"delete", shared key)
    attempts: tuple[Attempt, ...]
    fate: str  # "committed" | "rolled_back" | "pending"
    committed: int | None  # index into attempts
    interleave: bool

    @property
    def n(self) -> int:
        return len(self.kinds)


@st.composite
def instant_histories(draw: st.DrawFn, rule: str) -> InstantHistory:
    kinds = tuple(
        draw(st.lists(
            st.tuples(st.sampled_from(["data", "data", "delete"]), st.sampled_from(SHARED_KEYS)),
            min_size=1, max_size=3,
        ))
    )
    n = len(kinds)
    shapes = draw(st.lists(st.tuples(st.integers(0, n), st.booleans()), min_size=1, max_size=3))
    # Attempt numbers count up; after a stage retry they start from 0 again.
    restart = draw(st.integers(1, len(shapes)))
    # A torn block follows the whole ones: an attempt that wrote all n blocks tore nothing.
    attempts = [
        Attempt(i % restart, written, torn and written < n)
        for i, (written, torn) in enumerate(shapes)
    ]
    fate = draw(st.sampled_from(["committed", "committed", "committed", "rolled_back", "pending"]))
    committed = None
    if fate == "committed":
        complete = [i for i, a in enumerate(attempts) if a.written == n]
        if rule == "a":
            committed = draw(st.integers(0, len(attempts) - 1))
        else:
            # Rule (b)'s domain: the committed attempt is the last one to write everything.
            committed = complete[-1] if complete else len(attempts) - 1
        attempts[committed] = Attempt(attempts[committed].number, n, False)
    interleave = len(attempts) >= 2 and draw(st.booleans())
    if rule == "b" and interleave and attempts[-1].number == attempts[-2].number:
        interleave = False  # two runs of one attempt number interleaved: only (a) can tell
    return InstantHistory(kinds, tuple(attempts), fate, committed, interleave)


def _blocks(t: RetryTable, instant: str, history: InstantHistory, index: int) -> list[bytes]:
    """The blocks the ``index``-th attempt writes when it runs to the end."""
    number = history.attempts[index].number
    out = []
    for seq, (kind, key) in enumerate(history.kinds):
        if kind == "delete":
            out.append(t.delete(instant, (number, seq), [key]))
        else:
            value = f"{instant}/a{index}/s{seq}"
            out.append(t.data(instant, (number, seq), {key: value, f"u{value}": value}))
    return out


def _write_instant(t: RetryTable, instant: str, history: InstantHistory) -> list[str]:
    """Write every attempt's log files; returns the committed attempt's file names."""
    written: list[list[str]] = []
    plans = []
    for index, attempt in enumerate(history.attempts):
        full = _blocks(t, instant, history, index)
        whole = full[: attempt.written]
        tail = cut(full[attempt.written]) if attempt.torn else b""
        plans.append((whole, tail))
    last = len(plans) - (2 if history.interleave else 0)
    for whole, tail in plans[:last]:
        written.append(_write_attempt(t, whole, tail))
    if history.interleave:
        (w1, tail1), (w2, tail2) = plans[last:]
        if w1 and w2:
            names1, names2 = t.interleave(w1, w2)
            written += [_torn(t, names1, tail1), _torn(t, names2, tail2)]
        else:
            written += [_write_attempt(t, w1, tail1), _write_attempt(t, w2, tail2)]
    return written[history.committed] if history.committed is not None else []


def _write_attempt(t: RetryTable, whole: list[bytes], tail: bytes) -> list[str]:
    if whole:
        return t.write(whole, tail=tail)
    return [t.write_raw(tail)] if tail else []


def _torn(t: RetryTable, names: list[str], tail: bytes) -> list[str]:
    if tail:
        t.storage.write_bytes(names[-1], t.storage.read_bytes(names[-1]) + tail)
    return names


def _expected(histories: list[InstantHistory]) -> dict[str, str]:
    rows = dict(BASE_ROWS)
    for i, history in enumerate(histories):
        if history.fate != "committed":
            continue
        instant = ts(i + 1)
        for seq, (kind, key) in enumerate(history.kinds):
            if kind == "delete":
                rows.pop(key, None)
            else:
                value = f"{instant}/a{history.committed}/s{seq}"
                rows[key] = rows[f"u{value}"] = value
    return rows


def _check(histories: list[InstantHistory], mode: str, record: bool) -> None:
    with tempfile.TemporaryDirectory() as root:
        t = RetryTable(Path(root) / "t", BASE_ROWS)
        committed_files: set[tuple[str, str]] = set()
        for i, history in enumerate(histories):
            instant = t.begin(ts(i + 1))
            committed = _write_instant(t, instant, history)
            if history.committed is not None:
                number = history.attempts[history.committed].number
                t.commit(instant, committed, number, record=record)
                committed_files.update((instant, name) for name in committed)
            elif history.fate == "rolled_back":
                t.rollback(ts(100 + i), instant)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CorruptLogBlockWarning)
            table, report = t.merge(mode)
        assert {r["id"]: r["val"] for r in table.to_pylist()} == _expected(histories)
        # Exactly the committed attempts' blocks are valid, and every other block is not.
        valid = [
            (v.block.instant_time, Path(v.block.log_file).name)
            for v in report.verdicts
            if v.verdict == "valid" and v.block.block_type != BlockType.COMMAND
        ]
        assert set(valid) == committed_files
        assert len(valid) == sum(h.n for h in histories if h.fate == "committed")
        assert report.merged == [
            v.block for v in report.verdicts
            if v.verdict == "valid" and v.block.block_type != BlockType.COMMAND
        ]


@settings(max_examples=50, deadline=None)
@given(st.lists(instant_histories("a"), min_size=1, max_size=3))
def test_rule_a_merges_exactly_the_committed_attempts(histories: list[InstantHistory]) -> None:
    _check(histories, "full", record=True)


@settings(max_examples=50, deadline=None)
@given(st.lists(instant_histories("b"), min_size=1, max_size=3), st.booleans())
def test_rule_b_merges_exactly_the_committed_attempts_where_it_can_tell(
    histories: list[InstantHistory], recorded: bool
) -> None:
    # The record is there but switched off, or the commit never wrote one.
    _check(histories, "sequence" if recorded else "full", record=recorded)
