"""The startup timeline picture: a Report -> one self-contained HTML page, or one SVG drawing.

Pure functions, no I/O: ``render_html(report)`` and ``render_svg(report)``. The page holds inline
SVG and CSS only (no script, no font, nothing fetched), so it can be attached to an issue as is.

What it draws:

* a Gantt chart, one row for the server (every phase, as the report's phase spans) and one per
  rank (its own spans), coloured by phase, durations written on the bars that are wide enough,
  under a time axis in wall-clock time (top) and seconds since launch (bottom);
* the failure: a marker at its time on the failing rank's row (or the server row), its cause and
  line; its consequences as lesser markers;
* free GPU memory per rank at each phase boundary, a step chart on the same time axis, with the
  memory-pressure threshold (``LOW_CAPTURE_MEMORY_GB``);
* around it (HTML): the failure's message and hint, a phase table, warnings and key config values.

Above ``MAX_RANK_ROWS`` ranks, ranks whose phases are identical share a row; if there are still
too many rows, the ranks are summarised as earliest / median / latest per phase (the failing rank
keeps its own row), and the picture says so. Phases without timestamps are drawn dashed where
their neighbours put them, and named; a run with no timestamp at all is drawn in phase order,
not to scale.

Time between phases that no phase accounts for is drawn on the server row as a hatched grey
stretch with its duration, and listed in the phase table with its first and last line.
"""

from __future__ import annotations

import html
import math
import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from logphase.faces.wording import plural
from logphase.pipeline.phases import PHASE_ORDER, Phase
from logphase.pipeline.report import CONFIG_KEYS, LOW_CAPTURE_MEMORY_GB, PhaseReport, Report, UnaccountedReport, rank_sort_key

# above this many ranks, rows are grouped (identical phases) or summarised (min / median / max)
MAX_RANK_ROWS = 16
MAX_ROWS = 18

PHASE_COLORS: dict[Phase, str] = {
    Phase.LAUNCH: "#8d8d8d",
    Phase.DISTRIBUTED_INIT: "#9c6fb6",
    Phase.WEIGHT_LOADING: "#3f73b5",
    Phase.MEMORY_POOL: "#33a3a0",
    Phase.CUDA_GRAPH_CAPTURE: "#ef8a2e",
    Phase.WARMUP: "#e3c437",
    Phase.READY: "#3a9a48",
}
_DARK_TEXT = {Phase.MEMORY_POOL, Phase.CUDA_GRAPH_CAPTURE, Phase.WARMUP}
FAILURE_COLOR = "#d01c1c"
ECHO_COLOR = "#b45309"
READY_COLOR = "#2e8540"
FONT = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"

WIDTH = 1320
LABEL_W = 210
RIGHT_PAD = 34
PLOT_X = LABEL_W
PLOT_W = WIDTH - LABEL_W - RIGHT_PAD
ROW_H = 24
BAR_H = 16
LANE_H = BAR_H + 3
CHAR_W = 6.6  # average advance of an 11 px sans-serif glyph: enough to decide whether a label fits

# the report's key configuration, less what the picture has no room for
CONFIG_SHOWN = tuple(k for k in CONFIG_KEYS if k not in ("node_rank", "cuda_graph_bs", "host"))
SCHEDULER_SHOWN = ("max_total_num_tokens", "max_running_requests", "context_len", "available_gpu_mem")


# -- formatting ------------------------------------------------------------------------------------


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _fmt_offset(seconds: float, span: float) -> str:
    if span <= 180:
        return f"+{seconds:.0f} s"
    if span >= 3 * 3600 and seconds % 3600 == 0:
        return f"+{seconds / 3600:.0f} h"
    if seconds % 60 == 0:
        return f"+{seconds / 60:.0f} min"
    return f"+{int(seconds // 60)}:{int(seconds % 60):02d}"


def _parse_ts(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts)
    except ValueError:
        return None


def _text_w(text: str, size: float = 11) -> float:
    return len(text) * CHAR_W * size / 11


def _n(value: float) -> str:
    """A coordinate, short."""
    return f"{value:.1f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def compress_ranks(ranks: list[str], limit: int = 30) -> str:
    """'TP0–TP7, TP9' for consecutive runs of a rank list; cut to ``limit`` characters."""
    if not ranks:
        return ""
    parts: list[str] = []
    parsed = [(r, re.fullmatch(r"([A-Za-z]+)(\d+)", r)) for r in ranks]
    i = 0
    while i < len(parsed):
        r, m = parsed[i]
        j = i
        if m:
            while j + 1 < len(parsed):
                nxt = parsed[j + 1][1]
                cur = parsed[j][1]
                if nxt and cur and nxt.group(1) == m.group(1) and int(nxt.group(2)) == int(cur.group(2)) + 1:
                    j += 1
                else:
                    break
        parts.append(r if j == i else (f"{r}, {parsed[j][0]}" if j == i + 1 else f"{r}–{parsed[j][0]}"))
        i = j + 1
    text = ", ".join(parts)
    if len(text) > limit:
        text = text[: limit - 1].rsplit(",", 1)[0] + ", …"
    return text


# -- the model of the picture ----------------------------------------------------------------------


@dataclass
class Bar:
    phase: Phase
    x0: float | None  # seconds since launch (ordinal position when the run has no timestamps)
    x1: float | None
    duration: float | None
    kind: str = "closed"  # closed, open (still running), cut (interrupted by the failure), failed, unknown
    title: str = ""
    lane: int = 0  # phases that overlap in time (the server row of ranks out of step) go in lanes


@dataclass
class Row:
    label: str
    kind: str  # server, rank, group, summary
    ranks: list[str] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    title: str = ""
    lanes: int = 1

    @property
    def height(self) -> float:
        return ROW_H + (self.lanes - 1) * LANE_H


@dataclass
class Mark:
    x: float
    row: int
    title: str


@dataclass
class Timeline:
    report: Report
    t0: datetime | None
    span: float
    ordinal: bool
    rows: list[Row]
    notes: list[str]
    failure: Mark | None
    echoes: list[Mark]
    ready_x: float | None
    memory: dict[str, list[tuple[float, float, str]]]  # rank -> [(x, GB, boundary)]
    memory_unplaced: list[str]
    gaps: list[tuple[float, float, UnaccountedReport]] = field(default_factory=list)  # (x0, x1, gap)


def _seconds(t0: datetime | None, ts: str | None) -> float | None:
    when = _parse_ts(ts)
    if when is None or t0 is None:
        return None
    return (when - t0).total_seconds()


