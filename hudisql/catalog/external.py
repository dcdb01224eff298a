"""What an external table's own files say: its properties, schema and timeline summary.

External tables are written by other engines (Apache Hudi on Spark, ...), so the catalog
learns of their changes from storage: one listing of the timeline folder tells whether the
timeline moved (:func:`timeline_summary`), and only then are the properties and the latest
commit's schema read again (:func:`read_table_state`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from hudisql.catalog.entry import TimelineSummary
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.instant import Instant
from hudisql.table.format.properties import TableProperties
from hudisql.table.format.timeline import list_instant_files
from hudisql.table.io.storage import Storage

#: Properties not worth copying into the catalog (the checksum is the file's own business).
_SKIPPED = frozenset({"hoodie.table.checksum"})


@dataclass(frozen=True)
class TableState:
    """An external table as its files describe it."""

    properties: dict[str, str]
    schema: str | None
    timeline: TimelineSummary


def timeline_summary(storage: Storage, props: TableProperties) -> TimelineSummary:
    """The timeline's summary from one listing of its folder; ``marker`` names its file set."""
    return _summary(list_instant_files(storage, props))


def _summary(instants: list[Instant]) -> TimelineSummary:
    completed = [i for i in instants if i.is_completed]
    latest: dict[str, Instant] = {}
    for instant in instants:
        latest[instant.timestamp] = instant
    pending = sum(1 for i in latest.values() if not i.is_completed)
    digest = hashlib.sha1("\n".join(i.file_name for i in instants).encode()).hexdigest()
    return TimelineSummary(
        last_completed=completed[-1].timestamp if completed else None,
        completed=len({i.timestamp for i in completed}),
        pending=pending,
        marker=f"{len(instants)}:{digest[:16]}",
    )


def read_table_state(location: str) -> TableState:
    """Read properties, schema and timeline summary of the Hudi table at ``location``.

    The schema is the one the latest completed write recorded, else the table's create
    schema.

    Raises:
        TableNotFoundError: no Hudi table there.
        CorruptTableError: hoodie.properties or the latest commit is damaged.
        UnsupportedTableVersionError: a table version hudisql cannot read.
    """
    storage = Storage(location)
    props = TableProperties.load(storage)
    instants = list_instant_files(storage, props)
    summary = _summary(instants)
    schema = props.create_schema
    for instant in reversed(instants):
        if instant.is_completed and instant.is_write:
            rel = f"{props.timeline_dir}/{instant.file_name}"
            try:
                recorded = CommitMetadata.parse(storage.read_bytes(rel), instant.file_name).schema
            except FileNotFoundError:
                continue  # archived or cleaned between the listing and the read
            schema = recorded or schema
            break
    properties = {k: v for k, v in props.items() if k not in _SKIPPED}
    return TableState(properties, schema, summary)
