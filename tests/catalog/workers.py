"""Code the multi-process catalog tests run in spawned processes (one catalog each).

``consistency_worker`` plays its part in a scripted sequence of rounds; barriers force the
interleaving of writes and reads, and every read is checked against the statement's
ValidWriteIdList and against the content that the write id it reflects produced.
"""

from __future__ import annotations

import json
import random
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hudisql.catalog import (
    Comparison,
    SqlCatalog,
    StatementSnapshot,
    TableEntry,
    TableName,
    TimelineSummary,
)
from hudisql.errors import HudiSqlError, TableAlreadyExistsError, TableNotFoundError

BARRIER_TIMEOUT = 120.0
#: Names with quotes, semicolons, dots and non-ASCII letters, used literally.
BASE_NAMES = ["t'0", "t;1", "t.2", "tü3"]
KINDS = ["commit", "schema", "rename", "commit", "recreate", "alter"]

Fingerprint = tuple[Any, ...]


def plan(rounds: int, seed: int = 7) -> list[tuple[str, int]]:
    """The scripted operations: (kind, table index) per round, the same in every process."""
    rng = random.Random(seed)
    return [(KINDS[r % len(KINDS)], rng.randrange(len(BASE_NAMES))) for r in range(rounds)]


def fingerprint(entry: TableEntry) -> Fingerprint:
    """What must match between two reads of the same table version."""
    return (entry.table_id, entry.name, entry.location, entry.schema,
            tuple(sorted(entry.properties.items())), entry.timeline)


@dataclass
class Tally:
    """One process's counts."""

    reads: int = 0
    stale: int = 0
    dropped: int = 0
    unchanged_reads: int = 0
    unchanged_hits: int = 0
    writes: int = 0
    stale_examples: list[str] = field(default_factory=list)


class Participant:
    """One process's catalog, its knowledge of every version written, and its tally."""

    def __init__(self, me: int, url: str, warehouse: str, background: bool) -> None:
        self.me = me
        props: dict[str, Any] = {"warehouse": warehouse, "poll_interval": 0.005 if background
                                 else 0}
        self.catalog = SqlCatalog(f"worker{me}", uri=url, **props)
        self.history: dict[tuple[int, int], Fingerprint] = {}
        self.tally = Tally()

    def learn(self, entry: TableEntry) -> None:
        assert entry.valid_write_ids is not None
        self.history[(entry.table_id, entry.valid_write_ids.last_committed())] = fingerprint(
            entry)

    def read_all(self, snap: StatementSnapshot, names: list[TableName],
                 unchanged: set[TableName] | None = None) -> None:
        """Read every table of ``snap`` and check each read (``unchanged``: must be hits)."""
        for name in names:
            before = self.catalog.stats().hits
            self.tally.reads += 1
            try:
                entry = self.catalog.resolve(snap, name)
            except TableNotFoundError:
                self.tally.dropped += 1  # dropped after the snapshot was taken
                continue
            self.check(snap, name, entry)
            if unchanged is not None and name in unchanged:
                self.tally.unchanged_reads += 1
                self.tally.unchanged_hits += self.catalog.stats().hits - before

    def check(self, snap: StatementSnapshot, name: TableName, entry: TableEntry) -> None:
        wanted = snap.get(name)
        assert wanted.valid_write_ids is not None and entry.valid_write_ids is not None
        relation = entry.valid_write_ids.compare(wanted.valid_write_ids)
        key = (entry.table_id, entry.valid_write_ids.last_committed())
        problems = []
        if entry.table_id != wanted.table_id:
            problems.append(f"table id {entry.table_id} != {wanted.table_id}")
        if relation in (Comparison.OLDER, Comparison.INCOMPARABLE):
            problems.append(f"entry {entry.valid_write_ids} {relation.name} than "
                            f"{wanted.valid_write_ids}")
        if self.history.get(key) != fingerprint(entry):
            problems.append(f"content of {key} differs from what that write id wrote")
        if problems:
            self.tally.stale += 1
            if len(self.tally.stale_examples) < 5:
                self.tally.stale_examples.append(f"{name}: " + "; ".join(problems))


def consistency_worker(me: int, workers: int, url: str, warehouse: str, rounds: int,
                       background: bool, barrier: Any, inboxes: list[Any], results: Any) -> None:
    """Play process ``me`` of the scripted rounds; put ("ok", tally, stats) on ``results``."""
    part: Participant | None = None
    try:
        part = Participant(me, url, warehouse, background)
        _play(part, me, workers, rounds, barrier, inboxes)
        stats = part.catalog.stats()
        results.put(("ok", me, part.tally.__dict__, stats.__dict__))
    except BaseException:
        barrier.abort()
        results.put(("error", me, traceback.format_exc(), None))
    finally:
        if part is not None:
            part.catalog.close()


def _publish(part: Participant, entry: TableEntry, inboxes: list[Any]) -> None:
    part.learn(entry)
    for i, box in enumerate(inboxes):
        if i != part.me:
            box.put(entry.to_json() | {"as_of_event": entry.as_of_event})


def _receive(part: Participant, inbox: Any, count: int) -> None:
    """Learn the next ``count`` versions another process wrote (a queue's put is not
    delivered at once, so wait for each)."""
    for _ in range(count):
        data = inbox.get(timeout=BARRIER_TIMEOUT)
        part.learn(TableEntry.from_json(data, data["as_of_event"]))


