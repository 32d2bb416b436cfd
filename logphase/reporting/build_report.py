"""The report, built from the phase machine's state at any moment (the contract is
``report.py``): phases and the time between them, the root cause and its echoes, warnings,
configuration and memory."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from logphase.diagnosing.cause_table import ECHO_PREFERENCE
from logphase.diagnosing.diagnosis import Severity, hint_server, named_rank, stated_values
from logphase.diagnosing.hints import hint
from logphase.folding.facts import SCHEDULER_KEYS
from logphase.folding.machine import KEEP_RUNS, PhaseMachine
from logphase.folding.runs import Incident, Run, Span, StepSeen, Track, duration_between, seconds_between
from logphase.packs import PACKS, pack_named
from logphase.packs.rows import Pack
from logphase.recognising.detect import DEFAULT_SERVER, run_server
from logphase.reporting.report import (
    LOW_CAPTURE_MEMORY_GB,
    UNACCOUNTED_MIN_S,
    Consequence,
    FailureReport,
    LinesReport,
    MemoryReport,
    Outcome,
    PhaseReport,
    ProgressReport,
    RankSpan,
    Report,
    StepReport,
    TotalUnknown,
    UnaccountedReport,
    WarningReport,
    rank_sort_key,
    resolve_rank,
    values_match,
)
from logphase.vocabulary.causes import WAITED_ON_PEERS
from logphase.vocabulary.events import ParameterOverride, ProgressBar
from logphase.vocabulary.phases import PHASE_ORDER, Phase, later_phase


def speaking_of(server: str | None) -> Pack:
    """The pack whose words the report's sentences use for a run of ``server`` (its name, the command
    that launches it, its flags): the run's server's, else the first server's. The warning kinds keep
    their names (no_sglang_output): they are the JSON contract."""
    named = pack_named(server) if server is not None else None
    return named or next(pack for pack in PACKS if pack.name == DEFAULT_SERVER)


def build_report(
    machine: PhaseMachine,
    lines: LinesReport,
    source: str,
    expect: dict[str, str] | None = None,
    truncated_line: int | None = None,
    run_index: int | None = None,
    input_complete: bool = True,
    since: str | None = None,
) -> Report:
    """The report on the last run, or on run ``run_index`` (1-based) of the file.

    ``input_complete`` is False while more input may come (follow): a setting the log has not
    shown yet is then only unverified once the run is past the point where it would have shown it."""
    run = _chosen_run(machine, run_index)
    server = run_server(run.server, machine.server, run.seen_stamped, (run.frames_server, run.logger_server))
    failure, failure_phase = _failure(run, server)
    ready = run.ready_line is not None
    outcome: Outcome = "failed" if failure else ("ready" if ready else "starting")
    phase = failure_phase if failure else _phase_reached(run, lines.total > lines.blank)
    ranks = sorted((r for r in run.tracks if r is not None), key=rank_sort_key)
    failed_at = failure_ts(run) if failure else None
    end_ts = _startup_end(run, failure is not None, failed_at)
    is_last = run is machine.run
    saw_ready = _saw_ready(run)
    pack = speaking_of(server)
    warnings = _warnings(machine, run, pack, expect or {}, truncated_line if is_last else None, input_complete or not is_last)
    warnings.extend(_input_warnings(lines, since, pack))
    phases, draft = _phases(run, failure, failed_at)
    total, unknown = _total(run, end_ts, phases, outcome)
    return Report(
        source=source,
        server=server,
        version=run.version,
        outcome=outcome,
        phase=phase,
        phases=phases,
        unaccounted=_with_draft(_unaccounted(phases, None if ready else end_ts, run, failure), draft),
        total_startup_s=total,
        total_unknown=unknown,
        ranks=ranks,
        ready_at=run.ready_ts if saw_ready else None,
        ready_line=run.ready_line if saw_ready else None,
        runs=len(machine.runs),
        run=run.index,
        run_start_line=run.start_line,
        run_last_line=run.last_line or run.start_line,
        config_line=run.server_args_line,
        failure=failure,
        warnings=warnings,
        config=_config(run),
        memory=_memory(run),
        lines=lines,
    )


def _chosen_run(machine: PhaseMachine, run_index: int | None) -> Run:
    """The last run, or run ``run_index`` (1-based) when the machine still holds it whole."""
    if run_index is not None and not 1 <= run_index <= len(machine.runs):
        raise ValueError(f"run {run_index} does not exist: the log holds {len(machine.runs)} run(s)")
    run = machine.runs[run_index - 1] if run_index is not None else machine.run
    if run.retired:
        raise ValueError(
            f"run {run_index} is one of the early runs of a file with {len(machine.runs)}: only the last "
            f"{KEEP_RUNS} are kept whole (it spans lines {run.start_line}-{run.last_line}: cut them out to read it)"
        )
    return run


def _phase_reached(run: Run, any_text: bool) -> Phase | None:
    """The furthest phase of a run that has not failed; None only for input without text."""
    phase = run.furthest_phase()
    if phase is None and (any_text or run.last_line > 0):
        # lines, none of which names a phase (the server's unknown ones, or a harness waiting for
        # it): a server that is starting is at least launched, and no more is known
        return Phase.LAUNCH
    return phase


def _startup_end(run: Run, failed: bool, failed_at: str | None) -> str | None:
    """When start-up ended: at ready, even if the server failed later while serving; else at the
    failure; else it is still going, as of the last time printed."""
    if run.ready_line is not None:
        return run.ready_ts
    return failed_at if failed else run.last_ts


def _memory(run: Run) -> MemoryReport:
    capture = run.capture_avail_gb
    return MemoryReport(
        weights_gb=run.weights_gb,
        kv_cache_gb=run.kv_cache_gb,
        kv_cache_tokens=run.kv_tokens,
        mamba_cache_gb=run.mamba_cache_gb,
        cuda_graph_gb=run.cuda_graph_gb,
        min_avail_during_capture_gb=capture[0] if capture else None,
        min_avail_line=capture[2] if capture else None,
        avail_gb={k: dict(v) for k, v in sorted(run.memory.items(), key=lambda kv: rank_sort_key(kv[0]))},
        avail_lines={k: dict(v) for k, v in sorted(run.memory_lines.items(), key=lambda kv: rank_sort_key(kv[0]))},
    )


def _total(
    run: Run, end_ts: str | None, phases: list[PhaseReport], outcome: Outcome
) -> tuple[float | None, TotalUnknown | None]:
    """From the run's first time to ready, the failure, or (still starting) the latest it knows of:
    the last time printed, or the open phase's start plus its bar's own clock. The server's time: from
    its own first stamp at the earliest, to its last one or as far as a progress bar's own clock
    counted at the latest (a wrapper's or an inherited time reaches no further; a server that prints
    no stamp of its own has the one clock its lines carry). Null, and why, when the log does not show
    the run's launch or no time at all."""
    if run.partial:
        return None, "partial_log"
    if not run.launch_marked:
        # nothing marks when the run began (its arguments dump, the server's launch line): the first
        # line of a window, a crash at import, is no launch, and its time since then no total
        return None, "no_launch"
    start, ceiling = _clock_span(run)
    if start is None or ceiling is None:
        return None, "no_time"
    total = duration_between(start, min(end_ts or ceiling, ceiling))
    if outcome == "starting":
        reach = seconds_between(start, ceiling) or 0.0
        for p in phases:
            since = seconds_between(start, p.start)
            if p.end is None and p.progress is not None and since is not None and p.duration_s is not None:
                total = max(total or 0.0, min(since + p.duration_s, reach))
    return total, None


