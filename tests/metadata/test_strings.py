"""key_order sorts string keys exactly as Arrow's stable sort does, whatever they share."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from hudisql.metadata.strings import key_order


def _same_as_arrow(keys: pa.Array) -> None:
    assert key_order(keys).to_pylist() == pc.sort_indices(keys).to_pylist()


# Bytes around the word boundaries and the padding: NUL, 0x01, 0xff-led UTF-8, '$'.
_ALPHABET = st.sampled_from(["\0", "\x01", "a", "b", "$", "é", "\uffff", "z"])


@settings(max_examples=60, deadline=None)
@given(prefix=st.text(_ALPHABET, max_size=12),
       tails=st.lists(st.text(_ALPHABET, max_size=11), min_size=1, max_size=40),
       seed=st.integers(min_value=0, max_value=2**16))
def test_key_order_is_arrows_stable_sort(prefix: str, tails: list[str], seed: int) -> None:
    # Past the word sort's minimum: distinct keys (a number after a tail), and a third
    # made of the tails alone: ties, duplicates (whose input order must be kept), keys
    # that are prefixes of others, keys that end inside the word and past it.
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(tails), size=6000)
    numbers = rng.permutation(6000)
    keys = pa.array([prefix + tails[int(p)] + ("" if k % 3 == 0 else str(int(k)))
                     for k, p in zip(numbers, picks, strict=True)])
    _same_as_arrow(keys)


def test_key_order_on_uuids_sequential_keys_and_a_slice() -> None:
    uuids = pa.array([str(uuid.UUID(int=int(x))) for x in
                      np.random.default_rng(7).integers(0, 2**63, 20_000)])
    _same_as_arrow(uuids)
    sequential = pa.array([f"key-{i}" for i in range(30_000)])
    _same_as_arrow(sequential)
    _same_as_arrow(sequential.slice(5_000, 20_000))  # offsets that do not start at zero
    _same_as_arrow(pa.chunked_array([sequential.slice(0, 9_000), uuids]).combine_chunks())
    _same_as_arrow(sequential.cast(pa.large_string()))


def test_key_order_mostly_tied_and_small_inputs_fall_back_to_arrow() -> None:
    # Keys that agree in their first sixteen bytes after the shared prefix differ later.
    tied = pa.array([f"2026-11-24 10:00:00.000|{i % 977}|{i}" for i in range(10_000)])
    _same_as_arrow(tied)
    _same_as_arrow(pa.array(["b", "a", "", "a"]))
    _same_as_arrow(pa.array([], pa.string()))
    _same_as_arrow(pa.array(["x"] * 5000))  # all equal: input order kept
