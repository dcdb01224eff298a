"""Avro and Arrow schemas of Hudi tables, and conversion between them.

Hudi keeps a table's schema as Avro JSON (``hoodie.table.create.schema``, the commit
metadata's ``schema``, the ``SCHEMA`` header of log blocks, ``parquet.avro.schema``);
hudisql works on Arrow. The Avro shapes written here are the ones Hudi on Spark writes
(checked against the fixtures' parquet footers): a record ``<table>_record`` in namespace
``hoodie.<table>``, every field ``["null", T]`` with default null, nested records named
after their field, decimals as ``fixed`` named ``fixed``, timestamps as timestamp-micros.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from hudisql.errors import UnsupportedFormatError

__all__ = [
    "META_COLUMNS",
    "arrow_to_avro",
    "arrow_to_records",
    "avro_to_arrow",
    "avro_type_to_arrow",
    "decimal_fixed_size",
    "records_to_arrow",
    "resolve_avro",
    "with_meta_fields",
]

#: The five meta columns every stored record carries first, in this order.
META_COLUMNS: tuple[str, ...] = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = ("record", "enum", "fixed", "error")
_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_PRIMITIVE_ARROW: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}

# logicalType -> (the Avro base type it must annotate, its Arrow type)
_LOGICAL_ARROW: dict[str, tuple[str, pa.DataType]] = {
    "date": ("int", pa.date32()),
    "time-millis": ("int", pa.time32("ms")),
    "time-micros": ("long", pa.time64("us")),
    "timestamp-millis": ("long", pa.timestamp("ms", tz="UTC")),
    "timestamp-micros": ("long", pa.timestamp("us", tz="UTC")),
    "timestamp-nanos": ("long", pa.timestamp("ns", tz="UTC")),
    "local-timestamp-millis": ("long", pa.timestamp("ms")),
    "local-timestamp-micros": ("long", pa.timestamp("us")),
    "local-timestamp-nanos": ("long", pa.timestamp("ns")),
    "uuid": ("string", pa.string()),
}


# --------------------------------------------------------------------------- Avro parsing


def _load(schema: str | Mapping[str, Any] | Sequence[Any]) -> Any:
    if isinstance(schema, str):
        text = schema.strip()
        if text in PRIMITIVES:
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise UnsupportedFormatError(
                f"not an Avro schema (invalid JSON at character {e.pos}): {text[:80]!r}"
            ) from None
    return schema


def resolve_avro(schema: str | Mapping[str, Any] | Sequence[Any]) -> Any:
    """Parse an Avro schema and inline every named-type reference.

    Returns:
        The schema as plain JSON values in which named types (records, enums, fixed)
        carry their full name in ``"name"`` and references are replaced by the definition.

    Raises:
        UnsupportedFormatError: invalid JSON, an unknown type name or a recursive type.
    """
    named: dict[str, Any] = {}
    return _resolve(_load(schema), "", named, ())


def _full_name(name: str, namespace: str) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _resolve(node: Any, namespace: str, named: dict[str, Any], stack: tuple[str, ...]) -> Any:
    if isinstance(node, str):
        if node in PRIMITIVES:
            return node
        full = _full_name(node, namespace)
        for candidate in (full, node):
            if candidate in stack:
                raise UnsupportedFormatError(
                    f"recursive Avro type {candidate!r} has no Arrow equivalent"
                )
            if candidate in named:
                return named[candidate]
        raise UnsupportedFormatError(f"unknown Avro type name {node!r}")
    if isinstance(node, list):
        return [_resolve(b, namespace, named, stack) for b in node]
    if not isinstance(node, dict) or "type" not in node:
        raise UnsupportedFormatError(f"not an Avro type: {str(node)[:80]!r}")
    kind = node["type"]
    if kind in _NAMED:
        full = _full_name(str(node["name"]), str(node.get("namespace", namespace)))
        inner_ns = full.rpartition(".")[0]
        out = dict(node, name=full)
        if kind in ("record", "error"):
            out["type"] = "record"
            # Registered before the fields so a self-reference is seen as recursion.
            out["fields"] = [
                dict(f, type=_resolve(f["type"], inner_ns, named, (*stack, full)))
                for f in node.get("fields", [])
            ]
        named[full] = out
        return out
    if kind == "array":
        return dict(node, items=_resolve(node["items"], namespace, named, stack))
    if kind == "map":
        return dict(node, values=_resolve(node["values"], namespace, named, stack))
    if isinstance(kind, (dict, list)) or kind not in PRIMITIVES:
        # {"type": {"type": "array", ...}} or {"type": "some.Named"}: a wrapped type.
        inner = _resolve(kind, namespace, named, stack)
        if isinstance(inner, str) and "logicalType" in node:
            return dict(node, type=inner)
        return inner
    return node if "logicalType" in node else kind


def base_type(node: Any) -> str:
    """The Avro type name of a resolved schema node (``"union"`` for a list)."""
    if isinstance(node, list):
        return "union"
    if isinstance(node, str):
        return node
    return str(node["type"])


def logical_type(node: Any) -> str | None:
    """The logical type of a resolved schema node when it is a valid one, else None."""
    if not isinstance(node, dict):
        return None
    lt = node.get("logicalType")
    if lt == "decimal":
        precision, scale = node.get("precision"), node.get("scale", 0)
        if node["type"] not in ("bytes", "fixed") or not isinstance(precision, int):
            return None
        if precision < 1 or not isinstance(scale, int) or not 0 <= scale <= precision:
            return None
        if node["type"] == "fixed" and decimal_fixed_size(precision) > int(node["size"]):
            return None
        return "decimal"
    if isinstance(lt, str) and lt in _LOGICAL_ARROW and _LOGICAL_ARROW[lt][0] == node["type"]:
        return lt
    # The Avro spec: an unknown or misplaced logical type is ignored.
    return None


def several_branches(node: Any) -> list[Any] | None:
    """The non-null branches of a union of several non-null types (in union order), or None
    when ``node`` is not such a union (Hudi's metadata records hold them: the column-stats
    value wrappers)."""
    if not isinstance(node, list):
        return None
    branches = [b for b in node if b != "null"]
    return branches if len(branches) > 1 else None


def widened_union(branches: Sequence[Any]) -> pa.DataType | None:
    """The one Arrow type of a union of ``int`` and ``long`` (int64) or of ``float`` and
    ``double`` (float64), as Spark's Avro reader maps them; None for other unions."""
    kinds = {base_type(b) for b in branches}
    if len(branches) == 2 and kinds == {"int", "long"}:
        return pa.int64()
    if len(branches) == 2 and kinds == {"float", "double"}:
        return pa.float64()
    return None


