"""Live following: the engine fed as bytes arrive, with records for every change a person or a
launch script waits for: phase changes, the failure, warnings, stalls, truncation and rotation.

``Follower`` is the pure part (bytes and clock in, records out) and knows nothing of files;
``follow_stream`` and ``follow_file`` drive it from a pipe or a file by name (like ``tail -F``)
without busy waiting: ``select`` on pipes, a short sleep between polls on files.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import stat
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from logphase.engine.engine import Engine
from logphase.faces import collector
from logphase.faces.exit_codes import EXIT_INTERRUPTED, EXIT_STARTING, OUTCOME_EXIT
from logphase.faces.live.follow_records import (
    DeletedRecord,
    DrainingRecord,
    FailureRecord,
    FollowRecord,
    OutcomeRecord,
    PhaseRecord,
    RotatedRecord,
    RunRecord,
    StaleRecord,
    StallRecord,
    SummaryRecord,
    TimeoutRecord,
    TruncatedRecord,
    WaitingRecord,
    WarningRecord,
)
from logphase.faces.live.tail import Change, FileTail, TailRead
from logphase.faces.wording import first_line, fmt_duration, headline
from logphase.folding.runs import seconds_between
from logphase.reading.clock import input_year_hint
from logphase.reporting.report import FailureReport, PhaseReport, Report
from logphase.vocabulary.names import shown_name
from logphase.vocabulary.phases import PHASE_ORDER, Phase
from logphase.vocabulary.servers import Server

# How long silence is normal, per phase, before a stall is reported (seconds). Weight loading of a
# large model and CUDA graph capture legitimately take many minutes with few or no log lines.
DEFAULT_STALL_AFTER: dict[Phase | None, float] = {
    None: 120.0,
    Phase.LAUNCH: 120.0,
    Phase.DISTRIBUTED_INIT: 300.0,
    Phase.WEIGHT_LOADING: 900.0,
    Phase.MEMORY_POOL: 180.0,
    Phase.CUDA_GRAPH_CAPTURE: 600.0,
    Phase.WARMUP: 300.0,
    Phase.READY: float("inf"),
}

STALL_HINTS: dict[Phase | None, str] = {
    None: "nothing recognisable yet: check that the server writes to this log, stderr included (2>&1)",
    Phase.LAUNCH: "still resolving arguments or starting processes: a model download, or a wrong --model-path being resolved",
    Phase.DISTRIBUTED_INIT: "ranks are waiting for each other: a rank or node that never started, a wrong --dist-init-addr "
    "or a blocked port; NCCL_DEBUG=INFO shows where it waits",
    Phase.WEIGHT_LOADING: "loading a large checkpoint from slow storage can take this long; the progress bar goes to "
    "stderr, so redirect 2>&1 to see it; check disk reads with iostat",
    Phase.MEMORY_POOL: "allocating the KV cache should take seconds: check GPU memory with nvidia-smi",
    Phase.CUDA_GRAPH_CAPTURE: "capture of many batch sizes can take minutes; its progress bars go to stderr, so check that "
    "stderr is redirected too (2>&1); nvidia-smi shows whether the GPUs are busy",
    Phase.WARMUP: "the warmup request has not come back: the HTTP server may not be reachable on its port, or the first "
    "forward pass is hanging (py-spy dump --pid)",
    Phase.READY: "the server is up; silence only means no traffic",
}


@dataclass
class FollowOptions:
    until: str = "outcome"  # "outcome" (ready or failed), "ready", "failed", a phase name, or "eof"
    timeout: float | None = None
    stall_after: float | None = None  # None: the per-phase default
    # --stall-after PHASE=S: one phase's budget, over stall_after and the default
    stall_after_phase: dict[Phase | None, float] = field(default_factory=dict)
    expect: dict[str, str] = field(default_factory=dict)
    since: str | None = None
    flush_timeout: float = 1.0  # an open traceback counts as a failure after this much silence
    poll_interval: float = 0.02
    # on a pipe: leave at the verdict instead of reading to EOF (the writer then gets SIGPIPE)
    exit_at_verdict: bool = False
    server: Server | None = None  # --server: every run is this server's, whatever its lines show


def _phase_index(phase: Phase | None) -> int:
    return -1 if phase is None else PHASE_ORDER.index(phase)


class Follower:
    """Feed bytes and clock ticks; get records. One Follower per file incarnation."""

    def __init__(self, source: str, options: FollowOptions, now: float | None = None) -> None:
        self.options = options
        collector.reading()  # the command has started: what it built lives to the end
        # stamps that print no year (vLLM's) take the file's, or today's for a pipe; the engine reads
        # as parse's does (events not collected: runs of lines in bulk), so a backlog is caught up
        # at parse's speed, and the records come from the report, which is the same either way
        self.engine = Engine(
            source=source, since=options.since, server=options.server, year=input_year_hint(source), collect_events=False
        )
        self._started = time.monotonic() if now is None else now
        self._last_input = self._started
        self._phases_reported: set[Phase] = set()
        self._runs = 1
        # the root cause last reported: (cause, line); a traceback reported at the flush timeout
        # that then goes on may name another one, reported again as revised
        self._failure_said: tuple[str, int] | None = None
        self._outcome_reported: str | None = None
        self._warnings_seen: set[tuple[str, int | None, str]] = set()
        self._stall_count = 0
        self._last_line_text = ""
        self._quiet_runs: int | None = None  # set when the content is a stale, finished run
        # the open records were reported at the flush timeout: nothing more is due until new input
        self._open_flushed = False
        # a failure only echoed so far (a sibling's timeout, 'failed to start') whose root may still
        # come: its records wait for a pause (flush_timeout) or the end of the input, so that they do
        # not depend on where a read ended (vLLM prints echoes before the root)
        self._echo_held = False
        self._settling = False
        self._ended = False
        self.report: Report = self.engine.report(options.expect)

    @property
    def last_input(self) -> float:
        """When input last came (the monotonic clock the follower is fed with)."""
        return self._last_input

    @property
    def last_line_text(self) -> str:
        """The end of the last line read (300 characters at most), as it was written."""
        return self._last_line_text

    @property
    def stale(self) -> bool:
        """True while the report is about a stale run (see :meth:`mark_stale`)."""
        return self._quiet_runs is not None and self.report.runs <= self._quiet_runs

    # -- input ------------------------------------------------------------------------------------

    def feed(self, data: bytes, now: float) -> list[FollowRecord]:
        if not data:
            return []
        self._last_input = now
        self._stall_count = 0
        self._open_flushed = False
        tail = data.rstrip(b"\r\n").rsplit(b"\n", 1)[-1].rsplit(b"\r", 1)[-1]
        if tail:
            self._last_line_text = tail[-300:].decode("utf-8", "replace")
        folded = self.engine.events_folded
        self.engine.feed(data)
        if self.engine.events_folded == folded and not self.engine.has_open_records():
            return []
        return self._changes(now)

    def tick(self, now: float) -> list[FollowRecord]:
        """Clock only: flush timeouts and stall records."""
        out: list[FollowRecord] = []
        if self._flush_due(now):
            self._open_flushed = True
            self._settling = True
            out.extend(self._changes(now, include_open=True))
            self._settling = False
        out.extend(self._stall(now))
        return out

    def finish(self, now: float | None = None) -> list[FollowRecord]:
        """The input has ended: its last records, then the summary."""
        out = self.end_of_input(now)
        out.append(self.summary())
        return out

    def end_of_input(self, now: float | None = None) -> list[FollowRecord]:
        """No more input will be read (EOF on a pipe; on a file by name, the timeout or an
        interrupt): only now is a partial last line read as a line (the engine is finished; while
        the input may still grow, the rest of that line is waited for). Returns the records that
        brings; later calls bring none."""
        self.engine.finish()
        self._ended = True
        return self._changes(time.monotonic() if now is None else now)

    def summary(self, exit_code: int | None = None) -> SummaryRecord:
        """The closing record: the report, and the exit code a launch script should see."""
        code = exit_code if exit_code is not None else self.exit_code()
        if code is None:
            code = EXIT_STARTING if self.stale else OUTCOME_EXIT[self.report.outcome]
        why = self.exit_reason(code)
        return SummaryRecord(
            exit_code=code,
            stale=self.stale,
            report=self.report,
            message=headline(self.report) + (" (stale: an earlier run)" if self.stale else "") + (f"; {why}" if why else ""),
        )

    def exit_reason(self, code: int) -> str | None:
        """Why ``code`` is not the report's own outcome's code (``--until ready`` on a server that
        failed later, while serving), so that a summary never seems to contradict its exit code;
        None when it is."""
        if code == EXIT_INTERRUPTED:
            return "exit 130: interrupted"
        if self.stale or code == OUTCOME_EXIT[self.report.outcome]:
            return None
        until = self.options.until
        if code == 0 and until not in ("outcome", "eof", "failed"):
            return f"exit 0: {until} was reached before the failure (--until {until})"
        return f"exit {code}: the --until {until} point"

    def mark_stale(self, age_s: float) -> StaleRecord:
        """The file ends in a finished run and was not written since before following began: its
        records are not reported as this run's; follow waits for a new run."""
        self._quiet_runs = self.report.runs
        r = self.report
        return StaleRecord(
            outcome=r.outcome,
            age_s=round(age_s, 1),
            line=r.run_start_line,
            message=f"this log ends in a finished run ({headline(r)}) and was last written {age_s:.0f} s "
            "before following began: it is stale; waiting for a new run",
        )

    # -- decisions --------------------------------------------------------------------------------

    def exit_code(self) -> int | None:
        """The verdict, once the --until point is reached (or a failure rules it out); None before.

        It depends only on the report of the run being followed, never on how the input was cut
        into reads or paced: ``outcome``: 0 ready, 1 failed (the state of what was read);
        ``ready`` or a phase: 0 once it was reached before any failure (a failure while serving
        comes after ready: still 0), 1 when the run failed before it; ``failed``: 1 once failed;
        ``eof``: none (the end of the input decides). At the end of a pipe the exit code is this
        verdict, or else the report's outcome (0, 1, 3), as ``parse`` says on the same bytes."""
        r = self.report
        if self.stale:
            return None
        until = self.options.until
        if until == "eof" or self._echo_held:
            return None
        if until == "failed":
            return 1 if r.outcome == "failed" else None
        if until == "outcome":
            return OUTCOME_EXIT[r.outcome] if r.outcome != "starting" else None
        if _reached_before_failure(r, Phase(until)):
            return 0
        return 1 if r.outcome == "failed" else None

    # -- internals --------------------------------------------------------------------------------

    def _changes(self, now: float, include_open: bool = False) -> list[FollowRecord]:
        open_ok = include_open or self.engine.open_records_complete()
        expect = self.options.expect
        self.report = r = self.engine.report(expect, include_open=open_ok)
        if self.stale:
            return []  # an earlier run's records are not this run's
        out: list[FollowRecord] = []
        while self._runs < r.runs:
            # one read can hold the end of a run and the start of the next: finish the earlier
            # run's records first, so that the records do not depend on how the input was read
            if self._quiet_runs is None or self._runs > self._quiet_runs:
                out.extend(self._run_records(self.engine.report(expect, include_open=open_ok, run=self._runs), earlier=True))
            self._runs += 1
            self._phases_reported = set()
            self._failure_said = None
            self._outcome_reported = None
            start = self.engine.report(run=self._runs).run_start_line if self._runs < r.runs else r.run_start_line
            out.append(RunRecord(runs=self._runs, line=start, message=f"a new run starts at line {start}"))
        out.extend(self._run_records(r))
        return out

    def _run_records(self, r: Report, earlier: bool = False) -> list[FollowRecord]:
        """What is new in the report of the run being followed: phases entered, the failure,
        warnings and the verdict."""
        out: list[FollowRecord] = self._phase_records(r)
        out.extend(self._ready_before_failure(r))
        self._echo_held = (
            r.failure is not None and r.failure.severity == "echo" and not (self._settling or self._ended) and not earlier
        )
        if self._echo_held:
            return out
        if r.failure is not None and self._failure_said != (r.failure.cause.value, r.failure.line):
            out.append(self._failure_record(r.failure))
        for w in r.warnings:
            key = (w.kind, w.line, w.message)
            if key not in self._warnings_seen and not (earlier and w.kind == "multiple_runs"):
                self._warnings_seen.add(key)
                out.append(WarningRecord(warning=w, message=f"{w.kind}: {w.message}"))
        if r.outcome in ("ready", "failed") and self._outcome_reported != r.outcome:
            self._outcome_reported = r.outcome
            out.append(
                OutcomeRecord(
                    outcome=r.outcome,
                    ts=r.failure.ts if r.failure is not None else _ready_ts(r),
                    total_startup_s=r.total_startup_s,
                    run=self._runs,
                    message=headline(r),
                )
            )
        return out

    def _phase_records(self, r: Report) -> list[FollowRecord]:
        """Every phase entered gets its record, in the order the log entered them (its first line;
        vLLM's V1 engine compiles, capture evidence, before it sizes the KV cache), however much one
        read brought: the records do not depend on where reads end."""
        out: list[FollowRecord] = []
        for p in sorted(r.phases, key=_entered):
            if p.name in self._phases_reported:
                continue
            self._phases_reported.add(p.name)
            # the rank of the line that entered it (None: a server-level line did): later lines of
            # other ranks, even stamped earlier (Ray's out-of-order lines), do not change it, so the
            # record is the same however the input was read
            entering = [(rank, span) for rank, span in p.ranks.items() if span.first_line == p.first_line]
            first_rank = min(entering, key=lambda kv: kv[1].start or "")[0] if entering else None
            out.append(
                PhaseRecord(
                    phase=p.name,
                    ts=p.start,
                    rank=first_rank,
                    line=p.first_line,
                    elapsed_s=seconds_between(r.phases[0].start, p.start),
                    message=p.name.value + (f" (first: {first_rank})" if first_rank else ""),
                )
            )
        return out

    def _ready_before_failure(self, r: Report) -> list[FollowRecord]:
        """Ready, then failed while serving: the ready verdict comes first, as it would have if the
        failure had been read later (the records do not depend on the reads' sizes)."""
        ready = _ready_phase(r)
        if r.failure is None or ready is None or self._outcome_reported is not None or not _before_failure(ready, r):
            return []
        self._outcome_reported = "ready"
        total = seconds_between(r.phases[0].start, ready.start)
        message = f"READY after {fmt_duration(total)}" if total is not None else "READY"
        return [OutcomeRecord(outcome="ready", ts=ready.start, total_startup_s=total, run=self._runs, message=message)]

    def _failure_record(self, f: FailureReport) -> FailureRecord:
        """The run's root cause, new or revised (a traceback reported at the flush timeout that
        then goes on may name another one)."""
        revised = "revised: " if self._failure_said is not None else ""
        self._failure_said = (f.cause.value, f.line)
        where = f.phase.value if f.phase else "unknown phase"
        message = f"{revised}{f.cause.value} in {where}: {first_line(f.message, 200)}"
        return FailureRecord(failure=f, phase=f.phase, message=message)

    def stall_budget(self, phase: Phase | None) -> float:
        """The silence, in seconds, that ``phase`` allows before it is a stall: its ``--stall-after
        PHASE=S``, else ``--stall-after S``, else the phase's default (None: before any phase)."""
        return self._stall_threshold(phase)

    def _stall_threshold(self, phase: Phase | None = None) -> float:
        phase = phase or self.report.phase
        if phase in self.options.stall_after_phase:
            return self.options.stall_after_phase[phase]
        if self.options.stall_after is not None:
            return self.options.stall_after
        return float(DEFAULT_STALL_AFTER.get(phase, 300.0))

    def _stall_applies(self) -> bool:
        """Silence is news only while starting (or waiting for a new run after a stale one)."""
        return self.report.outcome == "starting" or self._quiet_runs is not None

    def _flush_due(self, now: float) -> bool:
        pending = self.engine.has_open_records() or self._echo_held
        return pending and not self._open_flushed and now - self._last_input >= self.options.flush_timeout

    def _stall(self, now: float) -> list[FollowRecord]:
        if not self._stall_applies():
            return []
        silent = now - self._last_input
        threshold = self._stall_threshold()
        # repeat at growing intervals: after 1x, 2x, 4x, 8x ... the threshold
        due = threshold * (1 << self._stall_count)
        if silent < due:
            return []
        self._stall_count += 1
        phase = self.report.phase if not self.stale else None
        hint = STALL_HINTS.get(phase, STALL_HINTS[None])
        return [
            StallRecord(
                phase=phase,
                silent_s=round(silent, 1),
                last_line=self._last_line_text,
                hint=hint,
                message=f"no new output for {silent:.0f} s in {phase.value if phase else 'an unknown phase'}: {hint}",
            )
        ]

    def next_deadline(self, now: float) -> float:
        """Seconds until something may be due without new input (the open records' flush, or a
        stall record); ``math.inf`` when nothing can be (a verdict is in and the open records were
        flushed): a driver then sleeps until input comes. Zero only while something is due, and
        ``tick`` then does it, so that a driver never polls in a loop."""
        silent = now - self._last_input
        waits = [math.inf]
        if self._stall_applies():
            waits.append(self._stall_threshold() * (1 << self._stall_count) - silent)
        if (self.engine.has_open_records() or self._echo_held) and not self._open_flushed:
            waits.append(self.options.flush_timeout - silent)
        return max(0.0, min(waits))


