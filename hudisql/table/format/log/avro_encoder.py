"""Generated Avro encoders: Arrow columns of one schema into length-prefixed records.

:func:`column_lists` turns each node's Arrow array into the Python lists the encoder reads
(bytes for strings, integers for dates, times, timestamps and decimals); the source that
:class:`EncoderSource` writes walks them row by row into one ``bytearray``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from hudisql.table.format.log.avro_nodes import INT_KINDS, NESTED_KINDS, WIDENED, Node


class EncoderSource:
    """Python source of an encoder for one record schema, reading column lists."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.lines: list[str] = []

    def emit(self, ind: int, text: str) -> None:
        """Add one line of source at indentation level ``ind``."""
        self.lines.append("    " * ind + text)

    def write_long(self, ind: int, expr: str) -> None:
        """Append ``expr`` as a zig-zag varint."""
        self.emit(ind, f"z = {expr}; z = (z << 1) ^ (z >> 63)")
        self.emit(ind, "if z < 128: out.append(z)")
        self.emit(ind, "else: _wv(out, z)")

    def write_len(self, ind: int, expr: str) -> None:
        """Append the (non-negative) length ``expr`` as a varint."""
        self.emit(ind, f"z = {expr} << 1")
        self.emit(ind, "if z < 128: out.append(z)")
        self.emit(ind, "else: _wv(out, z)")

    def value(self, n: Node, ix: str, ind: int) -> None:
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
        elif kind in INT_KINDS:
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

    def is_null(self, n: Node, ix: str) -> str:
        """The expression that is true when node ``n`` is null at row ``ix``."""
        if n.kind in NESTED_KINDS:
            return f"not M{n.id}[{ix}]"
        return f"A{n.id}[{ix}] is None"

    def union(self, n: Node, ix: str, ind: int) -> None:
        """Encode a union of several types at row ``ix``: the branch of its first set
        member (a widened value: the wider branch, long or double); null (or an error when
        the union has no null) when none is set."""
        k = n.id
        test = "if"
        if n.kind == WIDENED:
            index, kind = max(n.branch_kinds, key=lambda b: b[1] in ("long", "double"))
            self.emit(ind, f"if A{k}[{ix}] is not None:")
            self.write_long(ind + 1, str(index))
            if kind == "double":
                self.emit(ind + 1, f"out += _pd(A{k}[{ix}])")
            else:
                self.write_long(ind + 1, f"A{k}[{ix}]")
            test = "elif"
        else:
            for index, child in zip(n.branches, n.children, strict=True):
                self.emit(ind, f"{test} M{k}[{ix}] and not ({self.is_null(child, ix)}):")
                self.write_long(ind + 1, str(index))
                self.value(child, ix, ind + 1)
                test = "elif"
        self.emit(ind, "else:")
        if n.null_idx >= 0:
            self.write_long(ind + 1, str(n.null_idx))
        else:
            self.emit(ind + 1, f"_null({k})")

    def field(self, n: Node, ix: str, ind: int) -> None:
        """Encode node ``n`` at row ``ix``, with its union branch when nullable."""
        if n.kind in ("union", WIDENED):
            self.union(n, ix, ind)
            return
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

    def build(self, root: Node) -> str:
        """The source of ``encode(count, out, lists)`` appending records to ``out``."""
        args = []
        for n in self.nodes[1:]:  # the root record is the row itself: no lists of its own
            if n.kind in NESTED_KINDS:
                args.append(f"M{n.id}")
            if n.kind in ("list", "map"):
                args.append(f"O{n.id}")
            if n.kind not in NESTED_KINDS:
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


def column_lists(n: Node, arr: pa.Array, out: list[Any]) -> None:
    """Append the Python lists the encoder reads for node ``n`` (in argument order)."""
    if n.kind in NESTED_KINDS:
        out.append(arr.is_valid().to_pylist() if arr.null_count else [True] * len(arr))
    if n.kind in ("struct", "union"):
        for i, c in enumerate(n.children):
            column_lists(c, arr.field(i), out)
        return
    if n.kind == "list":
        out.append(arr.offsets.to_pylist())
        column_lists(n.children[0], arr.values, out)
        return
    if n.kind == "map":
        out.append(arr.offsets.to_pylist())
        column_lists(n.children[0], arr.keys, out)
        column_lists(n.children[1], arr.items, out)
        return
    out.append(_leaf_values(n, arr))


def _leaf_values(n: Node, arr: pa.Array) -> list[Any]:
    kind = n.kind
    if kind in ("string", "bytes"):
        return arr.cast(pa.binary()).to_pylist()  # type: ignore[no-any-return]
    if kind in ("decimal-fixed", "decimal-bytes"):
        return _unscaled(arr)
    if kind in INT_KINDS and kind not in ("int", "long"):
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
