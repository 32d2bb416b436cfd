"""The oracle's results in words: what ``check`` and ``compare`` print, and what ``assert_startup``
raises."""

from __future__ import annotations

from typing import Any

from logphase.faces.oracle.check import CheckResult
from logphase.faces.oracle.compare import Comparison
from logphase.faces.wording import fmt_seconds, headline, number_text, plural
from logphase.reporting.report import Report


def render_check(result: CheckResult, report: Report | None = None, verbose: bool = False) -> str:
    """The text ``logphase check`` prints and ``assert_startup`` raises: violations one per line."""
    head = headline(report) if report is not None else result.outcome
    bad = result.violations
    n = len(result.checks)
    if not bad:
        holds = "expectation holds" if n == 1 else "expectations hold"
        out = [f"{result.source}: ok, {n} {holds} ({head})"]
        if verbose:
            out += [f"  {c.message}" for c in result.checks]
        return "\n".join(out) + "\n"
    out = [f"{result.source}: {len(bad)} of {plural(n, 'expectation')} violated ({head})"]
    out += [f"  {c.message}" for c in (result.checks if verbose else bad)]
    return "\n".join(out) + "\n"


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return number_text(value)
    return str(value)


def render_comparison(c: Comparison, baseline: Report, new: Report) -> str:
    out = [f"baseline  {c.baseline}: {headline(baseline)}", f"new       {c.new}: {headline(new)}", ""]
    out.append(f"  {'phase':<20} {'baseline':>10} {'new':>10} {'ratio':>7}  verdict")
    names = {"regressed": "REGRESSED", "only_in_baseline": "missing in new", "only_in_new": "new phase"}
    for d in c.phases:
        ratio = f"{d.ratio:.2f}x" if d.ratio is not None else "-"
        old = fmt_seconds(d.baseline_s) if d.baseline_s is not None else "-"
        new_s = fmt_seconds(d.new_s) if d.new_s is not None else "-"
        out.append(f"  {d.phase:<20} {old:>10} {new_s:>10} {ratio:>7}  {names.get(d.verdict, d.verdict)}")
    for label, changes in (("config", c.config_changes), ("memory", c.memory_changes)):
        if changes:
            out.append("")
            for i, change in enumerate(changes):
                tag = label if i == 0 else ""
                out.append(f"  {tag:<7} {change.key}: {_show(change.baseline)} -> {_show(change.new)}")
    out.append("")
    limits = f"tolerance {number_text(c.tolerance * 100)}%, slack {fmt_seconds(c.slack_s)}"
    if c.regressed:
        worse = ""
        if c.outcome_verdict == "worse":
            cause = f" ({c.new_cause.value})" if c.new_cause else ""
            worse = f"outcome {c.baseline_outcome} -> {c.new_outcome}{cause}; "
        phases = [r for r in c.regressions if r != "outcome"]
        slower = f"slower: {', '.join(phases)}" if phases else "no phase slower"
        out.append(f"REGRESSED: {worse}{slower} ({limits})")
    else:
        limit = number_text(1 + c.tolerance)
        out.append(f"OK: outcome {c.outcome_verdict}, no phase slower than {limit}x the baseline ({limits})")
    return "\n".join(out) + "\n"
