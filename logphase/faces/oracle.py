"""The test oracle: expectations checked against a report, and one report compared with another.

Shared by ``logphase check``, ``logphase compare`` and :mod:`logphase.testing`. Every check gives
one :class:`CheckItem` with a one-line message that carries its evidence: line numbers in the log,
the measured value and the allowed one. The input is a log or a saved ``--json`` report, told
apart by content; a log gives line numbers for phases and memory readings, a saved report only
what it holds (timestamps, the failure line).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel, Field

from logphase.faces.loading import NotAReport, saved_report
from logphase.pipeline import events as ev
from logphase.pipeline.diagnosis import Cause
from logphase.pipeline.engine import BLOCK_SIZE, Engine
from logphase.pipeline.machine import PhaseMachine
from logphase.pipeline.phases import PHASE_ORDER, Phase
from logphase.pipeline.report import Outcome, PhaseReport, Report, normalize_expect, values_match

DEFAULT_TOLERANCE = 0.2
# SGLang stamps its lines to the second: a phase of 2 s that takes 3 s is rounding, not a
# regression. A phase counts as slower only when it is also this many seconds slower.
DEFAULT_SLACK_S = 1.0
OUTCOME_RANK: dict[str, int] = {"failed": 0, "starting": 1, "ready": 2}
TOTAL = "total"

CheckKind = Literal["outcome", "cause", "max", "max_total", "expect", "min_avail_mem", "baseline"]
Verdict = Literal["ok", "regressed", "faster", "only_in_baseline", "only_in_new", "unmeasured", "incomparable"]


class OracleError(ValueError):
    """Bad input to the oracle (unknown phase, bad number, not a report): not a violation."""


# --- input: a log or a saved report --------------------------------------------------------------


@dataclass
class Evidence:
    """Line numbers the report does not carry, gathered from the events of the report's run."""

    phase_lines: dict[Phase, tuple[int | None, int | None]] = field(default_factory=dict)
    run_start_line: int = 1
    end_line: int | None = None  # the ready line, or the last line of the run
    ready_line: int | None = None
    server_args_line: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # server_args and scheduler values of the run
    memory_lines: dict[tuple[str, str], int] = field(default_factory=dict)  # (rank, boundary) -> line
    capture_line: int | None = None  # the lowest free memory reading during capture


@dataclass
class Loaded:
    report: Report
    evidence: Evidence | None  # None for a saved report
    kind: Literal["log", "report"]


# event kind -> the memory boundary the report's memory.avail_gb names (see machine._facts)
_BOUNDARIES = {
    "weight_load_begin": "weight_loading_start",
    "weight_load_end": "weight_loading_end",
    "memory_pool_end": "memory_pool_end",
    "capture_begin": "cuda_graph_capture_start",
    "capture_end": "cuda_graph_capture_end",
}


class _EvidenceCollector:
    """Folds the engine's events into a phase machine of its own, for the line numbers of spans."""

    def __init__(self) -> None:
        self.machine = PhaseMachine()
        self._runs = 1
        self.memory_lines: dict[tuple[str, str], int] = {}

    def feed(self, events: list[ev.EventBase]) -> None:
        for event in events:
            self.machine.feed(event)
            if len(self.machine.runs) != self._runs:
                self._runs = len(self.machine.runs)
                self.memory_lines = {}
            boundary = _BOUNDARIES.get(event.kind)
            if boundary is not None and getattr(event, "avail_mem_gb", None) is not None:
                key = (event.rank or "TP0", boundary)
                if boundary == "cuda_graph_capture_end":
                    self.memory_lines[key] = event.line
                else:
                    self.memory_lines.setdefault(key, event.line)

    def evidence(self, report: Report) -> Evidence:
        run = self.machine.run
        lines: dict[Phase, tuple[int | None, int | None]] = {}
        for phase in PHASE_ORDER:
            spans = [t.spans[phase] for t in run.tracks.values() if phase in t.spans]
            if not spans:
                continue
            start = min(s.start_line for s in spans)
            ends = [s.end_line for s in spans if s.end_line is not None]
            end: int | None = max(ends) if ends and len(ends) == len(spans) else None
            if phase is Phase.LAUNCH:
                later = [s.start_line for t in run.tracks.values() for p, s in t.spans.items() if p is not Phase.LAUNCH]
                if later:
                    end = min(later)
            if end is None and report.failure is not None:
                end = report.failure.line
            lines[phase] = (start, end)
        settings: dict[str, Any] = dict(run.scheduler)
        settings.update(run.server_args or {})
        end_line = run.ready_line or (report.failure.line if report.failure else None) or run.last_line or None
        return Evidence(
            phase_lines=lines,
            run_start_line=run.start_line,
            end_line=end_line,
            ready_line=run.ready_line,
            server_args_line=run.server_args_line,
            settings=settings,
            memory_lines=dict(self.memory_lines),
            capture_line=run.capture_avail_gb[2] if run.capture_avail_gb else None,
        )