def _clock_span(run: Run) -> tuple[str | None, str | None]:
    """The span of the run's clock: its server's own stamps' (to what a bar counted past them), else, for
    a server that prints none, the times its lines carry."""
    if run.own_first_ts is None or run.own_last_ts is None:
        return run.first_ts, run.last_ts
    start = max(run.first_ts or run.own_first_ts, run.own_first_ts)
    return start, max(run.own_last_ts, _bar_clock(run) or run.own_last_ts)


def _bar_clock(run: Run) -> str | None:
    """How far the progress bars' own clocks reach: the start of a bar's phase plus the time the bar
    counted (a silent phase, one stamp in minutes, is timed by its bar)."""
    counted = [_counted(run, phase, bar.elapsed_s) for phase, bar in run.bars.items() if bar.elapsed_s is not None]
    known = [c for c in counted if c is not None]
    return max(known) if known else None


def _counted(run: Run, phase: Phase, seconds: float) -> str | None:
    """``seconds`` after the earliest start of ``phase`` on any track."""
    starts = [t.spans[phase].start for t in run.tracks.values() if phase in t.spans and t.spans[phase].start]
    if not starts:
        return None
    return _iso_after(min(s for s in starts if s), seconds)


def _second_of(ts: str) -> str:
    """A time to the nearest whole second, as the servers stamp it."""
    at = datetime.fromisoformat(ts)
    return (at + timedelta(microseconds=500_000)).replace(microsecond=0).isoformat()


def _iso_after(ts: str, seconds: float) -> str:
    at = datetime.fromisoformat(ts) + timedelta(seconds=seconds)
    return at.isoformat(timespec="microseconds" if at.microsecond else "seconds")


def failure_ts(run: Run) -> str | None:
    """When the run failed: the root's time; for a line with no time of its own, not before the
    last redraw of the bar that was counting when it came (a silent weight load killed at 74 s
    of its bar is not a 1 s phase)."""
    root = _root(run)
    ts = root.event.ts if root else run.last_ts
    if root is None or (root.event.ts is not None and not root.event.ts_inherited):
        return ts
    phase = run.furthest_phase()
    bar = run.bars.get(phase) if phase is not None else None
    if phase is None or bar is None or bar.elapsed_s is None or bar.line > root.event.line:
        return ts
    later = _counted(run, phase, bar.elapsed_s)
    if later is None:
        return ts
    return later if ts is None or later > ts else ts


def _root(run: Run) -> Incident | None:
    """The root cause: the earliest failure that states its error (when that one only says its rank
    waited for the others, a crash before it whose error is not shown); else the earliest one that
    does not (a cut traceback, a crash dump); else the most telling echo (runs.Incidents)."""
    found = run.incidents.first_failure()
    if found is not None:
        return found
    for cause in ECHO_PREFERENCE:
        echo = run.incidents.first_echo(cause)
        if echo is not None:
            return echo
    return run.incidents.first_echo()


