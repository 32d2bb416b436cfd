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
from logphase.folding.runs import Incident, Run, Span, StepSeen, duration_between, seconds_between
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
    phases = _phases(run, failure, failed_at)
    return Report(
        source=source,
        server=server,
        version=run.version,
        outcome=outcome,
        phase=phase,
        phases=phases,
        unaccounted=_unaccounted(phases, None if ready else end_ts, run, failure),
        total_startup_s=None if run.partial else _total(run, end_ts, phases, outcome),
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


def _total(run: Run, end_ts: str | None, phases: list[PhaseReport], outcome: Outcome) -> float | None:
    """From the run's first time to ready, the failure, or (still starting) the latest it knows of:
    the last time printed, or the open phase's start plus its bar's own clock."""
    total = duration_between(run.first_ts, end_ts)
    if outcome == "starting":
        for p in phases:
            since = seconds_between(run.first_ts, p.start)
            if p.end is None and p.progress is not None and since is not None and p.duration_s is not None:
                total = max(total or 0.0, since + p.duration_s)
    return total


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
    if bar is None or bar.elapsed_s is None or bar.line > root.event.line:
        return ts
    starts = [t.spans[phase].start for t in run.tracks.values() if phase in t.spans and t.spans[phase].start]
    if not starts:
        return ts
    counted = datetime.fromisoformat(min(s for s in starts if s)) + timedelta(seconds=bar.elapsed_s)
    later = counted.isoformat(timespec="microseconds" if counted.microsecond else "seconds")
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


def _phases(run: Run, failure: FailureReport | None, failed_at: str | None) -> list[PhaseReport]:
    out: list[PhaseReport] = []
    for phase in PHASE_ORDER:
        spans = _gather(run, phase)
        if spans.first_lines:
            out.append(_phase_report(run, phase, spans, failure, failed_at))
    return out


def _gather(run: Run, phase: Phase) -> _PhaseSpans:
    spans = _PhaseSpans(last_ts=run.last_ts)
    ranked = any(rank is not None and phase in track.spans for rank, track in run.tracks.items())
    for rank, track in run.tracks.items():
        span = track.spans.get(phase)
        if span is not None:
            spans.add(rank, span, ranked)
    if spans.first_lines and phase is Phase.LAUNCH:
        # launch begins with the run
        spans.first_lines.append(run.start_line)
        if run.first_ts is not None:
            spans.starts.append((run.first_ts, run.start_line))
    return spans


def _phase_report(
    run: Run, phase: Phase, spans: _PhaseSpans, failure: FailureReport | None, failed_at: str | None
) -> PhaseReport:
    start, end, last_line = spans.edges(failure, failed_at)
    if phase is Phase.LAUNCH:
        # the main process prints little after launching: launch ends where any rank starts work
        work = _first_work(run)
        if work is not None and (end is None or work[0] < end):
            end, last_line = work
    duration = duration_between(start, end if end is not None else run.last_ts)
    bar = run.bars.get(phase)
    if bar is not None and end is None and bar.elapsed_s is not None and (duration is None or bar.elapsed_s > duration):
        # a silent phase: its bar has been counting while no line carried a time
        duration = bar.elapsed_s
    steps = _steps(run, phase)
    whole = [s for s in steps if s.whole]
    if whole:
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
        steps=steps,
    )


def _steps(run: Run, phase: Phase) -> list[StepReport]:
    """The durations the server printed within the phase, one per step: the slowest rank's, in the
    order the steps were first printed."""
    slowest: dict[str, StepSeen] = {}
    for seen in run.steps:
        if seen.step.phase is phase:
            kept = slowest.get(seen.step.name)
            if kept is None or seen.seconds > kept.seconds:
                slowest[seen.step.name] = seen
    first_line: dict[str, int] = {}
    for seen in run.steps:
        first_line.setdefault(seen.step.name, seen.line)
    return [
        StepReport(
            name=s.step.name, duration_s=s.seconds, rank=s.rank, line=s.line, whole=s.step.whole, through=s.step.through
        )
        for s in sorted(slowest.values(), key=lambda s: first_line[s.step.name])
    ]


def _rank_measures(ranks: dict[str, RankSpan], run: Run, phase: Phase) -> None:
    """Each rank's stay in a phase the server measures whole: the rank's own measure."""
    for seen in run.steps:
        span = ranks.get(seen.rank or "")
        if seen.step.phase is phase and seen.step.whole and span is not None:
            ranks[seen.rank or ""] = span.model_copy(update={"duration_s": seen.seconds})


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
        gap = seconds_between(last.end, end_ts)
        if gap is not None and gap > UNACCOUNTED_MIN_S:
            until_line = failure.line if failure is not None else (run.last_line or None)
            out.append(
                UnaccountedReport(
                    after=last.name,
                    before=None,
                    start=last.end,
                    end=end_ts,
                    duration_s=gap,
                    first_line=last.last_line,
                    last_line=until_line,
                )
            )
    return out


def gaps_between(phases: list[PhaseReport]) -> list[UnaccountedReport]:
    """Stretches after a phase ended and before the next one began."""
    out: list[UnaccountedReport] = []
    for earlier, later in itertools.pairwise(phases):
        if earlier.end is None or later.start is None:
            continue
        gap = seconds_between(earlier.end, later.start)
        if gap is not None and gap > UNACCOUNTED_MIN_S:
            out.append(
                UnaccountedReport(
                    after=earlier.name,
                    before=later.name,
                    start=earlier.end,
                    end=later.start,
                    duration_s=gap,
                    first_line=earlier.last_line,
                    last_line=later.first_line,
                )
            )
    return out


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
