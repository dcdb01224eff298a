"""``.hoodie/hoodie.properties``: the table's configuration and the source of truth for its state.

The file is in java-properties syntax (written by ``java.util.Properties.store``): ``=``,
``:``, ``#``, ``!`` and ``\\`` escaped with a backslash, characters outside printable ASCII as
``\\uXXXX``. Its last key, ``hoodie.table.checksum``, is the CRC32 of ``<database>.<table>``.
Hudi updates the file by keeping ``hoodie.properties.backup`` while it rewrites it; readers
fall back to that backup, and so do we. We replace the file atomically instead.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from hudisql.errors import (
    CorruptTableError,
    TableNotFoundError,
    UnsupportedTableVersionError,
    WriteError,
)
from hudisql.table.io.storage import Storage

PROPERTIES_FILE = ".hoodie/hoodie.properties"
BACKUP_FILE = ".hoodie/hoodie.properties.backup"

#: Table versions hudisql reads; new tables are DEFAULT_WRITE_VERSION unless a writer asks
#: for another of WRITABLE_VERSIONS (``hoodie.write.table.version``).
SUPPORTED_VERSIONS = (6, 8, 9)
#: Version 6 (Hudi 0.14/0.15): the property set :func:`new_table_properties` builds, which
#: ``table_versions.hudi1x_properties`` turns into a version 8/9 one.
WRITE_VERSION = 6
#: The version of a new table when the writer does not set ``hoodie.write.table.version``.
DEFAULT_WRITE_VERSION = 9
#: The table versions hudisql writes, each with the timeline layout it has.
WRITABLE_VERSIONS = {6: 1, 8: 2, 9: 2}

NAME = "hoodie.table.name"
DATABASE = "hoodie.database.name"
TABLE_TYPE = "hoodie.table.type"
VERSION = "hoodie.table.version"
TIMELINE_LAYOUT = "hoodie.timeline.layout.version"
TIMELINE_PATH = "hoodie.timeline.path"
TIMELINE_HISTORY_PATH = "hoodie.timeline.history.path"
ARCHIVE_FOLDER = "hoodie.archivelog.folder"
RECORD_KEY_FIELDS = "hoodie.table.recordkey.fields"
#: Whether base files carry the ``_hoodie_*`` meta columns (Hudi's default: true).
POPULATE_META_FIELDS = "hoodie.populate.meta.fields"
PARTITION_FIELDS = "hoodie.table.partition.fields"
PRECOMBINE_FIELD = "hoodie.table.precombine.field"
ORDERING_FIELDS = "hoodie.table.ordering.fields"
KEYGEN_CLASS = "hoodie.table.keygenerator.class"
CREATE_SCHEMA = "hoodie.table.create.schema"
PAYLOAD_CLASS = "hoodie.compaction.payload.class"
MERGE_MODE = "hoodie.record.merge.mode"
#: The payload class under which the later write wins whatever the ordering values say.
COMMIT_TIME_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
#: The payload class of a metadata table's records, which merge by Hudi's metadata rules.
METADATA_PAYLOAD = "org.apache.hudi.metadata.HoodieMetadataPayload"
#: The payload class under which the greatest ordering (precombine) value wins.
EVENT_TIME_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
MERGER_STRATEGY = "hoodie.compaction.record.merger.strategy"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
URL_ENCODE = "hoodie.datasource.write.partitionpath.urlencode"
DROP_PARTITION_COLUMNS = "hoodie.datasource.write.drop.partition.columns"
METADATA_PARTITIONS = "hoodie.table.metadata.partitions"
METADATA_PARTITIONS_INFLIGHT = "hoodie.table.metadata.partitions.inflight"
CHECKSUM = "hoodie.table.checksum"
KEYGEN_TYPE = "hoodie.table.keygenerator.type"
_KEYGEN_TYPE_CLASSES = {
    "SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
    "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
    "CUSTOM": "org.apache.hudi.keygen.CustomKeyGenerator",
    "TIMESTAMP": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
}

MERGE_ON_READ = "MERGE_ON_READ"
COPY_ON_WRITE = "COPY_ON_WRITE"
TABLE_TYPES = (MERGE_ON_READ, COPY_ON_WRITE)

# ---------------------------------------------------------------------------------------------
# java-properties syntax

_WS = " \t\f"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SAVE_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f", "\\": "\\\\"}
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _logical_lines(text: str) -> Iterator[str]:
    """The logical lines of a properties text: comments and blank lines dropped, continued
    lines (ending in an odd number of backslashes) joined with their leading blanks dropped."""
    pending: str | None = None
    for raw in _LINE_BREAK.split(text):
        line = raw.lstrip(_WS)
        # Only the first natural line of a logical line can be a comment or blank.
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _split_key_value(line: str) -> tuple[str, str]:
    """The raw (still escaped) key and value of one logical line."""
    n = len(line)
    key_end = value_start = n
    has_separator = escaped = False
    for i, c in enumerate(line):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        elif c in _WS:
            key_end, value_start = i, i + 1
            break
    while value_start < n:
        c = line[value_start]
        if c not in _WS:
            if has_separator or c not in "=:":
                break
            has_separator = True
        value_start += 1
    return line[:key_end], line[value_start:]


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        if c != "\\" or i >= n:
            out.append(c)
            continue
        c = text[i]
        i += 1
        if c == "u":
            code = text[i : i + 4]
            if len(code) != 4 or any(h not in "0123456789abcdefABCDEF" for h in code):
                raise ValueError("malformed \\uxxxx escape " + repr("\\u" + code))
            out.append(chr(int(code, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    result = "".join(out)
    # Java strings are UTF-16: a character beyond the BMP arrives as two \u escapes.
    return _SURROGATE_PAIR.sub(
        lambda m: m.group().encode("utf-16-le", "surrogatepass").decode("utf-16-le"), result
    )


def parse_properties(text: str) -> dict[str, str]:
    """The keys and values of a java-properties text, in file order (a later key wins).

    Raises:
        ValueError: a malformed ``\\uXXXX`` escape.
    """
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        result[_unescape(key)] = _unescape(value)
    return result


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for i, c in enumerate(text):
        if c in _SAVE_ESCAPES:
            out.append(_SAVE_ESCAPES[c])
        elif c == " ":
            # Keys end at a blank; a value loses its leading blanks unless escaped.
            out.append("\\ " if is_key or i == 0 else " ")
        elif c in "=:#!":
            out.append("\\" + c)
        elif " " < c <= "~":
            out.append(c)
        else:
            out.append(_unicode_escape(c))
    return "".join(out)


def _unicode_escape(c: str) -> str:
    units = c.encode("utf-16-be", "surrogatepass")
    return "".join(
        f"\\u{int.from_bytes(units[j : j + 2], 'big'):04X}" for j in range(0, len(units), 2)
    )


def _comment_line(line: str) -> str:
    return "#" + "".join(c if " " <= c <= "~" else _unicode_escape(c) for c in line)


def format_properties(mapping: Mapping[str, str], comment: str | None = None) -> str:
    """``mapping`` as a java-properties text (ASCII only), in its order, after ``comment``.

    Each line of ``comment`` becomes a ``#`` line; ``parse_properties`` reads back ``mapping``.
    """
    lines = [_comment_line(c) for c in _LINE_BREAK.split(comment)] if comment is not None else []
    for key, value in mapping.items():
        lines.append(f"{_escape(key, True)}={_escape(value, False)}")
    return "".join(line + "\n" for line in lines)


def table_checksum(database: str | None, table: str) -> int:
    """Hudi's ``hoodie.table.checksum``: the CRC32 of the UTF-8 text ``<database>.<table>``."""
    return zlib.crc32(f"{database or ''}.{table}".encode())


