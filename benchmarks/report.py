"""What every benchmark shares: timing the contenders alike, and printing a table of figures.

Benchmarks run as scripts (``python benchmarks/bench_<name>.py``), so this sibling module
is importable as ``report``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Best time (seconds) of each function, rounds interleaved so drift hits all alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def print_table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """Print ``rows`` under ``header`` as aligned columns (first left, others right)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(title)
    for row in [header, *rows]:
        print("  ".join(c.rjust(w) if i else c.ljust(w)
                        for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    print()
