"""Property tests: random records, headers, delete lists and damage through the log format."""

from __future__ import annotations

import datetime as dt
import io
import itertools
import json
import struct
from decimal import Context, Decimal
from typing import Any

import fastavro
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudisql.errors import CorruptLogBlockError
from hudisql.table.format.log import (
    BlockType,
    DeleteRecord,
    HeaderKey,
    decode_data_block,
    decode_delete_block,
    encode_avro_data_block,
    encode_delete_block,
    encode_rollback_block,
    scan_blocks,
)
from hudisql.table.format.log.format import ORDERING_TYPES, encode_block
from hudisql.table.format.schema import arrow_to_avro, arrow_to_records, avro_to_arrow

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
INSTANT = "20250101000000001"
WIDE = Context(prec=100)  # exact scaling of up to 38-digit decimals


# --------------------------------------------------------------------------- random tables


@st.composite
def decimal_types(draw: st.DrawFn) -> pa.DataType:
    precision = draw(st.integers(1, 38))
    return pa.decimal128(precision, draw(st.integers(0, precision)))


LEAF_TYPES = st.one_of(
    st.sampled_from([
        pa.int32(), pa.int64(), pa.float64(), pa.float32(), pa.string(), pa.binary(),
        pa.bool_(), pa.date32(), pa.timestamp("us", tz="UTC"), pa.timestamp("ms", tz="UTC"),
        pa.timestamp("us"), pa.time64("us"),
    ]),
    decimal_types(),
)


def _names(n: int, prefix: str) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


ARROW_TYPES = st.recursive(
    LEAF_TYPES,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(
            lambda ts: pa.struct(list(zip(_names(len(ts), "f"), ts, strict=True)))),
        inner.map(pa.list_),
        inner.map(lambda t: pa.map_(pa.string(), t)),
    ),
    max_leaves=6,
)


def values_of(t: pa.DataType) -> st.SearchStrategy[Any]:
    """Python values (or None) of Arrow type ``t``."""
    return st.none() | _non_null(t)


def _non_null(t: pa.DataType) -> st.SearchStrategy[Any]:
    if pa.types.is_int32(t):
        return st.integers(-(2**31), 2**31 - 1)
    if pa.types.is_int64(t):
        return st.integers(-(2**63), 2**63 - 1)
    if pa.types.is_float32(t):
        return st.floats(width=32, allow_nan=False)
    if pa.types.is_float64(t):
        return st.floats(allow_nan=False)
    if pa.types.is_string(t):
        return st.text(max_size=12)  # any code point but surrogates: non-ASCII included
    if pa.types.is_binary(t):
        return st.binary(max_size=12)
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_date32(t):
        return st.dates()
    if pa.types.is_timestamp(t):
        tz = st.just(dt.UTC) if t.tz else st.none()
        stamps = st.datetimes(min_value=dt.datetime(1, 1, 2), timezones=tz)
        if t.unit == "ms":
            stamps = stamps.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
        return stamps
    if pa.types.is_time64(t):
        return st.times()
    if pa.types.is_decimal(t):
        bound = 10**t.precision - 1
        return st.integers(-bound, bound).map(lambda u: Decimal(u).scaleb(-t.scale, WIDE))
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: values_of(f.type) for f in t})
    if pa.types.is_map(t):
        return st.lists(st.tuples(st.text(max_size=5), values_of(t.item_type)),
                        max_size=3, unique_by=lambda kv: kv[0])
    if pa.types.is_list(t):
        return st.lists(values_of(t.value_type), max_size=3)
    raise AssertionError(t)


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    types = draw(st.lists(ARROW_TYPES, min_size=1, max_size=5))
    schema = pa.schema(list(zip(_names(len(types), "c"), types, strict=True)))
    rows = draw(st.lists(st.fixed_dictionaries({f.name: values_of(f.type) for f in schema}),
                         max_size=12))
    return pa.Table.from_pylist(rows, schema=schema)


@SETTINGS
@given(table=tables())
def test_random_records_round_trip_through_a_data_block(table: pa.Table) -> None:
    avro = json.dumps(arrow_to_avro(table.schema, "t"))
    block = encode_avro_data_block(table, avro, {HeaderKey.INSTANT_TIME: INSTANT,
                                                 HeaderKey.BLOCK_IDENTIFIER: "0,3"})
    [info] = scan_blocks(block)
    assert info.block_type == BlockType.AVRO_DATA and info.length == len(block)
    assert (info.instant_time, info.schema, info.block_identifier) == (INSTANT, avro, (0, 3))
    decoded = decode_data_block(block, info)
    expected = table.cast(avro_to_arrow(avro))
    assert decoded.schema == expected.schema
    assert decoded.equals(expected)
    # Every record is the bytes fastavro writes for it, and reads back to the same row.
    parsed = fastavro.parse_schema(json.loads(avro))
    content = block[info.content_position:info.content_position + info.content_length]
    pos = 8
    for record in arrow_to_records(expected):
        (length,) = struct.unpack_from(">i", content, pos)
        raw = content[pos + 4:pos + 4 + length]
        pos += 4 + length
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        assert raw == buf.getvalue()
    assert pos == len(content)


@SETTINGS
@given(table=tables(), data=st.data())
def test_damaged_content_decodes_or_raises_corrupt_never_anything_else(
    table: pa.Table, data: st.DataObject
) -> None:
    avro = json.dumps(arrow_to_avro(table.schema, "t"))
    block = bytearray(encode_avro_data_block(table, avro, {HeaderKey.INSTANT_TIME: INSTANT}))
    [info] = scan_blocks(bytes(block))
    # Any byte after the version (another version is a format question, tested on its own).
    spot = data.draw(st.integers(info.content_position + 4,
                                 info.content_position + info.content_length - 1))
    block[spot] = data.draw(st.integers(0, 255))
    try:
        decoded = decode_data_block(bytes(block), info)
    except CorruptLogBlockError:
        return
    assert decoded.schema == avro_to_arrow(avro)
    decoded.validate(full=True)


