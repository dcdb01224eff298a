"""Writing one file slice's files: base parquet files and log files, with their markers.

These are the per-file-slice steps of a write. Each is a pure function of its arguments
(storage, partition, file id, instant, write token, records, schema...) that writes its
files and returns the :class:`WriteStat` the commit metadata records, so Spark executors
can run them as they are. Before a data file is created, a marker
``.hoodie/.temp/<instant>/<partition>/<file>.marker.<CREATE|MERGE|APPEND>`` records it
(Hudi's direct markers): a rollback of a failed instant finds every file it wrote there,
even one cut short by a crash.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudisql.errors import WriteError
from hudisql.table.format.commit_metadata import NULL_COMMIT, WriteStat
from hudisql.table.format.filenames import BaseFileName, LogFileName
from hudisql.table.format.fsview import PARTITION_METAFILE
from hudisql.table.format.log.format import DeleteRecord, HeaderKey, block_identifier
from hudisql.table.format.log.writer import (
    DEFAULT_MAX_LOG_FILE_SIZE,
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
)
from hudisql.table.format.schema import META_COLUMNS, avro_to_arrow, with_meta_fields
from hudisql.table.io.storage import Storage
from hudisql.table.read.expressions import mark_expressions
from hudisql.table.read.reconcile import BLOCK_ATTEMPT_STAT_KEY

__all__ = [
    "DATA_BLOCK_FORMAT",
    "DATA_BLOCK_FORMATS",
    "MARKER_DIR",
    "avro_text",
    "create_log_files",
    "data_block_format",
    "marker_path",
    "write_base_file",
    "write_log_file",
    "write_marker",
    "write_partition_metadata",
]

#: Where markers live: ``.hoodie/.temp/<instant>/...``.
MARKER_DIR = ".hoodie/.temp"

COMMIT_TIME, SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME = META_COLUMNS

#: The write option (or table property) naming the base files' parquet codec, and its
#: default: Hudi's (the fixtures' base files are all gzip).
COMPRESSION_CODEC = "hoodie.parquet.compression.codec"
DEFAULT_COMPRESSION = "gzip"
#: Hudi's codec names -> pyarrow's.
_CODECS = {"gzip": "gzip", "snappy": "snappy", "zstd": "zstd", "lz4": "lz4",
           "uncompressed": "none", "none": "none", "brotli": "brotli"}

#: Hudi's option naming the format of the data blocks writers put in log files, and the
#: formats hudisql writes. hudisql's writers default to parquet (docs/FORMAT.md, "Data
#: blocks": Arrow encodes a parquet block in bulk, an Avro block record by record); Apache
#: Hudi's default is avro, which stays selectable.
DATA_BLOCK_FORMAT = "hoodie.logfile.data.block.format"
DATA_BLOCK_FORMATS = ("parquet", "avro")
DEFAULT_DATA_BLOCK_FORMAT = "parquet"

_LOG_CREATE_ATTEMPTS = 100
_WRITE_TOKEN = re.compile(r"^\d+-\d+-\d+$")


def avro_text(schema: str | Mapping[str, Any]) -> str:
    """Compact Avro JSON (Hudi's spelling) of a schema given as text or dict."""
    if isinstance(schema, str):
        schema = json.loads(schema)
    return json.dumps(schema, separators=(",", ":"))


def _table_schema(schema: str | Mapping[str, Any]) -> dict[str, Any]:
    node = json.loads(schema) if isinstance(schema, str) else dict(schema)
    node["fields"] = [f for f in node.get("fields", []) if f["name"] not in META_COLUMNS]
    return dict(node)


def _join(partition_path: str, name: str) -> str:
    return posixpath.join(partition_path, name) if partition_path else name


def marker_path(instant_time: str, partition_path: str, file_name: str, kind: str) -> str:
    """The marker of a data file: ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<kind>``."""
    return _join(f"{MARKER_DIR}/{instant_time}/{partition_path}".rstrip("/"),
                 f"{file_name}.marker.{kind}")


def write_marker(
    storage: Storage, instant_time: str, partition_path: str, file_name: str, kind: str
) -> None:
    """Write the marker of a data file (``CREATE``, ``MERGE`` or ``APPEND``) before the file."""
    storage.write_bytes(marker_path(instant_time, partition_path, file_name, kind), b"")


def write_partition_metadata(storage: Storage, partition_path: str, instant_time: str) -> bool:
    """Create ``<partition>/.hoodie_partition_metadata`` unless it exists.

    Returns:
        True when this call created it (two writers racing: exactly one does).
    """
    rel = _join(partition_path, PARTITION_METAFILE)
    if storage.exists(rel):
        return False
    depth = len([p for p in partition_path.split("/") if p])
    now = datetime.now(UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    text = f"#partition metadata\n#{now}\ncommitTime={instant_time}\npartitionDepth={depth}\n"
    try:
        storage.create_if_absent(rel, text.encode("ascii"))
    except FileExistsError:
        return False
    return True


def _partition_id(write_token: str) -> int:
    """The Spark partition id of a write token; raises WriteError for a malformed token."""
    if not _WRITE_TOKEN.match(write_token):
        raise WriteError(f"write token {write_token!r} is not <partitionId>-<stageId>-<attemptId>")
    return int(write_token.split("-", 1)[0])


def _stamp(
    records: pa.Table,
    instant_time: str,
    partition_path: str,
    file_name_value: str,
    partition_id: int,
    keep_existing: bool,
) -> pa.Table:
    """``records`` with the five meta columns first, filled in for this file."""
    n = records.num_rows
    if RECORD_KEY not in records.column_names:
        raise WriteError(f"records for {file_name_value} lack the {RECORD_KEY} column")
    keys = records.column(RECORD_KEY)
    if keys.null_count:
        raise WriteError(f"records for {file_name_value} have rows without a record key")
    prefix = pa.scalar(f"{instant_time}_{partition_id}_")

    def new_seqnos(rows: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(prefix, pa.array(rows).cast(pa.string()), "")

    if keep_existing and COMMIT_TIME in records.column_names:
        # Rows carried over from an earlier file keep the instant and seqno that wrote them;
        # only the others get new ones (a rewrite carries most rows over).
        old_times = records.column(COMMIT_TIME).cast(pa.string()).combine_chunks()
        old_seqnos = records.column(SEQNO).cast(pa.string())
        fresh_count = old_times.null_count
        carried = n - fresh_count
        if fresh_count and old_times.slice(carried).null_count == fresh_count:
            # The new rows follow the carried ones (a small file taking inserts): the
            # carried values as they are, the new ones appended (no copy of the carried).
            commit_times = pa.chunked_array([
                old_times.slice(0, carried),
                pa.repeat(pa.scalar(instant_time, pa.string()), fresh_count)])
            seqnos = pa.chunked_array([
                *old_seqnos.slice(0, carried).chunks,
                new_seqnos(np.arange(carried, n, dtype=np.int64))], pa.string())
        else:
            fresh = pc.is_null(old_times)
            rows = np.flatnonzero(fresh.to_numpy(zero_copy_only=False))
            commit_times = pc.replace_with_mask(
                old_times, fresh, pa.repeat(pa.scalar(instant_time, pa.string()), len(rows)))
            seqnos = pc.replace_with_mask(old_seqnos.combine_chunks(), fresh, new_seqnos(rows))
    else:
        seqnos = new_seqnos(np.arange(n, dtype=np.int64))
        commit_times = pa.repeat(pa.scalar(instant_time, pa.string()), n)
    meta = {
        COMMIT_TIME: commit_times,
        SEQNO: seqnos,
        RECORD_KEY: keys.cast(pa.string()),
        PARTITION_PATH: pa.repeat(pa.scalar(partition_path, pa.string()), n),
        FILE_NAME: pa.repeat(pa.scalar(file_name_value, pa.string()), n),
    }
    data = [c for c in records.column_names if c not in META_COLUMNS]
    return pa.Table.from_arrays(
        [*meta.values(), *(records.column(c) for c in data)], names=[*meta, *data]
    )


def _conform(table: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise WriteError(f"records for {where} lack the columns {missing}")
    try:
        return pa.Table.from_arrays(
            [table.column(f.name).cast(f.type) for f in schema], schema=schema
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise WriteError(f"records for {where} do not fit the table schema: {exc}") from exc


def parquet_codec(options: Mapping[str, str], properties: Mapping[str, str]) -> str:
    """The base files' parquet codec: write option, else table property, else gzip.

    Raises:
        WriteError: a codec name parquet does not know.
    """
    value = options.get(COMPRESSION_CODEC) or properties.get(COMPRESSION_CODEC)
    if value is None:
        return DEFAULT_COMPRESSION
    codec = _CODECS.get(value.strip().lower())
    if codec is None:
        raise WriteError(f"{COMPRESSION_CODEC}={value!r} is not a parquet codec; use one of "
                         f"{', '.join(sorted(_CODECS))}")
    return codec


def data_block_format(options: Mapping[str, str], properties: Mapping[str, str],
                      table: str = "") -> str:
    """The format of the data blocks a write to ``table`` puts in log files: write option,
    else table property, else parquet (:data:`DATA_BLOCK_FORMAT`).

    Raises:
        WriteError: a format other than parquet or avro.
    """
    value = options.get(DATA_BLOCK_FORMAT) or properties.get(DATA_BLOCK_FORMAT)
    if value is None:
        return DEFAULT_DATA_BLOCK_FORMAT
    block_format = value.strip().lower()
    if block_format not in DATA_BLOCK_FORMATS:
        where = f"table {table}: " if table else ""
        raise WriteError(f"{where}{DATA_BLOCK_FORMAT}={value!r}: hudisql writes "
                         f"{' or '.join(DATA_BLOCK_FORMATS)} data blocks in log files; set "
                         "one of those or leave the option out (parquet)")
    return block_format


def write_base_file(
    storage: Storage,
    partition_path: str,
    file_id: str,
    instant_time: str,
    write_token: str,
    records: pa.Table,
    schema: str | Mapping[str, Any],
    *,
    prev_commit: str | None = None,
    num_updates: int = 0,
    num_deletes: int = 0,
    compression: str = DEFAULT_COMPRESSION,
) -> WriteStat:
    """Write a new base parquet file of file group ``file_id`` holding ``records``.

    ``records`` has a ``_hoodie_record_key`` column and the table's columns. Rows whose
    ``_hoodie_commit_time`` is set (carried over from the slice's previous base file by a
    copy-on-write merge) keep their commit time and seqno; every other row is stamped
    ``instant_time`` and ``<instant>_<partitionId>_<row>`` (the partition id is the write
    token's first part). The footer carries ``parquet.avro.schema`` (meta fields first),
    ``writer.model.name``, ``hoodie_min_record_key`` and ``hoodie_max_record_key``.

    Args:
        schema: the table's Avro schema (with or without meta fields).
        prev_commit: the base instant of the slice this file replaces (copy-on-write).
        num_updates: how many rows replace a stored record (the rest are inserts).
        num_deletes: how many stored records the merge dropped.

    Returns:
        The file's write stat (``path`` relative to the table).

    Raises:
        WriteError: records without keys or that do not fit the schema (nothing written).
    """
    partition_id = _partition_id(write_token)
    name = BaseFileName(file_id, write_token, instant_time).format()
    if BaseFileName.parse(name) != BaseFileName(file_id, write_token, instant_time):
        raise WriteError(f"file id {file_id!r} and write token {write_token!r} make no file name")
    rel = _join(partition_path, name)
    avro = with_meta_fields(_table_schema(schema))
    stamped = _stamp(records, instant_time, partition_path, name, partition_id, keep_existing=True)
    table = _conform(stamped, avro_to_arrow(avro_text(avro)), rel)
    new_rows = int(pc.sum(pc.equal(table.column(COMMIT_TIME), instant_time)).as_py() or 0)
    footer = {"parquet.avro.schema": avro_text(avro), "writer.model.name": "avro"}
    if table.num_rows:
        bounds = pc.min_max(table.column(RECORD_KEY))
        footer["hoodie_min_record_key"] = bounds["min"].as_py()
        footer["hoodie_max_record_key"] = bounds["max"].as_py()
    data = _parquet_bytes(table, footer, compression)
    write_partition_metadata(storage, partition_path, instant_time)
    write_marker(storage, instant_time, partition_path, name, "MERGE" if prev_commit else "CREATE")
    storage.write_bytes(rel, data)
    return WriteStat(
        file_id=file_id,
        path=rel,
        prev_commit=prev_commit or NULL_COMMIT,
        num_writes=table.num_rows,
        num_deletes=num_deletes,
        num_update_writes=num_updates,
        num_inserts=max(new_rows - num_updates, 0),
        total_write_bytes=len(data),
        partition_path=partition_path,
        file_size_in_bytes=len(data),
    )


def _parquet_bytes(table: pa.Table, footer: dict[str, str], compression: str) -> bytes:
    """The parquet file of ``table`` with exactly ``footer`` as its key-value metadata."""
    sink = io.BytesIO()
    # No ARROW:schema key (store_schema=False), as parquet-mr writes none.
    with pq.ParquetWriter(
        sink, table.schema, compression=compression, store_schema=False,
        use_dictionary=_dictionary_columns(table.schema),
    ) as writer:
        writer.add_key_value_metadata(footer)
        writer.write_table(table)
    return sink.getvalue()


def _dictionary_columns(schema: pa.Schema) -> bool | list[str]:
    """The columns worth a parquet dictionary. The sequence numbers and record keys are
    unique in a file: a dictionary would only be built to be dropped (parquet falls back to
    plain encoding), so they are written plain. (Named by top-level column only: with
    nested columns every column keeps the default.)"""
    if any(pa.types.is_nested(f.type) for f in schema):
        return True
    return [n for n in schema.names if n not in (SEQNO, RECORD_KEY)]


def _ordered_header(instant_time: str, schema_text: str, ident: str | None) -> dict[HeaderKey, str]:
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_text}
    if ident is not None:
        header[HeaderKey.BLOCK_IDENTIFIER] = ident
    return header


def write_log_file(
    storage: Storage,
    partition_path: str,
    file_id: str,
    base_instant: str,
    instant_time: str,
    write_token: str,
    records: pa.Table | None,
    schema: str | Mapping[str, Any],
    *,
    deletes: Sequence[DeleteRecord] = (),
    attempt: int | None = None,
    block_sequence_start: int = 0,
    expressions: Mapping[str, str] | None = None,
    base_file: str | None = None,
    num_updates: int | None = None,
    max_file_size: int = DEFAULT_MAX_LOG_FILE_SIZE,
    block_format: str = "avro",
    compression: str = DEFAULT_COMPRESSION,
    named_by_instant: bool = False,
) -> WriteStat:
    """Write a new log file on the slice ``(file_id, base_instant)``: data, then deletes.

    With ``named_by_instant`` (table versions 8 and 9) the file is named after
    ``instant_time`` instead of the slice's base instant, and its marker is CREATE: Hudi 1.x
    attaches such a log to a slice by the completion time of the instant that wrote it.

    ``records`` (with a ``_hoodie_record_key`` column) become one data block stamped
    with ``instant_time`` (Avro, or with ``block_format="parquet"`` a parquet data block
    compressed with ``compression``); ``deletes`` one delete block. Each block's header holds
    INSTANT_TIME and SCHEMA (meta fields first), and BLOCK_IDENTIFIER
    ``"<attempt>,<sequence>"`` counting from ``block_sequence_start`` when ``attempt`` is
    given. The file takes the next version of the slice's logs and is created atomically
    (never appended to); blocks spill into the next version beyond ``max_file_size``.

    Args:
        expressions: column -> ``add`` or ``set``: the data block is an expression block
            (``hudisql.table.read.expressions``) whose records carry each named column's operand;
            readers apply it to the keys' current rows and keep every other column.
        base_file: the name of the slice's base file (recorded in the stat).
        num_updates: how many records update a stored record (default: all of them).

    Returns:
        The write stat of the file(s) written (``path`` the first, ``log_files`` all).

    Raises:
        WriteError: nothing to write, records that do not fit the schema, or
            ``expressions`` naming unknown columns or ops.
    """
    has_records = records is not None and records.num_rows > 0
    if not has_records and not deletes:
        raise WriteError(f"nothing to write to the log of file group {file_id}")
    partition_id = _partition_id(write_token)
    if attempt is not None and (attempt < 0 or block_sequence_start < 0):
        raise WriteError(
            f"attempt {attempt} and block sequence start {block_sequence_start} must not be "
            f"negative (log of file group {file_id})"
        )
    avro = with_meta_fields(_table_schema(schema))
    schema_text = avro_text(avro)
    # Only the data block is marked: a delete block of the same write removes keys as usual.
    data_schema_text = schema_text
    if expressions is not None:
        where = f"log of file group {file_id} (instant {instant_time})"
        data_schema_text = avro_text(mark_expressions(avro, expressions, where))

    def _header(text: str = schema_text) -> dict[HeaderKey, str]:
        # Blocks of one write are numbered in order, across log-file rollovers.
        ident = None
        if attempt is not None:
            ident = block_identifier(attempt, block_sequence_start + len(blocks))
        header = _ordered_header(instant_time, text, ident)
        if expressions is not None and text is data_schema_text:
            # Readers that do not know expression blocks must refuse them, not misread them.
            header[HeaderKey.HUDISQL_EXPRESSIONS] = json.dumps(dict(expressions))
        return header

    blocks: list[bytes] = []
    n_records = 0
    if records is not None and has_records:
        stamped = _stamp(
            records, instant_time, partition_path, file_id, partition_id, keep_existing=False
        )
        table = _conform(stamped, avro_to_arrow(schema_text), f"the log of file group {file_id}")
        n_records = table.num_rows
        if block_format == "parquet":
            blocks.append(encode_parquet_data_block(
                table, data_schema_text, _header(data_schema_text), compression,
                _dictionary_columns(table.schema)))
        else:
            blocks.append(
                encode_avro_data_block(table, data_schema_text, _header(data_schema_text))
            )
    if deletes:
        blocks.append(encode_delete_block(deletes, _header()))
    if named_by_instant:
        base_instant = instant_time
    written = create_log_files(
        storage, partition_path, file_id, base_instant, instant_time, write_token, blocks,
        max_file_size, marker="CREATE" if named_by_instant else "APPEND",
    )
    first = LogFileName.parse(written[0][0])
    assert first is not None
    total = sum(size for _, size in written)
    # The driver's record of committed log files takes the attempt from here.
    extra: dict[str, Any] = {} if attempt is None else {BLOCK_ATTEMPT_STAT_KEY: attempt}
    return WriteStat(
        file_id=file_id,
        path=written[0][0],
        prev_commit=base_instant,
        num_writes=n_records,
        num_deletes=len(deletes),
        num_update_writes=n_records if num_updates is None else num_updates,
        num_inserts=0 if num_updates is None else max(n_records - num_updates, 0),
        total_write_bytes=total,
        partition_path=partition_path,
        file_size_in_bytes=total,
        log_version=first.version,
        log_offset=0,
        base_file=base_file,
        log_files=[posixpath.basename(rel) for rel, _ in written],
        extra=extra,
    )


def _files_of(blocks: list[bytes], max_file_size: int) -> list[bytes]:
    """Blocks grouped into files: the next block goes to a new file once one is too big."""
    files: list[bytearray] = []
    for block in blocks:
        if not files or len(files[-1]) > max_file_size:
            files.append(bytearray())
        files[-1] += block
    return [bytes(f) for f in files]


def _next_log_version(storage: Storage, partition_path: str, file_id: str, base: str) -> int:
    latest = 0
    for status in storage.list_dir(partition_path):
        parsed = LogFileName.parse(status.name)
        if parsed and parsed.file_id == file_id and parsed.base_instant == base:
            latest = max(latest, parsed.version)
    return latest + 1


def create_log_files(
    storage: Storage,
    partition_path: str,
    file_id: str,
    base_instant: str,
    instant_time: str,
    write_token: str,
    blocks: list[bytes],
    max_file_size: int,
    marker: str = "APPEND",
) -> list[tuple[str, int]]:
    """Write ``blocks`` as new log files of one slice (never appending), markers first
    (of type ``marker``: APPEND, or CREATE for a version 8/9 log named after its instant).

    Each file takes the next free version (created atomically; a version another writer
    took meanwhile is skipped) and spills into the next beyond ``max_file_size``.

    Returns:
        The relative paths and sizes of the files written.
    """
    written: list[tuple[str, int]] = []
    version = _next_log_version(storage, partition_path, file_id, base_instant)
    for content in _files_of(blocks, max_file_size):
        for _ in range(_LOG_CREATE_ATTEMPTS):
            name = LogFileName(file_id, base_instant, version, write_token).format()
            rel = _join(partition_path, name)
            write_marker(storage, instant_time, partition_path, name, marker)
            try:
                storage.create_if_absent(rel, content)
                break
            except FileExistsError:
                # Another writer took this version meanwhile: our marker names a file we did
                # not write, which a rollback of this instant leaves alone (its blocks are
                # not this instant's). Try the next version.
                version += 1
        else:
            raise WriteError(
                f"could not create a new log file for file group {file_id} in partition "
                f"{partition_path!r}: {_LOG_CREATE_ATTEMPTS} versions taken; retry"
            )
        written.append((rel, len(content)))
        version += 1
    return written
