"""Hudi's asynchronous compaction for a streaming query: planned inline, run beside the batches.

With ``hoodie.datasource.compaction.async.enable=true`` on a merge-on-read table, the sink
(:mod:`hudisql.write.stream_sink`) asks :class:`AsyncCompactor` after each batch's commit.
When ``hoodie.compact.inline.max.delta.commits`` deltacommits completed since the last
compaction, the compaction is *planned* there, in the batch (a plan is cheap: one
``<ts>.compaction.requested``, under the table lock), and *run* in a thread of the query's
process while the next batches keep writing: their log files go on the new slice the plan
starts (:func:`hudisql.table.services.compaction.pending_compaction_bases`), so the
compaction neither hides them nor conflicts with them. One compaction runs at a time; a plan
left requested (a failed run, a process that died) is run before a new one is planned, as
Hudi's async compactor picks up pending plans when it starts.

A failed compaction is reverted to requested (its files deleted; the plan kept) and the next
batch stops the query with the cause (:class:`~hudisql.errors.StreamingWriteError`), as
Hudi's sink fails the next batch with "Async Compactor shutdown unexpectedly"; the restarted
query runs the plan again. Stopping the query does not wait for a running compaction: the
thread finishes it, or (the process gone) its heartbeat expires and the next run redoes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from hudisql.errors import StreamingWriteError, WriteError
from hudisql.metadata.participant import participants_for
from hudisql.services import compaction
from hudisql.services.maintenance import Maintenance
from hudisql.services.protocol import StepHook, is_abandoned_instant, no_step
from hudisql.table.format.instant import Action

__all__ = ["ASYNC_COMPACTION", "AsyncCompactor", "async_compaction_asked", "set_step_hook"]

_LOG = logging.getLogger(__name__)

#: Hudi's asynchronous compaction of a streamed merge-on-read table.
ASYNC_COMPACTION = "hoodie.datasource.compaction.async.enable"

#: Tests: sees every step of an asynchronous compaction in its thread (the service's
#: ``inflight``, ``written``, ``completing``, ``completed``; then ``async_failed`` or
#: ``async_done``), so a test can hold one at a step with a barrier.
_step_hook: StepHook = no_step


def set_step_hook(hook: StepHook | None) -> None:
    """Install (None: remove) the hook every asynchronous compaction reports its steps to."""
    global _step_hook
    _step_hook = hook or no_step


def async_compaction_asked(options: Mapping[str, str], label: str) -> bool:
    """True when ``options`` ask for Hudi's asynchronous compaction.

    Raises:
        WriteError: the value is not true or false.
    """
    asked = str(options.get(ASYNC_COMPACTION, "false")).strip().lower()
    if asked not in ("true", "false"):
        raise WriteError(f"writeStream.format('hudi') to {label}: option "
                         f"{ASYNC_COMPACTION}={asked!r} is not true or false")
    return asked == "true"


class AsyncCompactor:
    """Plans a due compaction after a batch and runs it in a thread (one at a time)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._thread: threading.Thread | None = None
        self._busy = False
        self._failure: tuple[str, BaseException] | None = None

    @property
    def running(self) -> bool:
        """True while a compaction runs (its thread may linger a moment after)."""
        return self._busy

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the running compaction (if any); True when none runs any more."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    def check(self) -> None:
        """Stop the query when the last compaction failed.

        Raises:
            StreamingWriteError: names the compaction and its cause.
        """
        if self._failure is None:
            return
        instant, cause = self._failure
        raise StreamingWriteError(
            f"streaming write to {self.label}: the asynchronous compaction {instant} failed "
            f"({type(cause).__name__}: {cause}); it is back to requested and the query stops. "
            "Fix the cause and restart the query: the compaction runs again then (or run it "
            f"with RUN COMPACTION ON ... AT {instant})") from cause

    def after_commit(self, maintenance: Maintenance, options: Mapping[str, str]) -> str | None:
        """After a batch's commit: start running a pending or newly due compaction unless one
        runs; returns its instant (None: nothing started).

        Raises:
            StreamingWriteError: the previous compaction failed (see :meth:`check`).
            TableServiceError: bad compaction settings.
        """
        self.check()
        if self.running:
            return None
        merged = {**maintenance.options, **options}
        table = maintenance.open_table()
        if not table.properties.is_mor:
            return None
        waiting = [i.timestamp for i in table.timeline.pending([Action.COMPACTION])
                   if i.is_requested or is_abandoned_instant(table, i.timestamp, merged)]
        if waiting:
            instant: str | None = waiting[0]
        else:
            with maintenance.bracket():
                instant = compaction.schedule_compaction(
                    table, merged, runner=maintenance.runner, only_when_due=True)
        if instant is None:
            return None
        _LOG.info("streaming write to %s: compaction %s runs asynchronously", self.label,
                  instant)
        self._busy = True
        self._thread = threading.Thread(
            target=self._run, args=(maintenance, merged, instant),
            name=f"hudisql-async-compaction-{instant}", daemon=True)
        self._thread.start()
        return instant

    def _run(self, maintenance: Maintenance, options: dict[str, str], instant: str) -> None:
        hook = _step_hook
        outcome = "async_done"
        try:
            table = maintenance.open_table()
            with maintenance.bracket():
                compaction.run_compaction(
                    table, instant, options, runner=maintenance.runner,
                    participants=participants_for(table, options), on_step=hook)
        except BaseException as exc:  # reported by the next batch (the query stops)
            _LOG.error("streaming write to %s: the asynchronous compaction %s failed: %s",
                       self.label, instant, exc)
            self._failure = (instant, exc)
            outcome = "async_failed"
        finally:
            self._busy = False
        hook(outcome, instant)
