"""The pytest plugin (entry point pytest11 "logphase"), driven through pytester: a server log
written line by line while the test runs, followed by the ``logphase_follow`` fixture."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT
from tests.logs import kv_failure, tp2_startup

pytest_plugins = ["pytester"]

# Installed (pip install .), the entry point loads the plugin; from a bare checkout, -p does.
ENTRY_POINT = any(e.name == "logphase" for e in importlib.metadata.entry_points(group="pytest11"))
PLUGIN_ARGS = () if ENTRY_POINT else ("-p", "logphase.pytest_plugin")

SERVER = '''
import threading
import time
from pathlib import Path

from logphase.replay import records

SOURCE = Path({source!r})


def serve(log):
    """Stands in for the server: writes its log a record at a time (a traceback in one write, as
    logging does: a pause of the writer must not leave half a traceback as the settled cause)."""
    def write():
        with open(log, "wb") as out:
            for record in records(SOURCE.read_bytes().splitlines(keepends=True)):
                out.write(record)
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


def test_passing_vllm_startup(pytester: pytest.Pytester) -> None:
    """The fixture on a vLLM log (issue 21): its lines without a year, its process prefixes."""
    make_suite(pytester, (FIXTURES / "vllm_v1_clean_compile_0_11.log").read_text())
    result = pytester.runpytest(*PLUGIN_ARGS, "-p", "no:cacheprovider", "-k", "wait_ready or body_passes")
    result.assert_outcomes(passed=2)


def test_failing_vllm_startup(pytester: pytest.Pytester) -> None:
    make_suite(pytester, (FIXTURES / "vllm_kv_cache_no_room_v0_0_7.log").read_text())
    result = pytester.runpytest(*PLUGIN_ARGS, "-p", "no:cacheprovider", "-k", "body_passes")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "server startup failed: kv_cache_insufficient_memory in memory_pool" in out
    assert "--gpu-memory-utilization" in out  # vLLM's flag in the hint, not SGLang's


def test_the_plugin_is_registered_where_logphase_is_installed() -> None:
    """What pip installed (the entry point), not what pyproject.toml says."""
    from importlib.metadata import entry_points

    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("logphase") == "logphase.pytest_plugin"


# -- a server the test was given is stopped when the test fails -----------------------------------


def test_a_failed_test_stops_the_server_it_left_running(pytester: pytest.Pytester) -> None:
    source = pytester.path / "source.log"
    source.write_text(tp2_startup())
    pid_file = pytester.path / "server.pid"
    pytester.makepyfile(
        test_leaves_server=f"""
import subprocess
import sys


def test_fails_with_the_server_running(logphase_follow, tmp_path):
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "logphase.replay", {str(source)!r}], stdout=out)
    open({str(pid_file)!r}, "w").write(str(server.pid))
    logphase_follow(log, process=server, poll_interval=0.02).wait_ready(timeout=60)
    assert False, "the test fails after start-up, and does not stop its server"
"""
    )
    result = pytester.runpytest(*PLUGIN_ARGS, "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return  # stopped, and reaped by the plugin's wait
    os.kill(pid, signal.SIGKILL)
    raise AssertionError("the failed test's server was left running")


# -- the README's pytest example runs as it is written --------------------------------------------


def readme_pytest_example() -> tuple[str, str]:
    """The README's pytest example (the python block defining test_server_starts) and the output
    block shown after it."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(\w*)\n(.*?)```", readme, re.DOTALL)
    at = next(i for i, (lang, body) in enumerate(blocks) if lang == "python" and "def test_server_starts" in body)
    assert blocks[at + 1][0] == "text", "the example's output block follows it"
    return blocks[at][1], blocks[at + 1][1]


def test_the_readme_pytest_example_runs_as_copied(tmp_path: Path) -> None:
    """Saved as test_startup.py where fixtures/logs/ holds the recorded logs (a checkout), run with
    pytest in its own process: one test passes, the failed start-up fails the other with its cause,
    as the README shows, and no replayed server is left running."""
    example, shown = readme_pytest_example()
    (tmp_path / "test_startup.py").write_text(example)
    (tmp_path / "fixtures" / "logs").mkdir(parents=True)
    parametrized = re.search(r'parametrize\("recorded", \[(.*?)\]', example)
    assert parametrized is not None
    for recorded in re.findall(r'"([\w.]+\.log)"', parametrized.group(1)):
        shutil.copy(FIXTURES / recorded, tmp_path / "fixtures" / "logs" / recorded)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGIN_ARGS, "-p", "no:cacheprovider", "test_startup.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "1 failed, 1 passed" in out and "1 failed, 1 passed" in shown
    failed = "FAILED test_startup.py::test_server_starts[kv_cache_insufficient.log]"
    assert failed in out and failed in shown
    # the failure's message as the README shows it (after the log's path, which differs per run)
    said = next(line for line in shown.splitlines() if "server startup failed" in line)
    assert said[said.index(": server startup failed") :] in out
    hint = next(line for line in shown.splitlines() if "hint:" in line)
    assert hint in out
    assert "Traceback" not in out
    assert replays_running_in(tmp_path) == []


def replays_running_in(folder: Path) -> list[int]:
    """Processes of `python -m logphase.replay` whose working folder is ``folder``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if b"logphase.replay" in (proc / "cmdline").read_bytes() and (proc / "cwd").resolve() == folder.resolve():
                found.append(int(proc.name))
        except OSError:  # not a process, gone meanwhile, or not ours
            continue
    return found


def test_replay_writes_a_record_at_a_time() -> None:
    from logphase.replay import records

    lines = kv_failure().encode().splitlines(keepends=True)
    written = list(records(lines))
    assert b"".join(written) == b"".join(lines)  # nothing lost or reordered
    traceback = next(r for r in written if b"Traceback" in r)
    assert traceback.endswith(b"\n\n") and b"RuntimeError: Not enough memory" in traceback  # one write, to its end
    assert written[-1].startswith(b"[") and b"Received sigquit" in written[-1]
