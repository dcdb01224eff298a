"""hoodie.properties: java-properties syntax both ways, checksum, typed values, bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import hudi
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hudisql.errors import (
    CorruptTableError,
    TableNotFoundError,
    UnsupportedTableVersionError,
    WriteError,
)
from hudisql.table.format.properties import (
    CHECKSUM,
    PROPERTIES_FILE,
    TableProperties,
    format_properties,
    new_table_properties,
    parse_properties,
    table_checksum,
)
from hudisql.table.io.storage import Storage
from tests.fixtures import TABLE_ZIPS, table_path

WritableTable = Callable[[str], Path]


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below ``root`` with its bytes and modification time (to prove no change)."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# -- the fixtures' properties ------------------------------------------------------------------

# name: (version, layout, timeline dir, type, record keys, partition fields, precombine, hive)
EXPECTED = {
    "v6_trips_8i1u": (6, 1, ".hoodie", "MERGE_ON_READ", ["uuid"], ["city"], "ts", True),
    "v6_trips_8i3d": (6, 1, ".hoodie", "MERGE_ON_READ", ["uuid"], ["city"], "ts", True),
    "v8_trips_8i1u": (8, 2, ".hoodie/timeline", "MERGE_ON_READ", ["uuid"], ["city"], "ts", True),
    "v6_nonpartitioned_rollback": (6, 1, ".hoodie", "MERGE_ON_READ", ["id"], [], "longField",
                                   True),
    "v6_simplekeygen_nonhivestyle": (6, 1, ".hoodie", "MERGE_ON_READ", ["id"], ["byteField"],
                                     "longField", False),
    "v6_nonpartitioned": (6, 1, ".hoodie", "COPY_ON_WRITE", ["id"], [], "longField", True),
    "v8_nonpartitioned": (8, 2, ".hoodie/timeline", "COPY_ON_WRITE", ["id"], [], "longField",
                          True),
}


def test_every_fixture_table_is_listed() -> None:
    assert set(EXPECTED) == set(TABLE_ZIPS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_properties_load_with_typed_values(name: str) -> None:
    root = table_path(name)
    before = snapshot(root)
    props = TableProperties.load(Storage(str(root)))
    version, layout, tdir, ttype, keys, parts, precombine, hive = EXPECTED[name]
    assert props.table_name == name
    assert props.database_name == "default"
    assert props.version == version
    assert props.timeline_layout == layout
    assert props.timeline_dir == tdir
    assert props.archive_dir == (".hoodie/archived" if version == 6 else ".hoodie/timeline/history")
    assert props.table_type == ttype
    assert props.is_mor == (ttype == "MERGE_ON_READ")
    assert props.record_key_fields == keys
    assert props.partition_fields == parts
    assert props.precombine_field == precombine
    assert props.hive_style_partitioning is hive
    assert props.metadata_partitions == []
    assert props.metadata_partitions_inflight == []
    # The create schema arrives unescaped ("\:" in the file) and is valid JSON.
    schema = json.loads(props.create_schema or "")
    assert schema["name"] == f"{name}_record"
    assert int(props[CHECKSUM]) == table_checksum("default", name)
    assert snapshot(root) == before  # loading changed nothing


def test_checksum_is_crc32_of_database_dot_table() -> None:
    assert table_checksum("default", "v6_trips_8i1u") == 3843273058
    assert table_checksum(None, "t") == table_checksum("", "t")  # Hudi: "" when no database


# -- java-properties syntax --------------------------------------------------------------------

PARSE_CASES = [
    ("a=b", {"a": "b"}),
    ("a:b", {"a": "b"}),
    ("a b", {"a": "b"}),
    ("  a  =  b  ", {"a": "b  "}),  # leading blanks go, trailing blanks of values stay
    ("a\t:\tb", {"a": "b"}),
    ("a", {"a": ""}),
    ("a=", {"a": ""}),
    ("=b", {"": "b"}),
    ("a==b", {"a": "=b"}),  # only one separator is consumed
    ("a\\=b=c", {"a=b": "c"}),
    ("a\\:b:c", {"a:b": "c"}),
    ("a\\ b=c", {"a b": "c"}),
    ("a=\\ b", {"a": " b"}),
    ("a=x\\\\", {"a": "x\\"}),  # an even number of backslashes does not continue the line
    ("a=\\t\\n\\r\\f\\q", {"a": "\t\n\r\fq"}),
    ("a=\\u00e9\\u00C9", {"a": "éÉ"}),
    ("a=\\uD83D\\uDE00", {"a": "\U0001f600"}),  # UTF-16 surrogate pair
    ("# comment\n! other\n\n   \na=b", {"a": "b"}),
    ("  # indented comment\na=b", {"a": "b"}),
    ("#comment \\\na=b", {"a": "b"}),  # a comment line never continues
    ("a=one \\\n    two \\\n\tthree", {"a": "one two three"}),
    ("a=one\\\n#not a comment", {"a": "one#not a comment"}),
    ("a=x\\\n\nb=y", {"a": "x", "b": "y"}),  # an empty line ends the continuation
    ("a=1\r\nb=2\rc=3\n", {"a": "1", "b": "2", "c": "3"}),
    ("a=1\nb=2\na=3", {"a": "3", "b": "2"}),  # a later key wins
    ("a=x\\", {"a": "x"}),  # a continuation at the end of the text is dropped
]


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES)
def test_parse_properties(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


@pytest.mark.parametrize("text", ["a=\\u12", "a=\\u12G4", "a\\uzzzz=b"])
def test_parse_properties_rejects_malformed_unicode_escapes(text: str) -> None:
    with pytest.raises(ValueError, match="uxxxx"):
        parse_properties(text)


def test_format_properties_escapes_like_java() -> None:
    text = format_properties(
        {"a b:c=d": "x:y=z\\w #!", "k": " lead", "u": "é\U0001f600\t"}, comment="hé\nsecond"
    )
    assert text == (
        "#h\\u00E9\n"
        "#second\n"
        "a\\ b\\:c\\=d=x\\:y\\=z\\\\w \\#\\!\n"
        "k=\\ lead\n"
        "u=\\u00E9\\uD83D\\uDE00\\t\n"
    )
    assert text.isascii()


def test_format_then_parse_of_a_fixture_file_gives_the_same_mapping() -> None:
    raw = (table_path("v6_nonpartitioned") / PROPERTIES_FILE).read_text()
    mapping = parse_properties(raw)
    assert parse_properties(format_properties(mapping)) == mapping
    # Java and we escape the same characters: the schema line is byte-identical.
    schema_line = next(line for line in raw.splitlines() if line.startswith("hoodie.table.create"))
    assert schema_line in format_properties(mapping).splitlines()


@given(st.dictionaries(st.text(), st.text()), st.none() | st.text())
def test_format_parse_round_trip(mapping: dict[str, str], comment: str | None) -> None:
    text = format_properties(mapping, comment)
    assert text.isascii()
    assert parse_properties(text) == mapping
    assert format_properties(parse_properties(text)) == format_properties(mapping)


@given(st.dictionaries(st.text(st.characters(codec="ascii")), st.text(), max_size=5))
def test_parse_never_loses_a_key_of_a_formatted_mapping(mapping: dict[str, str]) -> None:
    # Shuffling lines must not matter: each line stands alone.
    lines = format_properties(mapping).splitlines()
    assert parse_properties("\n".join(reversed(lines))) == mapping


# -- save and updated --------------------------------------------------------------------------


def test_save_replaces_atomically_with_checksum_last(writable_table: WritableTable) -> None:
    root = writable_table("v6_trips_8i1u")
    storage = Storage(str(root))
    props = TableProperties.load(storage)
    changed = props.updated(**{"hoodie.table.metadata.partitions": "files,column_stats"})
    changed.save(storage)
    text = (root / PROPERTIES_FILE).read_text()
    assert text.isascii()
    assert text.splitlines()[-1] == f"{CHECKSUM}=3843273058"
    assert text.startswith("#Properties saved on ")
    assert [p.name for p in (root / ".hoodie").iterdir() if p.name.endswith(".tmp")] == []
    reloaded = TableProperties.load(storage)
    assert reloaded == changed
    assert reloaded.metadata_partitions == ["files", "column_stats"]
    # Apache Hudi's other reader still opens the table and reads all of it.
    assert sum(b.num_rows for b in hudi.HudiTable(str(root)).read()) > 0


def test_save_recomputes_a_stale_checksum(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    props = TableProperties({"hoodie.table.name": "t", "hoodie.database.name": "db",
                             "hoodie.table.version": "6", CHECKSUM: "1"})
    props.save(storage, comment="test")
    loaded = TableProperties.load(storage)
    assert loaded[CHECKSUM] == str(table_checksum("db", "t"))
    assert list(loaded)[-1] == CHECKSUM


def test_save_refuses_properties_without_a_name(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match=r"hoodie\.table\.name"):
        TableProperties({"hoodie.table.version": "6"}).save(Storage(str(tmp_path)))
    assert list(tmp_path.iterdir()) == []


def test_updated_is_an_immutable_copy() -> None:
    props = new_table_properties("t", "MERGE_ON_READ", ["id"])
    renamed = props.updated(**{"hoodie.table.name": "u", "hoodie.table.precombine.field": "ts"})
    assert props.table_name == "t" and props.precombine_field is None
    assert renamed.table_name == "u" and renamed.precombine_field == "ts"
    assert renamed[CHECKSUM] == str(table_checksum("default", "u"))
    dropped = renamed.updated(**{"hoodie.table.precombine.field": None})
    assert "hoodie.table.precombine.field" not in dropped


def test_partition_fields_drop_custom_key_generator_types() -> None:
    props = TableProperties({"hoodie.table.partition.fields": "city:SIMPLE, ts:TIMESTAMP"})
    assert props.partition_fields == ["city", "ts"]


def test_ordering_fields_of_version_9_give_the_precombine_field() -> None:
    props = TableProperties({"hoodie.table.version": "9", "hoodie.table.ordering.fields": "a,b"})
    assert props.ordering_fields == ["a", "b"]
    assert props.precombine_field == "a"
    assert props.timeline_layout == 2


# -- new tables ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "table_type", "keys", "parts", "precombine"),
    [
        ("v6_trips_8i1u", "MERGE_ON_READ", ["uuid"], ["city"], "ts"),
        ("v6_nonpartitioned_rollback", "MERGE_ON_READ", ["id"], [], "longField"),
    ],
)
def test_new_table_properties_match_what_hudi_writes(
    fixture: str, table_type: str, keys: list[str], parts: list[str], precombine: str
) -> None:
    hudis = TableProperties.load(Storage(str(table_path(fixture))))
    # Hudi's Spark SQL wrote these with OverwriteWithLatestAvroPayload (commit-time merge);
    # hudisql picks DefaultHoodieRecordPayload when there is a precombine field, so say it.
    payload = {"hoodie.compaction.payload.class": hudis["hoodie.compaction.payload.class"]}
    ours = new_table_properties(
        fixture, table_type, keys, parts, precombine, create_schema=hudis.create_schema,
        extra=payload,
    )
    assert dict(ours) == dict(hudis)
    default = new_table_properties(fixture, table_type, keys, parts, precombine)
    assert default.merge_mode == "EVENT_TIME_ORDERING"
    assert list(ours)[-1] == CHECKSUM


def test_new_table_properties_choose_the_key_generator() -> None:
    gen = "hoodie.table.keygenerator.class"
    assert new_table_properties("t", "COPY_ON_WRITE", ["a", "b"], ["p"])[gen].endswith(
        "ComplexKeyGenerator"
    )
    props = new_table_properties("t", "COPY_ON_WRITE", ["a"], hive_style=False,
                                 extra={"hoodie.x": True, "hoodie.y": 3})
    assert props[gen].endswith("NonpartitionedKeyGenerator")
    assert props.hive_style_partitioning is False
    assert (props["hoodie.x"], props["hoodie.y"]) == ("true", "3")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("t", "MOR", ["id"]), "table type 'MOR'"),
        (("", "MERGE_ON_READ", ["id"]), "name"),
    ],
)
def test_new_table_properties_refuse_bad_options(args: tuple, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(WriteError, match=message):
        new_table_properties(*args)


# -- bad input -----------------------------------------------------------------------------------


def test_a_missing_path_is_not_a_table(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(TableNotFoundError, match="does not exist") as e:
        TableProperties.load(Storage(str(missing)))
    assert str(missing) in str(e.value)
    assert not missing.exists()


def test_a_plain_folder_is_not_a_table(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a,b\n")
    before = snapshot(tmp_path)
    with pytest.raises(TableNotFoundError, match="not a Hudi table") as e:
        TableProperties.load(Storage(str(tmp_path)))
    assert str(tmp_path) in str(e.value)
    assert snapshot(tmp_path) == before


def test_a_missing_hoodie_properties_is_named(writable_table: WritableTable) -> None:
    root = writable_table("v6_trips_8i1u")
    (root / PROPERTIES_FILE).unlink()
    before = snapshot(root)
    with pytest.raises(TableNotFoundError, match=r"no \.hoodie/hoodie\.properties") as e:
        TableProperties.load(Storage(str(root)))
    assert str(root) in str(e.value)
    assert snapshot(root) == before


def _edit(root: Path, old: str, new: str) -> None:
    path = root / PROPERTIES_FILE
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("old", "new", "error", "message"),
    [
        ("hoodie.table.version=6", "hoodie.table.version=5", UnsupportedTableVersionError,
         "hoodie.table.version=5.*upgrade"),
        ("hoodie.table.version=6", "hoodie.table.version=10", UnsupportedTableVersionError,
         "hoodie.table.version=10.*newer"),
        ("hoodie.table.version=6\n", "", UnsupportedTableVersionError, "no hoodie.table.version"),
        ("hoodie.table.version=6", "hoodie.table.version=six", CorruptTableError, "'six'"),
        ("hoodie.table.type=MERGE_ON_READ", "hoodie.table.type=MOR", CorruptTableError, "'MOR'"),
        ("hoodie.table.name=v6_trips_8i1u\n", "", CorruptTableError, "no hoodie.table.name"),
        ("hoodie.table.checksum=3843273058", "hoodie.table.checksum=3843273059",
         CorruptTableError, "checksum=3843273059.*gives 3843273058"),
        ("hoodie.table.checksum=3843273058", "hoodie.table.checksum=abc", CorruptTableError,
         "'abc'"),
        ("hoodie.table.name=v6_trips_8i1u", "hoodie.table.name=renamed", CorruptTableError,
         "checksum"),
        ("hoodie.archivelog.folder=archived", "hoodie.archivelog.folder=\\u00zz",
         CorruptTableError, "uxxxx"),
    ],
)
def test_bad_properties_get_a_clear_error_and_change_nothing(
    writable_table: WritableTable, old: str, new: str, error: type[Exception], message: str
) -> None:
    root = writable_table("v6_trips_8i1u")
    _edit(root, old, new)
    before = snapshot(root)
    with pytest.raises(error, match=message) as e:
        TableProperties.load(Storage(str(root)))
    assert str(root) in str(e.value)
    assert snapshot(root) == before


def test_a_damaged_file_falls_back_to_hudis_backup(writable_table: WritableTable) -> None:
    root = writable_table("v6_trips_8i1u")
    good = (root / PROPERTIES_FILE).read_text()
    (root / ".hoodie/hoodie.properties.backup").write_text(good)
    _edit(root, "hoodie.table.checksum=3843273058", "hoodie.table.checksum=1")
    before = snapshot(root)
    props = TableProperties.load(Storage(str(root)))
    assert props == parse_properties(good)
    (root / PROPERTIES_FILE).unlink()  # mid-update by Hudi: only the backup is there
    assert TableProperties.load(Storage(str(root))) == parse_properties(good)
    before.pop(PROPERTIES_FILE)
    assert snapshot(root) == before


def test_a_damaged_file_and_damaged_backup_are_both_reported(
    writable_table: WritableTable,
) -> None:
    root = writable_table("v6_trips_8i1u")
    _edit(root, "hoodie.table.checksum=3843273058", "hoodie.table.checksum=1")
    (root / ".hoodie/hoodie.properties.backup").write_text("hoodie.table.version=6\n")
    with pytest.raises(CorruptTableError, match="both damaged"):
        TableProperties.load(Storage(str(root)))


def test_binary_garbage_is_malformed(writable_table: WritableTable) -> None:
    root = writable_table("v6_trips_8i1u")
    (root / PROPERTIES_FILE).write_bytes(bytes(range(256)) * 4)
    with pytest.raises(CorruptTableError, match="malformed"):
        TableProperties.load(Storage(str(root)))


def test_new_table_properties_of_a_keyless_table() -> None:
    """No record key fields: a keyless table (Hudi 0.14+), without recordkey.fields."""
    props = new_table_properties("t", "MERGE_ON_READ", [], ["city"])
    assert "hoodie.table.recordkey.fields" not in props
    assert props.keyless and props.record_key_fields == []
    assert props.keygenerator_class == "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert not new_table_properties("t", "MERGE_ON_READ", ["id"]).keyless
