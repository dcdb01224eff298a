"""The metadata table's file formats: HFile base files and HFILE_DATA log blocks, as Apache
Hudi keeps them, beside the parquet base files and Avro data blocks of earlier hudisql.

A metadata table's ``hoodie.table.base.file.format`` says which: ``HFILE`` (what hudisql
writes, and every Hudi writer) or ``PARQUET`` (metadata tables hudisql wrote before it kept
HFiles; the next write converts them, ``hudisql.metadata.services``). Its log data blocks follow
the base format (Hudi's ``LogBlockUtil.pickLogDataBlockFormat``): HFILE_DATA blocks with
HFile, Avro blocks with parquet. Readers take any of them, by file extension and block type.

The records' Avro schema follows the data table's version (:func:`record_schema_text`):
hudisql's ``HoodieMetadataRecord`` for version 6, Hudi 1.1's for versions 8 and 9.

Many records share one value: an HFile value is the record without its key (Hudi blanks
it; the HFile key holds it), so a record-index file group's values are its few locations,
a secondary index's one ``isDeleted`` flag. Values are encoded once per distinct payload
(:func:`hfile_values`) and repeated column-wise.
"""

from __future__ import annotations

import io
import json
import posixpath
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.arrow_records import with_payloads
from hudisql.metadata.avro import block_records, data_block_content, encode_record
from hudisql.metadata.hfile_records import (
    MAX_KEY,
    MIN_KEY,
    SCHEMA_KEY,
    HFileRecords,
    hfile_block_records,
)
from hudisql.metadata.records import Record, SharedRecords, compose_records
from hudisql.metadata.schema_hudi11 import HUDI_1_1_SCHEMA_TEXT
from hudisql.metadata.value_types import to_value_type
from hudisql.table.format.hfile import Codec, HFileWriter
from hudisql.table.format.log.format import BlockType, HeaderKey, LogBlockInfo, encode_block

if TYPE_CHECKING:
    from hudisql.metadata.reader import KeyFilter
    from hudisql.table.io.storage import Storage

__all__ = [
    "HFILE",
    "PARQUET",
    "RecordEncoder",
    "base_file_records",
    "data_block_records",
    "encode_data_block",
    "hfile_base_file",
    "record_schema_text",
]

#: ``hoodie.table.base.file.format`` of a metadata table in Hudi's format.
HFILE = "HFILE"
#: ... and of one earlier hudisql wrote (parquet base files, Avro data blocks).
PARQUET = "PARQUET"
#: The extension of each format's base files.
EXTENSIONS = {HFILE: "hfile", PARQUET: "parquet"}

_PAYLOADS = ("filesystemMetadata", "BloomFilterMetadata", "ColumnStatsMetadata",
             "recordIndexMetadata", "SecondaryIndexMetadata")
#: Payloads whose every field is a plain value: their distinct values are found column-wise.
_FLAT_PAYLOADS = ("recordIndexMetadata", "SecondaryIndexMetadata")


def record_schema_text(table_version: int) -> str:
    """The ``HoodieMetadataRecord`` schema text a metadata table of a data table of
    ``table_version`` carries: hudisql's (Hudi 1.0's fields, which Hudi 0.14/0.15 readers
    resolve by name) for version 6, Hudi 1.1's for versions 8 and 9."""
    return S.schema_text() if table_version < 8 else HUDI_1_1_SCHEMA_TEXT


class RecordEncoder:
    """Avro binary encoding of metadata records in one schema: hudisql's own with its
    hand-written encoder (:mod:`hudisql.metadata.avro`), others with fastavro (fields a
    record lacks take the schema's defaults)."""

    def __init__(self, schema_text: str, value_types: bool = False) -> None:
        self.schema_text = schema_text
        self.own = schema_text == S.schema_text()
        self._parsed: Any = None if self.own else _parsed(schema_text)
        #: Column statistics in version 9's form (:mod:`hudisql.metadata.value_types`).
        self.value_types = value_types and not self.own

    def encode(self, record: Record) -> bytes:
        """The record's Avro binary form."""
        if self.own:
            return encode_record(record)
        if self.value_types:
            record = to_value_type(record)
        out = io.BytesIO()
        fastavro.schemaless_writer(out, self._parsed, record)
        return out.getvalue()


