"""Avro binary records <-> Arrow columns, through code generated once per schema.

An Avro data block holds records one after another (each ``int32`` length + Avro binary).
Decoding them one dict at a time and then building Arrow from the dicts costs twice; here
a decoder specialised for the writer schema is generated as Python source and appends each
value straight to its column's list (nested types keep offsets and validity lists, so no
per-row dicts are made), and an encoder reads the columns the same way. Dates, times,
timestamps and decimals travel as plain integers, never as ``datetime``/``Decimal``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

from hudisql.errors import UnsupportedFormatError, WriteError
from hudisql.table.schema import (
    avro_type_to_arrow,
    base_type,
    logical_type,
    nullable_branch,
    resolve_avro,
)

__all__ = ["AvroDecodeError", "RecordCodec", "record_codec"]

_INT32_BE = struct.Struct(">i")
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")

# Leaf kinds: how a value is read/written and which Python value stands for it.
_INT_KINDS = frozenset({"int", "long", "date", "time-millis", "time-micros", "timestamp"})


class AvroDecodeError(ValueError):
    """Avro bytes do not match the schema (the caller adds the file and block)."""


@dataclass
class _Node:
    """One Arrow array to build: a leaf, a struct, a list or a map."""

    id: int
    kind: str  # leaf kind, or "struct" / "list" / "map"
    arrow_type: pa.DataType
    nullable: bool  # the Avro type is a union with null
    null_idx: int = 0  # union branch indexes (only when nullable)
    value_idx: int = 0
    children: list[_Node] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # struct field names
    size: int = 0  # fixed size
    symbols: tuple[str, ...] = ()  # enum symbols


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: (value, next position)."""
    b = data[pos]
    pos += 1
    n = b & 0x7F
    shift = 7
    while b & 0x80:
        if shift > 63:
            raise AvroDecodeError(f"varint longer than 10 bytes at {pos}")
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