def build_timeline(report: Report) -> Timeline:
    stamps: list[datetime] = []
    for p in report.phases:
        for ts in (p.start, p.end, *(t for s in p.ranks.values() for t in (s.start, s.end))):
            when = _parse_ts(ts)
            if when is not None:
                stamps.append(when)
    t0 = min(stamps) if stamps else None
    ordinal = t0 is None
    notes: list[str] = []
    failure = report.failure

    def sec(ts: str | None) -> float | None:
        return _seconds(t0, ts)

    # when the failure struck: its own line's time, else where the report ends startup
    tf: float | None = None
    if failure is not None and not ordinal:
        tf = sec(failure.ts)
        if tf is None and report.total_startup_s is not None:
            launch = next((p for p in report.phases if p.name is Phase.LAUNCH and p.start), None)
            if launch is not None:
                tf = (sec(launch.start) or 0.0) + report.total_startup_s
        if tf is None:
            failing = next((p for p in report.phases if p.name == failure.phase), None)
            if failing is not None:
                tf = sec(failing.end) if failing.end else None
        if tf is None:
            tf = max((_bar_end(p, sec) or 0.0 for p in report.phases), default=0.0)

    server = Row(label="server", kind="server", title="the server as a whole: each phase from its first to its last rank")
    for i, p in enumerate(report.phases):
        failing = failure is not None and failure.phase == p.name
        server.bars.append(_bar(report, p, p.start, p.end, p.duration_s, sec, tf, i, failing))
    rank_rows = [_rank_row(report, r, sec, tf) for r in report.ranks]
    rows = [server, *_collapse(report, rank_rows, notes)]
    if ordinal:
        notes.append("this run has no timestamps: phases are shown in order, not to scale")
    else:
        _place_unknown(rows, notes)
    for row in rows:
        _assign_lanes(row)
    if rows[0].lanes > 1:
        notes.append("the ranks are out of step: on the server row, phases that overlap in time are drawn one under the other")

    end = 0.0
    for row in rows:
        for b in row.bars:
            end = max(end, b.x1 or 0.0, b.x0 or 0.0)
    if tf is not None:
        end = max(end, tf)
    echoes: list[Mark] = []
    failure_mark: Mark | None = None
    if failure is not None:
        row_i = _row_of(rows, failure.rank)
        failure_mark = Mark(
            x=tf if tf is not None else end,
            row=row_i,
            title=f"{failure.cause.value} on {failure.rank or 'the server'}, line {failure.line}: {failure.message[:300]}",
        )
        for c in failure.consequences:
            rank = c.rank
            x = sec(c.ts) if not ordinal else None
            x = failure_mark.x if x is None else x
            end = max(end, x)
            echoes.append(Mark(x=x, row=_row_of(rows, rank), title=f"consequence, line {c.line}: {c.message[:200]}"))
    ready = next((p for p in report.phases if p.name is Phase.READY), None)
    ready_x = None
    if ready is not None:
        ready_x = next((b.x0 for b in server.bars if b.phase is Phase.READY), None)
    if ordinal:
        end = max(float(len(report.phases)), 1.0)
    span = max(end, 1.0)

    memory, unplaced = _memory_points(report, sec, ordinal)
    gaps = []
    if not ordinal:
        for gap in report.unaccounted:
            x0, x1 = sec(gap.start), sec(gap.end)
            if x0 is not None and x1 is not None:
                gaps.append((x0, x1, gap))
    return Timeline(report, t0, span, ordinal, rows, notes, failure_mark, echoes, ready_x, memory, unplaced, gaps)


def _bar_end(p: PhaseReport, sec: Any) -> float | None:
    start = sec(p.start)
    end = sec(p.end)
    if end is None and start is not None and p.duration_s is not None:
        end = start + p.duration_s
    return end


def _bar(
    report: Report,
    p: PhaseReport,
    start: str | None,
    end: str | None,
    duration: float | None,
    sec: Any,
    tf: float | None,
    index: int,
    failing: bool,
) -> Bar:
    name = p.name
    if sec(start) is None and not any(_parse_ts(x) for x in (start, end)):
        if report.phases and all(_parse_ts(q.start) is None for q in report.phases):
            # the whole run lacks timestamps: phase order instead of time
            return Bar(name, index + 0.04, index + 0.96, None, "unknown", f"{name.value}: no timestamps")
        return Bar(name, None, None, duration, "unknown", f"{name.value}: no timestamps")
    x0 = sec(start)
    x1 = sec(end)
    kind = "closed"
    if x0 is None:  # an end without a start
        x0 = x1 - duration if x1 is not None and duration is not None else x1
        kind = "unknown"
    elif x1 is None:
        x1 = x0 + (duration or 0.0)
        if report.outcome == "failed":
            # never closed: the failure stopped it (on the failing rank, exactly at the failure)
            kind = "cut"
            if tf is not None and tf >= x0:
                x1 = tf if failing else min(x1, tf)
        else:
            kind = "open"
    was_cut = kind == "cut"
    if failing and kind != "unknown":
        kind = "failed"
    dur = duration if duration is not None else (x1 - x0 if x0 is not None and x1 is not None else None)
    if was_cut and x0 is not None and x1 is not None:
        dur = x1 - x0
    state = {
        "closed": "",
        "open": " (still running at the end of the log)",
        "cut": " (never finished: the failure stopped it)",
        "failed": " (the failure struck here)",
        "unknown": " (no timestamp for its start)",
    }[kind]
    when = f", from {start.replace('T', ' ')}" if start else ""
    return Bar(name, x0, x1, dur, kind, f"{name.value}: {fmt_duration(dur)}{when}{state}")


def _rank_row(report: Report, rank: str, sec: Any, tf: float | None) -> Row:
    row = Row(label=rank, kind="rank", ranks=[rank], title=rank)
    failure = report.failure
    for i, p in enumerate(report.phases):
        span = p.ranks.get(rank)
        if span is None:
            continue
        failing = failure is not None and failure.phase == p.name and _same_rank(failure.rank, rank, report.ranks)
        row.bars.append(_bar(report, p, span.start, span.end, span.duration_s, sec, tf, i, failing))
    return row


def _same_rank(wanted: str | None, rank: str, ranks: list[str]) -> bool:
    return wanted is not None and _resolve_rank(wanted, ranks) == rank


def _resolve_rank(wanted: str | None, ranks: list[str]) -> str | None:
    """The rank tag of the report a name refers to: itself, or torchrun's 'rank1' as the TP1 process."""
    if wanted is None:
        return None
    if wanted in ranks:
        return wanted
    m = re.fullmatch(r"rank(\d+)", wanted)
    if m:
        for r in ranks:
            if f"TP{m.group(1)}" in r.split():
                return r
    return None


def _row_of(rows: list[Row], rank: str | None) -> int:
    every = [r for row in rows for r in row.ranks]
    resolved = _resolve_rank(rank, every)
    if resolved is None:
        return 0
    for i, row in enumerate(rows):
        if row.kind != "summary" and resolved in row.ranks:
            return i
    return 0


