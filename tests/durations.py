"""The durations property (issue 30, point 1): what a report says about time agrees with the log.

Read from the log's text on its own (the server's stamps, its progress bars, the durations it prints),
not from logphase's events, and checked against the report on the run it describes:

* the total: never negative, never longer than the span of the server's own clock over the run (its
  stamps, PyTorch's glog stamps, and a progress bar's own elapsed time counted from the stamp before its
  first draw), and null (with its reason, ``total_unknown``) when no line of the run marks its launch;
* every phase's duration is not negative;
* every step (a duration the server printed, listed under a phase) lies inside the phase that lists it,
  or the phases it runs through: from the step's line back by its duration, within the stamps' second;
  a draft model's steps, listed where they lie (after its target's capture: ``holds: draft_model``),
  inside that stretch;
* every duration the server printed (SGLang: ``Load weight end. elapsed=``, ``Capture ... graph end.
  Time elapsed:`` or ``... end. [bs=[...], ]elapsed=``; vLLM: ``Loading weights took``, ``Model loading took``, ``Graph capturing finished
  in``, ``init engine ... took``, ``torch.compile takes``) agrees with the phase it measures, with the
  printing rank's stay in it, or with a step of it, within 1 s or 3 %.

``check(log, report)`` gives the counts and the violations. tests/test_durations.py runs it over every
fixture, bare and under each wrapper of the envelope tests; scripts/durations.py over real logs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from logphase.reading.envelope import Stamp, split_envelope
from logphase.reporting.report import PhaseReport, Report, UnaccountedReport
from logphase.vocabulary.phases import PHASE_ORDER, Phase

# a printed duration and a report's agree within this much (the stamps print whole seconds; the
# server's measure starts and ends a moment away from its lines)
TOLERANCE_S = 1.0
TOLERANCE_SHARE = 0.03

# the durations the servers print, each with the phase it measures (and the last one it runs through)
PRINTED: dict[str, tuple[re.Pattern[str], Phase, Phase]] = {
    "sglang load weight": (re.compile(r"Load weight end\. elapsed=([\d.]+) ?s"), Phase.WEIGHT_LOADING, Phase.WEIGHT_LOADING),
    "sglang capture": (
        re.compile(r"Capture [\w\- ]*?graph end\.(?: bs=\[[\d, ]*\],)? (?:Time elapsed: |elapsed=)([\d.]+) ?s"),
        Phase.CUDA_GRAPH_CAPTURE,
        Phase.CUDA_GRAPH_CAPTURE,
    ),
    "vllm loading weights": (re.compile(r"Loading weights took ([\d.]+) ?s"), Phase.WEIGHT_LOADING, Phase.WEIGHT_LOADING),
    "vllm model loading": (
        re.compile(r"Model loading took [\d.]+ ?GiB (?:memory )?and ([\d.]+) ?s"),
        Phase.WEIGHT_LOADING,
        Phase.WEIGHT_LOADING,
    ),
    "vllm graph capturing": (
        re.compile(r"Graph capturing finished in ([\d.]+) ?secs?"),
        Phase.CUDA_GRAPH_CAPTURE,
        Phase.CUDA_GRAPH_CAPTURE,
    ),
    "vllm init engine": (
        re.compile(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) ?s"),
        Phase.MEMORY_POOL,
        Phase.CUDA_GRAPH_CAPTURE,
    ),
    "vllm torch.compile": (
        re.compile(r"torch\.compile (?:takes|took) ([\d.]+) ?s in total"),
        Phase.CUDA_GRAPH_CAPTURE,
        Phase.CUDA_GRAPH_CAPTURE,
    ),
}
# a line that marks a run's launch: SGLang's arguments dump, vLLM's version, arguments or engine lines,
# TensorRT-LLM's version banner or its LLM API's backend line, Triton loading a model
LAUNCH = re.compile(
    r"server_args=|vLLM (?:API )?server version |args: Namespace\(|non-default args: |Initializing an? (?:V\d )?LLM engine"
    r"|Launching vLLM \(v|data parallel engine\(s\) in headless mode|[▄█▀] +version \d"
    r"|TensorRT[- ]LLM version: |Using LLM with \w+ backend|model_lifecycle\.cc:\d+\] loading: "
)
# a tqdm bar's elapsed time: '[01:42<...', '[1:02:03<...'
_BAR = re.compile(r"^(?P<desc>.*?)(?P<percent>\d+)%.*?\[(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d\d)<")
_HALF_DAY_S = 12 * 3600
# where a server's prefix may start further in a line: SGLang's '[2026-05-09 09:20:26', vLLM's 'INFO 11-18 18:07:28'
_GLUED = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d")
_GLOG = re.compile(r"(?<![\w.])[EWIF](?P<month>1[0-2]|0?[1-9])(?P<day>[0-3]\d) (?P<clock>\d\d:\d\d:\d\d(?:\.\d+)?) ")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")  # colours, as the reader drops them


@dataclass
class Findings:
    """What the property found on one report: counts, and each violation in words."""

    totals: int = 0  # totals the report gives
    printed: int = 0  # durations the server printed in the reported run
    matched: int = 0  # ... that agree with the report
    steps: int = 0  # steps the report lists
    violations: list[str] = field(default_factory=list)

    def add(self, other: Findings) -> None:
        self.totals += other.totals
        self.printed += other.printed
        self.matched += other.matched
        self.steps += other.steps
        self.violations.extend(other.violations)


@dataclass
class _Clock:
    """The server's own clock as the log's text shows it: each line's time (its last stamp, else the
    last one before it), where in each line a stamp stands (a rank's line glued onto another's, after a
    bar's redraws), and how far a progress bar's own time reaches."""

    times: list[datetime | None]  # by line number - 1
    stamps: list[list[tuple[int, datetime]]]  # by line number - 1: (offset in the line, time)
    bar_ends: list[tuple[int, datetime]]  # (line, the bar's start + its elapsed time)

    def at(self, line: int, offset: int) -> datetime | None:
        """The time at ``offset`` of ``line``: the last stamp before it there, else the line before's."""
        before = [t for pos, t in self.stamps[line - 1] if pos <= offset]
        if before:
            return before[-1]
        return self.times[line - 2] if line > 1 else self.times[0]


def tolerance(seconds: float) -> float:
    return max(TOLERANCE_S, TOLERANCE_SHARE * abs(seconds))


def check(log: bytes, report: Report) -> Findings:
    """The durations property of ``report`` on ``log`` (the report's run: its lines only)."""
    found = Findings()
    clock = _read_clock(log, _base_day(report))
    lines = _physical_lines(log)
    first, last = report.run_start_line, max(report.run_last_line, report.run_start_line)
    _check_total(report, clock, lines, first, last, found)
    _check_phases(report, found)
    _check_steps(report, clock, lines, found)
    _check_printed(report, lines, first, last, found)
    return found


# -- the total -----------------------------------------------------------------------------------------


def _check_total(report: Report, clock: _Clock, lines: list[str], first: int, last: int, found: Findings) -> None:
    total = report.total_startup_s
    if total is None:
        if report.total_unknown is None:
            found.violations.append("total: null without a reason (total_unknown)")
        return
    found.totals += 1
    if total < 0:
        found.violations.append(f"total: {total} s is negative")
    if not any(LAUNCH.search(text) for text in lines[first - 1 : last]):
        found.violations.append(f"total: {total} s, but no line of the run (lines {first}-{last}) marks its launch")
    span = _own_span(clock, first, last)  # None: the server prints no stamp of its own (its lines carry one clock)
    if span is not None and total > span + 0.01:
        found.violations.append(f"total: {total} s is over the span of the server's own clock over the run ({span} s)")


def _own_span(clock: _Clock, first: int, last: int) -> float | None:
    """How long the server's own clock spans over lines ``first``-``last``: its stamps, and the time its
    progress bars counted since the stamp before their first draw."""
    times = [t for i in range(first - 1, min(last, len(clock.times))) for _, t in clock.stamps[i]]
    if not times:
        return None
    end = max([*times, *(at for line, at in clock.bar_ends if first <= line <= last)])
    return round((end - min(times)).total_seconds(), 3)


def _check_phases(report: Report, found: Findings) -> None:
    for phase in report.phases:
        if phase.duration_s is not None and phase.duration_s < 0:
            found.violations.append(f"{phase.name.value}: {phase.duration_s} s is negative")
        for rank, span in phase.ranks.items():
            if span.duration_s is not None and span.duration_s < 0:
                found.violations.append(f"{phase.name.value} on {rank}: {span.duration_s} s is negative")


# -- steps lie inside their phase ------------------------------------------------------------------------


def _check_steps(report: Report, clock: _Clock, lines: list[str], found: Findings) -> None:
    for phase in report.phases:
        for step in phase.steps:
            found.steps += 1
            printed = _printed_at(clock, lines, step.line)
            problem = _step_outside(report, phase, step.duration_s, printed, step.through)
            if problem is not None:
                found.violations.append(f"{phase.name.value} lists {step.name} {step.duration_s} s (line {step.line}): {problem}")
    for stretch in report.unaccounted:
        # the time after a phase that holds a draft model's set-up lists its steps: they lie inside it
        for step in stretch.steps:
            found.steps += 1
            problem = _outside_stretch(stretch, step.duration_s, _printed_at(clock, lines, step.line))
            if problem is not None:
                found.violations.append(f"{stretch.holds} lists {step.name} {step.duration_s} s (line {step.line}): {problem}")


def _outside_stretch(stretch: UnaccountedReport, seconds: float, printed: datetime | None) -> str | None:
    """Why a step printed at ``printed`` does not lie inside ``stretch``; None when it does."""
    start, end, slack = _when(stretch.start), _when(stretch.end), tolerance(seconds)
    if printed is None or start is None or end is None:
        return None if seconds <= stretch.duration_s + slack else f"longer than the stretch ({stretch.duration_s} s)"
    began = printed - timedelta(seconds=seconds)
    if (start - began).total_seconds() > slack:
        return f"it began at {began.isoformat()}, before the stretch ({start.isoformat()})"
    if (printed - end).total_seconds() > slack:
        return f"printed at {printed.isoformat()}, after the stretch ended ({end.isoformat()})"
    return None


def _printed_at(clock: _Clock, lines: list[str], line: int) -> datetime | None:
    """When the duration on ``line`` was printed: the time of the stamp before it on the line. None for
    a line with no stamp of its own (TensorRT-LLM's 'Model init total -- 71.40s'): the line before's
    time says only that it was printed later."""
    if not 0 < line <= len(lines):
        return None
    text = lines[line - 1]
    found = [m.start() for pattern, _, _ in PRINTED.values() for m in pattern.finditer(text)]
    offset = min(found) if found else len(text)
    return clock.at(line, offset) if any(pos <= offset for pos, _ in clock.stamps[line - 1]) else None


def _step_outside(
    report: Report, phase: PhaseReport, seconds: float, printed: datetime | None, through: Phase | None
) -> str | None:
    """Why a step of ``seconds`` printed at ``printed`` does not lie inside ``phase`` (through
    ``through``); None when it does."""
    covered = _phases_from(report, phase.name, through or phase.name)
    starts = [_when(p.start) for p in covered]
    ends = [_when(p.end) if p.end is not None else _open_end(p) for p in covered]
    known_starts = [s for s in starts if s is not None]
    known_ends = [e for e in ends if e is not None]
    slack = tolerance(seconds)
    if printed is None:
        # when it was printed is not known: it is no longer than the phases (their stamps' span, or
        # the durations they report: a phase whose lines carry no time of their own lasts its step)
        span = _span_s(min(known_starts), max(known_ends)) if known_starts and known_ends else None
        reported = [p.duration_s for p in covered if p.duration_s is not None]
        longest = max(span or 0.0, sum(reported)) if span is not None or reported else None
        return f"longer than the phase ({longest} s)" if longest is not None and seconds > longest + slack else None
    began = printed - timedelta(seconds=seconds)
    if known_starts and not phase.lower_bound and (min(known_starts) - began).total_seconds() > slack:
        return f"it began at {began.isoformat()}, before the phase ({min(known_starts).isoformat()})"
    if known_ends and (printed - max(known_ends)).total_seconds() > slack:
        return f"printed at {printed.isoformat()}, after the phase ended ({max(known_ends).isoformat()})"
    return None


def _phases_from(report: Report, first: Phase, last: Phase) -> list[PhaseReport]:
    order = PHASE_ORDER.index
    return [p for p in report.phases if order(first) <= order(p.name) <= order(last)]


def _open_end(phase: PhaseReport) -> datetime | None:
    start = _when(phase.start)
    return start + timedelta(seconds=phase.duration_s) if start is not None and phase.duration_s is not None else None


# -- printed durations agree ------------------------------------------------------------------------------


def printed_durations(lines: list[str], first: int, last: int) -> Iterator[tuple[str, int, float, str | None]]:
    """(kind, line, seconds, rank) of every duration the server printed on lines ``first``-``last``."""
    for number in range(first, min(last, len(lines)) + 1):
        text = lines[number - 1]
        for kind, (pattern, _, _) in PRINTED.items():
            for m in pattern.finditer(text):
                before = text[: m.start()]
                cut = max(before.rfind("\r"), before.rfind("\n"))
                env = split_envelope(text[cut + 1 : m.start()] + "x")
                yield kind, number, float(m.group(1)), env.rank


def _check_printed(report: Report, lines: list[str], first: int, last: int, found: Findings) -> None:
    """Each measure agrees with the report: the ranks that print one measure (the n-th time each prints
    it) through their slowest, which the report lists, or each through its own stay in the phase."""
    measures: dict[tuple[str, int], list[tuple[int, float, str | None]]] = {}
    times: dict[tuple[str, str | None], int] = {}
    for kind, line, seconds, rank in printed_durations(lines, first, last):
        nth = times[kind, rank] = times.get((kind, rank), 0) + 1
        measures.setdefault((kind, nth), []).append((line, seconds, rank))
    for (kind, _), printed in measures.items():
        line, slowest, rank = max(printed, key=lambda p: p[1])
        near = _candidates(report, kind, line, rank)
        agrees = any(abs(c - slowest) <= tolerance(slowest) for c in near)
        for line, seconds, rank in printed:
            found.printed += 1
            own = _candidates(report, kind, line, rank)
            if agrees or any(abs(c - seconds) <= tolerance(seconds) for c in own):
                found.matched += 1
            else:
                shown = ", ".join(f"{c:g}" for c in sorted(set(own))) or "none"
                found.violations.append(f"line {line}: {kind} printed {seconds} s{f' ({rank})' if rank else ''}; report: {shown}")


def _candidates(report: Report, kind: str, line: int, rank: str | None) -> list[float]:
    """What in the report may stand for a duration the server printed on ``line``: the phase it measures
    (from it through its last one) and the phase the line lies in: their durations, the rank's stay in
    them, their steps; and the step the report took from that line, wherever it lists it (a step over
    several phases is listed where it starts, which may be before the first one it measures)."""
    _, phase, through = PRINTED[kind]
    covered = _phases_from(report, phase, through)
    lying = [p for p in report.phases if p.first_line is not None and p.first_line <= line <= (p.last_line or line)]
    out: list[float] = []
    for p in [*covered, *lying]:
        if p.duration_s is not None:
            out.append(p.duration_s)
        out.extend(s.duration_s for s in p.steps)
        out.extend(span.duration_s for r, span in p.ranks.items() if span.duration_s is not None and _same_rank(r, rank))
    out.extend(s.duration_s for p in report.phases for s in p.steps if s.line == line)
    out.extend(s.duration_s for g in report.unaccounted for s in g.steps if s.line == line)
    starts = [t for t in (_when(p.start) for p in covered) if t is not None]
    ends = [t for t in ((_when(p.end) if p.end else _open_end(p)) for p in covered) if t is not None]
    if len(covered) > 1 and starts and ends:
        out.append(_span_s(min(starts), max(ends)))
    return out


def _same_rank(reported: str, printed: str | None) -> bool:
    return printed is None or reported == printed or printed in reported.split() or reported in printed.split()


# -- reading the log --------------------------------------------------------------------------------------


def _physical_lines(log: bytes) -> list[str]:
    """The log's lines as grep -n counts them (a bar's \\r redraws stay in their line)."""
    return _ANSI.sub("", log.decode("utf-8", "replace")).split("\n")


def _base_day(report: Report) -> datetime:
    """The day (and year) stamps without one are read in: the report's earliest time's, as logphase took
    it (vLLM prints no year; a time of day alone, no date)."""
    times = [_when(p.start) for p in report.phases] + [_when(report.failure.ts if report.failure else None)]
    known = [t for t in times if t is not None]
    earliest = min(known) if known else datetime(2026, 1, 1)
    return datetime(earliest.year, earliest.month, earliest.day)


def _read_clock(log: bytes, day: datetime) -> _Clock:
    times: list[datetime | None] = []
    stamps: list[list[tuple[int, datetime]]] = []
    bars: dict[str, tuple[float, datetime | None]] = {}  # desc -> (last elapsed, the bar's start)
    bar_ends: list[tuple[int, datetime]] = []
    now: datetime | None = None
    for number, text in enumerate(_physical_lines(log), 1):
        found: list[tuple[int, datetime]] = []
        for at, stamp in _own_stamps(text):
            when = _stamp_time(stamp, now or day)
            if when is not None:
                now = when
                found.append((at, when))
        for piece in text.split("\r"):
            _bar(split_envelope(piece).message, number, now, bars, bar_ends)
        times.append(now)
        stamps.append(found)
    # lines before the first stamp: its time
    first = next((t for t in times if t is not None), None)
    return _Clock([t if t is not None else first for t in times], stamps, bar_ends)


def _own_stamps(text: str) -> Iterator[tuple[int, Stamp]]:
    """The server's own stamps on a physical line, where each stands: the line's own prefix (behind
    its wrappers), and each prefix glued on after it (another rank's line, after a bar's redraws)."""
    found: list[tuple[int, Stamp]] = []
    starts = sorted({0, *(i + 1 for i, c in enumerate(text) if c == "\r"), *(m.start() for m in _GLUED.finditer(text))})
    seen_until = -1
    for start in starts:
        if start <= seen_until:
            continue
        env = split_envelope(text[start:])
        if env.server_stamp is not None:
            found.append((start, env.server_stamp))
            seen_until = start + max(len(text) - start - len(env.message), 0)
    # PyTorch's glog stamp, printed by the server's process ('[W903 21:08:30.547205127 socket.cpp:469]')
    found.extend((m.start(), Stamp(None, int(m["month"]), int(m["day"]), m["clock"][:15])) for m in _GLOG.finditer(text))
    yield from sorted(found, key=lambda f: f[0])


def _bar(
    message: str,
    line: int,
    now: datetime | None,
    bars: dict[str, tuple[float, datetime | None]],
    ends: list[tuple[int, datetime]],
) -> None:
    """A progress bar's draw: a new bar when its elapsed time goes back (or its first), started at the
    time of the stamp before it; how far its own clock reaches."""
    m = _BAR.match(message)
    if m is None:
        return
    elapsed = int(m.group("h") or 0) * 3600 + int(m.group("m")) * 60 + int(m.group("s"))
    desc = m.group("desc").strip()
    seen = bars.get(desc)
    start = now if seen is None or elapsed < seen[0] else seen[1]
    bars[desc] = (elapsed, start)
    if start is not None:
        ends.append((line, start + timedelta(seconds=elapsed)))


def _stamp_time(stamp: Stamp, now: datetime) -> datetime | None:
    """A stamp as a time, what it leaves out taken from ``now`` (the time before it): a time of day more
    than half a day before ``now`` is on the next day, a month and day more than half a year before it
    in the next year."""
    year = stamp.year or now.year
    month, day = (stamp.month, stamp.day) if stamp.month is not None and stamp.day is not None else (now.month, now.day)
    try:
        t = datetime.fromisoformat(f"{year:04d}-{month:02d}-{day:02d}T{stamp.time}")
    except ValueError:
        return None
    if stamp.month is None and (now - t).total_seconds() > _HALF_DAY_S:
        t += timedelta(days=1)
    elif stamp.year is None and stamp.month is not None and (now - t).days > 183:
        t = t.replace(year=t.year + 1)
    return t


def _when(ts: str | None) -> datetime | None:
    if ts is None:
        return None
    try:
        return datetime.fromisoformat(ts)
    except ValueError:
        return None


def _span_s(a: datetime, b: datetime) -> float:
    return round((b - a).total_seconds(), 3)
