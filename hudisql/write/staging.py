"""Record keys and partition paths as Spark column expressions, when they are exact.

The table core forms ``_hoodie_record_key`` and ``_hoodie_partition_path`` with Arrow
(:func:`~hudisql.table.write_records.record_keys`, :func:`partition_paths`). For key and
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
from hudisql.table.write_records import DEFAULT_PARTITION, PARTITION_PATH, RECORD_KEY

__all__ = ["check_partition_paths", "stage_in_jvm"]

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
    if labelled:
        key = F.concat_ws(",", *[F.concat(F.lit(f"{n}:"), _text(n)) for n in key_fields])
    else:
        key = _text(key_fields[0])
    if not with_partition:
        path = F.lit(None).cast("string")
    elif not partition_fields:
        path = F.lit("")
    else:
        parts = []
        for name in partition_fields:
            value = _text(name)
            value = F.when(value.isNull() | (value == ""), F.lit(DEFAULT_PARTITION)).otherwise(
                value)
            parts.append(F.concat(F.lit(f"{name}="), value) if hive_style else value)
        path = parts[0] if len(parts) == 1 else F.concat_ws("/", *parts)
    return df.withColumn(RECORD_KEY, key).withColumn(PARTITION_PATH, path)


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
