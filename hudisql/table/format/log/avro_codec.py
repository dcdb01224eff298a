"""Avro binary records <-> Arrow tables, through code generated once per schema.

An Avro data block holds records one after another (each ``int32`` length + Avro binary).
Decoding them one dict at a time and then building Arrow from the dicts costs twice; here
a decoder specialised for the writer schema appends each value straight to its column
(see ``avro_decoder``), and an encoder reads the columns the same way (``avro_encoder``).
Dates, times, timestamps and decimals travel as plain integers, never as objects.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import pyarrow as pa

from hudisql.errors import UnsupportedFormatError, WriteError
from hudisql.table.format.log.avro_decoder import DecoderSource, build_array
from hudisql.table.format.log.avro_encoder import EncoderSource, column_lists
from hudisql.table.format.log.avro_nodes import (
    FLOAT32,
    FLOAT64,
    INT32_BE,
    AvroDecodeError,
    Node,
    NodeBuilder,
    decimal_bytes,
    fail,
    read_long,
    write_varint,
)
from hudisql.table.format.schema import base_type, resolve_avro

__all__ = ["AvroDecodeError", "RecordCodec", "record_codec"]


class RecordCodec:
    """Encodes Arrow tables to Avro data block records and decodes them, for one schema."""

    def __init__(self, avro_schema: str | dict[str, Any]) -> None:
        resolved = resolve_avro(avro_schema)
        if base_type(resolved) != "record":
            raise UnsupportedFormatError("a data block schema must be an Avro record")
        builder = NodeBuilder()
        self._root = builder.node(resolved, "")
        self._nodes = builder.nodes
        self.arrow_schema = pa.schema(
            [pa.field(name, c.arrow_type, nullable=c.nullable)
             for name, c in zip(self._root.names, self._root.children, strict=True)]
        )
        self._decode = self._compile(DecoderSource(self._nodes).build(self._root), "decode")
        self._encode = self._compile(EncoderSource(self._nodes).build(self._root), "encode")

    def _compile(self, source: str, name: str) -> Callable[..., Any]:
        env: dict[str, Any] = {
            "_rl": read_long, "_wv": write_varint, "_fail": fail, "_db": decimal_bytes,
            "_ri": INT32_BE.unpack_from, "_pi": INT32_BE.pack_into,
            "_uf": FLOAT32.unpack_from, "_ud": FLOAT64.unpack_from,
            "_pf": FLOAT32.pack, "_pd": FLOAT64.pack, "_ifb": int.from_bytes,
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
        def walk(n: Node, path: str) -> str | None:
            if n.id == node_id:
                return path or "the record"
            for i, c in enumerate(n.children):
                named = n.kind in ("struct", "union")
                label = n.names[i] if named else ("key" if i == 0 else "value")
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
            arrays = [build_array(c, cols) for c in self._root.children]
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
            column_lists(node, arr, cols)
        out = bytearray()
        try:
            self._encode(count, out, cols)
        except (OverflowError, struct.error) as e:
            raise WriteError(f"a value does not fit its Avro type: {e}") from None
        return bytes(out)

    def _column(self, table: pa.Table, name: str, node: Node, count: int) -> pa.Array:
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