def _failure(run: Run, server: str | None) -> tuple[FailureReport | None, Phase | None]:
    """The run's failure, its advice in the flags of the run's ``server`` (none's when it is unknown)."""
    root = _root(run)
    if root is None:
        return None, None
    phase = _failure_phase(run, root)
    consequences = [
        Consequence(line=i.event.line, message=i.assessment.message[:300], ts=i.event.ts, rank=i.event.rank)
        for i in run.incidents.consequences(root)
    ]
    report = FailureReport(
        cause=root.assessment.cause,
        phase=phase,
        rank=_failure_rank(run, root, phase),
        line=root.assessment.line or root.event.line,
        ts=root.event.ts,
        message=root.assessment.message[:2000],
        hint=_hint(run, root, phase, server),
        consequences=consequences,
        consequences_total=len(run.incidents) - 1,
        severity=_SEVERITY_WORD.get(root.assessment.severity, "echo"),
        check=root.assessment.check,
        while_serving=phase is Phase.READY,
        after_ready_s=_after_ready(run, root.event.ts) if phase is Phase.READY else None,
    )
    return report, phase


def _failure_phase(run: Run, root: Incident) -> Phase:
    """The phase the root failed in: the one its diagnosis names, else the one its rank (or the
    run) had reached, never before the phase its frames show it past."""
    # nothing says where: where the log starts (a window: the phase its first evidence names, as its
    # partial_log warning says); before any phase marker of a whole log, the server was launching
    started_in = run.first_entry[0] if run.first_entry is not None else Phase.LAUNCH
    seen = root.track_phase or run.furthest_phase()
    if root.event.rank is None and any(rank is not None for rank in run.tracks):
        # a line no rank prefix names (torch's '[rankN]:' dropped, a bare C++ abort) in a run of
        # ranks: any rank may have printed it, and the ranks got as far as the run did
        seen = later_phase(seen, run.furthest_phase())
    floor = root.assessment.floor  # its frames show it past this phase
    if floor is not None and (seen is None or seen.order < floor.order):
        seen = floor
    phase = root.assessment.phase or seen or started_in
    if run.ready_line is not None and root.event.line > run.ready_line:
        return Phase.READY
    if phase is Phase.READY and run.ready_line is None and run.furthest_phase() is Phase.WARMUP:
        return Phase.WARMUP  # the event loop's first batch is the warmup request's
    return phase


def _hint(run: Run, root: Incident, phase: Phase, server: str | None) -> str:
    """The error's own advice, else the cause's in the phase, in the run's server's flags. In a run of
    no known server, an error's own advice that names a server's flags gives way to the shared one."""
    own = root.assessment.hint
    if own and (server is not None or hint_server(own) is None):
        return own
    return hint(root.assessment.cause, phase, run.server_args or {}, _hint_facts(run, root, phase), server)


def _hint_facts(run: Run, root: Incident, phase: Phase) -> dict[str, Any]:
    """What the run knows that a hint's advice depends on."""
    facts: dict[str, Any] = {
        "max_capture_bs": run.max_capture_bs,
        "native_crash": root.event.kind == "fatal_signal",
        "check": root.assessment.check,
    }
    facts["stated"] = stated_values(root.assessment.message)
    facts["lagging"] = _lagging_ranks(run, root, phase)
    return facts


def _lagging_ranks(run: Run, root: Incident, phase: Phase) -> tuple[list[str], list[str]] | None:
    """For a root that only says its rank waited for the others in a collective (a timeout once the
    ranks have met): the ranks of the run that reported no such wait, the ones the others waited for
    (every rank that entered the collective times out in it), and those that did; None unless the log
    shows them (no more of the first than of the second). A rendezvous (distributed init) waits for
    ranks that may print nothing in this log (another node's): it names none."""
    cause = root.assessment.cause
    if cause not in WAITED_ON_PEERS or phase in (Phase.LAUNCH, Phase.DISTRIBUTED_INIT):
        return None
    ranks = sorted({r for r in run.tracks if r is not None}, key=rank_sort_key)
    waited = {_named(r, run) for r in run.incidents.ranks_of(cause)}
    lagging = [r for r in ranks if r not in waited]
    if not lagging or len(lagging) > len(ranks) - len(lagging):
        return None
    return lagging, [r for r in ranks if r in waited]


def _failure_rank(run: Run, root: Incident, phase: Phase) -> str | None:
    """The root's rank: its line's, else the one its message names, else the silent one."""
    return _named(root.event.rank, run) or _named(named_rank(root.assessment.message), run) or _silent_rank(run, root, phase)


def _saw_ready(run: Run) -> bool:
    """Whether the log shows the server becoming ready: not a log that starts while it serves (its
    first serving line is not when it became ready)."""
    starts_serving = run.partial and run.first_entry is not None and run.first_entry[0] is Phase.READY
    return run.ready_line is not None and not starts_serving


def _after_ready(run: Run, failed_at: str | None) -> float | None:
    """How long the server had been serving when it failed; None when either time is unknown."""
    serving = seconds_between(run.ready_ts, failed_at) if _saw_ready(run) else None
    return serving if serving is not None and serving >= 0 else None


_SEVERITY_WORD: dict[Severity, Literal["root", "unstated", "echo"]] = {
    Severity.ROOT: "root",
    Severity.UNSTATED: "unstated",
    Severity.ECHO: "echo",
}


# a step that began this much before the phase that lists it moves the phase's start (less is the
# stamps' whole second); a quiet step agrees with its phase within this, or this share of it
STEP_SLACK_S = 1.0
STEP_SHARE = 0.03

# the phases only the schedulers (the ranks) work in
_SCHEDULER_PHASES = (Phase.DISTRIBUTED_INIT, Phase.WEIGHT_LOADING, Phase.MEMORY_POOL, Phase.CUDA_GRAPH_CAPTURE)


