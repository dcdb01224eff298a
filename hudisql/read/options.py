"""Options of the ``hudi`` data source's reads: where the table is and which instant to read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.types import StructType

from hudisql.errors import HudiSqlError, ReadOptionError, TableNotFoundError
from hudisql.table.read.incremental import FULL_SCAN_FALLBACK

#: The field-metadata key the data source's schema carries the base path in.
PATH_METADATA_KEY = "hudi.path"

#: The field-metadata key of the snapshot instant a ``load(path)`` DataFrame is pinned to.
SNAPSHOT_METADATA_KEY = "hudi.snapshot"

#: The time-travel option: read the table as of this instant.
AS_OF_INSTANT = "as.of.instant"

#: Gone: pushed filters never prune (Spark reuses a pruned plan for later queries on the same
#: DataFrame, see hudisql.read.datasource); ``true`` is refused, pointing to :data:`WHERE`.
PARTITION_PRUNING = "hudisql.read.partition.pruning"
#: A SQL predicate fixed for the relation: only file slices that may hold matching rows are
#: read (partition paths, then the metadata table's indexes); the rows of the kept slices are
#: returned whole, so apply the same predicate to the DataFrame (``t.read(where=...)`` does).
WHERE = "hudisql.read.where"
#: Hudi's switch for data skipping with the metadata table's indexes (default ``true``);
#: ``false`` leaves partition pruning only.
DATA_SKIPPING = "hoodie.enable.data.skipping"
#: ``HudiTableHandle.read``: ``true`` (default) lets Spark's parquet reader read the base
#: rows no log touches (:mod:`hudisql.read.snapshot`); ``false`` reads through the data
#: source alone.
DIRECT_PARQUET = "hudisql.read.direct.parquet"
#: Hudi's query type option: ``snapshot`` (default), ``read_optimized`` (base files only)
#: or ``incremental`` (:mod:`hudisql.table.read.incremental`).
QUERY_TYPE = "hoodie.datasource.query.type"
SNAPSHOT, READ_OPTIMIZED, INCREMENTAL = "snapshot", "read_optimized", "incremental"
#: An incremental query's range: begin exclusive, end inclusive.
BEGIN_INSTANT = "hoodie.datasource.read.begin.instanttime"
END_INSTANT = "hoodie.datasource.read.end.instanttime"
#: An incremental query's output: ``latest_state`` (default) or ``cdc``.
INCREMENTAL_FORMAT = "hoodie.datasource.query.incremental.format"
LATEST_STATE, CDC = "latest_state", "cdc"
#: Internal (set by :mod:`hudisql.read.snapshot`): JSON ``[[partition, file id], ...]``;
#: only these file slices are read, each whole (the rest of the snapshot is read by Spark).
SLICES = "hudisql.read.slices"

def normalize_instant(text: str) -> str:
    """An instant given as ``yyyyMMddHHmmss[SSS]`` or ``yyyy-MM-dd[ HH:mm:ss[.SSS]]``.

    Returns:
        The 17-digit instant time (see :func:`hudisql.table.table.normalize_as_of`: a time
        to the second means its whole second, a date alone its start).

    Raises:
        HudiSqlError: ``text`` is neither form.
    """
    from hudisql.table.table import normalize_as_of

    try:
        instant = normalize_as_of(text)
    except HudiSqlError as exc:
        raise HudiSqlError(
            f"option {AS_OF_INSTANT}={text!r} is not an instant: give yyyyMMddHHmmssSSS "
            "(as SHOW TIMELINE prints it) or 'yyyy-MM-dd HH:mm:ss.SSS' (UTC)") from exc
    assert instant is not None
    return instant


@dataclass(frozen=True)
class ReadOptions:
    """A read's base path, optional time-travel instant, pinned snapshot and pruning switch.

    ``pinned`` is the last completed instant when ``load(path)`` made the DataFrame: every
    query on that DataFrame reads that snapshot (catalog reads carry none: they read the
    latest snapshot at planning).
    """

    path: str
    as_of: str | None = None
    #: :data:`WHERE`: the predicate fixed for this relation.
    where: str | None = None
    #: :data:`DATA_SKIPPING`.
    data_skipping: bool = True
    pinned: str | None = None
    #: The (partition path, file id) of the only slices to read (see SLICES).
    slices: frozenset[tuple[str, str]] | None = None
    query_type: str = SNAPSHOT
    begin: str | None = None
    end: str | None = None
    incremental_format: str = LATEST_STATE
    full_scan_fallback: bool = False

    @property
    def is_cdc(self) -> bool:
        """True for an incremental query in CDC format (its rows are change records)."""
        return self.query_type == INCREMENTAL and self.incremental_format == CDC

    @classmethod
    def parse(cls, options: Mapping[str, str], schema: StructType | None) -> ReadOptions:
        """The read options from Spark's (case-insensitive) options and the read schema.

        The path comes from ``path`` or, for a table of Spark's session catalog, from the
        base path kept in the schema's first column metadata.

        Raises:
            TableNotFoundError: no path at all.
            HudiSqlError: a malformed ``as.of.instant``.
        """
        lowered = {str(k).lower(): str(v) for k, v in options.items()}
        path = lowered.get("path")
        metadata = (schema.fields[0].metadata or {}) if schema is not None and schema.fields else {}
        # Only a load(path) DataFrame is pinned: a catalog table's schema (and the snapshot
        # in it) was recorded at CREATE TABLE time, and its reads pass no path option.
        pinned = metadata.get(SNAPSHOT_METADATA_KEY) if path else None
        if not path:
            path = metadata.get(PATH_METADATA_KEY)
        if not path:
            raise TableNotFoundError(
                "the hudi data source was given no table path: use "
                "spark.read.format('hudi').load('<base path>'), or register the table with "
                "CREATE TABLE <name> USING hudi LOCATION '<base path>' (without a column "
                "list, so that the table's own schema and path are recorded)"
            )
        if path.startswith("file:/") and not path.startswith("file://"):
            path = path.removeprefix("file:")
        as_of = lowered.get(AS_OF_INSTANT)
        query_type = _choice(lowered, QUERY_TYPE, (SNAPSHOT, READ_OPTIMIZED, INCREMENTAL))
        if as_of and query_type == INCREMENTAL:
            raise ReadOptionError(
                f"options {AS_OF_INSTANT} and {QUERY_TYPE}={INCREMENTAL} do not go together: "
                f"an incremental query reads up to {END_INSTANT}; give that instead")
        if _choice(lowered, PARTITION_PRUNING, ("false", "true")) == "true":
            raise ReadOptionError(
                f"option {PARTITION_PRUNING} is gone: pruning by the filters Spark pushes "
                "loses rows when Spark reuses the relation; give the predicate up front with "
                f"the option {WHERE} (or t.read(where=...)) and apply it with .where()")
        return cls(path=path, as_of=normalize_instant(as_of) if as_of else None,
                   where=lowered.get(WHERE) or None,
                   data_skipping=data_skipping_enabled(lowered),
                   pinned=pinned, slices=_slices(lowered.get(SLICES)), query_type=query_type,
                   begin=lowered.get(BEGIN_INSTANT), end=lowered.get(END_INSTANT),
                   incremental_format=_choice(lowered, INCREMENTAL_FORMAT, (LATEST_STATE, CDC)),
                   full_scan_fallback=_choice(lowered, FULL_SCAN_FALLBACK,
                                              ("false", "true")) == "true")


def data_skipping_enabled(options: Mapping[str, str]) -> bool:
    """Whether :data:`DATA_SKIPPING` is on in ``options`` (default on).

    Raises:
        ReadOptionError: a value other than ``true`` or ``false``.
    """
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    return _choice(lowered, DATA_SKIPPING, ("true", "false")) == "true"


def _choice(options: Mapping[str, str], key: str, allowed: tuple[str, ...]) -> str:
    """Option ``key`` (lower-cased), one of ``allowed`` (the first is the default).

    Raises:
        ReadOptionError: another value.
    """
    value = options.get(key.lower(), allowed[0]).strip().lower()
    if value not in allowed:
        raise ReadOptionError(
            f"option {key}={value!r} is not one of {', '.join(allowed)}; give one of those")
    return value


def _slices(text: str | None) -> frozenset[tuple[str, str]] | None:
    """The :data:`SLICES` option parsed; None when absent.

    Raises:
        HudiSqlError: the option is not the JSON :mod:`hudisql.read.snapshot` writes.
    """
    if text is None:
        return None
    try:
        given = json.loads(text)
        if not isinstance(given, list) or not all(
                isinstance(s, list) and len(s) == 2 for s in given):
            raise ValueError(f"not a list of pairs: {text}")
        return frozenset((str(part), str(fid)) for part, fid in given)
    except (ValueError, TypeError) as exc:
        raise HudiSqlError(
            f"option {SLICES} is internal to hudisql.read.snapshot and must be its JSON "
            f"([[partition, file id], ...]): {exc}"
        ) from exc
