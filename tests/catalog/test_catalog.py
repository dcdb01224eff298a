"""The catalog's tables and databases: DDL, write ids, the notification log, odd names,
external tables and bad input."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from hudisql.catalog import SqlCatalog, TableName, db
from hudisql.errors import CatalogError, TableAlreadyExistsError, TableNotFoundError
from tests.fixtures import copy_table

Make = Callable[..., SqlCatalog]
T = TableName("default", "t")

#: Quotes, semicolons, dots, SQL and non-ASCII letters: all stored and found literally, but
#: in lower case (catalog names are case-insensitive).
ODD_DB = 'we"ird.db; --'
ODD_NAMES = ["it's", 'say "hi"', "a;b", "x.y.z", "ünïcødé_表", "'); DROP TABLE hudisql_tables; --"]


def _events(cat: SqlCatalog) -> list[tuple[str, str | None, int | None]]:
    return [(e.event_type.value, e.table, e.write_id) for e in cat.store.events_after(0)]


def test_odd_names_are_stored_and_found_literally_but_for_case(make_catalog: Make) -> None:
    cat = make_catalog()
    cat.create_database(ODD_DB)
    ids = {}
    for name in ODD_NAMES:
        ids[name] = cat.create_table((ODD_DB, name), schema=f"schema of {name}").table_id
    assert cat.list_databases() == sorted(["default", ODD_DB])
    assert cat.list_tables(ODD_DB) == sorted(TableName(ODD_DB, n) for n in ODD_NAMES)
    stmt = cat.begin_statement((ODD_DB, n) for n in ODD_NAMES)
    for name in ODD_NAMES:
        entry = cat.resolve(stmt, (ODD_DB, name))
        assert (entry.table_id, entry.name.table, entry.schema) == (
            ids[name], name.lower(), f"schema of {name}")
    with cat.engine.connect() as conn:
        stored = {r.name for r in conn.execute(sa.select(db.tables.c.name))}
    assert stored == {n.lower() for n in ODD_NAMES}
    # A name that merely resembles another is a different (absent) table.
    with pytest.raises(TableNotFoundError):
        cat.load_table((ODD_DB, "x.y"))
    with pytest.raises(TableNotFoundError):
        cat.load_table(("we", 'ird.db; --."x.y.z"'))


def test_identifier_forms() -> None:
    assert TableName.of("t") == TableName("default", "t")
    assert TableName.of("db.t.x") == TableName("db", "t.x")
    assert TableName.of(("d.b", "t")) == TableName("d.b", "t")
    for bad in ("", ".t", "db.", ("db",), ("", "t")):
        with pytest.raises(CatalogError, match="table identifier"):
            TableName.of(bad)  # type: ignore[arg-type]


def test_table_ids_never_change_on_rename_and_are_never_reused(make_catalog: Make) -> None:
    cat = make_catalog()
    first = cat.create_table(T)
    renamed = cat.rename_table(T, ("default", "u"))
    assert renamed.table_id == first.table_id and renamed.name == TableName("default", "u")
    cat.drop_table(("default", "u"))
    again = cat.create_table(T)
    assert again.table_id > first.table_id


def test_every_ddl_and_data_commit_advances_the_write_id(make_catalog: Make) -> None:
    cat = make_catalog()
    hwms = [cat.create_table(T).valid_write_ids]
    hwms.append(cat.alter_table(T, set_properties={"a": "1"}).valid_write_ids)
    hwms.append(cat.rename_table(T, ("default", "u")).valid_write_ids)
    with cat.write_transaction("u") as tx:
        tx.update(schema="s")
    hwms.append(tx.entry.valid_write_ids if tx.entry else None)
    assert [str(h) for h in hwms] == [
        "default.t:1:9223372036854775807::", "default.t:2:9223372036854775807::",
        "default.u:3:9223372036854775807::", "default.u:4:9223372036854775807::"]
    assert _events(cat) == [
        ("CREATE_TABLE", "t", 1), ("COMMIT_TXN", "t", 1),
        ("ALTER_TABLE", "t", 2), ("COMMIT_TXN", "t", 2),
        ("RENAME_TABLE", "u", 3), ("COMMIT_TXN", "u", 3),
        ("ALLOC_WRITE_ID", "u", 4), ("WRITE_TABLE", "u", 4), ("COMMIT_TXN", "u", 4)]


def test_a_failed_change_writes_no_event(make_catalog: Make) -> None:
    cat = make_catalog()
    cat.create_table(T)
    before = _events(cat)
    with pytest.raises(TableAlreadyExistsError, match=r"default\.t already exists"):
        cat.create_table(T)
    with pytest.raises(TableNotFoundError, match=r"default\.nope does not exist"):
        cat.rename_table("nope", "other")
    with pytest.raises(TableAlreadyExistsError):
        cat.rename_table(T, T)
    with pytest.raises(CatalogError, match="database 'nodb' does not exist"):
        cat.create_table(("nodb", "t"))
    with pytest.raises(ValueError, match="boom"), cat.write_transaction(T):
        raise ValueError("boom")
    after = _events(cat)
    assert after[: len(before)] == before
    # Only the aborted write transaction left its allocate and abort events.
    assert [e[0] for e in after[len(before):]] == ["ALLOC_WRITE_ID", "ABORT_TXN"]
    assert cat.list_tables() == [T]


def test_write_ids_that_are_not_open_cannot_commit(make_catalog: Make) -> None:
    cat = make_catalog()
    cat.create_table(T)
    write = cat.allocate_write_id(T)
    cat.abort_write(write)
    with pytest.raises(CatalogError, match=r"write id 2 of table default\.t was aborted"):
        cat.commit_write(write)
    write = cat.allocate_write_id(T)
    cat.commit_write(write)
    with pytest.raises(CatalogError, match="is not open"):
        cat.commit_write(write)
    write = cat.allocate_write_id(T)
    cat.drop_table(T)
    with pytest.raises(TableNotFoundError, match="dropped while write id 4"):
        cat.commit_write(write)


def test_two_threads_creating_one_name_exactly_one_wins(make_catalog: Make) -> None:
    cats = [make_catalog(), make_catalog()]
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def create(cat: SqlCatalog) -> None:
        barrier.wait(60)
        try:
            cat.create_table(T)
            outcomes.append("created")
        except TableAlreadyExistsError:
            outcomes.append("exists")

    threads = [threading.Thread(target=create, args=(c,)) for c in cats]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == ["created", "exists"]
    assert cats[0].list_tables() == [T]


def test_databases(make_catalog: Make) -> None:
    cat = make_catalog()
    cat.create_database("sales", properties={"owner": "me"})
    cat.create_database("sales", exist_ok=True)
    with pytest.raises(CatalogError, match="already exists"):
        cat.create_database("sales")
    cat.create_table(("sales", "orders"))
    with pytest.raises(CatalogError, match="still holds 1 table"):
        cat.drop_database("sales")
    cat.drop_database("sales", cascade=True)
    assert cat.list_databases() == ["default"]
    with pytest.raises(CatalogError, match="does not exist"):
        cat.list_tables("sales")
    with pytest.raises(CatalogError, match="cannot be dropped"):
        cat.drop_database("default")
    assert [e[0] for e in _events(cat)][-2:] == ["DROP_TABLE", "DROP_DATABASE"]


def test_managed_tables_live_in_the_warehouse_and_purge_deletes_them(make_catalog: Make,
                                                                     tmp_path: Path) -> None:
    cat = make_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("d")
    assert cat.create_table(("d", "a/b")).location == str(tmp_path / "wh" / "d.db" / "a%2Fb")
    assert cat.create_table(("default", "..")).location == str(tmp_path / "wh" / "%2E%2E")
    entry = cat.create_table(T)
    Path(entry.location, ".hoodie").mkdir(parents=True)
    cat.drop_table(T, purge=True)
    assert not Path(entry.location).exists()


def test_a_managed_table_is_not_read_without_its_write_ids(make_catalog: Make) -> None:
    cat = make_catalog()
    entry = cat.create_table(T)
    with pytest.raises(CatalogError, match="needs the statement's ValidWriteIdList"):
        cat.load_table(T, None, entry.table_id)
    assert cat.load_table(T).table_id == entry.table_id  # a statement of its own


def test_commit_write_reads_the_timeline_from_the_table_files(make_catalog: Make,
                                                               tmp_path: Path) -> None:
    cat = make_catalog()
    location = copy_table("v6_nonpartitioned", tmp_path)
    cat.create_table(T, location=str(location))
    with cat.write_transaction(T) as tx:
        pass
    assert tx.entry is not None
    assert tx.entry.timeline.last_completed == "20240418173551906"
    assert (tx.entry.timeline.completed, tx.entry.timeline.pending) == (2, 0)


def _add_completed_commit(table: Path, instant: str, extra_field: str) -> None:
    hoodie = table / ".hoodie"
    meta = json.loads((hoodie / "20240418173551906.commit").read_text())
    schema = json.loads(meta["extraMetadata"]["schema"])
    schema["fields"].append({"name": extra_field, "type": ["null", "string"], "default": None})
    meta["extraMetadata"]["schema"] = json.dumps(schema)
    (hoodie / f"{instant}.commit.requested").write_text("")
    (hoodie / f"{instant}.inflight").write_text("")
    (hoodie / f"{instant}.commit").write_text(json.dumps(meta))


def test_external_table_is_refreshed_when_its_timeline_moves(make_catalog: Make,
                                                             tmp_path: Path) -> None:
    cat, other = make_catalog(), make_catalog()
    location = copy_table("v6_nonpartitioned", tmp_path)
    entry = cat.register_table(T, str(location))
    assert entry.external and entry.valid_write_ids is None
    assert entry.timeline.last_completed == "20240418173551906"
    assert entry.schema is not None and '"longField"' in entry.schema
    assert entry.properties["hoodie.table.name"] == "v6_nonpartitioned"
    stmt = cat.begin_statement([T])
    assert stmt.get(T).valid_write_ids is None
    assert cat.resolve(stmt, T).as_of_event == entry.as_of_event
    assert cat.stats().external_refreshes == 0
    # Another engine commits to the table.
    _add_completed_commit(location, "20990101000000000", "added_by_spark")
    fresh = cat.resolve(cat.begin_statement([T]), T)
    assert fresh.timeline.last_completed == "20990101000000000"
    assert fresh.schema is not None and "added_by_spark" in fresh.schema
    assert cat.stats().external_refreshes == 1
    # The other catalog learns it from the notification log, without touching the files.
    other.sync()
    cached = other.cache.peek(entry.table_id)
    assert cached is not None and cached.timeline.last_completed == "20990101000000000"
    with pytest.raises(CatalogError, match="external"):
        cat.allocate_write_id(T)


def test_external_v8_table_uses_the_layout_2_timeline(make_catalog: Make, tmp_path: Path) -> None:
    cat = make_catalog()
    entry = cat.register_table(T, str(copy_table("v8_nonpartitioned", tmp_path)))
    assert entry.timeline.last_completed == "20250713010536861"
    assert (entry.timeline.completed, entry.timeline.pending) == (2, 0)


def test_registering_a_path_without_a_table_changes_nothing(make_catalog: Make,
                                                            tmp_path: Path) -> None:
    cat = make_catalog()
    with pytest.raises(TableNotFoundError):
        cat.register_table(T, str(tmp_path / "nothing"))
    assert cat.list_tables() == [] and cat.store.events_after(0) == []