def _play(part: Participant, me: int, workers: int, rounds: int, barrier: Any,
          inboxes: list[Any]) -> None:
    cat = part.catalog
    names = [TableName("default", n) for n in BASE_NAMES]

    def wait() -> None:
        barrier.wait(BARRIER_TIMEOUT)

    if me == 0:
        for n in names:
            _publish(part, cat.create_table(n, schema=json.dumps({"v": 0})), inboxes)
    wait()
    _receive(part, inboxes[me], 0 if me == 0 else len(names))
    cat.sync()
    for r, (kind, index) in enumerate(plan(rounds)):
        writer = r % workers == me
        target = names[index]
        # 1. A statement begins before the write.
        s0 = cat.begin_statement(names)
        part.read_all(s0, names)
        wait()
        # 2. The writer opens its write id (data commit or schema change).
        write = cat.allocate_write_id(target) if writer and kind in ("commit", "schema") \
            else None
        wait()
        # 3. A statement begins while the write id is open: nothing committed since step 1.
        s1 = cat.begin_statement(names)
        part.read_all(s1, names)
        wait()
        # 4. The writer commits (or runs its DDL) and tells the others what it wrote.
        new_names = _rename(names, index, r) if kind == "rename" else names
        if writer:
            part.tally.writes += 1
            _publish(part, _write(cat, kind, target, new_names[index], write, r), inboxes)
        wait()
        _receive(part, inboxes[me], 0 if writer else 1)
        # 5. The statements that began before the commit read again.
        part.read_all(s0, names)
        part.read_all(s1, names)
        names = new_names
        unchanged = set(names) - {names[index]}
        # 6. A new statement: the changed table must come fresh, the others from the cache.
        s2 = cat.begin_statement(names)
        part.read_all(s2, names, unchanged)
        # 7. Once the cache caught up with the log, every table is served from it.
        cat.sync()
        s3 = cat.begin_statement(names)
        part.read_all(s3, names, set(names))
        wait()


def _rename(names: list[TableName], index: int, r: int) -> list[TableName]:
    out = list(names)
    out[index] = TableName("default", f"{BASE_NAMES[index]}_r{r}")
    return out


def _write(cat: SqlCatalog, kind: str, target: TableName, new_name: TableName,
           write: Any, r: int) -> TableEntry:
    if kind == "commit":
        return cat.commit_write(write, set_properties={"marker": str(write.write_id)},
                                timeline=TimelineSummary(f"{r:017d}", r, 0, f"m{r}"))
    if kind == "schema":
        return cat.commit_write(write, schema=json.dumps({"v": r, "cols": list(range(r % 5))}))
    if kind == "rename":
        return cat.rename_table(target, new_name)
    if kind == "alter":
        return cat.alter_table(target, set_properties={"ddl": str(r)})
    cat.drop_table(target)
    return cat.create_table(target, schema=json.dumps({"v": r, "recreated": True}))


def create_race_worker(url: str, warehouse: str, name: tuple[str, str], barrier: Any,
                       results: Any) -> None:
    """Create table ``name`` right after the barrier; report "created", "exists" or an error."""
    try:
        with SqlCatalog("race", uri=url, warehouse=warehouse, poll_interval=0) as cat:
            barrier.wait(BARRIER_TIMEOUT)
            try:
                entry = cat.create_table(name, schema="{}")
                results.put(("created", entry.table_id))
            except TableAlreadyExistsError as exc:
                results.put(("exists", str(exc)))
    except HudiSqlError as exc:
        results.put(("error", repr(exc)))
    except BaseException:
        barrier.abort()
        results.put(("error", traceback.format_exc()))


def lock_counter_worker(url: str, key: str, rounds: int, barrier: Any, counter: str,
                        log: str, results: Any) -> None:
    """Increment a shared counter file ``rounds`` times, each under the catalog lock."""
    import os

    try:
        with SqlCatalog("lock", uri=url, poll_interval=0, prewarm=False) as cat:
            provider = cat.lock_provider(lease=30)
            barrier.wait(BARRIER_TIMEOUT)
            for _ in range(rounds):
                with provider.lock(key, timeout=BARRIER_TIMEOUT):
                    with open(log, "a") as f:
                        f.write(f"enter {os.getpid()}\n")
                    value = int(Path(counter).read_text())
                    os.sched_yield()  # invite another process into the critical section
                    Path(counter).write_text(str(value + 1))
                    with open(log, "a") as f:
                        f.write(f"exit {os.getpid()}\n")
        results.put(("ok", os.getpid()))
    except BaseException:
        barrier.abort()
        results.put(("error", traceback.format_exc()))


def lock_holder_worker(url: str, key: str, lease: float, acquired: Any, release: Any,
                       crash: bool) -> None:
    """Take the lock, signal ``acquired``; then release it when told, or die holding it."""
    import os

    with (
        SqlCatalog("lock", uri=url, poll_interval=0, prewarm=False) as cat,
        cat.lock_provider(lease=lease).lock(key, timeout=BARRIER_TIMEOUT),
    ):
        acquired.set()
        if crash:
            os._exit(0)  # dies holding the lock: no release, no more heartbeats
        release.wait(BARRIER_TIMEOUT)
