"""Progress of long work: which step, slices done of total, time elapsed; shown without flooding.

A long job (a large write, an index build, a compaction) makes a :class:`Progress`, names
each step with :meth:`Progress.stage` (with the number of file slices it will handle when
known) and reports slices as they finish with :meth:`Progress.advance` or
:meth:`Progress.update`. A *sink* shows the updates: :func:`progress_sink` picks one from
the ``hudisql.progress.display`` option (``auto`` by default):

- in a notebook kernel, one display updated in place (:class:`NotebookSink`);
- in CI (``CI`` set), nothing;
- on a terminal, one line rewritten in place and erased when the job ends
  (:class:`TerminalSink`);
- otherwise (a log file), one line per step that took at least two seconds
  (:class:`StageLineSink`), so that thousands of small writes log nothing.

Updates between steps are throttled (at most five a second). This module imports nothing
of hudisql but its errors, and no Spark: every layer may use it.
"""

from __future__ import annotations

import html
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, TextIO

from hudisql.errors import HudiSqlError

#: The option choosing how progress is shown: auto, off, terminal, lines, notebook.
PROGRESS_OPTION = "hudisql.progress.display"
PROGRESS_MODES = ("auto", "off", "terminal", "lines", "notebook")
#: Seconds between two updates within one step (step changes are always shown).
MIN_INTERVAL = 0.2
#: A step shorter than this leaves no line in a log (:class:`StageLineSink`).
MIN_STAGE_SECONDS = 2.0


@dataclass(frozen=True)
class ProgressUpdate:
    """One moment of a job: the step it is in and how far that step has come.

    ``total`` is None when the step does not know how many slices it will handle;
    ``step_ended`` marks the last update of a step, ``finished`` the last of the job
    (``failed``: it ended by an error).
    """

    job: str
    stage: str
    step: int
    steps: int | None
    done: int
    total: int | None
    elapsed: float
    stage_elapsed: float
    step_ended: bool = False
    finished: bool = False
    failed: bool = False

    @property
    def fraction(self) -> float | None:
        """Slices done over total (0..1), None when the total is unknown or zero."""
        if not self.total:
            return None
        return min(1.0, self.done / self.total)

    def line(self) -> str:
        """The update as one line, e.g. ``upsert trips · step 2/3 writing file slices ·
        12/40 slices · 3.4 s``."""
        step = f"step {self.step}/{self.steps}" if self.steps else f"step {self.step}"
        parts = [self.job, f"{step} {self.stage}"]
        if self.total is not None:
            parts.append(f"{self.done}/{self.total} slices")
        elif self.done:
            parts.append(f"{self.done} slices")
        parts.append(f"{self.elapsed:.1f} s")
        if self.finished:
            parts.append("failed" if self.failed else "done")
        return " · ".join(parts)


#: Shows updates; any callable taking a :class:`ProgressUpdate` is a sink.
ProgressSink = Callable[[ProgressUpdate], None]


def no_progress(update: ProgressUpdate) -> None:
    """The sink that shows nothing (CI, ``hudisql.progress.display=off``)."""


class TerminalSink:
    """One line on a terminal, rewritten in place, erased when the job ends."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr

    def __call__(self, update: ProgressUpdate) -> None:
        text = "" if update.finished else update.line()
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()


class StageLineSink:
    """One line per step that lasted at least ``min_seconds``, written when the step ends."""

    def __init__(self, stream: TextIO | None = None,
                 min_seconds: float = MIN_STAGE_SECONDS) -> None:
        self.stream = stream or sys.stderr
        self.min_seconds = min_seconds

    def __call__(self, update: ProgressUpdate) -> None:
        if update.step_ended and update.stage_elapsed >= self.min_seconds:
            shown = replace(update, finished=False)
            self.stream.write(f"{shown.line()} ({update.stage_elapsed:.1f} s)\n")
            self.stream.flush()


class NotebookSink:
    """One notebook display per job, updated in place: a progress bar and the update's line."""

    def __init__(self) -> None:
        self._handle: Any = None

    def __call__(self, update: ProgressUpdate) -> None:
        from IPython.display import HTML, display

        view = HTML(progress_html(update))  # type: ignore[no-untyped-call]
        if self._handle is None:
            self._handle = display(view, display_id=True)  # type: ignore[no-untyped-call]
        else:
            self._handle.update(view)


