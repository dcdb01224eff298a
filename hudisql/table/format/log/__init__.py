"""Hudi's log format: block framing, header-only scans with corruption detection, codecs.

``format`` holds the framing and :class:`LogBlockInfo`; ``reader`` scans and decodes;
``writer`` encodes blocks and writes new log files; ``avro_codec`` turns Avro records
into Arrow columns and back.
"""

from __future__ import annotations

from hudisql.table.format.log.format import (
    MAGIC,
    BlockType,
    DeleteRecord,
    HeaderKey,
    LogBlockInfo,
    block_identifier,
)
from hudisql.table.format.log.reader import (
    decode_data_block,
    decode_delete_block,
    read_block_content,
    scan_blocks,
    scan_log_file,
)
from hudisql.table.format.log.writer import (
    LogFileWriter,
    encode_avro_data_block,
    encode_delete_block,
    encode_rollback_block,
)

__all__ = [
    "MAGIC",
    "BlockType",
    "DeleteRecord",
    "HeaderKey",
    "LogBlockInfo",
    "LogFileWriter",
    "block_identifier",
    "decode_data_block",
    "decode_delete_block",
    "encode_avro_data_block",
    "encode_delete_block",
    "encode_rollback_block",
    "read_block_content",
    "scan_blocks",
    "scan_log_file",
]