def _collapse(report: Report, rank_rows: list[Row], notes: list[str]) -> list[Row]:
    n = len(rank_rows)
    if n <= MAX_RANK_ROWS:
        return rank_rows
    failing = _resolve_rank(report.failure.rank, report.ranks) if report.failure else None
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in rank_rows:
        key = tuple((b.phase, b.x0, b.x1, b.kind) for b in row.bars)
        if row.ranks[0] == failing:
            key = ("failing", *key)
        groups.setdefault(key, []).append(row)
    if len(groups) <= MAX_ROWS - 1:
        out: list[Row] = []
        for members in groups.values():
            ranks = [m.ranks[0] for m in members]
            label = compress_ranks(ranks, 24)
            if len(ranks) > 1:
                label += f" ({len(ranks)})"
            out.append(Row(label=label, kind="group", ranks=ranks, bars=members[0].bars, title=", ".join(ranks)))
        out.sort(key=lambda r: rank_sort_key(r.ranks[0]))
        notes.append(
            f"{n} ranks in {len(groups)} distinct timelines: each row is a group of ranks whose phases are identical "
            "(the count is in brackets)"
        )
        return out
    # too many distinct timelines: earliest / median / latest per phase, plus the failing rank
    rows: list[Row] = []
    for label, pick in (("earliest rank", min), ("median rank", statistics.median_low), ("latest rank", max)):
        row = Row(label=label, kind="summary", ranks=[], title=f"{label} of {n}: per phase, the {label.split()[0]} start and end")
        for phase in [p.name for p in report.phases]:
            spans = [b for r in rank_rows for b in r.bars if b.phase is phase and b.x0 is not None and b.x1 is not None]
            if not spans:
                continue
            x0 = pick([b.x0 for b in spans])  # type: ignore[type-var]
            x1 = pick([b.x1 for b in spans])  # type: ignore[type-var]
            durations = sorted(b.x1 - b.x0 for b in spans)  # type: ignore[operator]
            timed = {id(b) for b in spans}
            slowest = max((r for r in rank_rows for b in r.bars if id(b) in timed), key=lambda r: _dur(r, phase))
            title = (
                f"{phase.value} over {len(spans)} ranks: duration min {fmt_duration(durations[0])}, "
                f"median {fmt_duration(statistics.median_low(durations))}, max {fmt_duration(durations[-1])} "
                f"({slowest.ranks[0]})"
            )
            kinds = {b.kind for b in spans}
            kind = "open" if "open" in kinds and pick is max else "closed"
            row.bars.append(Bar(phase, x0, max(x0, x1), max(x1 - x0, 0.0), kind, title))
        rows.append(row)
    if failing is not None:
        rows.extend(r for r in rank_rows if r.ranks[0] == failing)
    notes.append(
        f"{n} ranks in {len(groups)} distinct timelines: the rank rows show, per phase, the earliest, median and "
        "latest start and end across ranks" + (f"; the failing rank {failing} has its own row" if failing else "")
    )
    return rows


def _assign_lanes(row: Row) -> None:
    ends: list[float] = []
    for b in row.bars:
        x0 = b.x0 if b.x0 is not None else 0.0
        x1 = b.x1 if b.x1 is not None else x0
        for lane, end in enumerate(ends):
            if end <= x0 + 1e-6:
                b.lane = lane
                ends[lane] = x1
                break
        else:
            b.lane = len(ends)
            ends.append(x1)
    row.lanes = max(1, len(ends))


def _dur(row: Row, phase: Phase) -> float:
    return next(((b.x1 or 0.0) - (b.x0 or 0.0) for b in row.bars if b.phase is phase), 0.0)


def _place_unknown(rows: list[Row], notes: list[str]) -> None:
    """Phases without timestamps go between their row's known neighbours, drawn dashed."""
    missing: dict[str, list[str]] = {}
    for row in rows:
        for i, b in enumerate(row.bars):
            if b.x0 is not None and b.x1 is not None:
                continue
            before = [x for c in row.bars[:i] for x in (c.x0, c.x1) if x is not None]
            after = [x for c in row.bars[i + 1 :] for x in (c.x0, c.x1) if x is not None]
            lo = max(before) if before else (b.x1 if b.x1 is not None else 0.0)
            hi = min(after) if after else None
            b.x0 = lo if b.x0 is None else b.x0
            b.x1 = hi if b.x1 is None else b.x1
            b.kind = "unknown"
            b.duration = None
            missing.setdefault(b.phase.value, []).append(row.label)
    for phase, where in missing.items():
        who = "on the server row" if where == ["server"] else "on " + ", ".join(where[:4]) + (" …" if len(where) > 4 else "")
        notes.append(f"{phase}: no timestamps {who}; drawn dashed between the phases around it")


def _memory_points(report: Report, sec: Any, ordinal: bool) -> tuple[dict[str, list[tuple[float, float, str]]], list[str]]:
    phases = {p.name.value: p for p in report.phases}
    out: dict[str, list[tuple[float, float, str]]] = {}
    unplaced: list[str] = []
    for rank, values in report.memory.avail_gb.items():
        points: list[tuple[float, float, str]] = []
        for boundary, gb in values.items():
            name, _, edge = boundary.rpartition("_")
            p = phases.get(name)
            x: float | None = None
            if p is not None:
                if ordinal:
                    index = [q.name.value for q in report.phases].index(name)
                    x = index + (0.04 if edge == "start" else 0.96)
                else:
                    span = p.ranks.get(rank)
                    ts = (span.start if edge == "start" else span.end) if span is not None else None
                    if ts is None:
                        ts = p.start if edge == "start" else p.end
                    x = sec(ts)
                    if x is None and edge == "end" and span is not None and sec(span.start) is not None:
                        x = sec(span.start) + (span.duration_s or 0.0)
            if x is None:
                unplaced.append(f"{rank} {boundary}")
                continue
            points.append((x, gb, boundary))
        points.sort(key=lambda t: (t[0], _boundary_order(t[2])))
        if points:
            out[rank] = points
    return out, unplaced


def _boundary_order(boundary: str) -> int:
    name, _, edge = boundary.rpartition("_")
    try:
        return Phase(name).index * 2 + (edge == "end")
    except ValueError:
        return 99


# -- drawing ---------------------------------------------------------------------------------------


class Svg:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, text: str) -> None:
        self.parts.append(text)

    def text(self, x: float, y: float, content: str, size: float = 11, anchor: str = "start", **attrs: Any) -> None:
        extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)
        self.add(f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}"{extra}>{esc(content)}</text>')

    def rect(self, x: float, y: float, w: float, h: float, **attrs: Any) -> None:
        title = attrs.pop("title", None)
        extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)
        body = f"<title>{esc(title)}</title>" if title else ""
        self.add(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(max(w, 0))}" height="{_n(h)}"{extra}>{body}</rect>')

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: Any) -> None:
        extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)
        self.add(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}"{extra}/>')

    def __str__(self) -> str:
        return "\n".join(self.parts)


def _tick_step(span: float, max_ticks: int) -> float:
    for step in (1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200):
        if span / step <= max_ticks:
            return float(step)
    return 86400.0 * math.ceil(span / 86400 / max_ticks)


