"""The table services call the commit participants as the txn seam says: ``on_commit``
under the lock before the instant completes (raising aborts it), ``on_rollback`` when a
run is rolled back or reverted."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hudisql.services.compaction import run_compaction
from hudisql.services.log_compaction import run_log_compaction
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Action, Instant
from hudisql.table.table import HudiTable
from tests.services.kit import mor_table, rows, upserts


class Refused(Exception):
    """The participant refuses the commit."""


@dataclass
class Recorder:
    """A participant that records what it is told (and can refuse a commit)."""

    refuse: bool = False
    commits: list[tuple[str, str, str | None]] = field(default_factory=list)
    rollbacks: list[str] = field(default_factory=list)

    def on_commit(self, table: HudiTable, instant: Instant, metadata: CommitMetadata) -> None:
        # Under the lock, before the instant completes.
        assert not table.reload().timeline.is_completed(instant.timestamp)
        self.commits.append((instant.timestamp, instant.action, metadata.operation_type))
        if self.refuse:
            raise Refused(instant.timestamp)

    def on_rollback(self, table: HudiTable, instant: Instant) -> None:
        self.rollbacks.append(instant.timestamp)


def test_participants_see_each_commit_and_each_rollback(tmp_path: Path) -> None:
    client = mor_table(tmp_path)
    upserts(client, 6)
    path = tmp_path / "t"
    before = rows(path)
    ok = Recorder()
    lc = run_log_compaction(HudiTable.open(str(path)), participants=[ok])
    assert lc is not None
    assert ok.commits == [(lc.instant, Action.LOGCOMPACTION, "LOG_COMPACT")]
    refusing = Recorder(refuse=True)
    upserts(client, 5, start=20)
    with pytest.raises(Refused):
        run_log_compaction(HudiTable.open(str(path)), participants=[refusing])
    [(refused, _, _)] = refusing.commits
    assert refusing.rollbacks == [refused]
    assert refused in HudiTable.open(str(path)).timeline.rolled_back_instants()
    with pytest.raises(Refused):
        run_compaction(HudiTable.open(str(path)), participants=[refusing])
    compaction = refusing.commits[-1][0]
    assert refusing.commits[-1][1:] == (Action.COMPACTION, "COMPACT")
    assert refusing.rollbacks[-1] == compaction
    instant = HudiTable.open(str(path)).timeline.get(compaction)
    assert instant is not None and instant.is_requested  # reverted, to run again
    done = run_compaction(HudiTable.open(str(path)), compaction, participants=[ok])
    assert done is not None and ok.commits[-1] == (compaction, Action.COMPACTION, "COMPACT")
    assert {r["id"] for r in rows(path)} == {r["id"] for r in before}