# -- drivers -------------------------------------------------------------------------------------

READ_SIZE = 1 << 20
# how much of a stream's first bytes tells text from what is not (faces/sniff.py)
HEAD_CHECK_BYTES = 512


def _draining_message(follower: Follower, verdict: int) -> str:
    until = follower.options.until
    if until in ("outcome", "failed"):
        rule = f"the state of the whole input, as `parse` says on it ({verdict} so far)"
    else:
        rule = f"0 if {until} was reached before any failure ({verdict} so far)"
    return (
        f"{headline(follower.report)}; reading the input to its end so that its writer keeps running; the exit code "
        f"is then {rule}; --exit-at-verdict leaves now"
    )


def follow_stream(
    stream: BinaryIO,
    options: FollowOptions | None = None,
    source: str = "<stdin>",
    clock: Callable[[], float] = time.monotonic,
    on_follower: Callable[[Follower], None] | None = None,
    check_head: Callable[[bytes, bool], None] | None = None,
) -> Iterator[FollowRecord]:
    """Follow a pipe or any readable binary stream. At the --until point the verdict is given at
    once; unless ``options.exit_at_verdict``, the stream is then read to its end (records go on:
    a failure while serving is still reported), so that a writer upstream never gets SIGPIPE,
    and the summary comes at EOF with the exit code of the verdict on the whole input (see
    :meth:`Follower.exit_code`). ``on_follower`` receives the Follower in use (for a summary if
    the caller is interrupted). ``check_head(head, whole)`` sees the stream's first bytes once
    (HEAD_CHECK_BYTES of them, or all there were at its end: ``whole``) and may raise to refuse
    input that is no log text."""
    fd = stream.fileno()
    _widen_pipe(fd)
    head = bytearray()
    checking = check_head is not None

    def read(timeout: float) -> bytes | None:
        nonlocal checking
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return None
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:  # a named pipe opened without blocking: nothing after all
            return None
        data = _backlog(fd, data)
        if checking and check_head is not None:
            head.extend(data[: HEAD_CHECK_BYTES - len(head)])
            if len(head) >= HEAD_CHECK_BYTES or not data:
                checking = False
                if head:
                    check_head(bytes(head), not data)
        return data

    yield from follow_reads(read, options, source, clock, on_follower)


