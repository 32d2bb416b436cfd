"""``compare``: two startups phase by phase, with their configuration and memory side by side."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from logphase.faces.oracle.expectations import DEFAULT_SLACK_S, DEFAULT_TOLERANCE
from logphase.reporting.report import Outcome, Report
from logphase.vocabulary.causes import Cause
from logphase.vocabulary.phases import PHASE_ORDER, Phase

OUTCOME_RANK: dict[str, int] = {"failed": 0, "starting": 1, "ready": 2}
TOTAL = "total"
Verdict = Literal["ok", "regressed", "faster", "only_in_baseline", "only_in_new", "unmeasured", "incomparable"]


class PhaseDelta(BaseModel):
    """A phase (or the total) in the baseline and in the new startup."""

    phase: str = Field(description="a phase name, or 'total' for the whole startup")
    baseline_s: float | None = Field(description="its duration in the baseline")
    new_s: float | None = Field(description="its duration in the new startup")
    ratio: float | None = Field(description="new / baseline, rounded to 3 places; null if either is missing or 0")
    verdict: Verdict = Field(
        description="regressed: slower than baseline x (1 + tolerance) and by more than the slack; incomparable: "
        "the phase a startup failed in (cut short by the failure), or the total of startups with different outcomes"
    )


class ValueChange(BaseModel):
    """A setting or memory figure that differs."""

    key: str = Field(description="the setting or figure")
    baseline: Any = Field(description="its value in the baseline")
    new: Any = Field(description="its value in the new startup")


class Comparison(BaseModel):
    """The result of ``compare``: per-phase durations side by side, changed settings, regressions."""

    baseline: str = Field(description="the baseline's source")
    new: str = Field(description="the new startup's source")
    baseline_outcome: Outcome = Field(description="how the baseline ended")
    new_outcome: Outcome = Field(description="how the new startup ended")
    baseline_cause: Cause | None = Field(description="the baseline's failure cause")
    new_cause: Cause | None = Field(description="the new startup's failure cause")
    outcome_verdict: Literal["same", "better", "worse"] = Field(description="ready > starting > failed")
    tolerance: float = Field(description="allowed slowdown per phase")
    slack_s: float = Field(description="seconds a phase must also be slower by")
    phases: list[PhaseDelta] = Field(description="phase by phase, then the total")
    config_changes: list[ValueChange] = Field(description="settings that differ")
    memory_changes: list[ValueChange] = Field(description="memory figures that differ")
    regressed: bool = Field(description="a worse outcome or a slower phase")
    regressions: list[str] = Field(description="'outcome' and the phases (or 'total') that got slower")


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
