"""How a report is put in words, for every face (text summary, follow, check, the timeline page):
one headline, one way to write a duration, one way to shorten a message."""

from __future__ import annotations

from collections.abc import Callable

from logphase.packs.registry import SERVER_NAMES
from logphase.reporting.report import FailureReport, PhaseReport, Report

ELLIPSIS = "…"


def fmt_duration(seconds: float | None) -> str:
    """A duration as people read it: '0.4 s', '32 s', '3.3 min', '2.1 h'; '?' when unknown."""
    if seconds is None:
        return "?"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def number_text(value: float) -> str:
    """A number without trailing zeros: 0.25, 32, 1.2."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def fmt_seconds(value: float | None) -> str:
    """Exact seconds, as measured ('32 s', '0.25 s'): for checks that compare with a limit."""
    return "?" if value is None else number_text(value) + " s"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when something was cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + ELLIPSIS


def first_line(text: str, limit: int = 240) -> str:
    """The first non-empty line of ``text``, clipped."""
    stripped = text.strip()
    return clip(stripped.splitlines()[0], limit) if stripped else ""


def plural(count: int, word: str, many: str | None = None) -> str:
    """'1 line', '2 lines'."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def current_phase(report: Report) -> PhaseReport | None:
    return next((p for p in report.phases if p.name == report.phase), None)


def server_label(report: Report) -> str | None:
    """'vLLM 0.10.2', 'SGLang': the run's server and version as a headline names them; None when
    the log does not show which server it is."""
    if report.server is None:
        return None
    name = SERVER_NAMES.get(report.server) or _display_name(report.server)
    return f"{name} {report.version}" if report.version else name


def _display_name(server: str) -> str:
    """A server outside the registry (a pack of LOGPHASE_PACKS) as its pack spells it."""
    from logphase.packs import pack_named

    pack = pack_named(server)
    return pack.display_name if pack is not None else server


def headline(report: Report) -> str:
    """'READY after 86 s', 'FAILED in memory_pool after 43 s: kv_cache_insufficient_memory',
    'READY after 54 s, then FAILED while serving at 07:44:36 (71 s after ready): cuda_oom',
    'STARTING: in weight_loading for 20 s (50 s since launch)'."""
    total = fmt_duration(report.total_startup_s) if report.total_startup_s is not None else None
    return _HEADLINES[report.outcome](report, total)


def _ready_headline(report: Report, total: str | None) -> str:
    return f"READY after {total}" if total else "READY"


def _failed_headline(report: Report, total: str | None) -> str:
    f = report.failure
    if f is not None and f.while_serving:
        return _failed_while_serving(report, f, total)
    cause = f": {f.cause.value}" + (f" (a {f.check} check of the server)" if f.check else "") if f else ""
    where = f" in {report.phase.value}" if report.phase else ""
    after = f" after {total}" if total else ""
    return f"FAILED{where}{after}{cause}"


def _starting_headline(report: Report, total: str | None) -> str:
    if report.phase is None:
        return "STARTING: no start-up phase recognised yet"
    current = current_phase(report)
    stay = current.duration_s if current is not None else None
    text = f"STARTING: in {report.phase.value}"
    if stay is not None:
        text += f" for {'≥ ' if current is not None and current.lower_bound else ''}{fmt_duration(stay)}"
    notes = _starting_notes(report, current, stay, total)
    return text + (f" ({'; '.join(notes)})" if notes else "")


def _starting_notes(report: Report, current: PhaseReport | None, stay: float | None, total: str | None) -> list[str]:
    """The open phase's progress bar, and the time since launch when it differs from the phase's."""
    notes = []
    bar = current.progress if current is not None and current.end is None else None
    if bar is not None:
        left = f", about {fmt_duration(bar.remaining_s)} left" if bar.remaining_s is not None else ""
        notes.append(f"{bar.percent} %{left}")
    if total is not None and report.total_startup_s != stay:
        notes.append(f"{total} since launch")
    return notes


# the headline's wording, one per outcome
_HEADLINES: dict[str, Callable[[Report, str | None], str]] = {
    "ready": _ready_headline,
    "failed": _failed_headline,
    "starting": _starting_headline,
}


def _failed_while_serving(report: Report, f: FailureReport, total: str | None) -> str:
    """'READY after 5.7 min, then FAILED while serving at 15:05:27 (39 min after ready): cuda_oom':
    a start-up that succeeded, and the failure that came later; without its ready line (a window
    of a serving log) only the failure."""
    at = f" at {clock_time(f.ts, report.ready_at)}" if f.ts else ""
    since = f" ({fmt_duration(f.after_ready_s)} after ready)" if f.after_ready_s is not None else ""
    failed = f"FAILED while serving{at}{since}: {f.cause.value}"
    if report.ready_line is None and report.ready_at is None:
        return failed
    return f"{'READY after ' + total if total else 'READY'}, then {failed}"


def clock_time(ts: str, reference: str | None = None) -> str:
    """'2026-05-09T15:05:27' -> '15:05:27'; with its date when ``reference`` (an earlier time of
    the same report) is of another day."""
    day, _, time = ts.partition("T")
    if not time:
        return ts
    same_day = reference is None or reference.partition("T")[0] == day
    return time[:8] if same_day else f"{day} {time[:8]}"


def describe_failure(report: Report, limit: int = 160) -> str:
    """'kv_cache_insufficient_memory in memory_pool on TP0 at line 20: RuntimeError: Not enough ...'"""
    f = report.failure
    if f is None:
        return "no failure"
    where = " while serving" if f.while_serving else (f" in {f.phase.value}" if f.phase else "")
    rank = f" on {f.rank}" if f.rank else ""
    return f"{f.cause.value}{where}{rank} at line {f.line}: {first_line(f.message, limit)}"
