"""Table services off the writer's critical path: ``hoodie.clean.async.enabled=true``.

Apache Hudi's writers run an asynchronous clean beside the write and wait for it at the end
of the commit; here a write hands its clean (and the archival that follows it) to its
session's background worker and returns. The worker is one named thread per session,
started on first use: it runs one table's services at a time, each under the table lock
(the writer's next commit waits for that lock, never for the whole clean), and a table's
services queued twice before they start run once. A failure is logged at once and kept:
:meth:`BackgroundServices.wait` raises it. Closing the session waits for the worker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from hudisql.errors import TableServiceError

__all__ = ["BackgroundServices"]

_LOG = logging.getLogger(__name__)


class BackgroundServices:
    """A session's background table services: one worker thread, started on first use."""

    def __init__(self, name: str = "hudisql-services") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        #: Work queued per table (by base path) that has not started yet.
        self._queued: dict[str, Future[object]] = {}
        #: Everything submitted since the last wait, with its label.
        self._submitted: list[tuple[str, Future[object]]] = []
        self._closed = False

    def submit(self, key: str, label: str, work: Callable[[], object]) -> bool:
        """Queue ``work`` (``label`` names it in logs and errors) for the table ``key``.

        Returns:
            False when the same table's work is queued already and has not started (it
            will see this write too), True when queued now.

        Raises:
            TableServiceError: the session was closed.
        """
        def run() -> object:
            with self._lock:  # started: a later write queues its own run
                self._queued.pop(key, None)
            try:
                return work()
            except BaseException as exc:  # logged before anyone waiting can see it
                _LOG.error("%s failed in the background: %s", label, exc)
                raise

        with self._lock:
            if self._closed:
                raise TableServiceError(
                    f"{label}: the session is closed, its background services stopped; "
                    "run the service inline (hoodie.clean.async.enabled=false)")
            if key in self._queued:
                return False
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix=self.name)
            # run() takes the lock first: it cannot pop the key before it is set here.
            future = self._queued[key] = self._executor.submit(run)
            self._submitted.append((label, future))
        return True

    def wait(self) -> None:
        """Wait until every queued service has run.

        Raises:
            TableServiceError: a background service failed since the last wait (the
                first failure is the cause; each is named). They are reported once.
        """
        errors: list[tuple[str, BaseException]] = []
        while True:
            with self._lock:
                submitted, self._submitted = self._submitted, []
            if not submitted:
                break
            for label, future in submitted:
                error = future.exception()  # waits for it
                if error is not None:
                    errors.append((label, error))
        if errors:
            named = "; ".join(f"{label}: {error}" for label, error in errors)
            raise TableServiceError(
                f"{len(errors)} background table service(s) failed: {named}. The writes "
                "themselves completed; the next write runs the service again, or run it "
                "yourself (CALL run_clean)") from errors[0][1]

    def close(self) -> None:
        """Wait for the queued services and stop the worker; failures stay logged (not
        raised: call :meth:`wait` first to have them raised)."""
        with self._lock:
            self._closed = True
        try:
            self.wait()
        except TableServiceError as exc:
            _LOG.warning("closing the session: %s", exc)
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
