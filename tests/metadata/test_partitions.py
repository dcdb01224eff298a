"""Metadata partitions: names, file group ids, Java String.hashCode routing, group counts."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudisql.errors import MetadataTableError
from hudisql.metadata.partitions import (
    MetadataPartitionType,
    estimate_file_group_count,
    file_group_id,
    file_group_index,
    file_group_indexes,
    java_string_hash,
    partition_spec,
)

# Values of java.lang.String#hashCode (well known; "polygenelubricants" hashes to MIN_VALUE).
JAVA_HASHES = [
    ("", 0), ("a", 97), ("hello", 99162322), ("Aa", 2112), ("BB", 2112),
    ("polygenelubricants", -2147483648), ("Hello World", -862545276),
    ("\u00e9", 233), ("\U0001f600", 1772899),  # 0xD83D * 31 + 0xDE00: an emoji is two UTF-16 units
]


@pytest.mark.parametrize(("text", "expected"), JAVA_HASHES)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_min_value_hash_routes_like_java() -> None:
    # Java: Math.abs(Math.abs(MIN_VALUE) % 10) == Math.abs(-8) == 8.
    assert file_group_index("polygenelubricants", 10) == 8
    assert file_group_index("polygenelubricants", 7) == 2147483648 % 7


def test_negative_hash_uses_absolute_value() -> None:
    assert java_string_hash("Hello World") < 0
    assert file_group_index("Hello World", 10) == 862545276 % 10


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=30), st.integers(min_value=1, max_value=50))
def test_vectorised_routing_equals_scalar(keys: list[str], count: int) -> None:
    got = file_group_indexes(pa.array(keys, pa.string()), count).tolist()
    assert got == [file_group_index(k, count) for k in keys]


def test_vectorised_routing_of_long_ascii_keys_and_chunks() -> None:
    keys = [f"key-{i}" * (i % 7 + 1) for i in range(2000)]
    chunked = pa.chunked_array([keys[:700], keys[700:]], pa.string())
    assert file_group_indexes(chunked, 13).tolist() == [file_group_index(k, 13) for k in keys]
    sliced = pa.array(keys, pa.string()).slice(100, 50)
    assert file_group_indexes(sliced, 3).tolist() == [file_group_index(k, 3) for k in keys[100:150]]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["", "a", "key-1", "key-22", "k\u00e9y", "\U0001f600x"]),
                max_size=40),
       st.integers(min_value=0, max_value=5), st.booleans())
def test_routing_of_runs_of_one_length_large_strings_and_sliced_chunks(
        keys: list[str], cut: int, large: bool) -> None:
    """Keys of one length in runs (a dense matrix) or scattered (gathered), int32 or int64
    offsets, a chunked array whose chunks are slices: the same groups as one by one."""
    kind = pa.large_string() if large else pa.string()
    whole = pa.array(["pad", *keys, "pad"], kind).slice(1, len(keys))
    cut = min(cut, len(keys))
    chunked = pa.chunked_array([whole.slice(0, cut), whole.slice(cut)], kind)
    expected = [file_group_index(k, 11) for k in keys]
    assert file_group_indexes(whole, 11).tolist() == expected
    assert file_group_indexes(chunked, 11).tolist() == expected


def test_file_group_ids_as_hudi_names_them() -> None:
    assert file_group_id(partition_spec("files"), 0) == "files-0000-0"
    assert file_group_id(partition_spec("column_stats"), 1) == "col-stats-0001-0"
    assert file_group_id(partition_spec("record_index"), 3) == "record-index-0003-0"
    assert file_group_id(partition_spec("bloom_filters"), 2) == "bloom-filters-0002-0"
    assert file_group_id(partition_spec("partition_stats"), 0) == "partition-stats-0000-0"
    assert (file_group_id(partition_spec("secondary_index_idx_rider"), 0)
            == "secondary-index-idx-rider-0000-0")
    assert file_group_id(partition_spec("expr_index_ts"), 5) == "expr-index-ts-0005-0"


def test_partition_types_and_record_types() -> None:
    assert partition_spec("files").kind is MetadataPartitionType.FILES
    assert partition_spec("secondary_index_x").kind is MetadataPartitionType.SECONDARY_INDEX
    codes = {k.partition_path: k.record_type for k in MetadataPartitionType}
    assert codes["files"] == 2 and codes["column_stats"] == 3 and codes["record_index"] == 5
    assert codes["bloom_filters"] == 4 and codes["partition_stats"] == 6
    assert codes["secondary_index_"] == 7


@pytest.mark.parametrize("name", ["", "secondary_index_", "colstats", "files2", "expr_index_"])
def test_unknown_partition_names_are_refused(name: str) -> None:
    with pytest.raises(MetadataTableError, match="not a metadata table partition"):
        partition_spec(name)


def test_file_group_count_estimate() -> None:
    assert estimate_file_group_count(0) == 10
    assert estimate_file_group_count(1_000_000) == 10  # 2M records fit one 1 GiB group
    # 1 GiB / 48 B = 22369621 records per group; 500M * 2 = 1e9 -> 44 groups.
    assert estimate_file_group_count(500_000_000) == 44
    assert estimate_file_group_count(10**12) == 10_000


def test_routing_refuses_zero_groups() -> None:
    with pytest.raises(MetadataTableError):
        file_group_index("k", 0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.text()), st.text(min_size=1)), min_size=1,
                max_size=20), st.integers(min_value=1, max_value=9))
def test_secondary_keys_route_by_their_value(
    pairs: list[tuple[str | None, str]], count: int
) -> None:
    from hudisql.metadata.keys import secondary_index_key, secondary_key_prefix

    spec = partition_spec("secondary_index_idx")
    keys = [secondary_index_key(v, k) for v, k in pairs]
    assert spec.route(keys, count).tolist() == [
        file_group_index(secondary_key_prefix(v), count) for v, _ in pairs]
    # Other partitions route by the whole key.
    assert partition_spec("record_index").route(keys, count).tolist() == [
        file_group_index(k, count) for k in keys]
