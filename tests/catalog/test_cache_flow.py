"""The synchronized cache step by step (Hive's "Synchronized Metastore Cache" design): two
catalog instances on one database, "HMS 1" writing and "HMS 2" reading, with HMS 2's poller
driven by hand."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hudisql.catalog import EventType, MetastoreCache, SqlCatalog, TableName
from hudisql.errors import TableNotFoundError

Make = Callable[..., SqlCatalog]
T = TableName("default", "t")


def _entries(cat: SqlCatalog) -> list[tuple[object, ...]]:
    return [(e.table_id, e.name, e.schema, tuple(sorted(e.properties.items())),
             str(e.valid_write_ids)) for e in cat.cache.entries()]


def test_seed_cache_update_flow(make_catalog: Make) -> None:
    hms1, hms2 = make_catalog(), make_catalog()
    created = hms1.create_table(T, schema="s1")
    hms2.sync()
    table_id = created.table_id
    # 1. The cached entry's write ids are the table's: a statement is served from the cache.
    assert hms2.resolve(hms2.begin_statement([T]), T).schema == "s1"
    assert hms2.stats().hits == 1
    # 2.-3. HMS 1 alters the table: a write event and a commit event enter the log.
    hms1.alter_table(T, schema="s2")
    kinds = [e.event_type for e in hms1.store.events_after(hms2.cache.last_event_id)]
    assert kinds == [EventType.ALTER_TABLE, EventType.COMMIT_TXN]
    # 4. HMS 2's poller applies the write event: the new entry is installed, not usable.
    assert hms2.poll(max_events=1) == 1
    assert hms2.cache.peek(table_id) is None
    # 5. A read on HMS 2 goes to the database, and sees the new schema.
    stmt = hms2.begin_statement([T])
    assert hms2.resolve(stmt, T).schema == "s2"
    assert (hms2.stats().hits, hms2.stats().misses) == (1, 1)
    # 6. The poller applies the commit event: the entry is usable, tagged with write id 2.
    assert hms2.poll(max_events=1) == 1
    cached = hms2.cache.peek(table_id)
    assert cached is not None and cached.schema == "s2"
    assert str(cached.valid_write_ids) == "default.t:2:9223372036854775807::"
    # 7. The next read is served from the cache.
    assert hms2.resolve(hms2.begin_statement([T]), T).schema == "s2"
    assert (hms2.stats().hits, hms2.stats().misses) == (2, 1)
    assert hms2.stats().lag_events == 0


def test_commit_event_alone_makes_the_pending_entry_usable(make_catalog: Make) -> None:
    hms1, hms2 = make_catalog(), make_catalog()
    table_id = hms1.create_table(T, schema="s1").table_id
    hms2.sync()
    hms1.alter_table(T, schema="s2")
    hms2.poll(max_events=1)
    assert hms2.cache.peek(table_id) is None
    hms2.poll(max_events=1)
    before = hms2.stats()
    assert hms2.resolve(hms2.begin_statement([T]), T).schema == "s2"
    assert hms2.stats().hits == before.hits + 1 and hms2.stats().misses == before.misses


def test_an_open_write_id_keeps_the_cache_fresh_and_its_commit_forces_a_refresh(
    make_catalog: Make,
) -> None:
    hms1, hms2 = make_catalog(), make_catalog()
    hms1.create_table(T, schema="s1")
    hms2.sync()
    write = hms1.allocate_write_id(T)
    # [2: 2 open] against the cached [1]: nothing committed in between (the design's case).
    stmt = hms2.begin_statement([T])
    assert str(stmt.get(T).valid_write_ids) == "default.t:2:2:2:"
    hms2.resolve(stmt, T)
    assert hms2.stats().hits == 1
    hms2.sync()  # the ALLOC_WRITE_ID event re-tags the entry; still fresh
    hms2.resolve(hms2.begin_statement([T]), T)
    assert hms2.stats().hits == 2
    hms1.commit_write(write, set_properties={"k": "v"})
    entry = hms2.resolve(hms2.begin_statement([T]), T)
    assert entry.properties == {"k": "v"}
    assert hms2.stats().refreshes == 1 and hms2.stats().misses == 1
    # The statement that began before the commit still gets the entry it could see.
    assert hms2.resolve(stmt, T).properties in ({}, {"k": "v"})


def test_an_aborted_write_leaves_the_entry_usable(make_catalog: Make) -> None:
    hms1, hms2 = make_catalog(), make_catalog()
    hms1.create_table(T, schema="s1")
    hms2.sync()
    write = hms1.allocate_write_id(T)
    hms1.abort_write(write)
    hms2.sync()
    stmt = hms2.begin_statement([T])
    assert str(stmt.get(T).valid_write_ids) == "default.t:2:9223372036854775807::2"
    assert hms2.resolve(stmt, T).schema == "s1"
    assert hms2.stats().hits == 1 and hms2.stats().misses == 0


def test_a_session_reads_its_own_writes_without_waiting_for_the_log(make_catalog: Make) -> (
    None
):
    hms1 = make_catalog()
    hms1.create_table(T, schema="s1")
    with hms1.write_transaction(T) as tx:
        tx.update(schema="s2")
    assert hms1.stats().events_applied == 0  # the poller never ran
    assert hms1.resolve(hms1.begin_statement([T]), T).schema == "s2"
    assert hms1.stats().hits == 1 and hms1.stats().misses == 0
    # Reading inside one's own write id: the own write counts as committed, so the
    # cache (which does not know it yet) is bypassed.
    write = hms1.allocate_write_id(T)
    stmt = hms1.begin_statement([T]).with_own_write(T, write.write_id)
    hms1.resolve(stmt, T)
    assert hms1.stats().refreshes == 1


def test_rename_and_recreate_never_serve_the_old_table(make_catalog: Make) -> None:
    hms1, hms2 = make_catalog(), make_catalog()
    old = hms1.create_table(T, schema="old")
    hms2.sync()
    hms2.resolve(hms2.begin_statement([T]), T)
    u = TableName("default", "u")
    hms1.rename_table(T, u)
    new = hms1.create_table(T, schema="new")
    assert new.table_id != old.table_id
    # HMS 2 has not seen any of it; the statement's table id tells the tables apart.
    stmt = hms2.begin_statement([T, u])
    got_t, got_u = hms2.resolve(stmt, T), hms2.resolve(stmt, u)
    assert (got_t.table_id, got_t.schema) == (new.table_id, "new")
    assert (got_u.table_id, got_u.name, got_u.schema) == (old.table_id, u, "old")
    hms1.drop_table(T)
    recreated = hms1.create_table(T, schema="newer")
    got = hms2.resolve(hms2.begin_statement([T]), T)
    assert (got.table_id, got.schema) == (recreated.table_id, "newer")
    hms2.sync()
    assert {e.table_id for e in hms2.cache.entries()} == {old.table_id, recreated.table_id}


def test_a_dropped_table_is_not_brought_back_by_a_late_read(make_catalog: Make) -> None:
    hms1, hms2 = make_catalog(), make_catalog()
    hms1.create_table(T, schema="s1")
    read_before_drop = hms1.store.read_table_by_name(T)
    assert read_before_drop is not None
    hms1.drop_table(T)
    hms2.sync()
    assert hms2.cache.install(read_before_drop) is False
    assert hms2.cache.entries() == []
    stmt = hms2.begin_statement([T])
    try:
        hms2.resolve(stmt, T)
    except TableNotFoundError as exc:
        assert "default.t" in str(exc)
    else:
        raise AssertionError("a dropped table was found")


def test_a_statement_older_than_a_drop_gets_a_clear_error_from_the_database(
    make_catalog: Make,
) -> None:
    hms1, hms2 = make_catalog(), make_catalog()
    hms1.create_table(T, schema="s1")
    stmt = hms2.begin_statement([T])
    hms1.drop_table(T)
    hms2.sync()
    try:
        hms2.resolve(stmt, T)
    except TableNotFoundError as exc:
        assert "dropped after the statement began" in str(exc)
    else:
        raise AssertionError("read a dropped table")


def test_prewarm_loads_every_table_at_the_log_position(make_catalog: Make) -> None:
    hms1 = make_catalog()
    for i in range(3):
        hms1.create_table(("default", f"p{i}"), schema=str(i))
    head = hms1.store.head_event_id()
    hms2 = make_catalog()
    assert hms2.stats().entries == 3 and hms2.stats().last_event_id == head
    stmt = hms2.begin_statement([("default", f"p{i}") for i in range(3)])
    for i in range(3):
        assert hms2.resolve(stmt, ("default", f"p{i}")).schema == str(i)
    assert hms2.stats().hits == 3 and hms2.stats().misses == 0
    assert hms2.sync() == 0


def test_duplicate_events_change_nothing(make_catalog: Make) -> None:
    hms1, hms2 = make_catalog(), make_catalog()
    hms1.create_table(T, schema="s1")
    hms1.alter_table(T, schema="s2")
    hms1.rename_table(T, ("default", "u"))
    hms1.create_table(T, schema="s3")
    hms1.drop_table(("default", "u"))
    hms2.sync()
    before = _entries(hms2)
    events = hms2.store.events_after(0)
    # Replayed in full, then one by one in reverse: every one is a duplicate.
    applied = [hms2.cache.apply(e) for e in events + events[::-1]]
    assert not any(applied)
    assert _entries(hms2) == before
    assert hms2.stats().duplicate_events == 2 * len(events)
    # A cache fed the log twice over ends where the database is.
    fresh = MetastoreCache()
    for event in events + events:
        fresh.apply(event)
    db_state = {e.table_id: (e.name, e.schema, str(e.valid_write_ids))
                for e in hms1.store.read_all()[0]}
    assert {e.table_id: (e.name, e.schema, str(e.valid_write_ids))
            for e in fresh.entries()} == db_state


def test_a_database_read_newer_than_the_log_is_not_undone_by_old_events(make_catalog: Make) -> (
    None
):
    hms1, hms2 = make_catalog(), make_catalog()
    table_id = hms1.create_table(T, schema="s1").table_id
    hms1.alter_table(T, schema="s2")
    hms2.resolve(hms2.begin_statement([T]), T)  # a miss: reads s2 from the database
    hms2.sync()  # then replays the create and alter events that came before that read
    cached = hms2.cache.peek(table_id)
    assert cached is not None and cached.schema == "s2"


def test_poller_thread_restarts_where_it_stopped(make_catalog: Make) -> None:
    hms1 = make_catalog()
    hms2 = make_catalog(poll_interval=0.01)
    assert hms2.poller.running
    hms2.poller.stop()
    assert not hms2.poller.running
    hms1.create_table(T, schema="s1")
    hms1.alter_table(T, schema="s2")
    head = hms1.store.head_event_id()
    assert hms2.stats().last_event_id < head
    rounds = hms2.poller.rounds
    hms2.poller.start()
    # The first round after a restart reads everything committed before it.
    assert hms2.poller.wait_rounds(rounds + 1, timeout=60)
    stats = hms2.stats()
    assert stats.last_event_id == head and stats.duplicate_events == 0
    hms2.poller.stop()
    hms2.poller.start()
    assert hms2.poller.wait_rounds(hms2.poller.rounds + 1, timeout=60)
    assert hms2.stats().events_applied == stats.events_applied
    assert hms2.resolve(hms2.begin_statement([T]), T).schema == "s2"
    assert hms2.stats().hits == 1


def test_stats_report_lag_until_the_poller_catches_up(make_catalog: Make) -> None:
    hms1, hms2 = make_catalog(), make_catalog()
    hms1.create_table(T, schema="s1")
    hms2.begin_statement([T])
    assert hms2.stats().lag_events == 2
    hms2.sync()
    stats = hms2.stats()
    assert (stats.lag_events, stats.events_applied, stats.entries) == (0, 2, 1)
    assert dataclasses.asdict(stats)["hits"] == 0
