"""A log replayed at the pace of its own stamps (``logphase.replay.timeline``) into the sidecar's
follower, on a fake clock, with the probes' answers over time: when the start-up probe (or the
liveness probe, for a failure while serving) first fails after the root cause, and whether it ever
failed a start-up that was making progress.

Used by tests/test_probes.py (the fixtures: no test reads ../shared) and by
scripts/probe_replay.py (the table of the closing note). A replay costs no wall-clock time: a
ten-minute weight load is as quick as a ten-second one, and a day's gap between runs as an hour's.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from logphase.engine.engine import Engine
from logphase.engine.whole import parse_bytes
from logphase.faces.fleet.probe import answer
from logphase.faces.fleet.sidecar import state_of
from logphase.faces.live.follow import Follower, FollowOptions, follow_reads
from logphase.replay import stamped_timeline

# after the last line of a failed log, how long the replay waits for the probe to fail (the server died;
# a last line cut before its newline is waited for, so only the stall budget of its phase says it)
AFTER_END_S = 1000.0

Span = tuple[float, float, bool, str]  # [start, end) of one answer: passed, the answer's line


class _Done(Exception):
    pass


@dataclass
class ProbeReplay:
    """What the probes answered over a replay, as spans of time with one answer each."""

    outcome: str  # the report's, on the whole log (its last run)
    failure_at: float | None  # when the root cause's line was written, seconds from the first stamp
    while_serving: bool  # that failure struck after ready: /live says it, not /startup
    ready_at: float | None  # when the ready line was written
    run_start_at: float  # the last run's first line
    end_at: float  # the last line's time
    startup: list[Span] = field(default_factory=list)
    live: list[Span] = field(default_factory=list)

    def probed(self) -> list[Span]:
        """The answers of the probe that says this log's failure: /live for one while serving, else /startup."""
        return self.live if self.while_serving else self.startup

    def detected_at(self) -> float | None:
        """When the probe that says the failure first failed in the last run (None: never). It may
        be before the root cause: a start-up silent for longer than its phase allows is failed at
        the stall (a store waiting 600 s for a node that never came, say)."""
        if self.failure_at is None:
            return None
        since = self.ready_at if self.while_serving and self.ready_at is not None else self.run_start_at
        return next((start for start, end, ok, _ in self.probed() if not ok and end > since), None)

    def delay(self) -> float | None:
        """Seconds from the root cause's line to the probe's first failure (negative: the stall
        before it failed the start-up first). A kubelet probing every P seconds fails within
        delay + P seconds of the root cause."""
        detected = self.detected_at()
        return None if detected is None or self.failure_at is None else max(detected, self.run_start_at) - self.failure_at

    def false_failures(self) -> list[Span]:
        """Failing answers of the start-up probe while the last run was making progress: before
        ready, or before its last line (a log cut while starting), and in a failed start-up any
        failure that its lines later took back (the stall ended and the start-up went on)."""
        if self.outcome == "failed" and not self.while_serving:
            spans = [s for s in self.startup if s[1] > self.run_start_at]
            # (the lines of the failure itself come in a burst: an answer that passed for an instant
            # before it, while its first line was read, is no progress)
            resumed_before = (self.failure_at or math.inf) - 1.0
            return [
                s
                for i, s in enumerate(spans)
                if not s[2] and any(later[2] and later[0] < resumed_before for later in spans[i + 1 :])
            ]
        end = self.ready_at if self.ready_at is not None else self.end_at
        return [s for s in self.startup if not s[2] and s[1] > self.run_start_at and s[0] < end]


