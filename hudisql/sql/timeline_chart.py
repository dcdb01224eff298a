"""The timeline as a picture: instants on a time axis, one lane per table and action.

Each instant is a bar from its instant time (when it was requested) to when it completed,
coloured by state: requested, inflight, completed, or rolled back (named by a rollback,
whether or not its files are still on the timeline). The metadata table's instants get
lanes of their own when the table has one (``.hoodie/metadata``). Drawn with matplotlib
(no pyplot state, nothing shown on screen): :meth:`TimelineChart.save` writes a PNG, or
an HTML page with the chart as SVG (its text kept as text) and a table of the instants.
Nothing here needs Spark.
"""

from __future__ import annotations

import html
import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import matplotlib
from matplotlib import dates as mdates
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from hudisql.errors import HudiSqlError, TableNotFoundError
from hudisql.sql.timeline import rollback_links, rollback_targets, timeline_rows
from hudisql.table.format.instant import Action, parse_instant_time
from hudisql.table.format.timeline import Timeline
from hudisql.table.table import HudiTable

#: The states a chart shows, in legend order, with their colours.
STATE_COLOURS: dict[str, str] = {
    "requested": "#9e9e9e",
    "inflight": "#ef8f00",
    "completed": "#2e7d32",
    "rolled back": "#c62828",
}
#: Where a table keeps its metadata table, relative to its base path.
METADATA_TABLE = ".hoodie/metadata"
#: More instants than this: the chart leaves out the instant-time labels (the HTML table
#: still lists every instant).
MAX_LABELS = 40
SUFFIXES = (".png", ".html")


@dataclass(frozen=True)
class ChartInstant:
    """One instant as the chart draws it.

    ``table`` is ``data`` or ``metadata``; ``state`` one of :data:`STATE_COLOURS`;
    ``end`` when it completed (or was rolled back), None while it is pending.
    """

    table: str
    instant_time: str
    action: str
    state: str
    start: datetime
    end: datetime | None
    note: str | None = None


def _rolled_back_actions(timeline: Timeline) -> dict[str, str]:
    """Rolled-back instant time -> its action, as rollback plans and metadata name them."""
    actions: dict[str, str] = {}
    for instant in timeline.instants:
        if instant.action == Action.ROLLBACK:
            named = rollback_targets(timeline, instant).items()
            actions.update((time, action) for time, action in named if action)
    return actions


def table_instants(table: HudiTable, label: str = "data") -> list[ChartInstant]:
    """The instants of ``table``'s active timeline as the chart draws them, oldest first."""
    rows = timeline_rows(table)
    rolls, rolled_by = rollback_links(table.timeline)
    ended = {r.instant_time: r.completed_time for r in rows}
    out = []
    for row in rows:
        # An instant time that is no date (a version 8/9 metadata table's initialising
        # instants, 00000000000000010...) starts when its files say it did.
        start = row.requested_time or row.inflight_time or row.completed_time
        if start is None:
            continue  # a pending instant named by no date and no file time: nowhere to draw
        state, end = row.state.lower(), row.completed_time
        if row.instant_time in rolled_by:
            state, end = "rolled back", ended.get(rolled_by[row.instant_time]) or end
        out.append(ChartInstant(label, row.instant_time, row.action, state, start, end,
                                row.rollback_info))
    # Instants a rollback removed from the timeline are drawn from what the rollback says.
    shown = {r.instant_time for r in rows}
    actions = _rolled_back_actions(table.timeline)
    for rollback, targets in rolls.items():
        for target in targets:
            if target in shown:
                continue
            try:
                start = parse_instant_time(target)
            except ValueError:
                continue
            shown.add(target)
            out.append(ChartInstant(label, target, actions.get(target, "unknown"),
                                    "rolled back", start, ended.get(rollback),
                                    f"rolled back by {rollback}"))
    return sorted(out, key=lambda i: i.instant_time)


def metadata_table(table: HudiTable) -> HudiTable | None:
    """The metadata table of ``table`` (``.hoodie/metadata``), or None when it has none."""
    if not table.storage.exists(f"{METADATA_TABLE}/.hoodie/hoodie.properties"):
        return None
    try:
        return HudiTable.open(f"{table.base_path.rstrip('/')}/{METADATA_TABLE}")
    except TableNotFoundError:
        return None


def _lanes(instants: Iterable[ChartInstant]) -> list[tuple[str, str]]:
    """(table, action) lanes, the data table's first, actions in alphabetical order."""
    order = {"data": 0, "metadata": 1}
    return sorted({(i.table, i.action) for i in instants},
                  key=lambda lane: (order.get(lane[0], 2), lane[0], lane[1]))


def _date_number(moment: datetime) -> float:
    """``moment`` on matplotlib's date axis."""
    return float(mdates.date2num(moment))  # type: ignore[no-untyped-call]


