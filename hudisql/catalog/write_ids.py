"""``ValidWriteIdList``: a table's transaction state, in Hive's string form, and its comparison.

A list ``[hwm: invalid ids]`` says: every write id from 1 to ``hwm`` is committed except the
invalid ones (open or aborted). Two lists are *equivalent* when exactly the same write ids are
committed in both (``[11:7,8]`` and ``[12:7,8,12]``: write id 12 is open, so nothing committed
between them); otherwise one is newer (it has commits the other lacks). The string form is
Hive's ``<db.table>:<hwm>:<minOpenWriteId>:<open ids>:<aborted ids>``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from hudisql.errors import CatalogError

#: Hive writes Long.MAX_VALUE as the minimum open write id when none is open.
NO_OPEN_WRITE_ID = 9223372036854775807


class Comparison(enum.Enum):
    """How one ValidWriteIdList relates to another: by the sets of committed write ids."""

    OLDER = -1
    EQUIVALENT = 0
    NEWER = 1
    #: Each has a commit the other lacks; real snapshots of one table never are.
    INCOMPARABLE = 2


@dataclass(frozen=True)
class ValidWriteIdList:
    """The committed write ids of one table: 1..``high_watermark`` minus open and aborted ids."""

    table: str
    high_watermark: int
    open_ids: tuple[int, ...] = ()
    aborted_ids: tuple[int, ...] = ()
    _invalid: frozenset[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.high_watermark < 0:
            raise CatalogError(
                f"ValidWriteIdList of {self.table!r}: high watermark {self.high_watermark} "
                "is negative; write ids start at 1"
            )
        open_ids = tuple(sorted(set(self.open_ids)))
        aborted_ids = tuple(sorted(set(self.aborted_ids)))
        both = set(open_ids) & set(aborted_ids)
        if both:
            raise CatalogError(
                f"ValidWriteIdList of {self.table!r}: write ids {sorted(both)} are both open "
                "and aborted"
            )
        beyond = [w for w in open_ids + aborted_ids if w < 1 or w > self.high_watermark]
        if beyond:
            raise CatalogError(
                f"ValidWriteIdList of {self.table!r}: write ids {sorted(beyond)} lie outside "
                f"1..{self.high_watermark} (the high watermark)"
            )
        object.__setattr__(self, "open_ids", open_ids)
        object.__setattr__(self, "aborted_ids", aborted_ids)
        object.__setattr__(self, "_invalid", frozenset(open_ids + aborted_ids))

    @property
    def invalid_ids(self) -> tuple[int, ...]:
        """Open and aborted write ids together, sorted (Hive's ``[hwm: exceptions]``)."""
        return tuple(sorted(self._invalid))

    @property
    def min_open_write_id(self) -> int | None:
        """The smallest open write id, or None when none is open."""
        return self.open_ids[0] if self.open_ids else None

    def is_committed(self, write_id: int) -> bool:
        """True when ``write_id`` is committed in this list."""
        return 1 <= write_id <= self.high_watermark and write_id not in self._invalid

    def last_committed(self) -> int:
        """The highest committed write id, or 0 when none is."""
        w = self.high_watermark
        while w > 0 and w in self._invalid:
            w -= 1
        return w

    def with_open(self, write_id: int) -> ValidWriteIdList:
        """This list after ``write_id`` (above the high watermark) was allocated and is open."""
        if write_id <= self.high_watermark:
            return self
        return ValidWriteIdList(self.table, write_id, (*self.open_ids, write_id), self.aborted_ids)

    def with_committed(self, write_id: int) -> ValidWriteIdList:
        """This list after ``write_id`` committed (a reader of its own writes uses this)."""
        hwm = max(self.high_watermark, write_id)
        missing = range(self.high_watermark + 1, write_id)
        open_ids = tuple(w for w in self.open_ids if w != write_id) + tuple(missing)
        aborted = tuple(w for w in self.aborted_ids if w != write_id)
        return ValidWriteIdList(self.table, hwm, open_ids, aborted)

    def with_aborted(self, write_id: int) -> ValidWriteIdList:
        """This list after ``write_id`` was aborted."""
        hwm = max(self.high_watermark, write_id)
        missing = range(self.high_watermark + 1, write_id)
        open_ids = tuple(w for w in self.open_ids if w != write_id) + tuple(missing)
        return ValidWriteIdList(self.table, hwm, open_ids, (*self.aborted_ids, write_id))

    def renamed(self, table: str) -> ValidWriteIdList:
        """The same state under another table name (renames keep the write ids)."""
        return ValidWriteIdList(table, self.high_watermark, self.open_ids, self.aborted_ids)

    def compare(self, other: ValidWriteIdList) -> Comparison:
        """How this list relates to ``other`` (Hive's ``TxnIdUtils.compare``, by committed sets).

        Returns:
            EQUIVALENT when the same write ids are committed in both, NEWER when this list
            has every commit of ``other`` and more, OLDER for the reverse, else INCOMPARABLE.
        """
        low, high = sorted((self, other), key=lambda v: v.high_watermark)
        # Ids above the lower watermark are committed only in `high`, unless invalid there.
        span = high.high_watermark - low.high_watermark
        high_extra = span - sum(1 for w in high._invalid if w > low.high_watermark)
        # Ids up to the lower watermark: committed in one, invalid in the other.
        low_only = sum(
            1 for w in high._invalid if w <= low.high_watermark and w not in low._invalid
        )
        high_only = high_extra + sum(1 for w in low._invalid if w not in high._invalid)
        if low_only == 0 and high_only == 0:
            return Comparison.EQUIVALENT
        if low_only and high_only:
            return Comparison.INCOMPARABLE
        low_is_self = low is self
        self_newer = (low_only > 0) == low_is_self
        return Comparison.NEWER if self_newer else Comparison.OLDER

    def is_equivalent(self, other: ValidWriteIdList) -> bool:
        """True when no write id committed between this list and ``other``."""
        return self.compare(other) is Comparison.EQUIVALENT

    def to_string(self) -> str:
        """Hive's form: ``<db.table>:<hwm>:<minOpenWriteId>:<open ids>:<aborted ids>``."""
        min_open = self.min_open_write_id
        return ":".join(
            (
                self.table,
                str(self.high_watermark),
                str(NO_OPEN_WRITE_ID if min_open is None else min_open),
                ",".join(map(str, self.open_ids)),
                ",".join(map(str, self.aborted_ids)),
            )
        )

    __str__ = to_string

    @classmethod
    def parse(cls, text: str) -> ValidWriteIdList:
        """Read Hive's string form; the table name may itself contain ``:`` or ``.``.

        Raises:
            CatalogError: the text is not in that form (the message names the bad field).
        """
        parts = text.rsplit(":", 4)
        if len(parts) != 5:
            raise CatalogError(
                f"malformed ValidWriteIdList {text!r}: expected "
                "'<db.table>:<hwm>:<minOpenWriteId>:<open ids>:<aborted ids>'"
            )
        table, hwm, min_open, opened, aborted = parts
        hwm_value = _parse_int(text, "high watermark", hwm)
        min_open_value = _parse_int(text, "minOpenWriteId", min_open)
        open_ids = _parse_ids(text, "open ids", opened)
        aborted_ids = _parse_ids(text, "aborted ids", aborted)
        expected = min(open_ids) if open_ids else NO_OPEN_WRITE_ID
        if min_open_value != expected:
            raise CatalogError(
                f"malformed ValidWriteIdList {text!r}: minOpenWriteId is {min_open_value} "
                f"but the open ids say {expected}"
            )
        return cls(table, hwm_value, tuple(open_ids), tuple(aborted_ids))

    @classmethod
    def of(
        cls,
        table: str,
        high_watermark: int,
        invalid: Iterable[int] = (),
        aborted: Iterable[int] = (),
    ) -> ValidWriteIdList:
        """Hive's ``[hwm: invalid ids]`` shorthand: ``invalid`` open, ``aborted`` aborted."""
        aborted_ids = tuple(aborted)
        return cls(
            table, high_watermark, tuple(w for w in invalid if w not in aborted_ids), aborted_ids
        )


def _parse_int(text: str, what: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise CatalogError(
            f"malformed ValidWriteIdList {text!r}: the {what} {value!r} is not an integer"
        ) from None


def _parse_ids(text: str, what: str, value: str) -> list[int]:
    if not value:
        return []
    return [_parse_int(text, what, v) for v in value.split(",")]
