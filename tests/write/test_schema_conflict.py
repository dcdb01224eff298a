"""RFC-82: the eight scenarios of concurrent schema evolution, forced with two real writers.

Each race has a transaction under test (B) and a concurrent writer (A) in two threads:
B opens its instant, then A starts and commits, and only then does B validate (barriers
at B's ``inflight`` and ``validating`` steps). B's table schema at start, A's committed
schema (B's schema at validation) and B's writer schema make the RFC's case. The test
asserts the schema B commits, or the error and B's rollback; then reads through hudisql,
Spark and the ``hudi`` reader agree on the schema and the rows.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from hudisql.errors import ConcurrentSchemaEvolutionError
from hudisql.table.format.commit_metadata import CommitMetadata
from hudisql.table.format.schema import META_COLUMNS
from hudisql.table.table import HudiTable
from hudisql.txn.schema_conflict import (
    ADDITIVE_RESOLUTION,
    CONFLICT_RESOLUTION_ENABLE,
    SchemaDiff,
    TableSchema,
    resolve_commit_schema,
    resolve_schema,
    schema_diff,
)
from hudisql.txn.schema_evolution import EVOLUTION_ON_WRITE
from hudisql.txn.writer import WriteClient, create_table

S1 = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("fare", pa.float64()),
                ("city", pa.string())])
BASE_COLUMNS = ["uuid", "ts", "fare", "city"]
EVOLVE = {EVOLUTION_ON_WRITE: "true"}
TABLE_TYPES = ["MERGE_ON_READ", "COPY_ON_WRITE"]
WAIT = 120.0  # a barrier never waits this long unless the other side failed


def new_table(tmp_path: Path, table_type: str, seeded: bool) -> str:
    """An empty trips table; ``seeded``: with one commit recording S1."""
    path = str(tmp_path / f"trips_{table_type.lower()}")
    create_table(path, "trips", S1, ["uuid"], ["city"], "ts", table_type)
    if seeded:
        WriteClient(HudiTable.open(path)).insert(rows("s", 2, []))
    return path


def rows(prefix: str, n: int, extra: list[str]) -> pa.Table:
    """``n`` new trips keyed ``<prefix><i>``, with the ``extra`` (string) columns filled."""
    data: dict[str, Any] = {
        "uuid": [f"{prefix}{i}" for i in range(n)], "ts": [1] * n,
        "fare": [float(i) for i in range(n)], "city": ["sf" if i % 2 else "la" for i in range(n)],
    }
    for column in extra:
        data[column] = [f"{column}-{prefix}{i}" for i in range(n)]
    return pa.table(data)


@dataclass
class Writer:
    """One side of a race: inserts ``n`` rows with the ``extra`` columns through a WriteClient."""

    prefix: str
    extra: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    n: int = 3

    def run(self, path: str, on_step: Callable[[str, str], None]) -> str:
        """Insert the rows; returns the commit's instant time."""
        options = {**(EVOLVE if self.extra else {}), **self.options}
        client = WriteClient(HudiTable.open(path), on_step=on_step, options=options)
        return client.insert(rows(self.prefix, self.n, self.extra)).instant_time


@dataclass
class Race:
    """What happened: A's instant, B's instant (or B's error) and every step B took."""

    a_instant: str
    b_instant: str | None
    b_error: BaseException | None
    b_steps: list[tuple[str, str]]