def _defs() -> str:
    return (
        "<defs>"
        '<linearGradient id="lp-open" x1="0" x2="1" y1="0" y2="0">'
        '<stop offset="0" stop-color="#ffffff" stop-opacity="0"/><stop offset="1" stop-color="#ffffff" stop-opacity="0.85"/>'
        "</linearGradient>"
        '<pattern id="lp-gap" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<rect width="6" height="6" fill="#f1f3f4"/><line x1="0" y1="0" x2="0" y2="6" stroke="#c4c8cc" stroke-width="2"/>'
        "</pattern>"
        "</defs>"
    )


def draw_chart(tl: Timeline, y: float = 0.0) -> tuple[str, float]:
    """The Gantt chart and the memory chart, as SVG elements from ``y`` down; returns (svg, height)."""
    svg = Svg()
    scale = PLOT_W / tl.span

    def X(seconds: float) -> float:
        return PLOT_X + max(0.0, min(seconds, tl.span)) * scale

    top = y
    y += 4
    svg.add(f'<g class="lp-gantt" font-family="{FONT}">')
    # top axis: wall clock
    axis_y = y + 14
    step = _tick_step(tl.span, max(4, int(PLOT_W / 95)))
    if not tl.ordinal and tl.t0 is not None:
        midnight = tl.t0.replace(hour=0, minute=0, second=0, microsecond=0)
        off0 = (tl.t0 - midnight).total_seconds()
        first = math.ceil(off0 / step) * step
        svg.text(12, axis_y, f"wall clock, {tl.t0:%Y-%m-%d}", 10.5, "start", fill="#555")
        k = 0
        while first + k * step - off0 <= tl.span + 1e-9:
            rel = first + k * step - off0
            when = midnight + timedelta(seconds=first + k * step)
            label = f"{when:%H:%M:%S}" if step < 60 or when.second else f"{when:%H:%M}"
            near = X(rel) - PLOT_X < _text_w(label, 10.5) / 2
            svg.text(X(rel) - 2 if near else X(rel), axis_y, label, 10.5, "start" if near else "middle", fill="#333")
            svg.line(X(rel), axis_y + 3, X(rel), axis_y + 7, stroke="#888")
            k += 1
    else:
        svg.text(PLOT_X, axis_y, "no timestamps: phases in order, widths not to scale", 11, fill="#a15c00")
    y = axis_y + 10
    band_y = y  # marker labels (failure, ready) live in this band
    y += 18
    rows_top = y
    tops: list[float] = []
    for row in tl.rows:
        tops.append(y)
        y += row.height
    rows_h = y - rows_top

    def middle(i: int) -> float:
        return tops[i] + tl.rows[i].height / 2

    # zebra and labels
    for i, row in enumerate(tl.rows):
        ry = tops[i]
        if i % 2 == 1:
            svg.rect(0, ry, WIDTH, row.height, fill="#f6f7f9")
        weight = "bold" if row.kind == "server" else None
        label = row.label if row.kind != "server" else "server (all ranks)"
        svg.add(
            f'<text x="{PLOT_X - 10}" y="{_n(middle(i) + 4)}" font-size="11.5" text-anchor="end" fill="#222"'
            + (f' font-weight="{weight}"' if weight else "")
            + f' class="lp-row-label"><title>{esc(row.title or row.label)}</title>{esc(label)}</text>'
        )
    svg.line(0, rows_top + tl.rows[0].height, WIDTH, rows_top + tl.rows[0].height, stroke="#c9ccd1")
    # grid: seconds since launch
    bottom_y = rows_top + rows_h
    offsets: list[float] = []
    if not tl.ordinal:
        k = 0
        while k * step <= tl.span + 1e-9:
            offsets.append(k * step)
            k += 1
        for off in offsets:
            svg.line(X(off), band_y, X(off), bottom_y, stroke="#e3e5e8")
    # bars
    for i, row in enumerate(tl.rows):
        for b in row.bars:
            ry = tops[i] + (ROW_H - BAR_H) / 2 + b.lane * LANE_H
            _draw_bar(svg, b, ry, X, scale, tl, with_name=row.kind == "server")
    # time between phases, on the server row
    for x0, x1, gap in tl.gaps:
        gx0, gx1 = X(x0), X(x1)
        ry = tops[0] + (ROW_H - BAR_H) / 2
        lines = f", lines {gap.first_line}-{gap.last_line}" if gap.first_line and gap.last_line else ""
        title = f"{fmt_duration(gap.duration_s)} between {gap.after.value} and {gap.before.value}, in no phase{lines}"
        svg.rect(gx0, ry, max(gx1 - gx0, 2.0), BAR_H, fill="url(#lp-gap)", stroke="#9aa0a6", stroke_width="1",
                 stroke_dasharray="3 2", rx="2", class_="lp-gap", title=title)  # fmt: skip
        label = f"? {fmt_duration(gap.duration_s)}"
        if _text_w(label) + 8 <= gx1 - gx0:
            svg.text((gx0 + gx1) / 2, ry + BAR_H - 4.2, label, 11, "middle", fill="#444", class_="lp-gap-label")
    # ready marker
    if tl.ready_x is not None and not tl.ordinal:
        rx = X(tl.ready_x)
        lane = next((b.lane for b in tl.rows[0].bars if b.phase is Phase.READY), 0)
        cy = tops[0] + ROW_H / 2 + lane * LANE_H
        svg.add(
            f'<path d="M{_n(rx)} {_n(cy - 8)} L{_n(rx + 7)} {_n(cy)} L{_n(rx)} {_n(cy + 8)} L{_n(rx - 7)} {_n(cy)} Z" '
            f'fill="{READY_COLOR}" stroke="#fff" stroke-width="1.5"><title>ready</title></path>'
        )
        label = f"ready +{fmt_duration(tl.ready_x)}"
        anchor = "end" if rx + _text_w(label) > WIDTH - 4 else "middle"
        svg.text(rx - 4 if anchor == "end" else rx, band_y + 12, label, 11, anchor, fill=READY_COLOR, font_weight="bold")
    # consequences (lesser markers), then the failure on top
    for m in tl.echoes:
        cx, cy = X(m.x), middle(m.row)
        svg.add(
            f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="4.5" fill="#fff7ed" stroke="{ECHO_COLOR}" stroke-width="1.6" '
            f'class="lp-echo"><title>{esc(m.title)}</title></circle>'
        )
    if tl.failure is not None and tl.report.failure is not None:
        f = tl.report.failure
        fx = X(tl.failure.x)
        svg.line(fx, band_y + 16, fx, bottom_y, stroke=FAILURE_COLOR, stroke_width="1.2", stroke_dasharray="4 3")
        cy = middle(tl.failure.row)
        s = 6.5
        svg.add(
            f'<g class="lp-failure-marker"><title>{esc(tl.failure.title)}</title>'
            f'<circle cx="{_n(fx)}" cy="{_n(cy)}" r="9" fill="{FAILURE_COLOR}" stroke="#fff" stroke-width="1.5"/>'
            f'<path d="M{_n(fx - s / 1.6)} {_n(cy - s / 1.6)} L{_n(fx + s / 1.6)} {_n(cy + s / 1.6)} '
            f'M{_n(fx + s / 1.6)} {_n(cy - s / 1.6)} L{_n(fx - s / 1.6)} {_n(cy + s / 1.6)}" '
            'stroke="#fff" stroke-width="2.2" stroke-linecap="round"/></g>'
        )
        where = f" on {f.rank}" if f.rank else " (server)"
        label = f"✖ {f.cause.value}{where}, line {f.line}"
        width = _text_w(label, 11.5)
        if fx + width / 2 > WIDTH - 4:
            anchor, lx = "end", min(fx + 8, WIDTH - 4)
        elif fx - width / 2 < 4:
            anchor, lx = "start", fx - 8
        else:
            anchor, lx = "middle", fx
        band_label_y = band_y + 2 if tl.ready_x is not None and abs(X(tl.ready_x) - fx) < width else band_y + 12
        svg.text(lx, band_label_y, label, 11.5, anchor, fill=FAILURE_COLOR, font_weight="bold", class_="lp-failure-label")
    # bottom axis: seconds since launch
    y = bottom_y + 4
    svg.line(PLOT_X, bottom_y, PLOT_X + PLOT_W, bottom_y, stroke="#888")
    if not tl.ordinal:
        for off in offsets:
            svg.line(X(off), bottom_y, X(off), bottom_y + 4, stroke="#888")
            label = _fmt_offset(off, tl.span)
            near = X(off) - PLOT_X < _text_w(label, 10.5) / 2
            svg.text(X(off) - 2 if near else X(off), y + 12, label, 10.5, "start" if near else "middle", fill="#333")
        svg.text(12, y + 12, "time since launch", 10.5, "start", fill="#555")
    y += 22
    svg.add("</g>")
    mem_svg, mem_h = _draw_memory(tl, y, X)
    svg.add(mem_svg)
    y += mem_h
    return str(svg), y - top