def load_stream(handle: BinaryIO, source: str, since: str | None = None) -> Loaded:
    """Read a log or a saved report from ``handle``; logs are streamed, never held whole."""
    first = handle.read(BLOCK_SIZE)
    try:
        report, head = saved_report(handle, first, source)
    except NotAReport as exc:
        raise OracleError(str(exc)) from None
    whole = head is not first
    if report is not None:
        if since is not None:
            raise OracleError(f"{source}: a saved report; --since applies to logs only")
        return Loaded(report, None, "report")
    engine = Engine(source=source, since=since)
    collector = _EvidenceCollector()
    collector.feed(engine.feed(head))
    while not whole and (block := handle.read(BLOCK_SIZE)):
        collector.feed(engine.feed(block))
    collector.feed(engine.finish())
    report = engine.report()
    return Loaded(report, collector.evidence(report), "log")


def load_bytes(data: bytes, source: str = "<bytes>") -> Loaded:
    import io

    return load_stream(io.BytesIO(data), source)


def load(value: Any, source: str | None = None) -> Loaded:
    """A :class:`Loaded` from a Report, a path (str without a newline, or os.PathLike), log text or bytes."""
    if isinstance(value, Loaded):
        return value
    if isinstance(value, Report):
        return Loaded(value, None, "report")
    if isinstance(value, bytes | bytearray):
        return load_bytes(bytes(value), source or "<bytes>")
    if isinstance(value, str) and "\n" in value:
        return load_bytes(value.encode("utf-8", errors="surrogateescape"), source or "<text>")
    if isinstance(value, str | os.PathLike):
        path = os.fspath(value)
        with open(path, "rb") as handle:
            return load_stream(handle, source or str(path))
    raise TypeError(f"expected a log path, log text, bytes or a Report, got {type(value).__name__}")


# --- parsing expectations ------------------------------------------------------------------------


def parse_phase(name: str) -> Phase:
    key = name.strip().lower().replace("-", "_")
    try:
        return Phase(key)
    except ValueError:
        names = ", ".join(p.value for p in PHASE_ORDER)
        raise OracleError(f"unknown phase {name!r} (phases: {names})") from None


def parse_cause(name: str | Cause) -> Cause:
    if isinstance(name, Cause):
        return name
    try:
        return Cause(name.strip().lower().replace("-", "_"))
    except ValueError:
        names = ", ".join(c.value for c in Cause)
        raise OracleError(f"unknown cause {name!r} (causes: {names})") from None


