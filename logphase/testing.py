"""logphase for test suites: ``assert_startup`` and a log follower that runs beside a test.

    from logphase.testing import assert_startup
    assert_startup("server.log", max_durations={"weight_loading": 120}, expect={"tp_size": 2})

raises an ``AssertionError`` whose message is what ``logphase check`` prints. The pytest plugin
(``logphase.pytest_plugin``, loaded through the ``pytest11`` entry point) wraps :class:`LogFollower`
in the ``logphase_follow`` fixture.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from logphase.engine.engine import Engine
from logphase.faces.live.follow import Follower, FollowOptions, follow_file
from logphase.faces.loading import load
from logphase.faces.oracle import Expectations, check, render_check
from logphase.faces.wording import describe_failure, headline
from logphase.reporting.report import Report
from logphase.vocabulary.errors import LogphaseError

__all__ = ["LogFollower", "StartupFailed", "assert_startup"]

# How long ``poll`` waits at most for the following thread to catch up with the file.
POLL_WAIT_S = 5.0


class StartupFailed(LogphaseError, AssertionError):
    """The server log shows a failed startup, or no ready server within the time allowed."""


def assert_startup(
    log_or_report: Any,
    *,
    outcome: str | None = None,
    cause: str | None = None,
    max_durations: Mapping[Any, float] | None = None,
    max_total: float | None = None,
    expect: Mapping[str, object] | None = None,
    min_avail_mem: float | None = None,
    baseline: Any = None,
    tolerance: float | None = None,
    slack: float | None = None,
) -> Report:
    """Check a startup like ``logphase check`` does; return its report, or raise AssertionError.

    ``log_or_report``: a path (str without a newline, or os.PathLike) to a log or saved report,
    a :class:`~logphase.reporting.report.Report`, or the log itself as text or bytes (text must contain a
    newline). ``outcome`` defaults to "ready" ("failed" when ``cause`` is given; "any" skips it).
    ``max_durations`` maps phase names (or Phase) to seconds; ``baseline`` is a report or log
    whose phase durations must not grow beyond ``1 + tolerance`` times. Bad arguments (unknown
    phase, negative number) raise ValueError, not AssertionError.
    """
    want = Expectations.build(
        outcome=outcome,
        cause=cause,
        max_durations=max_durations,
        max_total=max_total,
        expect=expect,
        min_avail_mem=min_avail_mem,
        baseline=baseline,
        tolerance=tolerance,
        slack=slack,
    )
    report = load(log_or_report)
    result = check(report, want)
    if not result.ok:
        raise AssertionError(render_check(result, report).rstrip("\n"))
    return report


def failure_message(report: Report) -> str:
    """'server.log: startup failed: cuda_oom in cuda_graph_capture at line 80: ...' plus the hint."""
    text = f"{report.source}: server startup failed: {describe_failure(report)}"
    if report.failure is not None and report.failure.hint:
        text += f"\n  hint: {report.failure.hint}"
    return text


class _Stopped(LogphaseError):
    """Raised in the following thread at a pause to end ``follow_file`` (LogFollower.stop)."""


class LogFollower:
    """Follows a server log in a background thread while a test runs.

    The thread is ``logphase follow FILE`` itself (``faces.follow.follow_file``, to the end of the
    input: by name, waiting for the file to exist, noticing truncation and rotation, reading at
    least every ``poll_interval`` seconds); this class publishes the report of what it has read,
    after each record and whenever the follower has caught up with the file. A file replaced or
    truncated (a new server run) starts a fresh report. A failure counts once the log has been quiet
    for ``settle`` seconds, so that the whole traceback is read before the cause is named. Given the
    server's ``process`` (anything with ``poll()`` returning None while it runs, like
    ``subprocess.Popen``), waiting also ends when it exits.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        poll_interval: float = 0.2,
        settle: float = 0.5,
        expect: Mapping[str, object] | None = None,
        process: Any = None,
    ) -> None:
        self.path = os.fspath(path)
        self.process = process  # e.g. the server's subprocess.Popen: its exit ends a wait early
        self.poll_interval = poll_interval
        self.settle = settle
        self._expect = expect
        self._changed = threading.Condition(threading.Lock())
        self._stop = threading.Event()
        self._wake = threading.Event()  # cuts the follower's pause short (poll, stop)
        self._thread: threading.Thread | None = None
        self._follower: Follower | None = None
        self._report = Engine(source=self.path).report(expect)
        self._read_so_far: tuple[Follower | None, int] = (None, 0)  # (the follower, bytes it had read) at the last publication
        self._last_growth = time.monotonic()
        self._pauses = 0  # times the follower caught up with the file and paused
        self._paused = False
        self._error: BaseException | None = None
        self.restarts = 0  # times the file was replaced or truncated
        self.reported = False  # a failure was raised to the test already

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> LogFollower:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"logphase-follow {self.path}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> Report:
        """Read what the log holds now, stop the thread, and return the final report."""
        self.poll()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        return self.report()

    def __enter__(self) -> LogFollower:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        options = FollowOptions(until="eof", poll_interval=self.poll_interval)
        try:
            for _record in follow_file(self.path, options, sleep=self._pause, on_follower=self._adopt):
                self._publish()
        except _Stopped:
            pass
        except BaseException as exc:  # surfaced to whoever waits
            with self._changed:
                self._error = exc
                self._changed.notify_all()

    # -- the following thread's side --------------------------------------------------------------

    def _adopt(self, follower: Follower) -> None:
        """follow_file's follower: a new one when the file was replaced or truncated."""
        with self._changed:
            if self._follower is not None:
                self.restarts += 1
            self._follower = follower
        self._publish()

    def _publish(self) -> None:
        """The report of what the follower has read, for the waiting threads."""
        follower = self._follower
        if follower is None:
            return
        with self._changed:
            read_so_far = (follower, follower.engine.bytes_seen)
            if read_so_far != self._read_so_far:
                self._read_so_far = read_so_far
                self._last_growth = time.monotonic()
            self._report = follower.engine.report(self._expect)
            self._changed.notify_all()

    def _pause(self, seconds: float) -> None:
        """follow_file's pause between reads: the follower has read all there is."""
        self._publish()
        with self._changed:
            self._pauses += 1
            self._paused = True
            self._changed.notify_all()
        self._wake.wait(min(seconds, self.poll_interval))
        self._wake.clear()
        with self._changed:
            self._paused = False
        if self._stop.is_set():
            raise _Stopped

    # -- reading ----------------------------------------------------------------------------------

    def poll(self) -> Report:
        """Read whatever is new now (from any thread) and return the report: waits until the
        following thread has caught up with the file (at most a few seconds)."""
        thread = self.start()._thread
        with self._changed:
            # a pause that begins after a read that began after now (not one whose read was under way)
            target = self._pauses + (1 if self._paused else 2)
            self._wake.set()
            deadline = time.monotonic() + max(POLL_WAIT_S, 10 * self.poll_interval)
            while self._pauses < target and self._error is None and thread is not None and thread.is_alive():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(min(remaining, self.poll_interval))
        return self.report()

    def report(self) -> Report:
        with self._changed:
            if self._error is not None:
                raise RuntimeError(f"logphase: following {self.path} failed: {self._error!r}") from self._error
            return self._report

    # -- waiting and asserting --------------------------------------------------------------------

    def _settled_failure(self) -> bool:
        return self._report.outcome == "failed" and time.monotonic() - self._last_growth >= self.settle

    def wait(self, timeout: float | None = None) -> Report:
        """Block until the server is ready, or failed (and the log quiet), or its process exited,
        or ``timeout`` passed; return the report then."""
        self.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while True:
                if self._error is not None:
                    raise RuntimeError(f"logphase: following {self.path} failed: {self._error!r}") from self._error
                if self._report.outcome == "ready" or self._settled_failure():
                    return self._report
                if self._exit_code() is not None:
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return self._report
                # woken by every poll; the cap only guards against a thread that stopped
                self._changed.wait(min(remaining, 1.0) if remaining is not None else 1.0)
        # the process is gone: read the last lines it wrote
        self._stop.wait(self.settle)
        return self.poll()

    def _exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def wait_ready(self, timeout: float | None = None) -> Report:
        """The report once the server is ready; fails (StartupFailed) on a failure, when the
        server process exits first, or at timeout."""
        report = self.wait(timeout)
        if report.outcome == "failed":
            self._fail(failure_message(report))
        if report.outcome != "ready":
            code = self._exit_code()
            if code is not None:
                self._fail(f"{self.path}: the server exited with code {code} before it was ready: {headline(report)}")
            self._fail(f"{self.path}: server not ready after {timeout:g} s: {headline(report)}")
        return report

    def check(self) -> Report:
        """Fail now if the log shows a failed startup; otherwise return the current report."""
        report = self.poll()
        if report.outcome == "failed":
            if not self._settled_failure():
                report = self.wait(self.settle + 2 * self.poll_interval)
            self._fail(failure_message(report))
        return report

    def assert_startup(self, **expectations: Any) -> Report:
        """``assert_startup`` on the current report (see :func:`assert_startup`)."""
        return assert_startup(self.poll(), **expectations)

    def _fail(self, message: str) -> None:
        self.reported = True
        raise StartupFailed(message)
