"""How a process that builds many large arrays keeps the memory it frees, to reuse it.

glibc's ``malloc`` hands large blocks back to the operating system: a block above the
mmap threshold is its own mapping, unmapped when freed, and free memory at the top of the
heap beyond the trim threshold is given back. The thresholds adapt (to the largest block
freed so far, and twice that), but a Spark task that writes file groups holds many
arrays of megabytes at once and then frees them all, over and over: the heap is trimmed
after each, and the next file group's arrays start on fresh pages, each one a page fault
on its first touch. In the record-index build that was about 120k page faults per ten
file groups of 500k keys, a quarter of the tasks' CPU time.

:func:`keep_freed_memory` fixes both thresholds (:data:`MMAP_THRESHOLD`,
:data:`TRIM_THRESHOLD`): blocks below 16 MiB come from the heap, and up to 256 MiB of
freed heap is kept for the next arrays. The cost is a process that keeps up to that much
memory it no longer uses. Apache Arrow's own allocations (mimalloc) are not affected.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory"]

#: Blocks smaller than this come from the heap (and are reused), not from their own mapping.
MMAP_THRESHOLD = 16 << 20
#: Free memory at the top of the heap is given back only beyond this.
TRIM_THRESHOLD = 256 << 20

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_kept = False


def keep_freed_memory() -> bool:
    """Make this process keep and reuse the memory it frees (see the module docstring):
    True when it does (now or from an earlier call); False where the C library is not
    glibc, where nothing changes. Call it at the start of a task that builds large
    arrays; it lasts for the life of the process (a reused Python worker keeps it)."""
    global _kept
    if _kept:
        return True
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return False
        libc = ctypes.CDLL(None)  # the C library this process already has loaded
        _kept = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                     and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1)
    except (AttributeError, OSError, ValueError):  # no confstr name, no mallopt
        return False
    return _kept