def _write_varint(out: bytearray, z: int) -> None:
    """Append the (already zig-zagged, non-negative) varint ``z``."""
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def _decimal_bytes(v: int) -> bytes:
    """The shortest big-endian two's complement of ``v`` (Java's BigInteger.toByteArray)."""
    bits = (v if v >= 0 else ~v).bit_length() + 1
    return v.to_bytes((bits + 7) // 8, "big", signed=True)


def _fail(msg: str) -> None:
    raise AvroDecodeError(msg)


class _Builder:
    """Turns a resolved Avro type into a tree of nodes."""

    def __init__(self) -> None:
        self.nodes: list[_Node] = []

    def node(self, avro: Any, path: str) -> _Node:
        inner, null_idx, value_idx = nullable_branch(avro)
        nullable = null_idx is not None
        arrow_type, _ = avro_type_to_arrow(avro)
        n = _Node(len(self.nodes), self._kind(inner, path), arrow_type, nullable)
        self.nodes.append(n)
        if nullable:
            n.null_idx = null_idx or 0
            n.value_idx = value_idx if value_idx is not None else n.null_idx
        kind = base_type(inner)
        if n.kind == "struct":
            for f in inner["fields"]:
                n.names.append(str(f["name"]))
                n.children.append(self.node(f["type"], f"{path}.{f['name']}"))
        elif n.kind == "list":
            n.children.append(self.node(inner["items"], f"{path}[]"))
        elif n.kind == "map":
            key = _Node(len(self.nodes), "string", pa.string(), False)
            self.nodes.append(key)
            n.children += [key, self.node(inner["values"], f"{path}{{}}")]
        elif n.kind in ("fixed", "decimal-fixed"):
            n.size = int(inner["size"])
        elif n.kind == "enum":
            n.symbols = tuple(str(s) for s in inner["symbols"])
        elif kind == "null" and not nullable:
            n.nullable, n.null_idx, n.value_idx = True, -1, -1
        return n

    @staticmethod
    def _kind(inner: Any, path: str) -> str:
        kind = base_type(inner)
        lt = logical_type(inner)
        if lt == "decimal":
            return "decimal-fixed" if kind == "fixed" else "decimal-bytes"
        if lt in ("date", "time-millis", "time-micros"):
            return lt
        if lt is not None and lt.startswith(("timestamp", "local-timestamp")):
            return "timestamp"
        mapping = {"record": "struct", "array": "list", "map": "map"}
        if kind in mapping:
            return mapping[kind]
        if kind in ("null", "boolean", "int", "long", "float", "double", "bytes", "string",
                    "enum", "fixed"):
            return kind
        raise UnsupportedFormatError(f"Avro type {kind!r} at {path} has no Arrow equivalent")


# --------------------------------------------------------------------------- decoding


class _DecoderSource:
    """Python source of a decoder for one record schema."""

    def __init__(self, nodes: list[_Node]) -> None:
        self.nodes = nodes
        self.lines: list[str] = []

    def emit(self, ind: int, text: str) -> None:
        self.lines.append("    " * ind + text)

    def read_long(self, ind: int, var: str) -> None:
        # One-byte varints (|v| < 64) are by far the most common: decode them inline.
        self.emit(ind, "b = data[pos]")
        self.emit(ind, "if b < 128:")
        self.emit(ind + 1, f"{var} = (b >> 1) ^ -(b & 1); pos += 1")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{var}, pos = _rl(data, pos)")

    def null(self, n: _Node, ind: int) -> None:
        """Append a null (or a placeholder under a null parent) to node ``n``."""
        k = n.id
        if n.kind == "struct":
            self.emit(ind, f"m{k}(False)")
            for c in n.children:
                self.null(c, ind)
        elif n.kind in ("list", "map"):
            self.emit(ind, f"m{k}(False); o{k}(t{k})")
        else:
            self.emit(ind, f"a{k}(None)")

    def value(self, n: _Node, ind: int) -> None:
        """Decode one value of node ``n`` (the union branch already read) and append it."""
        k = n.id
        kind = n.kind
        if kind == "struct":
            for c in n.children:
                self.field(c, ind)
            self.emit(ind, f"m{k}(True)")
        elif kind in ("list", "map"):
            self.read_long(ind, f"n{k}")
            self.emit(ind, f"while n{k}:")
            self.emit(ind + 1, f"if n{k} < 0:")
            self.emit(ind + 2, f"n{k} = -n{k}; _, pos = _rl(data, pos)")
            self.emit(ind + 1, f"if n{k} > end - pos + 1048576: _fail('block count ' + str(n{k}))")
            self.emit(ind + 1, f"t{k} += n{k}")
            self.emit(ind + 1, f"for _ in range(n{k}):")
            for c in n.children:
                self.field(c, ind + 2)
            self.read_long(ind + 1, f"n{k}")
            self.emit(ind, f"m{k}(True); o{k}(t{k})")
        elif kind in ("string", "bytes", "decimal-bytes"):
            self.read_long(ind, "ln")
            self.emit(ind, "if ln < 0: _fail('negative length ' + str(ln))")
            value = {"string": "data[pos:pos + ln].decode()", "bytes": "data[pos:pos + ln]",
                     "decimal-bytes": "_ifb(data[pos:pos + ln], 'big', signed=True)"}[kind]
            self.emit(ind, f"a{k}({value}); pos += ln")
        elif kind in ("fixed", "decimal-fixed"):
            s = n.size
            value = f"data[pos:pos + {s}]"
            if kind == "decimal-fixed":
                value = f"_ifb({value}, 'big', signed=True)"
            self.emit(ind, f"a{k}({value}); pos += {s}")
        elif kind in _INT_KINDS:
            self.read_long(ind, "v")
            self.emit(ind, f"a{k}(v)")
        elif kind == "boolean":
            self.emit(ind, f"a{k}(data[pos] != 0); pos += 1")
        elif kind == "float":
            self.emit(ind, f"a{k}(_uf(data, pos)[0]); pos += 4")
        elif kind == "double":
            self.emit(ind, f"a{k}(_ud(data, pos)[0]); pos += 8")
        elif kind == "enum":
            self.read_long(ind, "v")
            self.emit(ind, f"if not 0 <= v < {len(n.symbols)}: _fail('enum index ' + str(v))")
            self.emit(ind, f"a{k}(S{k}[v])")
        elif kind == "null":
            self.emit(ind, f"a{k}(None)")
        else:  # pragma: no cover - _Builder only makes the kinds above
            raise AssertionError(kind)

    def field(self, n: _Node, ind: int) -> None:
        """Decode a value that may be a ``[null, T]`` union."""
        if not n.nullable or n.null_idx < 0:
            self.value(n, ind)
            return
        # Union indexes 0 and 1 are the single zig-zag bytes 0 and 2.
        self.emit(ind, "b = data[pos]; pos += 1")
        self.emit(ind, f"if b == {2 * n.value_idx}:")
        self.value(n, ind + 1)
        self.emit(ind, f"elif b == {2 * n.null_idx}:")
        self.null(n, ind + 1)
        self.emit(ind, "else:")
        self.emit(ind + 1, "_fail('union index ' + str(b))")

    def build(self, root: _Node) -> str:
        self.emit(0, "def decode(data, pos, count, end):")
        names = []
        for n in self.nodes[1:]:  # the root record is the row itself: no lists of its own
            k = n.id
            if n.kind in ("struct", "list", "map"):
                self.emit(1, f"M{k} = []; m{k} = M{k}.append")
                names.append(f"M{k}")
            if n.kind in ("list", "map"):
                self.emit(1, f"O{k} = [0]; o{k} = O{k}.append; t{k} = 0")
                names.append(f"O{k}")
            if n.kind not in ("struct", "list", "map"):
                self.emit(1, f"A{k} = []; a{k} = A{k}.append")
                names.append(f"A{k}")
        self.emit(1, "for _ in range(count):")
        self.emit(2, "if pos + 4 > end: _fail('record length cut off')")
        self.emit(2, "rl = _ri(data, pos)[0]; pos += 4; rend = pos + rl")
        self.emit(2, "if rl < 0 or rend > end: _fail('record length ' + str(rl))")
        for c in root.children:
            self.field(c, 2)
        self.emit(2, "if pos != rend: _fail('record ends at ' + str(pos) + ', not ' + str(rend))")
        self.emit(1, "return pos, {" + ", ".join(f"'{x}': {x}" for x in names) + "}")
        return "\n".join(self.lines)


def _leaf_array(n: _Node, values: list[Any]) -> pa.Array:
    t = n.arrow_type
    if n.kind in ("decimal-fixed", "decimal-bytes"):
        return _decimal_array(values, t)
    if n.kind == "null":
        return pa.nulls(len(values))
    if n.kind in _INT_KINDS and n.kind not in ("int", "long"):
        # Plain integers: build the storage type, then reinterpret (no datetime objects).
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        return pa.array(values, storage).view(t)
    return pa.array(values, t)


def _decimal_array(values: list[int | None], t: pa.DataType) -> pa.Array:
    """A decimal array from unscaled integers (None for null)."""
    width = t.byte_width
    limit = 10**t.precision
    mask = [v is None for v in values]
    ints = [0 if v is None else v for v in values]
    if ints and (max(ints) >= limit or min(ints) <= -limit):
        raise AvroDecodeError(f"decimal value exceeds precision {t.precision}")
    if width == 16 and t.precision <= 18:
        lo = np.array(ints, dtype=np.int64)
        data = np.empty((len(ints), 2), dtype=np.int64)
        data[:, 0] = lo
        data[:, 1] = lo >> 63
        buf = pa.py_buffer(data.tobytes())
    else:
        buf = pa.py_buffer(b"".join(v.to_bytes(width, "little", signed=True) for v in ints))
    nulls = sum(mask)
    validity = pa.array([not m for m in mask], pa.bool_()).buffers()[1] if nulls else None
    return pa.Array.from_buffers(t, len(values), [validity, buf], null_count=nulls)


def _mask(validity: list[bool]) -> pa.Array | None:
    if all(validity):
        return None
    return pa.array([not v for v in validity], pa.bool_())


def _build_array(n: _Node, cols: dict[str, list[Any]]) -> pa.Array:
    k = n.id
    if n.kind == "struct":
        children = [_build_array(c, cols) for c in n.children]
        fields = list(n.arrow_type)
        return pa.StructArray.from_arrays(children, fields=fields, mask=_mask(cols[f"M{k}"]))
    if n.kind == "list":
        offsets = pa.array(cols[f"O{k}"], pa.int32())
        child = _build_array(n.children[0], cols)
        return pa.ListArray.from_arrays(
            offsets, child, type=n.arrow_type, mask=_mask(cols[f"M{k}"])
        )
    if n.kind == "map":
        offsets = pa.array(cols[f"O{k}"], pa.int32())
        keys = _build_array(n.children[0], cols)
        items = _build_array(n.children[1], cols)
        return pa.MapArray.from_arrays(
            offsets, keys, items, type=n.arrow_type, mask=_mask(cols[f"M{k}"])
        )
    return _leaf_array(n, cols[f"A{k}"])


# --------------------------------------------------------------------------- encoding


class _EncoderSource:
    """Python source of an encoder for one record schema, reading column lists."""

    def __init__(self, nodes: list[_Node]) -> None:
        self.nodes = nodes
        self.lines: list[str] = []

    def emit(self, ind: int, text: str) -> None:
        self.lines.append("    " * ind + text)

    def write_long(self, ind: int, expr: str) -> None:
        self.emit(ind, f"z = {expr}; z = (z << 1) ^ (z >> 63)")
        self.emit(ind, "if z < 128: out.append(z)")
        self.emit(ind, "else: _wv(out, z)")

    def write_len(self, ind: int, expr: str) -> None:
        self.emit(ind, f"z = {expr} << 1")
        self.emit(ind, "if z < 128: out.append(z)")
        self.emit(ind, "else: _wv(out, z)")

    def value(self, n: _Node, ix: str, ind: int) -> None:
        """Encode the (non-null) value of node ``n`` at row ``ix``."""
        k = n.id
        kind = n.kind
        if kind == "struct":
            for c in n.children:
                self.field(c, ix, ind)
        elif kind in ("list", "map"):
            self.emit(ind, f"s{k} = O{k}[{ix}]; e{k} = O{k}[{ix} + 1]")
            self.emit(ind, f"if e{k} > s{k}:")
            self.write_long(ind + 1, f"e{k} - s{k}")
            self.emit(ind + 1, f"for j{k} in range(s{k}, e{k}):")
            for c in n.children:
                self.field(c, f"j{k}", ind + 2)
            self.emit(ind, "out.append(0)")
        elif kind in ("string", "bytes"):
            self.emit(ind, f"v = A{k}[{ix}]")
            self.write_len(ind, "len(v)")
            self.emit(ind, "out += v")
        elif kind == "decimal-bytes":
            self.emit(ind, f"v = _db(A{k}[{ix}])")
            self.write_len(ind, "len(v)")
            self.emit(ind, "out += v")
        elif kind == "decimal-fixed":
            self.emit(ind, f"out += A{k}[{ix}].to_bytes({n.size}, 'big', signed=True)")
        elif kind == "fixed":
            self.emit(ind, f"out += A{k}[{ix}]")
        elif kind in _INT_KINDS:
            self.write_long(ind, f"A{k}[{ix}]")
        elif kind == "boolean":
            self.emit(ind, f"out.append(1 if A{k}[{ix}] else 0)")
        elif kind == "float":
            self.emit(ind, f"out += _pf(A{k}[{ix}])")
        elif kind == "double":
            self.emit(ind, f"out += _pd(A{k}[{ix}])")
        elif kind == "enum":
            self.emit(ind, f"v = S{k}.get(A{k}[{ix}])")
            self.emit(ind, f"if v is None: _bad_enum({k}, A{k}[{ix}])")
            self.write_long(ind, "v")
        elif kind == "null":
            pass
        else:  # pragma: no cover
            raise AssertionError(kind)

    def is_null(self, n: _Node, ix: str) -> str:
        if n.kind in ("struct", "list", "map"):
            return f"not M{n.id}[{ix}]"
        return f"A{n.id}[{ix}] is None"

    def field(self, n: _Node, ix: str, ind: int) -> None:
        if n.kind == "null":
            if n.nullable and n.null_idx >= 0:
                self.emit(ind, f"out.append({2 * n.null_idx})")
            return
        if not n.nullable:
            self.emit(ind, f"if {self.is_null(n, ix)}: _null({n.id})")
            self.value(n, ix, ind)
            return
        self.emit(ind, f"if {self.is_null(n, ix)}:")
        self.emit(ind + 1, f"out.append({2 * n.null_idx})")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"out.append({2 * n.value_idx})")
        self.value(n, ix, ind + 1)

    def build(self, root: _Node) -> str:
        args = []
        for n in self.nodes[1:]:  # the root record is the row itself: no lists of its own
            if n.kind in ("struct", "list", "map"):
                args.append(f"M{n.id}")
            if n.kind in ("list", "map"):
                args.append(f"O{n.id}")
            if n.kind not in ("struct", "list", "map"):
                args.append(f"A{n.id}")
        self.emit(0, "def encode(count, out, cols):")
        if args:
            self.emit(1, ", ".join(args) + ", = cols")
        self.emit(1, "for i in range(count):")
        self.emit(2, "st = len(out)")
        self.emit(2, "out += b'\\x00\\x00\\x00\\x00'")
        for c in root.children:
            self.field(c, "i", 2)
        self.emit(2, "_pi(out, st, len(out) - st - 4)")
        return "\n".join(self.lines)