def race(path: str, a: Callable[[Callable[[str, str], None]], str],
         b: Callable[[Callable[[str, str], None]], str], *, a_opens_first: bool = True,
         b_validates: tuple[str, ...] = ("validating",),
         a_validates: tuple[str, ...] = ("validating",)) -> Race:
    """Run A and B in two threads so that A commits after B opened and before B validates.

    ``a`` and ``b`` take an ``on_step`` hook and return their instant time. With
    ``a_opens_first`` A opens its instant first and waits at its validation step until B
    has opened (A's instant time is the older: completions in instant order); otherwise B
    opens first and A starts only then (B's instant is older but completes last). Either
    way B waits at its validation step (``b_validates``) until A is done.
    """
    a_open = threading.Barrier(2, timeout=WAIT)
    b_open = threading.Barrier(2, timeout=WAIT)
    a_done = threading.Barrier(2, timeout=WAIT)
    barriers = (a_open, b_open, a_done)
    outcome: dict[str, Any] = {}
    b_steps: list[tuple[str, str]] = []

    def once(key: str, barrier: threading.Barrier) -> None:
        if key not in outcome:
            outcome[key] = True
            barrier.wait()

    def a_hook(event: str, detail: str) -> None:
        if a_opens_first and event == "inflight":
            once("a_inflight", a_open)
        elif a_opens_first and event in a_validates:
            once("a_validates", b_open)

    def b_hook(event: str, detail: str) -> None:
        b_steps.append((event, detail))
        if event == "inflight":
            outcome.setdefault("b_instant", detail)
            once("b_inflight", b_open)
        elif event in b_validates:
            once("b_validates", a_done)

    def run_a() -> None:
        try:
            if not a_opens_first:
                b_open.wait()
            outcome["a"] = a(a_hook)
            a_done.wait()
        except BaseException as exc:
            outcome["a_error"] = exc
            for barrier in barriers:
                barrier.abort()

    def run_b() -> None:
        try:
            if a_opens_first:
                a_open.wait()
            outcome["b"] = b(b_hook)
        except BaseException as exc:
            outcome["b_error"] = exc
            for barrier in barriers:
                barrier.abort()

    threads = [threading.Thread(target=run_a), threading.Thread(target=run_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 2)
    assert not any(t.is_alive() for t in threads), "a writer is stuck"
    if "a_error" in outcome:
        raise outcome["a_error"]
    return Race(outcome["a"], outcome.get("b", outcome.get("b_instant")),
                outcome.get("b_error"), b_steps)


def commit_columns(path: str, instant: str) -> list[str]:
    """The columns of the schema that ``instant``'s commit metadata records."""
    timeline = HudiTable.open(path).timeline
    done = timeline.get(instant)
    assert done is not None and done.is_completed, f"{instant} did not complete"
    metadata = CommitMetadata.parse(timeline.read_content(done))
    assert metadata.schema is not None
    return [f["name"] for f in json.loads(metadata.schema)["fields"]
            if f["name"] not in META_COLUMNS]


def assert_rolled_back(path: str, instant: str) -> None:
    """``instant`` left no trace: not completed, not pending, named by a rollback, no files."""
    table = HudiTable.open(path)
    timeline = table.timeline
    assert not timeline.is_completed(instant)
    assert not timeline.pending(), [i.file_name for i in timeline.pending()]
    assert instant in timeline.rolled_back_instants()
    leftovers = [p for p in Path(path).rglob(f"*{instant}*")
                 if ".hoodie" not in p.relative_to(path).parts]
    assert leftovers == []


def data_rows(table: pa.Table, columns: list[str]) -> list[tuple[Any, ...]]:
    """The rows of ``columns`` (sorted), each value as Python."""
    return sorted(tuple(r[c] for c in columns) for r in table.select(columns).to_pylist())


def assert_readers_agree(spark: Any, path: str, columns: list[str],
                         expected: list[tuple[Any, ...]]) -> None:
    """hudisql, Spark and the hudi reader give the table ``columns`` and the ``expected`` rows."""
    ours = HudiTable.open(path).read()
    assert [c for c in ours.column_names if c not in META_COLUMNS] == columns
    assert data_rows(ours, columns) == expected
    theirs = pa.Table.from_batches(hudi.HudiTable(path).read())
    assert [c for c in theirs.column_names if c not in META_COLUMNS] == columns
    assert data_rows(theirs, columns) == expected
    df = spark.read.format("hudi").load(path)
    assert [c for c in df.columns if c not in META_COLUMNS] == columns
    assert sorted(tuple(r[c] for c in columns) for r in df.collect()) == expected


def expected_rows(writers: list[tuple[Writer, bool]], columns: list[str],
                  seeded: bool) -> list[tuple[Any, ...]]:
    """The rows the committed writers (flag True) leave, nulls where a writer lacked a column."""
    tables = [rows("s", 2, [])] if seeded else []
    tables += [rows(w.prefix, w.n, w.extra) for w, committed in writers if committed]
    out = []
    for table in tables:
        for record in table.to_pylist():
            out.append(tuple(record.get(c) for c in columns))
    return sorted(out)


# -- the eight scenarios with two WriteClients ------------------------------------------------

#: case -> (table seeded with S1?, A's extra columns, B's extra columns, B's committed
#: columns or None when B is refused)
SCENARIOS: dict[int, tuple[bool, list[str], list[str], list[str] | None]] = {
    2: (False, [], [], BASE_COLUMNS),
    3: (False, [], ["x"], None),
    4: (True, [], [], BASE_COLUMNS),
    5: (True, [], ["x"], [*BASE_COLUMNS, "x"]),
    6: (True, ["x"], [], [*BASE_COLUMNS, "x"]),
    7: (True, ["x"], ["x"], [*BASE_COLUMNS, "x"]),
    8: (True, ["x"], ["y"], None),
}


@pytest.mark.parametrize("table_type", TABLE_TYPES)
@pytest.mark.parametrize("case", sorted(SCENARIOS))
def test_scenario(spark: Any, tmp_path: Path, table_type: str, case: int) -> None:
    seeded, a_extra, b_extra, committed = SCENARIOS[case]
    path = new_table(tmp_path, table_type, seeded)
    a, b = Writer("a", a_extra), Writer("b", b_extra)
    result = race(path, lambda hook: a.run(path, hook), lambda hook: b.run(path, hook))
    assert [e for e, _ in result.b_steps][:2] == ["requested", "inflight"]
    # A opened first, and committed while B was open.
    assert result.b_instant is not None and result.a_instant < result.b_instant
    assert commit_columns(path, result.a_instant) == [*BASE_COLUMNS, *a_extra]
    if committed is None:
        error = result.b_error
        assert isinstance(error, ConcurrentSchemaEvolutionError), error
        message = str(error)
        assert f"table trips: write {result.b_instant}" in message
        assert f"committed by {result.a_instant}" in message
        assert f"RFC-82 case {case}" in message
        assert f"columns added: {', '.join(b_extra)}" in message
        if a_extra:
            assert f"columns removed: {', '.join(a_extra)}" in message
        assert "retry the write against the new table schema" in message
        assert_rolled_back(path, result.b_instant)
        columns = [*BASE_COLUMNS, *a_extra]
    else:
        assert result.b_error is None, result.b_error
        assert commit_columns(path, result.b_instant) == committed
        columns = committed
    assert [c for c in HudiTable.open(path).schema.names if c not in META_COLUMNS] == columns
    expected = expected_rows([(a, True), (b, committed is not None)], columns, seeded)
    assert_readers_agree(spark, path, columns, expected)


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_scenario_1(spark: Any, tmp_path: Path, table_type: str) -> None:
    # A commits first on an empty table while B is open: no table schema at A's validation
    # (case 1), so A records its own writer schema, an evolved one here. B started on the
    # empty table too, writes the create schema and validates against A's: case 3.
    path = new_table(tmp_path, table_type, seeded=False)
    a, b = Writer("a", ["x"]), Writer("b", [])
    result = race(path, lambda hook: a.run(path, hook), lambda hook: b.run(path, hook))
    columns = [*BASE_COLUMNS, "x"]
    assert commit_columns(path, result.a_instant) == columns
    assert isinstance(result.b_error, ConcurrentSchemaEvolutionError)
    assert "RFC-82 case 3" in str(result.b_error)
    assert "columns removed: x" in str(result.b_error)
    assert_rolled_back(path, str(result.b_instant))
    assert_readers_agree(spark, path, columns, expected_rows([(a, True)], columns, False))


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_case_5_completing_after_a_later_instant_is_refused(tmp_path: Path,
                                                           table_type: str) -> None:
    # B opened first (older instant time), A committed S1 meanwhile: by the table it is
    # case 5, but version-6 readers take the schema of the latest instant time (A's), so
    # B's new column would be hidden. B is refused and rolled back instead.
    path = new_table(tmp_path, table_type, seeded=True)
    a, b = Writer("a", []), Writer("b", ["x"])
    result = race(path, lambda hook: a.run(path, hook), lambda hook: b.run(path, hook),
                  a_opens_first=False)
    assert result.b_instant is not None and result.b_instant < result.a_instant
    assert isinstance(result.b_error, ConcurrentSchemaEvolutionError)
    message = str(result.b_error)
    assert "RFC-82 case 5: columns added: x" in message
    assert f"{result.a_instant}, a later instant, completed meanwhile" in message
    assert_rolled_back(path, result.b_instant)
    assert [c for c in HudiTable.open(path).schema.names if c not in META_COLUMNS] == S1.names


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_case_6_completing_after_a_later_instant_records_the_evolved_schema(
        spark: Any, tmp_path: Path, table_type: str) -> None:
    path = new_table(tmp_path, table_type, seeded=True)
    a, b = Writer("a", ["x"]), Writer("b", [])
    result = race(path, lambda hook: a.run(path, hook), lambda hook: b.run(path, hook),
                  a_opens_first=False)
    assert result.b_error is None
    columns = [*BASE_COLUMNS, "x"]
    assert commit_columns(path, str(result.b_instant)) == columns
    assert_readers_agree(spark, path, columns,
                         expected_rows([(a, True), (b, True)], columns, seeded=True))


def test_scenario_1_single_writer_records_its_schema(tmp_path: Path) -> None:
    path = new_table(tmp_path, "MERGE_ON_READ", seeded=False)
    instant = Writer("a", ["x"]).run(path, lambda e, d: None)
    assert commit_columns(path, instant) == [*BASE_COLUMNS, "x"]


# -- the opt-in additive mode ----------------------------------------------------------------


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_additive_mode_accepts_case_8_when_the_writer_keeps_the_new_columns(
        spark: Any, tmp_path: Path, table_type: str) -> None:
    path = new_table(tmp_path, table_type, seeded=True)
    a = Writer("a", ["x"])
    b = Writer("b", ["x", "y"], {ADDITIVE_RESOLUTION: "true"})
    result = race(path, lambda hook: a.run(path, hook), lambda hook: b.run(path, hook))
    assert result.b_error is None
    columns = [*BASE_COLUMNS, "x", "y"]
    assert commit_columns(path, str(result.b_instant)) == columns
    assert_readers_agree(spark, path, columns,
                         expected_rows([(a, True), (b, True)], columns, seeded=True))


def test_without_additive_mode_the_same_race_is_refused(tmp_path: Path) -> None:
    path = new_table(tmp_path, "MERGE_ON_READ", seeded=True)
    a, b = Writer("a", ["x"]), Writer("b", ["x", "y"])
    result = race(path, lambda hook: a.run(path, hook), lambda hook: b.run(path, hook))
    assert isinstance(result.b_error, ConcurrentSchemaEvolutionError)
    assert "RFC-82 case 8" in str(result.b_error)
    assert_rolled_back(path, str(result.b_instant))


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_additive_mode_still_refuses_a_writer_that_would_drop_the_other_column(
        tmp_path: Path, table_type: str) -> None:
    path = new_table(tmp_path, table_type, seeded=True)
    a = Writer("a", ["x"])
    b = Writer("b", ["y"], {ADDITIVE_RESOLUTION: "true"})
    result = race(path, lambda hook: a.run(path, hook), lambda hook: b.run(path, hook))
    assert isinstance(result.b_error, ConcurrentSchemaEvolutionError)
    assert "columns removed: x" in str(result.b_error)
    assert_rolled_back(path, str(result.b_instant))
    assert commit_columns(path, result.a_instant) == [*BASE_COLUMNS, "x"]


def test_additive_mode_accepts_case_3_when_the_writer_extends_the_first_schema(
        tmp_path: Path) -> None:
    path = new_table(tmp_path, "COPY_ON_WRITE", seeded=False)
    a = Writer("a", [])
    b = Writer("b", ["x"], {ADDITIVE_RESOLUTION: "true"})
    result = race(path, lambda hook: a.run(path, hook), lambda hook: b.run(path, hook))
    assert result.b_error is None
    assert commit_columns(path, str(result.b_instant)) == [*BASE_COLUMNS, "x"]


def test_disabling_the_check_lets_the_last_commit_win(tmp_path: Path) -> None:
    # What RFC-82 prevents: with the check off, case 8 commits and x vanishes from the schema.
    path = new_table(tmp_path, "MERGE_ON_READ", seeded=True)
    a = Writer("a", ["x"])
    b = Writer("b", ["y"], {CONFLICT_RESOLUTION_ENABLE: "false"})
    result = race(path, lambda hook: a.run(path, hook), lambda hook: b.run(path, hook))
    assert result.b_error is None
    assert commit_columns(path, str(result.b_instant)) == [*BASE_COLUMNS, "y"]


# -- refinements -----------------------------------------------------------------------------


def _evolved_table(tmp_path: Path) -> tuple[str, TableSchema, str]:
    """A table whose schema went S1 -> S1+x after ``start`` was taken; (path, start, S1)."""
    path = new_table(tmp_path, "MERGE_ON_READ", seeded=True)
    table = HudiTable.open(path)
    start = TableSchema.of(table.timeline)
    assert start.schema is not None
    Writer("a", ["x"]).run(path, lambda e, d: None)
    s3 = json.loads(start.schema)
    s3["fields"].append({"name": "y", "type": ["null", "string"], "default": None})
    return path, start, json.dumps(s3)


@pytest.mark.parametrize(("operation", "action"), [("COMPACT", "compaction"),
                                                   ("LOG_COMPACT", "logcompaction"),
                                                   ("CLUSTER", "replacecommit"),
                                                   ("INDEX", "indexing")])
def test_table_services_skip_the_check(tmp_path: Path, operation: str, action: str) -> None:
    path, start, s3 = _evolved_table(tmp_path)
    metadata = CommitMetadata(operation_type=operation)
    resolution = resolve_commit_schema(HudiTable.open(path), metadata, "20990101000000000",
                                       s3, start, {}, action)
    assert resolution.case is None and resolution.reason == "table service"
    assert metadata.schema == s3
    # The same schemas from a data write are case 8.
    with pytest.raises(ConcurrentSchemaEvolutionError, match="case 8"):
        resolve_commit_schema(HudiTable.open(path), CommitMetadata(operation_type="UPSERT"),
                              "20990101000000000", s3, start, {}, "deltacommit")


def test_a_writer_without_a_schema_takes_the_tables(tmp_path: Path) -> None:
    from hudisql.txn.transaction import Transaction

    path = new_table(tmp_path, "MERGE_ON_READ", seeded=True)
    a = Writer("a", ["x"])

    def schema_less(hook: Callable[[str, str], None]) -> str:
        txn = Transaction(HudiTable.open(path), {}, "DELETE", on_step=hook)
        txn.start()
        return txn.commit([], "").timestamp

    result = race(path, lambda hook: a.run(path, hook), schema_less, a_opens_first=False,
                  b_validates=("written",))
    assert result.b_error is None
    assert commit_columns(path, str(result.b_instant)) == [*BASE_COLUMNS, "x"]


# -- the decision table itself ---------------------------------------------------------------


def _avro(*extra: str) -> str:
    fields = [{"name": "uuid", "type": ["null", "string"], "default": None}]
    fields += [{"name": n, "type": ["null", "string"], "default": None} for n in extra]
    return json.dumps({"type": "record", "name": "t_record", "fields": fields})


S_1, S_2, S_3 = _avro(), _avro("a"), _avro("b")
NONE = TableSchema()


@pytest.mark.parametrize(("case", "start", "validation", "writer", "recorded"), [
    (1, NONE, NONE, S_1, S_1),
    (2, NONE, TableSchema("1", S_1), S_1, S_1),
    (4, TableSchema("1", S_1), TableSchema("1", S_1), S_1, S_1),
    (5, TableSchema("1", S_1), TableSchema("2", S_1), S_2, S_2),
    (6, TableSchema("1", S_1), TableSchema("2", S_2), S_1, S_2),
    (7, TableSchema("1", S_1), TableSchema("2", S_2), S_2, S_2),
])
def test_decision_table_accepts(case: int, start: TableSchema, validation: TableSchema,
                                writer: str, recorded: str) -> None:
    resolution = resolve_schema(table_name="t", instant="9", writer_schema=writer,
                                at_start=start, at_validation=validation)
    assert (resolution.case, resolution.schema) == (case, recorded)


@pytest.mark.parametrize(("case", "start", "validation", "writer"), [
    (3, NONE, TableSchema("2", S_2), S_3),
    (8, TableSchema("1", S_1), TableSchema("2", S_2), S_3),
])
def test_decision_table_refuses(case: int, start: TableSchema, validation: TableSchema,
                                writer: str) -> None:
    with pytest.raises(ConcurrentSchemaEvolutionError) as caught:
        resolve_schema(table_name="t", instant="9", writer_schema=writer, at_start=start,
                       at_validation=validation)
    message = str(caught.value)
    assert f"case {case}" in message and "write 9" in message and "committed by 2" in message
    assert "columns added: b; columns removed: a" in message


def test_schemas_compare_by_columns_not_by_names_or_docs() -> None:
    renamed = json.loads(S_2)
    renamed.update(name="other_record", namespace="x.y", doc="d")
    renamed["fields"][1]["doc"] = "a column"
    resolution = resolve_schema(table_name="t", instant="9", writer_schema=json.dumps(renamed),
                                at_start=TableSchema("1", S_1),
                                at_validation=TableSchema("2", S_2))
    assert resolution.case == 7


def test_schema_diff_names_added_removed_and_retyped_columns() -> None:
    old = _avro("a", "b")
    new = json.loads(_avro("b", "c"))
    new["fields"][1]["type"] = ["null", "long"]
    diff = schema_diff(old, json.dumps(new))
    assert diff == SchemaDiff(added=("c",), removed=("a",), retyped=(("b", "string", "long"),))
    assert diff.describe() == ("columns added: c; columns removed: a; "
                               "columns retyped: b string -> long")
    assert not diff.is_additive
    assert schema_diff(_avro("a"), _avro("a", "c")).is_additive


def test_additive_mode_refuses_a_retyped_column() -> None:
    retyped = json.loads(_avro("a", "c"))
    retyped["fields"][1]["type"] = ["null", "long"]
    with pytest.raises(ConcurrentSchemaEvolutionError, match="columns retyped: a string -> long"):
        resolve_schema(table_name="t", instant="9", writer_schema=json.dumps(retyped),
                       at_start=TableSchema("1", S_1), at_validation=TableSchema("2", S_2),
                       options={ADDITIVE_RESOLUTION: "true"})
