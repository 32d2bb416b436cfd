"""Probes that know the phase: what /startup, /ready and /live answer (logphase/faces/fleet/probe.py),
the state file the sidecar keeps and `logphase probe` reads, the HTTP endpoints beside /metrics, and
every fixture replayed at the pace of its own stamps on a fake clock (tests/probe_replay.py): the
start-up probe fails at the root cause's line, and never fails a start-up that makes progress, a
ten-minute weight load included. The real logs of ../shared are replayed by
scripts/probe_replay.py, whose table the closing note of issue 33 quotes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from logphase.engine.whole import parse_bytes
from logphase.faces.fleet.probe import STATE_FORMAT, answer, read_state, write_state
from logphase.faces.fleet.sidecar import StateKeeper, state_of
from logphase.faces.live.follow import DEFAULT_STALL_AFTER, Follower, FollowOptions
from logphase.vocabulary.phases import Phase
from tests.conftest import FIXTURES, fixture_logs
from tests.probe_replay import replay


def _state(**changes: object) -> dict[str, object]:
    state: dict[str, object] = {
        "logphase_state": STATE_FORMAT,
        "written_at": 1000.0,
        "outcome": "starting",
        "phase": "weight_loading",
        "headline": "STARTING: in weight_loading for 5.0 min",
        "last_line_at": 1000.0,
        "last_line": "Loading safetensors checkpoint shards:  40% Completed | 16/40",
        "stall_after_s": 900.0,
        "stall_hint": "loading a large checkpoint from slow storage can take this long",
        "failure": None,
    }
    state.update(changes)
    return state


KV_FAILURE = {
    "cause": "kv_cache_insufficient_memory",
    "phase": "memory_pool",
    "rank": "TP0",
    "line": 20,
    "ts": "2026-05-12T18:20:48",
    "message": "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "hint": "raise --mem-fraction-static",
    "while_serving": False,
}


# -- what each probe answers ---------------------------------------------------------------------------


def test_startup_passes_while_lines_come_within_the_phase_budget_and_fails_past_it() -> None:
    state = _state()
    assert answer("startup", state, 1000.0 + 899).ok
    stalled = answer("startup", state, 1000.0 + 901)
    assert not stalled.ok and "STALLED in weight_loading" in stalled.message and "901 s (budget 900 s)" in stalled.message
    assert "slow storage" in stalled.message and "last line: Loading safetensors" in stalled.detail


def test_startup_fails_at_a_failure_with_the_cause_its_line_and_the_hint() -> None:
    failed = answer("startup", _state(outcome="failed", phase="memory_pool", failure=KV_FAILURE), 1000.0)
    assert not failed.ok
    assert failed.message.startswith("FAILED in memory_pool: kv_cache_insufficient_memory (line 20 on TP0): RuntimeError")
    assert "hint: raise --mem-fraction-static" in failed.message and "hint: raise" in failed.detail


def test_ready_and_live() -> None:
    ready = _state(outcome="ready", phase="ready", headline="READY after 86 s")
    assert answer("ready", ready, 0).ok and answer("live", ready, 0).ok and answer("startup", ready, 1e9).ok
    starting = _state()
    assert not answer("ready", starting, 1000.0).ok and answer("live", starting, 1000.0).ok
    serving = _state(outcome="failed", phase="ready", failure={**KV_FAILURE, "cause": "cuda_oom", "while_serving": True})
    # a failure while serving is past the start-up: /startup stays passed, /live and /ready fail
    assert answer("startup", serving, 0).ok
    assert not answer("live", serving, 0).ok and not answer("ready", serving, 0).ok
    assert "cuda_oom" in answer("live", serving, 0).message


def test_a_state_file_round_trips_and_an_old_or_missing_one_is_no_state(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_state(str(path), _state(written_at=1000.0))
    assert read_state(str(path), 1010.0)["phase"] == "weight_loading"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # written whole, no temporary left
    with pytest.raises(Exception, match="last wrote its state 40 s ago"):
        read_state(str(path), 1040.0)
    with pytest.raises(Exception, match="is the sidecar running"):
        read_state(str(tmp_path / "none.json"), 0)
    path.write_text('{"something": "else"}')
    with pytest.raises(Exception, match="not a state"):
        read_state(str(path), 0)


# -- the sidecar's state --------------------------------------------------------------------------------


def _followed(data: bytes, now: float = 0.0, options: FollowOptions | None = None) -> Follower:
    follower = Follower("server.log", options or FollowOptions(until="eof"), now=now)
    follower.feed(data, now)
    return follower


def test_the_state_holds_what_the_probes_need() -> None:
    data = (FIXTURES / "kv_cache_insufficient.log").read_bytes()
    follower = _followed(data, now=50.0)
    state = state_of(follower, 60.0, 10_060.0)
    assert state["outcome"] == "failed" and state["failure"]["cause"] == "kv_cache_insufficient_memory"
    assert state["last_line_at"] == 10_050.0  # the wall time of the monotonic 50.0
    assert not answer("startup", state, 10_060.0).ok
    head = data[: data.index(b"Load weight end")]
    starting = state_of(_followed(head), 0.0, 0.0)
    assert starting["phase"] == "weight_loading" and starting["stall_after_s"] == DEFAULT_STALL_AFTER[Phase.WEIGHT_LOADING]


def test_stall_after_per_phase_sets_that_phase_s_budget_only() -> None:
    data = (FIXTURES / "kv_cache_insufficient.log").read_bytes()
    head = data[: data.index(b"Load weight end")]
    options = FollowOptions(until="eof", stall_after_phase={Phase.WEIGHT_LOADING: 1800.0})
    assert state_of(_followed(head, options=options), 0.0, 0.0)["stall_after_s"] == 1800.0
    launch = data[: data.index(b"Init torch distributed begin")]
    assert state_of(_followed(launch, options=options), 0.0, 0.0)["stall_after_s"] == DEFAULT_STALL_AFTER[Phase.LAUNCH]


def test_the_keeper_writes_at_a_change_and_at_the_heartbeat_only(tmp_path: Path) -> None:
    data = (FIXTURES / "tp1_success.log").read_bytes()
    follower = _followed(data[: data.index(b"Load weight end")])
    clock = {"mono": 0.0, "wall": 5000.0}
    keeper = StateKeeper(str(tmp_path / "s.json"), lambda: follower, lambda: clock["mono"], lambda: clock["wall"])
    keeper.keep()
    first = json.loads((tmp_path / "s.json").read_text())
    clock["mono"], clock["wall"] = 1.0, 5001.0
    keeper.keep()  # nothing changed, the heartbeat is not due: not rewritten
    assert json.loads((tmp_path / "s.json").read_text())["written_at"] == first["written_at"]
    follower.feed(data[data.index(b"Load weight end") :], 1.0)
    keeper.keep()
    assert json.loads((tmp_path / "s.json").read_text())["outcome"] == "ready"
    clock["mono"], clock["wall"] = 7.0, 5007.0
    keeper.keep()  # the heartbeat
    assert json.loads((tmp_path / "s.json").read_text())["written_at"] == 5007.0


# -- replayed at their own pace: the probe fails at the root cause, and only then -------------------------


def _cut_last_line(report_data: bytes) -> bool:
    """The log ends inside a line: follow waits for its newline while the file may grow, so only the
    stall budget of its phase fails the probe (a sidecar cannot tell a line being written from a
    process that died in the middle of one)."""
    return any(w.kind == "truncated_input" for w in parse_bytes(report_data).warnings)


@pytest.mark.parametrize("log", fixture_logs(), ids=lambda p: p.name)
def test_replayed_fixtures_fail_the_probe_at_the_root_cause_and_never_before(log: Path) -> None:
    data = log.read_bytes()
    r = replay(data)
    assert r.false_failures() == []
    if r.failure_at is None:
        return
    delay = r.delay()
    assert delay is not None, "the probe never failed"
    if _cut_last_line(data):
        assert delay <= max(DEFAULT_STALL_AFTER[p] for p in Phase if p is not Phase.READY)
    else:
        # 1 s: a traceback that ends the file is judged once it has been quiet for a second (follow's
        # flush timeout), in case it goes on; a kubelet probing every P s fails within delay + P s
        assert delay <= 1.0, delay


def _slow_weight_load(seconds: int, bars: bool) -> bytes:
    """tp1_success.log with a weight load of ``seconds``: its shard bar redrawn every 15 s (``bars``)
    or silent, the lines after it stamped that much later."""
    lines = (FIXTURES / "tp1_success.log").read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("Loading safetensors"))
    last = max(i for i, line in enumerate(lines) if line.startswith("Loading safetensors"))
    shards = seconds // 15
    drawn = [
        f"Loading safetensors checkpoint shards: {100 * n // shards:3d}% Completed | {n}/{shards} "
        f"[{n * 15 // 60:02d}:{n * 15 % 60:02d}<{(shards - n) * 15 // 60:02d}:{(shards - n) * 15 % 60:02d}, 15.00s/it]\n"
        for n in range(shards + 1)
    ]

    def later(line: str) -> str:
        return re.sub(
            r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)",
            lambda m: "[" + (datetime.fromisoformat(m.group(1)) + timedelta(seconds=seconds)).isoformat(" "),
            line,
        )

    out = lines[:first] + (drawn if bars else []) + [later(line) for line in lines[last + 1 :]]
    return "".join(out).encode()


@pytest.mark.parametrize("bars", [True, False], ids=["shard-bar", "silent"])
def test_a_ten_minute_weight_load_is_left_alone(bars: bool) -> None:
    data = _slow_weight_load(600, bars)
    report = parse_bytes(data)
    assert report.outcome == "ready" and report.phases[2].name is Phase.WEIGHT_LOADING
    assert report.phases[2].duration_s is not None and report.phases[2].duration_s >= 600
    r = replay(data)
    assert r.false_failures() == [] and r.ready_at is not None and r.ready_at >= 600
    assert all(ok for start, _end, ok, _ in r.startup if start < r.ready_at)


def test_a_silent_load_past_its_budget_is_a_stall_unless_the_phase_is_given_more() -> None:
    data = _slow_weight_load(1200, bars=False)
    stalled = replay(data).false_failures()
    assert stalled and "STALLED in weight_loading" in stalled[0][3] and stalled[0][0] == pytest.approx(900, abs=20)
    assert replay(data, stall_after=1500.0).false_failures() == []


# -- the commands: follow --state-file, logphase probe, the HTTP endpoints ----------------------------------


def _logphase(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "logphase", *args], capture_output=True, text=True, timeout=60)


def test_probe_reads_the_state_follow_keeps(tmp_path: Path) -> None:
    log, state, term = tmp_path / "server.log", tmp_path / "state.json", tmp_path / "termination-log"
    data = (FIXTURES / "kv_cache_insufficient.log").read_bytes()
    proc = subprocess.Popen(
        [sys.executable, "-m", "logphase", "follow", str(log), "--state-file", str(state), "--timeout", "120"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait(lambda: state.exists())
        assert _logphase("probe", str(state)).returncode == 0  # no log yet: waiting, within the budget
        log.write_bytes(data[: data.index(b"Load weight end")])
        _wait(lambda: json.loads(state.read_text())["phase"] == "weight_loading")
        assert _logphase("probe", str(state)).returncode == 0
        assert _logphase("probe", str(state), "--ready").returncode == 1
        with log.open("ab") as f:
            f.write(data[data.index(b"Load weight end") :])
        _wait(lambda: json.loads(state.read_text())["outcome"] == "failed")
        done = _logphase("probe", str(state), "--termination-log", str(term))
        assert done.returncode == 1 and done.stdout.startswith("FAILED in memory_pool: kv_cache_insufficient_memory")
        assert "hint: The KV cache did not fit" in term.read_text() and len(term.read_bytes()) <= 4096
        assert _logphase("probe", str(state), "--live").returncode == 1
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_probe_without_a_sidecar_says_so_in_one_line(tmp_path: Path) -> None:
    done = _logphase("probe", str(tmp_path / "state.json"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "is the sidecar running" in done.stderr
    live = _logphase("probe", str(tmp_path / "state.json"), "--live")
    assert live.returncode == 0 and live.stdout.startswith("unknown, so not failed")
    bad = _logphase("follow", str(tmp_path / "x.log"), "--state-file", str(tmp_path / "no" / "s.json"))
    assert bad.returncode == 2 and "no folder" in bad.stderr and "Traceback" not in bad.stderr
    bad = _logphase("follow", str(tmp_path / "x.log"), "--stall-after", "loading=30")
    assert bad.returncode == 2 and "unknown phase 'loading'" in bad.stderr


def test_the_http_probes_answer_beside_the_metrics(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    data = (FIXTURES / "kv_cache_insufficient.log").read_bytes()
    log.write_bytes(data[: data.index(b"Load weight end")])
    proc = subprocess.Popen(
        [sys.executable, "-m", "logphase", "follow", str(log), "--metrics-port", "0", "--timeout", "120"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        port = int(re.search(r"port (\d+)", proc.stderr.readline().decode()).group(1))  # type: ignore[union-attr]
        _wait(lambda: "weight_loading" in _get(port, "/startup")[1])
        assert _get(port, "/startup")[0] == 200 and _get(port, "/ready")[0] == 503 and _get(port, "/live")[0] == 200
        with log.open("ab") as f:
            f.write(data[data.index(b"Load weight end") :])
        _wait(lambda: _get(port, "/startup")[0] == 503)
        status, body = _get(port, "/startup")
        assert body.startswith("FAILED in memory_pool: kv_cache_insufficient_memory (line 20 on TP0)")
        status, body = _get(port, "/live?format=json")
        assert status == 503 and json.loads(body)["state"]["failure"]["cause"] == "kv_cache_insufficient_memory"
        assert "logphase_failure" in _get(port, "/metrics")[1]
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _wait(condition: object, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while True:
        try:
            if condition():  # type: ignore[operator]
                return
        except (OSError, ValueError, KeyError):
            pass
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_probe_imports_nothing_but_the_standard_library_and_its_module() -> None:
    """`logphase probe` runs every few seconds: no engine, grammar, pydantic or command is imported."""
    code = (
        "import sys; sys.argv = ['logphase', 'probe', '/nonexistent/state.json', '--live']\n"
        "from logphase.faces import cli\n"
        "try:\n    cli.os._exit = lambda code: None; cli.entry_point()\nfinally:\n"
        "    mods = sorted(m for m in sys.modules if m.startswith(('logphase', 'pydantic', 'lark', 'orjson')))\n"
        "    print(' '.join(mods), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ})
    loaded = done.stderr.split()
    assert not [m for m in loaded if m.startswith(("pydantic", "lark", "orjson", "logphase.engine", "logphase.packs"))], loaded


@pytest.mark.parametrize("log", ["silent_weight_load.log", "kv_cache_insufficient.log", "vllm_v1_clean_compile_0_11.log"])
def test_the_timeline_is_the_log_in_order_at_its_own_pace(log: str) -> None:
    from logphase.replay import timeline

    data = (FIXTURES / log).read_bytes()
    pieces = timeline(data)
    assert b"".join(piece for _, piece in pieces) == data
    times = [at for at, _ in pieces]
    assert times == sorted(times) and times[0] == 0.0
    report = parse_bytes(data)
    if report.total_startup_s is not None:
        # the last piece comes when the run's last time says (a bar's own clock, a stamp)
        assert times[-1] >= report.total_startup_s - 1.0


def test_replay_pace_writes_the_log_whole(tmp_path: Path) -> None:
    log = FIXTURES / "kv_cache_insufficient.log"
    done = subprocess.run(
        [sys.executable, "-m", "logphase.replay", str(log), "--pace", "1000", "--exit", "0"], capture_output=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout == log.read_bytes()
