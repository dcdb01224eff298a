"""``df.write.format("hudi")``: Hudi's option names and save modes, run as the Spark pipeline.

The design choice. Spark's Python Data Source API runs a ``DataSourceWriter``'s ``write()``
on executors over the DataFrame's partitions *as they come*, and ``commit()``/``abort()`` in
a Python worker without a SparkSession. A correct Hudi write needs what that API cannot
give: the records of one file group in one task (a copy-on-write base file is rewritten
once per commit; duplicates of a key are precombined across the whole batch), which takes
the tagging join and a shuffle planned by the driver. So ``save()`` of format ``hudi`` is
intercepted on the driver instead (:func:`install`, called by ``hudisql.connect()``) and
runs :class:`~hudisql.write.pipeline.SparkWriter`, the same jobs and commit protocol as
``table.upsert(df)``: one task per file slice, write tokens per task attempt, stats only
from successful attempts, stray base files of failed attempts removed at commit, the
instant rolled back on any failure. A *committer lookup* given to :func:`install` (the
session's) may run the commit instead: with the session's default ``hoodie.*`` options
under the save's own and, for the location of a managed catalog table, inside a catalog
write id, so that other sessions' catalog caches see it. Other formats go to Spark
unchanged. Limits: the interception works in the Python process that imported hudisql (a
classic driver, or a Spark Connect client whose session ``hudisql.connect`` extended; not
from the JVM or another client), and ``saveAsTable`` is not intercepted.

Options (Hudi's names): ``hoodie.table.name``, ``hoodie.datasource.write.recordkey.field``
(comma-separated), ``...precombine.field``, ``...partitionpath.field`` (or
``partitionBy()``), ``...operation`` (``upsert`` by default, as in Hudi), ``...table.type``
(``COPY_ON_WRITE`` by default, as in Hudi), ``...hive_style_partitioning``; the table is
created on first write from the DataFrame's schema. Without a record key field the table
is keyless (Hudi 0.14+): keys are generated per write, the default operation is
``bulk_insert`` for rows without ``_hoodie_record_key`` (as in Hudi), and upserts and
deletes address rows by the ``_hoodie_record_key`` they carry (rows read from the table).
Other ``hoodie.*``/``hudisql.*`` options are write options (lock provider, concurrency
mode...). Save modes: ``append``; ``overwrite`` replaces the whole table's rows whatever the
operation, as a replacecommit that keeps the timeline (``insert_overwrite_table``;
``insert_overwrite`` replaces only the partitions written); ``errorifexists``/``error``
(Spark's default) and ``ignore`` as Spark defines them. A save from a SparkSession no live
hudisql session extends is refused: call ``hudisql.connect(spark)`` on it first.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudisql.errors import TableNotFoundError, WriteError
from hudisql.table.write.records import RECORD_KEY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudisql.table.table import HudiTable
    from hudisql.write.pipeline import WriteResult

TABLE_NAME = "hoodie.table.name"
RECORD_KEY_FIELD = "hoodie.datasource.write.recordkey.field"
PRECOMBINE_FIELD = "hoodie.datasource.write.precombine.field"
PARTITION_PATH_FIELD = "hoodie.datasource.write.partitionpath.field"
OPERATION = "hoodie.datasource.write.operation"
TABLE_TYPE = "hoodie.datasource.write.table.type"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"

SAVE_MODES = ("append", "overwrite", "errorifexists", "ignore")
_MODE_ALIASES = {"error": "errorifexists", "default": "errorifexists"}
_TABLE_TYPES = {"COPY_ON_WRITE": "COPY_ON_WRITE", "COW": "COPY_ON_WRITE",
                "MERGE_ON_READ": "MERGE_ON_READ", "MOR": "MERGE_ON_READ"}
_OVERWRITE_OPERATIONS = ("insert_overwrite", "insert_overwrite_table")

#: Runs one save's commit, ``(df, operation, write options)``, and returns its result.
Committer = Callable[["DataFrame", str, dict[str, str]], "WriteResult"]
#: Given a save's SparkSession and base path, the committer that must run its commit (a
#: session's: its default options, and a catalog write id for a managed table), or None:
#: the save writes the path directly with its own options.
CommitterLookup = Callable[["SparkSession", str], "Committer | None"]

#: The lookup :func:`install` was last given (the interception of ``save`` consults it).
_committer_lookup: CommitterLookup | None = None


@dataclass(frozen=True)
class SaveRequest:
    """One ``save()`` of format hudi: where, how, and with which options."""

    path: str
    mode: str
    options: dict[str, str]
    partition_by: tuple[str, ...] = ()

    def fields(self, key: str) -> list[str]:
        """The comma-separated column names of option ``key`` (empty when absent)."""
        return [f.strip() for f in self.options.get(key, "").split(",") if f.strip()]


def _fail(path: str, message: str) -> WriteError:
    return WriteError(f"df.write.format('hudi').save({path!r}): {message}")


def _operation(request: SaveRequest, append_only: bool) -> str:
    """The pipeline operation of a save, as Hudi's datasource picks it.

    No operation option: ``upsert``, or ``bulk_insert`` on a keyless table whose rows carry
    no ``_hoodie_record_key`` (an append-only write, as Hudi picks it). Save mode
    ``overwrite`` replaces the table's rows whatever the operation
    (``insert_overwrite_table``; ``insert_overwrite`` replaces only the partitions written).
    """
    from hudisql.write.pipeline import OPERATIONS

    given = request.options.get(OPERATION)
    operation = (given or ("bulk_insert" if append_only else "upsert")).strip().lower()
    if operation not in OPERATIONS:
        raise _fail(request.path, f"option {OPERATION}={given!r} is not an operation hudisql "
                                  f"writes: use one of {', '.join(OPERATIONS)}")
    if request.mode == "overwrite":
        if operation == "delete":
            raise _fail(request.path, f"save mode overwrite replaces the table's rows with the "
                                      f"DataFrame's, which option {OPERATION}='delete' "
                                      "contradicts: use mode append to delete rows")
        return operation if operation in _OVERWRITE_OPERATIONS else "insert_overwrite_table"
    if operation in _OVERWRITE_OPERATIONS and request.mode != "append":
        raise _fail(request.path, f"option {OPERATION}={given!r} needs save mode append or "
                                  "overwrite")
    return operation


def _check_against_table(request: SaveRequest, table: HudiTable) -> None:
    """Refuse options that contradict the existing table (nothing written)."""
    props = table.properties
    checks: list[tuple[str, object, object]] = [
        (RECORD_KEY_FIELD, request.fields(RECORD_KEY_FIELD), props.record_key_fields),
        (PARTITION_PATH_FIELD, request.fields(PARTITION_PATH_FIELD) or list(request.partition_by),
         props.partition_fields),
        (PRECOMBINE_FIELD, request.options.get(PRECOMBINE_FIELD), props.precombine_field),
        (TABLE_NAME, request.options.get(TABLE_NAME), props.table_name),
    ]
    for key, given, stored in checks:
        if given and given != stored:
            named = f"option {key}={request.options.get(key)!r}"
            if key not in request.options:  # given by partitionBy
                named = f"partitionBy({', '.join(map(repr, request.partition_by))})"
            raise _fail(request.path, f"{named} differs from the table's {key} "
                                      f"{stored!r}; drop it or match the table")
    kind = request.options.get(TABLE_TYPE)
    if kind and _TABLE_TYPES.get(kind.strip().upper()) != props.table_type:
        raise _fail(request.path, f"option {TABLE_TYPE}={kind!r} differs from the table's "
                                  f"{props.table_type}")


def _create(request: SaveRequest, df: DataFrame) -> None:
    """Create the table from the options and ``df``'s schema (validated first)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from hudisql.table.format.table_versions import WRITE_TABLE_VERSION
    from hudisql.table.write.create import create_table
    from hudisql.write.index_settings import INDEX_PROPERTIES
    from hudisql.write.pipeline import IS_DELETED

    name = request.options.get(TABLE_NAME)
    keys = request.fields(RECORD_KEY_FIELD)
    if not name:
        raise _fail(request.path, f"no Hudi table there yet and option {TABLE_NAME} is not set: "
                                  "give it to create the table on this first write")
    kind = request.options.get(TABLE_TYPE, "COPY_ON_WRITE")
    table_type = _TABLE_TYPES.get(kind.strip().upper())
    if table_type is None:
        raise _fail(request.path, f"option {TABLE_TYPE}={kind!r} is not COPY_ON_WRITE or "
                                  "MERGE_ON_READ")
    arrow = to_arrow_schema(df.schema, timezone="UTC")
    schema = pa.schema([f for f in arrow if f.name != IS_DELETED])
    partitions = request.fields(PARTITION_PATH_FIELD) or list(request.partition_by)
    precombine = request.options.get(PRECOMBINE_FIELD) or None
    for key, columns in ((RECORD_KEY_FIELD, keys), (PARTITION_PATH_FIELD, partitions),
                         (PRECOMBINE_FIELD, [precombine] if precombine else [])):
        missing = [c for c in columns if schema.get_field_index(c) < 0]
        if missing:
            raise _fail(request.path, f"option {key} names {missing}, which the DataFrame "
                                      f"lacks; its columns are {schema.names}")
    extra = {HIVE_STYLE: request.options.get(HIVE_STYLE, "false").lower()}
    # The index a new table tags with (a bucketed table's layout) is the table's.
    extra.update({k: request.options[k] for k in INDEX_PROPERTIES if k in request.options})
    if WRITE_TABLE_VERSION in request.options:  # the new table's version (6, 8 or 9)
        extra[WRITE_TABLE_VERSION] = request.options[WRITE_TABLE_VERSION]
    assert name is not None
    create_table(request.path, name, schema, keys, partitions, precombine, table_type, extra)


