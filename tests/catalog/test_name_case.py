"""Catalog names are case-insensitive and stored in lower case (Hive's rule), on SQLite and
PostgreSQL; names an earlier hudisql stored in mixed case are renamed on open, losing
nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from hudisql.catalog import SqlCatalog, TableName, db
from hudisql.catalog.legacy_names import NameFix, StoredDatabase, StoredTable, plan_fixes
from hudisql.errors import CatalogError, TableAlreadyExistsError, TableNotFoundError
from tests.fixtures import copy_table

Make = Callable[..., SqlCatalog]
TRIPS = TableName("default", "trips")


def _stored_tables(cat: SqlCatalog) -> dict[int, tuple[str, str, str]]:
    """``table_id -> (db_name, name, location)`` exactly as the database holds them."""
    t = db.tables
    with cat.engine.connect() as conn:
        rows = conn.execute(sa.select(t.c.table_id, t.c.db_name, t.c.name, t.c.location))
        return {int(r.table_id): (r.db_name, r.name, r.location) for r in rows}


def _stored_databases(cat: SqlCatalog) -> list[str]:
    with cat.engine.connect() as conn:
        return sorted(r.name for r in conn.execute(sa.select(db.databases.c.name)))


def _store_as_old_hudisql_did(cat: SqlCatalog, table_id: int, database: str, name: str) -> None:
    """Give a table row the mixed-case name an earlier hudisql would have stored."""
    with cat.engine.begin() as conn:
        conn.execute(sa.update(db.tables).where(db.tables.c.table_id == table_id)
                     .values(db_name=database, name=name))


def _add_old_database(cat: SqlCatalog, name: str, created_at: float) -> None:
    with cat.engine.begin() as conn:
        conn.execute(sa.insert(db.databases).values(
            name=name, location=None, properties='{"owner": "old"}', created_at=created_at))


# ------------------------------------------------------------------ the rule


def test_table_names_fold_to_lower_case_in_every_form() -> None:
    assert TableName("Sales", "Trips") == TableName("sales", "trips")
    assert str(TableName("Sales", "Trips")) == "sales.trips"
    assert TableName.of("Trips") == TRIPS
    assert TableName.of("DEFAULT.TRIPS") == TRIPS
    assert TableName.of(("Default", "tRiPs")) == TRIPS
    # Non-ASCII letters fold as Python (and Java's Locale.ROOT) fold them.
    assert TableName.of("ÜBER.Straße") == TableName("über", "straße")


def test_mixed_case_names_reach_one_table(make_catalog: Make) -> None:
    cat = make_catalog()
    created = cat.create_table("Trips", schema="s")
    assert created.name == TRIPS
    assert _stored_tables(cat)[created.table_id][:2] == ("default", "trips")
    for spelling in ("trips", "TRIPS", "default.Trips", ("DEFAULT", "tRiPs"), TRIPS):
        assert cat.load_table(spelling).table_id == created.table_id
    snapshot = cat.begin_statement(["Trips", "TRIPS", "trips"])
    assert list(snapshot.tables) == [TRIPS]
    assert "TrIpS" in snapshot
    assert cat.resolve(snapshot, "TRIPS").table_id == created.table_id
    assert cat.list_tables("DEFAULT") == [TRIPS]


def test_a_name_that_differs_only_in_case_already_exists(make_catalog: Make,
                                                         tmp_path: Path) -> None:
    cat = make_catalog()
    cat.create_table("t")
    with pytest.raises(TableAlreadyExistsError, match=r"table default\.t already exists"):
        cat.create_table("T")
    with pytest.raises(TableAlreadyExistsError, match="already exists"):
        cat.register_table(("DEFAULT", "T"), str(copy_table("v6_nonpartitioned", tmp_path)))
    cat.create_table("u")
    with pytest.raises(TableAlreadyExistsError, match=r"table default\.u already exists"):
        cat.rename_table("T", "U")
    assert cat.list_tables() == [TableName("default", "t"), TableName("default", "u")]


def test_every_table_operation_takes_any_case(make_catalog: Make) -> None:
    cat, other = make_catalog(), make_catalog()
    table_id = cat.create_table("Trips").table_id
    cat.alter_table("TRIPS", set_properties={"k": "v"})
    write = cat.allocate_write_id("tRiPs")
    assert write.name == TRIPS
    cat.commit_write(write, schema="s2")
    with cat.write_transaction("Trips") as tx:
        tx.update(schema="s3")
    renamed = cat.rename_table("TRIPS", ("Default", "Rides"))
    assert (renamed.table_id, renamed.name) == (table_id, TableName("default", "rides"))
    assert renamed.properties == {"k": "v"} and renamed.schema == "s3"
    other.sync()
    assert other.load_table("RIDES").schema == "s3"
    with pytest.raises(TableNotFoundError, match=r"table default\.trips does not exist"):
        cat.load_table("Trips")
    dropped = cat.drop_table("RiDeS")
    assert dropped.table_id == table_id and cat.list_tables() == []
    # The notification log names the table one way only.
    names = {(e.database, e.table) for e in cat.store.events_after(0) if e.table}
    assert names == {("default", "trips"), ("default", "rides")}


def test_database_names_are_case_insensitive(make_catalog: Make, tmp_path: Path) -> None:
    cat = make_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("Sales")
    assert cat.list_databases() == ["default", "sales"]
    with pytest.raises(CatalogError, match="'sales' already exists"):
        cat.create_database("SALES")
    cat.create_database("sAlEs", exist_ok=True)
    entry = cat.create_table(("SALES", "Orders"))
    assert entry.name == TableName("sales", "orders")
    # A new managed table's directory is named after the normalized name.
    assert entry.location == str(tmp_path / "wh" / "sales.db" / "orders")
    assert cat.list_tables("Sales") == [TableName("sales", "orders")]
    with pytest.raises(CatalogError, match="still holds 1 table"):
        cat.drop_database("SALES")
    with pytest.raises(CatalogError, match="cannot be dropped"):
        cat.drop_database("DEFAULT")
    cat.drop_database("Sales", cascade=True)
    assert cat.list_databases() == ["default"]


def test_an_explicit_location_is_kept_as_given(make_catalog: Make, tmp_path: Path) -> None:
    cat = make_catalog()
    location = str(tmp_path / "Data" / "Trips")
    assert cat.create_table("Trips", location=location).location == location


# ----------------------------------------------------- names stored by old code


def test_a_table_stored_in_mixed_case_is_renamed_on_open_and_keeps_everything(
    make_catalog: Make, tmp_path: Path
) -> None:
    old = make_catalog()
    location = str(tmp_path / "warehouse" / "Trips")
    created = old.create_table("trips", schema="s1", location=location,
                               properties={"owner": "me"})
    with old.write_transaction("trips") as tx:
        tx.update(schema="s2")
    before = old.load_table("trips")
    _store_as_old_hudisql_did(old, created.table_id, "default", "Trips")
    head = old.store.head_event_id()

    opened = make_catalog()
    assert opened.name_fixes == [NameFix("default", "default", created.table_id, "Trips",
                                         "trips")]
    assert _stored_tables(opened)[created.table_id] == ("default", "trips", location)
    for spelling in ("Trips", "trips", "TRIPS"):
        entry = opened.load_table(spelling)
        assert (entry.table_id, entry.location, entry.schema, entry.properties) == (
            created.table_id, location, "s2", {"owner": "me"})
    # The rename is a DDL like any other: one more write id, and events that say what it was.
    after = opened.load_table("trips")
    assert before.valid_write_ids is not None and after.valid_write_ids is not None
    assert after.valid_write_ids.high_watermark == before.valid_write_ids.high_watermark + 1
    events = opened.store.events_after(head)
    assert [e.event_type.value for e in events] == ["RENAME_TABLE", "COMMIT_TXN"]
    assert (events[0].message["old_table"], events[0].message["table"]) == ("Trips", "trips")
    # A catalog instance opened before the rename follows it through the log.
    old.sync()
    assert old.load_table("TRIPS").schema == "s2"
    # Writes go on as before.
    with opened.write_transaction("Trips") as tx:
        tx.update(schema="s3")
    assert old.load_table("trips").schema == "s3"


def test_a_database_stored_in_mixed_case_is_renamed_with_its_tables(make_catalog: Make) -> None:
    old = make_catalog()
    old.create_database("staging")
    orders = old.create_table(("staging", "orders"), schema="o")
    _add_old_database(old, "Sales", created_at=1.0)
    _store_as_old_hudisql_did(old, orders.table_id, "Sales", "Orders")
    old.store.drop_database("staging")  # empty now: the table moved to "Sales"

    opened = make_catalog()
    assert [f.new for f in opened.name_fixes] == ["sales", "sales.orders"]
    assert _stored_databases(opened) == ["default", "sales"]
    assert opened.list_tables("SALES") == [TableName("sales", "orders")]
    assert opened.load_table("Sales.Orders").table_id == orders.table_id
    with opened.engine.connect() as conn:
        props = conn.execute(sa.select(db.databases.c.properties)
                             .where(db.databases.c.name == "sales")).scalar_one()
    assert props == '{"owner": "old"}'
    kinds = [e.event_type.value for e in opened.store.events_after(0)][-4:]
    assert kinds == ["CREATE_DATABASE", "RENAME_TABLE", "COMMIT_TXN", "DROP_DATABASE"]


def test_stored_names_that_differ_only_in_case_all_stay_reachable(
    make_catalog: Make, caplog: pytest.LogCaptureFixture
) -> None:
    old = make_catalog()
    upper = old.create_table("a", schema="upper")  # oldest
    lower = old.create_table("b", schema="lower")
    third = old.create_table("c", schema="third")
    _store_as_old_hudisql_did(old, upper.table_id, "default", "T")
    _store_as_old_hudisql_did(old, lower.table_id, "default", "t")
    _store_as_old_hudisql_did(old, third.table_id, "default", "T_2")
    _add_old_database(old, "D", created_at=2.0)
    _add_old_database(old, "d", created_at=3.0)

    with caplog.at_level(logging.WARNING, logger="hudisql.catalog.catalog"):
        opened = make_catalog()
    # The name already in lower case stays; T_2 takes t_2; T takes the next free name.
    assert opened.load_table("t").schema == "lower"
    assert opened.load_table("T_2").schema == "third"
    assert opened.load_table("t_3").schema == "upper"
    assert opened.load_table("t_3").table_id == upper.table_id
    assert opened.list_databases() == ["d", "d_2", "default"]
    clashes = sorted((f.old, f.new) for f in opened.name_fixes if f.clashed)
    assert clashes == [("D", "d_2"), ("default.T", "default.t_3")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("default.T was renamed to default.t_3, not default.t" in w
               and "ALTER TABLE default.t_3 RENAME TO" in w for w in warnings)
    assert any("database D was renamed to d_2, not d" in w for w in warnings)
    assert len(_stored_tables(opened)) == 3


def test_a_catalog_in_order_is_not_written_when_it_opens(make_catalog: Make) -> None:
    first = make_catalog()
    first.create_table("Trips")
    head = first.store.head_event_id()
    again = make_catalog()
    assert again.name_fixes == [] and again.store.normalize_stored_names() == []
    assert again.store.head_event_id() == head


@pytest.mark.parametrize(
    ("databases", "tables", "expected"),
    [
        # Nothing to do.
        ([("default", 0)], [(1, "default", "t")], []),
        # Lower-case holders keep their names; the rest in table id order, then suffixed.
        ([("default", 0)], [(1, "default", "T"), (2, "default", "t"), (3, "default", "T_2")],
         [("default.T", "default.t_3"), ("default.T_2", "default.t_2")]),
        ([("default", 0)], [(5, "default", "TRIPS"), (4, "default", "Trips")],
         [("default.TRIPS", "default.trips_2"), ("default.Trips", "default.trips")]),
        # A database keeps its tables; the earliest created mixed-case one wins a clash.
        ([("default", 0), ("Sales", 2), ("SALES", 1)], [(1, "Sales", "t"), (2, "SALES", "t")],
         [("SALES", "sales"), ("SALES.t", "sales.t"), ("Sales", "sales_2"),
          ("Sales.t", "sales_2.t")]),
    ],
)
def test_plan_fixes(
    databases: list[tuple[str, float]], tables: list[tuple[int, str, str]],
    expected: list[tuple[str, str]],
) -> None:
    db_fixes, table_fixes = plan_fixes([StoredDatabase(*d) for d in databases],
                                       [StoredTable(*t) for t in tables])
    assert sorted((f.old, f.new) for f in [*db_fixes, *table_fixes]) == expected
