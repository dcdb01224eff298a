"""Where log-compacted blocks are merged: in the slot of the newest block they replace.

A log compaction (RFC-48) writes blocks whose ``COMPACTED_BLOCK_TIMES`` header names the
instants they replace; they are appended to the log after those blocks, and possibly after
blocks a concurrent writer appended while the log compaction ran (the seed's scenario 1).
Hudi's optimized scan (``AbstractHoodieLogRecordReader.scanInternalV2``) merges a compacted
instant in the position of the newest instant it replaced, transitively through nested log
compactions, so an uncovered block appended before it still wins over it. This module
computes that order from the verdicts alone (no content is read).

The position of an instant is the log position of its first block; a compacted instant
takes the greatest position of the instants it names that are present in the slice (each
itself possibly compacted), or its own when none is. Replaced blocks are never merged (their
verdict is ``replaced``); blocks of a pending or failed log compaction are not visible and
replace nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from hudisql.table.format.log.format import BlockType, LogBlockInfo
from hudisql.table.read.reconcile import BlockVerdict, Verdict

__all__ = ["instant_slots", "merge_order"]

_COUNTED = (Verdict.VALID, Verdict.REPLACED)


def instant_slots(verdicts: Sequence[BlockVerdict]) -> dict[str, int]:
    """The merge position of every instant with a valid or replaced data or delete block.

    Returns:
        instant -> position (an index into ``verdicts``): the first block's for a plain
        instant, the newest replaced instant's for a compacted one.
    """
    first: dict[str, int] = {}
    names: dict[str, list[str]] = {}
    for index, verdict in enumerate(verdicts):
        block = verdict.block
        if verdict.verdict not in _COUNTED or block.block_type == BlockType.COMMAND:
            continue
        instant = block.instant_time
        if not instant or instant in first:
            continue
        first[instant] = index
        # As in Hudi, the instant's first block says what it compacted.
        if block.compacted_block_times:
            names[instant] = block.compacted_block_times
    slots: dict[str, int] = {}

    def slot(instant: str, seen: frozenset[str]) -> int:
        known = slots.get(instant)
        if known is not None:
            return known
        own = first[instant]
        replaced = [
            slot(t, seen | {instant}) for t in names.get(instant, ())
            if t in first and t not in seen and t != instant
        ]
        slots[instant] = max(replaced) if replaced else own
        return slots[instant]

    for instant in first:
        slot(instant, frozenset())
    return slots


def merge_order(verdicts: Sequence[BlockVerdict]) -> list[LogBlockInfo]:
    """The valid data and delete blocks in the order a reader merges them.

    Log order, except that a compacted block stands in the slot of the newest block it
    replaced (see the module docstring); blocks of one instant keep their log order.
    """
    slots = instant_slots(verdicts)
    chosen = [
        (slots.get(str(v.block.instant_time), index), index, v.block)
        for index, v in enumerate(verdicts)
        if v.verdict == Verdict.VALID and v.block.block_type != BlockType.COMMAND
    ]
    chosen.sort(key=lambda item: (item[0], item[1]))
    return [block for _, _, block in chosen]
