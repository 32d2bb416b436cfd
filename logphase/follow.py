"""Live following: the engine fed as bytes arrive, with records for every change a person or a
launch script waits for: phase changes, the failure, warnings, stalls, truncation and rotation.

``Follower`` is the pure part (bytes and clock in, records out) and knows nothing of files;
``follow_stream`` and ``follow_file`` drive it from a pipe or a file by name (like ``tail -F``)
without busy waiting: ``select`` on pipes, a short sleep between polls on files.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from logphase.engine import Engine
from logphase.phases import PHASE_ORDER, Phase
from logphase.report import Report
from logphase.watch import ChangeWaiter

Record = dict[str, Any]

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

EXIT_TIMEOUT = 124


@dataclass
class FollowOptions:
    until: str = "outcome"  # "outcome" (ready or failed), "ready", "failed", a phase name, or "eof"
    timeout: float | None = None
    stall_after: float | None = None  # None: the per-phase default
    expect: dict[str, str] = field(default_factory=dict)
    since: str | None = None
    flush_timeout: float = 1.0  # an open traceback counts as a failure after this much silence
    poll_interval: float = 0.02


def _phase_index(phase: Phase | None) -> int:
    return -1 if phase is None else PHASE_ORDER.index(phase)


class Follower:
    """Feed bytes and clock ticks; get records. One Follower per file incarnation."""

    def __init__(self, source: str, options: FollowOptions, now: float | None = None) -> None:
        self.options = options
        self.engine = Engine(source=source, since=options.since)
        self._started = time.monotonic() if now is None else now
        self._last_input = self._started
        self._phase: Phase | None = None
        self._runs = 1
        self._failure_reported = False
        self._outcome_reported: str | None = None
        self._warnings_seen: set[tuple[str, int | None, str]] = set()
        self._next_stall: float | None = None
        self._stall_count = 0
        self._last_line_text = ""
        self._quiet_runs: int | None = None  # set when the content is a stale, finished run
        self.report: Report = self.engine.report(options.expect)

    # -- input ------------------------------------------------------------------------------------

    def feed(self, data: bytes, now: float) -> list[Record]:
        if not data:
            return []
        self._last_input = now
        self._stall_count = 0
        tail = data.rstrip(b"\r\n").rsplit(b"\n", 1)[-1].rsplit(b"\r", 1)[-1]
        if tail:
            self._last_line_text = tail[-300:].decode("utf-8", "replace")
        events = self.engine.feed(data)
        if not events and not self.engine.has_open_records():
            return []
        return self._changes(now)

    def tick(self, now: float) -> list[Record]:
        """Clock only: flush timeouts and stall records."""
        out: list[Record] = []
        if self.engine.has_open_records() and now - self._last_input >= self.options.flush_timeout:
            out.extend(self._changes(now, include_open=True))
        out.extend(self._stall(now))
        return out

    def finish(self) -> list[Record]:
        self.engine.finish()
        out = self._changes(time.monotonic())
        out.append(self.summary())
        return out

    def summary(self) -> Record:
        """The closing record: the report, and the exit code a launch script should see."""
        code = self.exit_code()
        if code is None:
            code = {"ready": 0, "failed": 1}.get(self.report.outcome, 3)
        return {"kind": "summary", "exit_code": code, "report": self.report.model_dump(mode="json")}

    def mark_stale(self, age_s: float) -> Record:
        """The file ends in a finished run and was not written since before following began."""
        self._quiet_runs = self.report.runs
        return {
            "kind": "stale",
            "outcome": self.report.outcome,
            "age_s": round(age_s, 1),
            "line": self.report.run_start_line,
            "message": f"this log ends in a finished run ({self.report.outcome}) and was last written {age_s:.0f} s "
            "before following began: it is stale; waiting for a new run",
        }

    # -- decisions --------------------------------------------------------------------------------

    def exit_code(self) -> int | None:
        """The exit code once the --until point is reached (or the outcome rules it out)."""
        r = self.report
        if self._quiet_runs is not None and r.runs <= self._quiet_runs:
            return None  # still the stale run
        until = self.options.until
        if r.outcome == "failed":
            return 1 if until != "eof" else None
        if until == "eof" or until == "failed":
            return None
        if until in ("outcome", "ready"):
            return 0 if r.outcome == "ready" else None
        target = Phase(until)
        return 0 if _phase_index(r.phase) >= _phase_index(target) else None

    # -- internals --------------------------------------------------------------------------------

    def _changes(self, now: float, include_open: bool = False) -> list[Record]:
        open_ok = include_open or self.engine.open_records_complete()
        self.report = r = self.engine.report(self.options.expect, include_open=open_ok)
        out: list[Record] = []
        if r.runs != self._runs:
            self._runs = r.runs
            self._phase = None
            self._failure_reported = False
            self._outcome_reported = None
            out.append(
                {
                    "kind": "run",
                    "runs": r.runs,
                    "line": r.run_start_line,
                    "message": f"a new run starts at line {r.run_start_line}",
                }
            )
        if r.phase is not None and _phase_index(r.phase) > _phase_index(self._phase) and r.outcome != "failed":
            self._phase = r.phase
            phase_report = next((p for p in r.phases if p.name == r.phase), None)
            first_rank = None
            if phase_report and phase_report.ranks:
                first_rank = min(phase_report.ranks.items(), key=lambda kv: kv[1].start or "")[0]
            out.append(
                {
                    "kind": "phase",
                    "phase": r.phase.value,
                    "ts": phase_report.start if phase_report else None,
                    "rank": first_rank,
                    "elapsed_s": r.total_startup_s,
                    "message": f"{r.phase.value}" + (f" (first: {first_rank})" if first_rank else ""),
                }
            )
        if r.failure is not None and not self._failure_reported:
            self._failure_reported = True
            f = r.failure
            where = f.phase.value if f.phase else "unknown phase"
            first_line = f.message.splitlines()[0][:200] if f.message else ""
            out.append(
                {
                    "kind": "failure",
                    "failure": f.model_dump(mode="json"),
                    "phase": f.phase.value if f.phase else None,
                    "message": f"{f.cause.value} in {where}: {first_line}",
                }
            )
        for w in r.warnings:
            key = (w.kind, w.line, w.message)
            if key not in self._warnings_seen:
                self._warnings_seen.add(key)
                out.append({"kind": "warning", "warning": w.model_dump(mode="json"), "message": f"{w.kind}: {w.message}"})
        if r.outcome in ("ready", "failed") and self._outcome_reported != r.outcome:
            self._outcome_reported = r.outcome
            out.append(
                {
                    "kind": "outcome",
                    "outcome": r.outcome,
                    "total_startup_s": r.total_startup_s,
                    "message": f"{r.outcome} after {r.total_startup_s} s" if r.total_startup_s is not None else r.outcome,
                }
            )
        self._next_stall = None
        return out

    def _stall_threshold(self) -> float:
        if self.options.stall_after is not None:
            return self.options.stall_after
        return DEFAULT_STALL_AFTER.get(self.report.phase, 300.0)

    def _stall(self, now: float) -> list[Record]:
        if self.report.outcome != "starting" and self._quiet_runs is None:
            return []
        silent = now - self._last_input
        threshold = self._stall_threshold()
        # repeat at growing intervals: after 1x, 2x, 4x, 8x ... the threshold
        due = threshold * (2**self._stall_count)
        if silent < due:
            return []
        self._stall_count += 1
        phase = self.report.phase
        return [
            {
                "kind": "stall",
                "phase": phase.value if phase else None,
                "silent_s": round(silent, 1),
                "last_line": self._last_line_text,
                "hint": STALL_HINTS.get(phase, STALL_HINTS[None]),
                "message": f"no new output for {silent:.0f} s in {phase.value if phase else 'an unknown phase'}: "
                + STALL_HINTS.get(phase, STALL_HINTS[None]),
            }
        ]

    def next_deadline(self, now: float) -> float:
        """Seconds until something may be due without new input (flush or stall)."""
        waits = [self._stall_threshold() * (2**self._stall_count) - (now - self._last_input)]
        if self.engine.has_open_records():
            waits.append(self.options.flush_timeout - (now - self._last_input))
        return max(0.0, min(waits))


# -- drivers -------------------------------------------------------------------------------------

READ_SIZE = 1 << 20


def follow_stream(
    stream: BinaryIO,
    options: FollowOptions | None = None,
    source: str = "<stdin>",
    clock: Callable[[], float] = time.monotonic,
    on_follower: Callable[[Follower], None] | None = None,
) -> Iterator[Record]:
    """Follow a pipe or any readable binary stream until EOF or until the --until point.
    ``on_follower`` receives the Follower in use (for a summary if the caller is interrupted)."""
    options = options or FollowOptions()
    follower = Follower(source, options, now=clock())
    if on_follower:
        on_follower(follower)
    start = clock()
    fd = stream.fileno()
    while True:
        now = clock()
        if options.timeout is not None and now - start >= options.timeout:
            yield _timeout_record(follower, now - start)
            return
        wait = follower.next_deadline(now)
        if options.timeout is not None:
            wait = min(wait, max(0.0, options.timeout - (now - start)))
        ready, _, _ = select.select([fd], [], [], min(wait, 3600.0))
        now = clock()
        if ready:
            data = os.read(fd, READ_SIZE)
            if not data:
                yield from follower.finish()
                return
            yield from follower.feed(data, now)
        else:
            yield from follower.tick(now)
        if follower.exit_code() is not None:
            yield follower.summary()
            return


def follow_file(
    path: str,
    options: FollowOptions | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_follower: Callable[[Follower], None] | None = None,
) -> Iterator[Record]:
    """Follow a file by name, like ``tail -F``: from its first byte, surviving its absence,
    truncation (a new Follower: line numbers restart with the file) and rotation (the old file is
    read to its end first)."""
    options = options or FollowOptions()
    waiter = ChangeWaiter(path, options.poll_interval) if sleep is time.sleep else None
    # with inotify, wake at least this often anyway (network filesystems send no events)
    recheck = 1.0 if waiter is not None and waiter.event_driven else options.poll_interval

    def pause(now: float) -> None:
        wait = min(recheck, follower.next_deadline(now))
        if options.timeout is not None:
            wait = min(wait, max(0.0, options.timeout - (now - start)))
        if waiter is not None:
            waiter.wait(wait)
        else:
            sleep(min(wait, options.poll_interval))

    start_wall, start = time.time(), clock()
    follower = Follower(path, options, now=start)
    if on_follower:
        on_follower(follower)
    handle: BinaryIO | None = None
    inode: tuple[int, int] | None = None
    waiting_said = False
    first_read = True
    backlog: list[Record] = []
    try:
        while True:
            now = clock()
            if options.timeout is not None and now - start >= options.timeout:
                yield _timeout_record(follower, now - start)
                return
            if handle is None:
                try:
                    handle = open(path, "rb")  # noqa: SIM115 - kept open across iterations
                    st = os.fstat(handle.fileno())
                    inode = (st.st_dev, st.st_ino)
                except FileNotFoundError:
                    if not waiting_said:
                        waiting_said = True
                        yield {"kind": "waiting", "message": f"{path} does not exist yet; waiting for it"}
                    yield from follower.tick(now)
                    pause(now)
                    continue
            data = handle.read(READ_SIZE)
            if data:
                recs = follower.feed(data, clock())
                if first_read:
                    backlog.extend(recs)  # what was there before we came: judged at its end
                    continue
                yield from recs
                if follower.exit_code() is not None:
                    break
                continue
            if first_read:
                first_read = False
                st = os.fstat(handle.fileno())
                age = start_wall - st.st_mtime
                if follower.report.outcome != "starting" and age > 1.0:
                    yield follower.mark_stale(age)
                yield from backlog
                backlog.clear()
            if follower.exit_code() is not None:
                break
            # at the end of what is there: has the file been truncated, replaced or rotated?
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            position = handle.tell()
            if st is not None and (st.st_dev, st.st_ino) != inode:
                rest = handle.read()  # rotated: finish the old file first
                if rest:
                    yield from follower.feed(rest, clock())
                yield {"kind": "rotated", "message": f"{path} was replaced; reading the new file from its start"}
                handle.close()
                handle, inode = None, None
                follower = _successor(follower, path, options)
                if on_follower:
                    on_follower(follower)
                continue
            if st is not None and st.st_size < position:
                yield {
                    "kind": "truncated",
                    "at_byte": position,
                    "message": f"{path} was truncated at byte {position}; reading it again from its start",
                }
                handle.seek(0)
                follower = _successor(follower, path, options)
                if on_follower:
                    on_follower(follower)
                continue
            yield from follower.tick(clock())
            pause(clock())
        yield follower.summary()
    finally:
        if handle is not None:
            handle.close()
        if waiter is not None:
            waiter.close()


def _timeout_record(follower: Follower, waited: float) -> Record:
    return {
        "kind": "timeout",
        "after_s": round(waited, 1),
        "message": f"gave up after {waited:.0f} s",
        "report": follower.report.model_dump(mode="json"),
    }


def _successor(old: Follower, path: str, options: FollowOptions) -> Follower:
    old.engine.finish()
    return Follower(path, options)
