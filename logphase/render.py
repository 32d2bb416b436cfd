"""The short human summary of a report (what ``logphase parse`` prints without --json)."""

from __future__ import annotations

from logphase.report import Report


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 120:
        return f"{value / 60:.1f} min"
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def render_text(report: Report) -> str:
    out: list[str] = []
    phase = report.phase.value if report.phase else "unknown"
    headline = {
        "ready": f"READY after {_seconds(report.total_startup_s)}",
        "failed": f"FAILED in {phase}",
        "starting": f"STARTING: in {phase}, {_seconds(report.total_startup_s)} so far",
    }[report.outcome]
    runs = f" (run {report.runs} of {report.runs}, from line {report.run_start_line})" if report.runs > 1 else ""
    out.append(f"{report.source}: {headline}{runs}")
    model = report.config.get("model_path")
    if model is not None:
        parallel = ", ".join(
            f"{k.removesuffix('_size')}={report.config[k]}"
            for k in ("tp_size", "dp_size", "ep_size", "pp_size")
            if report.config.get(k) not in (None, 1)
        )
        mfs = report.config.get("mem_fraction_static")
        details = ", ".join(x for x in (parallel, f"mem_fraction_static={mfs}" if mfs is not None else "") if x)
        out.append(f"  model {model}" + (f" ({details})" if details else ""))
    if report.ranks:
        shown = ", ".join(report.ranks[:8]) + (f", ... ({len(report.ranks)} ranks)" if len(report.ranks) > 8 else "")
        out.append(f"  ranks {shown}")
    if report.phases:
        out.append("")
        out.append(f"  {'phase':<20} {'start':<20} {'duration':>10}  slowest rank")
        for p in report.phases:
            slowest = ""
            if len(p.ranks) > 1:
                rank, span = max(p.ranks.items(), key=lambda kv: kv[1].duration_s or 0.0)
                slowest = f"{rank} {_seconds(span.duration_s)}"
            still = " (open)" if p.end is None and report.outcome == "starting" and p.name == report.phase else ""
            start = (p.start or "-").replace("T", " ")
            out.append(f"  {p.name.value:<20} {start:<20} {_seconds(p.duration_s):>10}  {slowest}{still}")
    f = report.failure
    if f is not None:
        out.append("")
        where = f" on {f.rank}" if f.rank else ""
        out.append(f"  cause   {f.cause.value}{where}, line {f.line}")
        out.append(f"  error   {f.message.splitlines()[0][:240] if f.message else '-'}")
        out.append(f"  hint    {f.hint}")
        if f.consequences:
            out.append(f"  echoes  {len(f.consequences)} later lines are consequences (first: line {f.consequences[0].line})")
    if report.warnings:
        out.append("")
        for w in report.warnings:
            line = f" (line {w.line})" if w.line else ""
            out.append(f"  warning {w.kind}: {w.message}{line}")
    lines = report.lines
    out.append("")
    out.append(
        f"  lines {lines.total}: {lines.events} in events, {lines.unrecognized} unrecognized, {lines.blank} blank"
        + (f", {lines.ignored} before --since" if lines.ignored else "")
    )
    return "\n".join(out) + "\n"
