"""Drawing the model as SVG: the Gantt chart with its axes, bars, markers and gaps, and the
free-memory step chart under it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from logphase.faces.timeline.layout import Bar, Timeline
from logphase.faces.timeline.style import (
    BAR_H,
    DARK_TEXT,
    ECHO_COLOR,
    FAILURE_COLOR,
    FONT,
    LANE_H,
    PHASE_COLORS,
    PLOT_W,
    PLOT_X,
    READY_COLOR,
    RIGHT_PAD,
    ROW_H,
    WIDTH,
    esc,
    fmt_offset,
    num,
    text_width,
)
from logphase.faces.wording import fmt_duration
from logphase.reporting.report import LOW_CAPTURE_MEMORY_GB, rank_sort_key
from logphase.vocabulary.phases import Phase


class Svg:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, text: str) -> None:
        self.parts.append(text)

    def text(self, x: float, y: float, content: str, size: float = 11, anchor: str = "start", **attrs: Any) -> None:
        extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)
        self.add(f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}" text-anchor="{anchor}"{extra}>{esc(content)}</text>')

    def rect(self, x: float, y: float, w: float, h: float, **attrs: Any) -> None:
        title = attrs.pop("title", None)
        extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)
        body = f"<title>{esc(title)}</title>" if title else ""
        self.add(f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0))}" height="{num(h)}"{extra}>{body}</rect>')

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: Any) -> None:
        extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)
        self.add(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}"{extra}/>')

    def __str__(self) -> str:
        return "\n".join(self.parts)


def _tick_step(span: float, max_ticks: int) -> float:
    for step in (1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200):
        if span / step <= max_ticks:
            return float(step)
    return 86400.0 * math.ceil(span / 86400 / max_ticks)


def defs() -> str:
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


@dataclass
class _Frame:
    """Where the chart's parts go: the time scale, the band of marker labels, each row's top and
    the bottom of the rows."""

    tl: Timeline
    scale: float
    band_y: float = 0.0
    tops: list[float] = field(default_factory=list)
    bottom_y: float = 0.0

    def x(self, seconds: float) -> float:
        return PLOT_X + max(0.0, min(seconds, self.tl.span)) * self.scale

    def middle(self, i: int) -> float:
        return self.tops[i] + self.tl.rows[i].height / 2


def draw_chart(tl: Timeline, y: float = 0.0) -> tuple[str, float]:
    """The Gantt chart and the memory chart, as SVG elements from ``y`` down; returns (svg, height)."""
    svg = Svg()
    frame = _Frame(tl, PLOT_W / tl.span)
    top = y
    y += 4
    svg.add(f'<g class="lp-gantt" font-family="{FONT}">')
    axis_y = y + 14
    step = _tick_step(tl.span, max(4, int(PLOT_W / 95)))
    _top_axis(svg, frame, axis_y, step)
    frame.band_y = axis_y + 10  # marker labels (failure, ready) live in this band
    y = frame.band_y + 18
    rows_top = y
    for row in tl.rows:
        frame.tops.append(y)
        y += row.height
    frame.bottom_y = rows_top + (y - rows_top)
    _row_labels(svg, frame)
    svg.line(0, rows_top + tl.rows[0].height, WIDTH, rows_top + tl.rows[0].height, stroke="#c9ccd1")
    # grid: seconds since launch
    offsets = [] if tl.ordinal else _offsets(tl.span, step)
    for off in offsets:
        svg.line(frame.x(off), frame.band_y, frame.x(off), frame.bottom_y, stroke="#e3e5e8")
    for i, row in enumerate(tl.rows):
        for b in row.bars:
            ry = frame.tops[i] + (ROW_H - BAR_H) / 2 + b.lane * LANE_H
            _draw_bar(svg, b, ry, frame.x, frame.scale, tl, with_name=row.kind in ("server", "node"))
    _draw_gaps(svg, frame)
    _draw_ready(svg, frame)
    _draw_echoes(svg, frame)  # consequences (lesser markers), then the failure on top
    _draw_failure(svg, frame)
    y = _bottom_axis(svg, frame, offsets)
    svg.add("</g>")
    mem_svg, mem_h = _draw_memory(tl, y, frame.x)
    svg.add(mem_svg)
    y += mem_h
    return str(svg), y - top


def _offsets(span: float, step: float) -> list[float]:
    """The grid's times since launch: every ``step`` up to the end of the span."""
    offsets: list[float] = []
    k = 0
    while k * step <= span + 1e-9:
        offsets.append(k * step)
        k += 1
    return offsets


