"""Layout optimization: the row order a clustering writes (Hudi's
``hoodie.layout.optimize.strategy``: ``linear``, ``z-order``, ``hilbert``).

A linear order sorts by the columns one after another, so column statistics prune well on
the first column only. Z-order and Hilbert map each row to one point on a space-filling
curve over all the columns, so rows close in *any* of them share files and statistics prune
on each column. Each column's values are first replaced by their rank (ties share a rank;
nulls last), scaled to ``bits`` bits, which makes strings, dates and skewed numbers
comparable (Hudi's "sample" curve build does the same with sampled ranges). The curves are
computed with numpy over the whole column, never row by row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import TableServiceError

__all__ = ["LAYOUT_STRATEGIES", "curve_keys", "cut_points", "layout_strategy", "ordered",
           "sort_indices"]

#: Hudi's names of the layout strategies, and the spellings hudisql accepts for them.
LAYOUT_STRATEGIES = {"linear": "linear", "z-order": "z-order", "zorder": "z-order",
                     "hilbert": "hilbert"}
#: Bits per column of a curve key (at most 63 bits in all).
_MAX_BITS = 20


def layout_strategy(raw: str | None) -> str:
    """Hudi's name of the layout strategy ``raw`` (default ``linear``).

    Raises:
        TableServiceError: an unknown strategy (names the accepted ones).
    """
    if raw is None or not str(raw).strip():
        return "linear"
    found = LAYOUT_STRATEGIES.get(str(raw).strip().lower())
    if found is None:
        raise TableServiceError(
            f"hoodie.layout.optimize.strategy={raw!r} is not a layout strategy; use "
            "'linear', 'z-order' or 'hilbert'")
    return found


def _scaled_ranks(column: pa.ChunkedArray | pa.Array, bits: int) -> np.ndarray:
    """Each value's rank (ties dense, nulls last) scaled to ``[0, 2**bits)``."""
    ranks = pc.rank(column, sort_keys="ascending", tiebreaker="dense")  # nulls rank last
    values = ranks.to_numpy().astype(np.float64) - 1.0
    top = max(float(values.max(initial=0.0)), 1.0)
    scaled: np.ndarray = np.floor(values / top * float((1 << bits) - 1)).astype(np.uint64)
    return scaled


def _interleave(coords: list[np.ndarray], bits: int) -> np.ndarray:
    """The Morton code of ``coords``: bit ``j`` of dimension ``d`` at ``j*n + (n-1-d)``."""
    n = len(coords)
    key = np.zeros(len(coords[0]), dtype=np.uint64)
    for j in range(bits):
        for d, coord in enumerate(coords):
            bit = (coord >> np.uint64(j)) & np.uint64(1)
            key |= bit << np.uint64(j * n + (n - 1 - d))
    return key


def _hilbert_transpose(coords: list[np.ndarray], bits: int) -> list[np.ndarray]:
    """Skilling's "axes to transpose" (AIP Conf. Proc. 707, 2004), vectorized: interleaving
    the result gives the Hilbert index of each point."""
    x = [c.copy() for c in coords]
    n = len(x)
    q = 1 << (bits - 1)
    while q > 1:
        p = np.uint64(q - 1)
        for i in range(n):
            high = (x[i] & np.uint64(q)) != 0
            x[0] = np.where(high, x[0] ^ p, x[0])
            swap = np.where(high, np.uint64(0), (x[0] ^ x[i]) & p)
            x[0] ^= swap
            x[i] ^= swap
        q >>= 1
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = 1 << (bits - 1)
    while q > 1:
        t = np.where((x[n - 1] & np.uint64(q)) != 0, t ^ np.uint64(q - 1), t)
        q >>= 1
    return [xi ^ t for xi in x]


def curve_keys(rows: pa.Table, columns: Sequence[str], strategy: str) -> np.ndarray:
    """Each row's position on the ``strategy`` curve (``z-order`` or ``hilbert``) over
    ``columns``: unsigned 64-bit keys whose order is the layout."""
    bits = max(1, min(_MAX_BITS, 63 // max(1, len(columns))))
    coords = [_scaled_ranks(rows.column(c), bits) for c in columns]
    if strategy == "hilbert" and len(coords) > 1:
        coords = _hilbert_transpose(coords, bits)
    return _interleave(coords, bits)


def sort_indices(rows: pa.Table, columns: Sequence[str], strategy: str) -> pa.Array:
    """The row order ``strategy`` gives ``rows`` over ``columns`` (stable; nulls last)."""
    if not columns or rows.num_rows == 0:
        return pa.array(np.arange(rows.num_rows, dtype=np.int64))
    if strategy == "linear":
        return pc.sort_indices(rows.select(list(columns)),
                               sort_keys=[(c, "ascending") for c in columns])  # nulls last
    keys = curve_keys(rows, columns, strategy)
    return pa.array(np.argsort(keys, kind="stable").astype(np.int64))


def ordered(rows: pa.Table, columns: Sequence[str], strategy: str) -> (
        tuple[pa.Table, np.ndarray | None]):
    """``rows`` in ``strategy``'s order over ``columns``, and for a curve their keys in that
    order (None for a linear order) to cut them into files with :func:`cut_points`."""
    if strategy == "linear" or not columns or rows.num_rows == 0:
        return rows.take(sort_indices(rows, columns, strategy)), None
    keys = curve_keys(rows, columns, strategy)
    order = np.argsort(keys, kind="stable")
    return rows.take(pa.array(order.astype(np.int64))), keys[order]


def cut_points(sorted_keys: np.ndarray, parts: int) -> list[int]:
    """Row indexes at which to cut rows sorted by curve key into ``parts`` files of about
    equal size, each moved (by at most a quarter of a file) to where the keys differ in
    the highest bit nearby: files then hold whole cells of the curve, whose bounding boxes
    (the column stats) stay small on every column."""
    n = len(sorted_keys)
    if parts <= 1 or n == 0:
        return []
    step = n / parts
    reach = max(1, int(step / 4))
    jumps = np.zeros(n, dtype=np.uint64)
    jumps[1:] = sorted_keys[1:] ^ sorted_keys[:-1]
    cuts = []
    for i in range(1, parts):
        ideal = round(i * step)
        lo, hi = max(1, ideal - reach), min(n - 1, ideal + reach)
        if lo > hi:
            continue
        window = jumps[lo:hi + 1]
        # The highest differing bit wins; among equals, the cut nearest the ideal one.
        top = np.floor(np.log2(window.astype(np.float64) + 1.0))
        best = np.flatnonzero(top == top.max())
        cuts.append(lo + int(best[np.argmin(np.abs(best + lo - ideal))]))
    return sorted(set(cuts))