# ---------------------------------------------------------------------------------------------
# The table's properties


def _split_list(value: str | None) -> list[str]:
    if not value:
        return []
    return [part.strip() for part in value.split(",") if part.strip()]


class TableProperties(Mapping[str, str]):
    """The table's ``hoodie.properties``: an immutable mapping with typed accessors.

    ``location`` (not part of the mapping) names the table in error messages.
    """

    def __init__(self, values: Mapping[str, str] | Iterable[tuple[str, str]] = (),
                 location: str = "") -> None:
        self._values: dict[str, str] = dict(values)
        self.location = location

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"TableProperties({self._values!r})"

    # -- loading and saving -------------------------------------------------------------------

    @classmethod
    def load(cls, storage: Storage) -> TableProperties:
        """Read and check ``.hoodie/hoodie.properties`` of the table at ``storage``.

        Falls back to ``hoodie.properties.backup`` (as Hudi does) when the file is missing or
        damaged and a sound backup exists. Never writes anything.

        Raises:
            TableNotFoundError: no ``hoodie.properties`` there (not a Hudi table).
            CorruptTableError: the file is malformed or its checksum does not match.
            UnsupportedTableVersionError: ``hoodie.table.version`` is not 6, 8 or 9.
        """
        where = storage.base_uri
        # Read first, look for the backup only when that fails: on an object store each
        # look is a request or two, and a table is opened several times per statement.
        try:
            return cls._read(storage, PROPERTIES_FILE)
        except OSError:
            if storage.is_file(PROPERTIES_FILE):
                raise  # there, but unreadable: say why
            if storage.is_file(BACKUP_FILE):
                return cls._read(storage, BACKUP_FILE)
            raise TableNotFoundError(_not_found_message(storage)) from None
        except CorruptTableError:
            if not storage.is_file(BACKUP_FILE):
                raise
            try:
                return cls._read(storage, BACKUP_FILE)
            except CorruptTableError as backup_error:
                raise CorruptTableError(
                    f"{storage.full_path(PROPERTIES_FILE)} and its backup are both damaged "
                    f"({backup_error}); restore hoodie.properties of table {where} from a copy"
                ) from None

    @classmethod
    def _read(cls, storage: Storage, rel: str) -> TableProperties:
        path = storage.full_path(rel)
        data = storage.read_bytes(rel)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")  # what java.util.Properties.load reads
        try:
            values = parse_properties(text)
        except ValueError as e:
            raise CorruptTableError(
                f"{path} is malformed ({e}); restore it from a copy or from "
                "hoodie.properties.backup"
            ) from None
        props = cls(values, location=storage.base_uri)
        props._check(path)
        return props

    def _check(self, path: str) -> None:
        """Raise the error that a damaged or unsupported properties file deserves."""
        fix = "restore it from a copy or from hoodie.properties.backup"
        if not self.get(NAME):
            raise CorruptTableError(f"{path} is malformed: it has no {NAME}; {fix}")
        raw_version = self.get(VERSION)
        if raw_version is None:
            raise UnsupportedTableVersionError(
                f"{path} has no {VERSION}: a Hudi table of version 0 (before Hudi 0.6); "
                f"hudisql reads versions {_versions()}: upgrade the table with Apache Hudi first"
            )
        if not raw_version.strip().isdigit():
            raise CorruptTableError(f"{path} is malformed: {VERSION}={raw_version!r}; {fix}")
        version = int(raw_version)
        if version not in SUPPORTED_VERSIONS:
            hint = ("upgrade it with Apache Hudi 0.14 or later" if version < 6 else
                    "it was written by a newer Hudi; read it with that Hudi")
            raise UnsupportedTableVersionError(
                f"table {self.location or path} has {VERSION}={version}; hudisql reads versions "
                f"{_versions()} and writes them: {hint}"
            )
        table_type = self.get(TABLE_TYPE, COPY_ON_WRITE)
        if table_type not in TABLE_TYPES:
            raise CorruptTableError(
                f"{path} is malformed: {TABLE_TYPE}={table_type!r} (expected "
                f"{' or '.join(TABLE_TYPES)}); {fix}"
            )
        for key in (TIMELINE_LAYOUT, CHECKSUM):
            if key in self and not self[key].strip().isdigit():
                raise CorruptTableError(f"{path} is malformed: {key}={self[key]!r}; {fix}")
        if CHECKSUM in self:
            expected = table_checksum(self.database_name, self.table_name)
            if int(self[CHECKSUM]) != expected:
                raise CorruptTableError(
                    f"{path} is damaged: {CHECKSUM}={self[CHECKSUM]} but "
                    f"'{self.database_name or ''}.{self.table_name}' gives {expected}; the table "
                    f"name or database was changed by hand or the file is corrupt; {fix}"
                )

    def save(self, storage: Storage, comment: str | None = None) -> None:
        """Atomically replace the table's ``hoodie.properties`` with this mapping.

        The checksum is recomputed and written last.

        Raises:
            WriteError: the mapping has no ``hoodie.table.name``.
        """
        if not self.get(NAME):
            raise WriteError(
                f"cannot save hoodie.properties of {storage.base_uri}: no {NAME} in it"
            )
        values = {k: v for k, v in self._values.items() if k != CHECKSUM}
        values[CHECKSUM] = str(table_checksum(values.get(DATABASE), values[NAME]))
        if comment is None:
            now = datetime.now(UTC)
            comment = (f"Properties saved on {now.isoformat().replace('+00:00', 'Z')}\n"
                       f"{now.strftime('%a %b %d %H:%M:%S UTC %Y')}")
        storage.write_atomic(PROPERTIES_FILE, format_properties(values, comment).encode("ascii"))

    def updated(self, **changes: str | None) -> TableProperties:
        """A copy with ``changes`` applied (a None value removes the key), checksum recomputed.

        Keys have dots, so pass them as ``updated(**{"hoodie.table.metadata.partitions": v})``.
        """
        values = dict(self._values)
        for key, value in changes.items():
            if value is None:
                values.pop(key, None)
            else:
                values[key] = str(value)
        if CHECKSUM in values and values.get(NAME):
            values[CHECKSUM] = str(table_checksum(values.get(DATABASE), values[NAME]))
        return TableProperties(values, location=self.location)

    # -- typed accessors ---------------------------------------------------------------------

    @property
    def table_name(self) -> str:
        """``hoodie.table.name``."""
        return self._values.get(NAME, "")

    @property
    def database_name(self) -> str | None:
        """``hoodie.database.name``, or None when not recorded."""
        return self._values.get(DATABASE) or None

    @property
    def table_type(self) -> str:
        """``MERGE_ON_READ`` or ``COPY_ON_WRITE`` (Hudi's default when absent)."""
        return self._values.get(TABLE_TYPE, COPY_ON_WRITE)

    @property
    def is_mor(self) -> bool:
        """True for a merge-on-read table."""
        return self.table_type == MERGE_ON_READ

    @property
    def is_metadata_table(self) -> bool:
        """True for a metadata table (``.hoodie/metadata``): its records merge by Hudi's
        metadata payload, which only :mod:`hudisql.metadata` implements."""
        return self._values.get(PAYLOAD_CLASS) == METADATA_PAYLOAD

    @property
    def version(self) -> int:
        """``hoodie.table.version`` (6, 8 or 9 once loaded)."""
        return self._int(VERSION, 0)

    @property
    def timeline_layout(self) -> int:
        """``hoodie.timeline.layout.version``: 1 for version 6, 2 for versions 8 and 9."""
        return self._int(TIMELINE_LAYOUT, 2 if self.version >= 8 else 1)

    @property
    def timeline_dir(self) -> str:
        """Where the active timeline lives: ``.hoodie`` (v6) or ``.hoodie/timeline`` (v8+)."""
        if self.version >= 8:
            return ".hoodie/" + self._values.get(TIMELINE_PATH, "timeline")
        return ".hoodie"

    @property
    def archive_dir(self) -> str:
        """Where archived instants live: ``.hoodie/archived`` or ``.hoodie/timeline/history``."""
        if self.version >= 8:
            return f"{self.timeline_dir}/{self._values.get(TIMELINE_HISTORY_PATH, 'history')}"
        return ".hoodie/" + self._values.get(ARCHIVE_FOLDER, "archived")

    @property
    def record_key_fields(self) -> list[str]:
        """The record key fields (``hoodie.table.recordkey.fields``)."""
        return _split_list(self._values.get(RECORD_KEY_FIELDS))

    @property
    def keyless(self) -> bool:
        """True for a table without record key fields: its writers generate record keys
        (Hudi 0.14+'s auto-generated keys, kept in ``_hoodie_record_key``)."""
        return not self.record_key_fields

    @property
    def partition_fields(self) -> list[str]:
        """The partition fields, without the ``:TYPE`` suffix custom key generators add."""
        return [f.split(":", 1)[0] for f in _split_list(self._values.get(PARTITION_FIELDS))]

    @property
    def ordering_fields(self) -> list[str]:
        """The ordering fields: ``hoodie.table.ordering.fields`` (v9) or the precombine field."""
        fields = _split_list(self._values.get(ORDERING_FIELDS))
        return fields or _split_list(self._values.get(PRECOMBINE_FIELD))

    @property
    def precombine_field(self) -> str | None:
        """The field whose greatest value wins a merge, or None (the later write wins)."""
        fields = self.ordering_fields
        return fields[0] if fields else None

    @property
    def merge_mode(self) -> str:
        """How two records of one key merge: ``EVENT_TIME_ORDERING`` or ``COMMIT_TIME_ORDERING``.

        ``hoodie.record.merge.mode`` (v8+) when set; otherwise v6 tables say it with their
        payload class: ``OverwriteWithLatestAvroPayload`` means the later write wins (as Hudi
        and the hudi reader merge such tables), any other payload compares ordering values.
        Without an ordering field, event-time ordering falls back to log order.
        """
        mode = self._values.get(MERGE_MODE)
        if mode:
            return mode.strip().upper()
        if self._values.get(PAYLOAD_CLASS) == COMMIT_TIME_PAYLOAD:
            return COMMIT_TIME_ORDERING
        return EVENT_TIME_ORDERING

    @property
    def hive_style_partitioning(self) -> bool:
        """True when partition folders are named ``field=value``."""
        return self._bool(HIVE_STYLE)

    @property
    def url_encode_partitions(self) -> bool:
        """True when partition values are URL-encoded in folder names."""
        return self._bool(URL_ENCODE)

    @property
    def keygenerator_class(self) -> str | None:
        """``hoodie.table.keygenerator.class``, or None; versions 8 and 9 may record only
        ``hoodie.table.keygenerator.type``, which names one of Hudi's built-in classes."""
        named = self._values.get(KEYGEN_CLASS)
        if named:
            return named
        kind = (self._values.get(KEYGEN_TYPE) or "").strip().upper()
        return _KEYGEN_TYPE_CLASSES.get(kind)

    @property
    def create_schema(self) -> str | None:
        """The Avro schema (JSON) the table was created with, or None."""
        return self._values.get(CREATE_SCHEMA) or None

    @property
    def metadata_partitions(self) -> list[str]:
        """Metadata-table partitions that are built and readable."""
        return _split_list(self._values.get(METADATA_PARTITIONS))

    @property
    def metadata_partitions_inflight(self) -> list[str]:
        """Metadata-table partitions being built: readers must not use them."""
        return _split_list(self._values.get(METADATA_PARTITIONS_INFLIGHT))

    def _int(self, key: str, default: int) -> int:
        value = self._values.get(key)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise CorruptTableError(
                f"hoodie.properties of table {self.location}: {key}={value!r} is not a number"
            ) from None

    def _bool(self, key: str) -> bool:
        return self._values.get(key, "false").strip().lower() == "true"


