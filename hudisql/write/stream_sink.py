"""``writeStream.format("hudi")``: each micro-batch one commit of the write pipeline, exactly once.

The design choice. Spark's Python ``DataSourceStreamWriter`` runs ``write()`` on executors
without the batch id and ``commit()`` in a worker without a SparkSession: it cannot run the
tagging join and the shuffle a Hudi write needs (see :mod:`hudisql.write.dataframe_writer`).
So a query whose format is ``hudi`` is started as a ``foreachBatch`` query instead
(:func:`install`, called by ``hudisql.connect()``): :class:`HudiStreamSink` receives each
micro-batch with its id and writes it as ``df.write.format("hudi")`` would (the same options,
table creation on the first batch, the session's defaults and, for a managed catalog table, a
catalog write id), one commit per batch, the inline table services after it
(``hoodie.compact.inline``, ``hoodie.log.compaction.inline``). With Hudi's
``hoodie.datasource.compaction.async.enable=true`` a due compaction is planned after the
batch and run in a thread while the next batches write
(:mod:`hudisql.write.stream_compaction`).

Exactly once (:mod:`hudisql.txn.stream_checkpoint`): each commit records the batch id under
Hudi's ``_hudi_streaming_sink_checkpoint``; a batch the writer committed already (Spark
replays the last batch after a restart when its commit marker is missing) is skipped, a batch
older than that is an error, and the check runs again under the table lock as the commit
completes. A failed attempt rolls its instant back; the batch is retried
``hoodie.datasource.write.streaming.retry.count`` times (default 3) after
``...retry.interval.ms`` (2000, doubling), then the query stops with the cause, unless
``...ignore.failed.batch=true`` (its rows are then lost: a warning says so).

Output modes: ``append`` writes with the options' operation (``upsert`` by default, as in
Hudi); ``complete`` replaces the table's rows with each batch (``insert_overwrite_table``, as
Hudi's sink maps it to save mode overwrite); ``update`` upserts the updated rows by record key
(Hudi's sink would overwrite the table with only them; a keyless table is refused).

On Spark Connect the ``foreachBatch`` function runs on the server, in a Python worker that
must import hudisql; it connects a hudisql session there with the client session's
warehouse, catalog and default options (see ``hudisql.session``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudisql.errors import (
    StreamingCheckpointError,
    StreamingWriteError,
    TableNotFoundError,
    WriteError,
)
from hudisql.services.maintenance import Maintenance
from hudisql.txn.stream_checkpoint import (
    BATCH_ID,
    BatchAlreadyCommittedError,
    check_batch,
    identifier_of,
)
from hudisql.write.dataframe_writer import (
    OPERATION,
    CommitterLookup,
    SaveRequest,
    recording_methods,
    save,
)
from hudisql.write.stream_compaction import (
    ASYNC_COMPACTION,
    AsyncCompactor,
    async_compaction_asked,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ASYNC_COMPACTION", "HudiStreamSink", "StreamBinder", "StreamTarget", "install"]

_LOG = logging.getLogger(__name__)

RETRY_COUNT = "hoodie.datasource.write.streaming.retry.count"
RETRY_INTERVAL_MS = "hoodie.datasource.write.streaming.retry.interval.ms"
IGNORE_FAILED_BATCH = "hoodie.datasource.write.streaming.ignore.failed.batch"
COMPACT_INLINE = "hoodie.compact.inline"
OUTPUT_MODES = ("append", "complete", "update")

#: Opens, in the process a micro-batch runs in, who commits its write: given the batch's
#: SparkSession and the sink's opaque session spec, the committer lookup ``save`` consults.
SessionOpener = Callable[["SparkSession", Any], CommitterLookup]


@dataclass(frozen=True)
class StreamTarget:
    """What a ``writeStream.format("hudi")`` query writes: a path or a table name, and how."""

    path: str | None
    table: str | None
    options: dict[str, str]
    output_mode: str = "append"
    partition_by: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The target as the user named it (for messages)."""
        return self.table or self.path or "?"


