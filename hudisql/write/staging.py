"""Record keys and partition paths as Spark column expressions, when they are exact.

The table core forms ``_hoodie_record_key`` and ``_hoodie_partition_path`` with Arrow
(:func:`~hudisql.table.write.records.record_keys`, :func:`partition_paths`). For key and
partition columns of string, integer, boolean and date type, Spark's cast to string gives
the very same text as Arrow's, so the pipeline can stage records in the JVM (no Python
worker, no Arrow round trip) with these expressions; other types (decimals) keep the
Arrow staging. Null or empty keys are refused before staging; a partition value with
``/`` is found on the driver from the partition paths the staging job counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DateType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
)

from hudisql.errors import WriteError
from hudisql.table.write.records import DEFAULT_PARTITION, PARTITION_PATH, RECORD_KEY

__all__ = ["check_partition_paths", "stage_in_jvm", "stage_keyless", "with_generated_keys"]

#: Where a keyless table's record was in the written DataFrame: its Spark partition and its
#: row number there (Hudi's auto-generated key is ``<instant>_<partition>_<row>``).
_TASK = "_hudisql_key_task"
_ROW = "_hudisql_key_row"

_EXACT_TYPES = (StringType, ByteType, ShortType, IntegerType, LongType, BooleanType, DateType)


def _text(name: str) -> Column:
    return F.col(f"`{name}`").cast("string")


def stage_in_jvm(df: DataFrame, key_fields: Sequence[str], partition_fields: Sequence[str],
                 hive_style: bool, labelled: bool, with_partition: bool) -> DataFrame | None:
    """``df`` with the record key and partition path columns appended, or None.

    None when a key or partition column's type has no exact Spark string form (the caller
    stages with Arrow then). Without ``with_partition`` the partition path is null.
    """
    types = {f.name: f.dataType for f in df.schema.fields}
    used = [*key_fields, *(partition_fields if with_partition else ())]
    if any(not isinstance(types.get(n), _EXACT_TYPES) for n in used):
        return None
    path = _partition_path(partition_fields, hive_style, with_partition)
    if labelled:
        key = F.concat_ws(",", *[F.concat(F.lit(f"{n}:"), _text(n)) for n in key_fields])
    else:
        key = _text(key_fields[0])
    return df.withColumn(RECORD_KEY, key).withColumn(PARTITION_PATH, path)


def _partition_path(partition_fields: Sequence[str], hive_style: bool,
                    with_partition: bool) -> Column:
    """The partition path of a record as a Spark expression (null without ``with_partition``)."""
    if not with_partition:
        return F.lit(None).cast("string")
    if not partition_fields:
        return F.lit("")
    parts = []
    for name in partition_fields:
        value = _text(name)
        value = F.when(value.isNull() | (value == ""), F.lit(DEFAULT_PARTITION)).otherwise(
            value)
        parts.append(F.concat(F.lit(f"{name}="), value) if hive_style else value)
    return parts[0] if len(parts) == 1 else F.concat_ws("/", *parts)


def stage_keyless(df: DataFrame, partition_fields: Sequence[str], hive_style: bool,
                  with_partition: bool, operation: str, table_name: str) -> DataFrame:
    """``df`` staged for a keyless table: its own ``_hoodie_record_key`` where it has one
    (rows read from the table: updates and deletes of stored records), else null, to be
    generated once the instant is known (:func:`with_generated_keys`); the partition path;
    and each row's place in ``df`` (Spark partition, row), which the generated key names.

    Raises:
        WriteError: a partition column without an exact string form, or a delete whose rows
            do not carry ``_hoodie_record_key`` (a keyless table's records have no other key).
    """
    types = {f.name: f.dataType for f in df.schema.fields}
    if with_partition and any(not isinstance(types.get(n), _EXACT_TYPES)
                              for n in partition_fields):
        raise WriteError(
            f"table {table_name} is keyless and partitioned by {list(partition_fields)}; "
            "hudisql writes keyless tables partitioned by string, integer, boolean or date "
            "columns only")
    given = RECORD_KEY in types
    if not given and operation == "delete":
        raise WriteError(
            f"table {table_name} is keyless: its records are addressed by their stored "
            f"{RECORD_KEY}; delete rows read from the table (with their meta columns), or "
            "use DELETE FROM ... WHERE")
    key = F.col(RECORD_KEY).cast("string") if given else F.lit(None).cast("string")
    task = F.spark_partition_id()
    # monotonically_increasing_id is the partition id in the upper 31 bits, the row below.
    row = F.monotonically_increasing_id() - F.shiftleft(task.cast("long"), 33)
    return (df.withColumn(RECORD_KEY, key)
            .withColumn(PARTITION_PATH, _partition_path(partition_fields, hive_style,
                                                        with_partition))
            .withColumn(_TASK, task).withColumn(_ROW, row))


def with_generated_keys(staged: DataFrame, instant: str) -> DataFrame:
    """A keyless write's staged rows with every missing record key generated as Hudi 0.14+
    does (``AutoRecordGenWrapperKeyGenerator``): ``<instant>_<Spark partition>_<row>``."""
    generated = F.concat_ws("_", F.lit(instant), F.col(_TASK).cast("string"),
                            F.col(_ROW).cast("string"))
    return (staged.withColumn(RECORD_KEY, F.coalesce(F.col(RECORD_KEY), generated))
            .drop(_TASK, _ROW))


def check_partition_paths(paths: Iterable[str | None], partition_fields: Sequence[str],
                          table_name: str) -> None:
    """Refuse partition paths whose values held ``/`` (they would nest directories).

    Raises:
        WriteError: naming the partition path and the fields.
    """
    if not partition_fields:
        return
    for path in paths:
        if path is not None and len(path.split("/")) != len(partition_fields):
            raise WriteError(
                f"table {table_name}: partition path {path!r} has a value with '/' in one of "
                f"the partition fields {list(partition_fields)}; partition values cannot "
                "contain '/'"
            )
