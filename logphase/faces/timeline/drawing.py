"""Drawing the model as SVG: the Gantt chart with its axes, bars, markers and gaps, and the
free-memory step chart under it."""

from __future__ import annotations

import math
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
from logphase.pipeline.phases import Phase
from logphase.pipeline.report import LOW_CAPTURE_MEMORY_GB, rank_sort_key


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
            near = X(rel) - PLOT_X < text_width(label, 10.5) / 2
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
        weight = "bold" if row.kind in ("server", "node") else None
        label = row.label if row.kind != "server" else "server (all ranks)"
        svg.add(
            f'<text x="{PLOT_X - 10}" y="{num(middle(i) + 4)}" font-size="11.5" text-anchor="end" fill="#222"'
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
            _draw_bar(svg, b, ry, X, scale, tl, with_name=row.kind in ("server", "node"))
    # time between phases, on the server row
    for x0, x1, gap in tl.gaps:
        gx0, gx1 = X(x0), X(x1)
        ry = tops[0] + (ROW_H - BAR_H) / 2
        lines = f", lines {gap.first_line}-{gap.last_line}" if gap.first_line and gap.last_line else ""
        then = f"and {gap.before.value}" if gap.before is not None else "and the end of the run, no phase since"
        title = f"{fmt_duration(gap.duration_s)} between {gap.after.value} {then}, in no phase{lines}"
        svg.rect(gx0, ry, max(gx1 - gx0, 2.0), BAR_H, fill="url(#lp-gap)", stroke="#9aa0a6", stroke_width="1",
                 stroke_dasharray="3 2", rx="2", class_="lp-gap", title=title)  # fmt: skip
        label = f"? {fmt_duration(gap.duration_s)}"
        if text_width(label) + 8 <= gx1 - gx0:
            svg.text((gx0 + gx1) / 2, ry + BAR_H - 4.2, label, 11, "middle", fill="#444", class_="lp-gap-label")
    # ready marker
    if tl.ready_x is not None and not tl.ordinal:
        rx = X(tl.ready_x)
        lane = next((b.lane for b in tl.rows[0].bars if b.phase is Phase.READY), 0)
        cy = tops[0] + ROW_H / 2 + lane * LANE_H
        svg.add(
            f'<path d="M{num(rx)} {num(cy - 8)} L{num(rx + 7)} {num(cy)} L{num(rx)} {num(cy + 8)} L{num(rx - 7)} {num(cy)} Z" '
            f'fill="{READY_COLOR}" stroke="#fff" stroke-width="1.5"><title>ready</title></path>'
        )
        label = f"ready +{fmt_duration(tl.ready_x)}"
        anchor = "end" if rx + text_width(label) > WIDTH - 4 else "middle"
        svg.text(rx - 4 if anchor == "end" else rx, band_y + 12, label, 11, anchor, fill=READY_COLOR, font_weight="bold")
    # consequences (lesser markers), then the failure on top
    for m in tl.echoes:
        cx, cy = X(m.x), middle(m.row)
        svg.add(
            f'<circle cx="{num(cx)}" cy="{num(cy)}" r="4.5" fill="#fff7ed" stroke="{ECHO_COLOR}" stroke-width="1.6" '
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
            f'<circle cx="{num(fx)}" cy="{num(cy)}" r="9" fill="{FAILURE_COLOR}" stroke="#fff" stroke-width="1.5"/>'
            f'<path d="M{num(fx - s / 1.6)} {num(cy - s / 1.6)} L{num(fx + s / 1.6)} {num(cy + s / 1.6)} '
            f'M{num(fx + s / 1.6)} {num(cy - s / 1.6)} L{num(fx - s / 1.6)} {num(cy + s / 1.6)}" '
            'stroke="#fff" stroke-width="2.2" stroke-linecap="round"/></g>'
        )
        where = f" on {f.rank}" if f.rank else " (server)"
        label = f"✖ {f.cause.value}{where}, line {f.line}"
        width = text_width(label, 11.5)
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
            label = fmt_offset(off, tl.span)
            near = X(off) - PLOT_X < text_width(label, 10.5) / 2
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
    # a phase without timestamps between two others gets a visible stub; one that only has an end
    # (the log starts inside it) is drawn as it is, not over the phase after it
    stub = b.kind == "unknown" and (b.x1 - b.x0) * scale < 14 and b.x0 != b.x1 if b.x1 is not None else True
    x1 = x0 + 14 if stub else X(b.x1)
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
            svg.add(f'<path d="M{num(x0 + w)} {num(ry)} l-3 4 l3 4 l-3 4 l3 4" fill="none" stroke="#fff" stroke-width="1.5"/>')
        elif b.kind == "failed":
            svg.rect(x0, ry, w, BAR_H, fill="none", stroke=FAILURE_COLOR, stroke_width="2", rx="2")
    # the label: name and duration on the server row, duration on rank rows, if it fits
    text_fill = "#1d1d1d" if b.phase in DARK_TEXT or b.kind == "unknown" else "#ffffff"
    dur = fmt_duration(b.duration) if b.kind != "unknown" else "no timestamps"
    if b.kind in ("open", "cut") and b.duration is not None:
        dur = f"{dur}+" if b.kind == "open" else dur
    candidates = [f"{b.phase.value} {dur}", dur, b.phase.value] if with_name or tl.ordinal else [dur]
    if b.kind == "unknown":
        candidates = [f"{b.phase.value}: no timestamps", f"{b.phase.value} ?", "?"]
    for text in candidates:
        if text_width(text) + 8 <= w:
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
    # the threshold is about CUDA graph capture: drawn only for a run that reached it
    captured = any(p.name is Phase.CUDA_GRAPH_CAPTURE for p in tl.report.phases)
    vmax = _nice_max(max(max(values), LOW_CAPTURE_MEMORY_GB * 1.6 if captured else 0.0))

    def Y(gb: float) -> float:
        return y0 + h - gb / vmax * h

    svg.text(12, y + 29, "per rank at phase", 10.5, "start", fill="#555")
    svg.text(12, y + 43, "boundaries, GB", 10.5, "start", fill="#555")
    for tick in (0.0, vmax / 2, vmax):
        svg.line(PLOT_X, Y(tick), PLOT_X + PLOT_W, Y(tick), stroke="#e3e5e8")
        svg.text(PLOT_X - 6, Y(tick) + 4, f"{tick:g}", 10, "end", fill="#555")
    placed: list[tuple[float, float, float, float]] = []  # label boxes already drawn
    if captured:
        ty = Y(LOW_CAPTURE_MEMORY_GB)
        threshold = f"memory pressure: below {LOW_CAPTURE_MEMORY_GB:g} GB free at CUDA graph capture"
        svg.rect(PLOT_X, ty, PLOT_W, y0 + h - ty, fill="#d01c1c", fill_opacity="0.06")
        svg.line(PLOT_X, ty, PLOT_X + PLOT_W, ty, stroke=FAILURE_COLOR, stroke_width="1.2", stroke_dasharray="6 4")
        svg.text(PLOT_X + 4, ty - 4, threshold, 10.5, "start", fill=FAILURE_COLOR, class_="lp-threshold")
        placed.append((PLOT_X, ty - 16, PLOT_X + 8 + text_width(threshold, 10.5), ty))
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
    order = sorted(range(len(pts)), key=lambda i: (pts[i][1] != min(gb for _, gb, _ in pts), i not in (0, len(pts) - 1), i))
    for i in order:
        x, gb, boundary = pts[i]
        px, py = X(x), Y(gb)
        color = FAILURE_COLOR if captured and gb < LOW_CAPTURE_MEMORY_GB else "#1f3b63"
        svg.add(
            f'<circle cx="{num(px)}" cy="{num(py)}" r="3" fill="{color}" class="lp-mem-point">'
            f"<title>{esc(lowest)} {esc(boundary)}: {gb:.2f} GB free</title></circle>"
        )
        label = f"{gb:.1f}"
        w = text_width(label, 10.5)
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
    d = f"M{num(X(pts[0][0]))} {num(Y(pts[0][1]))}"
    for x, gb, _ in pts[1:]:
        d += f" H{num(X(x))} V{num(Y(gb))}"
    return (
        f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}" stroke-opacity="{opacity:.2f}" '
        f'stroke-linejoin="round"><title>{esc(title)}</title></path>'
    )