def _column_lists(n: _Node, arr: pa.Array, out: list[Any]) -> None:
    """Append the Python lists the encoder reads for node ``n`` (in argument order)."""
    if n.kind in ("struct", "list", "map"):
        out.append(arr.is_valid().to_pylist() if arr.null_count else [True] * len(arr))
    if n.kind == "struct":
        for i, c in enumerate(n.children):
            _column_lists(c, arr.field(i), out)
        return
    if n.kind == "list":
        out.append(arr.offsets.to_pylist())
        _column_lists(n.children[0], arr.values, out)
        return
    if n.kind == "map":
        out.append(arr.offsets.to_pylist())
        _column_lists(n.children[0], arr.keys, out)
        _column_lists(n.children[1], arr.items, out)
        return
    out.append(_leaf_values(n, arr))


def _leaf_values(n: _Node, arr: pa.Array) -> list[Any]:
    kind = n.kind
    if kind in ("string", "bytes"):
        return arr.cast(pa.binary()).to_pylist()  # type: ignore[no-any-return]
    if kind in ("decimal-fixed", "decimal-bytes"):
        return _unscaled(arr)
    if kind in _INT_KINDS and kind not in ("int", "long"):
        storage = pa.int32() if arr.type.bit_width == 32 else pa.int64()
        return arr.view(storage).to_pylist()  # type: ignore[no-any-return]
    return arr.to_pylist()  # type: ignore[no-any-return]