def _top_axis(svg: Svg, frame: _Frame, axis_y: float, step: float) -> None:
    """Wall-clock times every ``step``, or, without timestamps, a word that the chart is not to scale."""
    tl = frame.tl
    if tl.ordinal or tl.t0 is None:
        svg.text(PLOT_X, axis_y, "no timestamps: phases in order, widths not to scale", 11, fill="#a15c00")
        return
    midnight = tl.t0.replace(hour=0, minute=0, second=0, microsecond=0)
    off0 = (tl.t0 - midnight).total_seconds()
    first = math.ceil(off0 / step) * step
    svg.text(12, axis_y, f"wall clock, {tl.t0:%Y-%m-%d}", 10.5, "start", fill="#555")
    k = 0
    while first + k * step - off0 <= tl.span + 1e-9:
        rel = first + k * step - off0
        when = midnight + timedelta(seconds=first + k * step)
        label = f"{when:%H:%M:%S}" if step < 60 or when.second else f"{when:%H:%M}"
        _tick_label(svg, frame.x(rel), axis_y, label)
        svg.line(frame.x(rel), axis_y + 3, frame.x(rel), axis_y + 7, stroke="#888")
        k += 1


def _tick_label(svg: Svg, x: float, y: float, label: str) -> None:
    """An axis label centred on its tick, or starting at it when centred would cross the plot's left edge."""
    near = x - PLOT_X < text_width(label, 10.5) / 2
    svg.text(x - 2 if near else x, y, label, 10.5, "start" if near else "middle", fill="#333")


def _row_labels(svg: Svg, frame: _Frame) -> None:
    """Every other row shaded; each row's label left of the plot, the server's and nodes' in bold."""
    for i, row in enumerate(frame.tl.rows):
        if i % 2 == 1:
            svg.rect(0, frame.tops[i], WIDTH, row.height, fill="#f6f7f9")
        weight = "bold" if row.kind in ("server", "node") else None
        label = row.label if row.kind != "server" else "server (all ranks)"
        svg.add(
            f'<text x="{PLOT_X - 10}" y="{num(frame.middle(i) + 4)}" font-size="11.5" text-anchor="end" fill="#222"'
            + (f' font-weight="{weight}"' if weight else "")
            + f' class="lp-row-label"><title>{esc(row.title or row.label)}</title>{esc(label)}</text>'
        )


def _draw_gaps(svg: Svg, frame: _Frame) -> None:
    """Time between phases, on the server row: hatched, its duration written when it fits."""
    for x0, x1, gap in frame.tl.gaps:
        gx0, gx1 = frame.x(x0), frame.x(x1)
        ry = frame.tops[0] + (ROW_H - BAR_H) / 2
        lines = f", lines {gap.first_line}-{gap.last_line}" if gap.first_line and gap.last_line else ""
        then = f"and {gap.before.value}" if gap.before is not None else "and the end of the run, no phase since"
        what = "the draft model's set-up" if gap.holds == "draft_model" else "in no phase"
        title = f"{fmt_duration(gap.duration_s)} between {gap.after.value} {then}, {what}{lines}"
        svg.rect(gx0, ry, max(gx1 - gx0, 2.0), BAR_H, fill="url(#lp-gap)", stroke="#9aa0a6", stroke_width="1",
                 stroke_dasharray="3 2", rx="2", class_="lp-gap", title=title)  # fmt: skip
        label = f"? {fmt_duration(gap.duration_s)}"
        if text_width(label) + 8 <= gx1 - gx0:
            svg.text((gx0 + gx1) / 2, ry + BAR_H - 4.2, label, 11, "middle", fill="#444", class_="lp-gap-label")