def timeline_figure(instants: list[ChartInstant], title: str) -> Figure:
    """A matplotlib Figure of ``instants``: lanes by table and action, colours by state.

    Each instant's marker carries ``gid`` ``<table>:<instant time>`` (checked by tests and
    kept as an element id in SVG output).
    """
    lanes = _lanes(instants)
    figure = Figure(figsize=(11, 1.6 + 0.5 * max(1, len(lanes))), layout="constrained")
    axes = figure.add_subplot()
    index = {lane: n for n, lane in enumerate(lanes)}
    labelled = len(instants) <= MAX_LABELS
    for instant in instants:
        y = index[(instant.table, instant.action)]
        colour = STATE_COLOURS.get(instant.state, "#000000")
        x0 = _date_number(instant.start)
        x1 = _date_number(instant.end) if instant.end is not None else x0
        if x1 > x0:
            axes.hlines(y, x0, x1, colors=colour, linewidth=9, alpha=0.6)
        axes.plot([x0], [y], marker="o", markersize=8, color=colour, linestyle="none",
                  gid=f"{instant.table}:{instant.instant_time}")
        if labelled:
            axes.annotate(instant.instant_time, (x0, y), xytext=(0, 9),
                          textcoords="offset points", fontsize=7, rotation=25,
                          color="#333333")
    axes.set_yticks(range(len(lanes)), [f"{table} · {action}" for table, action in lanes])
    axes.set_ylim(-0.7, len(lanes) - 0.05)
    axes.xaxis_date()
    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(
        mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    axes.set_xlabel("time (UTC)")
    axes.grid(axis="x", alpha=0.3)
    if instants:
        axes.margins(x=0.05)
    handles = [Line2D([0], [0], marker="o", color=c, linestyle="none", label=s)
               for s, c in STATE_COLOURS.items()]
    figure.legend(handles=handles, loc="outside upper right", ncols=len(handles), fontsize=8,
                  frameon=False)
    axes.set_title(title, loc="left", fontsize=11)
    return figure


@dataclass
class TimelineChart:
    """A table's timeline as a picture; shown inline in notebooks (PNG), saved as PNG or HTML."""

    title: str
    instants: list[ChartInstant]
    figure: Figure

    def png(self) -> bytes:
        """The chart as PNG bytes."""
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=110)
        return buffer.getvalue()

    def svg(self) -> str:
        """The chart as SVG text, its labels kept as text (searchable, selectable)."""
        buffer = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "none"}):
            self.figure.savefig(buffer, format="svg")
        text = buffer.getvalue()
        return text[text.index("<svg"):]

    def to_html(self) -> str:
        """A standalone HTML page: the chart as inline SVG and a table of every instant."""
        def cell(value: object) -> str:
            shown = "" if value is None else (
                value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if isinstance(value, datetime)
                else str(value))
            return f"<td>{html.escape(shown)}</td>"

        rows = "".join(
            f'<tr class="{html.escape(i.state.replace(" ", "-"))}">'
            + "".join(cell(v) for v in (i.table, i.instant_time, i.action, i.state, i.start,
                                        i.end, i.note)) + "</tr>"
            for i in self.instants)
        head = "".join(f"<th>{h}</th>" for h in
                       ("table", "instant", "action", "state", "requested", "ended", "note"))
        return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(self.title)}</title><style>"
                "body{font-family:sans-serif}table{border-collapse:collapse}"
                "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
                ".rolled-back{color:#c62828}</style></head><body>"
                f"<h2>{html.escape(self.title)}</h2>{self.svg()}"
                f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
                "</body></html>\n")

    def save(self, path: str | Path) -> Path:
        """Write the chart to ``path`` (``.png`` or ``.html``); returns the path.

        Raises:
            HudiSqlError: another file suffix.
        """
        target = Path(path)
        suffix = target.suffix.lower()
        if suffix not in SUFFIXES:
            raise HudiSqlError(f"cannot write a timeline chart to {target}: name a .png or "
                               ".html file, e.g. --out timeline.png")
        if suffix == ".png":
            target.write_bytes(self.png())
        else:
            target.write_text(self.to_html(), encoding="utf-8")
        return target

    def _repr_png_(self) -> bytes:
        return self.png()

    def __repr__(self) -> str:
        return f"TimelineChart({self.title!r}, {len(self.instants)} instants)"


def timeline_chart(table: HudiTable | str, title: str | None = None) -> TimelineChart:
    """The timeline chart of ``table`` (a HudiTable or a base path) and its metadata table.

    Raises:
        TableNotFoundError: the path holds no Hudi table.
        CorruptTableError: a completed write's commit metadata is malformed.
    """
    core = HudiTable.open(table) if isinstance(table, str) else table
    instants = table_instants(core)
    metadata = metadata_table(core)
    if metadata is not None:
        instants += table_instants(metadata, "metadata")
    shown = title or f"timeline of {core.name}"
    return TimelineChart(shown, instants, timeline_figure(instants, shown))
