"""The timeline as a picture: every instant, its action and state, in PNG and HTML, no Spark.

The table is written by the pure-Python writer: two commits, a write that crashed and was
rolled back (its instant files are gone; the rollback names it), a write left inflight and
one left requested; its metadata table (a Hudi table at ``.hoodie/metadata``) has commits
of its own. The chart, the HTML page, the PNG and ``hudisql timeline`` must all show them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from hudisql.catalog import SqlCatalog
from hudisql.errors import HudiSqlError
from hudisql.sql.inspect import TableInspector
from hudisql.sql.timeline_chart import ChartInstant, timeline_chart
from hudisql.table.format.instant import Action
from hudisql.table.table import HudiTable
from hudisql.txn.writer import WriteClient, create_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("city", pa.string())])


class Crash(Exception):
    """The failure injected into one write."""


def crash_on_file(event: str, detail: str) -> None:
    if event == "file":
        raise Crash(detail)


def rows(prefix: str, n: int) -> pa.Table:
    return pa.table({"id": [f"{prefix}{i}" for i in range(n)], "ts": [1] * n,
                     "city": ["sf", "la"] * (n // 2) + ["sf"] * (n % 2)}, schema=SCHEMA)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A table with every state on its timeline; returns instant time -> expected state."""
    path = str(tmp_path_factory.mktemp("chart") / "trips")
    create_table(path, "trips", SCHEMA, ["id"], ["city"], "ts", "MERGE_ON_READ")
    client = WriteClient(HudiTable.open(path))
    states = {client.insert(rows("a", 4)).instant_time: "completed",
              client.upsert(rows("a", 2)).instant_time: "completed"}
    client.on_step = crash_on_file
    with pytest.raises(Crash):
        client.upsert(rows("b", 2))
    client.on_step = lambda event, detail: None
    failed = client.table.reload().timeline.pending()[0].timestamp
    states[failed] = "rolled back"
    states[client.rollback(failed)] = "completed"
    timeline = HudiTable.open(path).timeline
    inflight = timeline.create_requested(Action.DELTACOMMIT)
    timeline.transition_to_inflight(inflight)
    states[inflight.timestamp] = "inflight"
    states[HudiTable.open(path).timeline.create_requested(Action.DELTACOMMIT).timestamp] = (
        "requested")
    metadata = f"{path}/.hoodie/metadata"
    create_table(metadata, "trips_metadata", SCHEMA, ["id"], (), "ts", "MERGE_ON_READ")
    meta_client = WriteClient(HudiTable.open(metadata))
    states["metadata:" + meta_client.insert(rows("m", 2)).instant_time] = "completed"
    states["metadata:" + meta_client.upsert(rows("m", 1)).instant_time] = "completed"
    states["path"] = path
    return states


def expected(history: dict[str, str]) -> dict[tuple[str, str], str]:
    """(table, instant time) -> state."""
    return {(("metadata", k.split(":")[1]) if k.startswith("metadata:") else ("data", k)): v
            for k, v in history.items() if k != "path"}


def drawn(instants: list[ChartInstant]) -> dict[tuple[str, str], str]:
    return {(i.table, i.instant_time): i.state for i in instants}


def test_the_chart_has_every_instant_in_its_state(history: dict[str, str]) -> None:
    chart = timeline_chart(history["path"])
    assert drawn(chart.instants) == expected(history)
    by_time = {(i.table, i.instant_time): i for i in chart.instants}
    rolled = next(i for i in chart.instants if i.state == "rolled back")
    assert rolled.action == "deltacommit" and rolled.note is not None
    assert rolled.note.startswith("rolled back by ") and rolled.end is not None
    rollback = next(i for i in chart.instants if i.action == "rollback")
    assert rollback.note == f"rolls back {rolled.instant_time}"
    assert all(i.end is None for i in chart.instants if i.state in ("inflight", "requested"))
    assert all(by_time[k].end is not None and by_time[k].end >= by_time[k].start  # type: ignore[operator]
               for k, state in expected(history).items() if state == "completed")
    # The figure holds one marker per instant, named by table and time, on labelled lanes.
    axes = chart.figure.axes[0]
    gids = {line.get_gid() for line in axes.lines}
    assert gids == {f"{t}:{ts}" for t, ts in expected(history)}
    lanes = [label.get_text() for label in axes.get_yticklabels()]
    assert lanes == ["data · deltacommit", "data · rollback", "metadata · deltacommit"]
    texts = {t.get_text() for t in axes.texts}
    assert {ts for _, ts in expected(history)} <= texts
    assert [t.get_text() for t in chart.figure.legends[0].get_texts()] == [
        "requested", "inflight", "completed", "rolled back"]


def test_png_and_html_files(history: dict[str, str], tmp_path: Path) -> None:
    chart = TableInspector(history["path"], "trips").timeline_chart()
    png = chart.save(tmp_path / "timeline.png")
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and png.stat().st_size > 10_000
    assert chart._repr_png_().startswith(b"\x89PNG")
    page = chart.save(tmp_path / "timeline.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert "<title>timeline of trips</title>" in page
    svg = page[page.index("<svg"):page.index("</svg>")]
    for (table, instant), state in expected(history).items():
        assert f'id="{table}:{instant}"' in svg  # the marker, as an SVG element id
        assert f"<td>{table}</td><td>{instant}</td>" in page
        assert f'<tr class="{state.replace(" ", "-")}">' in page
    with pytest.raises(HudiSqlError, match=r"name a \.png or \.html file"):
        chart.save(tmp_path / "timeline.pdf")


def test_inspect_timeline_is_show_timeline_as_arrow(history: dict[str, str]) -> None:
    table = TableInspector(history["path"]).timeline()
    assert table.schema.field("requested_time").type == pa.timestamp("us", tz="UTC")
    times = table.column("instant_time").to_pylist()
    data = sorted(ts for (t, ts), state in expected(history).items()
                  if t == "data" and state != "rolled back")
    assert times == sorted(data, reverse=True)  # newest first; the rolled-back one is gone
    assert TableInspector(history["path"]).timeline(limit=2).num_rows == 2


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hudisql.cli", "timeline", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_shell_command_by_path_and_by_catalog_name(history: dict[str, str],
                                                   tmp_path: Path) -> None:
    out = tmp_path / "by_path.html"
    done = run_cli(history["path"], "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"{out}: {len(expected(history))} instants" in done.stderr
    page = out.read_text(encoding="utf-8")
    assert all(instant in page for _, instant in expected(history))
    url = f"sqlite:///{tmp_path}/catalog.db"
    catalog = SqlCatalog("cli", uri=url, warehouse=str(tmp_path / "wh"))
    catalog.create_database("sales")
    catalog.register_table("sales.trips", history["path"])
    catalog.close()
    png = tmp_path / "by_name.png"
    done = run_cli("sales.trips", "--out", str(png), "--catalog", url)
    assert done.returncode == 0, done.stderr
    assert png.read_bytes().startswith(b"\x89PNG")
    missing = run_cli("sales.nope", "--out", str(png), "--catalog", url)
    assert missing.returncode == 1 and "sales.nope" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad = run_cli(history["path"], "--out", str(tmp_path / "t.gif"))
    assert bad.returncode == 1 and "name a .png or .html file" in bad.stderr