# Linux's fcntl command that sets a pipe's buffer (fcntl.F_SETPIPE_SZ, Python 3.10+ on Linux)
_F_SETPIPE_SZ = 1031


def _widen_pipe(fd: int) -> None:
    """A pipe's buffer as large as a read (Linux; 64 KiB by default, up to 1 MiB unprivileged): a
    writer with a backlog (``cat server.log |``) then hands it over in reads of READ_SIZE, and the
    report is made once per read, as parse does per block. Elsewhere, or not a pipe: as it is."""
    if sys.platform != "linux" or not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return
    import fcntl  # POSIX only: imported where it is used

    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETPIPE_SZ, READ_SIZE)


def _backlog(fd: int, first: bytes) -> bytes:
    """``first`` and what else is there to read now, without waiting, up to READ_SIZE: a pipe gives
    at most its buffer (64 KiB) a read, and a backlog is read in the blocks parse reads a file in
    (a report is made per read that moved the machine). A live line is never held back for more."""
    if not first or len(first) >= READ_SIZE:
        return first
    parts, size = [first], len(first)
    while size < READ_SIZE and select.select([fd], [], [], 0)[0]:
        try:
            more = os.read(fd, READ_SIZE - size)
        except BlockingIOError:
            break
        if not more:
            break  # the end of the input: the next read says so again
        parts.append(more)
        size += len(more)
    return b"".join(parts) if len(parts) > 1 else first


