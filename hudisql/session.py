"""The hudisql session: a SparkSession configured for Hudi tables, and table handles by name.

:func:`connect` starts (or extends) a SparkSession so that Python workers run this
interpreter, Python data sources receive the filters Spark pushes, and the ``hudi`` data
source is registered. :class:`HudiSession` owns that SparkSession and the hudisql options
(``hoodie.*`` keys); :meth:`HudiSession.table` returns a :class:`HudiTableHandle`.
Live sessions are known by their SparkSession, so that ``df.write.format("hudi").save()``
commits through a table handle: with the session's default options, and for a managed
catalog table's location inside a catalog write id.
"""

from __future__ import annotations

import io
import itertools
import os
import sys
import sysconfig
import tempfile
import threading
import weakref
import zipfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, overload

from hudisql.errors import HudiSqlError, TableNotFoundError
from hudisql.services.background import BackgroundServices

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from hudisql.catalog import Catalog, TableName
    from hudisql.metadata.skipping import SkippingResult
    from hudisql.services.indexes import TableIndexes
    from hudisql.services.maintenance import Maintenance
    from hudisql.sql.inspect import TableInspector
    from hudisql.table import HudiTable
    from hudisql.txn.transaction import StepHook
    from hudisql.write.dataframe_writer import Committer, CommitterLookup
    from hudisql.write.dml import DmlResult, DmlTable, MergeBuilder, Value
    from hudisql.write.pipeline import WriteResult
    from hudisql.write.stream_sink import HudiStreamSink, StreamTarget

#: Runtime SQL settings every hudisql session needs, also a user's own session that
#: ``connect(spark)`` extends (the only setting it changes there; README, "Your session").
SESSION_SQL_CONF: dict[str, str] = {
    # Spark hands the hudi data source the filters it pushes only with this on; a query
    # that pushes one re-plans its relation (and so reads the latest snapshot).
    "spark.sql.python.filterPushdown.enabled": "true",
}

#: Runtime SQL settings of a session hudisql starts (``conf`` may override them). A user's
#: own session keeps its time zone: instant times are UTC whatever it is.
STARTED_SESSION_CONF: dict[str, str] = {
    # Timestamps display as UTC, as instant times (SHOW TIMELINE) are written.
    "spark.sql.session.timeZone": "UTC",
}

#: Settings fixed when a SparkContext starts (only applied to sessions hudisql starts).
STARTUP_CONF: dict[str, str] = {
    "spark.pyspark.python": sys.executable,
    "spark.pyspark.driver.python": sys.executable,
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
}

#: The lock a session's writers and services take on a table outside its catalog unless
#: ``conf`` names another: a lock file per table, shared by the processes of this machine.
DEFAULT_LOCK = ("hoodie.write.lock.provider", "file")

#: The option names of the hudi data source and the write path that a session may default.
HUDI_OPTION_PREFIXES = ("hoodie.", "hudisql.")

#: A statement router: given the session and one SQL text, returns its result DataFrame.
StatementRouter = Callable[["HudiSession", str], "DataFrame"]

#: The live (not stopped) HudiSessions, weakly held, keyed in the order they were made.
_LIVE_SESSIONS: weakref.WeakValueDictionary[int, HudiSession] = weakref.WeakValueDictionary()
_LIVE_KEYS = itertools.count()
_LIVE_LOCK = threading.Lock()


def _package_root() -> Path:
    """The directory that contains the ``hudisql`` package."""
    return Path(__file__).resolve().parent.parent


def _is_installed() -> bool:
    """True when hudisql is imported from an installed location (site-packages)."""
    purelib = Path(sysconfig.get_paths()["purelib"]).resolve()
    return purelib in Path(__file__).resolve().parents


def _package_zip() -> str:
    """Zip the hudisql package (sources only) into a temporary file; returns its path."""
    root = _package_root()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted((root / "hudisql").rglob("*.py")):
            zf.write(path, path.relative_to(root).as_posix())
    fd, name = tempfile.mkstemp(prefix="hudisql-", suffix=".zip")
    with os.fdopen(fd, "wb") as f:
        f.write(buf.getvalue())
    return name


