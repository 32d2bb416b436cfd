"""What a startup must show, as ``check`` and ``assert_startup`` take it: loosely typed values
(phase names and numbers as text, from a command line) validated into :class:`Expectations`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from logphase.reporting.report import Report, normalize_expect
from logphase.vocabulary.causes import Cause
from logphase.vocabulary.errors import LogphaseError
from logphase.vocabulary.phases import PHASE_ORDER, Phase

DEFAULT_TOLERANCE = 0.2
# SGLang stamps its lines to the second: a phase of 2 s that takes 3 s is rounding, not a
# regression. A phase counts as slower only when it is also this many seconds slower.
DEFAULT_SLACK_S = 1.0
WantedOutcome = Literal["ready", "failed", "starting", "any"]


class OracleError(LogphaseError, ValueError):
    """Bad input to the oracle (unknown phase, bad number, not a report): not a violation."""


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


def parse_number(value: str | float, what: str, unit: str = "") -> float:
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
    """``["weight_loading=120"]`` (as --max gives them) -> ``{Phase.WEIGHT_LOADING: 120.0}``."""
    out: dict[Phase, float] = {}
    for item in items:
        name, sep, seconds = item.partition("=")
        if not sep:
            raise OracleError(f"--max takes PHASE=SECONDS (e.g. weight_loading=120), got {item!r}")
        out[parse_phase(name)] = parse_number(seconds, f"--max {item}", "s")
    return out


def _report(value: object) -> Report | None:
    if value is None or isinstance(value, Report):
        return value
    from logphase.faces.loading import load

    return load(value)


@dataclass
class Expectations:
    """What a startup must show. ``outcome`` None means ready, or failed when a cause is given."""

    outcome: WantedOutcome | None = None
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
        max_durations: Mapping[Any, Any] | None = None,
        max_total: float | str | None = None,
        expect: Mapping[str, object] | None = None,
        min_avail_mem: float | str | None = None,
        baseline: object = None,
        tolerance: float | str | None = None,
        slack: float | str | None = None,
    ) -> Expectations:
        """Validate loosely typed values (phase names as text, numbers as text); OracleError if bad.
        ``baseline`` is a Report, or a log or saved report (path, text or bytes) to read one from."""
        if outcome is not None and outcome not in ("ready", "failed", "starting", "any"):
            raise OracleError(f"unknown outcome {outcome!r} (outcomes: ready, failed, starting, any)")
        durations: dict[Phase, float] = {}
        for phase, seconds in (max_durations or {}).items():
            p = phase if isinstance(phase, Phase) else parse_phase(str(phase))
            durations[p] = parse_number(seconds, f"max duration of {p.value}", "s")
        try:
            settings = normalize_expect(expect)
        except ValueError as exc:
            raise OracleError(str(exc)) from None
        return cls(
            outcome=cast("WantedOutcome | None", outcome),
            cause=parse_cause(cause) if cause is not None else None,
            max_durations=durations,
            max_total=parse_number(max_total, "max total", "s") if max_total is not None else None,
            expect=settings,
            min_avail_mem=parse_number(min_avail_mem, "min avail mem", "GB") if min_avail_mem is not None else None,
            baseline=_report(baseline),
            tolerance=parse_number(tolerance, "tolerance") if tolerance is not None else DEFAULT_TOLERANCE,
            slack=parse_number(slack, "slack", "s") if slack is not None else DEFAULT_SLACK_S,
        )

    @property
    def wanted_outcome(self) -> WantedOutcome:
        if self.outcome is not None:
            return self.outcome
        return "failed" if self.cause is not None else "ready"