def _silent_rank(run: Run, root: Incident, phase: Phase) -> str | None:
    """Whose a root without a rank is (a native crash, a runtime abort), when the log says it: in a
    phase only the schedulers work in, the only scheduler; or, of several, the one that printed
    nothing after the root while every other one reported its loss."""
    if phase not in _SCHEDULER_PHASES:
        return None
    ranks = {r for r in run.tracks if r is not None}
    if len(ranks) == 1:
        return next(iter(ranks))
    heard = {_named(r, run) for r in run.incidents.ranks_after(root.event.line)} & ranks
    silent = ranks - heard
    return next(iter(silent)) if heard and len(silent) == 1 else None


def _named(rank: str | None, run: Run) -> str | None:
    """A rank a message names ('TP1'), as this run prints it ('DP0 TP1 EP1'), else as named."""
    return resolve_rank(rank, (r for r in run.tracks if r is not None)) or rank


@dataclass
class _PhaseSpans:
    """One phase as the run's tracks saw it, gathered track by track (``add``)."""

    last_ts: str | None  # the run's last time: a rank's open span lasts until it
    starts: list[tuple[str, int]] = field(default_factory=list)
    first_lines: list[int] = field(default_factory=list)
    ends: list[tuple[str, int | None]] = field(default_factory=list)
    end_lines: list[int] = field(default_factory=list)
    open_any: bool = False  # some rank has not left it
    ranks: dict[str, RankSpan] = field(default_factory=dict)

    def add(self, rank: str | None, span: Span, ranked: bool) -> None:
        """One track's span of the phase; ``ranked``: some rank has a span of it too."""
        self.first_lines.append(span.first_line)
        if span.start is not None:
            self.starts.append((span.start, span.start_line))
        if rank is None and ranked:
            # rank-less lines (progress bars, Gloo) can open a phase; the ranks say when it ended
            return
        if span.end is not None:
            self.ends.append((span.end, span.end_line))
        if span.end_line is not None:
            self.end_lines.append(span.end_line)
        elif span.end is None:
            self.open_any = True
        if rank is not None:
            self.ranks[rank] = RankSpan(
                start=span.start,
                end=span.end,
                duration_s=duration_between(span.start, span.end if span.end_line is not None else self.last_ts),
                first_line=span.first_line,
                last_line=span.end_line,
            )

    def edges(self, failure: FailureReport | None, failed_at: str | None) -> tuple[str | None, str | None, int | None]:
        """Start, end and last line: a phase some rank has not left is open, or ended by the failure."""
        start = min(self.starts)[0] if self.starts else None
        if self.open_any and failure is not None:
            return start, failed_at, failure.line
        if self.open_any:
            return start, None, None
        return start, max(self.ends)[0] if self.ends else None, max(self.end_lines) if self.end_lines else None


def _phases(
    run: Run, failure: FailureReport | None, failed_at: str | None
) -> tuple[list[PhaseReport], UnaccountedReport | None]:
    """The phases, and the draft model's set-up after the phase its target's part of ended, if any."""
    gathered = {phase: _gather(run, phase) for phase in PHASE_ORDER}
    present = [phase for phase, spans in gathered.items() if spans.first_lines]
    listed = _listed_steps(run, present)
    drafted = _draft_rows(run, listed)
    out = [_phase_report(run, phase, gathered[phase], failure, failed_at, listed.get(phase, [])) for phase in present]
    phases = _quiet_steps_dropped(_parts_summed(_steps_inside(out, listed), listed), listed)
    return phases, _draft_setup(run, phases, drafted, failure, failed_at)


def _gather(run: Run, phase: Phase) -> _PhaseSpans:
    spans = _PhaseSpans(last_ts=run.last_ts)
    ranked = any(rank is not None and phase in track.spans for rank, track in run.tracks.items())
    for rank, track in run.tracks.items():
        span = track.spans.get(phase)
        if span is not None:
            spans.add(rank, _first_model_part(track, phase, span), ranked)
    if spans.first_lines and phase is Phase.LAUNCH:
        # launch begins with the run
        spans.first_lines.append(run.start_line)
        if run.first_ts is not None:
            spans.starts.append((run.first_ts, run.start_line))
    return spans


def _phase_report(
    run: Run, phase: Phase, spans: _PhaseSpans, failure: FailureReport | None, failed_at: str | None, listed: list[_Listed]
) -> PhaseReport:
    start, end, last_line = spans.edges(failure, failed_at)
    if phase is Phase.LAUNCH:
        # the main process prints little after launching: launch ends where any rank starts work
        work = _first_work(run)
        if work is not None and (end is None or work[0] < end):
            end, last_line = work
    duration = duration_between(start, end if end is not None else run.last_ts)
    bar = run.bars.get(phase)
    if bar is not None and last_line is not None and bar.line > last_line and _draft_lines(run):
        bar = None  # the draft model's bar, drawn after the target's part of the phase ended
    if bar is not None and end is None and bar.elapsed_s is not None and (duration is None or bar.elapsed_s > duration):
        # a silent phase: its bar has been counting while no line carried a time
        duration = bar.elapsed_s
    whole = [row.report for row in listed if row.report.whole]
    if len(whole) == 1:
        # the server measured the whole phase, finer than its stamps' whole seconds
        duration = whole[0].duration_s
        _rank_measures(spans.ranks, run, phase)
    return PhaseReport(
        name=phase,
        start=start,
        end=end,
        duration_s=duration,
        first_line=min(spans.first_lines),
        last_line=last_line,
        lower_bound=any(phase in t.spans and t.spans[phase].lower_bound for t in run.tracks.values()),
        progress=_progress(bar) if bar is not None else None,
        ranks=dict(sorted(spans.ranks.items(), key=lambda kv: rank_sort_key(kv[0]))),
        steps=[row.report for row in listed],
    )