def _draw_ready(svg: Svg, frame: _Frame) -> None:
    """The ready diamond on the server row, its time since launch in the marker band."""
    tl = frame.tl
    if tl.ready_x is None or tl.ordinal:
        return
    rx = frame.x(tl.ready_x)
    lane = next((b.lane for b in tl.rows[0].bars if b.phase is Phase.READY), 0)
    cy = frame.tops[0] + ROW_H / 2 + lane * LANE_H
    svg.add(
        f'<path d="M{num(rx)} {num(cy - 8)} L{num(rx + 7)} {num(cy)} L{num(rx)} {num(cy + 8)} L{num(rx - 7)} {num(cy)} Z" '
        f'fill="{READY_COLOR}" stroke="#fff" stroke-width="1.5"><title>ready</title></path>'
    )
    label = f"ready +{fmt_duration(tl.ready_x)}"
    anchor = "end" if rx + text_width(label) > WIDTH - 4 else "middle"
    svg.text(rx - 4 if anchor == "end" else rx, frame.band_y + 12, label, 11, anchor, fill=READY_COLOR, font_weight="bold")


def _draw_echoes(svg: Svg, frame: _Frame) -> None:
    for m in frame.tl.echoes:
        cx, cy = frame.x(m.x), frame.middle(m.row)
        svg.add(
            f'<circle cx="{num(cx)}" cy="{num(cy)}" r="4.5" fill="#fff7ed" stroke="{ECHO_COLOR}" stroke-width="1.6" '
            f'class="lp-echo"><title>{esc(m.title)}</title></circle>'
        )


def _draw_failure(svg: Svg, frame: _Frame) -> None:
    """The failure: a dashed line down the rows, a cross on its row, its cause and line in the marker band."""
    tl = frame.tl
    if tl.failure is None or tl.report.failure is None:
        return
    f = tl.report.failure
    fx = frame.x(tl.failure.x)
    svg.line(fx, frame.band_y + 16, fx, frame.bottom_y, stroke=FAILURE_COLOR, stroke_width="1.2", stroke_dasharray="4 3")
    cy = frame.middle(tl.failure.row)
    s = 6.5
    svg.add(
        f'<g class="lp-failure-marker"><title>{esc(tl.failure.title)}</title>'
        f'<circle cx="{num(fx)}" cy="{num(cy)}" r="9" fill="{FAILURE_COLOR}" stroke="#fff" stroke-width="1.5"/>'
        f'<path d="M{num(fx - s / 1.6)} {num(cy - s / 1.6)} L{num(fx + s / 1.6)} {num(cy + s / 1.6)} '
        f'M{num(fx + s / 1.6)} {num(cy - s / 1.6)} L{num(fx - s / 1.6)} {num(cy + s / 1.6)}" '
        'stroke="#fff" stroke-width="2.2" stroke-linecap="round"/></g>'
    )
    where = f" on {f.rank}" if f.rank else " (server)"
    label = f"✖ {f.cause.value}{where}, line {f.line}"
    width = text_width(label, 11.5)
    anchor, lx = _band_anchor(fx, width)
    # above the ready label when the two would overlap
    near_ready = tl.ready_x is not None and abs(frame.x(tl.ready_x) - fx) < width
    band_label_y = frame.band_y + 2 if near_ready else frame.band_y + 12
    svg.text(lx, band_label_y, label, 11.5, anchor, fill=FAILURE_COLOR, font_weight="bold", class_="lp-failure-label")


def _band_anchor(fx: float, width: float) -> tuple[str, float]:
    """How a label of ``width`` at ``fx`` stays inside the drawing: centred, else ending or starting by it."""
    if fx + width / 2 > WIDTH - 4:
        return "end", min(fx + 8, WIDTH - 4)
    if fx - width / 2 < 4:
        return "start", fx - 8
    return "middle", fx


