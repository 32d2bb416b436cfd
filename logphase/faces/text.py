"""The short human summary of a report (what ``logphase parse`` prints without --json)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import IO

from logphase.faces.wording import clip, first_line, fmt_duration, headline, plural, server_label
from logphase.folding.runs import seconds_between
from logphase.recognising.detect import summary_setting
from logphase.reporting.report import FailureReport, LinesReport, PhaseReport, RankSpan, Report, StepReport, UnaccountedReport
from logphase.vocabulary.phases import Phase

# ANSI SGR codes; used only on a terminal, and never with NO_COLOR set (https://no-color.org)
_STYLES = {"ready": "1;32", "failed": "1;31", "starting": "1;33", "cause": "31", "warning": "33", "dim": "2", "bold": "1"}


def use_color(stream: IO[str] | IO[bytes], mode: str = "auto") -> bool:
    """``mode`` is auto (a terminal, and NO_COLOR unset), always or never."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _paint(text: str, style: str, color: bool) -> str:
    return f"\x1b[{_STYLES[style]}m{text}\x1b[0m" if color else text


def slowest_rank(p: PhaseReport, nodes: Mapping[str, str] | None = None, all_ranks: int | None = None) -> str:
    """'TP3 32 s' (in a merged report with its node: 'TP3 on node1 32 s'), or 'same on all' when
    every rank spans the phase's own row: as long, from the same start to the same end (and, given
    ``all_ranks``, every rank of the report is there). A merged server's row runs from the first rank
    in to the last one out, so ranks that each took as long but started later (another node) are
    not the same: the last one out is shown ('TP3 on node1 8.0 s, last out')."""
    spans = [(rank, span) for rank, span in p.ranks.items() if span.duration_s is not None]
    if len(p.ranks) < 2 or not spans:
        return ""
    durations = [span.duration_s or 0.0 for _, span in spans]
    as_long = max(durations) - min(durations) < 0.5
    in_step = all(_spans_row(p, span) for _, span in spans)
    if as_long and in_step and all_ranks in (None, len(p.ranks)):
        return "same on all"
    if as_long:
        rank, span = max(spans, key=lambda kv: _apart(p.start, kv[1].end or kv[1].start) or 0.0)
        last_out = "" if in_step else ", last out"
    else:
        rank, span = max(spans, key=lambda kv: kv[1].duration_s or 0.0)
        last_out = ""
    node = (nodes or {}).get(rank)
    where = f" on {node}" if node and node not in rank else ""
    return f"{rank}{where} {fmt_duration(span.duration_s)}{last_out}"


def _spans_row(p: PhaseReport, span: RankSpan) -> bool:
    """Whether the rank was in the phase from the row's start to its end (within the log's 1 s stamps)."""
    for row, own in ((p.start, span.start), (p.end, span.end)):
        apart = _apart(row, own)
        if apart is not None and abs(apart) >= 0.5:
            return False
    return True


def _apart(a: str | None, b: str | None) -> float | None:
    """Seconds from a to b; None when either is missing or not a time (a hand-edited saved report)."""
    try:
        return seconds_between(a, b)
    except ValueError:
        return None


def render_text(report: Report, color: bool = False, nodes: Mapping[str, str] | None = None) -> str:
    """``nodes`` (rank -> node, a merged report's) names the node of the slowest rank."""
    out: list[str] = []
    for section in _SECTIONS:
        out.extend(section(report, color, nodes))
    return "\n".join(out) + "\n"


def _title(report: Report, color: bool, nodes: Mapping[str, str] | None) -> list[str]:
    runs = f" (run {report.run} of {report.runs}, from line {report.run_start_line})" if report.runs > 1 else ""
    label = server_label(report)
    server = f" ({label})" if label else ""
    return [f"{report.source}{server}: {_paint(headline(report), report.outcome, color)}{runs}"]


def _model(report: Report, color: bool, nodes: Mapping[str, str] | None) -> list[str]:
    model = summary_setting(report.server, report.config, "model")
    if model is None:
        return []
    sizes = ((name, summary_setting(report.server, report.config, name)) for name in ("tp", "dp", "ep", "pp"))
    parallel = ", ".join(f"{name}={setting[1]}" for name, setting in sizes if setting is not None and setting[1] != 1)
    memory = summary_setting(report.server, report.config, "memory")
    details = ", ".join(x for x in (parallel, f"{memory[0]}={memory[1]}" if memory is not None else "") if x)
    return [f"  model {model[1]}" + (f" ({details})" if details else "")]


def _ranks(report: Report, color: bool, nodes: Mapping[str, str] | None) -> list[str]:
    if not report.ranks:
        return []
    shown = ", ".join(report.ranks[:8]) + (f", ... ({len(report.ranks)} ranks)" if len(report.ranks) > 8 else "")
    return [f"  ranks {shown}"]


# where the year of stamps that print none came from, as the note under the title says it
_YEAR_FROM = {"wrapper": "the wrapper's stamps", "file_time": "the file's time", "current_year": "today's date"}


def _year(report: Report, color: bool, nodes: Mapping[str, str] | None) -> list[str]:
    """'  year 2026 from the file's time (the stamps print none)': said whenever it was inferred."""
    inferred = report.year_inferred
    if inferred is None:
        return []
    return [_paint(f"  year {inferred.year} from {_YEAR_FROM[inferred.source]} (the stamps print none)", "dim", color)]