def _draw_bar(svg: Svg, b: Bar, ry: float, X: Any, scale: float, tl: Timeline, with_name: bool) -> None:
    if b.x0 is None:
        return
    color = PHASE_COLORS[b.phase]
    x0 = X(b.x0)
    x1 = x0 + 14 if b.x1 is None or (b.kind == "unknown" and (b.x1 - b.x0) * scale < 14) else X(b.x1)
    w = max(x1 - x0, 2.0)
    cls = f"lp-bar lp-{b.phase.value} lp-{b.kind}"
    if b.kind == "unknown":
        svg.rect(x0, ry, w, BAR_H, fill=color, fill_opacity="0.16", stroke=color, stroke_width="1.5",
                 stroke_dasharray="4 2", rx="2", class_=cls, title=b.title)  # fmt: skip
    else:
        svg.rect(x0, ry, w, BAR_H, fill=color, rx="2", class_=cls, title=b.title)
        if b.kind == "open":
            svg.rect(x0 + w * 0.6, ry, w * 0.4, BAR_H, fill="url(#lp-open)")
            svg.text(x0 + w + 3, ry + BAR_H - 4, "…", 11, fill="#555")
        elif b.kind == "cut":
            svg.add(f'<path d="M{_n(x0 + w)} {_n(ry)} l-3 4 l3 4 l-3 4 l3 4" fill="none" stroke="#fff" stroke-width="1.5"/>')
        elif b.kind == "failed":
            svg.rect(x0, ry, w, BAR_H, fill="none", stroke=FAILURE_COLOR, stroke_width="2", rx="2")
    # the label: name and duration on the server row, duration on rank rows, if it fits
    text_fill = "#1d1d1d" if b.phase in _DARK_TEXT or b.kind == "unknown" else "#ffffff"
    dur = fmt_duration(b.duration) if b.kind != "unknown" else "no timestamps"
    if b.kind in ("open", "cut") and b.duration is not None:
        dur = f"{dur}+" if b.kind == "open" else dur
    candidates = [f"{b.phase.value} {dur}", dur, b.phase.value] if with_name or tl.ordinal else [dur]
    if b.kind == "unknown":
        candidates = [f"{b.phase.value}: no timestamps", f"{b.phase.value} ?", "?"]
    for text in candidates:
        if _text_w(text) + 8 <= w:
            svg.text(x0 + w / 2, ry + BAR_H - 4.2, text, 11, "middle", fill=text_fill, class_="lp-bar-label")
            break


def _nice_max(value: float) -> float:
    for step in (1, 2, 5, 10, 20, 25, 40, 50, 80, 100, 150, 200, 250, 300, 400, 500, 1000):
        if value <= step:
            return float(step)
    return float(math.ceil(value / 100) * 100)


