"""Hudi's bloom filters (``SIMPLE`` and ``DYNAMIC_V0``), bit for bit as Hudi serializes them.

Hudi ports Hadoop's bloom filter: a bit vector of ``ceil(n * -ln(p) / ln(2)^2)`` bits and
``ceil(ln(2) * bits / n)`` hash functions, each the previous one's Hadoop MurmurHash
(MurmurHash2 with Hadoop's tail order) of the key's UTF-8 bytes, ``abs(h % bits)``.
``DYNAMIC_V0`` (``HoodieDynamicBoundedBloomFilter``) holds rows of such filters: a new row
after every ``n`` keys until ``rows * n`` reaches the bound, then keys go round-robin over
the rows. Serialized as Java's ``DataOutput`` (version -1, hash count, hash type, vector
size, the bits little-end first per byte; dynamic: ``n``, keys in the current row, rows,
then each row) and Base64; the metadata record stores the UTF-8 bytes of that text.

The hashes run in numpy over all keys of one length at once.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterable, Sequence

import numpy as np

from hudisql.errors import MetadataTableError

__all__ = [
    "DEFAULT_FPP",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_NUM_ENTRIES",
    "BloomFilter",
    "murmur_hash",
]

SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"
#: Hudi's defaults (hoodie.index.bloom.num_entries, hoodie.index.bloom.fpp,
#: hoodie.bloom.index.filter.dynamic.max.entries).
DEFAULT_NUM_ENTRIES = 60_000
DEFAULT_FPP = 0.000000001
DEFAULT_MAX_ENTRIES = 100_000
_MURMUR = 1  # Hash.MURMUR_HASH
_VERSION = -1
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def _int32(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def murmur_hash(data: bytes, seed: int) -> int:
    """Hadoop's (and Hudi's) 32-bit MurmurHash of ``data`` with ``seed``, as a signed int."""
    length = len(data)
    h = (seed ^ length) & _MASK
    body = length >> 2
    for i in range(body):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    left = length - (body << 2)
    if left:
        # Hadoop's tail: the first remaining byte goes highest; bytes are signed (Java).
        tail = [b - 256 if b > 127 else b for b in data[length - left:]]
        if left >= 3:
            h ^= (tail[-3] << 16) & _MASK
        if left >= 2:
            h ^= (tail[-2] << 8) & _MASK
        h ^= tail[-1] & _MASK
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return _int32(h)


def _murmur_same_length(keys: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """Murmur hashes (uint32) of equal-length keys (a uint8 matrix), one seed per key."""
    n, length = keys.shape
    m = np.uint32(_M)
    h: np.ndarray = seeds.astype(np.uint32) ^ np.uint32(length)
    body = length >> 2
    if body:
        words = keys[:, :body * 4].reshape(n, body, 4).astype(np.uint32)
        ks = (words[:, :, 0] | (words[:, :, 1] << np.uint32(8))
              | (words[:, :, 2] << np.uint32(16)) | (words[:, :, 3] << np.uint32(24)))
        for i in range(body):
            k = ks[:, i] * m
            k ^= k >> np.uint32(24)
            k *= m
            h = (h * m) ^ k
    left = length - (body << 2)
    if left:
        tail = keys[:, length - left:].astype(np.int8).astype(np.int32)
        if left >= 3:
            h ^= (tail[:, -3] << 16).astype(np.uint32)
        if left >= 2:
            h ^= (tail[:, -2] << 8).astype(np.uint32)
        h ^= tail[:, -1].astype(np.uint32)
        h = h * m
    h ^= h >> np.uint32(13)
    h = h * m
    h ^= h >> np.uint32(15)
    return h


def _positions(keys: Sequence[bytes], num_hashes: int, vector_size: int) -> np.ndarray:
    """Each key's ``num_hashes`` bit positions (an int64 matrix, keys in order)."""
    out = np.zeros((len(keys), num_hashes), dtype=np.int64)
    by_length: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        if not key:
            raise MetadataTableError("a bloom filter key must not be empty")
        by_length.setdefault(len(key), []).append(i)
    for length, rows in by_length.items():
        matrix = np.frombuffer(b"".join(keys[i] for i in rows), dtype=np.uint8).reshape(
            len(rows), length)
        seed = np.zeros(len(rows), dtype=np.uint32)
        for j in range(num_hashes):
            seed = _murmur_same_length(matrix, seed)
            signed = seed.astype(np.int32).astype(np.int64)
            # Java: Math.abs(h % size), % truncating toward zero.
            out[rows, j] = np.abs(np.fmod(signed, vector_size))
    return out