def _versions() -> str:
    return ", ".join(str(v) for v in SUPPORTED_VERSIONS[:-1]) + f" and {SUPPORTED_VERSIONS[-1]}"


def _not_found_message(storage: Storage) -> str:
    where = storage.base_uri
    if not storage.exists(""):
        return f"{where} does not exist: no Hudi table there; check the path"
    if storage.exists(".hoodie"):
        return (f"{where} has a .hoodie folder but no .hoodie/hoodie.properties: the table's "
                "creation did not finish or the file was deleted; restore hoodie.properties "
                "from a copy, or drop and re-create the table")
    return (f"{where} is not a Hudi table (no .hoodie/hoodie.properties); check the path or "
            "create the table first")


def _key_generator(record_key_fields: list[str], partition_fields: list[str]) -> str:
    if not partition_fields:
        return "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    if len(partition_fields) == 1 and len(record_key_fields) <= 1:
        return "org.apache.hudi.keygen.SimpleKeyGenerator"
    return "org.apache.hudi.keygen.ComplexKeyGenerator"


def new_table_properties(
    name: str,
    table_type: str,
    record_key_fields: Iterable[str],
    partition_fields: Iterable[str] = (),
    precombine_field: str | None = None,
    create_schema: str | None = None,
    database: str = "default",
    hive_style: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> TableProperties:
    """The properties of a new version-6 table, with the keys Hudi 0.14/0.15 writes.

    With a precombine field the payload class is ``DefaultHoodieRecordPayload`` (the
    greatest ordering value wins, see :attr:`TableProperties.merge_mode`); without one,
    ``OverwriteWithLatestAvroPayload`` (the later write wins). ``extra`` may override it.

    Raises:
        WriteError: an empty name or an unknown table type.
    """
    keys = [f.strip() for f in record_key_fields if f.strip()]
    parts = [f.strip() for f in partition_fields if f.strip()]
    if not name:
        raise WriteError("a table needs a name")
    if table_type not in TABLE_TYPES:
        raise WriteError(
            f"table {name}: table type {table_type!r} is not {' or '.join(TABLE_TYPES)}"
        )
    values: dict[str, str] = {
        NAME: name,
        DATABASE: database,
        TABLE_TYPE: table_type,
        VERSION: str(WRITE_VERSION),
        TIMELINE_LAYOUT: "1",
    }
    if keys:  # a keyless table (auto-generated keys) has none, as Hudi writes it
        values[RECORD_KEY_FIELDS] = ",".join(keys)
    if parts:
        values[PARTITION_FIELDS] = ",".join(parts)
    if precombine_field:
        values[PRECOMBINE_FIELD] = precombine_field
    values[KEYGEN_CLASS] = _key_generator(keys, parts)
    if create_schema:
        values[CREATE_SCHEMA] = create_schema
    values[PAYLOAD_CLASS] = EVENT_TIME_PAYLOAD if precombine_field else COMMIT_TIME_PAYLOAD
    values[MERGER_STRATEGY] = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    values[ARCHIVE_FOLDER] = "archived"
    values[HIVE_STYLE] = "true" if hive_style else "false"
    values[URL_ENCODE] = "false"
    values[DROP_PARTITION_COLUMNS] = "false"
    for key, value in (extra or {}).items():
        # Java writes booleans as true/false.
        values[key] = str(value).lower() if isinstance(value, bool) else str(value)
    values.pop(CHECKSUM, None)
    values[CHECKSUM] = str(table_checksum(database, name))
    return TableProperties(values)