#: Given the query's SparkSession and target, the sink that writes its batches (the
#: session's: the table's path resolved, its defaults and catalog known).
StreamBinder = Callable[["SparkSession", StreamTarget], "HudiStreamSink"]


def _number(options: dict[str, str], key: str, default: int, label: str) -> int:
    text = options.get(key)
    try:
        value = default if text is None else int(str(text).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise WriteError(f"writeStream.format('hudi') to {label}: option {key}={text!r} is not "
                         "a whole number >= 0")
    return value


@dataclass
class HudiStreamSink:
    """The ``foreachBatch`` function of a hudi streaming query: writes each micro-batch to
    the table at ``path`` as one commit, exactly once (see the module docstring).

    Picklable (Spark Connect ships it to the server): ``spec`` is what ``opener`` needs to
    find or connect the hudisql session there.
    """

    path: str
    target: StreamTarget
    opener: SessionOpener
    spec: Any
    #: Sleeps between attempts (tests replace it).
    sleep: Callable[[float], None] = time.sleep
    _opened: dict[int, tuple[Any, CommitterLookup]] = field(default_factory=dict, repr=False)
    _compactor: AsyncCompactor | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        options = self.target.options
        label = self.target.label
        self.retries = max(1, _number(options, RETRY_COUNT, 3, label))
        self.interval_ms = _number(options, RETRY_INTERVAL_MS, 2000, label)
        ignore = str(options.get(IGNORE_FAILED_BATCH, "false")).strip().lower()
        if ignore not in ("true", "false"):
            raise WriteError(f"writeStream.format('hudi') to {label}: option "
                             f"{IGNORE_FAILED_BATCH}={ignore!r} is not true or false")
        self.ignore_failed = ignore == "true"
        mode = self.target.output_mode
        if mode not in OUTPUT_MODES:
            raise WriteError(f"writeStream.format('hudi') to {label}: output mode {mode!r} "
                             f"is not one of {', '.join(OUTPUT_MODES)}")
        operation = str(options.get(OPERATION) or "").strip().lower()
        if mode == "update" and operation not in ("", "upsert"):
            raise WriteError(f"writeStream.format('hudi') to {label}: output mode update "
                             f"upserts the updated rows by key, which option {OPERATION}="
                             f"{operation!r} contradicts: drop the option or use output mode "
                             "append")
        self.identifier = identifier_of(options)
        # An explicit hoodie.compact.inline=true wins: the batch that makes it due compacts.
        inline = str(options.get(COMPACT_INLINE, "false")).strip().lower() == "true"
        self.compact_async = async_compaction_asked(options, label) and not inline

    @property
    def compactor(self) -> AsyncCompactor | None:
        """The query's asynchronous compactor (None: not asked for)."""
        if self.compact_async and self._compactor is None:
            self._compactor = AsyncCompactor(self.target.label)
        return self._compactor

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_opened"] = {}  # sessions of this process stay here
        state["_compactor"] = None  # so do its threads
        return state

    def _committer_lookup(self, spark: SparkSession) -> CommitterLookup:
        found = self._opened.get(id(spark))
        if found is None or found[0] is not spark:
            found = (spark, self.opener(spark, self.spec))
            self._opened.clear()
            self._opened[id(spark)] = found
        return found[1]

    def _maintenance(self, spark: SparkSession) -> Maintenance:
        """The table's services as the committing session runs them (its options, runner,
        catalog bracket), or with the query's options alone."""
        committer = self._committer_lookup(spark)(spark, self.path)
        found = getattr(committer, "maintenance", None)
        if isinstance(found, Maintenance):
            return found
        from hudisql.services.runner import SparkRunner

        return Maintenance(self.path, dict(self.target.options), SparkRunner(spark))

    def _request(self, batch_id: int) -> SaveRequest:
        options = {**self.target.options, BATCH_ID: str(batch_id)}
        mode = "append"
        if self.target.output_mode == "complete":
            mode = "overwrite"
        elif self.target.output_mode == "update":
            options[OPERATION] = "upsert"
        return SaveRequest(self.path, mode, options, self.target.partition_by)

    def _committed(self, batch_id: int) -> str | None:
        """The instant holding ``batch_id`` when the writer committed it already; None when
        it must be written (raises StreamingCheckpointError for an older batch)."""
        from hudisql.table.table import HudiTable

        try:
            table = HudiTable.open(self.path)
        except TableNotFoundError:
            return None
        done = check_batch(table, self.identifier, batch_id)
        return None if done is None else done.instant

    def _skip(self, batch_id: int, instant: str) -> None:
        _LOG.warning("streaming write to %s: batch %d is committed already (instant %s; a "
                     "replay after a restart): skipped", self.target.label, batch_id, instant)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` (Spark's ``foreachBatch`` contract).

        Raises:
            StreamingCheckpointError: a later batch of this writer is committed (reset
                checkpoint, shared identifier); nothing written.
            StreamingWriteError: the batch failed on every attempt (each rolled back), or
                the asynchronous compaction failed (the batch is committed; a restart
                skips it and runs the compaction again).
        """
        compactor = self.compactor
        if compactor is not None:
            compactor.check()  # a failed asynchronous compaction stops the query
        done = self._committed(batch_id)
        if done is not None:
            self._skip(batch_id, done)
        else:
            self._write_once(df, batch_id)
        if compactor is not None:  # a replay too: a plan left requested runs again
            compactor.after_commit(self._maintenance(df.sparkSession), self.target.options)

    def _write_once(self, df: DataFrame, batch_id: int) -> None:
        from pyspark import StorageLevel

        # Computed once for the write's jobs (staging, tagging, files). An empty batch is an
        # empty commit that records the batch, as Hudi's sink commits it (no extra job asks).
        frame = df.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            self._write(frame, batch_id)
        finally:
            frame.unpersist()

    def _write(self, frame: DataFrame, batch_id: int) -> None:
        lookup = self._committer_lookup(frame.sparkSession)
        request = self._request(batch_id)
        wait = self.interval_ms / 1000.0
        for attempt in range(1, self.retries + 1):
            try:
                save(frame, request, lookup)
                return
            except BatchAlreadyCommittedError as exc:
                self._skip(batch_id, exc.committed.instant)
                return
            except (StreamingCheckpointError, WriteError, TableNotFoundError):
                raise  # the batch or the options are at fault: another attempt cannot help
            except Exception as exc:
                if attempt < self.retries:
                    _LOG.warning("streaming write to %s: batch %d failed on attempt %d of %d "
                                 "(%s); retrying in %.1f s", self.target.label, batch_id,
                                 attempt, self.retries, exc, wait)
                    self.sleep(wait)
                    wait *= 2
                    done = self._committed(batch_id)
                    if done is not None:  # the failure came after the commit completed
                        self._skip(batch_id, done)
                        return
                    continue
                if self.ignore_failed:
                    _LOG.warning("streaming write to %s: batch %d failed %d time(s) and is "
                                 "skipped as %s=true asks: its rows are NOT in the table (%s)",
                                 self.target.label, batch_id, attempt, IGNORE_FAILED_BATCH, exc)
                    return
                raise StreamingWriteError(
                    f"streaming write to {self.target.label}: batch {batch_id} failed on "
                    f"{attempt} attempt(s), each rolled back ({type(exc).__name__}: {exc}); "
                    f"the query stops. Fix the cause and restart the query from its "
                    f"checkpoint: the batch is written then ({RETRY_COUNT}, "
                    f"{RETRY_INTERVAL_MS} set the attempts)") from exc


# -- routing writeStream.format("hudi") ------------------------------------------------------

_binder: StreamBinder | None = None


def install(binder: StreamBinder, connect: bool = False) -> None:
    """Route ``DataStreamWriter.start``/``toTable`` of format ``hudi`` to a ``foreachBatch``
    query whose function ``binder`` makes (idempotent; the last binder given is used).
    ``connect``: Spark Connect's ``DataStreamWriter`` too. Other formats go to Spark
    unchanged."""
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    global _binder
    _binder = binder
    _route_streams(DataStreamWriter)
    if connect:
        from pyspark.sql.connect.streaming.readwriter import DataStreamWriter as ConnectWriter

        _route_streams(ConnectWriter)


def _route_streams(writer_class: Any) -> None:
    """Patch one ``DataStreamWriter`` class (see :func:`install`; once per class)."""
    if getattr(writer_class, "_hudisql_installed", False):
        return
    names = ("format", "option", "options", "partitionBy", "outputMode", "start", "toTable")
    original = {name: getattr(writer_class, name) for name in names}

    def state(writer: Any) -> dict[str, Any]:
        if not hasattr(writer, "_hudisql_state"):
            writer._hudisql_state = {"format": None, "options": {}, "partition_by": (),
                                     "mode": "append"}
        found: dict[str, Any] = writer._hudisql_state
        return found

    def partition_by_(self: Any, *cols: Any) -> Any:
        # Recorded only: Spark refuses a partitioned foreachBatch query, which a hudi query
        # becomes; another format gets Spark's partitionBy at start (:func:`spark_start`).
        names = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
        state(self)["partition_by"] = tuple(str(c) for c in names)
        return self

    def spark_start(self: Any, name: str, target: str | None, outputMode: str | None,
                    partitionBy: Any, queryName: str | None, options: dict[str, Any]) -> Any:
        if partitionBy is not None:  # Spark's start would call our record-only partitionBy
            partition_by_(self, partitionBy)
        if state(self)["partition_by"]:
            original["partitionBy"](self, *state(self)["partition_by"])
        return original[name](self, target, None, outputMode, None, queryName, **options)

    def output_mode_(self: Any, outputMode: str) -> Any:
        state(self)["mode"] = str(outputMode).strip().lower()
        return original["outputMode"](self, outputMode)

    def hudi(self: Any, format: str | None, outputMode: str | None, partitionBy: Any,
             queryName: str | None, options: dict[str, Any]) -> bool:
        if format is not None:
            self.format(format)
        if str(state(self)["format"] or "").lower() != "hudi":
            return False
        self.options(**options)
        if outputMode is not None:
            self.outputMode(outputMode)
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        if queryName is not None:
            self.queryName(queryName)
        return True

    def route(self: Any, path: str | None, table: str | None) -> Any:
        current = state(self)
        spark = getattr(self, "_spark", None) or self._session
        if _binder is None:
            raise WriteError("writeStream.format('hudi'): call hudisql.connect(spark) first")
        target = StreamTarget(path, table, dict(current["options"]), current["mode"],
                              current["partition_by"])
        self.foreachBatch(_binder(spark, target))
        return original["start"](self)

    def start_(self: Any, path: str | None = None, format: str | None = None,
               outputMode: str | None = None, partitionBy: Any = None,
               queryName: str | None = None, **options: Any) -> Any:
        if not hudi(self, format, outputMode, partitionBy, queryName, options):
            return spark_start(self, "start", path, outputMode, partitionBy, queryName, options)
        where = path or state(self)["options"].get("path")
        if not where:
            raise WriteError("writeStream.format('hudi').start(): give the table's base path "
                             "(start(path) or option path), or use toTable(name)")
        return route(self, str(where), None)

    def to_table_(self: Any, tableName: str, format: str | None = None,
                  outputMode: str | None = None, partitionBy: Any = None,
                  queryName: str | None = None, **options: Any) -> Any:
        if not hudi(self, format, outputMode, partitionBy, queryName, options):
            return spark_start(self, "toTable", tableName, outputMode, partitionBy, queryName,
                               options)
        return route(self, None, tableName)

    patched = {**recording_methods(original, state), "partitionBy": partition_by_,
               "outputMode": output_mode_, "start": start_, "toTable": to_table_}
    for name, method in patched.items():
        setattr(writer_class, name, method)
    writer_class._hudisql_installed = True
