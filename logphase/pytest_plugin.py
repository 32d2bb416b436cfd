"""pytest plugin, loaded through the ``pytest11`` entry point ``logphase``.

The ``logphase_follow`` fixture follows a server log while the test runs::

    def test_generate(logphase_follow):
        server = start_server(log="server.log")      # your own launcher
        follower = logphase_follow("server.log")      # starts a background thread
        follower.wait_ready(timeout=600)              # fails the test with the cause if startup fails
        ...

When the test ends (passed or failed) and the log shows a failed startup, the test fails with
the failure cause, its log line and the hint; an error the test itself raised (a refused
connection, say) is mentioned after it. ``follower.check()`` fails the test on demand. A server
``process=`` given to the fixture is stopped when the test fails, so that a failed test never
leaves a server running.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from logphase.testing import LogFollower

_FOLLOWERS = pytest.StashKey[list["LogFollower"]]()
_FAILED = pytest.StashKey[bool]()
# how long a server stopped with SIGTERM gets to exit before SIGKILL
STOP_GRACE_S = 5.0


@pytest.fixture
def logphase_follow(request: pytest.FixtureRequest) -> Generator[Callable[..., LogFollower], None, None]:
    """Factory: ``logphase_follow(path, poll_interval=0.2, settle=0.5, expect=None, process=None)``
    -> LogFollower.

    The follower runs until the test's teardown. Its ``wait_ready``/``check`` fail the test
    through ``pytest.fail``, with the startup failure cause as the message. When the test failed,
    the teardown stops the ``process`` it was given (SIGTERM, then SIGKILL after STOP_GRACE_S).
    """
    from logphase.testing import LogFollower, failure_message

    class PytestLogFollower(LogFollower):
        def _fail(self, message: str) -> None:
            self.reported = True
            pytest.fail(message, pytrace=False)

    followers: list[LogFollower] = []
    request.node.stash[_FOLLOWERS] = followers

    def follow(path: Any, **options: Any) -> LogFollower:
        follower = PytestLogFollower(path, **options).start()
        followers.append(follower)
        return follower

    yield follow

    problems: list[str] = []
    for follower in followers:
        report = follower.stop()
        if report.outcome == "failed" and not follower.reported:
            follower.reported = True
            problems.append(failure_message(report))
    if problems or request.node.stash.get(_FAILED, False):
        for follower in followers:
            _stop_process(follower.process)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def _stop_process(process: Any) -> None:
    """Stop a server the failed test left running (anything with poll/terminate/wait/kill, like
    ``subprocess.Popen``)."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_GRACE_S)
    except Exception:  # still running after the grace period (subprocess.TimeoutExpired)
        process.kill()
        process.wait()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember whether the test failed (its setup or body), for the fixture's teardown."""
    report = yield
    if report.failed and report.when in ("setup", "call"):
        item.stash[_FAILED] = True
    return report


def _startup_failures(item: pytest.Item) -> list[str]:
    from logphase.testing import failure_message

    out: list[str] = []
    for follower in item.stash.get(_FOLLOWERS, []):
        if follower.reported:
            continue
        report = follower.poll()
        if report.outcome == "failed":
            # let the traceback finish before naming the cause
            report = follower.wait(follower.settle + 2 * follower.poll_interval)
            follower.reported = True
            out.append(failure_message(report))
    return out


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """After the test body: a failed startup in a followed log fails the test, with its cause."""
    try:
        result = yield
    except (pytest.skip.Exception, KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        failures = _startup_failures(item)
        if failures:
            said = str(exc).strip().splitlines()
            first = f": {said[0][:300]}" if said else ""
            pytest.fail("\n".join(failures) + f"\n(the test itself raised {type(exc).__name__}{first})", pytrace=False)
        raise
    failures = _startup_failures(item)
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)
    return result