def _draw_memory(tl: Timeline, y: float, X: Any) -> tuple[str, float]:
    svg = Svg()
    top = y
    svg.add(f'<g class="lp-memory" font-family="{FONT}">')
    svg.text(12, y + 14, "free GPU memory", 11.5, "start", fill="#222", font_weight="bold")
    if not tl.memory:
        svg.text(PLOT_X, y + 12, "no free-memory readings in this run of the log", 11, fill="#666")
        svg.add("</g>")
        return str(svg), 26
    h = 96.0
    y0 = y + 8
    values = [gb for pts in tl.memory.values() for _, gb, _ in pts]
    vmax = _nice_max(max(max(values), LOW_CAPTURE_MEMORY_GB * 1.6))

    def Y(gb: float) -> float:
        return y0 + h - gb / vmax * h

    svg.text(12, y + 29, "per rank at phase", 10.5, "start", fill="#555")
    svg.text(12, y + 43, "boundaries, GB", 10.5, "start", fill="#555")
    for tick in (0.0, vmax / 2, vmax):
        svg.line(PLOT_X, Y(tick), PLOT_X + PLOT_W, Y(tick), stroke="#e3e5e8")
        svg.text(PLOT_X - 6, Y(tick) + 4, f"{tick:g}", 10, "end", fill="#555")
    # the threshold
    ty = Y(LOW_CAPTURE_MEMORY_GB)
    svg.rect(PLOT_X, ty, PLOT_W, y0 + h - ty, fill="#d01c1c", fill_opacity="0.06")
    svg.line(PLOT_X, ty, PLOT_X + PLOT_W, ty, stroke=FAILURE_COLOR, stroke_width="1.2", stroke_dasharray="6 4")
    svg.text(
        PLOT_X + 4,
        ty - 4,
        f"memory pressure: below {LOW_CAPTURE_MEMORY_GB:g} GB free at CUDA graph capture",
        10.5,
        "start",
        fill=FAILURE_COLOR,
        class_="lp-threshold",
    )
    if tl.failure is not None:
        fx = X(tl.failure.x)
        svg.line(fx, y0 - 4, fx, y0 + h, stroke=FAILURE_COLOR, stroke_width="1.2", stroke_dasharray="4 3")
    # one thin step line per rank; the rank with the lowest reading drawn bold and labelled
    lowest = min(tl.memory, key=lambda r: (min(gb for _, gb, _ in tl.memory[r]), rank_sort_key(r)))
    opacity = 0.8 if len(tl.memory) <= 4 else max(0.15, 2.0 / len(tl.memory))
    for rank, pts in tl.memory.items():
        if rank == lowest:
            continue
        svg.add(_step_path(pts, X, Y, "#7a8aa0", 1.2, opacity, f"free GPU memory on {rank}"))
    pts = tl.memory[lowest]
    svg.add(_step_path(pts, X, Y, "#1f3b63", 2.2, 1.0, f"free GPU memory on {lowest} (lowest)"))
    # value labels: the lowest reading first, then the first and last, then the rest where they fit
    placed: list[tuple[float, float, float, float]] = [
        (PLOT_X, ty - 16, PLOT_X + 8 + _text_w("memory pressure: below 5 GB free at CUDA graph capture", 10.5), ty)
    ]
    order = sorted(range(len(pts)), key=lambda i: (pts[i][1] != min(gb for _, gb, _ in pts), i not in (0, len(pts) - 1), i))
    for i in order:
        x, gb, boundary = pts[i]
        px, py = X(x), Y(gb)
        color = FAILURE_COLOR if gb < LOW_CAPTURE_MEMORY_GB else "#1f3b63"
        svg.add(
            f'<circle cx="{_n(px)}" cy="{_n(py)}" r="3" fill="{color}" class="lp-mem-point">'
            f"<title>{esc(lowest)} {esc(boundary)}: {gb:.2f} GB free</title></circle>"
        )
        label = f"{gb:.1f}"
        w = _text_w(label, 10.5)
        for lx, ly in ((px + 4, py - 5), (px + 4, py + 14), (px - 4 - w, py - 5), (px - 4 - w, py + 14)):
            box = (lx - 1, ly - 10, lx + w + 1, ly + 2)
            if box[2] > PLOT_X + PLOT_W + RIGHT_PAD - 2 or box[1] < y0 - 4 or box[3] > y0 + h + 14:
                continue
            if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                continue
            placed.append(box)
            svg.text(lx, ly, label, 10.5, "start", fill=color, font_weight="bold")
            break
    if len(tl.memory) > 1:
        svg.text(12, y + 62, f"bold: {lowest} (lowest)", 10.5, "start", fill="#444")
        svg.text(12, y + 76, f"thin: {len(tl.memory) - 1} other rank(s)", 10.5, "start", fill="#444")
    y = y0 + h + 6
    if tl.memory_unplaced:
        text = "no time for: " + ", ".join(tl.memory_unplaced[:6]) + (" …" if len(tl.memory_unplaced) > 6 else "")
        svg.text(PLOT_X, y + 10, text, 10.5, fill="#a15c00")
        y += 14
    svg.add("</g>")
    return str(svg), y - top + 4


def _step_path(pts: list[tuple[float, float, str]], X: Any, Y: Any, color: str, width: float, opacity: float, title: str) -> str:
    d = f"M{_n(X(pts[0][0]))} {_n(Y(pts[0][1]))}"
    for x, gb, _ in pts[1:]:
        d += f" H{_n(X(x))} V{_n(Y(gb))}"
    return (
        f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}" stroke-opacity="{opacity:.2f}" '
        f'stroke-linejoin="round"><title>{esc(title)}</title></path>'
    )


# -- the text around the chart ---------------------------------------------------------------------


def headline(report: Report) -> str:
    phase = report.phase.value if report.phase else "no phase yet"
    if report.total_startup_s is None:
        return {"ready": "READY", "failed": f"FAILED in {phase}", "starting": f"STARTING: in {phase}"}[report.outcome]
    total = fmt_duration(report.total_startup_s)
    return {
        "ready": f"READY after {total}",
        "failed": f"FAILED in {phase} after {total}",
        "starting": f"STARTING: in {phase}, {total} so far",
    }[report.outcome]


def _run_text(report: Report) -> str:
    if report.runs <= 1:
        return ""
    return f"run {report.run} of {report.runs} in this file (from line {report.run_start_line})"


def _model_text(report: Report) -> str:
    c = report.config
    parts = [str(c["model_path"])] if c.get("model_path") else []
    parallel = [
        f"{k.removesuffix('_size')}={c[k]}" for k in ("tp_size", "dp_size", "ep_size", "pp_size") if c.get(k) not in (None, 1)
    ]
    parts.extend(parallel)
    if c.get("mem_fraction_static") is not None:
        parts.append(f"mem_fraction_static={c['mem_fraction_static']}")
    return ", ".join(parts)


def config_items(report: Report) -> list[tuple[str, str]]:
    items = [(k, report.config[k]) for k in CONFIG_SHOWN if report.config.get(k) not in (None, False, "")]
    scheduler = report.config.get("scheduler") or {}
    items += [(k, scheduler[k]) for k in SCHEDULER_SHOWN if scheduler.get(k) is not None and k not in report.config]
    m = report.memory
    for key, value in (
        ("weights", m.weights_gb),
        ("KV cache", m.kv_cache_gb),
        ("mamba cache", m.mamba_cache_gb),
        ("CUDA graphs", m.cuda_graph_gb),
        ("lowest free during capture", m.min_avail_during_capture_gb),
    ):
        if value is not None:
            items.append((key, f"{value:.2f} GB"))
    return [(k, str(v)) for k, v in items]


def _phase_rows(report: Report, tl: Timeline) -> list[tuple[Phase | None, str, str, str, str, str]]:
    """(phase, start, since launch, duration, slowest rank, free memory); phase None is time between phases."""
    out: list[tuple[Phase | None, str, str, str, str, str]] = []
    gaps = {g.after: g for g in report.unaccounted}
    seen = {p.name for p in report.phases}
    avail = report.memory.avail_gb
    for p in report.phases:
        start = p.start.split("T")[-1] if p.start else "no timestamp"
        rel = ""
        when = _seconds(tl.t0, p.start)
        if when is not None:
            when = round(when)
            rel = f"+{when} s" if when < 60 else f"+{when // 60}:{when % 60:02d}"
        slowest = ""
        if len(p.ranks) > 1:
            durations = [s.duration_s or 0.0 for s in p.ranks.values()]
            rank, span = max(p.ranks.items(), key=lambda kv: kv[1].duration_s or 0.0)
            same = max(durations) - min(durations) < 0.5 and len(durations) == len(report.ranks)
            slowest = "same on all" if same else f"{rank} {fmt_duration(span.duration_s)}"
        state = ""
        if p.end is None and report.outcome == "starting":
            state = " (open)"
        if report.failure is not None and report.failure.phase == p.name:
            state = " (failed here)"
        edges = []
        for edge in ("start", "end"):
            values = [v[f"{p.name.value}_{edge}"] for v in avail.values() if f"{p.name.value}_{edge}" in v]
            edges.append(f"{min(values):.1f}" if values else "")
        memory = " → ".join(e or "?" for e in edges) + " GB" if any(edges) else ""
        out.append((p.name, start, rel, fmt_duration(p.duration_s) + state, slowest, memory))
        gap = gaps.get(p.name)
        if gap is not None:
            lines = f"lines {gap.first_line}–{gap.last_line}" if gap.first_line and gap.last_line else ""
            out.append((None, gap.start.split("T")[-1], "", fmt_duration(gap.duration_s), lines, ""))
    furthest = max((p.name.index for p in report.phases), default=-1)
    for phase in PHASE_ORDER:
        if phase not in seen:
            state = "not in the log" if phase.index < furthest else "not reached"
            out.append((phase, "", "", state, "", ""))
    return out