def follow_reads(
    read: Callable[[float], bytes | None],
    options: FollowOptions | None = None,
    source: str = "<stream>",
    clock: Callable[[], float] = time.monotonic,
    on_follower: Callable[[Follower], None] | None = None,
) -> Iterator[FollowRecord]:
    """The driver of :func:`follow_stream`, over ``read(timeout)``: it waits at most ``timeout``
    seconds and returns the bytes that came, ``b""`` at the end of the input, or None when the
    time passed. Input can be paced with a fake ``clock`` through it (as the tests do)."""
    options = options or FollowOptions()
    follower = Follower(source, options, now=clock())
    if on_follower:
        on_follower(follower)
    start = clock()
    verdict: int | None = None
    while True:
        now = clock()
        if verdict is None and options.timeout is not None and now - start >= options.timeout:
            yield from follower.end_of_input(now)
            yield _timeout_record(follower, now - start)
            return
        wait = follower.next_deadline(now)
        if verdict is None and options.timeout is not None:
            wait = min(wait, max(0.0, options.timeout - (now - start)))
        data = read(min(wait, 3600.0))
        now = clock()
        if data == b"":
            # the exit code is the verdict on all the input (the report's outcome unless the
            # --until point says otherwise), not the one printed when it was first known: what
            # came later (a failure while serving) counts, as in `parse`
            yield from follower.finish(now)
            return
        if data is None:
            yield from follower.tick(now)
        else:
            yield from follower.feed(data, now)
        reached = follower.exit_code() if verdict is None else None
        if reached is not None:
            verdict = reached
            if options.exit_at_verdict:
                yield follower.summary()
                return
            yield DrainingRecord(exit_code=verdict, message=_draining_message(follower, verdict))