def nullable_branch(node: Any) -> tuple[Any, int | None, int | None]:
    """Split a union into its one non-null branch.

    Returns:
        ``(type, null_index, value_index)``; for a non-union node ``(node, None, None)``.

    Raises:
        UnsupportedFormatError: a union of several non-null types (callers map those
            first, see :func:`several_branches`).
    """
    if not isinstance(node, list):
        return node, None, None
    non_null = [i for i, b in enumerate(node) if b != "null"]
    null_idx = next((i for i, b in enumerate(node) if b == "null"), None)
    if len(non_null) > 1:
        kinds = [base_type(node[i]) for i in non_null]
        raise UnsupportedFormatError(
            f"Avro union of several types {kinds} has no single branch; map it with "
            "several_branches"
        )
    if not non_null:
        return "null", null_idx, None
    return node[non_null[0]], null_idx, non_null[0]


# --------------------------------------------------------------------------- Avro -> Arrow


def decimal_fixed_size(precision: int) -> int:
    """The fewest bytes a two's-complement unscaled value of ``precision`` digits needs."""
    size = 1
    while (1 << (8 * size - 1)) - 1 < 10**precision - 1:
        size += 1
    return size


def avro_type_to_arrow(node: Any) -> tuple[pa.DataType, bool]:
    """The Arrow type of a resolved Avro type node.

    Returns:
        ``(arrow_type, nullable)``: nullable when the node is a union with ``"null"``. A
        union of several non-null types is a struct of ``member<i>`` fields (or one
        widened number), as in Spark's Avro reader.

    Raises:
        UnsupportedFormatError: a type with no Arrow equivalent.
    """
    branches = several_branches(node)
    if branches is not None:
        return _union_of(branches), "null" in node
    inner, null_idx, _ = nullable_branch(node)
    nullable = null_idx is not None or inner == "null"
    return _arrow_of(inner), nullable


def _union_of(branches: Sequence[Any]) -> pa.DataType:
    """A union of several non-null types the way Spark's Avro reader maps it
    (``SchemaConverters.toSqlType``): ``int``/``long`` and ``float``/``double`` widened,
    any other union a struct with one nullable field per branch, ``member0``,
    ``member1``, ... in union order (nulls left out), of which one is set."""
    widened = widened_union(branches)
    if widened is not None:
        return widened
    return pa.struct([pa.field(f"member{i}", _arrow_of(b), nullable=True)
                      for i, b in enumerate(branches)])


