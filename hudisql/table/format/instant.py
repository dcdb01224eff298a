"""Instants: one action at one instant time, in one state, and the files that record them.

A table's timeline is a set of instant files. Timeline layout 1 (table version 6) names
them ``<ts>.<action>.requested``, ``<ts>.<action>.inflight`` and ``<ts>.<action>``;
layout 2 (versions 8 and 9) names completed instants ``<requestedTs>_<completionTs>.<action>``.
Two actions complete under another action's name (``compaction`` as ``commit``,
``logcompaction`` as ``deltacommit``, ``clustering`` as ``replacecommit``), and a plain
``commit`` goes inflight as ``<ts>.inflight``. See ``docs/FORMAT.md``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import total_ordering

#: Instant times are ``yyyyMMddHHmmssSSS`` (17 digits, UTC).
INSTANT_TIME_FORMAT = "%Y%m%d%H%M%S"
INSTANT_TIME_LENGTH = 17


class State(StrEnum):
    """The state of an instant; each state is a file of its own on the timeline."""

    REQUESTED = "REQUESTED"
    INFLIGHT = "INFLIGHT"
    COMPLETED = "COMPLETED"

    @property
    def rank(self) -> int:
        """0, 1, 2 in the order the states are reached."""
        return _STATE_RANK[self]


_STATE_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


class Action(StrEnum):
    """The actions an instant can record (the file-name extensions of the timeline)."""

    COMMIT = "commit"
    DELTACOMMIT = "deltacommit"
    COMPACTION = "compaction"
    LOGCOMPACTION = "logcompaction"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    RESTORE = "restore"
    SAVEPOINT = "savepoint"
    REPLACECOMMIT = "replacecommit"
    CLUSTERING = "clustering"
    INDEXING = "indexing"


#: Actions whose completed file carries another action's name.
COMPLETED_AS: dict[str, str] = {
    Action.COMPACTION: Action.COMMIT,
    Action.LOGCOMPACTION: Action.DELTACOMMIT,
    Action.CLUSTERING: Action.REPLACECOMMIT,
}

#: Actions that write data files: the "write timeline" of RFC-45 (holes are looked for here).
WRITE_ACTIONS: frozenset[str] = frozenset(
    {
        Action.COMMIT,
        Action.DELTACOMMIT,
        Action.COMPACTION,
        Action.LOGCOMPACTION,
        Action.REPLACECOMMIT,
        Action.CLUSTERING,
    }
)

_ACTIONS = frozenset(a.value for a in Action)
_STATE_SUFFIX = {"requested": State.REQUESTED, "inflight": State.INFLIGHT}
# <ts>[_<completionTs>].<action>[.<state>]; Hudi's own pattern is no stricter than this.
_NAME = re.compile(r"^(\d+)(?:_(\d+))?\.([a-z]+)(?:\.([a-z]+))?$")


@total_ordering
@dataclass(frozen=True)
class Instant:
    """One instant file: ``action`` at ``timestamp`` in ``state``.

    Instants order by timestamp, then state (requested < inflight < completed), then action.
    ``completion_time`` is known for completed instants of layout 2 only;
    ``modification_time`` is the file's (when read from storage) and is not compared.
    """

    timestamp: str
    action: str
    state: State
    completion_time: str | None = None
    file_name: str = ""
    modification_time: datetime | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.file_name:
            name = instant_file_name(
                self.timestamp, self.action, self.state, self.completion_time
            )
            object.__setattr__(self, "file_name", name)

    def _key(self) -> tuple[str, int, str]:
        return (self.timestamp, _STATE_RANK[self.state], self.action)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Instant):
            return NotImplemented
        return self._key() < other._key()

    @property
    def is_completed(self) -> bool:
        """True for a completed instant."""
        return self.state == State.COMPLETED

    @property
    def is_inflight(self) -> bool:
        """True for an inflight instant."""
        return self.state == State.INFLIGHT

    @property
    def is_requested(self) -> bool:
        """True for a requested instant."""
        return self.state == State.REQUESTED

    @property
    def is_write(self) -> bool:
        """True when the action writes data files (commit, deltacommit, compaction, ...)."""
        return self.action in WRITE_ACTIONS

    def with_state(self, state: State) -> Instant:
        """This instant in ``state`` (layout 1 file name; completion renames the action)."""
        action = self.action
        if state == State.COMPLETED:
            action = COMPLETED_AS.get(action, action)
        return Instant(self.timestamp, action, state)

    def __str__(self) -> str:
        return f"{self.timestamp}.{self.action} ({self.state.value.lower()})"


def parse_instant_file_name(
    name: str, layout: int = 1, modification_time: datetime | None = None
) -> Instant | None:
    """The instant a timeline file name records, or None when it is not an instant file.

    Returns None for other files of the timeline folder (``hoodie.properties``, temporary
    files, folders) and for names of unknown actions or states, which Hudi also ignores.
    The ``<ts>_<completionTs>`` form is accepted for layout 2 only.
    """
    m = _NAME.match(name)
    if m is None:
        return None
    ts, completion, action, suffix = m.groups()
    if completion is not None and layout < 2:
        return None
    if suffix is None:
        if action == "inflight":
            # Layout 1 quirk kept in layout 2: a plain commit goes inflight as <ts>.inflight.
            return Instant(ts, Action.COMMIT, State.INFLIGHT, None, name, modification_time)
        if action not in _ACTIONS:
            return None
        return Instant(ts, action, State.COMPLETED, completion, name, modification_time)
    if completion is not None or action not in _ACTIONS or suffix not in _STATE_SUFFIX:
        return None
    return Instant(ts, action, _STATE_SUFFIX[suffix], None, name, modification_time)


def instant_file_name(
    timestamp: str, action: str, state: State, completion_time: str | None = None
) -> str:
    """The file name of ``action`` at ``timestamp`` in ``state``.

    Layout 1 names unless ``completion_time`` is given for a completed instant (layout 2:
    ``<ts>_<completionTs>.<action>``). Completed ``compaction``, ``logcompaction`` and
    ``clustering`` take the names ``commit``, ``deltacommit`` and ``replacecommit``.

    Raises:
        ValueError: ``action`` is not a timeline action.
    """
    if action not in _ACTIONS:
        raise ValueError(f"{action!r} is not a timeline action (one of {sorted(_ACTIONS)})")
    state = State(state)
    if state == State.COMPLETED:
        completed = COMPLETED_AS.get(action, action)
        if completion_time:
            return f"{timestamp}_{completion_time}.{completed}"
        return f"{timestamp}.{completed}"
    if state == State.INFLIGHT and action == Action.COMMIT:
        return f"{timestamp}.inflight"
    return f"{timestamp}.{action}.{state.value.lower()}"


def is_instant_time(value: str) -> bool:
    """True when ``value`` is a plausible instant time (digits only, at least 14 of them)."""
    # 14 digits: old second-precision tables; 17: today; more: metadata-table suffixes.
    return len(value) >= 14 and value.isascii() and value.isdigit()


_issue_lock = threading.Lock()
_last_issued = ""


def format_instant_time(moment: datetime) -> str:
    """``moment`` (converted to UTC) as a 17-digit instant time."""
    moment = moment.astimezone(UTC)
    return moment.strftime(INSTANT_TIME_FORMAT) + f"{moment.microsecond // 1000:03d}"


def parse_instant_time(value: str) -> datetime:
    """The UTC moment of instant time ``value`` (its first 17 digits).

    Raises:
        ValueError: ``value`` is not an instant time of a real date.
    """
    if not is_instant_time(value):
        raise ValueError(f"{value!r} is not an instant time (yyyyMMddHHmmssSSS)")
    digits = value[:INSTANT_TIME_LENGTH].ljust(INSTANT_TIME_LENGTH, "0")
    moment = datetime.strptime(digits[:14], INSTANT_TIME_FORMAT).replace(tzinfo=UTC)
    return moment + timedelta(milliseconds=int(digits[14:17]))


def _next_after(value: str) -> str:
    """The smallest instant time after ``value`` one millisecond on (as text, strictly greater)."""
    try:
        return format_instant_time(parse_instant_time(value) + timedelta(milliseconds=1))
    except (ValueError, OverflowError):
        # Not a calendar time: count on in the same width, or lengthen (still greater as text).
        bumped = str(int(value) + 1).zfill(len(value))
        return bumped if len(bumped) == len(value) else value + "0"


def instant_time_after(value: str) -> str:
    """The smallest instant time one millisecond after ``value`` (strictly greater as text)."""
    return _next_after(value)


def new_instant_time(after: str | None = None, now: datetime | None = None) -> str:
    """A new instant time: the current UTC time, strictly greater than ``after``.

    Also strictly greater than every time this process issued before, so two writers in
    one process never get the same time; across processes, creating the requested file
    with create-if-absent is what makes an instant unique.
    """
    global _last_issued
    candidate = format_instant_time(now or datetime.now(UTC))
    with _issue_lock:
        floor = max(after or "", _last_issued)
        if floor and candidate <= floor:
            candidate = _next_after(floor)
        _last_issued = candidate
    return candidate
