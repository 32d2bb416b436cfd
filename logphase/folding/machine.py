"""The phase machine. Folds events into runs, ranks, phases, failures and facts.

Driven by the table in ``phases.py``. Per rank, a phase is entered on its first evidence and
closed by its end marker or by the rank entering a later phase. The server's phase is the
furthest any rank of the run has entered. A new run starts at a second ``server_args=`` dump,
at a phase marker going backwards after the run finished, or when the server's own timestamps
jump back (never a wrapper's: its clock disagreeing with the server's is no evidence of a run).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from logphase.diagnosing.diagnosis import Severity, assess, outside_the_server, shows_serving
from logphase.folding.facts import note_facts
from logphase.folding.runs import Incident, Run, Span, StepSeen, Track, seconds_between
from logphase.reading.envelope import valid_plain_stamp
from logphase.recognising.detect import STAMPED_SERVER, Start, server_of_frames, server_of_rule
from logphase.recognising.messages import SCHEDULER_RULES, SCHEDULER_SERVERS, evidence_in, step_name, step_of, stream_of
from logphase.vocabulary import events as ev
from logphase.vocabulary.phases import MarkerRole, Phase, Transition
from logphase.vocabulary.servers import Server

# A timestamp this far behind the latest one seen means another run's lines, not interleaving.
CLOCK_JUMP_BACK_S = 120.0
# Runs kept whole: of a file with more (a CI log appended to for months), the earlier ones keep only
# their number and lines, so that memory does not grow with the number of runs.
KEEP_RUNS = 32


_STAMP, _TAGS = itemgetter(0), itemgetter(1)
# the launch marker of a server's main process (a start line): launch begins with it, as with a dump
_SERVER_LAUNCH = Transition(Phase.LAUNCH, MarkerRole.BEGIN, server_level=True)


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


# what one request's failure shows in a window (``_serving_window``): the server was serving
_REQUEST_SERVED = Transition(Phase.READY, MarkerRole.SERVING, server_level=True)


def _iso(stamp: bytes) -> str:
    """b'2026-05-09 09:20:26' -> '2026-05-09T09:20:26', as prefix.split_envelope writes it."""
    return stamp.decode("ascii").replace(" ", "T", 1)


def _server(run: Run, event: ev.EventBase, forced: Server | None) -> Server | None:
    """The server a run is (detect.py decides): ``--server`` when given, else what its start lines
    showed (``note_start``), else the pack of a line only one server prints (this event's, if it is one)."""
    return forced or run.server or server_of_rule(event.rule)


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
        self.server: Server | None = None  # the server every run is (--server), whatever its lines show

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
        run, later = self._run_of(event)
        # what a line means can depend on the server the run is (a pack's own reading of a shared line)
        transition = evidence_in(event, _server(run, event, self.server))
        if transition is None and self._serving_window(run, event):
            transition = _REQUEST_SERVED
        if later is not None and self._restarted(run, event, transition, later):
            run = self._new_run(event.line)
        self._fold(run, event, transition)

    def _run_of(self, event: ev.EventBase) -> tuple[Run, bool | None]:
        """The run an event belongs to, and whether its time is later than the run's (None: an
        earlier run's record): an earlier one for a record that began there, else the current one
        or the new one it starts (a writer's clock jumping back, a relaunch's server_args); a
        start-up marker after the run finished is ``feed``'s to judge (``_restarted``)."""
        run = self.run
        if event.line < run.start_line:
            # a multi-line record that began before this run started and closed only now
            # (its lines interleaved with the next run's first ones): it belongs where it began
            return next(r for r in reversed(self.runs) if r.start_line <= event.line), None
        ts = event.ts
        if ts is not None and not event.ts_inherited and not event.ts_wrapper:
            if self._jumps_back(run, event.rank, ts):
                run = self._new_run(event.line)
            advance(run.clock_by_writer, event.rank, ts)
        later = ts is None or run.last_ts is None or ts > run.last_ts
        if self._relaunched(run, event, later):
            return self._new_run(event.line), True
        return run, later

    @staticmethod
    def _jumps_back(run: Run, writer: str | None, ts: str) -> bool:
        """Whether a writer's line at ``ts`` belongs to another run (feed starts one there; the
        bulk path's feed_plain stops there)."""
        return jumps_back(run.clock_by_writer.get(writer), ts)

    @staticmethod
    def _relaunched(run: Run, event: ev.EventBase, later: bool) -> bool:
        """A server_args dump that starts a new run: a second one, or one after ranks worked or
        finished (unless the dump is older than their lines: printed first, it merely reached the
        file late), and not another node's of the same server."""
        return (
            isinstance(event, ev.ServerArgs)
            and (run.server_args is not None or ((run.has_progress() or run.finished) and later))
            and not run.another_node(event.args)
        )

    def _restarted(self, run: Run, event: ev.EventBase, transition: Transition | None, later: bool) -> bool:
        """A start-up marker after the run finished, of launch or of a phase before the rank's."""
        if transition is None or transition.role is not MarkerRole.BEGIN or not run.finished or not later:
            return False
        if transition.phase is Phase.LAUNCH:
            return True
        current = run.tracks.get(self._track_key(run, event, transition))
        return (
            current is not None
            and current.phase is not None
            and transition.phase is not None
            and transition.phase.order < current.phase.order
        )

    def _fold(self, run: Run, event: ev.EventBase, transition: Transition | None) -> None:
        run.server = _server(run, event, self.server)
        if run.frames_server is None and isinstance(event, ev.PythonException):
            run.frames_server = server_of_frames(frame.path for frame in event.frames)
        run.extend(event.ts, event.ts, event.end_line or event.line)
        if run.ready_line is None:
            # where start-up lines were written (the bulk path counts serving lines without events)
            stream = stream_of(event)
            if stream is not None:
                run.streams.add(stream)
        if transition is not None:
            self._apply(run, event, transition)
            self._node_part_ready(run, event, transition)
        if event.kind == "server_args" or transition == _SERVER_LAUNCH:
            # the server's own launch line: launch begins with it, even after lines of other writers
            # (NCCL's, which can come from anything) that opened a later phase before it
            self._launch_at(run, event)
        note_facts(run, event, self._default_rank(event, run.server) or "main")
        self._note_step(run, event)
        if isinstance(event, ev.Shutdown) and run.shutdown_line is None:
            run.shutdown_line = event.line
        self._assess(run, event)

    @staticmethod
    def _harness_after_failure(run: Run, event: ev.EventBase) -> bool:
        """A traceback outside the server's code after the run already failed."""
        if not isinstance(event, ev.PythonException) or not outside_the_server(event):
            return False
        return run.incidents.has_failure() or run.incidents.first_echo() is not None

    @staticmethod
    def _serving_window(run: Run, event: ev.EventBase) -> bool:
        """One request's failure (``shows_serving``) in a log that shows nothing before it, or only
        serving: a window of a server that is up. (In a start-up, before ready, the request is the
        warmup's, whose failure is the start-up's.)"""
        if not isinstance(event, ev.PythonException) or not shows_serving(event):
            return False
        return run.furthest_phase() in (None, Phase.READY) and not run.launch_marked and not run.incidents

    @staticmethod
    def _note_step(run: Run, event: ev.EventBase) -> None:
        """A duration the server measured and printed (a row's step): kept for the report's sub-steps."""
        step = step_of(event)
        seconds = getattr(event, "elapsed_s", None)
        if step is not None and isinstance(seconds, float):
            track = run.tracks.get(PhaseMachine._default_rank(event, run.server)) or run.tracks.get(None)
            at = track.phase if track is not None else None
            # when it was printed: only a line's own time says (an unstamped 'Model init total -- 71.40s'
            # inherits the time of the line before, a minute earlier, and would start its phase early)
            printed = None if event.ts_inherited else event.ts
            run.steps.append(StepSeen(step, event.rank, seconds, event.line, printed, at, step_name(step, event)))

    def _node_part_ready(self, run: Run, event: ev.EventBase, transition: Transition) -> None:
        """This node's part of a multi-node server is up: its ready is its last rank's end."""
        if run.ready_line is None and transition.role in (MarkerRole.CLOSE, MarkerRole.END) and run.follower_node_up():
            main = run.tracks.setdefault(None, Track())
            run.ready_ts, run.ready_line = event.ts, event.line
            self._enter(run, main, Phase.READY, MarkerRole.BEGIN, event.ts, event.line)
            main.close(Phase.READY, event.ts, event.line)

    @staticmethod
    def _launch_at(run: Run, event: ev.EventBase) -> None:
        """The run starts at its server_args even when the dump reached the file after the ranks' first lines."""
        main = run.tracks.setdefault(None, Track())
        if Phase.LAUNCH not in main.spans:
            main.spans[Phase.LAUNCH] = Span(event.ts, event.line)
            if main.phase is None:
                main.phase = Phase.LAUNCH
        if run.first_entry is None or run.first_entry[0] is not Phase.LAUNCH:
            run.first_entry = (Phase.LAUNCH, event.line)
        run.launch_marked = True

    def _assess(self, run: Run, event: ev.EventBase) -> None:
        """A failure or a note the event states, as an incident of the run."""
        assessment = assess(event, after_ready=run.ready_line is not None or self._serving_window(run, event), server=run.server)
        if assessment is None:
            return
        if run.shutdown_line is not None or self._harness_after_failure(run, event):
            # after a requested shutdown (SIGTERM), dying children and their echoes are expected; after
            # the server failed, a harness's own traceback (its script's KeyError on the missing
            # results) is the harness's, and never takes the root from the server's error
            assessment = assessment._replace(severity=Severity.NOTE)
        track = run.tracks.get(event.rank) or run.tracks.get(self._default_rank(event, run.server))
        run.incidents.add(Incident(event, assessment, track.phase if track else None))
        if run.first_entry is None and assessment.phase is not None and assessment.severity is not Severity.NOTE:
            # nothing before it named a phase: the run is first seen where the failure struck
            run.first_entry = (assessment.phase, event.line)

    def retime(self, moved: Callable[[str], str]) -> None:
        """Move every time held so far (the wrapper's, before SGLang's zone was known)."""
        for run in self.runs:
            run.retime(moved)

    def note_start(self, start: Start, line: int) -> None:
        """A line that shows which server runs (detect.py). A start of another server than the
        run's, or a server's launch line again once its run went on, starts a run of its own."""
        if self.server is not None and start.server != self.server:
            start = Start(self.server)  # --server: every run is that server's (another's version is not its)
        run = self.run
        if start.weak:  # a logger others print too, a launcher's name: the run's server only if nothing else says
            if line >= run.start_line and run.logger_server is None:
                run.logger_server = start.server
            return
        if line < run.start_line or (run.server == start.server and not start.begins and start.version is None):
            return
        relaunch = start.begins and run.begun_line is not None and run.last_line > run.begun_line
        if (run.server is not None and run.server != start.server) or relaunch:
            run = self._new_run(line)
        run.server = start.server
        run.version = run.version or start.version
        if start.begins and run.begun_line is None:
            run.begun_line = line
        run.last_line = max(run.last_line, line)

    def note_line(self, ts: str, line: int) -> None:
        """An SGLang log line that is no known message: it moves the run's clock, and shows that
        the server was at least launched."""
        run = self.run
        if line >= run.start_line:
            run.extend(ts, ts, line)
            run.own_time(ts, ts)
            run.seen_stamped = True

    def note_own_time(self, ts: str, line: int) -> None:
        """Line ``line`` printed ``ts`` in the server's own prefix (read the long way, its events
        folded): the run it belongs to knows its server's clock reached so far."""
        run = self.run
        if line < run.start_line:
            run = next((r for r in reversed(self.runs) if r.start_line <= line), run)
        run.own_time(ts, ts)

    def note_lines(self, first_ts: str, high_ts: str, last_line: int) -> None:
        """``note_line`` for consecutive such lines at once: the first one's time, the latest
        time among them, the last one's number."""
        run = self.run
        if last_line >= run.start_line:
            run.extend(first_ts, high_ts, last_line)
            run.own_time(first_ts, high_ts)
            run.seen_stamped = True

    def feed_plain(self, stamps: list[tuple[bytes, bytes]], first_line: int) -> int:
        """``feed`` for events that carry nothing but their time and writer (no transition, fact
        or assessment: batch statistics, access lines once ready), for consecutive lines from
        ``first_line`` on, given each one's raw timestamp and rank tags (b'2026-05-09 09:20:26',
        b' TP0'); the stamps' minutes and seconds pass envelope.plain_minutes_valid. For such an
        event ``feed`` does three steps, and so does this, on the same functions: ``_jumps_back``
        (where feed starts a new run this stops: that line needs ``feed``, as does one whose stamp
        is no valid time), ``advance`` of the writer's clock, and ``_fold``'s ``run.extend``.
        Returns how many lines it took. tests/test_fast_path.py compares the two paths."""
        server = self.server or STAMPED_SERVER  # the stamped prefix's server (detect.py), as the long way's note_start
        if not stamps or self.run.server not in (None, server):
            return 0  # a run of another server: the long way starts SGLang's own
        run = self.run
        low, top = stamps[0][0], stamps[-1][0]
        in_order = (
            low[:10] == top[:10] and valid_plain_stamp(low) and valid_plain_stamp(top) and sorted(stamps, key=_STAMP) == stamps
        )
        taken, high = self._plain_in_order(run, stamps) if in_order else self._plain_one_by_one(run, stamps)
        if taken and high is not None:
            run.extend(_iso(stamps[0][0]), high, first_line + taken - 1)
            run.own_time(_iso(stamps[0][0]), high)
            run.server = server
        return taken

    def _plain_in_order(self, run: Run, stamps: list[tuple[bytes, bytes]]) -> tuple[int, str | None]:
        """Stamps of one date in order: every stamp lies between two valid ones, so is valid (see
        plain_minutes_valid), and no writer's time goes back but at its first line. Returns (lines
        taken, the latest time)."""
        taken = len(stamps)
        writers = set(map(_TAGS, stamps))
        for w, first in _first_index(stamps, writers).items():
            if first < taken and self._jumps_back(run, _writer(w), _iso(stamps[first][0])):
                taken = first
        if not taken:
            return 0, None
        for w, last in _last_index(stamps, taken, writers).items():
            advance(run.clock_by_writer, _writer(w), _iso(stamps[last][0]))  # the writer's last line is its latest
        return taken, _iso(stamps[taken - 1][0])

    def _plain_one_by_one(self, run: Run, stamps: list[tuple[bytes, bytes]]) -> tuple[int, str | None]:
        """Any stamps: each line's steps in turn. Returns (lines taken, the latest time)."""
        high: str | None = None
        for i, (stamp, tags) in enumerate(stamps):
            if not valid_plain_stamp(stamp):
                return i, high  # no time (month 84, Feb 30): the line is read the long way, as text
            ts, key = _iso(stamp), _writer(tags)
            if self._jumps_back(run, key, ts):
                return i, high
            advance(run.clock_by_writer, key, ts)
            if high is None or ts > high:
                high = ts
        return len(stamps), high

    # -- transitions ----------------------------------------------------------------------------

    @staticmethod
    def _default_rank(event: ev.EventBase, server: Server | None) -> str | None:
        """The rank a line is: its tag's; a scheduler's line without one is TP0's (a single GPU), in a
        run of a server whose schedulers print such lines."""
        if event.rank is not None:
            return event.rank
        scheduler = (event.rule or event.kind) in SCHEDULER_RULES and (server is None or server in SCHEDULER_SERVERS)
        return "TP0" if scheduler else None

    def _track_key(self, run: Run, event: ev.EventBase, transition: Transition) -> str | None:
        if transition.server_level:
            return None
        return self._default_rank(event, _server(run, event, self.server))

    def _apply(self, run: Run, event: ev.EventBase, transition: Transition) -> None:
        track = run.tracks.setdefault(self._track_key(run, event, transition), Track())
        role = transition.role
        if role is MarkerRole.CLOSE:
            self._close(run, track, event)
            return
        phase = self._serving_phase(run, event) if role is MarkerRole.SERVING_OR_WARMUP else transition.phase
        assert phase is not None
        if phase is Phase.READY and run.ready_line is None:
            run.ready_ts, run.ready_line = event.ts, event.line
        elif phase is Phase.READY and role is MarkerRole.SERVING and run.ready_line is not None and event.line < run.ready_line:
            self._served_earlier(run, track, event)
        if role is MarkerRole.END:
            self._end(run, track, phase, event)
        else:
            self._evidence(run, track, phase, role, event)

    @staticmethod
    def _served_earlier(run: Run, track: Track, event: ev.EventBase) -> None:
        """A record that shows the server serving (one request's traceback) reaches the machine at
        its end, after the lines written below its first (the request's access line): ready is the
        record's first line, as when the log is read up to it alone."""
        span = track.spans.get(Phase.READY)
        if span is None or span.start_line != run.ready_line:
            return
        span.start, span.start_line, span.end, span.end_line = event.ts, event.line, event.ts, event.line
        if run.first_entry == (Phase.READY, run.ready_line):
            run.first_entry = (Phase.READY, event.line)
        run.ready_ts, run.ready_line = event.ts, event.line

    def _close(self, run: Run, track: Track, event: ev.EventBase) -> None:
        """Closes whatever phase the rank is in."""
        if track.phase is None:
            # the scheduler is ready: the log starts after its graphs (or its pool) were made
            cuda_graph = not (run.server_args or {}).get("disable_cuda_graph")
            self._enter(
                run, track, Phase.CUDA_GRAPH_CAPTURE if cuda_graph else Phase.MEMORY_POOL, MarkerRole.CLOSE, None, event.line
            )
        track.close(track.phase, event.ts, event.line)

    @staticmethod
    def _serving_phase(run: Run, event: ev.EventBase) -> Phase:
        """The warmup request is served too: it is warmup once the run's start-up was seen; the
        warmup sends one request, so a second one is a client's (when the ready line is not in
        the log: stdout alone)."""
        furthest = run.furthest_phase()
        posted = isinstance(event, ev.HttpAccess) and event.method == "POST"
        second = posted and run.requests_posted > 0 and furthest is Phase.WARMUP
        run.requests_posted += posted
        return Phase.READY if furthest is None or second else Phase.WARMUP

    def _end(self, run: Run, track: Track, phase: Phase, event: ev.EventBase) -> None:
        if track.phase is None or phase.order > track.phase.order:
            # entered before the log shows it: after the rank's last phase, or before the log starts
            previous = track.spans[track.phase].end if track.phase is not None else None
            self._enter(run, track, phase, MarkerRole.END, previous, event.line)
        track.close(phase, event.ts, event.line)

    def _evidence(self, run: Run, track: Track, phase: Phase, role: MarkerRole, event: ev.EventBase) -> None:
        if role is MarkerRole.AGAIN and track.phase is not None and phase.order < track.phase.order and phase in track.spans:
            self._again(run, track, phase, event)
        elif track.phase is None or phase.order > track.phase.order:
            self._enter(run, track, phase, role, event.ts, event.line)
            if phase is Phase.READY:
                track.close(phase, event.ts, event.line)  # ready is a moment
        elif role is MarkerRole.BEGIN and track.phase is not None and phase.order < track.phase.order:
            track.second_model()
        elif phase is track.phase and phase is not Phase.READY and role is not MarkerRole.WEAK:
            # another capture (piecewise, draft, prefill) or a second pool after the first ended:
            # the phase goes on until its last end marker (weak evidence is printed later too)
            track.reopen(phase)

    @staticmethod
    def _again(run: Run, track: Track, phase: Phase, event: ev.EventBase) -> None:
        """The rank makes ``phase`` again (a second pass of it): it goes back to it; the earlier pass,
        from the phase's first entry to this line, is the row's step."""
        step, seconds = step_of(event), seconds_between(track.spans[phase].start, event.ts)
        if step is not None and seconds is not None:
            run.steps.append(StepSeen(step, event.rank, seconds, event.line, name=step_name(step, event)))
        track.back_to(phase)

    @staticmethod
    def _enter(run: Run, track: Track, phase: Phase, role: MarkerRole, ts: str | None, line: int) -> None:
        first = run.first_entry is None
        if first and not (phase is Phase.LAUNCH and role is MarkerRole.WEAK):
            # (weak launch evidence, a start-up note printed anywhere in launch, does not show that
            # the log starts with the launch: the next phase entered says whether it is cut)
            run.first_entry = (phase, line)
        if phase is Phase.LAUNCH and role is MarkerRole.BEGIN:
            run.launch_marked = True
        # the first phase of a log that starts mid-run began before its first line
        track.enter(phase, ts, line, lower_bound=first and phase is not Phase.LAUNCH and role is not MarkerRole.BEGIN)

    # -- facts for the report -------------------------------------------------------------------


__all__ = ["PhaseMachine", "advance", "jumps_back"]
