"""Keys of metadata records: Hudi's hash ids, Base64, secondary keys, record locations."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from hudisql.errors import MetadataTableError
from hudisql.metadata.keys import (
    XXHASH_SEED,
    RecordLocation,
    bloom_filter_key,
    column_index_id,
    column_stats_key,
    file_index_id,
    instant_epoch_millis,
    millis_instant_time,
    partition_index_id,
    partition_stats_key,
    secondary_index_key,
    secondary_key_prefix,
    split_secondary_index_key,
)

DATA = Path(__file__).parent / "data"


def b64_hex(text: str) -> str:
    return base64.b64decode(text).hex().upper()


def test_xxhash_matches_hudis_magic_number_file() -> None:
    # First line of hudi-common's test resource hash/magic_input.txt and its expected
    # XXHash64 from xxhash_BITS_64_for_magic_input.txt: only the sign-extended seed gives it.
    line = (DATA / "xxhash_magic_input_line1.txt").read_text().rstrip("\n")
    assert xxhash.xxh64(line.encode(), seed=XXHASH_SEED).hexdigest().upper() == "F0E17DF624BF7B6A"
    assert xxhash.xxh64(line.encode(), seed=0xDABADABA).hexdigest().upper() != "F0E17DF624BF7B6A"


def test_ids_are_base64_of_the_hashes() -> None:
    assert b64_hex(column_index_id("Col1")) == xxhash.xxh64(b"Col1", seed=XXHASH_SEED).hexdigest(
    ).upper()
    # MD5 values from Hudi's TestHashID (BITS_128).
    assert b64_hex(file_index_id("Hudi")) == "09DAB749F255311C1C9EF6DD7B790170"
    assert b64_hex(file_index_id("2021/10/28/")) == "1BAE8F04F44CB7ACF2458EF5219742DC"
    # java.util.Base64: standard alphabet with padding; 8 bytes -> 12 chars, 16 -> 24.
    assert len(column_index_id("c")) == 12 and column_index_id("c").endswith("=")
    assert len(file_index_id("f")) == 24 and file_index_id("f").endswith("==")


def test_keys_concatenate_ids_in_hudis_order() -> None:
    col, part, name = "fare", "city=sf", "abc-0_0-1-2_20240101000000000.parquet"
    assert column_stats_key(col, part, name) == (
        column_index_id(col) + partition_index_id(part) + file_index_id(name))
    assert bloom_filter_key(part, name) == partition_index_id(part) + file_index_id(name)
    assert partition_stats_key(col, part) == column_index_id(col) + partition_index_id(part)
    # A non-partitioned table's partition is named "."
    assert partition_index_id("") == partition_index_id(".")


@pytest.mark.parametrize(("value", "key", "expected"), [
    ("sf", "k1", "sf$k1"),
    ("a$b", "k", "a\\$b$k"),
    ("a\\b", "k$1", "a\\\\b$k\\$1"),
    ("nul\0", "k", "nul\\\0$k"),
    (None, "k", "\0$k"),
])
def test_secondary_index_keys(value: str | None, key: str, expected: str) -> None:
    assert secondary_index_key(value, key) == expected
    assert split_secondary_index_key(expected) == (value, key)
    assert expected.startswith(secondary_key_prefix(value))


@given(st.one_of(st.none(), st.text()), st.text(min_size=1))
def test_secondary_keys_round_trip(value: str | None, key: str) -> None:
    assert split_secondary_index_key(secondary_index_key(value, key)) == (value, key)


def test_malformed_secondary_key_is_refused() -> None:
    with pytest.raises(MetadataTableError, match="no unescaped"):
        split_secondary_index_key("a\\$b")


def test_record_location_of_a_uuid_file_id() -> None:
    loc = RecordLocation("city=sf", "00000000-0000-0001-8000-000000000002-12", "20240102030405678")
    info = loc.to_avro()
    assert info["fileIdEncoding"] == 0 and info["fileId"] is None
    assert info["fileIdHighBits"] == 1
    assert info["fileIdLowBits"] == -(1 << 63) + 2  # a Java long: the top bit makes it negative
    assert info["fileIndex"] == 12
    assert info["instantTime"] == 1704164645678
    assert RecordLocation.from_avro(info) == loc


def test_record_location_of_other_file_ids_is_raw() -> None:
    loc = RecordLocation("", "files-0000-0", "20240102030405678")
    info = loc.to_avro()
    assert info["fileIdEncoding"] == 1 and info["fileId"] == "files-0000-0"
    assert RecordLocation.from_avro(info) == loc


def test_instant_millis_round_trip() -> None:
    assert millis_instant_time(instant_epoch_millis("20241124090000123")) == "20241124090000123"
    with pytest.raises(MetadataTableError):
        instant_epoch_millis("yesterday")