def progress_html(update: ProgressUpdate) -> str:
    """The update as notebook HTML: a ``<progress>`` bar (when the total is known) and text."""
    fraction = 1.0 if update.finished and not update.failed else update.fraction
    bar = ("" if fraction is None else
           f'<progress value="{fraction:.3f}" max="1" style="width:16em"></progress> ')
    return f'<div class="hudisql-progress">{bar}<code>{html.escape(update.line())}</code></div>'


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    from IPython import get_ipython

    ip = get_ipython()
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


def progress_sink(options: Mapping[str, str] | None = None) -> ProgressSink:
    """The sink the ``hudisql.progress.display`` option asks for (see the module docstring).

    Raises:
        HudiSqlError: an unknown mode.
    """
    mode = (options or {}).get(PROGRESS_OPTION, "auto").strip().lower()
    if mode not in PROGRESS_MODES:
        raise HudiSqlError(f"{PROGRESS_OPTION}={mode!r} is not a progress mode; use one of "
                           f"{', '.join(PROGRESS_MODES)}")
    if mode == "auto":
        if _in_notebook():
            mode = "notebook"
        elif os.environ.get("CI", "").strip().lower() not in ("", "0", "false"):
            mode = "off"
        elif sys.stderr.isatty():
            mode = "terminal"
        else:
            mode = "lines"
    sinks: dict[str, Callable[[], ProgressSink]] = {
        "off": lambda: no_progress, "terminal": TerminalSink, "lines": StageLineSink,
        "notebook": NotebookSink}
    return sinks[mode]()


class Progress:
    """The progress of one job, step by step; a context manager that ends the job.

    Example::

        with Progress("compact trips", progress_sink(options), steps=2) as progress:
            progress.stage("planning")
            progress.stage("compacting file slices", total=len(slices))
            for result in results:
                progress.advance()
    """

    def __init__(self, job: str, sink: ProgressSink | None = None, steps: int | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 min_interval: float = MIN_INTERVAL) -> None:
        self.job = job
        self.sink = sink if sink is not None else progress_sink()
        self.steps = steps
        self.clock = clock
        self.min_interval = min_interval
        self._started = clock()
        self._stage_started = self._started
        self._stage: str | None = None
        self._step = 0
        self._done = 0
        self._total: int | None = None
        self._shown_at: float | None = None
        self._finished = False

    @property
    def done(self) -> int:
        """Slices done in the current step."""
        return self._done

    @property
    def total(self) -> int | None:
        """Slices the current step will handle (None: not known)."""
        return self._total

    def _snapshot(self, now: float, **flags: bool) -> ProgressUpdate:
        return ProgressUpdate(self.job, self._stage or "", self._step, self.steps, self._done,
                              self._total, now - self._started, now - self._stage_started,
                              **flags)

    def _show(self, update: ProgressUpdate, now: float) -> None:
        self._shown_at = now
        self.sink(update)

    def _end_stage(self, now: float) -> None:
        if self._stage is not None:
            self._show(self._snapshot(now, step_ended=True), now)

    def stage(self, name: str, total: int | None = None) -> None:
        """End the current step (if any) and start step ``name`` of ``total`` slices."""
        now = self.clock()
        self._end_stage(now)
        self._stage, self._step, self._done, self._total = name, self._step + 1, 0, total
        self._stage_started = now
        self._show(self._snapshot(now), now)

    def update(self, done: int, total: int | None = None) -> None:
        """Set the slices done in this step (and its total, when it becomes known)."""
        self._done = done
        if total is not None:
            self._total = total
        now = self.clock()
        if self._shown_at is None or now - self._shown_at >= self.min_interval:
            self._show(self._snapshot(now), now)

    def advance(self, slices: int = 1) -> None:
        """Count ``slices`` more slices done in this step."""
        self.update(self._done + slices)

    def finish(self, failed: bool = False) -> None:
        """End the job (idempotent): the last step's end, then the job's."""
        if self._finished:
            return
        self._finished = True
        now = self.clock()
        self._end_stage(now)
        self._show(self._snapshot(now, finished=True, failed=failed), now)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.finish(failed=exc is not None)