# --------------------------------------------------------------------------- headers


HEADER_VALUES = st.text(max_size=40)


@SETTINGS
@given(
    header=st.dictionaries(st.sampled_from(list(HeaderKey)), HEADER_VALUES, max_size=9),
    footer=st.dictionaries(st.integers(0, 5), HEADER_VALUES, max_size=3),
    content=st.binary(max_size=64),
    block_type=st.sampled_from([t for t in BlockType if t != BlockType.CORRUPT]),
)
def test_random_header_maps_round_trip(
    header: dict[HeaderKey, str], footer: dict[int, str], content: bytes, block_type: BlockType
) -> None:
    block = encode_block(block_type, header, content, footer)
    [info] = scan_blocks(block + block, "f")[:1]
    assert info.block_type == block_type
    assert list(info.header.items()) == list(header.items())  # order kept too
    assert info.footer == footer
    assert block[info.content_position:info.content_position + info.content_length] == content
    assert info.length == len(block)


# --------------------------------------------------------------------------- delete lists


def _ordering(name: str) -> st.SearchStrategy[Any]:
    values: dict[str, st.SearchStrategy[Any]] = {
        "null": st.none(), "boolean": st.booleans(), "int": st.integers(-(2**31), 2**31 - 1),
        "long": st.integers(-(2**63), 2**63 - 1), "float": st.just(1.5) | st.just(-0.25),
        "double": st.floats(allow_nan=False), "bytes": st.binary(max_size=8),
        "string": st.text(max_size=8),
        "decimal": st.integers(-(10**30) + 1, 10**30 - 1).map(
            lambda u: Decimal(u).scaleb(-15, WIDE)),
        "date": st.dates(),
        "time-micros": st.times(),
        "timestamp-micros": st.datetimes(min_value=dt.datetime(1, 1, 2),
                                         timezones=st.just(dt.UTC)),
    }
    return values[name]


@st.composite
def delete_records(draw: st.DrawFn) -> DeleteRecord:
    name = draw(st.sampled_from(ORDERING_TYPES))
    explicit = draw(st.booleans())
    return DeleteRecord(draw(st.none() | st.text(max_size=20)),
                        draw(st.none() | st.text(max_size=20)),
                        draw(_ordering(name)), name if explicit else None)


@SETTINGS
@given(records=st.lists(delete_records(), max_size=20))
def test_random_delete_lists_round_trip(records: list[DeleteRecord]) -> None:
    block = encode_delete_block(records, {HeaderKey.INSTANT_TIME: INSTANT})
    [info] = scan_blocks(block)
    decoded = decode_delete_block(block, info)
    assert decoded == records
    for given_rec, got in zip(records, decoded, strict=True):
        if given_rec.ordering_type is not None:
            assert got.ordering_type == given_rec.ordering_type
        # Re-encoding what was decoded gives the same bytes (the branch is kept).
    assert encode_delete_block(decoded, {HeaderKey.INSTANT_TIME: INSTANT}) == block


# --------------------------------------------------------------------------- damage


@SETTINGS
@given(
    keys=st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=6), min_size=3, max_size=6),
    data=st.data(),
)
def test_one_damaged_block_never_hides_the_others(keys: list[str], data: st.DataObject) -> None:
    schema = arrow_to_avro(pa.schema([("k", pa.string())]), "t")
    blocks = []
    for i, key in enumerate(keys):
        if i % 3 == 2:
            blocks.append(encode_rollback_block(f"2025010100000{i:04d}", INSTANT))
        else:
            blocks.append(encode_avro_data_block(
                pa.table({"k": [key]}), schema, {HeaderKey.INSTANT_TIME: f"2025010100000{i:04d}"}))
    victim = data.draw(st.integers(0, len(blocks) - 1))
    damage = data.draw(st.sampled_from(["truncate", "garbage", "trailing", "cut_header"]))
    damaged = blocks[victim]
    if damage == "truncate":
        damaged = damaged[: data.draw(st.integers(23, len(damaged) - 1))]
    elif damage == "garbage":
        damaged = damaged + data.draw(st.binary(min_size=1, max_size=20).filter(
            lambda b: not b.startswith(b"#")))
    elif damage == "trailing":
        damaged = damaged[:-8] + struct.pack(">q", len(damaged) + data.draw(st.integers(1, 99)))
    else:
        damaged = damaged[: data.draw(st.integers(7, 22))]
    pieces = [*blocks[:victim], damaged, *blocks[victim + 1:]]
    file = b"".join(pieces)
    infos = scan_blocks(file)
    # The entries tile the file exactly.
    assert infos[0].position == 0 and infos[-1].end == len(file)
    assert all(a.end == b.position for a, b in itertools.pairwise(infos))
    corrupt = [i for i in infos if i.is_corrupt]
    assert corrupt and all(i.corrupt_reason for i in corrupt)
    # Every undamaged block is found, where it is, with its instant.
    start = 0
    intact = []
    for i, piece in enumerate(pieces):
        if i != victim:
            intact.append((start, len(piece)))
        start += len(piece)
    found = {(i.position, i.length) for i in infos if not i.is_corrupt}
    assert set(intact) <= found
    for info in infos:
        if info.is_data:
            assert decode_data_block(file, info).num_rows == 1
