"""The pytest plugin (entry point pytest11 "logphase"), driven through pytester: a server log
written line by line while the test runs, followed by the ``logphase_follow`` fixture."""

from __future__ import annotations

import importlib.metadata

import pytest

from tests.logs import kv_failure, tp2_startup

pytest_plugins = ["pytester"]

# Installed (pip install .), the entry point loads the plugin; from a bare checkout, -p does.
ENTRY_POINT = any(e.name == "logphase" for e in importlib.metadata.entry_points(group="pytest11"))
PLUGIN_ARGS = () if ENTRY_POINT else ("-p", "logphase.pytest_plugin")

SERVER = '''
import threading
import time
from pathlib import Path

SOURCE = Path({source!r})


def serve(log):
    """Stands in for the server: writes its log a few lines at a time."""
    def write():
        with open(log, "w") as out:
            for line in SOURCE.read_text().splitlines(keepends=True):
                out.write(line)
                out.flush()
                time.sleep(0.002)
    thread = threading.Thread(target=write)
    thread.start()
    return thread
'''


def make_suite(pytester: pytest.Pytester, log_text: str) -> None:
    source = pytester.path / "source.log"
    source.write_text(log_text)
    pytester.makepyfile(server=SERVER.format(source=str(source)))
    pytester.makepyfile(
        test_startup="""
import pytest

from server import serve


def test_wait_ready(logphase_follow, tmp_path):
    log = tmp_path / "server.log"
    follower = logphase_follow(log, poll_interval=0.02, settle=0.1)
    thread = serve(log)
    report = follower.wait_ready(timeout=30)
    thread.join()
    assert report.outcome == "ready"


def test_body_passes_but_server_failed(logphase_follow, tmp_path):
    log = tmp_path / "server.log"
    follower = logphase_follow(log, poll_interval=0.02, settle=0.1)
    serve(log).join()


def test_body_raises(logphase_follow, tmp_path):
    log = tmp_path / "server.log"
    logphase_follow(log, poll_interval=0.02, settle=0.1)
    serve(log).join()
    raise ConnectionRefusedError("connection refused on port 30000")
"""
    )


def test_fixture_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures", *PLUGIN_ARGS)
    result.stdout.fnmatch_lines(["*logphase_follow*"])


def test_passing_startup(pytester: pytest.Pytester) -> None:
    make_suite(pytester, tp2_startup())
    result = pytester.runpytest(*PLUGIN_ARGS, "-p", "no:cacheprovider", "-k", "wait_ready or body_passes")
    result.assert_outcomes(passed=2)


def test_failing_startup(pytester: pytest.Pytester) -> None:
    make_suite(pytester, kv_failure())
    result = pytester.runpytest(*PLUGIN_ARGS, "-p", "no:cacheprovider")
    # each test fails (in its call, not as a teardown error) with the cause of the failed startup
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    # one failure report per test (the short summary may repeat it, depending on terminal width)
    reports = [line for line in out.splitlines() if "server startup failed" in line and not line.startswith("FAILED")]
    assert len(reports) == 3
    assert all("kv_cache_insufficient_memory in memory_pool on TP0 at line 5" in line for line in reports)
    assert "hint: The KV cache did not fit" in out
    assert "the test itself raised ConnectionRefusedError: connection refused on port 30000" in out
    assert "Traceback" not in out


def test_the_plugin_is_registered_where_logphase_is_installed() -> None:
    """What pip installed (the entry point), not what pyproject.toml says."""
    from importlib.metadata import entry_points

    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("logphase") == "logphase.pytest_plugin"
