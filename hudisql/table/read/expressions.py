"""Expression blocks: log records that carry an update's inputs, applied when the log is merged.

``MERGE INTO t USING s ON <key> WHEN MATCHED THEN UPDATE SET c = t.c + s.c`` (and
``UPDATE t SET c = c + 1 WHERE <key predicate>``) on a merge-on-read table do not read the
stored value at write time, as Hudi's expression payload does not: the writer appends a
data block whose records carry the record key and the expression's operand, and the reader
computes the new value while it merges the log. Applying such a block twice adds twice,
which is why duplicate blocks of retried tasks must never be merged (see ``reconcile.py``).

**Marking.** An expression block is an ordinary Avro data block whose ``SCHEMA`` header
has the custom property :data:`EXPRESSIONS_PROPERTY` (``"hudisql.expressions"``) on its
record schema: a JSON object ``{"<column>": "<op>", ...}``. The ops are ``add`` (the new
value is the current value plus the record's value of that column; numbers only) and
``set`` (the record's value). Every data column the object does not name keeps its current
value; the meta columns ``_hoodie_commit_time``, ``_hoodie_commit_seqno`` and
``_hoodie_file_name`` come from the block's record (the instant that changed the row).

**Applying.** The blocks of a file slice are merged in log order; an expression block is
applied to the merged state at its position: only keys that have a current record there
change. A key with no current record (never written, or deleted) is left absent: like
Hudi's ``WHEN MATCHED``, an expression updates existing rows only, it never inserts. The
updated row keeps its ordering (precombine) value unless the expression sets it, so it
competes with later records exactly as the row it replaced would. Records of one key in
one block apply one after another. SQL's null rule holds (``null + x`` is null); an
integer sum that overflows its type is an error, never a silently wrapped value.

**Other readers.** Readers that do not know the property (Apache Hudi, the hudi-rs reader)
would take the records as whole rows: the operand as the value and nulls in the columns
that were meant to be kept. So an expression block also carries hudisql's header key
``HUDISQL_EXPRESSIONS`` (1001), which no Hudi reader knows: hudi-rs refuses the table
("Invalid metadata key") instead of returning wrong rows, until a compaction folds the
expressions into a base file. Log compaction keeps them as expression blocks (consecutive
ones of one kind concatenated, their records in order), never merged into plain rows.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudisql.errors import CorruptTableError, HudiSqlError, WriteError
from hudisql.table.format.log.format import BlockType, LogBlockInfo
from hudisql.table.format.schema import META_COLUMNS

__all__ = [
    "EXPRESSIONS_PROPERTY",
    "ExpressionOp",
    "apply_expressions",
    "block_expressions",
    "mark_expressions",
    "merge_in_log_order",
    "schema_expressions",
]

#: The custom property of an expression block's Avro record schema.
EXPRESSIONS_PROPERTY = "hudisql.expressions"

_COMMIT_TIME, _SEQNO, _RECORD_KEY, _PARTITION_PATH, _FILE_NAME = META_COLUMNS
#: Meta columns an expression record stamps on the row it changes.
_STAMPED = (_COMMIT_TIME, _SEQNO, _FILE_NAME)

B = TypeVar("B")


class ExpressionOp(StrEnum):
    """How an expression record changes one column: ``add`` its value, or ``set`` it."""

    ADD = "add"
    SET = "set"


def _avro_branch(node: Any) -> Any:
    """The non-null branch of a ``["null", T]`` union (or the type itself)."""
    if isinstance(node, list):
        rest = [t for t in node if t != "null"]
        return rest[0] if len(rest) == 1 else node
    return node


def _is_numeric(avro_type: Any) -> bool:
    branch = _avro_branch(avro_type)
    if isinstance(branch, dict):
        if branch.get("logicalType") == "decimal":
            return True
        branch = branch.get("type")
    return branch in ("int", "long", "float", "double")


def mark_expressions(
    avro: Mapping[str, Any], ops: Mapping[str, str], where: str
) -> dict[str, Any]:
    """A copy of the record schema ``avro`` marked as an expression block's with ``ops``.

    Args:
        ops: column -> ``add`` or ``set``; at least one.
        where: names the file group / table in errors.

    Returns:
        The schema with :data:`EXPRESSIONS_PROPERTY` set.

    Raises:
        WriteError: no ops, an unknown op, a column the schema lacks, a meta column, or
            ``add`` on a column that is not a number.
    """
    if not ops:
        raise WriteError(f"{where}: an expression write needs at least one column expression")
    fields = {f["name"]: f for f in avro.get("fields", [])}
    clean: dict[str, str] = {}
    for column, raw in ops.items():
        try:
            op = ExpressionOp(str(raw).lower())
        except ValueError:
            raise WriteError(
                f"{where}: unknown expression {raw!r} for column {column!r}; use 'add' or 'set'"
            ) from None
        if column in META_COLUMNS or column not in fields:
            raise WriteError(
                f"{where}: column {column!r} is not a data column of the table; its columns "
                f"are {[n for n in fields if n not in META_COLUMNS]}"
            )
        if op == ExpressionOp.ADD and not _is_numeric(fields[column]["type"]):
            raise WriteError(
                f"{where}: column {column!r} is not a number, so 'add' cannot apply to it"
            )
        clean[column] = op.value
    marked = copy.deepcopy(dict(avro))
    marked[EXPRESSIONS_PROPERTY] = clean
    return marked


def schema_expressions(schema_text: str | None, where: str = "") -> dict[str, str] | None:
    """The column ops of an Avro schema text marked by :func:`mark_expressions`, else None.

    Raises:
        CorruptTableError: the property is there but is not a map of known ops.
    """
    if not schema_text or EXPRESSIONS_PROPERTY not in schema_text:
        return None  # cheap test first: most blocks are plain data
    try:
        node = json.loads(schema_text)
    except ValueError as exc:
        raise CorruptTableError(f"{where}: the block's SCHEMA header is not JSON: {exc}") from exc
    raw = node.get(EXPRESSIONS_PROPERTY) if isinstance(node, dict) else None
    if raw is None:
        return None
    valid = {op.value for op in ExpressionOp}
    if (not isinstance(raw, dict) or not raw
            or not all(isinstance(v, str) and v in valid for v in raw.values())):
        raise CorruptTableError(
            f"{where}: property {EXPRESSIONS_PROPERTY} is {raw!r}, not a map of columns to "
            "'add' or 'set'; the block was not written by hudisql's expression writer"
        )
    return {str(k): str(v) for k, v in raw.items()}


def block_expressions(block: LogBlockInfo) -> dict[str, str] | None:
    """The column ops of an expression data block (from its header), else None.

    Raises:
        CorruptTableError: a malformed expressions property (names the log file and byte).
    """
    if block.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
        return None
    where = f"log block at byte {block.position} of {block.log_file}"
    return schema_expressions(block.schema, where)


def apply_expressions(
    state: pa.Table, records: pa.Table, ops: Mapping[str, str], key: str = _RECORD_KEY
) -> pa.Table:
    """``state`` (one row per key) with the expression ``records`` applied to the keys it holds.

    ``records`` has ``state``'s schema (the operands in the ops' columns). Keys that
    ``state`` lacks are ignored (expressions update existing rows only).

    Returns:
        The new state: unchanged rows, then the changed ones.

    Raises:
        HudiSqlError: an ``add`` overflows the column's type (names the column).
    """
    if records.num_rows == 0 or state.num_rows == 0:
        return state
    state_keys = state.column(key).cast(pa.string())
    record_keys = pc.fill_null(records.column(key).cast(pa.string()), "")
    # Records of one key apply one after another: round r takes each key's r-th record.
    codes = np.asarray(pc.dictionary_encode(record_keys).combine_chunks().indices,
                       dtype=np.int64)
    occurrence = np.zeros(len(codes), dtype=np.int64)
    seen: dict[int, int] = {}
    for i, code in enumerate(codes.tolist()):
        occurrence[i] = seen.get(code, 0)
        seen[code] = occurrence[i] + 1
    for round_no in range(int(occurrence.max()) + 1 if len(occurrence) else 0):
        batch = records.filter(pa.array(occurrence == round_no))
        state = _apply_once(state, state_keys, batch, ops, key)
        state_keys = state.column(key).cast(pa.string())
    return state


def _apply_once(
    state: pa.Table, state_keys: pa.ChunkedArray, records: pa.Table, ops: Mapping[str, str],
    key: str,
) -> pa.Table:
    """Apply records with distinct keys."""
    where = pc.index_in(records.column(key).cast(pa.string()), value_set=state_keys)
    present = pc.is_valid(where)
    records = records.filter(present)
    if records.num_rows == 0:
        return state
    rows = pc.drop_null(where).combine_chunks()
    current = state.take(rows)
    columns = []
    for field in state.schema:
        name = field.name
        op = ops.get(name)
        if name in _STAMPED or op == ExpressionOp.SET:
            columns.append(records.column(name).cast(field.type))
        elif op == ExpressionOp.ADD:
            try:
                total = pc.add_checked(current.column(name), records.column(name))
                columns.append(total.cast(field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise HudiSqlError(
                    f"column {name!r}: adding an expression's value to the stored value "
                    f"failed ({exc}); the sum does not fit the column's type {field.type}"
                ) from exc
        else:
            columns.append(current.column(name))
    changed = pa.Table.from_arrays(columns, schema=state.schema)
    keep = np.ones(state.num_rows, dtype=bool)
    keep[np.asarray(rows, dtype=np.int64)] = False
    return pa.concat_tables([state.filter(pa.array(keep)), changed])


def merge_in_log_order(
    merge: Callable[[pa.Table, list[B]], pa.Table],
    base: pa.Table,
    blocks: Sequence[B],
    expressions: Mapping[int, Mapping[str, str]],
    apply: Callable[[pa.Table, B, Mapping[str, str]], pa.Table],
) -> pa.Table:
    """The merged rows of ``base`` and ``blocks`` (log order) where some are expression blocks.

    The plain blocks between two expression blocks are merged at once by ``merge``; each
    expression block (``expressions``: its index in ``blocks`` -> its ops) is then applied
    to that state by ``apply``.

    Returns:
        One row per live key.
    """
    state = base
    pending: list[B] = []
    for index, block in enumerate(blocks):
        ops = expressions.get(index)
        if ops is None:
            pending.append(block)
            continue
        if pending:
            state = merge(state, pending)
            pending = []
        state = apply(state, block, ops)
    return merge(state, pending) if pending else state