def parse_number(value: str | float | int, what: str, unit: str = "") -> float:
    """A finite, non-negative number; a trailing unit ('s', 'GB') is allowed."""
    if isinstance(value, bool):
        raise OracleError(f"{what}: not a number: {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    else:
        text = value.strip()
        if unit and text.lower().endswith(unit.lower()):
            text = text[: -len(unit)].strip()
        try:
            number = float(text)
        except ValueError:
            raise OracleError(f"{what}: not a number: {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise OracleError(f"{what}: must be a finite number >= 0, got {value!r}")
    return number


def parse_max(items: list[str]) -> dict[Phase, float]:
    out: dict[Phase, float] = {}
    for item in items:
        name, sep, seconds = item.partition("=")
        if not sep:
            raise OracleError(f"--max takes PHASE=SECONDS (e.g. weight_loading=120), got {item!r}")
        out[parse_phase(name)] = parse_number(seconds, f"--max {item}", "s")
    return out


@dataclass
class Expectations:
    """What a startup must show. ``outcome`` None means ready, or failed when a cause is given."""

    outcome: Literal["ready", "failed", "starting", "any"] | None = None
    cause: Cause | None = None
    max_durations: dict[Phase, float] = field(default_factory=dict)
    max_total: float | None = None
    expect: dict[str, str] = field(default_factory=dict)
    min_avail_mem: float | None = None
    baseline: Report | None = None
    tolerance: float = DEFAULT_TOLERANCE
    slack: float = DEFAULT_SLACK_S

    @classmethod
    def build(
        cls,
        outcome: str | None = None,
        cause: str | Cause | None = None,
        max_durations: dict[Any, Any] | None = None,
        max_total: float | str | None = None,
        expect: dict[str, Any] | None = None,
        min_avail_mem: float | str | None = None,
        baseline: Any = None,
        tolerance: float | str | None = None,
        slack: float | str | None = None,
    ) -> Expectations:
        """Validate loosely typed values (phase names as text, numbers as text); OracleError if bad."""
        if outcome is not None and outcome not in ("ready", "failed", "starting", "any"):
            raise OracleError(f"unknown outcome {outcome!r} (outcomes: ready, failed, starting, any)")
        durations: dict[Phase, float] = {}
        for phase, seconds in (max_durations or {}).items():
            p = phase if isinstance(phase, Phase) else parse_phase(str(phase))
            durations[p] = parse_number(seconds, f"max duration of {p.value}", "s")
        return cls(
            outcome=outcome,  # type: ignore[arg-type]
            cause=parse_cause(cause) if cause is not None else None,
            max_durations=durations,
            max_total=parse_number(max_total, "max total", "s") if max_total is not None else None,
            expect=normalize_expect(expect),
            min_avail_mem=parse_number(min_avail_mem, "min avail mem", "GB") if min_avail_mem is not None else None,
            baseline=load(baseline).report if baseline is not None else None,
            tolerance=parse_number(tolerance, "tolerance") if tolerance is not None else DEFAULT_TOLERANCE,
            slack=parse_number(slack, "slack", "s") if slack is not None else DEFAULT_SLACK_S,
        )

    @property
    def wanted_outcome(self) -> str:
        if self.outcome is not None:
            return self.outcome
        return "failed" if self.cause is not None else "ready"


# --- checking ------------------------------------------------------------------------------------


class CheckItem(BaseModel):
    check: CheckKind
    subject: str | None = Field(default=None, description="the phase or setting the check is about")
    ok: bool
    measured: Any = None
    allowed: Any = None
    line: int | None = Field(default=None, description="first log line of the evidence")
    end_line: int | None = Field(default=None, description="last log line of the evidence")
    message: str


class CheckResult(BaseModel):
    """The result of ``check``: each expectation with its verdict and evidence."""

    source: str
    outcome: Outcome
    phase: Phase | None
    ok: bool
    checks: list[CheckItem]

    @property
    def violations(self) -> list[CheckItem]:
        return [c for c in self.checks if not c.ok]


def fmt_s(value: float | None) -> str:
    if value is None:
        return "?"
    return _num(value) + " s"


def _num(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if text != "-0" else "0"


def _lines(a: int | None, b: int | None) -> str:
    if a is None and b is None:
        return ""
    if a is None or b is None or a == b:
        return f"line {a if a is not None else b}"
    return f"lines {a}-{b}"


def _paren(*parts: str) -> str:
    kept = [p for p in parts if p]
    return f" ({', '.join(kept)})" if kept else ""


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def summary(report: Report) -> str:
    phase = report.phase.value if report.phase else "unknown phase"
    if report.outcome == "ready":
        return f"ready after {fmt_s(report.total_startup_s)}"
    if report.outcome == "failed":
        cause = report.failure.cause.value if report.failure else "unknown"
        return f"failed in {phase}: {cause}"
    return f"starting: in {phase}, {fmt_s(report.total_startup_s)} so far"


def describe_failure(report: Report) -> str:
    """'kv_cache_insufficient_memory in memory_pool on TP0 at line 20: RuntimeError: Not enough ...'"""
    f = report.failure
    if f is None:
        return "no failure"
    where = f" in {f.phase.value}" if f.phase else ""
    rank = f" on {f.rank}" if f.rank else ""
    return f"{f.cause.value}{where}{rank} at line {f.line}: {_first_line(f.message)}"


def check(loaded: Loaded, want: Expectations) -> CheckResult:
    """Check a loaded log or report against expectations; every expectation gives one item."""
    report, evidence = loaded.report, loaded.evidence
    items: list[CheckItem] = []
    if want.wanted_outcome != "any":
        items.append(_check_outcome(report, evidence, want.wanted_outcome))
    if want.cause is not None:
        items.append(_check_cause(report, want.cause))
    for phase in PHASE_ORDER:
        if phase in want.max_durations:
            items.append(_check_max(report, evidence, phase, want.max_durations[phase]))
    if want.max_total is not None:
        items.append(_check_total(report, evidence, want.max_total))
    for key, value in want.expect.items():
        items.append(_check_expect(report, evidence, key, value))
    if want.min_avail_mem is not None:
        items.append(_check_memory(report, evidence, want.min_avail_mem))
    if want.baseline is not None:
        items.extend(_check_baseline(report, evidence, want.baseline, want.tolerance, want.slack))
    return CheckResult(
        source=report.source,
        outcome=report.outcome,
        phase=report.phase,
        ok=all(i.ok for i in items),
        checks=items,
    )


def _check_outcome(report: Report, evidence: Evidence | None, wanted: str) -> CheckItem:
    got = report.outcome
    ok = got == wanted
    line: int | None = None
    if got == "failed" and report.failure is not None:
        line = report.failure.line
        detail = describe_failure(report)
    elif got == "ready":
        line = evidence.ready_line if evidence else None
        detail = f"ready after {fmt_s(report.total_startup_s)}" + (f" at line {line}" if line else "")
    else:
        line = evidence.end_line if evidence else None
        phase = report.phase.value if report.phase else "no phase yet"
        where = f" (log ends at line {line})" if line else ""
        detail = f"still in {phase} at the end of the log{where}, {fmt_s(report.total_startup_s)} so far"
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
            measured=None,
            allowed=cause.value,
            message=f"cause: expected {cause.value}, but startup did not fail ({summary(report)})",
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


def _phase_report(report: Report, phase: Phase) -> PhaseReport | None:
    for p in report.phases:
        if p.name is phase:
            return p
    return None


def _span_text(p: PhaseReport, evidence: Evidence | None) -> tuple[str, int | None, int | None]:
    start = (p.start or "?").replace("T", " ")
    end = (p.end or "open").replace("T", " ")
    a, b = evidence.phase_lines.get(p.name, (None, None)) if evidence else (None, None)
    return f"{start} -> {end}", a, b


def _check_max(report: Report, evidence: Evidence | None, phase: Phase, allowed: float) -> CheckItem:
    p = _phase_report(report, phase)
    if p is None:
        return CheckItem(
            check="max",
            subject=phase.value,
            ok=True,
            allowed=allowed,
            message=f"max {phase.value}: not in this run (never reached), nothing to measure",
        )
    span, a, b = _span_text(p, evidence)
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
        message=f"max {phase.value}: {fmt_s(p.duration_s)}{still} {relation} allowed {fmt_s(allowed)}"
        + _paren(span, _lines(a, b)),
    )


def _check_total(report: Report, evidence: Evidence | None, allowed: float) -> CheckItem:
    total = report.total_startup_s
    a = evidence.run_start_line if evidence else report.run_start_line
    b = evidence.end_line if evidence else (report.failure.line if report.failure else None)
    if total is None:
        return CheckItem(
            check="max_total",
            ok=False,
            allowed=allowed,
            line=a,
            end_line=b,
            message=f"max-total: cannot be measured, the log carries no timestamps{_paren(_lines(a, b))}",
        )
    ok = total <= allowed
    so_far = " so far" if report.outcome == "starting" else ""
    relation = "<=" if ok else ">"
    return CheckItem(
        check="max_total",
        ok=ok,
        measured=total,
        allowed=allowed,
        line=a,
        end_line=b,
        message=f"max-total: {report.outcome} after {fmt_s(total)}{so_far} {relation} allowed {fmt_s(allowed)}"
        + _paren(_lines(a, b)),
    )


def flat_config(report: Report) -> dict[str, Any]:
    """The report's config, the scheduler's values under their own names; timings left out."""
    out: dict[str, Any] = {}
    for key, value in report.config.items():
        if key == "startup_timings":
            continue
        if key == "scheduler" and isinstance(value, dict):
            for k, v in value.items():
                out.setdefault(k, v)
            continue
        out[key] = value
    return out


def _check_expect(report: Report, evidence: Evidence | None, key: str, wanted: str) -> CheckItem:
    settings = evidence.settings if evidence else flat_config(report)
    line = evidence.server_args_line if evidence else None
    where = f"server_args at line {line}" if line else ""
    if key not in settings:
        shown = "the log" if evidence else "the saved report (it keeps only the main settings)"
        return CheckItem(
            check="expect",
            subject=key,
            ok=False,
            allowed=wanted,
            line=line,
            message=f"expect {key}: {shown} does not show it, so {wanted} cannot be checked{_paren(where)}",
        )
    actual = settings[key]
    ok = values_match(actual, wanted)
    text = f"expect {key}: {actual!r} as expected" if ok else f"expect {key}: the log says {actual!r}, expected {wanted}"
    tail = "" if ok else ": stale log or ignored parameter"
    return CheckItem(
        check="expect", subject=key, ok=ok, measured=actual, allowed=wanted, line=line, message=f"{text}{_paren(where)}{tail}"
    )


def memory_readings(report: Report) -> list[tuple[float, str | None, str]]:
    """(free GB, rank, where) for every free-memory reading the report keeps."""
    out: list[tuple[float, str | None, str]] = []
    for rank, boundaries in report.memory.avail_gb.items():
        for boundary, gb in boundaries.items():
            out.append((gb, rank, boundary))
    if report.memory.min_avail_during_capture_gb is not None:
        out.append((report.memory.min_avail_during_capture_gb, None, "during cuda_graph_capture"))
    return out


def _check_memory(report: Report, evidence: Evidence | None, required: float) -> CheckItem:
    readings = memory_readings(report)
    if not readings:
        return CheckItem(
            check="min_avail_mem",
            ok=False,
            allowed=required,
            message="min-avail-mem: the log has no free-memory readings (avail mem=...) to check",
        )
    gb, rank, where = min(readings, key=lambda r: r[0])
    line: int | None = None
    if evidence is not None:
        line = evidence.memory_lines.get((rank, where)) if rank is not None else evidence.capture_line
    if line is None and rank is None:
        line = next((w.line for w in report.warnings if w.kind == "memory_pressure"), None)
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
        message=f"min-avail-mem: lowest {_num(gb)} GB free{on} {at} {relation} required {_num(required)} GB"
        + _paren(f"line {line}" if line else ""),
    )


# --- comparing -----------------------------------------------------------------------------------


class PhaseDelta(BaseModel):
    phase: str = Field(description="a phase name, or 'total' for the whole startup")
    baseline_s: float | None
    new_s: float | None
    ratio: float | None = Field(description="new / baseline, rounded to 3 places; null if either is missing or 0")
    verdict: Verdict = Field(
        description="regressed: slower than baseline x (1 + tolerance) and by more than the slack; incomparable: "
        "the phase a startup failed in (cut short by the failure), or the total of startups with different outcomes"
    )


def _verdict(base: float | None, new: float | None, tolerance: float, slack: float) -> tuple[float | None, Verdict]:
    if base is None or new is None:
        return None, "unmeasured"
    ratio = round(new / base, 3) if base > 0 else None
    if new > base * (1 + tolerance) + 1e-9 and new - base > slack + 1e-9:
        return ratio, "regressed"
    if base > new * (1 + tolerance) + 1e-9 and base - new > slack + 1e-9:
        return ratio, "faster"
    return ratio, "ok"


def _failed_in(report: Report) -> Phase | None:
    return report.phase if report.outcome == "failed" else None


def phase_deltas(baseline: Report, new: Report, tolerance: float, slack: float) -> list[PhaseDelta]:
    old = {p.name: p for p in baseline.phases}
    cur = {p.name: p for p in new.phases}
    out: list[PhaseDelta] = []
    for phase in PHASE_ORDER:
        b, n = old.get(phase), cur.get(phase)
        if b is None and n is None:
            continue
        if b is None or n is None:
            verdict: Verdict = "only_in_new" if b is None else "only_in_baseline"
            out.append(
                PhaseDelta(
                    phase=phase.value,
                    baseline_s=b.duration_s if b else None,
                    new_s=n.duration_s if n else None,
                    ratio=None,
                    verdict=verdict,
                )
            )
            continue
        ratio, verdict = _verdict(b.duration_s, n.duration_s, tolerance, slack)
        if phase in (_failed_in(baseline), _failed_in(new)):
            verdict = "incomparable"  # one side's phase ends at the failure, not at its end
        out.append(PhaseDelta(phase=phase.value, baseline_s=b.duration_s, new_s=n.duration_s, ratio=ratio, verdict=verdict))
    ratio, verdict = _verdict(baseline.total_startup_s, new.total_startup_s, tolerance, slack)
    if baseline.outcome != new.outcome:
        verdict = "incomparable"  # time to ready against time to failure
    out.append(
        PhaseDelta(phase=TOTAL, baseline_s=baseline.total_startup_s, new_s=new.total_startup_s, ratio=ratio, verdict=verdict)
    )
    return out


def _check_baseline(
    report: Report, evidence: Evidence | None, baseline: Report, tolerance: float, slack: float
) -> list[CheckItem]:
    items: list[CheckItem] = []
    limit = f"{_num(1 + tolerance)}x"
    for d in phase_deltas(baseline, report, tolerance, slack):
        if d.verdict not in ("ok", "regressed", "faster"):
            continue
        a, b = (None, None)
        if evidence is not None:
            a, b = (
                (evidence.run_start_line, evidence.end_line)
                if d.phase == TOTAL
                else evidence.phase_lines.get(Phase(d.phase), (None, None))
            )
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
                message=f"baseline {d.phase}: {fmt_s(d.new_s)} vs {fmt_s(d.baseline_s)} in {baseline.source} = {ratio}, "
                f"{relation} the allowed {limit}{_paren(_lines(a, b))}",
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


class ValueChange(BaseModel):
    key: str
    baseline: Any
    new: Any


class Comparison(BaseModel):
    """The result of ``compare``: per-phase durations side by side, changed settings, regressions."""

    baseline: str
    new: str
    baseline_outcome: Outcome
    new_outcome: Outcome
    baseline_cause: Cause | None
    new_cause: Cause | None
    outcome_verdict: Literal["same", "better", "worse"]
    tolerance: float
    slack_s: float
    phases: list[PhaseDelta]
    config_changes: list[ValueChange]
    memory_changes: list[ValueChange]
    regressed: bool
    regressions: list[str] = Field(description="'outcome' and the phases (or 'total') that got slower")


def memory_values(report: Report) -> dict[str, Any]:
    m = report.memory
    out: dict[str, Any] = {
        "weights_gb": m.weights_gb,
        "kv_cache_gb": m.kv_cache_gb,
        "kv_cache_tokens": m.kv_cache_tokens,
        "mamba_cache_gb": m.mamba_cache_gb,
        "cuda_graph_gb": m.cuda_graph_gb,
        "min_avail_during_capture_gb": m.min_avail_during_capture_gb,
    }
    lowest: dict[str, float] = {}
    for boundaries in m.avail_gb.values():
        for boundary, gb in boundaries.items():
            lowest[boundary] = min(gb, lowest.get(boundary, gb))
    for boundary, gb in lowest.items():
        out[f"min_avail_gb.{boundary}"] = gb
    return {k: v for k, v in out.items() if v is not None}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool) and not isinstance(b, bool):
        return abs(float(a) - float(b)) < 1e-9
    return bool(a == b)


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[ValueChange]:
    keys = list(old) + [k for k in new if k not in old]
    return [ValueChange(key=k, baseline=old.get(k), new=new.get(k)) for k in keys if not _same(old.get(k), new.get(k))]


