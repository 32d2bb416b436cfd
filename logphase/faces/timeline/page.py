"""The page around the chart: one self-contained HTML document (inline SVG and CSS, nothing
fetched), and the drawing alone as an SVG file."""

from __future__ import annotations

import re
from collections.abc import Mapping

from logphase.faces.text import line_counts, slowest_rank
from logphase.faces.timeline.drawing import Svg, defs, draw_chart
from logphase.faces.timeline.layout import Timeline, build_timeline, seconds_since
from logphase.faces.timeline.style import (
    CONFIG_SHOWN,
    ECHO_COLOR,
    FAILURE_COLOR,
    FONT,
    MONO,
    PHASE_COLORS,
    READY_COLOR,
    SCHEDULER_SHOWN,
    WIDTH,
    compress_ranks,
    esc,
    num,
    text_width,
)
from logphase.faces.wording import clip, clock_time, fmt_duration, headline, plural
from logphase.reporting.report import FailureReport, PhaseReport, Report, UnaccountedReport
from logphase.vocabulary.phases import PHASE_ORDER, Phase

# -- the text around the chart ---------------------------------------------------------------------


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


# a phase-table row: (phase, start, since launch, duration, slowest rank, free memory); phase None is time between phases
PhaseRow = tuple[Phase | None, str, str, str, str, str]


def _phase_rows(report: Report, tl: Timeline, nodes: Mapping[str, str] | None = None) -> list[PhaseRow]:
    """Each phase of the report, followed by the time after it that no phase accounts for; then the
    phases the report lacks."""
    out: list[PhaseRow] = []
    gaps: dict[Phase, list[UnaccountedReport]] = {}
    for g in report.unaccounted:
        gaps.setdefault(g.after, []).append(g)
    avail = report.memory.avail_gb
    for p in report.phases:
        start = p.start.split("T")[-1] if p.start else "no timestamp"
        slowest = slowest_rank(p, nodes, len(report.ranks))
        duration = fmt_duration(p.duration_s) + _phase_state(report, p)
        out.append((p.name, start, _since_launch(tl, p.start), duration, slowest, _free_memory(avail, p.name)))
        for gap in gaps.get(p.name, []):
            lines = f"lines {gap.first_line}–{gap.last_line}" if gap.first_line and gap.last_line else ""
            out.append((None, gap.start.split("T")[-1], "", fmt_duration(gap.duration_s), lines, ""))
    return out + _missing_phase_rows(report)


def _since_launch(tl: Timeline, ts: str | None) -> str:
    """'+42 s', '+3:05'; empty when the time is not known."""
    when = seconds_since(tl.t0, ts)
    if when is None:
        return ""
    seconds = round(when)
    return f"+{seconds} s" if seconds < 60 else f"+{seconds // 60}:{seconds % 60:02d}"


def _phase_state(report: Report, p: PhaseReport) -> str:
    """' (failed here)' on the failure's phase (or when it failed later, while serving), ' (open)' on
    a starting server's unfinished phase."""
    f = report.failure
    if f is not None and f.phase == p.name:
        if f.while_serving and f.ts:
            return f" (then failed while serving at {clock_time(f.ts, report.ready_at)})"
        return " (failed here)"
    return " (open)" if p.end is None and report.outcome == "starting" else ""


def _missing_phase_rows(report: Report) -> list[PhaseRow]:
    """The phases the report lacks: skipped by the log before the furthest one seen, else not reached."""
    seen = {p.name for p in report.phases}
    furthest = max((p.name.order for p in report.phases), default=-1)
    return [
        (phase, "", "", "not in the log" if phase.order < furthest else "not reached", "", "")
        for phase in PHASE_ORDER
        if phase not in seen
    ]


def _free_memory(avail: Mapping[str, Mapping[str, float]], phase: Phase) -> str:
    """The lowest free memory over ranks at the phase's start and end: '30.2 → 20.9 GB', or one
    reading said as such ('20.9 GB at end') when the other was not logged (never a bare '?')."""
    low: dict[str, str] = {}
    for edge in ("start", "end"):
        values = [v[f"{phase.value}_{edge}"] for v in avail.values() if f"{phase.value}_{edge}" in v]
        if values:
            low[edge] = f"{min(values):.1f}"
    if len(low) == 2:
        return f"{low['start']} → {low['end']} GB"
    return next((f"{value} GB at {edge}" for edge, value in low.items()), "")


# a configuration value may break after these (a list's commas, a path's slashes, key=value ...)
_BREAKS_AFTER = re.compile(r"(?<=[,/=:;&|])")