def _prepare_worker_environment() -> None:
    """Make Python workers started by a new SparkContext use this interpreter and hudisql.

    Spark's planning workers (which run the data source's ``schema``/``pushFilters``/
    ``partitions``) take their interpreter from ``PYSPARK_PYTHON`` and their path from
    the JVM's ``PYTHONPATH``, which the JVM inherits from this process when it starts.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if not _is_installed():
        root = str(_package_root())
        parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if root not in parts:
            os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM in this process: no
    ``sparkContext``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _ship_package(spark: SparkSession) -> None:
    """Ship hudisql to executors when they cannot import it locally: ``addPyFile``, or on
    Spark Connect ``addArtifacts(pyfile=True)``."""
    if _is_installed():
        return
    connect = is_connect(spark)
    master = (spark.conf.get("spark.master", None) if connect
              else spark.sparkContext.master) or ""
    if master.startswith("local"):
        return
    if connect:
        spark.addArtifacts(_package_zip(), pyfile=True)
    else:
        spark.sparkContext.addPyFile(_package_zip())


def register_data_source(spark: SparkSession) -> None:
    """Register the ``hudi`` Python data source with ``spark`` (idempotent).

    Reads go to the data source, except a snapshot or read-optimized ``load(path)``, routed
    to the plan of ``t.read()`` (:mod:`hudisql.read.dataframe_reader`);
    ``df.write.format("hudi").save()`` is routed to the Spark write pipeline (see
    :mod:`hudisql.write.dataframe_writer`).
    """
    from hudisql.read.datasource import HudiDataSource
    from hudisql.write.dataframe_writer import install

    spark.dataSource.register(HudiDataSource)
    install(_committer_for, connect=is_connect(spark))
    from hudisql.write.stream_sink import install as install_streams

    install_streams(_bind_stream, connect=is_connect(spark))
    from hudisql.read.dataframe_reader import install as install_reads

    install_reads(spark, connect=is_connect(spark))


def _live_sessions(spark: SparkSession) -> list[HudiSession]:
    """The live HudiSessions over ``spark`` (the same Python SparkSession), oldest first."""
    with _LIVE_LOCK:
        sessions = list(_LIVE_SESSIONS.values())
    return [s for s in sessions if s.spark is spark]


def _committer_for(spark: SparkSession, path: str) -> Committer | None:
    """Who commits a ``df.write.format("hudi")`` save to ``path``: the handle of the managed
    table there in the catalog of the first live session over ``spark`` that has one (its
    commit then runs inside a catalog write id); else a handle of the newest live session
    over ``spark``; None when there is none. Either way the session's default ``hoodie.*``
    options (``connect(conf=...)``) apply under the save's own, as for its other writes.

    External tables are left out: catalogs refresh them from their timeline when it moves.

    Raises:
        CatalogError: a session's catalog cannot be opened or read (nothing is written).
    """
    from hudisql.sql import SqlRouter

    for session in _live_sessions(spark):
        if not isinstance(session.router, SqlRouter):
            continue
        try:
            entries = session.catalog.tables_at(path)
        except HudiSqlError as exc:
            exc.add_note(f"df.write.format('hudi').save({path!r}) was refused: it asks the "
                         "session's catalog whether the path is a managed table's, to commit "
                         "inside a write id; make the catalog reachable and save again")
            raise
        managed = [e for e in entries if e.managed]
        if managed:
            return _handle_committer(HudiTableHandle(
                session=session, name=str(managed[0].name), path=path,
                managed_name=managed[0].name, in_catalog=True))
    sessions = _live_sessions(spark)
    if sessions:
        return _handle_committer(HudiTableHandle(session=sessions[-1], name=path, path=path))
    return None


@dataclass(frozen=True)
class _StreamSessionSpec:
    """How a streaming query's micro-batches find their hudisql session: the live one of the
    process that started the query, or (Spark Connect's server-side worker) one connected
    there with the same warehouse, catalog and default options."""

    pid: int
    live_key: int | None
    warehouse: str
    options: dict[str, str]
    catalog: str | None


def _bind_stream(spark: SparkSession, target: StreamTarget) -> HudiStreamSink:
    """The sink of a ``writeStream.format("hudi")`` query started from ``spark``: the
    newest live session over it writes (a table name resolved through its catalog).

    Raises:
        WriteError: no live hudisql session extends ``spark``.
        TableNotFoundError: ``toTable`` names no hudi table.
    """
    from hudisql.errors import WriteError
    from hudisql.write.stream_sink import HudiStreamSink

    sessions = _live_sessions(spark)
    if not sessions:
        raise WriteError(f"writeStream.format('hudi') to {target.label}: this SparkSession "
                         "is not extended by hudisql; call hudisql.connect(spark) on it first")
    session = sessions[-1]
    path = target.path or session.table(str(target.table)).path
    with _LIVE_LOCK:
        key = next((k for k, v in _LIVE_SESSIONS.items() if v is session), None)
    catalog = None
    if is_connect(spark):  # the server-side worker opens the same catalog
        catalog = getattr(session.catalog, "uri", None)
    spec = _StreamSessionSpec(os.getpid(), key, session.warehouse, dict(session.options),
                              catalog)
    return HudiStreamSink(path, target, _open_stream_session, spec)


def _open_stream_session(spark: SparkSession, spec: _StreamSessionSpec) -> CommitterLookup:
    """Who commits a micro-batch (see :class:`_StreamSessionSpec`): the committer lookup of
    the query's session, or of one connected over the batch's ``spark`` on a Connect server."""
    session = None
    if spec.pid == os.getpid() and spec.live_key is not None:
        with _LIVE_LOCK:
            session = _LIVE_SESSIONS.get(spec.live_key)
    if session is None:
        session = connect(spark, warehouse=spec.warehouse, conf=spec.options,
                          catalog=spec.catalog)
    found = session

    def lookup(_: SparkSession, path: str) -> Committer | None:
        return _committer_in(found, path)
    return lookup


def _committer_in(session: HudiSession, path: str) -> Committer:
    """A save's committer in ``session``: the managed catalog table's handle at ``path`` (a
    write id per commit), else a handle of the path."""
    from hudisql.sql import SqlRouter

    if isinstance(session.router, SqlRouter):
        managed = [e for e in session.catalog.tables_at(path) if e.managed]
        if managed:
            return _handle_committer(HudiTableHandle(
                session=session, name=str(managed[0].name), path=path,
                managed_name=managed[0].name, in_catalog=True))
    return _handle_committer(HudiTableHandle(session=session, name=path, path=path))


@dataclass(frozen=True)
class _HandleCommitter:
    """A committer running saves through ``handle.write`` (session defaults, bracketing);
    its ``maintenance`` runs the table's services the same way (a stream's asynchronous
    compaction)."""

    handle: HudiTableHandle

    def __call__(self, df: DataFrame, operation: str, options: dict[str, str]) -> WriteResult:
        return self.handle.write(df, operation, **options)

    @property
    def maintenance(self) -> Maintenance:
        """The table's services with the session's options, runner and bracket."""
        return self.handle.maintenance


def _handle_committer(handle: HudiTableHandle) -> Committer:
    """A committer running saves through ``handle.write`` (see :class:`_HandleCommitter`)."""
    return _HandleCommitter(handle)


def connect(
    spark: SparkSession | None = None,
    warehouse: str | os.PathLike[str] | None = None,
    conf: Mapping[str, str] | None = None,
    catalog: Catalog | str | None = None,
) -> HudiSession:
    """Start a local SparkSession configured for hudisql, or extend ``spark``.

    Args:
        spark: an existing SparkSession to extend (its settings are kept but
            ``spark.sql.python.filterPushdown.enabled=true``; its time zone is the user's);
            when None a local one (``local[2]`` unless ``conf`` sets ``spark.master``, time
            zone UTC unless ``conf`` sets ``spark.sql.session.timeZone``) is started or the
            active one reused.
        warehouse: the directory of managed tables (default ``./spark-warehouse``).
        conf: extra settings: ``spark.*`` keys go to Spark, ``hoodie.*``/``hudisql.*``
            keys become the session's default write and read options
            (``hoodie.write.lock.provider``: when not set, a table in the catalog takes
            the catalog's lock and any other table the ``file`` lock, so writers and
            services of every session exclude each other; see :meth:`write_options`).
        catalog: the table catalog: a :class:`~hudisql.catalog.Catalog`, a URL
            (``sqlite:///...``, ``postgresql://...``) or a configured catalog name; None:
            ``load_catalog``'s default (a SQLite file in the warehouse). Opened on first use.

    Returns:
        A :class:`HudiSession` owning the SparkSession, its SQL router installed.
    """
    conf = dict(conf or {})
    hudi_options = {k: v for k, v in conf.items() if k.startswith(HUDI_OPTION_PREFIXES)}
    spark_conf = {k: v for k, v in conf.items() if not k.startswith(HUDI_OPTION_PREFIXES)}
    reused = False
    if spark is None:
        from pyspark.sql import SparkSession

        # A session already running is the user's: extended, its settings left as they are
        # (settings fixed at its start are not asked of it, as getOrCreate would ignore them).
        spark = SparkSession.getActiveSession()
        reused = spark is not None
    from hudisql.table.io.storage_env import apply_hadoop_options

    apply_hadoop_options(spark_conf)  # before Spark starts: its executors inherit them
    if spark is None:
        from pyspark.sql import SparkSession

        warehouse_dir = _warehouse_location(warehouse or "spark-warehouse")
        _prepare_worker_environment()
        builder = SparkSession.builder.appName(spark_conf.pop("spark.app.name", "hudisql"))
        builder = builder.master(spark_conf.pop("spark.master", "local[2]"))
        settings = {**STARTUP_CONF, "spark.sql.warehouse.dir": _spark_warehouse(warehouse_dir),
                    **SESSION_SQL_CONF, **STARTED_SESSION_CONF}
        for key, value in {**settings, **spark_conf}.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(conf.get("hudisql.log.level", "ERROR"))
    else:
        configured = (spark.conf.get("spark.sql.warehouse.dir") or "spark-warehouse")
        warehouse_dir = _warehouse_location(warehouse or configured)
        # A user's session: only what hudisql cannot work without (and what ``conf`` asks).
        for key, value in {**SESSION_SQL_CONF, **spark_conf}.items():
            if spark.conf.get(key, None) != value and not (
                    reused and not spark.conf.isModifiable(key)):
                spark.conf.set(key, value)
    _ship_package(spark)
    register_data_source(spark)
    from hudisql.sql import SqlRouter

    return HudiSession(spark=spark, warehouse=warehouse_dir, options=hudi_options,
                       router=SqlRouter(catalog, warehouse_dir))


def _warehouse_location(warehouse: str | os.PathLike[str]) -> str:
    """The warehouse as given, its scheme kept (``s3://b/wh``), or an absolute local path.

    Raises:
        StorageLocationError: a URI pyarrow cannot open, or one carrying credentials.
    """
    from hudisql.table.io.locations import absolute_location, is_remote, refuse_secrets

    location = absolute_location(warehouse)
    if is_remote(location):
        refuse_secrets(location)
    return location


def _spark_warehouse(warehouse: str) -> str:
    """Spark's own ``spark.sql.warehouse.dir``: the warehouse when it is local; beside the
    default catalog file when the warehouse is in an object store, whose scheme Spark's
    Hadoop file systems may not open (hudisql's tables never go there)."""
    from hudisql.table.io.locations import is_remote

    if not is_remote(warehouse):
        return warehouse
    return str(Path.home() / ".hudisql" / "spark-warehouse")


@dataclass
class HudiSession:
    """A SparkSession extended with hudisql: the ``hudi`` data source and table handles.

    ``options`` are the session's default ``hoodie.*`` settings (e.g. the lock provider),
    merged under the per-call options of every read and write.
    """

    spark: SparkSession
    warehouse: str
    options: dict[str, str] = field(default_factory=dict)
    #: The SQL front-end's statement router; None passes every statement to Spark as is.
    router: StatementRouter | None = None
    #: Called with (file slices done, total) while an index builds (shell, notebooks).
    index_progress: Callable[[int, int], None] | None = None
    #: Services writes hand off (``hoodie.clean.async.enabled``): joined at :meth:`close`.
    background: BackgroundServices = field(default_factory=BackgroundServices, repr=False)

    def __post_init__(self) -> None:
        # Known by its SparkSession until stopped: df.write saves find its catalog.
        with _LIVE_LOCK:
            _LIVE_SESSIONS[next(_LIVE_KEYS)] = self

    def sql(self, text: str) -> DataFrame:
        """Run one SQL statement; returns its result as a Spark DataFrame.

        The SQL front-end installs :attr:`router` to handle hudisql's own statements;
        without one, the text goes to Spark unchanged.
        """
        if self.router is not None:
            return self.router(self, text)
        return self.spark.sql(text)

    def sql_script(self, text: str) -> list[DataFrame]:
        """Run a script of ``;``-separated statements; returns one DataFrame per statement.

        Raises:
            SqlParseError: the script does not parse (then nothing ran).
            HudiSqlError: the session has no SQL front-end router.
        """
        from hudisql.sql import SqlRouter

        if not isinstance(self.router, SqlRouter):
            raise HudiSqlError("sql_script needs the SQL front end: create the session with "
                               "hudisql.connect()")
        return self.router.run_script(self, text)

    @property
    def catalog(self) -> Catalog:
        """The session's table catalog (opened on first use).

        Raises:
            HudiSqlError: the session has no SQL front-end router.
            CatalogUnavailableError: the catalog database cannot be reached.
        """
        from hudisql.sql import SqlRouter

        if not isinstance(self.router, SqlRouter):
            raise HudiSqlError("this session has no catalog: create it with hudisql.connect()")
        return self.router.catalog

    def register_table(self, name: str, path: str | os.PathLike[str]) -> HudiTableHandle:
        """Name the Hudi table at ``path`` in Spark's session catalog; returns its handle.

        Raises:
            TableNotFoundError: ``path`` holds no Hudi table.
        """
        location = str(path)
        self._open_core(location, name)
        escaped = location.replace("\\", "\\\\").replace("'", "\\'")
        self.spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{escaped}'")
        return self.table(name)

    def table(self, name: str) -> HudiTableHandle:
        """The handle of table ``name``: ``t`` or ``db.t``, looked up in the session's catalog
        (also defining it in Spark, so ``spark.table(name)`` works), else in Spark's own. A
        managed catalog table's handle brackets its writes by a catalog write id.

        Raises:
            TableNotFoundError: no table of that name, or it is not a ``hudi`` table.
        """
        from hudisql.sql import SqlRouter

        if isinstance(self.router, SqlRouter):
            from hudisql.parser.commands import TableName as SqlTableName

            parts = tuple(p.strip("`") for p in name.split("."))
            _, entries = self.router.resolve_names(self.spark, [SqlTableName(parts)])
            for entry in entries.values():
                self._open_core(entry.location, name)
                return HudiTableHandle(session=self, name=name, path=entry.location,
                                       managed_name=entry.name if entry.managed else None,
                                       in_catalog=True)
        if not self.spark.catalog.tableExists(name):
            raise TableNotFoundError(
                f"table {name!r} does not exist in the session catalog; register it with "
                f"CREATE TABLE {name} USING hudi LOCATION '<base path>'"
            )
        location = self._catalog_location(name)
        self._open_core(location, name)
        return HudiTableHandle(session=self, name=name, path=location)

    def table_at(self, path: str | os.PathLike[str]) -> HudiTableHandle:
        """The handle of the Hudi table at ``path`` (no name needed).

        Raises:
            TableNotFoundError: ``path`` holds no Hudi table.
        """
        location = str(path)
        self._open_core(location, None)
        return HudiTableHandle(session=self, name=None, path=location)

    def write_options(self, path: str, options: Mapping[str, str] | None = None, *,
                      in_catalog: bool | None = None) -> dict[str, str]:
        """The options of a write to the table at ``path``: the session's defaults, then
        ``options``; when neither names a lock provider, a table in the session's catalog
        (``in_catalog``; None: ask the catalog) takes the catalog's lock, shared by every
        process and machine using it; other tables the commit protocol's default, the file
        lock.

        Raises:
            CatalogError: the catalog could not be asked (nothing is written).
        """
        from hudisql.sql import SqlRouter
        from hudisql.table.io.locations import is_remote
        from hudisql.txn.lock import LOCK_PROVIDER

        merged = {**self.options, **(options or {})}
        if LOCK_PROVIDER in merged:
            return merged
        if isinstance(self.router, SqlRouter):
            if in_catalog is None:
                # A table in an object store takes the catalog's lock even when not in the
                # catalog: the file lock cannot guard it (no rename, other machines).
                in_catalog = is_remote(path) or bool(self.catalog.tables_at(path))
            if in_catalog:
                return {**self.catalog.lock_options(), **merged}
        return {DEFAULT_LOCK[0]: DEFAULT_LOCK[1], **merged}

    def close(self) -> None:
        """Close the catalog and leave the SparkSession running: ``df.write`` saves no longer
        consult this session (its catalog, its default options)."""
        from hudisql.sql import SqlRouter

        with _LIVE_LOCK:
            for key in [k for k, live in _LIVE_SESSIONS.items() if live is self]:
                del _LIVE_SESSIONS[key]
        self.background.close()  # before the catalog: a background clean may commit to it
        if isinstance(self.router, SqlRouter):
            self.router.close()

    def wait_for_services(self) -> None:
        """Wait for the table services writes left to run in the background
        (``hoodie.clean.async.enabled=true``).

        Raises:
            TableServiceError: one of them failed since the last wait (the writes
                themselves completed).
        """
        self.background.wait()

    def stop(self) -> None:
        """:meth:`close`, then stop the underlying SparkSession."""
        self.close()
        self.spark.stop()

    def _catalog_location(self, name: str) -> str:
        from hudisql.sql.spark_tables import spark_table_details

        details = spark_table_details(self.spark, name) or {}
        provider = details.get("Provider", "")
        if provider.lower() != "hudi":
            raise TableNotFoundError(
                f"table {name!r} is not a hudi table (its provider is {provider or 'none'}); "
                "use spark.table() for it"
            )
        uri = details.get("Location")
        if not uri:
            raise TableNotFoundError(f"table {name!r} has no LOCATION; re-create it with one")
        return uri.removeprefix("file:") if uri.startswith("file:/") else uri

    @staticmethod
    def _open_core(path: str, name: str | None) -> HudiTable:
        from hudisql.table import HudiTable

        try:
            return HudiTable.open(path)
        except TableNotFoundError as exc:
            label = f"table {name!r} at {path}" if name else path
            raise TableNotFoundError(
                f"{label} is not a Hudi table (no .hoodie/hoodie.properties): {exc}"
            ) from exc


@dataclass
class HudiTableHandle:
    """A Hudi table seen from a :class:`HudiSession`: Spark reads (and writes) by name or path.

    ``managed_name`` is the catalog name of a managed catalog table: each write runs
    inside a catalog write id (as SQL's do), so other sessions' caches see the commit.
    """

    session: HudiSession
    name: str | None
    path: str
    managed_name: TableName | None = None
    #: Whether the session's catalog holds the table (None: ask it when writing).
    in_catalog: bool | None = None

    def core(self) -> HudiTable:
        """The table core's view of this table, freshly loaded (timeline included)."""
        from hudisql.table import HudiTable

        return HudiTable.open(self.path)

    @property
    def inspect(self) -> TableInspector:
        """Read-only views of the table without Spark: ``inspect.timeline()`` (a pyarrow
        Table, as SHOW TIMELINE), ``inspect.timeline_chart()`` (a picture; ``.save(path)``)."""
        from hudisql.sql.inspect import TableInspector

        return TableInspector(self.path, self.name)

    def read(self, as_of: str | None = None, columns: Sequence[str] | None = None, *,
             where: str | None = None, query_type: str | None = None,
             begin: str | None = None, end: str | None = None,
             incremental_format: str | None = None, **options: str) -> DataFrame:
        """The table's snapshot (or another Hudi query type) as a Spark DataFrame.

        Args:
            as_of: an instant time; read the table as of that instant (time travel).
            columns: only these columns, in this order: executors then read only them
                (Python data sources get no column pruning from Spark's optimizer).
            where: a SQL predicate (``"city = 'sf' AND fare > 10"``): only the rows matching
                it, and only the file slices that may hold such rows are read: partition
                paths decide, then the metadata table's indexes (record index, secondary
                indexes, bloom filters, column and partition stats) unless
                ``hoodie.enable.data.skipping=false``. Fixed for this DataFrame, so every
                query on it, reused or not, reads the same slices.
            query_type: Hudi's ``hoodie.datasource.query.type``: ``snapshot`` (default),
                ``read_optimized`` (base files only) or ``incremental``.
            begin, end: an incremental query's range ``(begin, end]``
                (``hoodie.datasource.read.begin.instanttime`` / ``...end.instanttime``):
                completion times on version 8/9 tables, instant times on version 6.
            incremental_format: ``latest_state`` (default) or ``cdc``
                (``hoodie.datasource.query.incremental.format``).
            options: further ``hudi`` data source options (Hudi's names).

        Returns:
            A lazy DataFrame of the snapshot as of the time of this call (or ``as_of``).
            Base rows no log block touches are read by Spark's own parquet reader and the
            rest by the ``hudi`` data source (:mod:`hudisql.read.frame`); with the option
            ``hudisql.read.direct.parquet=false`` all of it by the data source. Other query
            types are read by the data source. With ``where`` keeping a few small slices
            (``hudisql.read.local.max.bytes``), their rows are read at this call, on the
            driver, and the DataFrame is a local relation of them (:mod:`hudisql.read.local`).

        Raises:
            HudiSqlError: a column the table does not have, a malformed ``as_of`` or
                ``where``.
        """
        from hudisql.read.frame import read_frame
        from hudisql.read.options import BEGIN_INSTANT, END_INSTANT, INCREMENTAL_FORMAT, QUERY_TYPE

        named = {QUERY_TYPE: query_type, BEGIN_INSTANT: begin, END_INSTANT: end,
                 INCREMENTAL_FORMAT: incremental_format}
        merged = {**self.session.options, **options,
                  **{k: v for k, v in named.items() if v is not None}}
        projection = self._projection(list(columns)) if columns is not None else None
        return read_frame(self.session.spark, self.core(), merged, as_of, projection, where)

    def _projection(self, columns: list[str]) -> StructType:
        """The table's Spark schema cut to ``columns``, path and snapshot metadata kept."""
        from pyspark.sql.types import StructField, StructType

        from hudisql.read.datasource import spark_schema

        full = spark_schema(self.core(), self.path)
        by_name = {f.name: f for f in full.fields}
        unknown = [c for c in columns if c not in by_name]
        if unknown or not columns:
            raise HudiSqlError(
                f"table {self.name or self.path} has no column(s) {unknown}; give some of "
                f"its columns: {full.fieldNames()}"
            )
        fields = [by_name[c] for c in columns]
        # The data source finds the base path and pinned snapshot in the first field.
        first = fields[0]
        metadata = {**(first.metadata or {}), **(full.fields[0].metadata or {})}
        fields[0] = StructField(first.name, first.dataType, first.nullable, metadata)
        return StructType(fields)

    def write(self, df: DataFrame, operation: str, **options: str) -> WriteResult:
        """Write ``df`` with ``operation`` as one commit of Spark jobs; returns its result.

        Raises:
            WriteError: unknown operation or records that do not fit (nothing written).
            CommitConflictError: a concurrent write touched the same file groups.
        """
        from hudisql.write.pipeline import SparkWriter

        merged = self._write_options(options)
        writer = SparkWriter(self.session.spark, self.path, merged, on_step=self._on_step())
        with self._bracket():
            result = writer.write(df, operation)
        from hudisql.services.inline import run_inline_services

        maintenance = self.maintenance
        maintenance.options = merged
        run_inline_services(maintenance, self.session.background)
        return result

    @property
    def maintenance(self) -> Maintenance:
        """This table's services, run as Spark jobs: ``run_log_compaction()``,
        ``schedule_log_compaction()``, ``show_log_compaction()``, ``run_compaction()``,
        ``schedule_compaction()``, ``show_compaction()``, ``run_clustering()``,
        ``schedule_clustering()``, ``execute_clustering()``, ``show_clustering()``,
        ``run_clean()`` (the SQL statements and procedures call the same methods)."""
        from hudisql.services.maintenance import Maintenance, metadata_participants
        from hudisql.services.runner import SparkRunner

        return Maintenance(self.path, self.session.write_options(self.path),
                           SparkRunner(self.session.spark), bracket=self._bracket,
                           participants=metadata_participants)

    def _write_options(self, options: Mapping[str, str]) -> dict[str, str]:
        """The options of a write through this handle (see :meth:`HudiSession.write_options`)."""
        in_catalog = True if self.managed_name is not None else self.in_catalog
        return self.session.write_options(self.path, options, in_catalog=in_catalog)

    def _bracket(self) -> AbstractContextManager[object]:
        """The context a commit runs in: a catalog write id for a managed catalog table."""
        if self.managed_name is None:
            return nullcontext()
        return self.session.catalog.write_transaction(self.managed_name)

    def _on_step(self) -> StepHook | None:
        from hudisql.sql import SqlRouter

        router = self.session.router
        return router.on_write_step if isinstance(router, SqlRouter) else None

    def _dml_table(self, options: Mapping[str, str]) -> DmlTable:
        """The DML API's view of this table; its columns may be qualified by its name."""
        from hudisql.write.dml import DmlTable

        short = (self.name.rsplit(".", 1)[-1].strip("`") if self.name
                 else self.core().name)
        return DmlTable(self.session.spark, self.path, self._write_options(options),
                        name=self.name or self.path, qualifiers=(short,),
                        reader=lambda: self.read().alias(short), bracket=self._bracket,
                        on_step=self._on_step())

    def update(self, set: Mapping[str, Value], where: Value | None = None, *,
               alias: str | None = None, **options: str) -> DmlResult:
        """Set columns of the rows ``where`` holds for (every row: None), in one commit.

        Values and the condition are Spark SQL text or Columns over the table's columns
        (qualified by the table's name or ``alias``, if at all). On a merge-on-read table,
        text values ``c + <literal>`` are an expression write (the stored value is read
        when the log is merged). Example::

            handle.update({"fare": "fare * 2", "rider": F.upper("rider")}, "city = 'sf'")

        Returns:
            The rows updated and the commit (None when no row matched).

        Raises:
            WriteError: no or unknown columns, a record key or partition column in ``set``,
                a value or condition that does not resolve (nothing is written).
        """
        from hudisql.write import dml

        return dml.update(self._dml_table(options), set, where, alias=alias)

    @overload
    def delete(self, rows: DataFrame, **options: str) -> WriteResult: ...

    @overload
    def delete(self, rows: str | Column | None = None, **options: str) -> DmlResult: ...

    def delete(self, rows: DataFrame | str | Column | None = None,
               **options: str) -> WriteResult | DmlResult:
        """Delete rows in one commit: the keys a DataFrame holds, or the rows a condition
        (Spark SQL text or a Column) holds for; None deletes every row. Example::

            handle.delete(keys_df)               # by key: returns the WriteResult
            handle.delete("ts < 100")            # by condition: returns a DmlResult
            handle.delete(F.col("city") == "sf")

        Returns:
            A DataFrame's write result, or the rows deleted and the commit (None when no
            row matched).

        Raises:
            WriteError: a DataFrame without the key columns, a condition that does not
                resolve (nothing is written).
        """
        from pyspark.sql import DataFrame

        if isinstance(rows, DataFrame):
            return self.write(rows, "delete", **options)
        from hudisql.write import dml

        return dml.delete(self._dml_table(options), rows)

    def merge(self, source: DataFrame, on: Value, *, source_alias: str = "s",
              target_alias: str = "t", **options: str) -> MergeBuilder:
        """Start a MERGE of ``source`` into this table; returns the builder to add clauses to.

        ``on`` and the clauses' conditions and values are Spark SQL text or Columns that
        name the source as ``source_alias`` and this table as ``target_alias``. Clauses are
        tried in order; a source row takes the first that holds; ``execute()`` writes the
        updates, inserts and deletes as one commit. Example::

            (handle.merge(changes, "t.uuid = s.uuid")
                .when_matched_delete("s.deleted")
                .when_matched_update({"fare": "s.fare"})
                .when_not_matched_insert_all()
                .execute())

        Raises:
            WriteError: an empty alias, or the same alias for source and target.
        """
        from hudisql.write import dml

        return dml.merge(self._dml_table(options), source, on, source_alias=source_alias,
                         target_alias=target_alias)

    def insert(self, df: DataFrame, **options: str) -> WriteResult:
        """Insert new records (refused if a key exists); returns the commit's result."""
        return self.write(df, "insert", **options)

    def bulk_insert(self, df: DataFrame, **options: str) -> WriteResult:
        """Insert records into new file groups without looking up keys; returns the result."""
        return self.write(df, "bulk_insert", **options)

    def upsert(self, df: DataFrame, **options: str) -> WriteResult:
        """Update records whose keys exist, insert the others; returns the commit's result."""
        return self.write(df, "upsert", **options)

    def insert_overwrite(self, df: DataFrame, **options: str) -> WriteResult:
        """Replace the partitions ``df`` writes with its rows (a replacecommit); returns it."""
        return self.write(df, "insert_overwrite", **options)

    def insert_overwrite_table(self, df: DataFrame, **options: str) -> WriteResult:
        """Replace the whole table's rows with ``df``'s (a replacecommit); returns its result."""
        return self.write(df, "insert_overwrite_table", **options)

    @property
    def indexes(self) -> TableIndexes:
        """The table's indexes: ``create``, ``drop``, ``list``, ``refresh``, ``run_indexer``
        (CREATE / DROP / SHOW / REFRESH INDEX and CALL run_indexer run through them).

        Builds run as Spark jobs of this session, with its options (lock provider among
        them), and report progress to ``session.index_progress`` when set.
        """
        from hudisql.services.indexes import TableIndexes

        return TableIndexes(self.path, self.session.write_options(self.path),
                            self.session.spark, on_progress=self.session.index_progress)

    def data_skipping(self, filter: str, as_of: str | None = None) -> SkippingResult:
        """What the metadata table's indexes do for ``filter`` (SQL predicate text, e.g.
        ``"rider = 'rider-D' AND fare > 10"``): the table's latest file slices (as of
        ``as_of``), the ones kept, and each index's step (``CALL show_data_skipping``).
        Zone-less timestamp literals are read in the session's time zone.

        Raises:
            SqlParseError: ``filter`` is not a SQL predicate.
        """
        from hudisql.metadata.skipping import data_skipping

        zone = self.session.spark.conf.get("spark.sql.session.timeZone", None)
        return data_skipping(self.core(), filter, as_of, time_zone=zone)

    def __repr__(self) -> str:
        return f"HudiTableHandle(name={self.name!r}, path={self.path!r})"