@cache
def _parsed(schema_text: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_text))


# ------------------------------------------------------------------------------ writing


def _dense_codes(columns: Sequence[pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    """Row codes equal exactly for rows equal in every column, dense from 0, and the first
    row of each code."""
    n = len(columns[0])
    code = np.zeros(n, np.int64)
    bound = 1
    for column in columns:
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        size = max(1, len(encoded.dictionary))
        code = code * size + encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        bound *= size
        if bound > 4 * n + 1024:  # keep the codes small: renumber them densely
            _, code = np.unique(code, return_inverse=True)
            bound = int(code.max()) + 1 if n else 1
    present = np.zeros(bound, bool)
    present[code] = True
    remap = np.cumsum(present) - 1
    dense = remap[code]
    first = np.full(int(present.sum()), n, np.int64)
    np.minimum.at(first, dense, np.arange(n, dtype=np.int64))
    return dense, first


def hfile_values(rows: pa.Table, encoder: RecordEncoder) -> pa.Array:
    """The HFile values of base-file rows (keys blanked), each distinct payload encoded
    once: column-wise for the record and secondary indexes, else record by record."""
    n = rows.num_rows
    payloads = [c for c in rows.column_names if c in _PAYLOADS
                and rows.column(c).null_count < n]
    if n and len(payloads) == 1 and payloads[0] in _FLAT_PAYLOADS \
            and rows.column(payloads[0]).null_count == 0:
        name = payloads[0]
        struct = rows.column(name).combine_chunks()
        # flatten, not field(i): a sliced struct array's children keep the whole range.
        leaves = [rows.column("type").combine_chunks(), *struct.flatten()]
        dense, first = _dense_codes(leaves)
        sample = S.from_parquet_rows(with_payloads(rows.take(pa.array(first))))
        encoded = pa.array([encoder.encode({**r, "key": ""}) for r in sample], pa.binary())
        return encoded.take(pa.array(dense))
    records = S.from_parquet_rows(with_payloads(rows))
    return pa.array([encoder.encode({**r, "key": ""}) for r in records], pa.binary())


def _hfile(keys: pa.Array, values: pa.Array, schema_text: str, codec: Codec) -> bytes:
    writer = HFileWriter(codec)
    writer.append_arrays(keys, values)
    writer.add_file_info(SCHEMA_KEY, schema_text.encode("utf-8"))
    if len(keys):
        writer.add_file_info(MIN_KEY, keys[0].as_py().encode("utf-8"))
        writer.add_file_info(MAX_KEY, keys[len(keys) - 1].as_py().encode("utf-8"))
    return writer.finish()


def hfile_base_file(rows: pa.Table, schema_text: str, codec: Codec = Codec.GZ,
                    value_types: bool = False) -> bytes:
    """An HFile base file of base-file rows sorted by key, each key once (``value_types``:
    column statistics in version 9's form).

    Raises:
        MetadataTableError: keys out of order or repeated.
    """
    keys = rows.column("key").combine_chunks() if rows.num_rows else pa.array([], pa.string())
    n = len(keys)
    if n > 1 and pc.any(pc.less_equal(keys.slice(1), keys.slice(0, n - 1))).as_py():
        raise MetadataTableError("metadata base file rows must be sorted by key, each once")
    return _hfile(keys, hfile_values(rows, RecordEncoder(schema_text, value_types)),
                  schema_text, codec)


def hfile_block_content(records: Sequence[Record], shared: Sequence[SharedRecords],
                        schema_text: str, value_types: bool = False) -> bytes:
    """The content of an HFILE_DATA block: an HFile (GZ, no meta blocks, as Hudi writes
    them) of the records, sorted by key. Records of one key (the block's order: ``records``
    then ``shared``) become one that merges over older records as they would have."""
    encoder = RecordEncoder(schema_text, value_types)
    key_parts: list[pa.Array] = []
    value_parts: list[pa.Array] = []
    if records:
        key_parts.append(pa.array([r["key"] for r in records], pa.string()))
        value_parts.append(pa.array([encoder.encode({**r, "key": ""}) for r in records],
                                    pa.binary()))
    for group in shared:
        keys = group.key_array().cast(pa.string())
        if not len(keys):
            continue
        key_parts.append(keys)
        value = encoder.encode({**group.template, "key": ""})
        value_parts.append(pa.repeat(pa.scalar(value, pa.binary()), len(keys)))
    if not key_parts:
        return _hfile(pa.array([], pa.string()), pa.array([], pa.binary()), schema_text,
                      Codec.GZ)
    keys = pa.concat_arrays(key_parts)
    values = pa.concat_arrays(value_parts)
    if pc.count_distinct(keys).as_py() != len(keys):
        return hfile_block_content(_composed(records, shared), (), schema_text, value_types)
    order = pc.sort_indices(keys)
    return _hfile(keys.take(order), values.take(order), schema_text, Codec.GZ)


def _composed(records: Sequence[Record], shared: Sequence[SharedRecords]) -> list[Record]:
    out: dict[str, Record] = {}
    everything = [*records, *({**s.template, "key": k} for s in shared
                              for k in s.key_array().to_pylist())]
    for record in everything:
        older = out.get(record["key"])
        out[record["key"]] = record if older is None else compose_records(older, record)
    return list(out.values())


def encode_data_block(base_format: str, header: dict[HeaderKey, str],
                      records: Sequence[Record], shared: Sequence[SharedRecords] = (),
                      value_types: bool = False) -> bytes:
    """A metadata log data block in the format that goes with ``base_format``: HFILE_DATA
    for HFile, AVRO_DATA for parquet; ``header`` must hold the records' schema
    (``value_types``: column statistics in version 9's form)."""
    schema_text = header.get(HeaderKey.SCHEMA) or S.schema_text()
    if base_format == HFILE:
        return encode_block(BlockType.HFILE_DATA, header,
                            hfile_block_content(records, shared, schema_text, value_types))
    if schema_text != S.schema_text():
        raise MetadataTableError(
            "metadata Avro data blocks are written in hudisql's own record schema only")
    content = data_block_content(records, [(s.keys, s.template) for s in shared])
    return encode_block(BlockType.AVRO_DATA, header, content)


# ------------------------------------------------------------------------------ reading


def data_block_records(data: bytes, block: LogBlockInfo,
                       keep: Callable[[str], bool] | None = None,
                       keys: Iterable[str] | None = None) -> list[Record]:
    """The records of a metadata log data block (AVRO_DATA or HFILE_DATA), only those whose
    key ``keep`` accepts (``keys``: the only keys ``keep`` accepts, if known: an HFILE_DATA
    block is then looked up by key).

    Raises:
        MetadataTableError: another block type, or records that do not decode.
        CorruptTableError: an HFILE_DATA block whose HFile is damaged.
    """
    if block.block_type == BlockType.AVRO_DATA:
        return block_records(data, block, keep)
    if block.block_type == BlockType.HFILE_DATA:
        return hfile_block_records(data, block, keep, keys)
    raise MetadataTableError(
        f"metadata log file {block.log_file} holds a {block.block_type.name} block; a "
        "metadata table's data blocks are AVRO_DATA or HFILE_DATA")


def base_file_records(storage: Storage, rel: str, key_filter: KeyFilter) -> Iterator[Record]:
    """The records of a metadata base file (HFile or parquet, by extension) that
    ``key_filter`` wants: an HFile is looked up by key or scanned by prefix through its
    block index; a parquet file is read with the filter pushed into the scan."""
    if rel.endswith("." + EXTENSIONS[HFILE]):
        with storage.open_input_file(rel) as f:
            records = HFileRecords(f, posixpath.basename(rel))
            if key_filter.keys is not None:
                found: Iterable[Record] = records.get_many(key_filter.keys)
            elif key_filter.prefixes is not None:
                found = (r for p in sorted(set(key_filter.prefixes))
                         for r in records.with_prefix(p))
            else:
                found = records
            keep = key_filter.keep
            yield from (r for r in found if keep(r["key"]))
        return
    import pyarrow.parquet as pq

    table = pq.read_table(storage.open_input_file(rel), filters=key_filter.expression())
    yield from S.from_parquet_rows(with_payloads(table))