def _arrow_of(node: Any) -> pa.DataType:
    kind = base_type(node)
    lt = logical_type(node)
    if lt == "decimal":
        precision, scale = int(node["precision"]), int(node.get("scale", 0))
        if precision <= 38:
            return pa.decimal128(precision, scale)
        if precision <= 76:
            return pa.decimal256(precision, scale)
        raise UnsupportedFormatError(f"decimal precision {precision} is above Arrow's 76")
    if lt is not None:
        return _LOGICAL_ARROW[lt][1]
    if kind in _PRIMITIVE_ARROW:
        return _PRIMITIVE_ARROW[kind]
    if kind == "record":
        return pa.struct([_field_of(f) for f in node["fields"]])
    if kind == "enum":
        return pa.string()
    if kind == "fixed":
        return pa.binary(int(node["size"]))
    if kind == "array":
        item, nullable = avro_type_to_arrow(node["items"])
        return pa.list_(pa.field("element", item, nullable=nullable))
    if kind == "map":
        value, nullable = avro_type_to_arrow(node["values"])
        return pa.map_(pa.string(), pa.field("value", value, nullable=nullable))
    if kind == "union":
        return avro_type_to_arrow(node)[0]
    raise UnsupportedFormatError(f"Avro type {kind!r} has no Arrow equivalent")


def _field_of(field: Mapping[str, Any]) -> pa.Field:
    arrow_type, nullable = avro_type_to_arrow(field["type"])
    return pa.field(str(field["name"]), arrow_type, nullable=nullable)


def avro_to_arrow(schema: str | Mapping[str, Any]) -> pa.Schema:
    """The Arrow schema of an Avro record schema (JSON text or parsed).

    Unions ``["null", T]`` (either order) become nullable fields, unions of several types
    what Spark's Avro reader makes of them (see :func:`avro_type_to_arrow`); decimals decimal128;
    ``date`` date32; ``timestamp-micros`` timestamp[us, UTC] (``local-timestamp-*``
    without a time zone); arrays lists of ``element``; maps string-keyed maps; enums and
    uuids strings; fixed fixed-size binary.

    Raises:
        UnsupportedFormatError: not a record schema, or a type with no Arrow equivalent.
    """
    if isinstance(schema, str):  # writers convert one schema per file: convert it once
        return _text_to_arrow(schema)
    return _record_to_arrow(schema)


@functools.lru_cache(maxsize=64)
def _text_to_arrow(text: str) -> pa.Schema:
    return _record_to_arrow(text)


def _record_to_arrow(schema: str | Mapping[str, Any]) -> pa.Schema:
    node = resolve_avro(schema)
    if base_type(node) != "record":
        raise UnsupportedFormatError(
            f"a table schema must be an Avro record, got {base_type(node)!r}"
        )
    return pa.schema([_field_of(f) for f in node["fields"]])


# --------------------------------------------------------------------------- Arrow -> Avro


