"""Metadata records in HFile form, as Apache Hudi keeps its metadata table's base files.

Each HFile key is a record's ``key``; each value is the record in Avro binary, in the
schema the file info's ``schema`` entry holds, with its ``key`` field left empty (Hudi's
``HoodieAvroHFileWriter`` drops the duplicate; its readers and these put it back from the
HFile key). The file info also carries ``minRecordKey`` and ``maxRecordKey``.

Hudi 1.1 writes a newer ``HoodieMetadataRecord`` (with the ``_hoodie_*`` meta fields and
newer statistics fields); its values are resolved to hudisql's schema by field name, as
with Avro data blocks from other writers. hudisql writes its own schema, the one its log
blocks carry, and hudi-rs decodes by the schema in the file.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import fastavro
import pyarrow as pa

from hudisql.errors import MetadataTableError
from hudisql.metadata import schema as S
from hudisql.metadata.avro import decode_record, encode_record
from hudisql.metadata.records import Record
from hudisql.metadata.value_types import from_value_type, reader_schema
from hudisql.table.format.hfile import Codec, HFileReader
from hudisql.table.format.hfile.reader import RandomAccessFile
from hudisql.table.format.hfile.writer import DEFAULT_BLOCK_SIZE, HFileWriter
from hudisql.table.format.log.format import BlockType, LogBlockInfo

__all__ = ["HFileRecords", "encode_hfile", "hfile_block_records"]

SCHEMA_KEY = "schema"
MIN_KEY = "minRecordKey"
MAX_KEY = "maxRecordKey"
#: Distinct values a reader keeps decoded (see ``HFileRecords._decode``).
_DECODED_CACHE = 4096


class HFileRecords:
    """The metadata records of one HFile: all of them, one by key, or those with a prefix.

    Args:
        data: the file's bytes, or the file opened for random access (a lookup then reads
            the index and one block).
        where: its path, for messages.

    Raises:
        CorruptTableError: the file is not a readable HFile.
        MetadataTableError: it has no ``schema`` file info entry.
    """

    def __init__(self, data: bytes | RandomAccessFile, where: str) -> None:
        self.hfile = HFileReader(data, where)
        self.where = where
        text = self.hfile.file_info.get(SCHEMA_KEY)
        if text is None:
            raise MetadataTableError(f"{where} has no Avro schema in its file info ('schema')")
        self._own = text.decode("utf-8") == S.schema_text()
        self._writer: Any = None if self._own else fastavro.parse_schema(json.loads(text))
        self._decoded: dict[bytes, Record] = {}

    def _decode(self, key: str, value: bytes) -> Record:
        # Values repeat: a record-index file group holds a few locations, a secondary index
        # one value for every key (Hudi blanks the key in values). Each distinct value is
        # decoded once; records share its payload dicts, which nothing mutates in place.
        known = self._decoded.get(value)
        if known is not None:
            return {**known, "key": key}
        record = self._decode_value(key, value)
        if len(self._decoded) < _DECODED_CACHE:
            self._decoded[value] = record
        return {**record, "key": key}

    def _decode_value(self, key: str, value: bytes) -> Record:
        record: Any
        try:
            if self._own:
                record = decode_record(value)
            else:
                record = from_value_type(fastavro.schemaless_reader(
                    io.BytesIO(value), self._writer, reader_schema(),
                    return_record_name=True, return_record_name_override=True))
        except (MetadataTableError, ValueError, EOFError, KeyError) as exc:
            raise MetadataTableError(
                f"{self.where}: the metadata record of key {key!r} does not decode: {exc}"
            ) from None
        assert isinstance(record, dict)
        if record.get("key") not in ("", key):
            raise MetadataTableError(
                f"{self.where}: the value stored under key {key!r} is the record of key "
                f"{record['key']!r}")
        return record

    def __iter__(self) -> Iterator[Record]:
        """Every record, in key order."""
        for key, value in self.hfile.items():
            yield self._decode(key, value)

    def matching(self, keep: Callable[[str], bool]) -> Iterator[Record]:
        """The records whose key ``keep`` accepts, in key order (the others not decoded)."""
        for key, value in self.hfile.items():
            if keep(key):
                yield self._decode(key, value)

    def get(self, key: str) -> Record | None:
        """The record of ``key``, or None."""
        value = self.hfile.get(key)
        return None if value is None else self._decode(key, value)

    def get_many(self, keys: Iterable[str]) -> Iterator[Record]:
        """The records of those ``keys`` the file holds, in key order (each block read once)."""
        for key, value in self.hfile.get_many(keys):
            yield self._decode(key, value)

    def with_prefix(self, prefix: str) -> Iterator[Record]:
        """The records whose key starts with ``prefix``, in key order."""
        for key, value in self.hfile.scan_prefix(prefix):
            yield self._decode(key, value)


def encode_hfile(
    records: Iterable[Record], codec: Codec = Codec.GZ, block_size: int = DEFAULT_BLOCK_SIZE,
    schema_text: str | None = None,
) -> bytes:
    """An HFile base file of metadata records (sorted by key here).

    Args:
        schema_text: the ``HoodieMetadataRecord`` schema to write the values in (default:
            hudisql's). hudi-rs reads a file slice's base file and log blocks into one
            Arrow schema, so a metadata table must keep one schema: a base file written
            into a Hudi 1.1 metadata table takes the schema its log blocks carry. Fields
            the records lack take their defaults (null).

    Raises:
        MetadataTableError: two records share a key.
    """
    ordered = sorted(records, key=lambda r: r["key"].encode("utf-8"))
    writer = HFileWriter(codec, block_size)
    own = schema_text is None or schema_text == S.schema_text()
    parsed: Any = None if own else fastavro.parse_schema(json.loads(schema_text or ""))
    keys: list[str] = []
    values: list[bytes] = []
    for record in ordered:
        key = record["key"]
        if keys and key == keys[-1]:
            raise MetadataTableError(f"two metadata records share the key {key!r}")
        keys.append(key)
        blank = {**record, "key": ""}
        if own:
            values.append(encode_record(blank))
        else:
            out = io.BytesIO()
            fastavro.schemaless_writer(out, parsed, blank)
            values.append(out.getvalue())
    writer.append_arrays(pa.array(keys, pa.string()), pa.array(values, pa.binary()))
    text = S.schema_text() if schema_text is None else schema_text
    writer.add_file_info(SCHEMA_KEY, text.encode("utf-8"))
    if ordered:
        writer.add_file_info(MIN_KEY, ordered[0]["key"].encode("utf-8"))
        writer.add_file_info(MAX_KEY, ordered[-1]["key"].encode("utf-8"))
    return writer.finish()


def hfile_block_records(
    data: bytes, block: LogBlockInfo, keep: Callable[[str], bool] | None = None,
    keys: Iterable[str] | None = None,
) -> list[Record]:
    """The records of an HFILE_DATA log block (its content is a whole HFile), only those
    whose key ``keep`` accepts (looked up by key when ``keys`` lists all it accepts).

    Raises:
        MetadataTableError: not an HFILE_DATA block, or a record that does not decode.
        CorruptTableError: the content is not a readable HFile.
    """
    if block.block_type != BlockType.HFILE_DATA:
        raise MetadataTableError(f"the block at byte {block.position} of {block.log_file} is "
                                 f"{block.block_type.name}, not HFILE_DATA")
    content = data[block.content_position:block.content_position + block.content_length]
    records = HFileRecords(content, f"the HFILE_DATA block at byte {block.position} of "
                                    f"{block.log_file}")
    if keep is None:
        return list(records)
    if keys is not None:
        return [r for r in records.get_many(keys) if keep(r["key"])]
    return list(records.matching(keep))
