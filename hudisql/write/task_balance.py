"""Which write task writes which file group: balanced by estimated work, not by hash.

The writer's last stage (:mod:`hudisql.write.pipeline`) repartitions the tagged records so
that each file group's records meet in one task. Hashing the file id spreads the groups
over the tasks at random, and their work is anything but even: a small file that takes
inserts is read and rewritten whole, while a group taking a few updates gets a small log
file. On the 5M-row upsert of ``benchmarks/bench_write_read.py`` (eight rewrites, eight
log files, four tasks on two cores) one core ran for 2.05 s while the other idled after
1.54 s. So the driver estimates each group's work and deals the groups out heaviest first,
each to the task with the least work so far (the LPT rule), and the records are
repartitioned by their group's task.

Spark places a row of ``repartition(n, key)`` in partition ``pmod(murmur3(key, 42), n)``.
:func:`task_keys` finds, for each task, an integer key that Spark's hash sends there (the
hash is Spark's ``Murmur3_x86_32.hashInt``, written out below); the records carry their
group's key as the repartition expression. Were Spark's hash ever to differ, every group
would still be written whole by one task: only the balance depends on the hash.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Mapping
from typing import TypeVar

from pyspark.sql import Column
from pyspark.sql import functions as F

__all__ = ["balanced_tasks", "spark_partition_of", "task_column", "task_keys"]

K = TypeVar("K", bound=Hashable)

_MASK = 0xFFFFFFFF
#: The seed of Spark's ``HashPartitioning`` (``Murmur3Hash``'s default).
_SEED = 42


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def _murmur3_int(value: int, seed: int = _SEED) -> int:
    """Murmur3 x86 32-bit of one 4-byte integer, as Spark's ``hashInt``: a signed int."""
    k1 = (value & _MASK) * 0xCC9E2D51 & _MASK
    k1 = _rotl(k1, 15) * 0x1B873593 & _MASK
    h1 = _rotl((seed & _MASK) ^ k1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & _MASK
    h1 ^= 4  # the input's length in bytes
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def spark_partition_of(key: int, partitions: int) -> int:
    """The partition Spark's ``repartition(partitions, key)`` puts an int ``key`` in."""
    return _murmur3_int(key) % partitions  # Python's % is Spark's pmod for a positive n


def task_keys(tasks: int) -> list[int]:
    """For each of ``tasks`` partitions, the smallest non-negative int key Spark sends there."""
    keys: dict[int, int] = {}
    key = 0
    while len(keys) < tasks:
        keys.setdefault(spark_partition_of(key, tasks), key)
        key += 1
    return [keys[t] for t in range(tasks)]


def balanced_tasks(work: Mapping[K, float], tasks: int) -> dict[K, int]:
    """Each file group of ``work`` (its estimated work) to one of ``tasks`` tasks: heaviest
    first, each to the least loaded task (ties: the lower task; groups of equal work keep
    ``work``'s order)."""
    loads = [(0.0, t) for t in range(tasks)]
    out: dict[K, int] = {}
    for group in sorted(work, key=lambda g: -work[g]):  # stable: ties keep their order
        load, task = heapq.heappop(loads)
        out[group] = task
        heapq.heappush(loads, (load + work[group], task))
    return out


def task_column(placement: Mapping[K, int], tasks: int, group: Column) -> Column:
    """The repartition key of each record: its file group's task's key (:func:`task_keys`).
    ``group``: the record's file group, as ``placement`` names them (a file id, a number).
    A group the placement lacks gets null: all such records share one task."""
    keys = task_keys(tasks)
    pairs = [v for g, task in placement.items() for v in (F.lit(g), F.lit(keys[task]))]
    if not pairs:
        return F.lit(None).cast("int")
    return F.create_map(*pairs)[group]