def _bottom_axis(svg: Svg, frame: _Frame, offsets: list[float]) -> float:
    """Seconds since launch under the rows; returns the y below it."""
    tl = frame.tl
    y = frame.bottom_y + 4
    svg.line(PLOT_X, frame.bottom_y, PLOT_X + PLOT_W, frame.bottom_y, stroke="#888")
    if not tl.ordinal:
        for off in offsets:
            svg.line(frame.x(off), frame.bottom_y, frame.x(off), frame.bottom_y + 4, stroke="#888")
            _tick_label(svg, frame.x(off), y + 12, fmt_offset(off, tl.span))
        svg.text(12, y + 12, "time since launch", 10.5, "start", fill="#555")
    return y + 22


def _draw_bar(svg: Svg, b: Bar, ry: float, X: Any, scale: float, tl: Timeline, with_name: bool) -> None:
    if b.x0 is None:
        return
    color = PHASE_COLORS[b.phase]
    x0 = X(b.x0)
    x1 = x0 + 14 if _is_stub(b, scale) else X(b.x1)
    w = max(x1 - x0, 2.0)
    cls = f"lp-bar lp-{b.phase.value} lp-{b.kind}"
    if b.kind == "unknown":
        svg.rect(x0, ry, w, BAR_H, fill=color, fill_opacity="0.16", stroke=color, stroke_width="1.5",
                 stroke_dasharray="4 2", rx="2", class_=cls, title=b.title)  # fmt: skip
    else:
        svg.rect(x0, ry, w, BAR_H, fill=color, rx="2", class_=cls, title=b.title)
        decorate = _BAR_DECORATIONS.get(b.kind)
        if decorate is not None:
            decorate(svg, x0, ry, w)
    # the label: name and duration on the server row, duration on rank rows, if it fits
    text_fill = "#1d1d1d" if b.phase in DARK_TEXT or b.kind == "unknown" else "#ffffff"
    fitting = (text for text in _bar_labels(b, with_name or tl.ordinal) if text_width(text) + 8 <= w)
    text = next(fitting, None)
    if text is not None:
        svg.text(x0 + w / 2, ry + BAR_H - 4.2, text, 11, "middle", fill=text_fill, class_="lp-bar-label")


def _is_stub(b: Bar, scale: float) -> bool:
    """A phase without timestamps between two others gets a visible stub; one that only has an end
    (the log starts inside it) is drawn as it is, not over the phase after it."""
    if b.x1 is None or b.x0 is None:
        return True
    return b.kind == "unknown" and (b.x1 - b.x0) * scale < 14 and b.x0 != b.x1


def _open_fade(svg: Svg, x0: float, ry: float, w: float) -> None:
    """Still running: the bar fades out, an ellipsis after it."""
    svg.rect(x0 + w * 0.6, ry, w * 0.4, BAR_H, fill="url(#lp-open)")
    svg.text(x0 + w + 3, ry + BAR_H - 4, "…", 11, fill="#555")


def _cut_edge(svg: Svg, x0: float, ry: float, w: float) -> None:
    """Stopped by the failure: a torn right edge."""
    svg.add(f'<path d="M{num(x0 + w)} {num(ry)} l-3 4 l3 4 l-3 4 l3 4" fill="none" stroke="#fff" stroke-width="1.5"/>')


def _failure_frame(svg: Svg, x0: float, ry: float, w: float) -> None:
    """Where the failure struck: framed in the failure's colour."""
    svg.rect(x0, ry, w, BAR_H, fill="none", stroke=FAILURE_COLOR, stroke_width="2", rx="2")


# what a bar of each kind draws over its plain rectangle (a closed bar: nothing)
_BAR_DECORATIONS: dict[str, Callable[[Svg, float, float, float], None]] = {
    "open": _open_fade,
    "cut": _cut_edge,
    "failed": _failure_frame,
}


def _bar_labels(b: Bar, named: bool) -> list[str]:
    """A bar's possible labels, longest first (the first that fits is written)."""
    if b.kind == "unknown":
        return [f"{b.phase.value}: no timestamps", f"{b.phase.value} ?", "?"]
    dur = fmt_duration(b.duration)
    if b.kind == "open" and b.duration is not None:
        dur = f"{dur}+"  # a lower bound
    return [f"{b.phase.value} {dur}", dur, b.phase.value] if named else [dur]