def save(df: DataFrame, request: SaveRequest,
         committer_for: CommitterLookup | None = None) -> WriteResult | None:
    """Write ``df`` to the Hudi table at ``request.path`` (created when absent) as one commit.

    ``committer_for`` is asked, once the request is checked and before a new table is
    created, who runs the commit (see :data:`CommitterLookup`); without it, or when it
    answers None, the path is written here.

    Returns:
        The commit's result; None when mode ``ignore`` found a table there.

    Raises:
        WriteError: a missing or bad option (named), an unknown save mode, a table that
            exists under mode ``errorifexists``, or records that do not fit (nothing
            written then).
        CommitConflictError: a concurrent write touched the same file groups.
    """
    from hudisql.table.table import HudiTable
    from hudisql.write.pipeline import SparkWriter

    if request.mode not in SAVE_MODES:
        raise _fail(request.path, f"save mode {request.mode!r} is not one of "
                                  f"{', '.join(SAVE_MODES)}")
    try:
        table = HudiTable.open(request.path)
    except TableNotFoundError:
        table = None
    keyless = (table.properties.keyless if table is not None
               else not request.fields(RECORD_KEY_FIELD))
    operation = _operation(request, keyless and RECORD_KEY not in df.columns)
    if table is not None:
        if request.mode == "errorifexists":
            raise _fail(request.path, "a Hudi table is already there and the save mode is "
                                      "errorifexists: use mode append or overwrite")
        if request.mode == "ignore":
            return None
        _check_against_table(request, table)
    spark = df.sparkSession
    # Asked before a new table is created: a catalog it cannot reach leaves no trace.
    committer = committer_for(spark, request.path) if committer_for is not None else None
    if committer_for is not None and committer is None:
        raise _fail(request.path, "this SparkSession is not extended by hudisql; call "
                                  "hudisql.connect(spark) on it first (then "
                                  "df.write.format('hudi') commits through hudisql)")
    if table is None:
        _create(request, df)
    options = {k: v for k, v in request.options.items() if k.startswith(("hoodie.", "hudisql."))}
    if committer is not None:
        return committer(df, operation, options)
    return SparkWriter(spark, request.path, options).write(df, operation)


