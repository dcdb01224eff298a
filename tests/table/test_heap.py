"""keep_freed_memory: a process that frees many large blocks at once reuses their pages."""

from __future__ import annotations

import os
import subprocess
import sys

# Rounds of forty 2 MiB blocks live at once, then all freed: the pages touched (minor
# page faults) in the last rounds, in a fresh process.
_ROUNDS = """
import resource, sys
from hudisql.table.io.heap import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory() and keep_freed_memory()
faults = []
for _ in range(6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [bytearray(b"x" * (2 << 20)) for _ in range(40)]
    del blocks
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(sum(faults[2:]))
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _ROUNDS, mode], check=True,
                         capture_output=True, text=True, env={**os.environ}).stdout
    return int(out.strip())


def test_freed_blocks_are_reused_not_faulted_in_again() -> None:
    default, kept = _faults("default"), _faults("keep")
    # By default each round maps (or grows the heap by) 80 MiB of fresh pages again:
    # four rounds are about 80k faults. Kept, the first rounds' pages are reused.
    assert default > 40_000
    assert kept < default // 20
