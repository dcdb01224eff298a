"""The errors hudisql raises: one short, flat hierarchy under :class:`HudiSqlError`.

Every message names what it is about (the table, the instant, the statement position)
and says what the user can do next. Callers catch :class:`HudiSqlError` for all of them.
"""

from __future__ import annotations


class HudiSqlError(Exception):
    """Base class of every error hudisql raises on purpose."""


class TableNotFoundError(HudiSqlError):
    """A name or path does not lead to a Hudi table (no ``.hoodie/hoodie.properties``)."""


class TableAlreadyExistsError(HudiSqlError):
    """A table of that name (or at that location) already exists."""


class UnsupportedTableVersionError(HudiSqlError):
    """The table's ``hoodie.table.version`` is one hudisql cannot read or write."""


class CorruptTableError(HudiSqlError):
    """A table file (hoodie.properties, an instant, commit metadata) is damaged or malformed."""


class CorruptLogBlockError(CorruptTableError):
    """A log block could not be decoded; readers skip it and report it."""


class UnsupportedFormatError(HudiSqlError):
    """A file uses a Hudi or Avro feature hudisql cannot read or write (e.g. HFile blocks)."""


class InstantExistsError(HudiSqlError):
    """An instant file already exists: another writer created it first (create-if-absent lost)."""


class InvalidInstantTransitionError(HudiSqlError):
    """A timeline transition was asked for out of order (e.g. completing a non-inflight instant)."""


class WriteError(HudiSqlError):
    """A write was refused before anything was written (bad records, bad options)."""


class CommitConflictError(HudiSqlError):
    """Two writers touched the same file groups; the later one fails and is rolled back."""


class ConcurrentSchemaEvolutionError(CommitConflictError):
    """Concurrent writers evolved the table schema incompatibly (RFC-82, cases 3 and 8)."""


class TableServiceError(HudiSqlError):
    """A table service (compaction, log compaction, clean) was refused: wrong table type,
    no such pending plan, or settings that would lose data; the table is unchanged."""


class LockError(HudiSqlError):
    """The table lock could not be acquired in time, or was lost."""


class SqlParseError(HudiSqlError):
    """A statement could not be parsed; the message names line and column and shows a caret."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class CatalogError(HudiSqlError):
    """The catalog database refused or could not complete a request."""


class CatalogUnavailableError(CatalogError):
    """The catalog database is unreachable or locked; nothing was changed."""


class MetadataTableError(HudiSqlError):
    """The metadata table (``.hoodie/metadata``) or its configuration is wrong or unusable."""


class ReadOptionError(HudiSqlError):
    """A read's query type, time range or instant does not fit the table (nothing was read)."""


class IndexingError(HudiSqlError):
    """An index could not be defined, built, dropped or found; a failed build is rolled back."""


class IndexExistsError(IndexingError):
    """CREATE INDEX names an index (or metadata partition) the table has already."""


class IndexNotFoundError(IndexingError):
    """DROP / REFRESH INDEX names an index the table does not have."""


class IndexingTimeoutError(IndexingError):
    """The indexer's catch-up waited longer than ``hoodie.metadata.index.check.timeout.seconds``
    for a pending instant; the indexing was rolled back."""


class StorageLocationError(HudiSqlError):
    """A table or warehouse location cannot be used (unknown scheme, missing bucket, refused
    credentials, credentials written into the location); nothing was written there."""


class StreamingCheckpointError(HudiSqlError):
    """A streaming micro-batch does not follow the batches its writer committed (a reset
    checkpoint, or two queries with one identifier); nothing was written."""


class StreamingWriteError(HudiSqlError):
    """A streaming micro-batch failed after its retries; the query stops with the cause."""