def compare(baseline: Report, new: Report, tolerance: float = DEFAULT_TOLERANCE, slack: float = DEFAULT_SLACK_S) -> Comparison:
    """Compare two startups phase by phase: slower than ``baseline x (1 + tolerance)`` and by more
    than ``slack`` seconds is a regression, as is a worse outcome."""
    deltas = phase_deltas(baseline, new, tolerance, slack)
    b_rank, n_rank = OUTCOME_RANK[baseline.outcome], OUTCOME_RANK[new.outcome]
    outcome_verdict: Literal["same", "better", "worse"] = (
        "same" if b_rank == n_rank else ("worse" if n_rank < b_rank else "better")
    )
    regressions = (["outcome"] if outcome_verdict == "worse" else []) + [d.phase for d in deltas if d.verdict == "regressed"]
    return Comparison(
        baseline=baseline.source,
        new=new.source,
        baseline_outcome=baseline.outcome,
        new_outcome=new.outcome,
        baseline_cause=baseline.failure.cause if baseline.failure else None,
        new_cause=new.failure.cause if new.failure else None,
        outcome_verdict=outcome_verdict,
        tolerance=tolerance,
        slack_s=slack,
        phases=deltas,
        config_changes=_changes(flat_config(baseline), flat_config(new)),
        memory_changes=_changes(memory_values(baseline), memory_values(new)),
        regressed=bool(regressions),
        regressions=regressions,
    )