def _nice_max(value: float) -> float:
    for step in (1, 2, 5, 10, 20, 25, 40, 50, 80, 100, 150, 200, 250, 300, 400, 500, 1000):
        if value <= step:
            return float(step)
    return float(math.ceil(value / 100) * 100)


@dataclass
class _MemoryPlot:
    """The memory chart's vertical scale: ``height`` px from ``vmax`` GB at ``y0`` down to 0 GB; and
    whether it draws the capture threshold."""

    y0: float
    height: float
    vmax: float
    captured: bool

    def y(self, gb: float) -> float:
        return self.y0 + self.height - gb / self.vmax * self.height


def _draw_memory(tl: Timeline, y: float, X: Any) -> tuple[str, float]:
    svg = Svg()
    top = y
    svg.add(f'<g class="lp-memory" font-family="{FONT}">')
    svg.text(12, y + 14, "free GPU memory", 11.5, "start", fill="#222", font_weight="bold")
    if not tl.memory:
        svg.text(PLOT_X, y + 12, "no free-memory readings in this run of the log", 11, fill="#666")
        svg.add("</g>")
        return str(svg), 26
    plot = _memory_plot(tl, y + 8)
    svg.text(12, y + 29, "per rank at phase", 10.5, "start", fill="#555")
    svg.text(12, y + 43, "boundaries, GB", 10.5, "start", fill="#555")
    for tick in (0.0, plot.vmax / 2, plot.vmax):
        svg.line(PLOT_X, plot.y(tick), PLOT_X + PLOT_W, plot.y(tick), stroke="#e3e5e8")
        svg.text(PLOT_X - 6, plot.y(tick) + 4, f"{tick:g}", 10, "end", fill="#555")
    placed: list[tuple[float, float, float, float]] = []  # label boxes already drawn
    if plot.captured:
        placed.append(_draw_threshold(svg, plot))
    if tl.failure is not None:
        fx = X(tl.failure.x)
        svg.line(fx, plot.y0 - 4, fx, plot.y0 + plot.height, stroke=FAILURE_COLOR, stroke_width="1.2", stroke_dasharray="4 3")
    lowest = _draw_memory_lines(svg, tl, plot, X)
    _draw_memory_values(svg, tl.memory[lowest], lowest, plot, X, placed)
    if len(tl.memory) > 1:
        svg.text(12, y + 62, f"bold: {lowest} (lowest)", 10.5, "start", fill="#444")
        svg.text(12, y + 76, f"thin: {len(tl.memory) - 1} other rank(s)", 10.5, "start", fill="#444")
    y = plot.y0 + plot.height + 6
    if tl.memory_unplaced:
        text = "no time for: " + ", ".join(tl.memory_unplaced[:6]) + (" …" if len(tl.memory_unplaced) > 6 else "")
        svg.text(PLOT_X, y + 10, text, 10.5, fill="#a15c00")
        y += 14
    svg.add("</g>")
    return str(svg), y - top + 4


def _memory_plot(tl: Timeline, y0: float) -> _MemoryPlot:
    values = [gb for pts in tl.memory.values() for _, gb, _ in pts]
    # the threshold is about CUDA graph capture: drawn only for a run that reached it
    captured = any(p.name is Phase.CUDA_GRAPH_CAPTURE for p in tl.report.phases)
    vmax = _nice_max(max(max(values), LOW_CAPTURE_MEMORY_GB * 1.6 if captured else 0.0))
    return _MemoryPlot(y0, 96.0, vmax, captured)