def replay(data: bytes, stall_after: float | None = None) -> ProbeReplay:
    """Replay ``data`` into a follower (a file followed by name, so no end of input: a server that
    died writes nothing more) and keep the probes' answers at every moment."""
    _, pieces = stamped_timeline(data)
    whole = parse_bytes(data, source="<replay>")
    failure = whole.failure
    result = ProbeReplay(
        outcome=whole.outcome,
        failure_at=_root_cause_time(pieces, data, failure.line) if failure is not None else None,
        while_serving=failure is not None and failure.while_serving,
        ready_at=line_time(pieces, data, whole.ready_line) if whole.ready_line is not None else None,
        run_start_at=line_time(pieces, data, whole.run_start_line),
        end_at=pieces[-1][0] if pieces else 0.0,
    )
    followers: list[Follower] = []
    clock = _Clock(pieces, result, followers)
    options = FollowOptions(until="eof", stall_after=stall_after)
    try:
        for _ in follow_reads(clock.read, options, "<replay>", clock.now, on_follower=followers.append):
            pass
    except _Done:
        pass
    return result


class _Clock:
    """The pipe the follower reads and the clock it reads, one fake time for both; between two
    reads the follower's state stands still, and the probes' answers over that span are kept."""

    def __init__(self, pieces: list[tuple[float, bytes]], result: ProbeReplay, followers: list[Follower]) -> None:
        self.pieces = list(pieces)
        self.result = result
        self.followers = followers
        self.time = 0.0
        r = result
        self.stop_at = (max(r.end_at, r.failure_at) + AFTER_END_S) if r.failure_at is not None else r.end_at

    def now(self) -> float:
        return self.time

    def read(self, timeout: float) -> bytes | None:
        arrival = self.pieces[0][0] if self.pieces else math.inf
        until = min(arrival, self.time + timeout)
        self._answers(self.time, min(until, self.stop_at))
        if until >= self.stop_at and not self.pieces:
            raise _Done
        if arrival <= self.time + timeout:
            self.time = max(self.time, arrival)
            return self.pieces.pop(0)[1]
        self.time = max(self.time + timeout, math.nextafter(self.time, math.inf))
        return None

    def _answers(self, start: float, end: float) -> None:
        """The answers over [start, end): the state is the same throughout, the start-up probe's
        answer changes at most once (when the silence passes the phase's budget)."""
        if not self.followers or end <= start:
            return
        state = state_of(self.followers[-1], start, start)
        stall = float(state["last_line_at"]) + float(state["stall_after_s"])
        cuts = [start, *([stall] if start < stall < end else []), end]
        for a, b in itertools.pairwise(cuts):
            at = math.nextafter(a, math.inf) if a == stall else a
            for probe, spans in (("startup", self.result.startup), ("live", self.result.live)):
                said = answer(probe, state, at)
                _extend(spans, (a, b, said.ok, said.message))


def _extend(spans: list[Span], span: Span) -> None:
    """Add ``span``, joined to the last one when it says the same."""
    if spans and spans[-1][1] == span[0] and spans[-1][2] == span[2]:
        spans[-1] = (spans[-1][0], span[1], span[2], spans[-1][3])
    else:
        spans.append(span)


def line_time(pieces: list[tuple[float, bytes]], data: bytes, line: int) -> float:
    """The time the piece holding ``line`` (1-based) was written."""
    offset = 0
    for _ in range(line - 1):
        offset = data.find(b"\n", offset) + 1
        if offset == 0:
            break
    return offset_time(pieces, offset)


def _root_cause_time(pieces: list[tuple[float, bytes]], data: bytes, line: int) -> float:
    """When the root cause's line was written: its event's offset, the last event of that line (a
    traceback's header glued after a bar's redraws on one physical line is the line's last part)."""
    engine = Engine(source="<replay>")
    offsets = [e.offset for e in engine.feed(data) + engine.finish() if e.line == line]
    return offset_time(pieces, max(offsets)) if offsets else line_time(pieces, data, line)


def offset_time(pieces: list[tuple[float, bytes]], offset: int) -> float:
    """The time the piece holding byte ``offset`` was written."""
    written = 0
    for at, piece in pieces:
        if written + len(piece) > offset:
            return at
        written += len(piece)
    return pieces[-1][0] if pieces else 0.0
