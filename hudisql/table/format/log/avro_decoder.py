"""Generated Avro decoders: records of one schema straight into Arrow column builders.

:class:`DecoderSource` writes the Python source of a function that reads length-prefixed
records and appends every value to its node's list (structs, lists and maps keep validity
and offsets), so no per-row dict is made; :func:`build_array` turns the lists into Arrow.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from hudisql.table.format.log.avro_nodes import (
    INT_KINDS,
    NESTED_KINDS,
    WIDENED,
    AvroDecodeError,
    Node,
)

#: How a "widened" union reads each of its primitive branches into local ``v``.
_PRIMITIVE_READS = {
    "float": "v = _uf(data, pos)[0]; pos += 4",
    "double": "v = _ud(data, pos)[0]; pos += 8",
}


class DecoderSource:
    """Python source of a decoder for one record schema."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.lines: list[str] = []

    def emit(self, ind: int, text: str) -> None:
        """Add one line of source at indentation level ``ind``."""
        self.lines.append("    " * ind + text)

    def read_long(self, ind: int, var: str) -> None:
        """Read a zig-zag varint at ``pos`` into local ``var``."""
        # One-byte varints (|v| < 64) are by far the most common: decode them inline.
        self.emit(ind, "b = data[pos]")
        self.emit(ind, "if b < 128:")
        self.emit(ind + 1, f"{var} = (b >> 1) ^ -(b & 1); pos += 1")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{var}, pos = _rl(data, pos)")

    def null(self, n: Node, ind: int) -> None:
        """Append a null (or a placeholder under a null parent) to node ``n``."""
        k = n.id
        if n.kind in ("struct", "union"):
            self.emit(ind, f"m{k}(False)")
            for c in n.children:
                self.null(c, ind)
        elif n.kind in ("list", "map"):
            self.emit(ind, f"m{k}(False); o{k}(t{k})")
        else:
            self.emit(ind, f"a{k}(None)")

    def value(self, n: Node, ind: int) -> None:
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
        elif kind in INT_KINDS:
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
        else:  # pragma: no cover - NodeBuilder only makes the kinds above
            raise AssertionError(kind)

    def union(self, n: Node, ind: int) -> None:
        """Decode a union of several types: its branch index, then that branch's value
        into its member (the other members null), or the one widened value."""
        k = n.id
        self.read_long(ind, "u")
        test = "if"
        if n.kind == WIDENED:
            for index, kind in n.branch_kinds:
                self.emit(ind, f"{test} u == {index}:")
                if kind in _PRIMITIVE_READS:
                    self.emit(ind + 1, _PRIMITIVE_READS[kind])
                else:  # int and long: the same zig-zag varint
                    self.read_long(ind + 1, "v")
                self.emit(ind + 1, f"a{k}(v)")
                test = "elif"
        else:
            for member, index in enumerate(n.branches):
                self.emit(ind, f"{test} u == {index}:")
                for m, child in enumerate(n.children):
                    (self.value if m == member else self.null)(child, ind + 1)
                self.emit(ind + 1, f"m{k}(True)")
                test = "elif"
        if n.null_idx >= 0:
            self.emit(ind, f"elif u == {n.null_idx}:")
            self.null(n, ind + 1)
        self.emit(ind, "else:")
        self.emit(ind + 1, "_fail('union index ' + str(u))")

    def field(self, n: Node, ind: int) -> None:
        """Decode a value that may be a ``[null, T]`` union."""
        if n.kind in ("union", WIDENED):
            self.union(n, ind)
            return
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

    def build(self, root: Node) -> str:
        """The source of ``decode(data, pos, count, end) -> (pos, lists by name)``."""
        self.emit(0, "def decode(data, pos, count, end):")
        names = []
        for n in self.nodes[1:]:  # the root record is the row itself: no lists of its own
            k = n.id
            if n.kind in NESTED_KINDS:
                self.emit(1, f"M{k} = []; m{k} = M{k}.append")
                names.append(f"M{k}")
            if n.kind in ("list", "map"):
                self.emit(1, f"O{k} = [0]; o{k} = O{k}.append; t{k} = 0")
                names.append(f"O{k}")
            if n.kind not in NESTED_KINDS:
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


def _leaf_array(n: Node, values: list[Any]) -> pa.Array:
    t = n.arrow_type
    if n.kind in ("decimal-fixed", "decimal-bytes"):
        return _decimal_array(values, t)
    if n.kind == "null":
        return pa.nulls(len(values))
    if n.kind in INT_KINDS and n.kind not in ("int", "long"):
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


def build_array(n: Node, cols: dict[str, list[Any]]) -> pa.Array:
    """The Arrow array of node ``n`` from the lists a generated decoder filled."""
    k = n.id
    if n.kind in ("struct", "union"):
        children = [build_array(c, cols) for c in n.children]
        fields = list(n.arrow_type)
        return pa.StructArray.from_arrays(children, fields=fields, mask=_mask(cols[f"M{k}"]))
    if n.kind == "list":
        offsets = pa.array(cols[f"O{k}"], pa.int32())
        child = build_array(n.children[0], cols)
        return pa.ListArray.from_arrays(
            offsets, child, type=n.arrow_type, mask=_mask(cols[f"M{k}"])
        )
    if n.kind == "map":
        offsets = pa.array(cols[f"O{k}"], pa.int32())
        keys = build_array(n.children[0], cols)
        items = build_array(n.children[1], cols)
        return pa.MapArray.from_arrays(
            offsets, keys, items, type=n.arrow_type, mask=_mask(cols[f"M{k}"])
        )
    return _leaf_array(n, cols[f"A{k}"])