def _draw_threshold(svg: Svg, plot: _MemoryPlot) -> tuple[float, float, float, float]:
    """The memory-pressure zone under LOW_CAPTURE_MEMORY_GB; returns its label's box."""
    ty = plot.y(LOW_CAPTURE_MEMORY_GB)
    threshold = f"memory pressure: below {LOW_CAPTURE_MEMORY_GB:g} GB free at CUDA graph capture"
    svg.rect(PLOT_X, ty, PLOT_W, plot.y0 + plot.height - ty, fill="#d01c1c", fill_opacity="0.06")
    svg.line(PLOT_X, ty, PLOT_X + PLOT_W, ty, stroke=FAILURE_COLOR, stroke_width="1.2", stroke_dasharray="6 4")
    svg.text(PLOT_X + 4, ty - 4, threshold, 10.5, "start", fill=FAILURE_COLOR, class_="lp-threshold")
    return (PLOT_X, ty - 16, PLOT_X + 8 + text_width(threshold, 10.5), ty)


def _draw_memory_lines(svg: Svg, tl: Timeline, plot: _MemoryPlot, X: Any) -> str:
    """One thin step line per rank; the rank with the lowest reading drawn bold (and returned)."""
    lowest = min(tl.memory, key=lambda r: (min(gb for _, gb, _ in tl.memory[r]), rank_sort_key(r)))
    opacity = 0.8 if len(tl.memory) <= 4 else max(0.15, 2.0 / len(tl.memory))
    for rank, pts in tl.memory.items():
        if rank == lowest:
            continue
        svg.add(_step_path(pts, X, plot.y, "#7a8aa0", 1.2, opacity, f"free GPU memory on {rank}"))
    svg.add(_step_path(tl.memory[lowest], X, plot.y, "#1f3b63", 2.2, 1.0, f"free GPU memory on {lowest} (lowest)"))
    return lowest


def _draw_memory_values(
    svg: Svg,
    pts: list[tuple[float, float, str]],
    rank: str,
    plot: _MemoryPlot,
    X: Any,
    placed: list[tuple[float, float, float, float]],
) -> None:
    """The lowest rank's readings as points; value labels for the lowest reading first, then the
    first and last, then the rest where they fit."""
    order = sorted(range(len(pts)), key=lambda i: (pts[i][1] != min(gb for _, gb, _ in pts), i not in (0, len(pts) - 1), i))
    for i in order:
        x, gb, boundary = pts[i]
        px, py = X(x), plot.y(gb)
        color = FAILURE_COLOR if plot.captured and gb < LOW_CAPTURE_MEMORY_GB else "#1f3b63"
        svg.add(
            f'<circle cx="{num(px)}" cy="{num(py)}" r="3" fill="{color}" class="lp-mem-point">'
            f"<title>{esc(rank)} {esc(boundary)}: {gb:.2f} GB free</title></circle>"
        )
        label = f"{gb:.1f}"
        spot = _free_spot(px, py, text_width(label, 10.5), plot, placed)
        if spot is not None:
            svg.text(spot[0], spot[1], label, 10.5, "start", fill=color, font_weight="bold")


def _free_spot(
    px: float, py: float, w: float, plot: _MemoryPlot, placed: list[tuple[float, float, float, float]]
) -> tuple[float, float] | None:
    """Where a label ``w`` px wide goes by the point (px, py): right above, right below, left above or
    left below, the first that stays in the plot and clear of ``placed`` (its box is added to it)."""
    for lx, ly in ((px + 4, py - 5), (px + 4, py + 14), (px - 4 - w, py - 5), (px - 4 - w, py + 14)):
        box = (lx - 1, ly - 10, lx + w + 1, ly + 2)
        if box[2] > PLOT_X + PLOT_W + RIGHT_PAD - 2 or box[1] < plot.y0 - 4 or box[3] > plot.y0 + plot.height + 14:
            continue
        if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
            continue
        placed.append(box)
        return lx, ly
    return None


def _step_path(pts: list[tuple[float, float, str]], X: Any, Y: Any, color: str, width: float, opacity: float, title: str) -> str:
    d = f"M{num(X(pts[0][0]))} {num(Y(pts[0][1]))}"
    for x, gb, _ in pts[1:]:
        d += f" H{num(X(x))} V{num(Y(gb))}"
    return (
        f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}" stroke-opacity="{opacity:.2f}" '
        f'stroke-linejoin="round"><title>{esc(title)}</title></path>'
    )