@dataclass
class _Listed:
    """A step as a phase lists it: the slowest rank's measure, when that rank printed it, and whether
    it began in this phase (the phase it measures first, or for a step over several phases whose first
    the run does not show, the phase before it, where the run was as it began). Not a measure printed
    after its rank went on past every phase it covers."""

    report: StepReport
    ts: str | None
    quiet: bool
    began_here: bool
    part: bool = False


def _in_parts(listed: list[_Listed], duration: float | None) -> bool:
    """Whether the server measured every part of the phase (two kinds at least: V1's torch.compile and
    graph capture) and they fit in its stamps' span (a measure repeated over the same time does not)."""
    parts = [row.report for row in listed if row.part]
    if len({p.name for p in parts}) < 2 or duration is None:
        return False
    return sum(p.duration_s for p in parts) <= duration + STEP_SLACK_S


def _listed_steps(run: Run, present: list[Phase]) -> dict[Phase, list[_Listed]]:
    """The durations the server printed, under the phase each lies in: one row per step and per
    measure of it (a rank's second 'Loading weights took', a draft model's, is a measure of its own),
    the slowest rank's, in the order they were first printed."""
    times: dict[tuple[str, str | None], int] = {}
    groups: dict[tuple[Phase, str, int], list[StepSeen]] = {}
    for seen in run.steps:
        phase = _listed_under(seen, present)
        if phase is None:
            continue
        nth = times[seen.name, seen.rank] = times.get((seen.name, seen.rank), 0) + 1
        groups.setdefault((phase, seen.name, nth), []).append(seen)
    out: dict[Phase, list[_Listed]] = {}
    for (phase, name, _), measures in groups.items():
        s = max(measures, key=lambda m: m.seconds)
        through = s.step.through if s.step.through is not None and s.step.through.order > phase.order else None
        whole = s.step.whole and phase is s.step.phase  # (a draft model's load listed in capture measures no capture)
        report = StepReport(name=name, duration_s=s.seconds, rank=s.rank, line=s.line, whole=whole, through=through)
        began_here = s.step.through is None or phase.order <= s.step.phase.order
        part = s.step.part and phase is s.step.phase
        out.setdefault(phase, []).append(_Listed(report, s.ts, s.step.quiet, began_here, part))
    return out


def _listed_under(seen: StepSeen, present: list[Phase]) -> Phase | None:
    """Where a step is listed: where it lies. Under the phase it measures, unless the rank that printed
    it was past the phases it covers (a draft model's weights loaded during capture: a phase is only
    entered forwards). A step over several phases is listed where it starts: under its first phase, or,
    when the run does not show that one, under the phase before it, which the run was in as the step
    began (V1's init engine begins its profiling as the model is loaded; its memory_pool lines come
    after torch.compile, inside capture, and none may show) and ``through`` its last: it stretches no
    phase. None when the run shows none of them."""
    first, last = seen.step.phase, seen.step.through or seen.step.phase
    if seen.at is not None and seen.at.order > last.order and seen.at in present:
        return seen.at
    if first in present:
        return first
    if seen.step.through is not None and any(first.order < p.order <= last.order for p in present):
        before = [p for p in present if p.order < first.order]
        if before:
            return before[-1]
    covered = next((p for p in present if first.order <= p.order <= last.order), None)
    if covered is not None:
        return covered
    return seen.at if seen.at in present else None


def _steps_inside(phases: list[PhaseReport], listed: dict[Phase, list[_Listed]]) -> list[PhaseReport]:
    """Each step lies inside the phase that lists it: a step that began before it (its line's time less
    its duration) moves the phase's start back to its own (V1's torch.compile starts as the model is
    loaded, seconds before its first line; its init engine's profiling before any line of memory_pool).
    Within the stamps' second, nothing moves."""
    out = []
    for p in phases:
        rows = listed.get(p.name, [])
        for row in rows:
            if row.ts is not None and row.began_here and p.start is not None:
                p = _begun_by(p, _iso_after(row.ts, -row.report.duration_s), rows)
            elif row.ts is None and row.began_here and p.duration_s is not None and p.duration_s < row.report.duration_s:
                # printed on a line with no time of its own (TensorRT-LLM's C++ logger): when is not
                # known, only that the phase lasted the step at least; its start and end stay its stamps'
                p = p.model_copy(update={"duration_s": row.report.duration_s})
        out.append(p)
    return out


def _parts_summed(phases: list[PhaseReport], listed: dict[Phase, list[_Listed]]) -> list[PhaseReport]:
    """A phase the server measured in parts, with another phase's work between them, lasts their sum
    (V1's capture: torch.compile, then, after the rest of the profiling run and the KV-cache sizing, the
    graphs); its start and end stay those of its stamps."""
    out = []
    for p in phases:
        rows = listed.get(p.name, [])
        if _in_parts(rows, p.duration_s):
            p = p.model_copy(update={"duration_s": round(sum(row.report.duration_s for row in rows if row.part), 3)})
        out.append(p)
    return out