def option_text(value: Any) -> str:
    """An option value as Spark's writers record it (booleans in lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def install(committer_for: CommitterLookup | None = None, connect: bool = False) -> None:
    """Route ``DataFrameWriter.save`` of format ``hudi`` to :func:`save` (idempotent).

    ``committer_for`` (when given) replaces the lookup every later save consults to find who
    commits it (the session's: a managed catalog table's handle). The writer's
    ``format``/``mode``/``option(s)``/``partitionBy`` calls are recorded on the Python object
    as they go on (to the JVM, or into a Spark Connect plan), so ``save`` knows them
    without asking Spark. ``connect``: route Spark Connect's ``DataFrameWriter`` too (its
    saves then run the same pipeline, from this client, as hudisql's SQL does).
    """
    from pyspark.sql.readwriter import DataFrameWriter

    global _committer_lookup
    if committer_for is not None:
        _committer_lookup = committer_for
    _route_saves(DataFrameWriter)
    if connect:
        from pyspark.sql.connect.readwriter import DataFrameWriter as ConnectWriter

        _route_saves(ConnectWriter)


def _frame_of(writer: Any) -> Any:
    """The DataFrame a ``DataFrameWriter`` writes: Spark Connect's writer holds its plan
    and session, the classic one the DataFrame itself."""
    frame = writer._df
    if hasattr(frame, "sparkSession"):
        return frame
    from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

    return ConnectFrame(frame, writer._spark)


def recording_methods(original: dict[str, Any], state: Callable[[Any], dict[str, Any]],
                      ) -> dict[str, Callable[..., Any]]:
    """``format``, ``option``, ``options`` and (when ``original`` has it) ``partitionBy``
    for a patched writer or reader class (batch or streaming): each records its arguments in
    the object's hudisql ``state``, then calls Spark's own method from ``original``, so a
    write or read of another format is unchanged."""

    def format_(self: Any, source: str) -> Any:
        state(self)["format"] = source
        return original["format"](self, source)

    def option_(self: Any, key: str, value: Any) -> Any:
        state(self)["options"][key] = option_text(value)
        return original["option"](self, key, value)

    def options_(self: Any, **options: Any) -> Any:
        state(self)["options"].update({k: option_text(v) for k, v in options.items()})
        return original["options"](self, **options)

    def partition_by_(self: Any, *cols: Any) -> Any:
        names = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
        state(self)["partition_by"] = tuple(str(c) for c in names)
        return original["partitionBy"](self, *cols)

    methods: dict[str, Callable[..., Any]] = {"format": format_, "option": option_,
                                              "options": options_}
    if "partitionBy" in original:  # (a writer; a reader has none)
        methods["partitionBy"] = partition_by_
    return methods


def _route_saves(writer_class: Any) -> None:
    """Patch one ``DataFrameWriter`` class (see :func:`install`; once per class)."""
    if getattr(writer_class, "_hudisql_installed", False):
        return
    original = {name: getattr(writer_class, name)
                for name in ("format", "mode", "option", "options", "partitionBy", "save")}

    def state(writer: Any) -> dict[str, Any]:
        if not hasattr(writer, "_hudisql_state"):
            writer._hudisql_state = {"format": None, "mode": "errorifexists", "options": {},
                                     "partition_by": ()}
        found: dict[str, Any] = writer._hudisql_state
        return found

    def mode_(self: Any, saveMode: str | None) -> Any:
        if saveMode is not None:
            mode = str(saveMode).lower()
            state(self)["mode"] = _MODE_ALIASES.get(mode, mode)
        return original["mode"](self, saveMode)

    def save_(self: Any, path: str | None = None, format: str | None = None,
              mode: str | None = None, partitionBy: Any = None,
              **options: Any) -> None:
        if format is not None:
            self.format(format)
        current = state(self)
        if str(current["format"] or "").lower() != "hudi":
            original["save"](self, path, None, mode, partitionBy, **options)
            return
        self.mode(mode).options(**options)
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        where = path or current["options"].get("path")
        if not where:
            raise WriteError("df.write.format('hudi').save(): give the table's base path "
                             "(save(path) or option path)")
        request = SaveRequest(os.fspath(where), current["mode"], dict(current["options"]),
                              current["partition_by"])
        save(_frame_of(self), request, _committer_lookup)

    patched = {**recording_methods(original, state), "mode": mode_, "save": save_}
    for name, method in patched.items():
        setattr(writer_class, name, method)
    writer_class._hudisql_installed = True
