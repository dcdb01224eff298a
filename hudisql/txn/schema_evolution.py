"""Schema evolution users do: ALTER TABLE ... ADD COLUMNS, and writes that add columns.

:func:`alter_schema` (and :func:`add_columns` on top of it) commits a new table schema as
Hudi does for ``ALTER TABLE``: a commit without files (operation ``ALTER_SCHEMA``) whose
``extraMetadata.schema`` is the new schema, through the write
:class:`~hudisql.txn.transaction.Transaction`, so it takes the table lock and the RFC-82
check like any write. It refuses what would break the table's records: dropping or
retyping a record key, partition or precombine field, dropping any column, adding a
required column, or changing a type other than Avro's promotions (int -> long -> float ->
double, string <-> bytes).

:func:`evolve_on_write` gives the writer schema of a write whose records bring new
columns. Hudi adds nullable columns on write out of the box and has no switch for it;
hudisql writers refuse unknown columns (a typo would otherwise grow the table schema)
unless ``hoodie.schema.on.write.evolution.enable`` (hudisql's key) or Hudi's
``hoodie.datasource.write.reconcile.schema`` is true. Readers see the new columns as null
in older base files and log blocks (the merged read conforms every piece to the schema).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from hudisql.errors import WriteError
from hudisql.table.format.schema import META_COLUMNS, arrow_to_avro, avro_to_arrow
from hudisql.table.table import HudiTable
from hudisql.txn.transaction import StepHook, Transaction

#: hudisql's switch for writes whose records add nullable columns (default false).
EVOLUTION_ON_WRITE = "hoodie.schema.on.write.evolution.enable"
#: Hudi's schema reconciliation switch; when true it also lets writes add columns.
RECONCILE_SCHEMA = "hoodie.datasource.write.reconcile.schema"
#: The operation type Hudi records for ALTER TABLE commits.
ALTER_SCHEMA = "ALTER_SCHEMA"

# Avro's type promotions (reader schema may widen the writer's), as Arrow types.
_PROMOTIONS: dict[pa.DataType, tuple[pa.DataType, ...]] = {
    pa.int32(): (pa.int64(), pa.float32(), pa.float64()),
    pa.int64(): (pa.float32(), pa.float64()),
    pa.float32(): (pa.float64(),),
    pa.string(): (pa.binary(),),
    pa.binary(): (pa.string(),),
}


def _table_avro(table: HudiTable) -> dict[str, Any]:
    avro: dict[str, Any] = json.loads(table.avro_schema)
    avro["fields"] = [f for f in avro.get("fields", []) if f["name"] not in META_COLUMNS]
    return avro


def evolution_on_write_enabled(options: Mapping[str, str]) -> bool:
    """Whether writes may add columns (see the module docstring for the keys)."""
    return any((options.get(k) or "").strip().lower() == "true"
               for k in (EVOLUTION_ON_WRITE, RECONCILE_SCHEMA))


def _incoming_fields(records: Any, new: Sequence[str]) -> list[pa.Field]:
    if isinstance(records, (pa.Table, pa.RecordBatch)):
        return [records.schema.field(n) for n in new]
    rows = [{n: r.get(n) for n in new} for r in records if isinstance(r, Mapping)]
    fields = list(pa.Table.from_pylist(rows).schema) if rows else []
    return [f for f in fields if f.name in new]


def evolve_on_write(table_avro: Mapping[str, Any], records: Any, table_name: str,
                    options: Mapping[str, str],
                    incoming: pa.Schema | None = None) -> dict[str, Any] | None:
    """The writer schema when ``records`` bring columns the table lacks, else None.

    Args:
        table_avro: the table's Avro schema without meta fields.
        records: the write's records (a pyarrow Table or RecordBatch, or dicts).
        incoming: the records' schema when known (a Spark DataFrame's), instead of records.

    Returns:
        The table schema with the new columns appended as nullable fields, or None when
        the records bring no new column.

    Raises:
        WriteError: new columns while evolution on write is off, or a new column whose
            type cannot be known (all nulls) or stored.
    """
    known = {f["name"].lower() for f in table_avro.get("fields", [])}
    if incoming is not None:
        names = incoming.names
    elif isinstance(records, (pa.Table, pa.RecordBatch)):
        names = records.schema.names
    elif isinstance(records, Sequence) and not isinstance(records, (str, bytes)):
        names = list(dict.fromkeys(k for r in records if isinstance(r, Mapping) for k in r))
    else:
        return None
    new = [n for n in names if not n.startswith("_hoodie_") and n.lower() not in known]
    if not new:
        return None
    if not evolution_on_write_enabled(options):
        raise WriteError(
            f"table {table_name}: the records have columns the table does not have: unknown "
            f"{new}; to add them set {EVOLUTION_ON_WRITE}=true (they become nullable columns), or "
            f"ALTER TABLE {table_name} ADD COLUMNS first, or remove them"
        )
    fields = ([incoming.field(n) for n in new] if incoming is not None
              else _incoming_fields(records, new))
    for field in fields:
        if pa.types.is_null(field.type):
            raise WriteError(
                f"table {table_name}: new column {field.name!r} holds only nulls, so its type "
                "is unknown; give the records as a pyarrow Table with a typed column"
            )
    try:
        added = arrow_to_avro(pa.schema([f.with_nullable(True) for f in fields]), table_name)
    except Exception as exc:  # arrow_to_avro raises per unsupported type kind
        raise WriteError(f"table {table_name}: new column(s) {new} cannot be stored: "
                         f"{exc}") from exc
    evolved = copy.deepcopy(dict(table_avro))
    evolved["fields"] = [*evolved.get("fields", []), *added["fields"]]
    return evolved


def check_evolution(table: HudiTable, old: pa.Schema, new: pa.Schema) -> None:
    """Refuse a schema change that would break the table's records.

    Raises:
        WriteError: a record key, partition or precombine field dropped or retyped, any
            column dropped, a new column not nullable, or a type change that is not one of
            Avro's promotions; the message names the table and the column.
    """
    props = table.properties
    keys = {*props.record_key_fields, *props.partition_fields,
            *([props.precombine_field] if props.precombine_field else [])}
    where = f"table {table.name} at {table.base_path}"
    for field in old:
        if field.name in META_COLUMNS:
            continue
        role = ("record key" if field.name in props.record_key_fields
                else "partition" if field.name in props.partition_fields
                else "precombine" if field.name in keys else None)
        if new.get_field_index(field.name) < 0:
            if role is not None:
                raise WriteError(f"{where}: the new schema drops the {role} field "
                                 f"{field.name!r}; every record needs it: keep the column")
            raise WriteError(f"{where}: the new schema drops column {field.name!r}; hudisql "
                             "evolves schemas by adding columns only: keep the column")
        target = new.field(field.name).type
        if target.equals(field.type):
            continue
        if role is not None:
            raise WriteError(f"{where}: the new schema changes the {role} field "
                             f"{field.name!r} from {field.type} to {target}; record keys and "
                             "partition paths are formed from it: keep its type")
        if not any(target.equals(t) for t in _PROMOTIONS.get(field.type, ())):
            raise WriteError(f"{where}: column {field.name!r} cannot change from {field.type} "
                             f"to {target} (existing files hold {field.type} values); only "
                             "int -> long -> float -> double and string <-> bytes widen: add "
                             "a new column instead")
    for field in new:
        if old.get_field_index(field.name) < 0 and not field.nullable:
            raise WriteError(f"{where}: new column {field.name!r} must be nullable (existing "
                             "records hold null in it)")


def alter_schema(table: HudiTable | str, schema: pa.Schema | str,
                 options: Mapping[str, str] | None = None,
                 on_step: StepHook | None = None) -> str:
    """Commit ``schema`` (Arrow, or Avro JSON text) as the table's new schema; returns the instant.

    A commit without files (operation ``ALTER_SCHEMA``) through the write transaction:
    under the table lock, with the RFC-82 check against concurrent schema changes.

    Raises:
        WriteError: a change :func:`check_evolution` refuses (nothing is written then).
        ConcurrentSchemaEvolutionError: another writer changed the schema meanwhile
            (this commit is rolled back).
    """
    core = HudiTable.open(table) if isinstance(table, str) else table.reload()
    current = _table_avro(core)
    if isinstance(schema, str):
        new_avro: dict[str, Any] = json.loads(schema)
        new_avro["fields"] = [f for f in new_avro["fields"] if f["name"] not in META_COLUMNS]
        wanted = avro_to_arrow(new_avro)
    else:
        wanted = pa.schema([f for f in schema if f.name not in META_COLUMNS])
        new_avro = arrow_to_avro(wanted, core.name)
        # Keep the table's own field definitions for the columns it already has.
        mine = {f["name"]: f for f in current["fields"]}
        new_avro["fields"] = [mine.get(f["name"], f) if _same_type(mine.get(f["name"]), f)
                              else f for f in new_avro["fields"]]
        new_avro["name"], new_avro["namespace"] = current.get("name"), current.get("namespace")
    # Checked as given: Avro fields are all nullable unions once converted.
    check_evolution(core, avro_to_arrow(current), wanted)
    text = json.dumps(new_avro, separators=(",", ":"))
    txn = Transaction(core, dict(options or {}), ALTER_SCHEMA)
    if on_step is not None:
        txn.on_step = on_step
    instant = txn.start()
    try:
        txn.commit([], text)
    except BaseException:
        txn.abort()
        raise
    return instant


def _same_type(mine: Mapping[str, Any] | None, theirs: Mapping[str, Any]) -> bool:
    if mine is None:
        return False
    return bool(avro_to_arrow({"type": "record", "name": "r", "fields": [mine]})
                .equals(avro_to_arrow({"type": "record", "name": "r", "fields": [theirs]})))


def add_columns(table: HudiTable | str, columns: pa.Schema | Sequence[pa.Field],
                options: Mapping[str, str] | None = None,
                on_step: StepHook | None = None) -> str:
    """ALTER TABLE ... ADD COLUMNS: append nullable ``columns``; returns the commit's instant.

    Raises:
        WriteError: no column given, a name the table already has (case-insensitive), or
            a column that is not nullable.
        ConcurrentSchemaEvolutionError: see :func:`alter_schema`.
    """
    core = HudiTable.open(table) if isinstance(table, str) else table.reload()
    fields = list(columns)
    current = avro_to_arrow(_table_avro(core))
    if not fields:
        raise WriteError(f"table {core.name}: ADD COLUMNS needs at least one column")
    seen = {n.lower() for n in current.names}
    for field in fields:
        if field.name.lower() in seen:
            raise WriteError(f"table {core.name}: ADD COLUMNS {field.name}: the table already "
                             "has a column of that name; pick another name")
        seen.add(field.name.lower())
    return alter_schema(core, pa.schema([*current, *fields]), options, on_step)