class BloomFilter:
    """A Hudi bloom filter of one data file (``SIMPLE`` or ``DYNAMIC_V0``)."""

    def __init__(
        self,
        filter_type: str = DYNAMIC_V0,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        if filter_type not in (SIMPLE, DYNAMIC_V0):
            raise MetadataTableError(
                f"bloom filter type {filter_type!r} is not SIMPLE or DYNAMIC_V0")
        if num_entries <= 0 or not 0 < fpp < 1:
            raise MetadataTableError(
                f"a bloom filter needs entries > 0 and 0 < fpp < 1, not {num_entries}, {fpp}")
        self.filter_type = filter_type
        self.vector_size = math.ceil(num_entries * (-math.log(fpp) / (math.log(2) ** 2)))
        self.num_hashes = math.ceil(math.log(2) * self.vector_size / num_entries)
        self.row_entries = num_entries
        self.max_entries = max_entries
        self.rows: list[np.ndarray] = [np.zeros(self.vector_size, dtype=bool)]
        self.in_row = 0  # keys recorded in the current row (Hadoop's currentNbRecord)
        self._reached_max = False
        self._next_row = 0

    def _row_for_next_key(self) -> np.ndarray:
        if self.filter_type == SIMPLE:
            return self.rows[0]
        if self._reached_max:
            row = self.rows[self._next_row % len(self.rows)]
            self._next_row += 1
            return row
        if self.in_row >= self.row_entries:
            if len(self.rows) * self.row_entries < self.max_entries:
                self.rows.append(np.zeros(self.vector_size, dtype=bool))
                self.in_row = 0
            else:
                self._reached_max = True
                return self.rows[0]
        return self.rows[-1]

    def add(self, keys: Iterable[str]) -> BloomFilter:
        """Add record keys, in order (the order decides a dynamic filter's rows)."""
        encoded = [k.encode("utf-8") for k in keys]
        if not encoded:
            return self
        positions = _positions(encoded, self.num_hashes, self.vector_size)
        if self.filter_type == SIMPLE:
            self.rows[0][positions.ravel()] = True
            return self
        for bits in positions:
            self._row_for_next_key()[bits] = True
            self.in_row += 1
        return self

    def might_contain(self, key: str) -> bool:
        """False when ``key`` was certainly not added."""
        return bool(self.might_contain_many([key])[0])

    def might_contain_many(self, keys: Sequence[str]) -> np.ndarray:
        """:meth:`might_contain` of many keys at once (a boolean array)."""
        found = np.zeros(len(keys), dtype=bool)
        if not keys:
            return found
        positions = _positions([k.encode("utf-8") for k in keys], self.num_hashes,
                               self.vector_size)
        for row in self.rows:
            found |= row[positions].all(axis=1)
        return found

    def _row_bytes(self, row: np.ndarray) -> bytes:
        header = struct.pack(">iibi", _VERSION, self.num_hashes, _MURMUR, self.vector_size)
        return header + np.packbits(row, bitorder="little").tobytes()

    def serialize(self) -> str:
        """Hudi's ``serializeToString()``: Base64 of the Java DataOutput form."""
        if self.filter_type == SIMPLE:
            raw = self._row_bytes(self.rows[0])
        else:
            header = struct.pack(">iibi", _VERSION, self.num_hashes, _MURMUR, self.vector_size)
            raw = header + struct.pack(">iii", self.row_entries, self.in_row, len(self.rows))
            raw += b"".join(self._row_bytes(row) for row in self.rows)
        return base64.b64encode(raw).decode("ascii")

    def to_bytes(self) -> bytes:
        """What a ``HoodieMetadataBloomFilter`` stores: the UTF-8 bytes of :meth:`serialize`."""
        return self.serialize().encode("ascii")

    @classmethod
    def deserialize(cls, text: str | bytes, filter_type: str = DYNAMIC_V0) -> BloomFilter:
        """A filter from Hudi's serialized text (or the bytes a metadata record stores).

        Raises:
            MetadataTableError: the text is not a Hudi bloom filter of that type.
        """
        try:
            raw = base64.b64decode(text)
            version, hashes, hash_type, size = struct.unpack_from(">iibi", raw, 0)
            if version != _VERSION or hash_type != _MURMUR:
                raise ValueError(f"version {version}, hash type {hash_type}")
            made = cls.__new__(cls)
            made.filter_type, made.vector_size, made.num_hashes = filter_type, size, hashes
            made._reached_max, made._next_row = False, 0
            nbytes = (size + 7) // 8
            pos = 13
            count = 1
            made.row_entries, made.in_row, made.max_entries = 0, 0, 0
            if filter_type == DYNAMIC_V0:
                made.row_entries, made.in_row, count = struct.unpack_from(">iii", raw, pos)
                made.max_entries = made.row_entries * count
                pos += 12
            made.rows = []
            for _ in range(count):
                if filter_type == DYNAMIC_V0:
                    pos += 13  # each row repeats the filter header
                bits = np.unpackbits(np.frombuffer(raw, np.uint8, nbytes, pos), bitorder="little")
                made.rows.append(bits[:size].astype(bool))
                pos += nbytes
            if pos != len(raw):
                raise ValueError(f"{len(raw) - pos} bytes left over")
            return made
        except (ValueError, struct.error) as exc:
            raise MetadataTableError(f"not a Hudi {filter_type} bloom filter: {exc}") from None
