"""The state the phase machine keeps: runs of the server, each with a track per rank (the phases it
entered, as spans of time and lines), its incidents and the facts its lines gave."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from logphase.diagnosing.diagnosis import Assessment, Severity
from logphase.packs.rows import Step
from logphase.vocabulary import events as ev
from logphase.vocabulary.causes import WAITED_ON_PEERS, Cause
from logphase.vocabulary.phases import Phase
from logphase.vocabulary.servers import Server


class StepSeen(NamedTuple):
    """A duration the server printed (a pack row's ``step``): by which rank (None: its own process),
    how long, on which line, when, the phase the printing rank was in then, and the name the report
    gives it (the step's, its event's values filled in)."""

    step: Step
    rank: str | None
    seconds: float
    line: int
    ts: str | None = None
    at: Phase | None = None
    name: str = ""

# The consequences a report lists (the first ones in line order); the run keeps one more, for
# the case where the root is among them.
MAX_CONSEQUENCES = 50


def seconds_between(a: str | None, b: str | None) -> float | None:
    if a is None or b is None:
        return None
    return round((_parse_ts(b) - _parse_ts(a)).total_seconds(), 3)


def duration_between(a: str | None, b: str | None) -> float | None:
    """How long from ``a`` to ``b``: never negative (times from clocks that disagree, a wrapper's
    and the server's, may put an end a moment before its start)."""
    seconds = seconds_between(a, b)
    return None if seconds is None else max(seconds, 0.0)


_TS_CACHE: dict[str, datetime] = {}


def _parse_ts(ts: str) -> datetime:
    value = _TS_CACHE.get(ts)
    if value is None:
        if len(_TS_CACHE) > 4096:
            _TS_CACHE.clear()
        value = _TS_CACHE[ts] = datetime.fromisoformat(ts)
    return value


@dataclass
class Span:
    start: str | None  # None: not known (the phase began before the log does, or without a time)
    start_line: int
    end: str | None = None
    end_line: int | None = None
    # the log shows the phase going on, not starting: start is the first line seen, a lower bound
    lower_bound: bool = False
    # an earlier pass showed the phase first (a phase entered again: MarkerRole.AGAIN dropped that pass's
    # span): the line that first showed it, while its times are this pass's
    shown_line: int | None = None

    @property
    def first_line(self) -> int:
        """The first line that showed the phase (an earlier pass's, when one did)."""
        return self.shown_line if self.shown_line is not None else self.start_line


@dataclass
class Track:
    """One rank (or the main process, key None): the phases it entered."""

    phase: Phase | None = None
    spans: dict[Phase, Span] = field(default_factory=dict)
    # the first lines of the phases an earlier pass entered, dropped when the rank went back (back_to)
    earlier: dict[Phase, int] = field(default_factory=dict)
    # a second model's set-up followed the first's (a draft model, after the target's capture): the phase
    # the rank was in and where the first model's part of it ended (time, line)
    first_model: tuple[Phase, str | None, int] | None = None

    def enter(self, phase: Phase, ts: str | None, line: int, lower_bound: bool = False) -> None:
        if self.phase is not None and self.phase in self.spans:
            current = self.spans[self.phase]
            if current.end is None and current.end_line is None:
                current.end, current.end_line = ts, line
        self.phase = phase
        self.spans[phase] = Span(ts, line, lower_bound=lower_bound, shown_line=self.earlier.pop(phase, None))

    def back_to(self, phase: Phase) -> None:
        """The rank makes ``phase`` again: the phases it entered after it are dropped, and it is in
        ``phase`` once more, from its first entry on."""
        for later in [p for p in self.spans if p.order > phase.order]:
            self.earlier[later] = min(self.earlier.get(later, self.spans[later].first_line), self.spans[later].first_line)
            del self.spans[later]
        self.phase = phase
        self.reopen(phase)

    def second_model(self) -> None:
        """The rank begins an earlier phase again after its phase ended: a second model's set-up (a
        draft model's load, pool and capture) follows the first's. The rank stays in its phase (phases
        only move forwards); where the first model's part of it ended is kept, once."""
        span = self.spans.get(self.phase) if self.phase is not None else None
        if self.first_model is None and self.phase is not None and span is not None and span.end_line is not None:
            self.first_model = (self.phase, span.end, span.end_line)

    def reopen(self, phase: Phase) -> None:
        span = self.spans[phase]
        span.end, span.end_line = None, None

    def close(self, phase: Phase | None, ts: str | None, line: int) -> None:
        if phase is None or self.phase is not phase:
            return
        span = self.spans[phase]
        if span.end_line is None:
            span.end, span.end_line = ts, line


@dataclass
class Incident:
    event: ev.EventBase
    assessment: Assessment
    track_phase: Phase | None  # the phase the reporting rank was in

    def __deepcopy__(self, memo: dict[int, Any]) -> Incident:
        # never changed once made: a copy of the machine (a report with a traceback still open)
        # shares it rather than copying its event, the most costly part of the copy
        return self


def _root_order(incident: Incident) -> tuple[str, int]:
    """Which of two failures of one severity is the root: first in time; among failures stamped
    with the same second (the log's resolution), the earliest line: line numbers do not depend on
    how the input was read (to the second: stamps of other writers may carry fractions, SGLang's
    do not)."""
    return (incident.event.ts or "")[:19], incident.event.line


class Incidents:
    """The incidents of a run, kept flat in their number (a server failing while serving can print
    a million tracebacks): what the report reads of them, exactly as if every one were kept.

    * the earliest of each failing severity (root, unstated), the candidates for the root cause, and
      apart the earliest of those that only waited for the other ranks (``WAITED_ON_PEERS``);
    * the ranks that reported each cause (the ranks that waited, when it is a timeout);
    * the first echo of each cause, and the first echo at all (the root when no failure states one);
    * the first ``MAX_CONSEQUENCES + 1`` in line order (the consequences, whichever is the root);
    * the last line of each rank that reported one (whose loss the others reported);
    * how many of each severity there were.
    """

    def __init__(self) -> None:
        self.counts: dict[Severity, int] = dict.fromkeys(Severity, 0)
        self._earliest: dict[tuple[Severity, bool], Incident] = {}  # by severity, and whether it only waited
        self._ranks_of: dict[Cause, set[str]] = {}
        self._first_echo: Incident | None = None
        self._first_echo_of: dict[Cause, Incident] = {}
        # (line, arrival, incident): sorted, the first in line order; arrival keeps the order of equal lines
        self._first_lines: list[tuple[int, int, Incident]] = []
        self._last_line_of_rank: dict[str, int] = {}

    def add(self, incident: Incident) -> None:
        severity = incident.assessment.severity
        arrival = len(self)
        self.counts[severity] += 1
        if severity in (Severity.ROOT, Severity.UNSTATED):
            key = (severity, incident.assessment.cause in WAITED_ON_PEERS)
            best = self._earliest.get(key)
            if best is None or _root_order(incident) < _root_order(best):
                self._earliest[key] = incident
        elif severity is Severity.ECHO:
            if self._first_echo is None:
                self._first_echo = incident
            self._first_echo_of.setdefault(incident.assessment.cause, incident)
        event = incident.event
        if event.rank is not None and severity is not Severity.NOTE:
            self._ranks_of.setdefault(incident.assessment.cause, set()).add(event.rank)
        if len(self._first_lines) <= MAX_CONSEQUENCES or event.line < self._first_lines[-1][0]:
            bisect.insort(self._first_lines, (event.line, arrival, incident), key=lambda kept: kept[:2])
            del self._first_lines[MAX_CONSEQUENCES + 1 :]
        if event.rank is not None and event.line > self._last_line_of_rank.get(event.rank, 0):
            self._last_line_of_rank[event.rank] = event.line

    def __len__(self) -> int:
        return sum(self.counts.values())

    def held(self) -> list[Incident]:
        """The incidents kept, each once (bounded whatever their number)."""
        held = [kept for _, _, kept in self._first_lines]
        held.extend(self._earliest.values())
        held.extend(self._first_echo_of.values())
        if self._first_echo is not None:
            held.append(self._first_echo)
        return list({id(i): i for i in held}.values())

    def stored(self) -> int:
        """How many incidents are held: for tests."""
        return len(self.held())

    def has_failure(self) -> bool:
        """A failure that is no echo: one that states its error or shows one without it."""
        return bool(self._earliest)

    def earliest(self, severity: Severity, waited: bool | None = None) -> Incident | None:
        """The first in time (then in line order) of a failing severity (root or unstated); ``waited``:
        of those that only waited for the other ranks (True), of the others (False), of all (None)."""
        found = [self._earliest.get((severity, w)) for w in ((False, True) if waited is None else (waited,))]
        return min((i for i in found if i is not None), key=_root_order, default=None)

    def first_failure(self) -> Incident | None:
        """The failure that is the root cause, if one is: the earliest that states its error; but when
        that one only says its rank waited for the others, a failure whose error is not shown (a crash)
        before it: the others waited for the crashed rank (the abort a wait ends in comes after it).
        Without an error stated, the earliest failure that shows one without it."""
        stated = self.earliest(Severity.ROOT)
        if stated is None:
            return self.earliest(Severity.UNSTATED)
        if stated.assessment.cause in WAITED_ON_PEERS:
            crash = self.earliest(Severity.UNSTATED, waited=False)
            if crash is not None and _root_order(crash) < _root_order(stated):
                return crash
        return stated

    def ranks_of(self, cause: Cause) -> set[str]:
        """The ranks whose lines reported a failure or an echo of ``cause``."""
        return set(self._ranks_of.get(cause, ()))

    def first_echo(self, cause: Cause | None = None) -> Incident | None:
        """The first echo of ``cause``, or the first echo at all."""
        return self._first_echo if cause is None else self._first_echo_of.get(cause)

    def consequences(self, root: Incident | None) -> list[Incident]:
        """The first ``MAX_CONSEQUENCES`` incidents other than the root, in line order."""
        return [i for _, _, i in self._first_lines if i is not root][:MAX_CONSEQUENCES]

    def ranks_after(self, line: int) -> set[str]:
        """The ranks that reported an incident after ``line``."""
        return {rank for rank, last in self._last_line_of_rank.items() if last > line}


@dataclass
class Run:
    index: int
    start_line: int
    first_ts: str | None = None
    last_ts: str | None = None
    # the earliest and the latest time the server's own prefix printed on the run's lines (a wrapper's
    # time, a time inherited from the line before, PyTorch's glog stamp are not the server's clock):
    # the total start-up time lies within them (build_report._total)
    own_first_ts: str | None = None
    own_last_ts: str | None = None
    clock_by_writer: dict[str | None, str] = field(default_factory=dict)
    tracks: dict[str | None, Track] = field(default_factory=dict)
    server_args: dict[str, Any] | None = None
    server_args_line: int | None = None
    ready_ts: str | None = None
    ready_line: int | None = None
    incidents: Incidents = field(default_factory=Incidents)
    overrides: list[ev.ParameterOverride] = field(default_factory=list)
    notices: list[tuple[str, str, int]] = field(default_factory=list)  # (kind, message, line)
    memory: dict[str, dict[str, float]] = field(default_factory=dict)  # rank -> boundary -> GB
    memory_lines: dict[str, dict[str, int]] = field(default_factory=dict)  # rank -> boundary -> line
    weights_gb: float | None = None
    kv_cache_gb: float | None = None
    kv_tokens: int | None = None
    mamba_cache_gb: float | None = None
    cuda_graph_gb: float | None = None
    capture_avail_gb: tuple[float, str | None, int] | None = None  # lowest avail mem at capture
    max_capture_bs: int | None = None
    scheduler: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, str] = field(default_factory=dict)
    last_line: int = 0
    # how the run's first phase was entered: anything but the launch means the log starts mid-run
    first_entry: tuple[Phase, int] | None = None
    # the launch's own start marker (the server's arguments dump) was read: lines that are launch
    # evidence but printed after it (the default attention backend ...) do not make a whole launch
    launch_marked: bool = False
    # the server whose logger prefix (one other servers print too) its lines carried, or whose
    # launcher a usage error named: its server when nothing else names one (detect.run_server)
    logger_server: Server | None = None
    # the server whose code its first traceback in a server's code runs (detect.server_of_frames)
    frames_server: Server | None = None
    seen_stamped: bool = False  # lines behind the stamped prefix (its server's own), known messages or not
    streams: set[str] = field(default_factory=set)  # where the events' lines were written
    bars: dict[Phase, ev.ProgressBar] = field(default_factory=dict)  # the latest bar of each phase
    size_rank: str | None = None
    shutdown_line: int | None = None
    requests_posted: int = 0  # POST requests served before ready (the warmup sends one)
    node_ranks: set[object] = field(default_factory=set)  # the --node-rank of each server_args dump
    retired: bool = False  # an early run of a file with many: only its place is kept (machine.KEEP_RUNS)
    server: Server | None = None  # the server its own start lines show (detect.py): "sglang", "vllm"
    version: str | None = None  # the server's version, when a start line printed it
    begun_line: int | None = None  # the line of the server's first launch line ("vLLM API server version")
    steps: list[StepSeen] = field(default_factory=list)  # durations the server printed, in line order

    def retime(self, moved: Callable[[str], str]) -> None:
        """Every time the run holds, moved (lines dated by a wrapper before its zone was known)."""

        def move(ts: str | None) -> str | None:
            return None if ts is None else moved(ts)

        self.first_ts, self.last_ts, self.ready_ts = move(self.first_ts), move(self.last_ts), move(self.ready_ts)
        self.own_first_ts, self.own_last_ts = move(self.own_first_ts), move(self.own_last_ts)
        self.steps = [seen._replace(ts=move(seen.ts)) for seen in self.steps]
        self.clock_by_writer = {writer: moved(ts) for writer, ts in self.clock_by_writer.items()}
        for track in self.tracks.values():
            for span in track.spans.values():
                span.start, span.end = move(span.start), move(span.end)
        for event in [i.event for i in self.incidents.held()] + [*self.overrides, *self.bars.values()]:
            event.ts = move(event.ts)

    def retire(self) -> Run:
        """What is kept of an early run once many follow it: its number and its lines."""
        return Run(index=self.index, start_line=self.start_line, last_line=self.last_line, retired=True)

    def another_node(self, args: dict[str, Any]) -> bool:
        """Each node of a multi-node launch prints its own server_args: a dump of the same launch
        with a --node-rank not seen yet is another node starting, not a relaunch."""
        mine = self.server_args or {}
        nnodes = args.get("nnodes")
        if not isinstance(nnodes, int) or nnodes < 2 or self.finished:
            return False
        if any(mine.get(key) != args.get(key) for key in ("model_path", "nnodes", "tp_size", "dist_init_addr")):
            return False
        return args.get("node_rank") not in self.node_ranks

    def own_time(self, first_ts: str, high_ts: str) -> None:
        """Lines of the run whose own prefix printed times from ``first_ts`` up to ``high_ts``."""
        if self.own_first_ts is None or first_ts < self.own_first_ts:
            self.own_first_ts = first_ts
        if self.own_last_ts is None or high_ts > self.own_last_ts:
            self.own_last_ts = high_ts

    def extend(self, first_ts: str | None, last_ts: str | None, last_line: int) -> None:
        """Lines up to ``last_line`` belong to the run; their times run from ``first_ts`` to ``last_ts``."""
        if first_ts is not None and self.first_ts is None:
            self.first_ts = first_ts
        if last_ts is not None and (self.last_ts is None or last_ts > self.last_ts):
            self.last_ts = last_ts
        self.last_line = max(self.last_line, last_line)

    @property
    def finished(self) -> bool:
        return self.ready_ts is not None or self.ready_line is not None or self.has_root

    @property
    def has_root(self) -> bool:
        return self.incidents.has_failure()

    def furthest_phase(self) -> Phase | None:
        phases = [t.phase for t in self.tracks.values() if t.phase is not None]
        return max(phases, key=lambda p: p.order) if phases else None

    def follower_node_up(self) -> bool:
        """A node with --node-rank >= 1 runs only schedulers and never prints 'fired up': it is up
        once each of its ranks (tp * pp / nnodes) has finished its last start-up phase."""
        args = self.server_args or {}
        nnodes, node_rank = args.get("nnodes"), args.get("node_rank")
        if not isinstance(nnodes, int) or nnodes < 2 or not isinstance(node_rank, int) or node_rank < 1:
            return False
        last = Phase.MEMORY_POOL if args.get("disable_cuda_graph") else Phase.CUDA_GRAPH_CAPTURE
        tp, pp = args.get("tp_size"), args.get("pp_size")
        per_node = max(1, (tp if isinstance(tp, int) else 1) * (pp if isinstance(pp, int) else 1) // nnodes)
        done = 0
        for rank, track in self.tracks.items():
            span = track.spans.get(last)
            done += rank is not None and span is not None and span.end_line is not None
        return done >= per_node

    @property
    def partial(self) -> bool:
        """The log starts after this run's launch: its first phase was already under way, or the
        launch was only seen by lines printed after its start marker and the run went on past it
        (a launch that fails before its dump, such as a rejected argument, is whole)."""
        if self.first_entry is None:
            return False
        if self.first_entry[0] is not Phase.LAUNCH:
            return True
        return not self.launch_marked and self.has_progress()

    def has_progress(self) -> bool:
        """A rank is at work: a server_args dump now is a relaunch. (Lines without a rank, such as
        NCCL's or Gloo's, can come from anything before the launch line reaches the log.)"""
        return any(rank is not None and t.phase not in (None, Phase.LAUNCH) for rank, t in self.tracks.items())