CSS = f"""
* {{ box-sizing: border-box; }}
body {{ margin: 0; background: #ffffff; color: #1d1d1f; font: 13px/1.45 {FONT}; }}
main {{ max-width: {WIDTH + 40}px; margin: 0 auto; padding: 14px 20px 24px; }}
h1 {{ font-size: 18px; margin: 0; font-weight: bold; }}
h2 {{ font-size: 13px; margin: 0 0 6px; text-transform: uppercase; letter-spacing: .04em; color: #555; }}
.head {{ display: flex; align-items: baseline; gap: 14px; flex-wrap: wrap; }}
.status {{ font-weight: bold; padding: 2px 10px; border-radius: 4px; color: #fff; }}
.status.failed {{ background: {FAILURE_COLOR}; }} .status.ready {{ background: {READY_COLOR}; }}
.status.starting {{ background: #b26a00; }}
.meta {{ color: #444; margin: 4px 0 10px; }}
.meta span + span::before {{ content: " · "; color: #999; }}
.failure {{ border: 1px solid #f1b5b5; border-left: 5px solid {FAILURE_COLOR}; background: #fff6f6;
  padding: 8px 12px; margin: 0 0 10px; border-radius: 4px; }}
.failure .cause {{ font-size: 15px; font-weight: bold; color: {FAILURE_COLOR}; }}
.failure pre {{ font: 12px/1.4 {MONO}; white-space: pre-wrap; word-break: break-word; margin: 4px 0;
  background: #fff; border: 1px solid #f3d0d0; padding: 4px 8px; max-height: 7.5em; overflow: hidden; }}
.failure .hint {{ margin: 4px 0 0; }} .failure .hint b {{ color: #1a5e20; }}
.failure .echoes {{ color: #6b4a12; font-size: 12px; margin-top: 4px; }}
.failure ul {{ margin: 0; padding-left: 22px; }}
.warnings {{ border: 1px solid #ecd08a; border-left: 5px solid #d49a00; background: #fffaf0; padding: 6px 12px 4px;
  margin: 0 0 10px; border-radius: 4px; }}
.chart {{ border: 1px solid #e3e5e8; border-radius: 4px; padding: 4px 0 0; }}
.chart svg {{ display: block; width: 100%; height: auto; }}
.notes {{ color: #7a4b00; font-size: 12px; margin: 4px 10px 6px; padding: 0; list-style: none; }}
.legend {{ display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 6px 10px 8px; font-size: 12px; }}
.legend i {{ display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -2px; margin-right: 4px; }}
.cols {{ display: grid; grid-template-columns: minmax(0, 1.05fr) minmax(0, 1fr); gap: 14px; margin-top: 12px; }}
table {{ border-collapse: collapse; width: 100%; font-size: 12.5px; }}
td, th {{ text-align: left; padding: 2px 8px 2px 0; border-bottom: 1px solid #eef0f2; vertical-align: top; }}
th {{ color: #555; font-weight: normal; }}
td.num {{ text-align: right; white-space: nowrap; }}
.sw {{ display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }}
.dim {{ color: #999; }}
tr.gap td {{ color: #555; }} .gapsw {{ background: repeating-linear-gradient(45deg, #f1f3f4 0 2px, #c4c8cc 2px 4px); }}
.warn {{ margin: 0 0 4px; }} .warn b {{ color: #8a4b00; }}
.kind {{ display: inline-block; font: 11px {MONO}; background: #fff3d6; border: 1px solid #ecd08a; border-radius: 3px;
  padding: 0 4px; margin-right: 4px; color: #6b4a12; }}
.config td:nth-child(even) {{ font-family: {MONO}; font-size: 12px; overflow-wrap: anywhere; }}
.config td:nth-child(odd) {{ color: #555; }}
footer {{ color: #888; font-size: 11.5px; margin-top: 12px; }}
"""


def render_html(report: Report) -> str:
    """The whole page: one self-contained HTML document."""
    tl = build_timeline(report)
    chart, height = draw_chart(tl, 0)
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(report.source)}: {esc(headline(report))}</title>",
        f"<style>{CSS}</style></head><body><main>",
        '<div class="head">',
        "<h1>Startup timeline</h1>",
        f'<span class="status {esc(report.outcome)}" id="outcome">{esc(headline(report))}</span>',
        f"<span>{esc(report.source)}</span>",
        "</div>",
    ]
    meta = [x for x in (_model_text(report), _ranks_text(report), _run_text(report)) if x]
    out.append('<div class="meta">' + "".join(f"<span>{esc(x)}</span>" for x in meta) + "</div>")
    f = report.failure
    if f is not None:
        where = f"on {f.rank}" if f.rank else "in the server process"
        out.append('<section class="failure" id="failure">')
        out.append(
            f'<div><span class="cause" id="cause">✖ {esc(f.cause.value)}</span> '
            f"{esc(where)}, in {esc(f.phase.value if f.phase else 'an unknown phase')}, "
            f"<b>line {f.line}</b> of the log</div>"
        )
        out.append(f"<pre>{esc(f.message)}</pre>")
        out.append(f'<div class="hint"><b>hint</b> {esc(f.hint)}</div>')
        if f.consequences:
            n = len(f.consequences)
            out.append(
                f'<div class="echoes">○ {n} other line{"s follow" if n > 1 else " follows"} from it: '
                f"consequence{'s' if n > 1 else ''}, not the cause (hollow markers on the chart):<ul>"
            )
            for c in f.consequences[:3]:
                message = _clip(c.message.splitlines()[0] if c.message else "", 150)
                out.append(f"<li>line {c.line}: {esc(message)}</li>")
            if n > 3:
                out.append(f"<li>and {n - 3} more</li>")
            out.append("</ul></div>")
        out.append("</section>")
    if report.warnings:
        out.append('<section class="warnings" id="warnings">')
        for w in report.warnings:
            line = f" (line {w.line})" if w.line else ""
            out.append(f'<p class="warn"><span class="kind">{esc(w.kind)}</span>{esc(w.message)}{esc(line)}</p>')
        out.append("</section>")
    out.append('<section class="chart">')
    out.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {_n(height)}" width="{WIDTH}" '
        f'height="{_n(height)}" role="img" aria-label="startup timeline">{_defs()}{chart}</svg>'
    )
    out.append('<div class="legend">' + _legend_html(report, tl) + "</div>")
    if tl.notes:
        out.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in tl.notes) + "</ul>")
    out.append("</section>")
    out.append('<div class="cols"><section><h2>Phases</h2><table class="phases">')
    out.append(
        '<tr><th>phase</th><th>start</th><th></th><th class="num">duration</th><th>slowest rank</th>'
        '<th class="num" title="lowest over ranks">free GPU memory</th></tr>'
    )
    for phase, start, rel, duration, slowest, memory in _phase_rows(report, tl):
        if phase is None:
            out.append(
                '<tr class="gap"><td><span class="sw gapsw"></span><i>between phases</i></td>'
                f'<td>{esc(start)}</td><td></td><td class="num">{esc(duration)}</td><td>{esc(slowest)}</td><td></td></tr>'
            )
            continue
        dim = ' class="dim"' if not start and not rel else ""
        out.append(
            f'<tr{dim}><td><span class="sw" style="background:{PHASE_COLORS[phase]}"></span>{esc(phase.value)}</td>'
            f'<td>{esc(start)}</td><td class="num">{esc(rel)}</td><td class="num">{esc(duration)}</td><td>{esc(slowest)}</td>'
            f'<td class="num">{esc(memory)}</td></tr>'
        )
    out.append("</table></section><section>")
    items = config_items(report)
    if items:
        out.append('<h2>Configuration</h2><table class="config">')
        half = (len(items) + 1) // 2
        for left, right in zip(items[:half], items[half:] + [("", "")] * (2 * half - len(items)), strict=True):
            out.append(f"<tr><td>{esc(left[0])}</td><td>{esc(left[1])}</td><td>{esc(right[0])}</td><td>{esc(right[1])}</td></tr>")
        out.append("</table>")
    out.append("</section></div>")
    lines = report.lines
    out.append(
        f"<footer>logphase · {lines.total} lines read: {lines.events} in events, {lines.unrecognized} unrecognized, "
        f"{lines.blank} blank · times are the log's own (no time zone)</footer>"
    )
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _ranks_text(report: Report) -> str:
    n = len(report.ranks)
    if n == 0:
        return ""
    if n == 1:
        return f"1 rank ({report.ranks[0]})"
    return f"{n} ranks ({compress_ranks(report.ranks, 40)})"


