"""Shared helpers of the table-service tests: real MOR tables written by the core's writer,
and reads through hudisql and hudi-rs compared row for row."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from hudi import HudiReadOptions
from hudi import HudiTable as RsTable

import hudisql
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.txn.writer import WriteClient

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string()),
                    ("city", pa.string())])
CITIES = ("sf", "la")
KEY = "_hoodie_record_key"
FILE_NAME = "_hoodie_file_name"


def rec(i: int, ts: int, v: str) -> dict[str, Any]:
    """Record ``k<i>`` in city ``CITIES[i % 2]``."""
    return {"id": f"k{i}", "ts": ts, "v": v, "city": CITIES[i % 2]}


def mor_table(root: Path, keys: int = 6, table_type: str = "MERGE_ON_READ",
              precombine: str | None = "ts", version: int | None = None) -> WriteClient:
    """A table with ``keys`` inserted records (one file group per city), at ``version``
    (the default version of new tables when None)."""
    options = {} if version is None else {"hoodie.write.table.version": str(version)}
    table = create_table(root / "t", "t", SCHEMA, "id", ["city"], precombine, table_type,
                         options=options)
    client = WriteClient(table)
    client.insert([rec(i, 1, "ins") for i in range(keys)])
    return client


def upserts(client: WriteClient, rounds: int, keys: int = 6, start: int = 2) -> list[str]:
    """``rounds`` upserts, each touching every key (one log file per file group each)."""
    done = []
    for r in range(rounds):
        result = client.upsert([rec(i, start + r, f"u{r}-{i}") for i in range(keys)])
        done.append(result.instant_time)
    return done


def rows(path: Path | str, as_of: str | None = None) -> list[dict[str, Any]]:
    """hudisql's rows of the table, sorted by key, without ``_hoodie_file_name`` (a
    compaction moves rows to a new file; their data and commit time stay)."""
    table = hudisql.read_table(str(path), as_of=as_of)
    return table.drop_columns([FILE_NAME]).sort_by(KEY).to_pylist()


def slices(path: Path | str) -> list[tuple[str, str, tuple[str, ...]]]:
    """hudisql's latest file slices: (file id, base file, log files), sorted."""
    return sorted((s.file_id, s.base_file.name if s.base_file else "",
                   tuple(sorted(log.name for log in s.log_files)))
                  for s in HudiTable.open(str(path)).file_system_view().latest_file_slices())


def rs_slices(path: Path | str) -> list[tuple[str, str, tuple[str, ...]]]:
    """hudi-rs's latest file slices, the same way (through the metadata table where
    hudi-rs lists files by it: table versions 8 and 9)."""
    return sorted((s.file_id, s.base_file_name or "", tuple(sorted(s.log_file_names)))
                  for s in RsTable(str(path)).get_file_slices())


def rs_rows(path: Path | str, as_of: str | None = None) -> list[dict[str, Any]]:
    """hudi-rs's rows of the table (as of ``as_of``), sorted by key."""
    options = HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = RsTable(str(path)).read(options)
    if not batches:
        return []
    return pa.Table.from_batches(batches).drop_columns([FILE_NAME]).sort_by(KEY).to_pylist()


def write_instants(path: Path | str) -> list[str]:
    """The completed write instants of the table."""
    table = HudiTable.open(str(path))
    return [i.timestamp for i in table.timeline.completed(["commit", "deltacommit"])]


def snapshots(path: Path | str) -> dict[str, list[dict[str, Any]]]:
    """hudisql's rows as of every completed write instant, and now (key "")."""
    out = {ts: rows(path, ts) for ts in write_instants(path)}
    out[""] = rows(path)
    return out


def rs_snapshots(path: Path | str) -> dict[str, list[dict[str, Any]]]:
    """hudi-rs's rows as of every completed write instant, and now (key "")."""
    out = {ts: rs_rows(path, ts) for ts in write_instants(path)}
    out[""] = rs_rows(path)
    return out


def sliced_past(path: Path | str) -> set[str]:
    """The write instants as of which hudi-rs reads a version 8/9 table differently from
    hudisql, by rule rather than by a bug of either (docs/FORMAT.md, "time travel").

    A deltacommit D that completed after a compaction B was requested has its logs on B's
    slice. As of a time T with D <= T < B, hudi-rs (like Hudi 1.x's file index) keeps only
    slices based at or before T, so D's logs drop out; hudisql reads every completed write
    requested by T, D included."""
    table = HudiTable.open(str(path))
    if table.properties.version < 8:
        return set()
    completed = table.timeline.completed()
    writes = [i for i in completed if i.action == "deltacommit"]
    bases = [i.timestamp for i in completed if i.action in ("commit", "replacecommit")]
    return {t for t in write_instants(path)
            if any(d.timestamp <= t < b <= (d.completion_time or d.timestamp)
                   for d in writes for b in bases)}


def assert_readers_agree(path: Path | str) -> dict[str, list[dict[str, Any]]]:
    """hudisql's and hudi-rs's rows agree as of every write instant and now, except as of
    the instants :func:`sliced_past` names; returns hudisql's snapshots."""
    ours = snapshots(path)
    theirs = rs_snapshots(path)
    for ts in sliced_past(path):
        del theirs[ts]
    assert theirs == {ts: got for ts, got in ours.items() if ts in theirs}
    return ours


def files(path: Path | str) -> dict[str, bytes]:
    """Every file below the table, with its bytes (to check a refused call changed nothing)."""
    root = Path(path)
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def upgrade_refused_while_pending(root: Path | str, to_version: int) -> None:
    """Check ``CALL upgrade_table`` is refused while an instant is pending and changes no
    byte, then remove that instant again."""
    import pytest

    from hudisql.errors import TableServiceError
    from hudisql.services.upgrade import run_upgrade
    from hudisql.table.format.instant import Action

    pending = HudiTable.open(str(root)).timeline.create_requested(Action.DELTACOMMIT)
    unchanged = files(root)
    with pytest.raises(TableServiceError, match=f"pending instants {pending.timestamp}"):
        run_upgrade(HudiTable.open(str(root)), to_version)
    assert files(root) == unchanged
    HudiTable.open(str(root)).timeline.delete_pending(pending)


def crash_at(event: str) -> Callable[[str, str], None]:
    """A step hook raising :class:`Crash` at ``event``."""
    def hook(name: str, instant: str) -> None:
        if name == event:
            raise Crash(f"{event} {instant}")
    return hook


class Crash(Exception):
    """A failure injected at one step of a table service."""
