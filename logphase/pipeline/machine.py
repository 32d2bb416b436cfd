"""Stage 3: the phase machine. Folds events into runs, ranks, phases, failures and facts.

Driven by the table in ``phases.py``. Per rank, a phase is entered on its first evidence and
closed by its end marker or by the rank entering a later phase. The server's phase is the
furthest any rank of the run has entered. A new run starts at a second ``server_args=`` dump,
at a phase marker going backwards after the run finished, or when the server's own timestamps
jump back (never a wrapper's: its clock disagreeing with the server's is no evidence of a run).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from logphase.pipeline import events as ev
from logphase.pipeline.diagnosis import Severity, assess
from logphase.pipeline.envelope import valid_plain_stamp
from logphase.pipeline.facts import note_facts
from logphase.pipeline.messages import SCHEDULER_RULES, SERVER_OF_RULE, evidence_in, stream_of
from logphase.pipeline.phases import Phase, Role, Transition
from logphase.pipeline.runs import Incident, Run, Span, Track, seconds_between

# A timestamp this far behind the latest one seen means another run's lines, not interleaving.
CLOCK_JUMP_BACK_S = 120.0
# Runs kept whole: of a file with more (a CI log appended to for months), the earlier ones keep only
# their number and lines, so that memory does not grow with the number of runs.
KEEP_RUNS = 32


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


def _server(run: Run, event: ev.EventBase) -> str | None:
    """The server a run is: the one whose start line it printed first (this event's, if it is one)."""
    return run.server or SERVER_OF_RULE.get(event.rule or "")


def jumps_back(previous: str | None, ts: str) -> bool:
    """A writer's clock going back this far means another run's lines, not interleaving (writers
    interleave, so clocks are compared within a writer)."""
    back = seconds_between(ts, previous) if previous is not None else None
    return back is not None and back > CLOCK_JUMP_BACK_S


def advance(clocks: dict[str | None, str], writer: str | None, ts: str) -> None:
    """Each writer's clock only moves forward."""
    previous = clocks.get(writer)
    if previous is None or ts > previous:
        clocks[writer] = ts


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
        if len(self.runs) > KEEP_RUNS:
            old = len(self.runs) - KEEP_RUNS - 1
            self.runs[old] = self.runs[old].retire()
        return run

    def feed(self, event: ev.EventBase) -> None:
        run = self.run
        if event.line < run.start_line:
            # a multi-line record that began before this run started and closed only now
            # (its lines interleaved with the next run's first ones): it belongs where it began
            earlier = next(r for r in reversed(self.runs) if r.start_line <= event.line)
            self._fold(earlier, event, evidence_in(event, earlier.server))
            return
        ts = event.ts
        if ts is not None and not event.ts_inherited and not event.ts_wrapper:
            if jumps_back(run.clock_by_writer.get(event.rank), ts):
                run = self._new_run(event.line)
            advance(run.clock_by_writer, event.rank, ts)
        later = ts is None or run.last_ts is None or ts > run.last_ts
        if (
            isinstance(event, ev.ServerArgs)
            and (
                run.server_args is not None
                # ranks already working or done: a relaunch, unless the dump is older than their lines
                # (it was printed first and merely reached the file late)
                or ((run.has_progress() or run.finished) and later)
            )
            and not run.another_node(event.args)
        ):
            run = self._new_run(event.line)
            later = True
        transition = evidence_in(event, _server(run, event))
        if transition is not None and transition.role is Role.BEGIN and run.finished and later:
            track = self._track_key(event, transition)
            current = run.tracks.get(track)
            if transition.phase is Phase.LAUNCH or (
                current is not None
                and current.phase is not None
                and transition.phase is not None
                and transition.phase.order < current.phase.order
            ):
                run = self._new_run(event.line)
        self._fold(run, event, transition)

    def _fold(self, run: Run, event: ev.EventBase, transition: Transition | None) -> None:
        ts, kind = event.ts, event.kind
        run.server = _server(run, event)
        run.extend(ts, ts, event.end_line or event.line)
        if run.ready_line is None:
            # where start-up lines were written (the bulk path counts serving lines without events)
            stream = stream_of(event)
            if stream is not None:
                run.streams.add(stream)
        if transition is not None:
            self._apply(run, event, transition)
            if run.ready_line is None and transition.role in (Role.CLOSE, Role.END) and run.follower_node_up():
                # this node's part of a multi-node server is up: its ready is its last rank's end
                main = run.tracks.setdefault(None, Track())
                run.ready_ts, run.ready_line = ts, event.line
                self._enter(run, main, Phase.READY, Role.BEGIN, ts, event.line)
                main.close(Phase.READY, ts, event.line)
        if kind == "server_args":
            # the run starts here even when the dump reached the file after the ranks' first lines
            main = run.tracks.setdefault(None, Track())
            if Phase.LAUNCH not in main.spans:
                main.spans[Phase.LAUNCH] = Span(ts, event.line)
                if main.phase is None:
                    main.phase = Phase.LAUNCH
            if run.first_entry is None or run.first_entry[0] is not Phase.LAUNCH:
                run.first_entry = (Phase.LAUNCH, event.line)
        note_facts(run, event, self._default_rank(event) or "main")
        if isinstance(event, ev.Shutdown) and run.shutdown_line is None:
            run.shutdown_line = event.line
        assessment = assess(event, after_ready=run.ready_line is not None, server=run.server)
        if assessment is not None and run.shutdown_line is not None:
            # after a requested shutdown (SIGTERM), dying children and their echoes are expected
            assessment = assessment._replace(severity=Severity.NOTE)
        if assessment is not None:
            track = run.tracks.get(event.rank) or run.tracks.get(self._default_rank(event))
            run.incidents.add(Incident(event, assessment, track.phase if track else None))
            if run.first_entry is None and assessment.phase is not None and assessment.severity is not Severity.NOTE:
                # nothing before it named a phase: the run is first seen where the failure struck
                run.first_entry = (assessment.phase, event.line)

    def retime(self, moved: Callable[[str], str]) -> None:
        """Move every time held so far (the wrapper's, before SGLang's zone was known)."""
        for run in self.runs:
            run.retime(moved)

    def note_line(self, ts: str, line: int) -> None:
        """An SGLang log line that is no known message: it moves the run's clock, and shows that
        the server was at least launched."""
        run = self.run
        if line >= run.start_line:
            run.extend(ts, ts, line)
            run.seen_sglang = True

    def note_lines(self, first_ts: str, high_ts: str, last_line: int) -> None:
        """``note_line`` for consecutive such lines at once: the first one's time, the latest
        time among them, the last one's number."""
        run = self.run
        if last_line >= run.start_line:
            run.extend(first_ts, high_ts, last_line)
            run.seen_sglang = True

    def feed_plain(self, stamps: list[tuple[bytes, bytes]], first_line: int) -> int:
        """What ``feed`` does with events that carry nothing but their time and writer (no
        transition, fact or assessment: batch statistics, access lines once ready), for
        consecutive lines from ``first_line`` on, given each one's raw timestamp and rank tags
        (b'2026-05-09 09:20:26', b' TP0'). Returns how many it took; the line after them moves
        its writer's clock back into a new run, or has a stamp that is no valid time, and needs
        ``feed``. The stamps' minutes and seconds pass envelope.plain_minutes_valid. Keep in step with ``feed``
        and ``_fold``: tests/test_fast_path.py compares the two."""
        n = len(stamps)
        if not n:
            return 0
        run = self.run
        clocks = run.clock_by_writer
        taken = n
        high: str | None = None
        low, top = stamps[0][0], stamps[-1][0]
        if (
            low[:10] == top[:10]
            and valid_plain_stamp(low)
            and valid_plain_stamp(top)
            and sorted(stamps, key=_STAMP) == stamps
        ):
            # every stamp lies between two valid ones of one date: valid (see plain_minutes_valid)
            # time never goes back, so neither does any writer's: only its first line can jump
            writers = set(map(_TAGS, stamps))
            for w, first in _first_index(stamps, writers).items():
                if first < taken and jumps_back(clocks.get(_writer(w)), _iso(stamps[first][0])):
                    taken = first
            if not taken:
                return 0
            for w, last in _last_index(stamps, taken, writers).items():
                advance(clocks, _writer(w), _iso(stamps[last][0]))  # the writer's last line is its latest
            high = _iso(stamps[taken - 1][0])
        else:
            for i in range(n):
                if not valid_plain_stamp(stamps[i][0]):
                    taken = i  # no time (month 84, Feb 30): the line is read the long way, as text
                    break
                ts, key = _iso(stamps[i][0]), _writer(stamps[i][1])
                if jumps_back(clocks.get(key), ts):
                    taken = i
                    break
                advance(clocks, key, ts)
                if high is None or ts > high:
                    high = ts
            if not taken:
                return 0
        run.extend(_iso(stamps[0][0]), high, first_line + taken - 1)
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
        role, phase = transition.role, transition.phase
        if role is Role.CLOSE:
            if track.phase is None:
                # the scheduler is ready: the log starts after its graphs (or its pool) were made
                cuda_graph = not (run.server_args or {}).get("disable_cuda_graph")
                self._enter(run, track, Phase.CUDA_GRAPH_CAPTURE if cuda_graph else Phase.MEMORY_POOL, role, None, line)
            track.close(track.phase, ts, line)
            return
        if role is Role.SERVING_OR_WARMUP:
            # the warmup request is served too: it is warmup once the run's start-up was seen; the
            # warmup sends one request, so a second one is a client's (when the ready line is not
            # in the log: stdout alone)
            furthest = run.furthest_phase()
            posted = isinstance(event, ev.HttpAccess) and event.method == "POST"
            second = posted and run.requests_posted > 0 and furthest is Phase.WARMUP
            run.requests_posted += posted
            phase = Phase.READY if furthest is None or second else Phase.WARMUP
        assert phase is not None
        if phase is Phase.READY and run.ready_line is None:
            run.ready_ts, run.ready_line = ts, line
        if role is Role.END:
            if track.phase is None or phase.order > track.phase.order:
                # entered before the log shows it: after the rank's last phase, or before the log starts
                previous = track.spans[track.phase].end if track.phase is not None else None
                self._enter(run, track, phase, role, previous, line)
            track.close(phase, ts, line)
            return
        if track.phase is None or phase.order > track.phase.order:
            self._enter(run, track, phase, role, ts, line)
            if phase is Phase.READY:
                track.close(phase, ts, line)  # ready is a moment
        elif phase is track.phase and phase is not Phase.READY and role is not Role.WEAK:
            # another capture (piecewise, draft, prefill) or a second pool after the first ended:
            # the phase goes on until its last end marker (weak evidence is printed later too)
            track.reopen(phase)

    @staticmethod
    def _enter(run: Run, track: Track, phase: Phase, role: Role, ts: str | None, line: int) -> None:
        first = run.first_entry is None
        if first:
            run.first_entry = (phase, line)
        # the first phase of a log that starts mid-run began before its first line
        track.enter(phase, ts, line, lower_bound=first and phase is not Phase.LAUNCH and role is not Role.BEGIN)

    # -- facts for the report -------------------------------------------------------------------


__all__ = ["PhaseMachine", "advance", "jumps_back"]