def _begun_by(phase: PhaseReport, began: str, rows: list[_Listed]) -> PhaseReport:
    """``phase``, begun by ``began`` at the latest (to the nearest second), when that is more than the
    stamps' second before its start; its duration grows as much, unless the server measured it whole."""
    ahead = seconds_between(began, phase.start)
    if ahead is None or ahead <= STEP_SLACK_S:
        return phase
    start = _second_of(began)
    moved = seconds_between(start, phase.start) or 0.0
    whole = any(row.report.whole for row in rows)
    duration = phase.duration_s if whole or phase.duration_s is None else round(phase.duration_s + moved, 3)
    return phase.model_copy(update={"start": start, "duration_s": duration})


def _quiet_steps_dropped(phases: list[PhaseReport], listed: dict[Phase, list[_Listed]]) -> list[PhaseReport]:
    """A quiet step (SGLang's own measure of each capture and weight load) is listed only where the
    phase holds more than it: other steps, or more time than it took (the phase agrees with it
    otherwise, and the row would repeat its duration)."""
    out = []
    for p in phases:
        rows = listed.get(p.name, [])
        if len(rows) == 1 and rows[0].quiet and p.duration_s is not None and _agree(p.duration_s, rows[0].report.duration_s):
            p = p.model_copy(update={"steps": []})
        out.append(p)
    return out


def _agree(a: float, b: float) -> bool:
    """Two durations of one thing, one measured by the server and one from its stamps: within the
    stamps' second, or 3 % of a long one."""
    return abs(a - b) <= max(STEP_SLACK_S, STEP_SHARE * max(a, b))


def _rank_measures(ranks: dict[str, RankSpan], run: Run, phase: Phase) -> None:
    """Each rank's stay in a phase the server measures whole: the rank's own measure."""
    for seen in run.steps:
        span = ranks.get(seen.rank or "")
        if seen.step.phase is phase and seen.step.whole and span is not None:
            ranks[seen.rank or ""] = span.model_copy(update={"duration_s": seen.seconds})
def _first_model_part(track: Track, phase: Phase, span: Span) -> Span:
    """A rank's stay in ``phase`` as the phase counts it: up to where its first model's part ended when
    a second model's set-up followed (a draft model's load, pool and captures are not the target's
    capture: the report lists them after it, ``holds: draft_model``)."""
    if track.first_model is None or track.first_model[0] is not phase:
        return span
    _, end, end_line = track.first_model
    return Span(span.start, span.start_line, end, end_line, lower_bound=span.lower_bound, shown_line=span.shown_line)


def _draft_lines(run: Run) -> dict[str | None, int]:
    """Per rank, the line its first model's part of a phase ended on, when a second model's set-up followed."""
    return {rank: t.first_model[2] for rank, t in run.tracks.items() if t.first_model is not None}


def _draft_rows(run: Run, listed: dict[Phase, list[_Listed]]) -> list[StepReport]:
    """The steps the draft model's set-up printed (its weight load, its captures), taken out of the phase
    they were listed under: those its rank printed after its first model's part of the phase ended."""
    ended = _draft_lines(run)
    if not ended:
        return []
    phases = {t.first_model[0] for t in run.tracks.values() if t.first_model is not None}
    latest = max(ended.values())
    out: list[StepReport] = []
    for phase in phases:
        rows = listed.get(phase, [])
        kept = [row for row in rows if row.report.line <= ended.get(row.report.rank, latest)]
        out.extend(row.report for row in rows if row not in kept)
        listed[phase] = kept
    return sorted(out, key=lambda step: step.line)


def _draft_setup(
    run: Run, phases: list[PhaseReport], steps: list[StepReport], failure: FailureReport | None, failed_at: str | None
) -> UnaccountedReport | None:
    """The draft model's set-up: from where the target's part of the phase ended to the draft's last end
    line (the phase's own end had no second model followed); to the failure or the last time while a
    rank is still in it."""
    firsts = [(rank, t) for rank, t in run.tracks.items() if t.first_model is not None]
    if not firsts:
        return None
    phase = firsts[0][1].first_model[0] if firsts[0][1].first_model is not None else None
    report = next((p for p in phases if p.name is phase), None)
    if phase is None or report is None or report.end is None:
        return None
    spans = [t.spans[phase] for _, t in firsts if phase in t.spans]
    if any(span.end_line is None for span in spans) or not spans:
        end, last_line = (failed_at, failure.line) if failure is not None else (run.last_ts, run.last_line)
    else:
        end, last_line = max((span.end or "", span.end_line or 0) for span in spans)
    later = next((p.name for p in phases if p.name.order > phase.order), None)
    return UnaccountedReport(
        after=phase,
        before=later,
        start=report.end,
        end=end or report.end,
        duration_s=duration_between(report.end, end) or 0.0,
        first_line=report.last_line,
        last_line=last_line or None,
        holds="draft_model",
        steps=steps,
    )


def _with_draft(gaps: list[UnaccountedReport], draft: UnaccountedReport | None) -> list[UnaccountedReport]:
    """The time between phases with the draft model's set-up in it: the gap after the target's part of
    the phase is the draft's, and what is left of it after the draft's last line a gap of its own."""
    if draft is None:
        return gaps
    out: list[UnaccountedReport] = []
    for gap in gaps:
        if gap.after is not draft.after or not gap.start <= draft.start < gap.end:
            out.append(gap)
            continue
        left = seconds_between(draft.end, gap.end)
        if left is not None and left > UNACCOUNTED_MIN_S:
            rest = {"start": draft.end, "duration_s": left, "first_line": draft.last_line}
            out.append(gap.model_copy(update=rest))
    out.append(draft)
    return sorted(out, key=lambda gap: (gap.start, gap.holds is None))