def breakable(value: str) -> str:
    """A configuration value as HTML that wraps only after its separators (``<wbr>``), never
    inside a word: the page's CSS keeps words whole."""
    return "<wbr>".join(esc(piece) for piece in _BREAKS_AFTER.split(value))


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
.config td:nth-child(even) {{ font-family: {MONO}; font-size: 12px; overflow-wrap: break-word; word-break: normal; }}
.config td:nth-child(odd) {{ color: #555; }}
footer {{ color: #888; font-size: 11.5px; margin-top: 12px; }}
"""


def render_html(report: Report, nodes: Mapping[str, str] | None = None) -> str:
    """The whole page: one self-contained HTML document. ``nodes`` (rank -> node) groups the
    ranks of a merged multi-node report by node."""
    tl = build_timeline(report, nodes)
    out = [
        *_head_html(report),
        *_failure_html(report),
        *_warnings_html(report),
        *_chart_html(report, tl),
        *_phases_column(report, tl, nodes),
        *_config_column(report),
        f"<footer>logphase · lines {esc(line_counts(report.lines))} · times are the log's own (no time zone)</footer>",
        "</main></body></html>",
    ]
    return "\n".join(out) + "\n"


def _head_html(report: Report) -> list[str]:
    """The document's head, the headline and the source, and a line of the model, ranks and run."""
    meta = [x for x in (_model_text(report), _ranks_text(report), _run_text(report)) if x]
    return [
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
        '<div class="meta">' + "".join(f"<span>{esc(x)}</span>" for x in meta) + "</div>",
    ]


def _failure_html(report: Report) -> list[str]:
    """The failure's cause, where it struck, its message and hint, and its first consequences."""
    f = report.failure
    if f is None:
        return []
    where = f"on {f.rank}" if f.rank else "in the server process"
    out = [
        '<section class="failure" id="failure">',
        f'<div><span class="cause" id="cause">✖ {esc(f.cause.value)}</span> '
        f"{esc(where)}, in {esc(f.phase.value if f.phase else 'an unknown phase')}, "
        f"<b>line {f.line}</b> of the log</div>",
        f"<pre>{esc(f.message)}</pre>",
        f'<div class="hint"><b>hint</b> {esc(f.hint)}</div>',
    ]
    if f.consequences:
        out.extend(_echoes_html(f))
    out.append("</section>")
    return out


def _echoes_html(f: FailureReport) -> list[str]:
    n = f.echo_count()
    out = [
        f'<div class="echoes">○ {n} other line{"s follow" if n > 1 else " follows"} from it: '
        f"consequence{'s' if n > 1 else ''}, not the cause (hollow markers on the chart):<ul>"
    ]
    for c in f.consequences[:3]:
        message = clip(c.message.splitlines()[0] if c.message else "", 150)
        out.append(f"<li>line {c.line}: {esc(message)}</li>")
    if n > 3:
        out.append(f"<li>and {n - 3} more</li>")
    out.append("</ul></div>")
    return out


def _warnings_html(report: Report) -> list[str]:
    if not report.warnings:
        return []
    out = ['<section class="warnings" id="warnings">']
    for w in report.warnings:
        line = f" (line {w.line})" if w.line else ""
        out.append(f'<p class="warn"><span class="kind">{esc(w.kind)}</span>{esc(w.message)}{esc(line)}</p>')
    out.append("</section>")
    return out


def _chart_html(report: Report, tl: Timeline) -> list[str]:
    """The drawing inline, its legend and the notes on how it was drawn."""
    chart, height = draw_chart(tl, 0)
    out = [
        '<section class="chart">',
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {num(height)}" width="{WIDTH}" '
        f'height="{num(height)}" role="img" aria-label="startup timeline">{defs()}{chart}</svg>',
        '<div class="legend">' + _legend_html(report, tl) + "</div>",
    ]
    if tl.notes:
        out.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in tl.notes) + "</ul>")
    out.append("</section>")
    return out


def _phases_column(report: Report, tl: Timeline, nodes: Mapping[str, str] | None) -> list[str]:
    """The left column under the chart: the phase table (opens the right column)."""
    out = [
        '<div class="cols"><section><h2>Phases</h2><table class="phases">',
        '<tr><th>phase</th><th>start</th><th></th><th class="num">duration</th><th>slowest rank</th>'
        '<th class="num" title="lowest over ranks">free GPU memory</th></tr>',
    ]
    out.extend(_phase_row_html(*row) for row in _phase_rows(report, tl, nodes))
    out.append("</table></section><section>")
    return out


def _phase_row_html(phase: Phase | None, start: str, rel: str, duration: str, slowest: str, memory: str) -> str:
    if phase is None:  # time between phases
        return (
            '<tr class="gap"><td><span class="sw gapsw"></span><i>between phases</i></td>'
            f'<td>{esc(start)}</td><td></td><td class="num">{esc(duration)}</td><td>{esc(slowest)}</td><td></td></tr>'
        )
    dim = ' class="dim"' if not start and not rel else ""
    return (
        f'<tr{dim}><td><span class="sw" style="background:{PHASE_COLORS[phase]}"></span>{esc(phase.value)}</td>'
        f'<td>{esc(start)}</td><td class="num">{esc(rel)}</td><td class="num">{esc(duration)}</td><td>{esc(slowest)}</td>'
        f'<td class="num">{esc(memory)}</td></tr>'
    )


def _config_column(report: Report) -> list[str]:
    """The right column: the key configuration in two columns of name and value (closes both columns)."""
    items = config_items(report)
    out: list[str] = []
    if items:
        out.append('<h2>Configuration</h2><table class="config">')
        half = (len(items) + 1) // 2
        for left, right in zip(items[:half], items[half:] + [("", "")] * (2 * half - len(items)), strict=True):
            out.append(
                f"<tr><td>{esc(left[0])}</td><td>{breakable(left[1])}</td><td>{esc(right[0])}</td><td>{breakable(right[1])}</td></tr>"
            )
        out.append("</table>")
    out.append("</section></div>")
    return out


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


def render_svg(report: Report, nodes: Mapping[str, str] | None = None) -> str:
    """The picture alone, as one standalone SVG document: headline, failure, chart, legend, warnings."""
    tl = build_timeline(report, nodes)
    svg = Svg()
    y = _svg_head(svg, report, 24.0)
    y = _svg_failure(svg, report, y)
    y += 12
    chart, height = draw_chart(tl, y)
    svg.add(chart)
    y += height + 8
    _svg_legend(svg, report, y)
    y = _svg_notes(svg, report, tl, y)
    y += 14
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {num(y)}" width="{WIDTH}" height="{num(y)}" '
        f'font-family="{FONT}" role="img" aria-label="startup timeline">'
        f'<rect width="{WIDTH}" height="{num(y)}" fill="#ffffff"/>{defs()}\n{svg}\n</svg>\n'
    )


_STATUS_COLORS = {"failed": FAILURE_COLOR, "ready": READY_COLOR, "starting": "#b26a00"}


def _svg_head(svg: Svg, report: Report, y: float) -> float:
    """The title, the headline in the outcome's colour, the source; then the model, ranks and run."""
    svg.text(12, y, "Startup timeline", 17, font_weight="bold", fill="#1d1d1f")
    svg.text(180, y, headline(report), 15, font_weight="bold", fill=_STATUS_COLORS[report.outcome], id="outcome")
    svg.text(180 + text_width(headline(report), 15) + 20, y, report.source, 12, fill="#444")
    y += 18
    meta = " · ".join(x for x in (_model_text(report), _ranks_text(report), _run_text(report)) if x)
    if meta:
        svg.text(12, y, meta, 12, fill="#444")
        y += 8
    return y


def _svg_failure(svg: Svg, report: Report, y: float) -> float:
    """The cause and where it struck, the message's first line and the hint (wrapped), the first consequence."""
    f = report.failure
    if f is None:
        return y
    y += 12
    where = f"on {f.rank}" if f.rank else "in the server process"
    svg.text(12, y, f"✖ {f.cause.value}", 14, font_weight="bold", fill=FAILURE_COLOR, id="cause")
    svg.text(
        20 + text_width(f"✖ {f.cause.value}", 14),
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
        svg.text(24, y, _first_echo(f), 11.5, fill=ECHO_COLOR)
    return y


def _first_echo(f: FailureReport) -> str:
    verb = "follows" if f.echo_count() == 1 else "follow"
    first = f.consequences[0]
    return f"○ {plural(f.echo_count(), 'other line')} {verb} from it (first: line {first.line}): " + clip(
        first.message.splitlines()[0] if first.message else "", 120
    )


def _svg_legend(svg: Svg, report: Report, y: float) -> None:
    """Each phase's colour, name and duration, in one line."""
    x = 12.0
    for p in report.phases:
        label = f"{p.name.value} {fmt_duration(p.duration_s)}"
        svg.rect(x, y - 9, 11, 11, fill=PHASE_COLORS[p.name], rx="2")
        svg.text(x + 15, y, label, 11.5, fill="#222")
        x += 15 + text_width(label, 11.5) + 16


def _svg_notes(svg: Svg, report: Report, tl: Timeline, y: float) -> float:
    """Under the legend: how the chart was drawn, the warnings, the key configuration."""
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
    return y
