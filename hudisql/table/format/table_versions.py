"""Table versions 6, 8 and 9 as hudisql writes them: the properties each version carries.

hudisql writes a table at the version it has; a new table is version 9 (as Hudi 1.1 makes
it) unless the writer sets ``hoodie.write.table.version`` (6, 8 or 9). Versions 8 (Hudi
1.0) and 9 (Hudi 1.1) keep their timeline in ``.hoodie/timeline`` (layout 2: completion
times in the names of completed instants, Avro commit metadata) and say in
``hoodie.properties`` what version 6 said through class names: the key generator as a
type, the merge behaviour as a merge mode. Version 9 names the ordering fields
``hoodie.table.ordering.fields`` and drops the payload class of the built-in merge modes.
:func:`hudi1x_properties` turns a version-6 property set into the one Hudi 1.0/1.1 writes
(for a new table, and for ``CALL upgrade_table``).
"""

from __future__ import annotations

from collections.abc import Mapping

from hudisql.errors import WriteError
from hudisql.table.format import properties as P

__all__ = [
    "INITIAL_VERSION",
    "KEYGEN_TYPE",
    "MERGE_STRATEGY_ID",
    "TIMELINE_TIMEZONE",
    "WRITE_TABLE_VERSION",
    "check_write_table_version",
    "hudi1x_properties",
    "write_table_version",
]

#: The writer option choosing the version of a new table (Hudi's own key).
WRITE_TABLE_VERSION = "hoodie.write.table.version"
INITIAL_VERSION = "hoodie.table.initial.version"
KEYGEN_TYPE = P.KEYGEN_TYPE
MERGE_STRATEGY_ID = "hoodie.record.merge.strategy.id"
TIMELINE_TIMEZONE = "hoodie.table.timeline.timezone"
TABLE_FORMAT = "hoodie.table.format"

#: Hudi's merge strategy ids of the built-in merge modes (``HoodieRecordMerger``).
_STRATEGY_IDS = {
    P.EVENT_TIME_ORDERING: "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
    P.COMMIT_TIME_ORDERING: "ce9acb64-bde0-424c-9b91-f6ebba25356d",
}
#: Key generator classes and the type names versions 8 and 9 record instead.
_KEYGEN_TYPES = {
    "org.apache.hudi.keygen.SimpleKeyGenerator": "SIMPLE",
    "org.apache.hudi.keygen.SimpleAvroKeyGenerator": "SIMPLE",
    "org.apache.hudi.keygen.NonpartitionedKeyGenerator": "NON_PARTITION",
    "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator": "NON_PARTITION",
    "org.apache.hudi.keygen.ComplexKeyGenerator": "COMPLEX",
    "org.apache.hudi.keygen.ComplexAvroKeyGenerator": "COMPLEX",
    "org.apache.hudi.keygen.CustomKeyGenerator": "CUSTOM",
    "org.apache.hudi.keygen.CustomAvroKeyGenerator": "CUSTOM",
    "org.apache.hudi.keygen.TimestampBasedKeyGenerator": "TIMESTAMP",
    "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator": "TIMESTAMP",
    "org.apache.hudi.keygen.GlobalDeleteKeyGenerator": "GLOBAL_DELETE",
}
_BUILT_IN_PAYLOADS = (P.EVENT_TIME_PAYLOAD, P.COMMIT_TIME_PAYLOAD)


def write_table_version(options: Mapping[str, str], where: str) -> int:
    """The version a new table is created at: ``hoodie.write.table.version`` or the default.

    Raises:
        WriteError: a value that is not 6, 8 or 9 (names ``where``: the table).
    """
    raw = options.get(WRITE_TABLE_VERSION)
    if raw is None or not str(raw).strip():
        return P.DEFAULT_WRITE_VERSION
    text = str(raw).strip()
    if not text.isdigit() or int(text) not in P.WRITABLE_VERSIONS:
        raise WriteError(
            f"{WRITE_TABLE_VERSION}={raw!r} for {where}: hudisql writes table versions "
            f"{', '.join(str(v) for v in P.WRITABLE_VERSIONS)}; pick one of them"
        )
    return int(text)


def check_write_table_version(props: P.TableProperties, options: Mapping[str, str],
                              where: str) -> None:
    """Refuse a write whose ``hoodie.write.table.version`` is not the table's version.

    hudisql writes an existing table at the version it has: the option chooses the version
    of new tables only, and moving a table up is ``CALL upgrade_table`` (an explicit,
    crash-safe step), not a side effect of a write.

    Raises:
        WriteError: the option names another version (names ``where``, both versions and
            what to do); nothing is written.
    """
    raw = options.get(WRITE_TABLE_VERSION)
    if raw is None or not str(raw).strip():
        return
    wanted = write_table_version(options, where)
    if wanted != props.version:
        raise WriteError(
            f"{where} is version {props.version}, but the write sets "
            f"{WRITE_TABLE_VERSION}={raw}: hudisql writes a table at its own version (the "
            "option chooses the version of new tables); upgrade it first with CALL "
            f"upgrade_table(table => '...', to_version => {wanted}), or leave the option out")


def hudi1x_properties(props: P.TableProperties, version: int,
                      initial_version: int | None = None) -> P.TableProperties:
    """``props`` (a version-6 table's) as a version ``version`` (8 or 9) table has them.

    ``initial_version`` is the version the table was created at (``props``'s own when
    None: a table upgraded from 6 keeps 6 there, as Hudi's upgrade handlers do).

    Raises:
        WriteError: ``version`` is not 8 or 9, or a payload class hudisql does not merge by.
    """
    if version not in (8, 9):
        raise WriteError(f"table {props.table_name}: {version} is not a Hudi 1.x table version")
    values = dict(props.items())
    mode = props.merge_mode
    payload = values.get(P.PAYLOAD_CLASS)
    if payload is not None and payload not in _BUILT_IN_PAYLOADS:
        raise WriteError(
            f"table {props.table_name} merges with payload class {payload}, which hudisql "
            "does not write under versions 8 and 9; upgrade it with Apache Hudi 1.x"
        )
    values[P.VERSION] = str(version)
    values[INITIAL_VERSION] = str(initial_version or props.version)
    values[P.TIMELINE_LAYOUT] = "2"
    values[P.TIMELINE_PATH] = "timeline"
    values[P.TIMELINE_HISTORY_PATH] = "history"
    values.setdefault(TIMELINE_TIMEZONE, "UTC")
    keygen = values.get(P.KEYGEN_CLASS)
    if keygen is not None:
        # The class stays beside the type: Hudi 1.x reads either.
        values[KEYGEN_TYPE] = _KEYGEN_TYPES.get(keygen, "USER_PROVIDED")
    values[P.MERGE_MODE] = mode
    values.pop(P.MERGER_STRATEGY, None)
    if version == 8:
        values[MERGE_STRATEGY_ID] = _STRATEGY_IDS[mode]
    else:
        values.pop(MERGE_STRATEGY_ID, None)
        values.pop(P.PAYLOAD_CLASS, None)  # the built-in modes need none from version 9
        ordering = props.ordering_fields
        values.pop(P.PRECOMBINE_FIELD, None)
        if ordering:
            values[P.ORDERING_FIELDS] = ",".join(ordering)
        values[TABLE_FORMAT] = "native"
    return P.TableProperties(values)
