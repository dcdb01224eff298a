"""A table's indexes: create, drop, list and refresh them (``handle.indexes``; the SQL too).

What ``CREATE INDEX`` means follows Apache Hudi (``IndexCommands.scala``): without USING, an
index on exactly the record key columns is the record index (named ``record_index``), on
another column a secondary index (``secondary_index_<name>``); ``USING column_stats |
bloom_filters`` with an ``expr`` option is an expression index (``expr_index_<name>``).
Beyond Hudi, ``USING column_stats`` on plain columns (no ``expr``, or ``identity``) builds
the table's ``column_stats`` partition over those columns, and ``USING bloom_filters`` on
the record key the table's ``bloom_filters`` partition, their definitions remembering the
name given (on another column it is an identity expression index, as in Hudi). A
secondary index needs the record index to find rows; it is built in the same run when the
table has none. Every definition (an expression's function, options and column type too:
:class:`~hudisql.metadata.expressions.IndexExpression`) is checked before anything is
written, so a refused statement leaves the table as it was.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hudisql.errors import (
    IndexExistsError,
    IndexingError,
    IndexNotFoundError,
    MetadataTableError,
    UnsupportedTableVersionError,
)
from hudisql.metadata.expressions import IndexExpression
from hudisql.parser.index import index_spec_problem
from hudisql.services.index_build import (
    EXPR_INDEX_PREFIX,
    SECONDARY_INDEX_PREFIX,
    IndexBackend,
    PartitionRequest,
    check_buildable,
    new_definition,
)
from hudisql.services.indexer import Indexer, ProgressCallback
from hudisql.table.format.index_plan import IndexCommitMetadata, pending_indexing
from hudisql.table.format.properties import WRITABLE_VERSIONS
from hudisql.table.format.schema import META_COLUMNS
from hudisql.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Metadata partitions that are indexes without a user-given name (DROP INDEX takes these).
UNNAMED_INDEXES = ("record_index", "column_stats", "bloom_filters", "partition_stats")
RECORD_INDEX = "record_index"
COLUMN_STATS = "column_stats"
BLOOM_FILTERS = "bloom_filters"
#: The index option recording the name CREATE INDEX gave an unnamed partition (column_stats).
INDEX_NAME_OPTION = "hudisql.index.name"


@dataclass(frozen=True)
class IndexInfo:
    """One index as SHOW INDEXES lists it.

    ``name`` is the name CREATE INDEX gave it (``idx_rider``; an index built by
    ``run_indexer`` without one: its partition, ``column_stats``); ``index_type`` the type
    (``secondary_index``, ``column_stats``, ...); ``columns`` the indexed columns;
    ``state`` is ``built`` or ``building`` (readers use only built ones); ``partition`` its
    metadata partition (``secondary_index_idx_rider``).
    """

    name: str
    index_type: str
    columns: tuple[str, ...]
    state: str
    partition: str = ""
    #: Every name the index answers to (its partition, the name CREATE INDEX gave it).
    names: frozenset[str] = field(default=frozenset(), compare=False)

    def as_row(self) -> tuple[str, str, str, str, str]:
        """(index_name, index_type, col_name, state, metadata_partition): SHOW INDEXES'
        columns."""
        return (self.name, self.index_type, ",".join(self.columns), self.state,
                self.partition or self.name)


@dataclass
class TableIndexes:
    """The indexes of the Hudi table at ``path`` (``session.table("t").indexes``).

    ``options`` are the writer options (the lock provider among them); builds run as Spark
    jobs in ``spark`` and report ``(file slices done, total)`` to ``on_progress``.
    """

    path: str
    options: Mapping[str, str]
    spark: SparkSession | None = None
    on_progress: ProgressCallback | None = None
    backend: IndexBackend = field(default_factory=IndexBackend)

    def indexer(self) -> Indexer:
        """The RFC-45 indexer of this table with these options."""
        return Indexer(self.path, self.options, self.spark, self.on_progress,
                       backend=self.backend)

    def _table(self) -> HudiTable:
        table = HudiTable.open(self.path)
        if table.properties.version not in WRITABLE_VERSIONS:
            raise UnsupportedTableVersionError(
                f"table {table.name} is version {table.properties.version}: hudisql builds "
                f"indexes on versions {', '.join(map(str, WRITABLE_VERSIONS))} only; index it with "
                "Apache Hudi 1.x")
        return table

    # ------------------------------------------------------------------ create

    def create(self, name: str, columns: Sequence[str], using: str | None = None,
               options: Mapping[str, str] | None = None, *,
               if_not_exists: bool = False) -> IndexCommitMetadata | None:
        """Create and build an index (RFC-45: scheduled, built, caught up, committed).

        Example::

            t.indexes.create("idx_rider", ["rider"])                   # secondary index
            t.indexes.create("record_index", ["uuid"])                 # record index
            t.indexes.create("idx_day", ["ts"], using="column_stats",
                             options={"expr": "from_unixtime", "format": "yyyy-MM-dd"})

        Returns:
            The indexing commit's metadata (None: ``if_not_exists`` and the index exists).

        Raises:
            IndexingError: a malformed definition, an unknown column, a record index not
                named record_index, an index on part of the record key.
            IndexExistsError: an index of that name exists (without ``if_not_exists``).
            LockError: no lock provider is configured.
        """
        options = dict(options or {})
        using = using.lower() if using else None
        table = self._table()
        label = f"index {name} on table {table.name}"
        problem = index_spec_problem(using, list(columns), options)
        if problem is not None:
            raise IndexingError(f"{label}: {problem[0]}")
        resolved = self._check_columns(table, label, columns)
        requests = self._requests(table, label, name, resolved, using, options)
        for request in requests:
            check_buildable(request, label)
        existing = self._existing_name(table, name, requests[-1].partition)
        if existing is not None:
            if if_not_exists:
                return None
            if existing.state == "building":
                raise IndexExistsError(
                    f"{label}: index {existing.name} is being built (or a run that stopped "
                    f"left it half-built); finish it with CALL run_indexer(table => "
                    f"'{table.name}', mode => 'execute'), or DROP INDEX {name} ON {table.name}")
            raise IndexExistsError(
                f"{label}: the table has index {existing.name} already; DROP INDEX {name} ON "
                f"{table.name} first, or write CREATE INDEX IF NOT EXISTS")
        return self._build(requests)

    def _build(self, requests: builtins.list[PartitionRequest]) -> IndexCommitMetadata | None:
        indexer = self.indexer()
        instant = indexer.schedule(requests)
        if instant is None:
            return None
        return indexer.execute(instant.timestamp)  # rolls the instant back if it fails

    @staticmethod
    def _check_columns(table: HudiTable, label: str, columns: Sequence[str]) -> builtins.list[str]:
        """The columns as the table spells them.

        Raises:
            IndexingError: a column the table does not have (meta columns included).
        """
        names = [f for f in table.schema.names if f not in META_COLUMNS]
        by_lower = {n.lower(): n for n in names}
        resolved = []
        for column in columns:
            top, _, rest = column.partition(".")
            found = by_lower.get(top.lower())
            if found is None:
                raise IndexingError(
                    f"{label}: column {column} is not a column of the table; its columns are "
                    f"{', '.join(names)}")
            resolved.append(found + ("." + rest if rest else ""))
        return resolved

    def _requests(self, table: HudiTable, label: str, name: str, columns: builtins.list[str],
                  using: str | None, options: Mapping[str, str]) -> builtins.list[PartitionRequest]:
        """The metadata partitions the index needs, the index's own last."""
        keys = table.properties.record_key_fields
        lowered = {c.lower() for c in columns}
        key_set = {k.lower() for k in keys}
        if using is not None:
            expr = next((v for k, v in options.items() if k.lower() == "expr"), "identity")
            identity = expr.lower() == "identity"
            named = {**options, INDEX_NAME_OPTION: name}
            if using == "column_stats" and identity:
                # Plain columns: the table's column stats index, kept by every commit.
                definition = new_definition(COLUMN_STATS, using, columns, named)
                return [PartitionRequest(COLUMN_STATS, definition)]
            if using == "bloom_filters" and identity and lowered == key_set:
                # The record key: the table's bloom filter index (Hudi's bloom_filters).
                definition = new_definition(BLOOM_FILTERS, using, columns, named)
                return [PartitionRequest(BLOOM_FILTERS, definition)]
            if len(columns) != 1:
                raise IndexingError(
                    f"{label}: an expression index ({using}, expression {expr}) covers exactly "
                    "one column; create one index per column")
            self._check_expression(table, label, columns[0], expr, options)
            definition = new_definition(EXPR_INDEX_PREFIX + name, using, columns, options)
            return [PartitionRequest(EXPR_INDEX_PREFIX + name, definition)]
        if lowered == key_set:
            if name != RECORD_INDEX:
                raise IndexingError(
                    f"{label}: an index on the record key ({', '.join(keys)}) is the record "
                    f"index; name it {RECORD_INDEX} (Hudi's rule)")
            return [PartitionRequest(RECORD_INDEX)]
        if lowered & key_set:
            raise IndexingError(
                f"{label}: columns {', '.join(columns)} mix record key fields and other "
                f"columns; index the whole record key ({', '.join(keys)}) as {RECORD_INDEX}, "
                "or one non-key column as a secondary index")
        if len(columns) != 1:
            raise IndexingError(
                f"{label}: a secondary index covers exactly one column; create one per column")
        if name == RECORD_INDEX:
            raise IndexingError(
                f"{label}: {RECORD_INDEX} is the record index's name; it indexes the record "
                f"key ({', '.join(keys)}); give the secondary index another name")
        partition = SECONDARY_INDEX_PREFIX + name
        definition = new_definition(partition, "secondary_index", columns, options)
        requests = [PartitionRequest(partition, definition)]
        props = table.properties
        if RECORD_INDEX not in props.metadata_partitions + props.metadata_partitions_inflight:
            requests.insert(0, PartitionRequest(RECORD_INDEX))
        return requests

    @staticmethod
    def _check_expression(table: HudiTable, label: str, column: str, expr: str,
                          options: Mapping[str, str]) -> None:
        """Refuse an expression hudisql does not compute, or a column it does not apply to.

        Raises:
            IndexingError: the function, its options or the column's type.
        """
        try:
            expression = IndexExpression.of(expr, options)
            if "." in column or column not in table.schema.names:
                raise MetadataTableError(
                    f"column {column} is nested: expression indexes take top-level columns")
            expression.check_input(column, table.schema.field(column).type)
        except MetadataTableError as exc:
            raise IndexingError(f"{label}: {exc}") from None

    def _existing_name(self, table: HudiTable, name: str, partition: str) -> IndexInfo | None:
        """The existing index (built or building) ``name`` would clash with."""
        for info in self._infos(table, hide_files=False):
            if info.partition == partition or name in info.names:
                return info
        return None

    # ------------------------------------------------------------------ list

    def list(self) -> builtins.list[IndexInfo]:
        """The table's indexes, built and building (the ``files`` listing is not one)."""
        return self._infos(HudiTable.open(self.path), hide_files=True)

    def _infos(self, table: HudiTable, hide_files: bool) -> builtins.list[IndexInfo]:
        props = table.properties
        definitions = self.backend.definitions(table)
        pending = {p for i in pending_indexing(table.timeline) for p in i.plan.partitions}
        states = {p: "built" for p in props.metadata_partitions}
        states.update({p: "building" for p in props.metadata_partitions_inflight})
        states.update({p: "building" for p in pending if p not in states})
        infos = []
        for partition, state in sorted(states.items()):
            if hide_files and partition == "files":
                continue
            definition = definitions.get(partition)
            given = _short_name(partition)
            if definition is not None:
                given = definition.index_options.get(INDEX_NAME_OPTION) or given
                infos.append(IndexInfo(given, definition.index_type,
                                       tuple(definition.source_fields), state, partition,
                                       frozenset({partition, given})))
            else:
                infos.append(IndexInfo(given, partition, (), state, partition,
                                       frozenset({partition, given})))
        return infos

    # ------------------------------------------------------------------ drop / refresh

    def _partition_of(self, table: HudiTable, name: str) -> str | None:
        infos = self._infos(table, hide_files=True)
        exact = [i.partition for i in infos if i.partition == name]
        given = [i.partition for i in infos if name in i.names]
        found = exact or given
        return found[0] if found else None

    def drop(self, name: str, *, if_exists: bool = False) -> bool:
        """Drop an index (its metadata partition and definition); returns whether it existed.

        Raises:
            IndexNotFoundError: no such index (without ``if_exists``).
        """
        table = self._table()
        partition = self._partition_of(table, name)
        if partition is None:
            if if_exists:
                return False
            raise self._missing(table, name, "DROP INDEX")
        self.indexer().drop([partition])
        return True

    def refresh(self, name: str) -> IndexCommitMetadata | None:
        """Rebuild an index from the data table (drop, then build it again).

        Raises:
            IndexNotFoundError: no such index.
        """
        table = self._table()
        partition = self._partition_of(table, name)
        if partition is None:
            raise self._missing(table, name, "REFRESH INDEX")
        definitions = self.backend.definitions(table)
        # Partition stats that follow the column stats' columns (versions 8/9) go with
        # them and are rebuilt with them.
        dropped = self.indexer().drop([partition], rebuilding=True)
        return self._build([PartitionRequest(p, definitions.get(p))
                            for p in dict.fromkeys([partition, *dropped])])

    def _missing(self, table: HudiTable, name: str, statement: str) -> IndexNotFoundError:
        names = ", ".join(i.name for i in self._infos(table, hide_files=True)) or "none"
        return IndexNotFoundError(
            f"{statement} {name}: table {table.name} has no index {name} (its indexes: "
            f"{names}); SHOW INDEXES FROM {table.name} lists them")

    # ------------------------------------------------------------------ run_indexer

    def run_indexer(self, mode: str, index_types: Sequence[str] = (),
                    instant_time: str | None = None) -> builtins.list[str]:
        """Hudi's HoodieIndexer as a call: ``schedule``, ``execute``, ``scheduleAndExecute``
        or ``dropindex`` the metadata partitions of ``index_types`` (``COLUMN_STATS``, ...).

        Returns:
            The instant time scheduled or executed, or the partitions dropped.

        Raises:
            IndexingError: an unknown mode; ``execute`` with nothing pending.
        """
        self._table()
        partitions = [t.lower() for t in index_types]
        indexer = self.indexer()
        mode = mode.lower()
        if mode == "dropindex":
            return indexer.drop(partitions)
        if mode in ("schedule", "scheduleandexecute"):
            instant = indexer.schedule([PartitionRequest(p) for p in partitions])
            if instant is None:
                return []
            if mode == "schedule":
                return [instant.timestamp]
            instant_time = instant.timestamp
        elif mode != "execute":
            raise IndexingError(f"run_indexer mode {mode!r} is unknown; use schedule, execute, "
                                "scheduleAndExecute or dropindex")
        pending = pending_indexing(HudiTable.open(self.path).timeline)
        chosen = instant_time or (pending[0].instant.timestamp if pending else None)
        if chosen is None:
            raise IndexingError(
                f"table {self.path} has no pending indexing instant to execute; schedule one "
                "with mode => 'schedule', index_types => '...'")
        indexer.execute(chosen)
        return [chosen]


def _short_name(partition: str) -> str:
    for prefix in (SECONDARY_INDEX_PREFIX, EXPR_INDEX_PREFIX):
        if partition.startswith(prefix):
            return partition[len(prefix):]
    return partition
