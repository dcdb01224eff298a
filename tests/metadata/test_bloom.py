"""Hudi's bloom filters: Hadoop MurmurHash, sizes, dynamic rows and serialization."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudisql.errors import MetadataTableError
from hudisql.metadata.bloom import BloomFilter, _positions, murmur_hash


def hadoop_positions(key: bytes, hashes: int, size: int) -> list[int]:
    """Hadoop's HashFunction: each hash seeded with the previous one, abs(h % size)."""
    out, seed = [], 0
    for _ in range(hashes):
        seed = murmur_hash(key, seed)
        out.append(abs(int(math.fmod(seed, size))))
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=23), min_size=1, max_size=20))
def test_vectorised_hashing_equals_the_scalar_port(keys: list[bytes]) -> None:
    got = _positions(keys, 7, 9973)
    assert [list(row) for row in got] == [hadoop_positions(k, 7, 9973) for k in keys]


def test_murmur_reads_tail_bytes_as_signed_java_bytes() -> None:
    # With the top bit set, a tail byte sign-extends: the hash must differ from the
    # unsigned reading, and stay a signed 32-bit value.
    assert murmur_hash(b"\xff", 0) != murmur_hash(b"\x7f", 0)
    for data in (b"", b"a", b"ab", b"abc", b"abcd", b"abcde\xe9"):
        assert -(1 << 31) <= murmur_hash(data, 0) < 1 << 31


def test_sizes_and_header_match_hudis_serialized_filter() -> None:
    # Hudi's test resource simple_200_000001_murmur.bf.data starts "/////wAAABQBAAAWe":
    # version -1, 20 hashes, MurmurHash (1), 5752 bits for 200 entries at fpp 1e-6.
    bloom = BloomFilter("SIMPLE", 200, 0.000001)
    assert (bloom.vector_size, bloom.num_hashes) == (5752, 20)
    assert bloom.serialize().startswith("/////wAAABQBAAAWe")
    raw = base64.b64decode(bloom.serialize())
    assert len(raw) == 13 + (5752 + 7) // 8


def test_added_keys_are_found_and_others_mostly_not() -> None:
    keys = [f"uuid-{i:06d}" for i in range(2000)]
    bloom = BloomFilter("SIMPLE", 2000, 0.001).add(keys)
    assert bloom.might_contain_many(keys).all() and bloom.might_contain(keys[7])
    false_positives = int(bloom.might_contain_many([f"other-{i}" for i in range(5000)]).sum())
    assert false_positives < 50  # 0.1% expected


def test_dynamic_filter_adds_rows_up_to_its_bound() -> None:
    keys = [f"k{i}" for i in range(45)]
    bloom = BloomFilter("DYNAMIC_V0", 10, 0.01, 25).add(keys)
    # A new row after every 10 keys while rows * 10 < 25: three rows, then round-robin.
    assert len(bloom.rows) == 3 and bloom.in_row == 25
    assert all(bloom.might_contain(k) for k in keys)
    raw = base64.b64decode(bloom.serialize())
    assert raw[13:25] == (10).to_bytes(4, "big") + (25).to_bytes(4, "big") + (3).to_bytes(4, "big")


@pytest.mark.parametrize("kind", ["SIMPLE", "DYNAMIC_V0"])
def test_serialization_round_trips(kind: str) -> None:
    bloom = BloomFilter(kind, 50, 0.01, 120).add(f"key{i}" for i in range(130))
    back = BloomFilter.deserialize(bloom.to_bytes(), kind)
    assert back.serialize() == bloom.serialize()
    assert all(np.array_equal(a, b) for a, b in zip(back.rows, bloom.rows, strict=True))
    with pytest.raises(MetadataTableError):
        BloomFilter.deserialize(base64.b64encode(b"nonsense"), kind)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(MetadataTableError):
        BloomFilter("CUCKOO")
    with pytest.raises(MetadataTableError):
        BloomFilter("SIMPLE", 0)