def _legend_html(report: Report, tl: Timeline) -> str:
    parts = [f'<span><i style="background:{PHASE_COLORS[p.name]}"></i>{esc(p.name.value)}</span>' for p in report.phases]
    if any(b.kind == "unknown" for r in tl.rows for b in r.bars):
        parts.append(
            '<span><i style="background:repeating-linear-gradient(45deg,#999 0 2px,#fff 2px 5px)"></i>no timestamps</span>'
        )
    if any(b.kind == "open" for r in tl.rows for b in r.bars):
        parts.append("<span>… still running at the end of the log</span>")
    if report.failure is not None:
        parts.append(f'<span style="color:{FAILURE_COLOR}">✖ failure</span>')
        if report.failure.consequences:
            parts.append(f'<span style="color:{ECHO_COLOR}">○ consequence</span>')
    if tl.ready_x is not None:
        parts.append(f'<span style="color:{READY_COLOR}">◆ ready</span>')
    return "".join(parts)


def _wrap(text: str, width: int) -> list[str]:
    words = text.split()
    lines: list[str] = []
    current = ""
    for word in words:
        while len(word) > width:
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:width])
            word = word[width:]
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines or [""]


def render_svg(report: Report) -> str:
    """The picture alone, as one standalone SVG document: headline, failure, chart, legend, warnings."""
    tl = build_timeline(report)
    svg = Svg()
    y = 24.0
    svg.text(12, y, "Startup timeline", 17, font_weight="bold", fill="#1d1d1f")
    status_color = {"failed": FAILURE_COLOR, "ready": READY_COLOR, "starting": "#b26a00"}[report.outcome]
    svg.text(180, y, headline(report), 15, font_weight="bold", fill=status_color, id="outcome")
    svg.text(180 + _text_w(headline(report), 15) + 20, y, report.source, 12, fill="#444")
    y += 18
    meta = " · ".join(x for x in (_model_text(report), _ranks_text(report), _run_text(report)) if x)
    if meta:
        svg.text(12, y, meta, 12, fill="#444")
        y += 8
    f = report.failure
    if f is not None:
        y += 12
        where = f"on {f.rank}" if f.rank else "in the server process"
        svg.text(12, y, f"✖ {f.cause.value}", 14, font_weight="bold", fill=FAILURE_COLOR, id="cause")
        svg.text(
            20 + _text_w(f"✖ {f.cause.value}", 14),
            y,
            f"{where}, in {f.phase.value if f.phase else 'an unknown phase'}, line {f.line} of the log",
            12,
            fill="#333",
        )
        for line in _wrap(f.message.splitlines()[0] if f.message else "", 170)[:3]:
            y += 16
            svg.text(24, y, line, 11.5, fill="#5a0f0f", font_family=MONO)
        for i, line in enumerate(_wrap(f"hint: {f.hint}", 190)[:4]):
            y += 16
            svg.text(24, y, line, 12, fill="#1a5e20" if i == 0 else "#1d1d1f")
        if f.consequences:
            y += 16
            svg.text(
                24,
                y,
                f"○ {plural(len(f.consequences), 'other line')} follow from it (first: line {f.consequences[0].line}): "
                + _clip(f.consequences[0].message.splitlines()[0] if f.consequences[0].message else "", 120),
                11.5,
                fill=ECHO_COLOR,
            )
    y += 12
    chart, height = draw_chart(tl, y)
    svg.add(chart)
    y += height + 8
    x = 12.0
    for p in report.phases:
        label = f"{p.name.value} {fmt_duration(p.duration_s)}"
        svg.rect(x, y - 9, 11, 11, fill=PHASE_COLORS[p.name], rx="2")
        svg.text(x + 15, y, label, 11.5, fill="#222")
        x += 15 + _text_w(label, 11.5) + 16
    for note in tl.notes:
        y += 16
        svg.text(12, y, note, 11, fill="#7a4b00")
    for w in report.warnings:
        for i, line in enumerate(_wrap(f"warning {w.kind}: {w.message}" + (f" (line {w.line})" if w.line else ""), 185)[:3]):
            y += 16
            svg.text(12 if i == 0 else 24, y, line, 11.5, fill="#8a4b00")
    items = config_items(report)
    if items:
        for line in _wrap("config: " + ", ".join(f"{k}={v}" for k, v in items), 190)[:4]:
            y += 16
            svg.text(12, y, line, 11, fill="#444")
    y += 14
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {_n(y)}" width="{WIDTH}" height="{_n(y)}" '
        f'font-family="{FONT}" role="img" aria-label="startup timeline">'
        f'<rect width="{WIDTH}" height="{_n(y)}" fill="#ffffff"/>{_defs()}\n{svg}\n</svg>\n'
    )
