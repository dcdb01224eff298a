"""The tree of Arrow arrays an Avro record schema becomes, shared by the generated codecs.

Each node is one array to build or read: a leaf (its Avro kind says how a value is read
and written), a struct, a list or a map. Internal to ``hudisql.table.format.log``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudisql.errors import UnsupportedFormatError
from hudisql.table.format.schema import (
    avro_type_to_arrow,
    base_type,
    logical_type,
    nullable_branch,
    several_branches,
)

INT32_BE = struct.Struct(">i")
FLOAT32 = struct.Struct("<f")
FLOAT64 = struct.Struct("<d")

#: Leaf kinds held as plain integers (dates, times and timestamps never become objects).
INT_KINDS = frozenset({"int", "long", "date", "time-millis", "time-micros", "timestamp"})
#: Node kinds that are containers rather than leaves ("union": a union of several types,
#: a struct of one ``member<i>`` child per non-null branch).
NESTED_KINDS = frozenset({"struct", "list", "map", "union"})
#: The leaf kind of a union of int and long, or of float and double: one widened value.
WIDENED = "widened"


class AvroDecodeError(ValueError):
    """Avro bytes do not match the schema (the caller adds the file and block)."""


@dataclass
class Node:
    """One Arrow array to build: a leaf, a struct, a list or a map."""

    id: int
    kind: str  # leaf kind, or "struct" / "list" / "map"
    arrow_type: pa.DataType
    nullable: bool  # the Avro type is a union with null
    null_idx: int = 0  # union branch indexes (only when nullable)
    value_idx: int = 0
    children: list[Node] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # struct field names
    size: int = 0  # fixed size
    symbols: tuple[str, ...] = ()  # enum symbols
    # A union of several types: the Avro branch index of each member child ("union"), or
    # the branch index and primitive kind of each branch ("widened"); null_idx -1: no null.
    branches: tuple[int, ...] = ()
    branch_kinds: tuple[tuple[int, str], ...] = ()


def read_long(data: bytes, pos: int) -> tuple[int, int]:
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


def write_varint(out: bytearray, z: int) -> None:
    """Append the (already zig-zagged, non-negative) varint ``z``."""
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def decimal_bytes(v: int) -> bytes:
    """The shortest big-endian two's complement of ``v`` (Java's BigInteger.toByteArray)."""
    bits = (v if v >= 0 else ~v).bit_length() + 1
    return v.to_bytes((bits + 7) // 8, "big", signed=True)


def fail(msg: str) -> None:
    """Raise :class:`AvroDecodeError` (called from generated decoders)."""
    raise AvroDecodeError(msg)


class NodeBuilder:
    """Turns a resolved Avro type into a tree of nodes."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def node(self, avro: Any, path: str) -> Node:
        """The node of Avro type ``avro`` (at ``path``, for messages) and its children.

        Raises:
            UnsupportedFormatError: a type with no Arrow equivalent.
        """
        if several_branches(avro) is not None:
            return self._union(avro, path)
        inner, null_idx, value_idx = nullable_branch(avro)
        nullable = null_idx is not None
        arrow_type, _ = avro_type_to_arrow(avro)
        n = Node(len(self.nodes), self._kind(inner, path), arrow_type, nullable)
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
            key = Node(len(self.nodes), "string", pa.string(), False)
            self.nodes.append(key)
            n.children += [key, self.node(inner["values"], f"{path}{{}}")]
        elif n.kind in ("fixed", "decimal-fixed"):
            n.size = int(inner["size"])
        elif n.kind == "enum":
            n.symbols = tuple(str(s) for s in inner["symbols"])
        elif kind == "null" and not nullable:
            n.nullable, n.null_idx, n.value_idx = True, -1, -1
        return n

    def _union(self, avro: list[Any], path: str) -> Node:
        """The node of a union of several non-null types: a "union" node with a member
        child per branch, or a "widened" leaf (int/long, float/double)."""
        arrow_type, nullable = avro_type_to_arrow(avro)
        branches = [i for i, b in enumerate(avro) if b != "null"]
        kind = "union" if pa.types.is_struct(arrow_type) else WIDENED
        n = Node(len(self.nodes), kind, arrow_type, nullable)
        n.null_idx = avro.index("null") if nullable else -1
        self.nodes.append(n)
        if kind == WIDENED:
            n.branch_kinds = tuple((i, base_type(avro[i])) for i in branches)
            return n
        n.branches = tuple(branches)
        for member, i in enumerate(branches):
            n.names.append(f"member{member}")
            n.children.append(self.node(avro[i], f"{path}.member{member}"))
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
