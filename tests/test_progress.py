"""The progress reporter: steps, slices done of total, throttling, and how each sink shows it."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest

from hudisql.errors import HudiSqlError
from hudisql.progress import (
    NotebookSink,
    Progress,
    ProgressUpdate,
    StageLineSink,
    TerminalSink,
    no_progress,
    progress_html,
    progress_sink,
)
from hudisql.table.io.storage import Storage
from hudisql.table.write.files import marker_path
from hudisql.write.progress import MarkerWatch, started_file_groups


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run_job(sink: list[ProgressUpdate] | StageLineSink | TerminalSink, clock: Clock) -> None:
    """Two steps: planning (1 s), then compacting 4 slices (one a second)."""
    with Progress("compact trips", sink.append if isinstance(sink, list) else sink, steps=2,
                  clock=clock) as progress:
        progress.stage("planning")
        clock.now += 1
        progress.stage("compacting file slices", total=4)
        for _ in range(4):
            clock.now += 1
            progress.advance()


def test_steps_slices_and_elapsed_are_reported_in_order() -> None:
    updates: list[ProgressUpdate] = []
    run_job(updates, Clock())
    shown = [(u.stage, u.step, u.done, u.total, u.step_ended, u.finished) for u in updates]
    assert shown == [
        ("planning", 1, 0, None, False, False),
        ("planning", 1, 0, None, True, False),
        ("compacting file slices", 2, 0, 4, False, False),
        *[("compacting file slices", 2, n, 4, False, False) for n in (1, 2, 3, 4)],
        ("compacting file slices", 2, 4, 4, True, False),
        ("compacting file slices", 2, 4, 4, False, True),
    ]
    assert updates[-1].elapsed == 5.0 and updates[-1].stage_elapsed == 4.0
    assert updates[-1].line() == ("compact trips · step 2/2 compacting file slices · "
                                  "4/4 slices · 5.0 s · done")


def test_updates_within_a_step_are_throttled() -> None:
    updates: list[ProgressUpdate] = []
    clock = Clock()
    progress = Progress("write t", updates.append, clock=clock, min_interval=0.2)
    progress.stage("writing file slices", total=1000)
    for _ in range(1000):
        clock.now += 0.001  # a thousand slices in one second: five updates, not a thousand
        progress.advance()
    progress.finish()
    within = [u for u in updates if not (u.step_ended or u.finished) and u.done]
    assert 4 <= len(within) <= 5
    assert updates[-2].step_ended and updates[-2].done == 1000
    assert updates[-1].line().endswith("1000/1000 slices · 1.0 s · done")


def test_a_failing_job_ends_as_failed_once() -> None:
    updates: list[ProgressUpdate] = []
    with pytest.raises(ValueError), Progress("write t", updates.append) as progress:
        progress.stage("writing file slices", total=3)
        raise ValueError("task failed")
    progress.finish()  # idempotent: nothing more is shown
    assert [u.finished for u in updates].count(True) == 1
    assert updates[-1].failed and updates[-1].line().endswith("failed")


def test_terminal_sink_rewrites_one_line_and_erases_it_at_the_end() -> None:
    out = io.StringIO()
    run_job(TerminalSink(out), Clock())
    text = out.getvalue()
    assert "\n" not in text
    assert text.count("\r\x1b[K") == 9
    assert "\r\x1b[Kcompact trips · step 2/2 compacting file slices · 3/4 slices · 4.0 s" in text
    assert text.endswith("\r\x1b[K")


def test_log_lines_only_for_steps_that_took_long_enough() -> None:
    out = io.StringIO()
    run_job(StageLineSink(out, min_seconds=2.0), Clock())
    assert out.getvalue() == ("compact trips · step 2/2 compacting file slices · 4/4 slices · "
                              "5.0 s (4.0 s)\n")


def test_notebook_html_has_a_bar_when_the_total_is_known() -> None:
    update = ProgressUpdate("upsert t", "writing file slices", 2, 3, 3, 12, 1.5, 1.0)
    assert '<progress value="0.250" max="1"' in progress_html(update)
    assert "3/12 slices" in progress_html(update)
    unknown = ProgressUpdate("upsert t", "staging records", 1, 3, 0, None, 0.1, 0.1)
    assert "<progress" not in progress_html(unknown)


def test_sink_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert progress_sink({"hudisql.progress.display": "off"}) is no_progress
    assert isinstance(progress_sink({"hudisql.progress.display": "lines"}), StageLineSink)
    assert isinstance(progress_sink({"hudisql.progress.display": "Terminal"}), TerminalSink)
    assert isinstance(progress_sink({"hudisql.progress.display": "notebook"}), NotebookSink)
    monkeypatch.setenv("CI", "true")
    assert progress_sink() is no_progress  # CI: nothing, whatever stderr is
    monkeypatch.setenv("CI", "")
    assert isinstance(progress_sink(), StageLineSink)  # pytest's stderr is not a terminal
    with pytest.raises(HudiSqlError, match="'bars' is not a progress mode; use one of auto"):
        progress_sink({"hudisql.progress.display": "bars"})


def test_slices_started_are_counted_from_markers(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    instant = "20260101000000000"
    files = [("city=sf", "f1-0_0-1-2_20260101000000000.parquet", "CREATE"),
             ("city=sf", ".f2-0_20250101000000000.log.1_0-1-2", "APPEND"),
             ("city=sf", ".f2-0_20250101000000000.log.2_1-1-3", "APPEND"),  # same group
             ("city=la", "f1-0_0-1-2_20260101000000000.parquet", "CREATE")]  # other partition
    assert started_file_groups(storage, instant) == 0
    for partition, name, kind in files:
        storage.write_bytes(marker_path(instant, partition, name, kind), b"")
    storage.write_bytes(marker_path("20260101000000001", "city=sf", files[0][1], "CREATE"), b"")
    assert started_file_groups(storage, instant) == 3


def test_marker_watch_lists_nothing_when_progress_shows_nothing(tmp_path: Path) -> None:
    progress = Progress("write t", no_progress)
    with MarkerWatch(progress, Storage(str(tmp_path)), "20260101000000000") as watch:
        assert watch._thread is None


def test_marker_watch_reports_groups_as_their_markers_appear(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    instant = "20260101000000000"
    seen = threading.Event()
    updates: list[ProgressUpdate] = []

    def sink(update: ProgressUpdate) -> None:
        updates.append(update)
        if update.done == 2:
            seen.set()

    progress = Progress("write t", sink, min_interval=0.0)
    progress.stage("writing file slices", total=2)
    with MarkerWatch(progress, storage, instant, interval=0.01):
        for name in ("f1-0_0-1-2_20260101000000000.parquet",
                     "f2-0_0-1-2_20260101000000000.parquet"):
            storage.write_bytes(marker_path(instant, "", name, "CREATE"), b"")
        assert seen.wait(30), "the watch never counted both markers"
    assert updates[-1].done == 2 and updates[-1].total == 2