def _first_work(run: Run) -> tuple[str, int] | None:
    """When and where the first phase after launch began, on any track."""
    later = [
        (s.start, s.start_line) for t in run.tracks.values() for p, s in t.spans.items() if p is not Phase.LAUNCH and s.start
    ]
    return min(later) if later else None


def _progress(bar: ProgressBar) -> ProgressReport:
    return ProgressReport(
        desc=bar.desc,
        percent=bar.percent,
        done=bar.done,
        total=bar.total,
        elapsed_s=bar.elapsed_s,
        remaining_s=bar.remaining_s,
        line=bar.line,
    )


def _unaccounted(
    phases: list[PhaseReport], end_ts: str | None, run: Run, failure: FailureReport | None
) -> list[UnaccountedReport]:
    """Stretches where the server was between phases: after every phase that had ended, before
    the next one began; and, short of ready, after the last phase that ended until the failure or
    the last time printed (kernel autotuning or a hang after a phase's end line is no phase's time)."""
    out = gaps_between(phases)
    last = phases[-1] if phases else None
    if last is not None and last.end is not None and end_ts is not None:
        start = _uncovered_from(last.end, phases)
        gap = seconds_between(start, end_ts)
        if gap is not None and gap > UNACCOUNTED_MIN_S:
            until_line = failure.line if failure is not None else (run.last_line or None)
            out.append(
                UnaccountedReport(
                    after=last.name,
                    before=None,
                    start=start,
                    end=end_ts,
                    duration_s=gap,
                    first_line=last.last_line,
                    last_line=until_line,
                )
            )
    return out


def gaps_between(phases: list[PhaseReport]) -> list[UnaccountedReport]:
    """Stretches after a phase ended and before the next one began, that no other phase covers (V1's
    torch.compile, capture evidence, runs before the KV cache is sized)."""
    out: list[UnaccountedReport] = []
    for earlier, later in itertools.pairwise(phases):
        if earlier.end is None or later.start is None:
            continue
        start = _uncovered_from(earlier.end, phases)
        gap = seconds_between(start, later.start)
        if gap is not None and gap > UNACCOUNTED_MIN_S:
            out.append(
                UnaccountedReport(
                    after=earlier.name,
                    before=later.name,
                    start=start,
                    end=later.start,
                    duration_s=gap,
                    first_line=earlier.last_line,
                    last_line=later.first_line,
                )
            )
    return out


def _uncovered_from(ts: str, phases: list[PhaseReport]) -> str:
    """The first time from ``ts`` on that no phase covers (``ts`` itself, unless a phase that began by
    then was still going: then its end, and so on)."""
    moved = True
    while moved:
        moved = False
        for p in phases:
            end = p.end or (_iso_after(p.start, p.duration_s) if p.start is not None and p.duration_s is not None else None)
            if p.start is not None and end is not None and p.start <= ts < end:
                ts, moved = end, True
    return ts


def _config(run: Run) -> dict[str, Any]:
    """Every server_args value of the run (secrets are already ***: vocabulary/redact.py, where each
    line enters the engine), then the scheduler's and timings."""
    config = dict(run.server_args or {})
    if run.scheduler:
        config["scheduler"] = run.scheduler
    if run.timings:
        config["startup_timings"] = run.timings
    return config


def _warnings(
    machine: PhaseMachine, run: Run, pack: Pack, expect: dict[str, str], truncated_line: int | None, input_complete: bool
) -> list[WarningReport]:
    out = _multiple_runs(machine, run)
    out.extend(_expectations(run, expect, input_complete))
    out.extend(_overrides(run, pack))
    out.extend(_memory_pressure(run, pack))
    out.extend(_stderr_missing(run, pack))
    out.extend(_partial_log(run))
    out.extend(WarningReport(kind=kind, message=message, line=line) for kind, message, line in run.notices)
    if truncated_line is not None:
        out.append(
            WarningReport(
                kind="truncated_input",
                message="the log ends in the middle of a line (still being written, or cut); that line was not read as an event",
                line=truncated_line,
            )
        )
    return out


def _multiple_runs(machine: PhaseMachine, run: Run) -> list[WarningReport]:
    if len(machine.runs) <= 1:
        return []
    return [
        WarningReport(
            kind="multiple_runs",
            message=f"this file holds {len(machine.runs)} runs; "
            f"the report describes {'the last one' if run is machine.run else f'run {run.index}'}, "
            f"from line {run.start_line}",
            line=run.start_line,
        )
    ]


# a flag or an environment variable the user set, named as the reason: "--enable-mis is set", "X_Y is set,"
_USERS_OWN = re.compile(r"(?:--[\w-]+|\b[A-Z][A-Z0-9_]{2,}) is set\b(?! to\b)")