def _unscaled(arr: pa.Array) -> list[int | None]:
    """The unscaled integers of a decimal array (None for null)."""
    width = arr.type.byte_width
    buf = arr.buffers()[1]
    raw = memoryview(buf)[arr.offset * width : (arr.offset + len(arr)) * width]
    if width == 16 and arr.type.precision <= 18:
        values = np.frombuffer(raw, dtype="<i8").reshape(-1, 2)[:, 0].tolist()
    else:
        values = [int.from_bytes(raw[i : i + width], "little", signed=True)
                  for i in range(0, len(raw), width)]
    if arr.null_count:
        valid = arr.is_valid().to_pylist()
        return [v if ok else None for v, ok in zip(values, valid, strict=True)]
    return values  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- the codec


class RecordCodec:
    """Encodes Arrow tables to Avro data block records and decodes them, for one schema."""

    def __init__(self, avro_schema: str | dict[str, Any]) -> None:
        resolved = resolve_avro(avro_schema)
        if base_type(resolved) != "record":
            raise UnsupportedFormatError("a data block schema must be an Avro record")
        builder = _Builder()
        self._root = builder.node(resolved, "")
        self._nodes = builder.nodes
        self.arrow_schema = pa.schema(
            [pa.field(name, c.arrow_type, nullable=c.nullable)
             for name, c in zip(self._root.names, self._root.children, strict=True)]
        )
        self._decode = self._compile(_DecoderSource(self._nodes).build(self._root), "decode")
        self._encode = self._compile(_EncoderSource(self._nodes).build(self._root), "encode")

    def _compile(self, source: str, name: str) -> Callable[..., Any]:
        env: dict[str, Any] = {
            "_rl": _read_long, "_wv": _write_varint, "_fail": _fail, "_db": _decimal_bytes,
            "_ri": _INT32_BE.unpack_from, "_pi": _INT32_BE.pack_into,
            "_uf": _FLOAT.unpack_from, "_ud": _DOUBLE.unpack_from,
            "_pf": _FLOAT.pack, "_pd": _DOUBLE.pack, "_ifb": int.from_bytes,
            "_null": self._null_error, "_bad_enum": self._enum_error,
        }
        for n in self._nodes:
            if n.kind == "enum":
                env[f"S{n.id}"] = (
                    n.symbols if name == "decode" else {s: i for i, s in enumerate(n.symbols)}
                )
        exec(compile(source, f"<avro {name}r>", "exec"), env)
        return env[name]  # type: ignore[no-any-return]

    def _null_error(self, node_id: int) -> None:
        raise WriteError(f"a null value in {self._path(node_id)}, which the schema does not allow")

    def _enum_error(self, node_id: int, value: Any) -> None:
        raise WriteError(f"{value!r} is not a symbol of the enum {self._path(node_id)}")

    def _path(self, node_id: int) -> str:
        def walk(n: _Node, path: str) -> str | None:
            if n.id == node_id:
                return path or "the record"
            for i, c in enumerate(n.children):
                label = n.names[i] if n.kind == "struct" else ("key" if i == 0 else "value")
                found = walk(c, f"{path}.{label}" if path else label)
                if found:
                    return found
            return None

        return walk(self._root, "") or f"node {node_id}"

    def decode(self, data: bytes, pos: int, count: int, end: int) -> tuple[pa.Table, int]:
        """Decode ``count`` length-prefixed records from ``data[pos:end]``.

        Returns:
            The records as a table of :attr:`arrow_schema`, and the position after them.

        Raises:
            AvroDecodeError: the bytes do not match the schema.
        """
        try:
            pos, cols = self._decode(data, pos, count, end)
        except AvroDecodeError:
            raise
        except (IndexError, struct.error, UnicodeDecodeError, ValueError, OverflowError) as e:
            raise AvroDecodeError(f"{type(e).__name__}: {e}") from None
        try:
            arrays = [_build_array(c, cols) for c in self._root.children]
        except (pa.ArrowException, ValueError, OverflowError) as e:
            raise AvroDecodeError(f"{type(e).__name__}: {e}") from None
        return pa.Table.from_arrays(arrays, schema=self.arrow_schema), pos

    def encode(self, table: pa.Table) -> bytes:
        """The records of ``table``, each an ``int32`` length and its Avro binary.

        Columns are matched by name and cast to the schema's types; a nullable column
        missing from ``table`` is written as nulls.

        Raises:
            WriteError: a column is not in the schema, does not cast, or holds a null
                where the schema allows none.
        """
        extra = [c for c in table.column_names if c not in self.arrow_schema.names]
        if extra:
            raise WriteError(
                f"columns {extra} are not in the Avro schema of the block "
                f"({self.arrow_schema.names}); drop them or evolve the schema first"
            )
        count = table.num_rows
        cols: list[Any] = []
        for name, node in zip(self._root.names, self._root.children, strict=True):
            arr = self._column(table, name, node, count)
            _column_lists(node, arr, cols)
        out = bytearray()
        try:
            self._encode(count, out, cols)
        except (OverflowError, struct.error) as e:
            raise WriteError(f"a value does not fit its Avro type: {e}") from None
        return bytes(out)

    def _column(self, table: pa.Table, name: str, node: _Node, count: int) -> pa.Array:
        if name not in table.column_names:
            if not node.nullable:
                raise WriteError(f"column {name!r} is required by the Avro schema but missing")
            return pa.nulls(count, node.arrow_type)
        col = table.column(name)
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if arr.type != node.arrow_type:
            try:
                arr = arr.cast(node.arrow_type)
            except (pa.ArrowException, ValueError) as e:
                raise WriteError(
                    f"column {name!r} of type {arr.type} does not fit the Avro schema's "
                    f"{node.arrow_type}: {e}"
                ) from None
        return arr


@lru_cache(maxsize=64)
def _codec_for_text(schema_text: str) -> RecordCodec:
    return RecordCodec(schema_text)


def record_codec(avro_schema: str | dict[str, Any]) -> RecordCodec:
    """The (cached) codec for an Avro record schema, given as JSON text or a dict."""
    text = avro_schema if isinstance(avro_schema, str) else json.dumps(avro_schema)
    return _codec_for_text(text)