# --- text ----------------------------------------------------------------------------------------


def render_check(result: CheckResult, report: Report | None = None, verbose: bool = False) -> str:
    """The text ``logphase check`` prints and ``assert_startup`` raises: violations one per line."""
    head = summary(report) if report is not None else result.outcome
    bad = result.violations
    n = len(result.checks)
    if not bad:
        holds = "expectation holds" if n == 1 else "expectations hold"
        out = [f"{result.source}: ok, {n} {holds} ({head})"]
        if verbose:
            out += [f"  {c.message}" for c in result.checks]
        return "\n".join(out) + "\n"
    out = [f"{result.source}: {len(bad)} of {n} expectation{'s' if n != 1 else ''} violated ({head})"]
    out += [f"  {c.message}" for c in (result.checks if verbose else bad)]
    return "\n".join(out) + "\n"


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return _num(value)
    return str(value)


def render_comparison(c: Comparison, baseline: Report, new: Report) -> str:
    out = [f"baseline  {c.baseline}: {summary(baseline)}", f"new       {c.new}: {summary(new)}", ""]
    out.append(f"  {'phase':<20} {'baseline':>10} {'new':>10} {'ratio':>7}  verdict")
    names = {"regressed": "REGRESSED", "only_in_baseline": "missing in new", "only_in_new": "new phase"}
    for d in c.phases:
        ratio = f"{d.ratio:.2f}x" if d.ratio is not None else "-"
        old = fmt_s(d.baseline_s) if d.baseline_s is not None else "-"
        new_s = fmt_s(d.new_s) if d.new_s is not None else "-"
        out.append(f"  {d.phase:<20} {old:>10} {new_s:>10} {ratio:>7}  {names.get(d.verdict, d.verdict)}")
    for label, changes in (("config", c.config_changes), ("memory", c.memory_changes)):
        if changes:
            out.append("")
            for i, change in enumerate(changes):
                tag = label if i == 0 else ""
                out.append(f"  {tag:<7} {change.key}: {_show(change.baseline)} -> {_show(change.new)}")
    out.append("")
    limits = f"tolerance {_num(c.tolerance * 100)}%, slack {fmt_s(c.slack_s)}"
    if c.regressed:
        worse = ""
        if c.outcome_verdict == "worse":
            cause = f" ({c.new_cause.value})" if c.new_cause else ""
            worse = f"outcome {c.baseline_outcome} -> {c.new_outcome}{cause}; "
        phases = [r for r in c.regressions if r != "outcome"]
        slower = f"slower: {', '.join(phases)}" if phases else "no phase slower"
        out.append(f"REGRESSED: {worse}{slower} ({limits})")
    else:
        out.append(f"OK: outcome {c.outcome_verdict}, no phase slower than {_num(1 + c.tolerance)}x the baseline ({limits})")
    return "\n".join(out) + "\n"
