"""Creating a Hudi table without Spark: ``hoodie.properties`` and the timeline folders.

The table is version 6 (timeline layout 1) with the property keys Hudi 0.14/0.15 writes, or
version 8 or 9 (timeline layout 2, the keys Hudi 1.0/1.1 write) when the options set
``hoodie.write.table.version`` (:mod:`hudisql.table.format.table_versions`).
With a precombine field its payload class is ``DefaultHoodieRecordPayload``, Hudi's
event-time merge (the greatest precombine value wins, also against stored records); see
``new_table_properties``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from hudisql.errors import TableAlreadyExistsError, UnsupportedFormatError, WriteError
from hudisql.table.format import properties as P
from hudisql.table.format.schema import arrow_to_avro
from hudisql.table.format.table_versions import (
    WRITE_TABLE_VERSION,
    hudi1x_properties,
    write_table_version,
)
from hudisql.table.io.locations import check_location
from hudisql.table.io.storage import Storage
from hudisql.table.table import HudiTable
from hudisql.table.write.files import avro_text
from hudisql.table.write.records import is_key_type

__all__ = ["TIMELINE_FOLDERS", "create_table"]

_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TYPE_ALIASES = {"MOR": P.MERGE_ON_READ, "COW": P.COPY_ON_WRITE}
#: Set through create_table's arguments, never through options.
_RESERVED = frozenset({
    P.NAME, P.TABLE_TYPE, P.VERSION, P.TIMELINE_LAYOUT, P.RECORD_KEY_FIELDS, P.PARTITION_FIELDS,
    P.PRECOMBINE_FIELD, P.KEYGEN_CLASS, P.CREATE_SCHEMA, P.CHECKSUM, P.TIMELINE_PATH,
})
#: The folders Hudi creates with a table (timeline layout 1).
TIMELINE_FOLDERS = (
    ".hoodie", ".hoodie/archived", ".hoodie/.temp", ".hoodie/.schema", ".hoodie/.aux",
    ".hoodie/.aux/.bootstrap", ".hoodie/.aux/.bootstrap/.partitions",
    ".hoodie/.aux/.bootstrap/.fileids",
)

#: The folders Hudi 1.x creates with a version 8/9 table (timeline layout 2).
LAYOUT_2_FOLDERS = (
    ".hoodie", ".hoodie/timeline", ".hoodie/timeline/history", ".hoodie/.temp",
    ".hoodie/.schema", ".hoodie/.aux", ".hoodie/.aux/.bootstrap",
    ".hoodie/.aux/.bootstrap/.partitions", ".hoodie/.aux/.bootstrap/.fileids",
)


def _fields(value: str | Sequence[str], what: str, name: str) -> list[str]:
    items = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(f, str) and f.strip() for f in items):
        raise WriteError(f"table {name}: {what} must be column names, got {value!r}")
    return [f.strip() for f in items]


def _check_columns(schema: pa.Schema, fields: list[str], what: str, name: str) -> None:
    for column in fields:
        if schema.get_field_index(column) < 0:
            raise WriteError(
                f"table {name}: {what} {column!r} is not a column of the schema "
                f"(columns: {schema.names})"
            )


def _check_key_types(schema: pa.Schema, fields: list[str], what: str, name: str) -> None:
    for column in fields:
        dtype = schema.field(column).type
        if not is_key_type(dtype):
            raise WriteError(
                f"table {name}: {what} {column!r} has type {dtype}; use a string, integer, "
                "boolean, date or decimal column"
            )


def _orderable(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)
        or pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
        or pa.types.is_date32(dtype) or pa.types.is_timestamp(dtype)
    )


def _table_type(table_type: str, name: str) -> str:
    normal = str(table_type).strip().upper()
    normal = _TYPE_ALIASES.get(normal, normal)
    if normal not in P.TABLE_TYPES:
        raise WriteError(
            f"table {name}: unknown table type {table_type!r}; use MERGE_ON_READ (mor) or "
            "COPY_ON_WRITE (cow)"
        )
    return normal


def _options(options: Mapping[str, Any] | None, name: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (options or {}).items():
        if not isinstance(key, str) or not key.startswith("hoodie."):
            raise WriteError(f"table {name}: option {key!r} is not a hoodie.* table property")
        if key in _RESERVED:
            raise WriteError(
                f"table {name}: {key} is set from create_table's arguments, not from options"
            )
        out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _check_location(storage: Storage, name: str) -> None:
    where = storage.base_uri
    if storage.is_file(""):
        raise WriteError(f"cannot create table {name}: {where} is a file, not a folder")
    if storage.is_file(P.PROPERTIES_FILE):
        raise TableAlreadyExistsError(
            f"a Hudi table already exists at {where} (it has .hoodie/hoodie.properties); open "
            "it with HudiTable.open, or choose another location"
        )
    leftovers = [s.path for s in storage.list_recursive(".hoodie") if not s.is_dir]
    if leftovers:
        raise TableAlreadyExistsError(
            f"{where} holds a .hoodie folder with files but no hoodie.properties (e.g. "
            f"{leftovers[0]}): a damaged table; restore its hoodie.properties or remove the "
            "folder before creating a table there"
        )


def create_table(
    path: str | os.PathLike[str],
    name: str,
    schema: pa.Schema,
    record_key_fields: str | Sequence[str],
    partition_fields: str | Sequence[str] = (),
    precombine_field: str | None = None,
    table_type: str = P.MERGE_ON_READ,
    options: Mapping[str, Any] | None = None,
) -> HudiTable:
    """Create an empty Hudi table at ``path``: hoodie.properties and the timeline.

    Version 6 unless ``options`` set ``hoodie.write.table.version`` to 8 or 9.

    Args:
        schema: the table's columns (no ``_hoodie_*`` meta columns: they are added).
        record_key_fields: the column(s) whose values make the record key; none makes a
            keyless table (Hudi 0.14+): writers generate each record's key
            (``<instant>_<task partition>_<row>``) and later writes address a record by
            its stored ``_hoodie_record_key``.
        partition_fields: the column(s) whose values make the partition path.
        precombine_field: the column whose greatest value wins when records of one key
            meet (in a batch, and against stored records); None: the later write wins.
        table_type: ``MERGE_ON_READ`` / ``mor`` or ``COPY_ON_WRITE`` / ``cow``.
        options: other ``hoodie.*`` table properties, e.g.
            ``hoodie.datasource.write.hive_style_partitioning`` (default true) or
            ``hoodie.database.name`` (default ``default``).

    Returns:
        The new table, opened.

    Raises:
        WriteError: a bad argument (nothing is written then).
        TableAlreadyExistsError: a table (or a damaged one) is already at ``path``.
        StorageLocationError: ``path`` is a URI whose store cannot be used (unknown scheme,
            missing bucket, refused credentials, credentials in the URI).
    """
    if not isinstance(name, str) or not _TABLE_NAME.match(name):
        raise WriteError(
            f"table name {name!r} is not valid: use letters, digits and '_', not starting "
            "with a digit"
        )
    if not isinstance(schema, pa.Schema) or len(schema) == 0:
        raise WriteError(f"table {name}: schema must be a non-empty pyarrow.Schema")
    meta = [f for f in schema.names if f.startswith("_hoodie_")]
    if meta:
        raise WriteError(f"table {name}: columns {meta} use the reserved prefix _hoodie_")
    kind = _table_type(table_type, name)
    keys = _fields(record_key_fields, "record key fields", name) if record_key_fields else []
    parts = _fields(partition_fields, "partition fields", name) if partition_fields else []
    extra_given = dict(options or {})
    if not keys and str(extra_given.get(P.POPULATE_META_FIELDS, "true")).lower() == "false":
        raise WriteError(
            f"table {name}: a table without record key fields keys its records by "
            f"auto-generated keys kept in _hoodie_record_key, so {P.POPULATE_META_FIELDS} "
            "cannot be false; give record key fields or leave that option out")
    _check_columns(schema, keys, "record key field", name)
    _check_columns(schema, parts, "partition field", name)
    _check_key_types(schema, keys, "record key field", name)
    _check_key_types(schema, parts, "partition field", name)
    if precombine_field is not None:
        _check_columns(schema, [precombine_field], "precombine field", name)
        if not _orderable(schema.field(precombine_field).type):
            raise WriteError(
                f"table {name}: precombine field {precombine_field!r} has type "
                f"{schema.field(precombine_field).type}, which has no order Hudi can compare"
            )
    try:
        avro = arrow_to_avro(schema, name)
    except UnsupportedFormatError as exc:
        raise WriteError(f"table {name}: {exc}") from exc
    extra = _options(options, name)
    hive_style = extra.pop(P.HIVE_STYLE, "true").strip().lower()
    if hive_style not in ("true", "false"):
        raise WriteError(f"table {name}: {P.HIVE_STYLE} must be true or false, not {hive_style!r}")
    database = extra.pop(P.DATABASE, "default")
    version = write_table_version(extra, f"table {name}")
    extra.pop(WRITE_TABLE_VERSION, None)  # a writer setting, not a table property
    props = P.new_table_properties(
        name, kind, keys, parts, precombine_field, avro_text(avro), database,
        hive_style == "true", extra,
    )
    if version != P.WRITE_VERSION:
        props = hudi1x_properties(props, version, initial_version=version)
    check_location(os.fspath(path))  # an object store's bucket and credentials, first
    storage = Storage(os.fspath(path))
    _check_location(storage, name)
    for folder in TIMELINE_FOLDERS if version == P.WRITE_VERSION else LAYOUT_2_FOLDERS:
        storage.makedirs(folder)
    now = datetime.now(UTC)
    comment = (f"Properties saved on {now.isoformat().replace('+00:00', 'Z')}\n"
               f"{now.strftime('%a %b %d %H:%M:%S UTC %Y')}")
    try:
        storage.create_if_absent(
            P.PROPERTIES_FILE, P.format_properties(props, comment).encode("ascii")
        )
    except FileExistsError:
        raise TableAlreadyExistsError(
            f"another writer created a table at {storage.base_uri} at the same moment; open it"
        ) from None
    return HudiTable.open(path)
