"""A version-6 archived timeline (``.hoodie/archived``) as Hudi 1.x's LSM history.

``upgrade_table`` of a table with archived instants rewrites them into one layer-0 history
file (:mod:`hudisql.table.services.archive_lsm`), as Hudi's upgrade to version 8 converts
the archive. Each completed archived instant becomes one row: its completion time is its
requested time (a version-6 archive keeps no completion times; hudisql's readers assume the
same of an instant the history lacks), ``metadata`` the completed state's content as
version 8 keeps it (Avro commit metadata; clean and rollback metadata as they were),
``plan`` a compaction's or clean's plan. An archived record hudisql cannot re-encode is
refused by name, with the table unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hudisql.errors import TableServiceError
from hudisql.table.format.archive_format import ArchivedEntry, archive_files, read_archive_file
from hudisql.table.format.commit_metadata import ROLLBACK_METADATA_SCHEMA, write_avro_container
from hudisql.table.format.commit_metadata_avro import encode_commit_metadata
from hudisql.table.format.instant import Action, State
from hudisql.table.format.service_plans import (
    CLEAN_METADATA_SCHEMA,
    CLEANER_PLAN_SCHEMA,
    COMPACTION_PLAN_SCHEMA,
)
from hudisql.table.io.storage import Storage
from hudisql.table.services.archive_lsm import LSM_SCHEMA, write_history_file

__all__ = ["archived_rows", "convert_archive"]

# Archived record field -> the schema its Avro container is written with.
_METADATA_FIELDS: dict[str, tuple[str, str]] = {
    Action.CLEAN: ("hoodieCleanMetadata", CLEAN_METADATA_SCHEMA),
    Action.ROLLBACK: ("hoodieRollbackMetadata", ROLLBACK_METADATA_SCHEMA),
}
_PLAN_FIELDS: dict[str, tuple[str, str]] = {
    Action.COMPACTION: ("hoodieCompactionPlan", COMPACTION_PLAN_SCHEMA),
    Action.CLEAN: ("hoodieCleanerPlan", CLEANER_PLAN_SCHEMA),
}


def _container(record: Mapping[str, Any], field: str, schema: str, what: str) -> bytes | None:
    body = record.get(field)
    if body is None:
        return None
    try:
        return write_avro_container(schema, [dict(body)])
    except (ValueError, TypeError, KeyError) as exc:
        raise TableServiceError(
            f"archived {what} cannot be rewritten for version 8 ({exc}); upgrade the table "
            "with Apache Hudi 1.x") from exc


def archived_rows(storage: Storage, archive_dir: str) -> dict[str, list[object]] | None:
    """The LSM rows of every completed instant of the version-6 archive, by instant time
    (None when there is no archive).

    Raises:
        TableServiceError: an archived record hudisql cannot rewrite (names it).
        CorruptTableError: a damaged archive file.
    """
    by_time: dict[str, list[ArchivedEntry]] = {}
    for _, rel in archive_files(storage, archive_dir):
        for entry in read_archive_file(storage, rel):
            by_time.setdefault(entry.timestamp, []).append(entry)
    rows: dict[str, list[object]] = {f.name: [] for f in LSM_SCHEMA}
    for ts in sorted(by_time):
        entries = by_time[ts]
        done = [e for e in entries if e.state == State.COMPLETED]
        if not done:
            continue
        entry = done[-1]
        what = f"instant {ts}.{entry.action}"
        commit = entry.commit_metadata()
        if commit is not None:
            metadata: bytes | None = encode_commit_metadata(
                commit, entry.action == Action.REPLACECOMMIT)
        elif entry.action in _METADATA_FIELDS:
            metadata = _container(entry.record, *_METADATA_FIELDS[entry.action], what)
        else:
            metadata = None
        plan = None
        for e in entries:
            if e.state == State.REQUESTED and e.action in _PLAN_FIELDS:
                plan = _container(e.record, *_PLAN_FIELDS[e.action], what)
        rows["instantTime"].append(ts)
        rows["completionTime"].append(ts)
        rows["action"].append(entry.action)
        rows["metadata"].append(metadata)
        rows["plan"].append(plan)
        rows["version"].append(1)
    return rows if rows["instantTime"] else None


def convert_archive(storage: Storage, archive_dir: str, history: str,
                    on_step: Callable[[str, str], None]) -> int:
    """Write the version-6 archive as the history's first snapshot; returns the instants
    written (0: no archive). Re-running replaces the snapshot (``manifest_1``)."""
    rows = archived_rows(storage, archive_dir)
    if rows is None:
        return 0
    write_history_file(storage, history, rows, 0, [])
    on_step("history", str(len(rows["instantTime"])))
    return len(rows["instantTime"])