def _overrides(run: Run, pack: Pack) -> list[WarningReport]:
    """The settings the server changed on its own, each once."""
    out: list[WarningReport] = []
    seen: set[tuple[str, str]] = set()
    for o in run.overrides:
        if (o.setting, o.message) in seen or _USERS_OWN.search(o.message):
            # every rank says it once; and "because --disable-x is set" honours the user's own flag (or
            # variable), where "Sampling backend is set to pytorch" is the server's choice
            continue
        seen.add((o.setting, o.message))
        requested = o.requested if o.requested is not None else _launched_value(run, o)
        values = ""
        if requested is not None or o.actual is not None:
            now = o.actual if o.actual is not None else "?"
            values = f" (requested {requested if requested is not None else '?'}, now {now})"
        out.append(
            WarningReport(
                kind="ignored_parameter",
                message=f"{pack.display_name} changed {o.setting}{values}: {o.message}",
                line=o.line,
                setting=o.setting,
                expected=requested,
                found=o.actual,
            )
        )
    return out


def _launched_value(run: Run, o: ParameterOverride) -> str | None:
    """The value asked for when the line does not say it: the configuration dump's, when it differs
    from the value in force (a dump printed before the change holds what was launched)."""
    given = (run.server_args or {}).get(o.setting)
    if given is None or o.actual is None or values_match(given, o.actual):
        return None
    return str(given)


def _memory_pressure(run: Run, pack: Pack) -> list[WarningReport]:
    if run.capture_avail_gb is None or run.capture_avail_gb[0] >= LOW_CAPTURE_MEMORY_GB:
        return []
    avail, rank, line = run.capture_avail_gb
    who = f" on {rank}" if rank else ""
    return [
        WarningReport(
            kind="memory_pressure",
            message=f"CUDA graph capture ran with only {avail:.2f} GB free{who} (below {LOW_CAPTURE_MEMORY_GB:.1f} GB): "
            "capture or the first large batches may run out of memory; consider a lower "
            + " or ".join(pack.capture_memory_flags),
            line=line,
            found=f"{avail:.2f}",
        )
    ]


def _stderr_missing(run: Run, pack: Pack) -> list[WarningReport]:
    """Only stdout's lines (Gloo, NCCL, access lines) and none of the server's own: none behind its
    stamped prefix, nor behind its logger's prefix (vLLM's logger writes to stdout: a window of its
    logged request error and an access line holds the server's own lines)."""
    if "stdout" not in run.streams or "stderr" in run.streams or run.seen_stamped or run.logger_server == pack.name:
        return []
    return [
        WarningReport(
            kind="stderr_missing",
            message="this log holds what the server wrote to stdout (Gloo, NCCL, access lines) but none of "
            f"{pack.display_name}'s own lines, which go to stderr: start the server with its stderr in the log too "
            f"({pack.launch_command} ... > server.log 2>&1)",
        )
    ]


def _partial_log(run: Run) -> list[WarningReport]:
    if not run.partial or run.first_entry is None:
        return []
    phase, line = run.first_entry
    return [
        WarningReport(
            kind="partial_log",
            message=f"the log starts mid-run at line {line}, in {phase.value}: its launch is not in the log, so the "
            "first phase's duration is a lower bound and the total start-up time is unknown",
            line=line,
        )
    ]


def _input_warnings(lines: LinesReport, since: str | None, pack: Pack) -> list[WarningReport]:
    """Input in which nothing could be read: say so rather than report an empty start-up."""
    content = lines.total - lines.blank
    if content <= 0:
        return []
    if since is not None and lines.ignored == content:
        return [
            WarningReport(
                kind="nothing_since",
                message=f"nothing since {since.replace('T', ' ')}: all {lines.ignored} lines of the log are older",
            )
        ]
    if lines.events == 0:
        return [
            WarningReport(
                kind="no_sglang_output",
                message=f"no {pack.display_name} output recognised in {content} line{'s' if content != 1 else ''}: "
                "is this a server log? (parse --unrecognized shows the lines)",
            )
        ]
    return []


def _changed_by_server(run: Run, key: str, wanted: str) -> bool:
    """Whether the server said it changed ``key`` on its own from what was launched (an override of
    it whose value asked for is ``wanted``, or not said): its ignored_parameter warning tells, and the
    log is this launch's, no stale one. An override that says another value was asked for leaves it
    stale."""
    return any(o.setting == key and (o.requested is None or values_match(o.requested, wanted)) for o in run.overrides)


def _expectations(run: Run, expect: dict[str, str], input_complete: bool) -> list[WarningReport]:
    out: list[WarningReport] = []
    sources: dict[str, Any] = dict(run.scheduler)
    sources.update(run.server_args or {})
    for key, wanted in expect.items():
        if key not in sources:
            # unverified only once the run shows it will not say: the dump comes before the ranks
            # start work, the scheduler's values before it is ready
            settled = input_complete or run.finished
            if not settled and run.server_args is None:
                settled = run.has_progress()
            elif not settled:
                # settings the server prints after server_args: known only once the scheduler is ready
                settled = key not in SCHEDULER_KEYS
            if settled:
                out.append(
                    WarningReport(
                        kind="expect_unverified",
                        message=f"{key}: the log of this run does not show it, so {wanted} cannot be checked",
                        line=run.server_args_line,
                        setting=key,
                        expected=wanted,
                    )
                )
            continue
        actual = sources[key]
        if not values_match(actual, wanted) and not _changed_by_server(run, key, wanted):
            out.append(
                WarningReport(
                    kind="stale_log",
                    message=f"{key}: the log says {actual} but you launched with {wanted}: stale log or ignored parameter",
                    line=run.server_args_line,
                    setting=key,
                    expected=wanted,
                    found=str(actual),
                )
            )
    return out