def _phases(report: Report, color: bool, nodes: Mapping[str, str] | None) -> list[str]:
    """The phase table: one row per phase, each followed by the time after it that no phase accounts for."""
    if not report.phases:
        return []
    out = ["", _paint(f"  {'phase':<20} {'start':<20} {'duration':>10}  slowest rank", "dim", color)]
    gaps: dict[Phase, list[UnaccountedReport]] = {}
    for g in report.unaccounted:
        gaps.setdefault(g.after, []).append(g)
    for p in report.phases:
        start = (p.start or "-").replace("T", " ")
        measured = any(step.whole for step in p.steps)
        duration = ("≥ " if p.lower_bound else "") + (_precise(p.duration_s) if measured else fmt_duration(p.duration_s))
        out.append(f"  {p.name.value:<20} {start:<20} {duration:>10}  {slowest_rank(p, nodes)}{_still_open(report, p)}")
        out.extend(_paint(_step_row(step), "dim", color) for step in p.steps)
        for gap in gaps.get(p.name, []):
            out.append(_paint(_gap_row(gap), "warning", color))
            out.extend(_paint(_step_row(step), "dim", color) for step in gap.steps)
    return out


def _precise(seconds: float | None) -> str:
    """A duration the server measured itself, with the hundredths it printed: '5.01 s'."""
    if seconds is None or seconds >= 120:
        return fmt_duration(seconds)
    return f"{seconds:.0f} s" if seconds.is_integer() else f"{seconds:.2f} s"  # whole seconds as printed ('in 12 secs')


def _step_row(step: StepReport) -> str:
    """'    · torch_compile                         33.43 s  TP1, line 38': a duration the server printed
    itself, under the phase it is part of."""
    name = step.name + (f" to {step.through.value}" if step.through is not None else "") + (" (whole)" if step.whole else "")
    who = ", ".join(x for x in (step.rank, f"line {step.line}") if x)
    return f"    · {name:<37} {_precise(step.duration_s):>10}  {who}"


def _still_open(report: Report, p: PhaseReport) -> str:
    """' (open, 40 %)' after the phase a starting server is in."""
    if p.end is not None or report.outcome != "starting" or p.name != report.phase:
        return ""
    return f" (open, {p.progress.percent} %)" if p.progress is not None else " (open)"


def _gap_row(gap: UnaccountedReport) -> str:
    where = f"lines {gap.first_line}-{gap.last_line}" if gap.first_line and gap.last_line else ""
    label = "(between phases)" if gap.before is not None else "(no phase since)"
    if gap.holds == "draft_model":
        label = "(draft model)"
    return f"  {label:<20} {gap.start.replace('T', ' '):<20} {fmt_duration(gap.duration_s):>10}  {where}"


def _failure(report: Report, color: bool, nodes: Mapping[str, str] | None) -> list[str]:
    f = report.failure
    if f is None:
        return []
    where = f" on {f.rank}" if f.rank else ""
    of = f" of {_base(f.source)}" if f.source else ""
    out = [
        "",
        _paint(f"  cause   {f.cause.value}{where}, line {f.line}{of}", "cause", color),
        f"  error   {first_line(f.message) if f.message else '-'}",
        f"  hint    {f.hint}",
    ]
    if f.consequences:
        out.append(_echoes(f))
    return out


def _echoes(f: FailureReport) -> str:
    n = f.echo_count()
    # in a merged report the lines are in several logs: name each one's log
    lines = ", ".join(f"{_base(c.source)}:{c.line}" if c.source else str(c.line) for c in f.consequences[:5])
    lines += ", ..." if n > 5 else ""
    verb, noun = ("follows", "line") if n == 1 else ("follow", "lines")
    return f"  echoes  {plural(n, 'other line')} {verb} from it ({noun} {lines})"


def _warnings(report: Report, color: bool, nodes: Mapping[str, str] | None) -> list[str]:
    if not report.warnings:
        return []
    out = [""]
    for w in report.warnings:
        line = f" (line {w.line})" if w.line else ""
        out.append(_paint(f"  warning {w.kind}: {clip(w.message, 400)}{line}", "warning", color))
    return out


def _line_count(report: Report, color: bool, nodes: Mapping[str, str] | None) -> list[str]:
    return ["", f"  lines {line_counts(report.lines)}"]


# the summary's sections, top to bottom; each gives its lines, none when it has nothing to say
_SECTIONS: tuple[Callable[[Report, bool, Mapping[str, str] | None], list[str]], ...] = (
    _title,
    _model,
    _ranks,
    _year,
    _phases,
    _failure,
    _warnings,
    _line_count,
)


def line_counts(counts: LinesReport) -> str:
    """'89 (82 physical): 88 in events, 1 unrecognized, 0 blank', parts that add up to the first
    number (logical lines: a physical line's \\r redraws and glued prefixes are lines of their own),
    the physical count (as grep -c) beside it when it differs; then what was read in part."""
    parts = [f"{counts.events} in events", f"{counts.unrecognized} unrecognized", f"{counts.blank} blank"]
    if counts.ignored:
        parts.append(f"{counts.ignored} before --since")
    if counts.truncated:
        parts.append(f"{counts.truncated} cut short at the end of the input")
    physical = f" ({counts.physical} physical)" if counts.physical != counts.total else ""
    partly = []
    if counts.overlong:
        partly.append(f"{plural(counts.overlong, 'line')} over 64 KiB read in part")
    if counts.invalid_utf8:
        partly.append(f"{plural(counts.invalid_utf8, 'line')} with bytes that are not UTF-8")
    return f"{counts.total}{physical}: {', '.join(parts)}" + (f"; {', '.join(partly)}" if partly else "")


def _base(path: str) -> str:
    """A log's file name without its folders: enough to tell the logs of one merge apart."""
    return path.rsplit("/", 1)[-1]