def follow_file(
    path: str,
    options: FollowOptions | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_follower: Callable[[Follower], None] | None = None,
) -> Iterator[FollowRecord]:
    """Follow a file by name, like ``tail -F``: from its first byte, surviving its absence,
    truncation (a new Follower: line numbers restart with the file) and rotation (the old file is
    read to its end first). ``sleep`` is the pause between reads when there is nothing new (with
    the default, inotify wakes it early where there is inotify)."""
    options = options or FollowOptions()
    if _is_fifo(path):
        # a named pipe is a pipe: read as a stream (no seeking, no truncation, EOF when its writer closes)
        yield from _follow_fifo(path, options, clock, on_follower)
        return
    following = _FileFollowing(path, options, clock, sleep, on_follower)
    try:
        yield from following.records()
    finally:
        following.tail.close()


class _FileFollowing:
    """The state of one ``follow_file``: the file's tail, the follower of its current incarnation,
    and what was there before following began (judged as a whole: an earlier run, or this one)."""

    def __init__(
        self,
        path: str,
        options: FollowOptions,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        on_follower: Callable[[Follower], None] | None,
    ) -> None:
        self.path, self.options, self.clock, self.sleep, self.on_follower = path, options, clock, sleep, on_follower
        self.tail = FileTail(path, options.poll_interval, event_driven=sleep is time.sleep)
        # with inotify, wake at least this often anyway (network filesystems send no events)
        self.recheck = 1.0 if self.tail.event_driven else options.poll_interval
        self.start_wall, self.start = time.time(), clock()
        self.follower = self._new_follower(self.start)
        self.waiting_said = False
        self.first_read = True
        self.backlog: list[FollowRecord] = []  # what was there before we came: judged at its end

    def records(self) -> Iterator[FollowRecord]:
        while True:
            now = self.clock()
            if self.options.timeout is not None and now - self.start >= self.options.timeout:
                yield from self.follower.end_of_input(now)
                yield _timeout_record(self.follower, now - self.start)
                return
            read = self.tail.read(READ_SIZE)
            if read.change is Change.MISSING:
                yield from self._missing(now)
                continue
            if read.change is None and read.data:
                yield from self._grown(read.data)
                if self.first_read or self.follower.exit_code() is None:
                    continue
                break
            if self.first_read:
                yield from self._caught_up_first()
            if self.follower.exit_code() is not None:
                break
            yield from self._changed(read)
            if read.change in (Change.ROTATED, Change.TRUNCATED):
                self.follower = _successor(self.follower, self.path, self.options, self.clock())
                self._adopted(self.follower)
                continue
            yield from self.follower.tick(self.clock())
            self._pause(self.clock())
        yield self.follower.summary()

    def _new_follower(self, now: float) -> Follower:
        return self._adopted(Follower(self.path, self.options, now=now))

    def _adopted(self, follower: Follower) -> Follower:
        if self.on_follower:
            self.on_follower(follower)
        return follower

    def _missing(self, now: float) -> Iterator[FollowRecord]:
        """No file (yet, or again): said once, then waited for."""
        if not self.waiting_said:
            self.waiting_said = True
            yield WaitingRecord(message=f"{shown_name(self.path)} does not exist yet; waiting for it")
        yield from self.follower.tick(now)
        self._pause(now)

    def _grown(self, data: bytes) -> Iterator[FollowRecord]:
        recs = self.follower.feed(data, self.clock())
        if self.first_read:
            self.backlog.extend(recs)
        else:
            yield from recs

    def _caught_up_first(self) -> Iterator[FollowRecord]:
        """The end of what the file held when following began: its records, unless it is an
        earlier run's (a finished run not written to for a while): its phases and outcome are not
        this run's."""
        self.first_read = False
        age = self.start_wall - (self.tail.modified() or self.start_wall)
        if self.follower.report.outcome != "starting" and age > 1.0:
            yield self.follower.mark_stale(age)
        else:
            yield from self.backlog
        self.backlog.clear()

    def _changed(self, read: TailRead) -> Iterator[FollowRecord]:
        """The records of a replaced, truncated or deleted file (the old file read to its end first)."""
        path = shown_name(self.path)
        if read.change is Change.ROTATED:
            if read.data:
                yield from self.follower.feed(read.data, self.clock())
            yield RotatedRecord(message=f"{path} was replaced; reading the new file from its start")
        elif read.change is Change.TRUNCATED:
            yield TruncatedRecord(
                at_byte=read.at_byte, message=f"{path} was truncated at byte {read.at_byte}; reading it again from its start"
            )
        elif read.change is Change.DELETED:
            yield DeletedRecord(
                at_byte=read.at_byte, message=f"{path} was deleted after byte {read.at_byte}; waiting for it to reappear"
            )

    def _pause(self, now: float) -> None:
        options = self.options
        wait = min(self.recheck, self.follower.next_deadline(now))
        if options.timeout is not None:
            wait = min(wait, max(0.0, options.timeout - (now - self.start)))
        if self.tail.event_driven:
            self.tail.wait(wait)
        else:
            self.sleep(min(wait, options.poll_interval))


