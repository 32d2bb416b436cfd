"""Stage 3: the phase machine. Folds events into runs, ranks, phases, failures and facts.

Driven by the table in ``phases.py``. Per rank, a phase is entered on its first evidence and
closed by its end marker or by the rank entering a later phase. The server's phase is the
furthest any rank of the run has entered. A new run starts at a second ``server_args=`` dump,
at a phase marker going backwards after the run finished, or when timestamps jump back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import Any

from logphase.pipeline import events as ev
from logphase.pipeline.diagnosis import Assessment, Severity, assess
from logphase.pipeline.messages import SCHEDULER_RULES, evidence_of
from logphase.pipeline.phases import PHASE_ORDER, Phase, Role, Transition

# A timestamp this far behind the latest one seen means another run's lines, not interleaving.
CLOCK_JUMP_BACK_S = 120.0


def seconds_between(a: str | None, b: str | None) -> float | None:
    if a is None or b is None:
        return None
    return round((_parse_ts(b) - _parse_ts(a)).total_seconds(), 3)


_TS_CACHE: dict[str, datetime] = {}


_STAMP, _TAGS = itemgetter(0), itemgetter(1)


def _writer(tags: bytes) -> str | None:
    """b' DP0 TP0' -> 'DP0 TP0', b'' -> None: the rank split_envelope gives the event."""
    return tags.decode("ascii").strip() or None


def _first_index(stamps: list[tuple[bytes, bytes]], writers: set[bytes]) -> dict[bytes, int]:
    if len(writers) == 1:
        return dict.fromkeys(writers, 0)
    found: dict[bytes, int] = {}
    for i, (_, w) in enumerate(stamps):  # writers interleave: a few lines find them all
        if w not in found:
            found[w] = i
            if len(found) == len(writers):
                break
    return found


def _last_index(stamps: list[tuple[bytes, bytes]], end: int, writers: set[bytes]) -> dict[bytes, int]:
    """The last line of each writer among stamps[:end]."""
    found: dict[bytes, int] = {}
    for i in range(end - 1, -1, -1):
        w = stamps[i][1]
        if w not in found:
            found[w] = i
            if len(found) == len(writers):
                break
    return found


def _iso(stamp: bytes) -> str:
    """b'2026-05-09 09:20:26' -> '2026-05-09T09:20:26', as prefix.split_envelope writes it."""
    return stamp.decode("ascii").replace(" ", "T", 1)


def _parse_ts(ts: str) -> datetime:
    value = _TS_CACHE.get(ts)
    if value is None:
        if len(_TS_CACHE) > 4096:
            _TS_CACHE.clear()
        value = _TS_CACHE[ts] = datetime.fromisoformat(ts)
    return value


@dataclass
class Span:
    start: str | None
    start_line: int
    end: str | None = None
    end_line: int | None = None


@dataclass
class Track:
    """One rank (or the main process, key None): the phases it entered."""

    phase: Phase | None = None
    spans: dict[Phase, Span] = field(default_factory=dict)

    def enter(self, phase: Phase, ts: str | None, line: int) -> None:
        if self.phase is not None and self.phase in self.spans:
            current = self.spans[self.phase]
            if current.end is None and current.end_line is None:
                current.end, current.end_line = ts, line
        self.phase = phase
        self.spans[phase] = Span(ts, line)

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


@dataclass
class Run:
    index: int
    start_line: int
    first_ts: str | None = None
    last_ts: str | None = None
    clock_by_writer: dict[str | None, str] = field(default_factory=dict)
    tracks: dict[str | None, Track] = field(default_factory=dict)
    server_args: dict[str, Any] | None = None
    server_args_line: int | None = None
    ready_ts: str | None = None
    ready_line: int | None = None
    incidents: list[Incident] = field(default_factory=list)
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
    size_rank: str | None = None
    shutdown_line: int | None = None

    @property
    def finished(self) -> bool:
        return self.ready_ts is not None or self.ready_line is not None or self.has_root

    @property
    def has_root(self) -> bool:
        return any(i.assessment.severity is Severity.ROOT for i in self.incidents)

    def furthest_phase(self) -> Phase | None:
        phases = [t.phase for t in self.tracks.values() if t.phase is not None]
        return max(phases, key=lambda p: p.index) if phases else None

    def has_progress(self) -> bool:
        furthest = self.furthest_phase()
        return furthest is not None and furthest is not Phase.LAUNCH


class PhaseMachine:
    def __init__(self) -> None:
        self.runs: list[Run] = [Run(index=1, start_line=1)]

    @property
    def run(self) -> Run:
        return self.runs[-1]

    @property
    def ready(self) -> bool:
        """Whether the current run has reached ready: from then on batch and access lines only
        move the clock."""
        return self.run.ready_line is not None

    def _new_run(self, line: int) -> Run:
        run = Run(index=len(self.runs) + 1, start_line=line)
        self.runs.append(run)
        return run

    def feed(self, event: ev.EventBase) -> None:
        run = self.run
        if event.line < run.start_line:
            # a multi-line record that began before this run started and closed only now
            # (its lines interleaved with the next run's first ones): it belongs where it began
            earlier = next(r for r in reversed(self.runs) if r.start_line <= event.line)
            self._fold(earlier, event, evidence_of(event))
            return
        ts = event.ts
        if ts is not None and not event.ts_inherited:
            # each writer's clock only moves forward; ranks interleave, so compare within a writer
            previous = run.clock_by_writer.get(event.rank)
            back = seconds_between(ts, previous) if previous is not None else None
            if back is not None and back > CLOCK_JUMP_BACK_S:
                run = self._new_run(event.line)
            if previous is None or ts > previous:
                run.clock_by_writer[event.rank] = ts
        kind = event.kind
        later = ts is None or run.last_ts is None or ts > run.last_ts
        if kind == "server_args" and (
            run.server_args is not None
            # ranks already working or done: a relaunch, unless the dump is older than their lines
            # (it was printed first and merely reached the file late)
            or ((run.has_progress() or run.finished) and later)
        ):
            run = self._new_run(event.line)
            later = True
        transition = evidence_of(event)
        if transition is not None and transition.role is Role.BEGIN and run.finished and later:
            track = self._track_key(event, transition)
            current = run.tracks.get(track)
            if transition.phase is Phase.LAUNCH or (
                current is not None
                and current.phase is not None
                and transition.phase is not None
                and transition.phase.index < current.phase.index
            ):
                run = self._new_run(event.line)
        self._fold(run, event, transition)

    def _fold(self, run: Run, event: ev.EventBase, transition: Transition | None) -> None:
        ts, kind = event.ts, event.kind
        if ts is not None:
            if run.first_ts is None:
                run.first_ts = ts
            if run.last_ts is None or ts > run.last_ts:
                run.last_ts = ts
        run.last_line = max(run.last_line, event.end_line or event.line)
        if transition is not None:
            self._apply(run, event, transition)
        if kind == "server_args":
            # the run starts here even when the dump reached the file after the ranks' first lines
            main = run.tracks.setdefault(None, Track())
            if Phase.LAUNCH not in main.spans:
                main.spans[Phase.LAUNCH] = Span(ts, event.line)
                if main.phase is None:
                    main.phase = Phase.LAUNCH
        self._facts(run, event)
        if isinstance(event, ev.Shutdown) and run.shutdown_line is None:
            run.shutdown_line = event.line
        assessment = assess(event, after_ready=run.ready_line is not None)
        if assessment is not None and run.shutdown_line is not None:
            # after a requested shutdown (SIGTERM), dying children and their echoes are expected
            assessment = assessment._replace(severity=Severity.NOTE)
        if assessment is not None:
            track = run.tracks.get(event.rank) or run.tracks.get(self._default_rank(event))
            run.incidents.append(Incident(event, assessment, track.phase if track else None))

    def feed_plain(self, stamps: list[tuple[bytes, bytes]], first_line: int) -> int:
        """What ``feed`` does with events that carry nothing but their time and writer (no
        transition, fact or assessment: batch statistics, access lines once ready), for
        consecutive lines from ``first_line`` on, given each one's raw timestamp and rank tags
        (b'2026-05-09 09:20:26', b' TP0'). Returns how many it took; the line after them moves
        its writer's clock back into a new run and needs ``feed``. Keep in step with ``feed``
        and ``_fold``: tests/test_fast_path.py compares the two."""
        n = len(stamps)
        if not n:
            return 0
        run = self.run
        clocks = run.clock_by_writer
        taken = n
        if sorted(stamps, key=_STAMP) == stamps:
            # time never goes back, so neither does any writer's: only its first line can jump
            writers = set(map(_TAGS, stamps))
            for w, first in _first_index(stamps, writers).items():
                previous = clocks.get(_writer(w))
                if previous is not None and first < taken:
                    back = seconds_between(_iso(stamps[first][0]), previous)
                    if back is not None and back > CLOCK_JUMP_BACK_S:
                        taken = first
            if not taken:
                return 0
            for w, last in _last_index(stamps, taken, writers).items():
                ts, key = _iso(stamps[last][0]), _writer(w)  # the writer's last line is its latest
                previous = clocks.get(key)
                if previous is None or ts > previous:
                    clocks[key] = ts
            high = _iso(stamps[taken - 1][0])
        else:
            high = None
            for i in range(n):
                ts, key = _iso(stamps[i][0]), _writer(stamps[i][1])
                previous = clocks.get(key)
                if previous is not None:
                    back = seconds_between(ts, previous)
                    if back is not None and back > CLOCK_JUMP_BACK_S:
                        taken = i
                        break
                if previous is None or ts > previous:
                    clocks[key] = ts
                if high is None or ts > high:
                    high = ts
            if not taken:
                return 0
        if run.first_ts is None:
            run.first_ts = _iso(stamps[0][0])
        if run.last_ts is None or high > run.last_ts:  # type: ignore[operator]
            run.last_ts = high
        run.last_line = max(run.last_line, first_line + taken - 1)
        return taken

    # -- transitions ----------------------------------------------------------------------------

    @staticmethod
    def _default_rank(event: ev.EventBase) -> str | None:
        return event.rank if event.rank is not None else ("TP0" if (event.rule or event.kind) in SCHEDULER_RULES else None)

    def _track_key(self, event: ev.EventBase, transition: Transition) -> str | None:
        if transition.server_level:
            return None
        return self._default_rank(event)

    def _apply(self, run: Run, event: ev.EventBase, transition: Transition) -> None:
        key = self._track_key(event, transition)
        track = run.tracks.setdefault(key, Track())
        ts, line = event.ts, event.line
        phase = transition.phase
        if transition.role is Role.CLOSE:
            track.close(track.phase, ts, line)
            return
        assert phase is not None
        if phase is Phase.READY and run.ready_line is None:
            run.ready_ts, run.ready_line = ts, line
        if transition.role is Role.END:
            track.close(phase, ts, line)
            return
        if track.phase is None or phase.index > track.phase.index:
            track.enter(phase, ts, line)
        elif phase is track.phase:
            # another capture (piecewise, draft, prefill) or a second pool after the first ended:
            # the phase goes on until its last end marker
            track.reopen(phase)
        if phase is Phase.READY:
            track.close(phase, ts, line)

    # -- facts for the report -------------------------------------------------------------------

    def _facts(self, run: Run, event: ev.EventBase) -> None:
        rank = self._default_rank(event) or "main"
        if isinstance(event, ev.ServerArgs):
            if run.server_args is None:
                run.server_args, run.server_args_line = event.args, event.line
        elif isinstance(event, ev.ParameterOverride):
            run.overrides.append(event)
        elif isinstance(event, ev.WeightLoadBegin) and event.avail_mem_gb is not None:
            _reading(run, rank, "weight_loading_start", event.avail_mem_gb, event.line)
        elif isinstance(event, ev.WeightLoadEnd):
            if event.avail_mem_gb is not None:
                _reading(run, rank, "weight_loading_end", event.avail_mem_gb, event.line)
            if event.mem_usage_gb is not None and run.weights_gb is None:
                run.weights_gb = event.mem_usage_gb
        elif isinstance(event, ev.KvCacheAllocated):
            if rank == self._first_rank(run, rank):
                size = (
                    event.kv_size_gb
                    if event.kv_size_gb is not None
                    else ((event.k_size_gb or 0.0) + (event.v_size_gb or 0.0) if event.k_size_gb is not None else None)
                )
                if size is not None:
                    run.kv_cache_gb = round((run.kv_cache_gb or 0.0) + size, 4)
                if event.tokens is not None and run.kv_tokens is None:
                    run.kv_tokens = event.tokens
        elif isinstance(event, ev.MambaCacheAllocated):
            if rank == self._first_rank(run, rank):
                run.mamba_cache_gb = round(
                    (run.mamba_cache_gb or 0.0) + (event.conv_state_gb or 0.0) + (event.ssm_state_gb or 0.0), 4
                )
        elif isinstance(event, ev.MemoryPoolEnd) and event.avail_mem_gb is not None:
            _reading(run, rank, "memory_pool_end", event.avail_mem_gb, event.line)
        elif isinstance(event, ev.CaptureBegin):
            if event.avail_mem_gb is not None:
                _reading(run, rank, "cuda_graph_capture_start", event.avail_mem_gb, event.line)
                self._capture_mem(run, event.avail_mem_gb, event.rank, event.line)
            if event.batch_sizes:
                run.max_capture_bs = max([run.max_capture_bs or 0, *event.batch_sizes])
        elif isinstance(event, ev.CaptureEnd):
            if event.avail_mem_gb is not None:
                _reading(run, rank, "cuda_graph_capture_end", event.avail_mem_gb, event.line, latest=True)
            if event.mem_usage_gb is not None and rank == self._first_rank(run, rank):
                run.cuda_graph_gb = round((run.cuda_graph_gb or 0.0) + event.mem_usage_gb, 4)
            if event.batch_sizes:
                run.max_capture_bs = max([run.max_capture_bs or 0, *event.batch_sizes])
        elif isinstance(event, ev.CaptureSizes) and event.what == "bs" and event.sizes:
            run.max_capture_bs = max([run.max_capture_bs or 0, *event.sizes])
        elif isinstance(event, ev.ProgressBar):
            if event.avail_mem_gb is not None and event.desc.startswith("Capturing"):
                self._capture_mem(run, event.avail_mem_gb, event.rank, event.line)
            if event.batch_size is not None and event.desc.startswith("Capturing batches"):
                run.max_capture_bs = max(run.max_capture_bs or 0, event.batch_size)
        elif isinstance(event, ev.SchedulerReady):
            if not run.scheduler:
                run.scheduler = {
                    k: v
                    for k, v in event.model_dump(
                        include={
                            "max_total_num_tokens",
                            "chunked_prefill_size",
                            "max_prefill_tokens",
                            "max_running_requests",
                            "context_len",
                            "available_gpu_mem_gb",
                        }
                    ).items()
                    if v is not None
                }
        elif isinstance(event, ev.StartupTimings):
            run.timings = event.timings
        elif isinstance(event, ev.GlooNotConnected):
            run.notices.append(
                (
                    "distributed_stall",
                    f"Gloo rank {event.gloo_rank} is not connected to ranks {event.missing}: "
                    "a peer never joined; startup will hang in distributed init",
                    event.line,
                )
            )
        elif isinstance(event, ev.MemoryImbalance):
            run.notices.append(
                (
                    "memory_imbalance",
                    "GPU memory is unbalanced across ranks: other processes may hold GPU memory (nvidia-smi)",
                    event.line,
                )
            )
        elif isinstance(event, ev.ErrorLine) and event.error == "warmup_failed":
            run.notices.append(("warmup_failed", event.message, event.line))

    @staticmethod
    def _first_rank(run: Run, rank: str) -> str:
        # pool and graph sizes are per rank and alike across ranks: sum those of one rank only
        if run.size_rank is None:
            run.size_rank = rank
        return run.size_rank

    @staticmethod
    def _capture_mem(run: Run, avail: float, rank: str | None, line: int) -> None:
        if run.capture_avail_gb is None or avail < run.capture_avail_gb[0]:
            run.capture_avail_gb = (avail, rank, line)


def _reading(run: Run, rank: str, boundary: str, gb: float, line: int, latest: bool = False) -> None:
    """Free memory of ``rank`` at a phase boundary: the first reading, or with ``latest`` the last."""
    readings = run.memory.setdefault(rank, {})
    if latest or boundary not in readings:
        readings[boundary] = gb
        run.memory_lines.setdefault(rank, {})[boundary] = line


__all__ = ["PHASE_ORDER", "PhaseMachine", "Run", "Track", "seconds_between"]
