"""``check``: a report against expectations. A pure function of the report: every line number in
a verdict comes from the report's own provenance, so a saved ``--json`` report is checked as
fully as the log it came from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from logphase.faces.oracle.compare import TOTAL, flat_config, phase_deltas
from logphase.faces.oracle.expectations import Expectations
from logphase.faces.wording import describe_failure, fmt_seconds, headline, number_text
from logphase.reporting.report import Outcome, PhaseReport, Report, ShownName, values_match
from logphase.vocabulary.causes import Cause
from logphase.vocabulary.phases import PHASE_ORDER, Phase

CheckKind = Literal["outcome", "cause", "max", "max_total", "expect", "min_avail_mem", "baseline"]


class CheckItem(BaseModel):
    """One expectation and its verdict, with the evidence in one line."""

    check: CheckKind = Field(description="which expectation")
    subject: str | None = Field(default=None, description="the phase or setting the check is about")
    ok: bool = Field(description="whether the expectation holds")
    measured: Any = Field(default=None, description="what the log shows")
    allowed: Any = Field(default=None, description="what the expectation allows")
    line: int | None = Field(default=None, description="first log line of the evidence")
    end_line: int | None = Field(default=None, description="last log line of the evidence")
    message: str = Field(description="the verdict in one line, with its evidence")


class CheckResult(BaseModel):
    """The result of ``check``: each expectation with its verdict and evidence."""

    source: ShownName = Field(description="the log or report checked")
    outcome: Outcome = Field(description="how its startup ended")
    phase: Phase | None = Field(description="its phase (on failure, where it failed)")
    ok: bool = Field(description="every expectation holds")
    checks: list[CheckItem] = Field(description="one item per expectation")

    @property
    def violations(self) -> list[CheckItem]:
        return [c for c in self.checks if not c.ok]


def check(report: Report, want: Expectations) -> CheckResult:
    """Check a report against expectations; every expectation gives one item."""
    items: list[CheckItem] = []
    if want.wanted_outcome != "any":
        items.append(_check_outcome(report, want.wanted_outcome))
    if want.cause is not None:
        items.append(_check_cause(report, want.cause))
    for phase in PHASE_ORDER:
        if phase in want.max_durations:
            items.append(_check_max(report, phase, want.max_durations[phase]))
    if want.max_total is not None:
        items.append(_check_total(report, want.max_total))
    for key, value in want.expect.items():
        items.append(_check_expect(report, key, value))
    if want.min_avail_mem is not None:
        items.append(_check_memory(report, want.min_avail_mem))
    if want.baseline is not None:
        items.extend(_check_baseline(report, want.baseline, want.tolerance, want.slack))
    ok = all(i.ok for i in items)
    return CheckResult(source=report.source, outcome=report.outcome, phase=report.phase, ok=ok, checks=items)


def _lines(a: int | None, b: int | None) -> str:
    if a is None and b is None:
        return ""
    if a is None or b is None or a == b:
        return f"line {a if a is not None else b}"
    return f"lines {a}-{b}"


def _paren(*parts: str) -> str:
    kept = [p for p in parts if p]
    return f" ({', '.join(kept)})" if kept else ""


def phase_report(report: Report, phase: Phase) -> PhaseReport | None:
    return next((p for p in report.phases if p.name is phase), None)


def end_line(report: Report) -> int | None:
    """Where the startup ends in the log: the ready line, the failure, or the last line read."""
    ready = phase_report(report, Phase.READY)
    if ready is not None and ready.first_line is not None:
        return ready.first_line
    if report.failure is not None:
        return report.failure.line
    return report.run_last_line or None


def _check_outcome(report: Report, wanted: str) -> CheckItem:
    got = report.outcome
    ok = got == wanted
    line: int | None = None
    if got == "failed" and report.failure is not None:
        line = report.failure.line
        detail = describe_failure(report)
    elif got == "ready":
        line = end_line(report)
        detail = f"ready after {fmt_seconds(report.total_startup_s)}" + (f" at line {line}" if line else "")
    else:
        line = end_line(report)
        phase = report.phase.value if report.phase else "no phase yet"
        where = f" (log ends at line {line})" if line else ""
        detail = f"still in {phase} at the end of the log{where}, {fmt_seconds(report.total_startup_s)} so far"
    if ok:
        message = f"outcome: {got} as expected: {detail}"
    elif got == "ready":
        message = f"outcome: expected {wanted}, got {detail}"
    else:
        message = f"outcome: expected {wanted}, got {got}: {detail}"
    return CheckItem(check="outcome", ok=ok, measured=got, allowed=wanted, line=line, message=message)


def _check_cause(report: Report, cause: Cause) -> CheckItem:
    f = report.failure
    if f is None:
        return CheckItem(
            check="cause",
            subject=cause.value,
            ok=False,
            allowed=cause.value,
            message=f"cause: expected {cause.value}, but startup did not fail ({headline(report)})",
        )
    ok = f.cause is cause
    text = f"cause: {cause.value} as expected" if ok else f"cause: expected {cause.value}, got {f.cause.value}"
    return CheckItem(
        check="cause",
        subject=cause.value,
        ok=ok,
        measured=f.cause.value,
        allowed=cause.value,
        line=f.line,
        message=f"{text}: {describe_failure(report)}",
    )


def _check_max(report: Report, phase: Phase, allowed: float) -> CheckItem:
    p = phase_report(report, phase)
    if p is None:
        return CheckItem(
            check="max",
            subject=phase.value,
            ok=True,
            allowed=allowed,
            message=f"max {phase.value}: not in this run (never reached), nothing to measure",
        )
    a, b = p.first_line, p.last_line
    span = f"{(p.start or '?').replace('T', ' ')} -> {(p.end or 'open').replace('T', ' ')}"
    if p.duration_s is None:
        return CheckItem(
            check="max",
            subject=phase.value,
            ok=False,
            allowed=allowed,
            line=a,
            end_line=b,
            message=f"max {phase.value}: cannot be measured, its lines carry no timestamps{_paren(_lines(a, b))}",
        )
    ok = p.duration_s <= allowed
    still = " so far, still open" if p.end is None else ""
    relation = "<=" if ok else ">"
    return CheckItem(
        check="max",
        subject=phase.value,
        ok=ok,
        measured=p.duration_s,
        allowed=allowed,
        line=a,
        end_line=b,
        message=f"max {phase.value}: {fmt_seconds(p.duration_s)}{still} {relation} allowed {fmt_seconds(allowed)}"
        + _paren(span, _lines(a, b)),
    )


def _check_total(report: Report, allowed: float) -> CheckItem:
    total = report.total_startup_s
    a, b = report.run_start_line, end_line(report)
    if total is None:
        return CheckItem(
            check="max_total",
            ok=False,
            allowed=allowed,
            line=a,
            end_line=b,
            message=f"max-total: cannot be measured, {_TOTAL_UNKNOWN.get(report.total_unknown or '', _NO_TIME)}"
            + _paren(_lines(a, b)),
        )
    ok = total <= allowed
    so_far = " so far" if report.outcome == "starting" else ""
    relation = "<=" if ok else ">"
    serving = report.failure is not None and report.failure.while_serving
    # a failure while serving came after the start-up: the total is the time to ready
    reached = "ready" if serving else report.outcome
    then = ", then failed while serving" if serving else ""
    return CheckItem(
        check="max_total",
        ok=ok,
        measured=total,
        allowed=allowed,
        line=a,
        end_line=b,
        message=f"max-total: {reached} after {fmt_seconds(total)}{so_far} {relation} allowed {fmt_seconds(allowed)}{then}"
        + _paren(_lines(a, b)),
    )


_NO_TIME = "the log carries no timestamps"
# why a report has no total (Report.total_unknown), as check says it
_TOTAL_UNKNOWN = {
    "partial_log": "the log starts after the launch",
    "no_launch": "no line of the run marks its launch (its arguments dump or the server's launch line)",
    "no_time": "no line of the run carries a time",
}


def _check_expect(report: Report, key: str, wanted: str) -> CheckItem:
    settings = flat_config(report)
    line = report.config_line
    where = f"server_args at line {line}" if line else ""
    if key not in settings:
        return CheckItem(
            check="expect",
            subject=key,
            ok=False,
            allowed=wanted,
            line=line,
            message=f"expect {key}: the log does not show it, so {wanted} cannot be checked{_paren(where)}",
        )
    actual = settings[key]
    ok = values_match(actual, wanted)
    text = f"expect {key}: {actual!r} as expected" if ok else f"expect {key}: the log says {actual!r}, expected {wanted}"
    tail = "" if ok else ": stale log or ignored parameter"
    return CheckItem(
        check="expect", subject=key, ok=ok, measured=actual, allowed=wanted, line=line, message=f"{text}{_paren(where)}{tail}"
    )


def memory_readings(report: Report) -> list[tuple[float, str | None, str, int | None]]:
    """(free GB, rank, where, line) for every free-memory reading the report keeps."""
    m = report.memory
    out: list[tuple[float, str | None, str, int | None]] = []
    for rank, boundaries in m.avail_gb.items():
        for boundary, gb in boundaries.items():
            out.append((gb, rank, boundary, m.avail_lines.get(rank, {}).get(boundary)))
    if m.min_avail_during_capture_gb is not None:
        out.append((m.min_avail_during_capture_gb, None, "during cuda_graph_capture", m.min_avail_line))
    return out


def _check_memory(report: Report, required: float) -> CheckItem:
    readings = memory_readings(report)
    if not readings:
        return CheckItem(
            check="min_avail_mem",
            ok=False,
            allowed=required,
            message="min-avail-mem: the log has no free-memory readings (avail mem=...) to check",
        )
    gb, rank, where, line = min(readings, key=lambda r: r[0])
    ok = gb >= required
    on = f" on {rank}" if rank else ""
    at = where if where.startswith("during") else f"at {where}"
    relation = ">=" if ok else "<"
    return CheckItem(
        check="min_avail_mem",
        subject=where,
        ok=ok,
        measured=gb,
        allowed=required,
        line=line,
        message=f"min-avail-mem: lowest {number_text(gb)} GB free{on} {at} {relation} required {number_text(required)} GB"
        + _paren(f"line {line}" if line else ""),
    )


def _check_baseline(report: Report, baseline: Report, tolerance: float, slack: float) -> list[CheckItem]:
    items: list[CheckItem] = []
    limit = f"{number_text(1 + tolerance)}x"
    for d in phase_deltas(baseline, report, tolerance, slack):
        if d.verdict not in ("ok", "regressed", "faster"):
            continue
        a: int | None
        b: int | None
        if d.phase == TOTAL:
            a, b = report.run_start_line, end_line(report)
        else:
            p = phase_report(report, Phase(d.phase))
            a, b = (p.first_line, p.last_line) if p else (None, None)
        ratio = f"{d.ratio:.2f}x" if d.ratio is not None else "from 0 s"
        ok = d.verdict != "regressed"
        relation = "within" if ok else "over"
        items.append(
            CheckItem(
                check="baseline",
                subject=d.phase,
                ok=ok,
                measured=d.new_s,
                allowed=round((d.baseline_s or 0.0) * (1 + tolerance), 3),
                line=a,
                end_line=b,
                message=f"baseline {d.phase}: {fmt_seconds(d.new_s)} vs {fmt_seconds(d.baseline_s)} in {baseline.source} "
                f"= {ratio}, {relation} the allowed {limit}{_paren(_lines(a, b))}",
            )
        )
    if not items:
        items.append(
            CheckItem(
                check="baseline",
                ok=False,
                message=f"baseline: no phase with a duration in both this log and {baseline.source} to compare",
            )
        )
    return items