def _entered(phase: PhaseReport) -> tuple[float, int]:
    """Where the log entered a phase: its first line (a phase without one after those with), then
    the phase order."""
    return (phase.first_line if phase.first_line is not None else math.inf, PHASE_ORDER.index(phase.name))


def _ready_ts(report: Report) -> str | None:
    ready = _ready_phase(report)
    return ready.start if ready is not None else None


def _ready_phase(report: Report) -> PhaseReport | None:
    return next((p for p in report.phases if p.name is Phase.READY), None)


def _before_failure(phase: PhaseReport, report: Report) -> bool:
    """The phase was entered before the run's failure (in the order of the lines), if any."""
    f = report.failure
    if f is None:
        return True
    if phase.first_line is not None:
        return phase.first_line < f.line
    return f.phase is not None and _phase_index(f.phase) >= _phase_index(phase.name)


def _reached_before_failure(report: Report, target: Phase) -> bool:
    """``target`` or a later phase was entered, before the failure if the run failed."""
    return any(_phase_index(p.name) >= _phase_index(target) and _before_failure(p, report) for p in report.phases)


def _timeout_record(follower: Follower, waited: float) -> TimeoutRecord:
    return TimeoutRecord(
        after_s=round(waited, 1), stale=follower.stale, report=follower.report, message=f"gave up after {waited:.0f} s"
    )


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def _follow_fifo(
    path: str, options: FollowOptions, clock: Callable[[], float], on_follower: Callable[[Follower], None] | None
) -> Iterator[FollowRecord]:
    # O_NONBLOCK: opening does not wait for a writer (--timeout holds); select() then waits for
    # the first writer's data, and reports EOF once the writers are gone (Linux semantics)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb", buffering=0) as stream:
        yield from follow_stream(stream, options, source=path, clock=clock, on_follower=on_follower)


def _successor(old: Follower, path: str, options: FollowOptions, now: float) -> Follower:
    old.engine.finish()
    return Follower(path, options, now=now)