def _sanitize(name: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return clean if clean and not clean[0].isdigit() else f"_{clean}"


def _meta_field(name: str) -> dict[str, Any]:
    return {"name": name, "type": ["null", "string"], "doc": "", "default": None}


def arrow_to_avro(schema: pa.Schema, table_name: str, with_meta: bool = False) -> dict[str, Any]:
    """The Avro record schema Hudi on Spark writes for an Arrow schema.

    The record is ``<table>_record`` in namespace ``hoodie.<table>``; every field (also
    nested fields, list elements and map values) is ``["null", T]`` with default null, as
    Spark's nullable SQL types convert. Meta columns keep Hudi's ``"doc": ""``.

    Args:
        schema: the Arrow schema (meta columns may or may not be in it).
        table_name: the table's name.
        with_meta: put the five meta columns first (when they are not in ``schema``).

    Returns:
        The Avro schema as a dict (``json.dumps(..., separators=(",", ":"))`` gives Hudi's
        compact text).

    Raises:
        UnsupportedFormatError: an Arrow type with no Avro equivalent, a bad field name.
    """
    name = _sanitize(table_name)
    namespace = f"hoodie.{name}"
    record_name = f"{name}_record"
    fields = []
    seen: set[str] = set()
    if with_meta:
        fields = [_meta_field(m) for m in META_COLUMNS]
        seen.update(META_COLUMNS)
    full = f"{namespace}.{record_name}"
    for field in schema:
        if field.name in seen:
            if field.name in META_COLUMNS:
                continue
            raise UnsupportedFormatError(f"duplicate column {field.name!r} in the schema")
        seen.add(field.name)
        if field.name in META_COLUMNS:
            fields.append(_meta_field(field.name))
            continue
        fields.append(_avro_field(field.name, field.type, full))
    if with_meta:
        # Meta columns first, in Hudi's order, wherever the Arrow schema had them.
        metas = [f for f in fields if f["name"] in META_COLUMNS]
        fields = metas + [f for f in fields if f["name"] not in META_COLUMNS]
    return {"type": "record", "name": record_name, "namespace": namespace, "fields": fields}


def _avro_field(name: str, arrow_type: pa.DataType, namespace: str) -> dict[str, Any]:
    if not _AVRO_NAME.match(name):
        raise UnsupportedFormatError(
            f"column name {name!r} is not a valid Avro name (letters, digits, '_'); rename it"
        )
    return {"name": name, "type": ["null", _avro_type(arrow_type, name, namespace)],
            "default": None}


def _avro_type(t: pa.DataType, name: str, namespace: str) -> Any:
    simple = _simple_avro_type(t)
    if simple is not None:
        return simple
    if pa.types.is_decimal(t):
        return {"type": "fixed", "name": "fixed", "namespace": f"{namespace}.{name}",
                "size": decimal_fixed_size(t.precision), "logicalType": "decimal",
                "precision": t.precision, "scale": t.scale}
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed", "name": name, "namespace": namespace, "size": t.byte_width}
    if pa.types.is_struct(t):
        inner = f"{namespace}.{name}"
        return {"type": "record", "name": name, "namespace": namespace,
                "fields": [_avro_field(f.name, f.type, inner) for f in t]}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise UnsupportedFormatError(
                f"map column {name!r} has {t.key_type} keys; Avro maps need string keys"
            )
        return {"type": "map", "values": ["null", _avro_type(t.item_type, name, namespace)]}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {"type": "array", "items": ["null", _avro_type(t.value_type, name, namespace)]}
    if pa.types.is_dictionary(t):
        return _avro_type(t.value_type, name, namespace)
    raise UnsupportedFormatError(f"column {name!r} has type {t}, which Avro cannot hold")


def _simple_avro_type(t: pa.DataType) -> Any:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_integer(t):
        small = t.bit_width < 32 or (t.bit_width == 32 and pa.types.is_signed_integer(t))
        return "int" if small else "long"
    if pa.types.is_floating(t):
        return "double" if t.bit_width == 64 else "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or t == pa.string_view():
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or t == pa.binary_view():
        return "bytes"
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        unit = {"s": "millis", "ms": "millis"}.get(t.unit, "micros")
        prefix = "timestamp" if t.tz is not None else "local-timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    return None


def with_meta_fields(avro: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an Avro record schema with the five meta columns first (added if missing)."""
    fields = list(avro.get("fields", []))
    present = {f["name"]: f for f in fields}
    metas = [present.get(m) or _meta_field(m) for m in META_COLUMNS]
    rest = [f for f in fields if f["name"] not in META_COLUMNS]
    return dict(avro, fields=metas + rest)


# --------------------------------------------------------------------------- records


def arrow_to_records(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of ``table`` as Avro-ready dicts (maps as dicts, the rest as ``to_pylist``)."""
    rows: list[dict[str, Any]] = table.to_pylist()
    fixes = [(f.name, f.type) for f in table.schema if _has_map(f.type)]
    for row in rows:
        for name, t in fixes:
            row[name] = _maps_to_dicts(row[name], t)
    return rows


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_map(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_map(t.value_type)
    return False


def _maps_to_dicts(value: Any, t: pa.DataType) -> Any:
    if value is None or not _has_map(t):
        return value
    if pa.types.is_map(t):
        return {k: _maps_to_dicts(v, t.item_type) for k, v in value}
    if pa.types.is_struct(t):
        return {f.name: _maps_to_dicts(value[f.name], f.type) for f in t}
    return [_maps_to_dicts(v, t.value_type) for v in value]


def records_to_arrow(records: Sequence[Mapping[str, Any]], arrow_schema: pa.Schema) -> pa.Table:
    """A table of ``arrow_schema`` from dict records (maps as dicts or lists of pairs).

    Raises:
        pyarrow.ArrowInvalid / ArrowTypeError: a value does not fit its column's type.
    """
    return pa.Table.from_pylist(list(records), schema=arrow_schema)
