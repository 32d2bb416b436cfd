"""The test oracle: `check`, `compare`, `assert_startup`, the log follower, `--events` and
deterministic `--json` output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from logphase import Report, assert_startup, parse_text
from logphase.faces.loading import load
from logphase.faces.oracle import Expectations, OracleError, check, compare, render_check
from logphase.replay import records
from logphase.testing import LogFollower, StartupFailed
from logphase.vocabulary.events import Event
from tests.conftest import fixture_logs
from tests.logs import kv_failure, logphase_cli, stamp, tp2_startup

ROOT = Path(__file__).resolve().parents[1]


run = logphase_cli


def run_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, *args], capture_output=True, timeout=120, cwd=ROOT, env=env)


def slow_weights(extra: int = 24) -> str:
    """tp2_startup (launched with mem_fraction_static=0.88) whose weight loading takes ``extra`` s longer."""
    out = []
    for line in tp2_startup(mem="0.88").splitlines():
        m = re.match(r"\[2026-05-09 09:20:(\d\d)", line)
        if m and int(m.group(1)) >= 20:
            later = datetime(2026, 5, 9, 9, 20, int(m.group(1))) + timedelta(seconds=extra)
            line = f"[{later:%Y-%m-%d %H:%M:%S}" + line[m.end() :]
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    texts = {
        "ready": tp2_startup(),
        "failed": kv_failure(),
        "starting": tp2_startup(ready=False),
        "slow": slow_weights(),
    }
    paths = {}
    for name, text in texts.items():
        paths[name] = tmp_path / f"{name}.log"
        paths[name].write_text(text)
    report = run("parse", str(paths["ready"]), "--json")
    paths["ready_json"] = tmp_path / "ready.json"
    paths["ready_json"].write_bytes(report.stdout)
    return paths


def result_of(text: str, **want: object):  # type: ignore[no-untyped-def]
    return check(load(text), Expectations.build(**want))  # type: ignore[arg-type]


# --- each expectation kind, holding and violated ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want", "ok", "phrase"),
    [
        (tp2_startup(), {}, True, "outcome: ready as expected"),
        (
            kv_failure(),
            {},
            False,
            "outcome: expected ready, got failed: kv_cache_insufficient_memory in memory_pool on TP0 at line 5",
        ),
        (tp2_startup(ready=False), {"outcome": "starting"}, True, "outcome: starting as expected"),
        (tp2_startup(ready=False), {}, False, "still in warmup at the end of the log (log ends at line 23)"),
        (tp2_startup(), {"outcome": "failed"}, False, "outcome: expected failed, got ready after 34 s at line 24"),
        (kv_failure(), {"cause": "kv_cache_insufficient_memory"}, True, "cause: kv_cache_insufficient_memory as expected"),
        (kv_failure(), {"cause": "cuda_oom"}, False, "cause: expected cuda_oom, got kv_cache_insufficient_memory"),
        (tp2_startup(), {"cause": "cuda_oom", "outcome": "any"}, False, "cause: expected cuda_oom, but startup did not fail"),
        (tp2_startup(), {"max_durations": {"weight_loading": 20}}, True, "max weight_loading: 18 s <= allowed 20 s"),
        (
            tp2_startup(),
            {"max_durations": {"weight-loading": "10s"}},
            False,
            "max weight_loading: 18 s > allowed 10 s (2026-05-09 09:20:03 -> 2026-05-09 09:20:21, lines 8-11)",
        ),
        (tp2_startup(), {"max_durations": {"cuda_graph_capture": 5}}, False, "max cuda_graph_capture: 7 s > allowed 5 s"),
        (kv_failure(), {"outcome": "failed", "max_durations": {"warmup": 1}}, True, "max warmup: not in this run"),
        (tp2_startup(), {"max_total": 40}, True, "max-total: ready after 34 s <= allowed 40 s (lines 1-24)"),
        (tp2_startup(), {"max_total": 30}, False, "max-total: ready after 34 s > allowed 30 s (lines 1-24)"),
        (tp2_startup(ready=False), {"outcome": "any", "max_total": 30}, False, "starting after 33 s so far > allowed 30 s"),
        (tp2_startup(), {"expect": {"tp_size": 2, "mem_fraction_static": "0.85"}}, True, "expect tp_size: 2 as expected"),
        (
            tp2_startup(),
            {"expect": {"mem_fraction_static": "0.88"}},
            False,
            "expect mem_fraction_static: the log says 0.85, expected 0.88 (server_args at line 1): stale log",
        ),
        (tp2_startup(), {"expect": {"max_running_requests": 64}}, True, "expect max_running_requests: 64 as expected"),
        (tp2_startup(), {"expect": {"speculative_algorithm": "EAGLE"}}, False, "the log does not show it, so EAGLE cannot"),
        (
            tp2_startup(),
            {"min_avail_mem": 6},
            True,
            "min-avail-mem: lowest 6.4 GB free on TP0 at cuda_graph_capture_end >= required 6 GB (line 18)",
        ),
        (
            tp2_startup(),
            {"min_avail_mem": "8GB"},
            False,
            "min-avail-mem: lowest 6.4 GB free on TP0 at cuda_graph_capture_end < required 8 GB (line 18)",
        ),
        (
            kv_failure(),
            {"outcome": "failed", "min_avail_mem": 6},
            False,
            "lowest 5 GB free on TP0 at weight_loading_end < required 6 GB (line 4)",
        ),
        (
            tp2_startup(),
            {"baseline": tp2_startup()},
            True,
            "baseline weight_loading: 18 s vs 18 s in <text> = 1.00x, within the allowed 1.2x",
        ),
        (
            slow_weights(),
            {"baseline": tp2_startup()},
            False,
            "baseline weight_loading: 42 s vs 18 s in <text> = 2.33x, over the allowed 1.2x (lines 8-11)",
        ),
        (slow_weights(), {"baseline": tp2_startup(), "tolerance": 1.5}, True, "= 2.33x, within the allowed 2.5x"),
    ],
)
def test_expectation_kinds(text: str, want: dict[str, object], ok: bool, phrase: str) -> None:
    result = result_of(text, **want)
    assert result.ok is ok
    messages = [c.message for c in result.checks]
    assert any(phrase in m for m in messages), messages
    if not ok:
        assert any(phrase in m for m in (v.message for v in result.violations))


def test_expectation_items_carry_evidence() -> None:
    result = result_of(tp2_startup(), max_durations={"weight_loading": 10}, min_avail_mem=8)
    by_check = {c.check: c for c in result.checks}
    assert by_check["max"].measured == 18.0 and by_check["max"].allowed == 10.0
    assert (by_check["max"].line, by_check["max"].end_line) == (8, 11)
    assert by_check["min_avail_mem"].measured == 6.4 and by_check["min_avail_mem"].line == 18


def test_slack_absorbs_whole_second_rounding() -> None:
    # launch 2 s -> 3 s is +50 %, but within a second: timestamps are whole seconds
    later = tp2_startup().replace(f"[{stamp(0)}]", f"[{stamp(59, 19)}]")
    assert result_of(later, baseline=tp2_startup()).ok
    assert not result_of(later, baseline=tp2_startup(), slack=0).ok


@pytest.mark.parametrize(
    ("want", "message"),
    [
        ({"max_durations": {"loading": 5}}, "unknown phase 'loading'"),
        ({"cause": "oom"}, "unknown cause 'oom'"),
        ({"max_total": "soon"}, "not a number"),
        ({"max_total": -1}, "must be a finite number >= 0"),
        ({"min_avail_mem": float("nan")}, "must be a finite number >= 0"),
        ({"outcome": "up"}, "unknown outcome 'up'"),
    ],
)
def test_bad_expectations_are_oracle_errors(want: dict[str, object], message: str) -> None:
    with pytest.raises(OracleError, match=message):
        Expectations.build(**want)  # type: ignore[arg-type]


def test_saved_report_is_read_as_a_report(logs: dict[str, Path]) -> None:
    loaded = load(logs["ready_json"])
    assert loaded == load(logs["ready"])
    result = check(loaded, Expectations.build(max_durations={"weight_loading": 10}, expect={"tp_size": "2"}))
    assert [c.ok for c in result.checks] == [True, False, True]
    # a saved report carries the lines of its phases: the verdict names them as for the log
    assert "(2026-05-09 09:20:03 -> 2026-05-09 09:20:21, lines 8-11)" in result.violations[0].message


# --- the check command ---------------------------------------------------------------------------


def test_check_command_passes(logs: dict[str, Path]) -> None:
    result = run("check", str(logs["ready"]), "--max", "weight_loading=20", "--max-total", "60", "--expect", "tp_size=2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == f"{logs['ready']}: ok, 4 expectations hold (READY after 34 s)\n"


def test_check_command_reports_each_violation_in_a_line(logs: dict[str, Path]) -> None:
    result = run(
        "check",
        str(logs["ready"]),
        "--max",
        "weight_loading=10",
        "--max",
        "warmup=5",
        "--expect",
        "mem_fraction_static=0.88",
        "--min-avail-mem",
        "8",
    )
    assert result.returncode == 1
    lines = result.stdout.decode().splitlines()
    assert lines[0] == f"{logs['ready']}: 3 of 5 expectations violated (READY after 34 s)"
    assert lines[1:] == [
        "  max weight_loading: 18 s > allowed 10 s (2026-05-09 09:20:03 -> 2026-05-09 09:20:21, lines 8-11)",
        "  expect mem_fraction_static: the log says 0.85, expected 0.88 (server_args at line 1): stale log or ignored parameter",
        "  min-avail-mem: lowest 6.4 GB free on TP0 at cuda_graph_capture_end < required 8 GB (line 18)",
    ]


def test_check_failed_log_and_cause(logs: dict[str, Path]) -> None:
    assert run("check", str(logs["failed"])).returncode == 1
    assert run("check", str(logs["failed"]), "--cause", "kv_cache_insufficient_memory").returncode == 0
    assert run("check", str(logs["failed"]), "--outcome", "failed").returncode == 0
    assert run("check", str(logs["starting"]), "--outcome", "starting").returncode == 0
    assert run("check", "-", "--cause", "kv_cache_insufficient_memory", stdin=logs["failed"].read_bytes()).returncode == 0


def test_check_json(logs: dict[str, Path]) -> None:
    result = run("check", str(logs["slow"]), "--baseline", str(logs["ready_json"]), "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["outcome"] == "ready"
    bad = [c for c in data["checks"] if not c["ok"]]
    assert [(c["check"], c["subject"], c["measured"], c["allowed"], c["line"], c["end_line"]) for c in bad] == [
        ("baseline", "weight_loading", 42.0, 21.6, 8, 11),
        ("baseline", "total", 58.0, 40.8, 1, 24),
    ]


def test_check_a_saved_report_against_a_baseline_log(logs: dict[str, Path]) -> None:
    assert run("check", str(logs["ready_json"]), "--baseline", str(logs["ready"])).returncode == 0
    result = run("check", str(logs["ready_json"]), "--baseline", str(logs["slow"]), "--tolerance", "0")
    assert result.returncode == 0, result.stdout  # faster than the baseline is fine


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max", "loading=5"], "unknown phase 'loading' (phases: launch, distributed_init,"),
        (["--max", "weight_loading"], "--max takes PHASE=SECONDS"),
        (["--max", "weight_loading=fast"], "not a number: 'fast'"),
        (["--cause", "oom"], "unknown cause 'oom' (causes: kv_cache_insufficient_memory,"),
        (["--outcome", "up"], "unknown outcome 'up'"),
        (["--max-total", "-5"], "must be a finite number >= 0"),
        (["--min-avail-mem", "lots"], "not a number"),
        (["--expect", "tp_size"], "--expect takes KEY=VALUE"),
        (["--tolerance", "0.1"], "--tolerance and --slack apply to --baseline"),
        (["--baseline", "/nonexistent/base.json"], "/nonexistent/base.json: no such file"),
        (["--since", "yesterday"], "--since: not a time"),
    ],
)
def test_check_usage_errors_are_one_line(logs: dict[str, Path], args: list[str], message: str) -> None:
    result = run("check", str(logs["ready"]), *args)
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"outcome": "ready"}', "JSON, but not a logphase report (no schema_version)"),
        (b'{"schema_version": 99}', "report schema_version 99, this logphase reads 1, 2"),
        (b'{"schema_version": 1, "source": "x"}', "not a valid logphase report: outcome: Field required"),
    ],
)
def test_bad_reports_are_input_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(content)
    for args in (["check", str(path)], ["compare", str(path), str(path)]):
        result = run(*args)
        err = result.stderr.decode()
        assert result.returncode == 2 and message in err and err.count("\n") == 1


def test_check_missing_file(tmp_path: Path) -> None:
    result = run("check", str(tmp_path / "missing.log"))
    assert result.returncode == 2 and result.stderr.decode().strip().endswith("missing.log: no such file")


def test_json_lines_log_is_still_a_log(tmp_path: Path) -> None:
    path = tmp_path / "jsonl.log"
    path.write_text('{"msg": "hello"}\n{"msg": "world"}\n')
    result = run("check", str(path), "--outcome", "starting")
    assert result.returncode == 0, (result.stdout, result.stderr)


# --- compare -------------------------------------------------------------------------------------


def test_compare_same_startup(logs: dict[str, Path]) -> None:
    result = run("compare", str(logs["ready_json"]), str(logs["ready"]))
    assert result.returncode == 0, result.stdout
    assert result.stdout.decode().splitlines()[-1].startswith("OK: outcome same, no phase slower than 1.2x the baseline")


def test_compare_slower_phase(logs: dict[str, Path]) -> None:
    result = run("compare", str(logs["ready"]), str(logs["slow"]))
    assert result.returncode == 1
    text = result.stdout.decode()
    assert "  weight_loading             18 s       42 s   2.33x  REGRESSED" in text
    assert "  config  mem_fraction_static: 0.85 -> 0.88" in text
    assert text.splitlines()[-1] == "REGRESSED: slower: weight_loading, total (tolerance 20%, slack 1 s)"
    assert run("compare", str(logs["ready"]), str(logs["slow"]), "--tolerance", "2").returncode == 0
    # the other way round it is faster
    back = run("compare", str(logs["slow"]), str(logs["ready"]))
    assert back.returncode == 0 and "0.43x  faster" in back.stdout.decode()


def test_compare_worse_outcome(logs: dict[str, Path]) -> None:
    result = run("compare", str(logs["ready"]), str(logs["failed"]), "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["outcome_verdict"] == "worse" and data["regressions"][0] == "outcome"
    assert data["new_cause"] == "kv_cache_insufficient_memory"
    verdicts = {d["phase"]: d["verdict"] for d in data["phases"]}
    assert verdicts["cuda_graph_capture"] == "only_in_baseline" and verdicts["total"] == "incomparable"
    assert {"key": "tp_size", "baseline": 2, "new": 1} in data["config_changes"]
    assert {"key": "min_avail_gb.weight_loading_end", "baseline": 20.0, "new": 5.0} in data["memory_changes"]
    # failed -> ready is better
    assert run("compare", str(logs["failed"]), str(logs["ready"])).returncode == 0


def test_compare_library() -> None:
    c = compare(parse_text(tp2_startup()), parse_text(slow_weights()), tolerance=0.5)
    assert c.regressed and c.regressions == ["weight_loading", "total"]
    assert [d.phase for d in c.phases][-1] == "total"


@pytest.mark.parametrize("args", [["--tolerance", "x"], ["--slack", "-1"]])
def test_compare_usage_errors(logs: dict[str, Path], args: list[str]) -> None:
    result = run("compare", str(logs["ready"]), str(logs["slow"]), *args)
    assert result.returncode == 2 and result.stderr.decode().count("\n") == 1


def test_compare_fixture_logs() -> None:
    logs = {p.name: p for p in fixture_logs()}
    result = run("compare", str(logs["tp1_success.log"]), str(logs["tp2_gloo_nccl_success.log"]), "--json")
    data = json.loads(result.stdout)
    assert result.returncode == (1 if data["regressions"] else 0)
    assert {"key": "tp_size", "baseline": 1, "new": 2} in data["config_changes"]
    assert data["outcome_verdict"] == "same"


# --- assert_startup ------------------------------------------------------------------------------


def test_assert_startup_accepts_path_report_text_and_bytes(logs: dict[str, Path]) -> None:
    text = logs["ready"].read_text()
    for value in (logs["ready"], str(logs["ready"]), logs["ready_json"], parse_text(text), text, text.encode()):
        report = assert_startup(value, max_durations={"weight_loading": 20}, expect={"tp_size": 2})
        assert isinstance(report, Report) and report.outcome == "ready"


def test_assert_startup_message_reads_like_check(logs: dict[str, Path]) -> None:
    with pytest.raises(AssertionError) as info:
        assert_startup(logs["ready"], max_durations={"weight_loading": 10}, min_avail_mem=8, expect={"mem_fraction_static": 0.88})
    cli = run(
        "check", str(logs["ready"]), "--max", "weight_loading=10", "--min-avail-mem", "8", "--expect", "mem_fraction_static=0.88"
    )
    assert str(info.value) + "\n" == cli.stdout.decode()


def test_assert_startup_failure_and_bad_arguments(logs: dict[str, Path]) -> None:
    with pytest.raises(AssertionError, match="got failed: kv_cache_insufficient_memory in memory_pool on TP0 at line 5"):
        assert_startup(logs["failed"])
    assert assert_startup(logs["failed"], cause="kv_cache_insufficient_memory").outcome == "failed"
    with pytest.raises(ValueError, match="unknown phase"):
        assert_startup(logs["ready"], max_durations={"loading": 1})
    with pytest.raises(FileNotFoundError):
        assert_startup(str(logs["ready"]) + ".missing")


def test_render_check_is_the_assertion_message() -> None:
    loaded = load(kv_failure())
    result = check(loaded, Expectations.build())
    assert render_check(result, loaded).startswith(
        "<text>: 1 of 1 expectation violated (FAILED in memory_pool after 21 s: kv_cache_insufficient_memory)"
    )


# --- the log follower ----------------------------------------------------------------------------


def write_slowly(path: Path, text: str, delay: float = 0.002) -> threading.Thread:
    """Write ``text`` a record at a time (a traceback in one write, as a server's logging does)."""

    def write() -> None:
        with open(path, "wb") as out:
            for record in records(text.encode().splitlines(keepends=True)):
                out.write(record)
                out.flush()
                time.sleep(delay)

    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_follower_waits_for_a_file_that_appears_later(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with LogFollower(log, poll_interval=0.02) as follower:
        assert follower.report().outcome == "starting"  # no file yet
        writer = write_slowly(log, tp2_startup())
        report = follower.wait_ready(timeout=30)
        writer.join()
    assert report.outcome == "ready" and report.phase is not None and report.phase.value == "ready"


def test_follower_fails_with_the_cause(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    follower = LogFollower(log, poll_interval=0.02, settle=0.1).start()
    write_slowly(log, kv_failure()).join()
    with pytest.raises(
        StartupFailed, match=r"server startup failed: kv_cache_insufficient_memory in memory_pool on TP0 at line 5"
    ):
        follower.wait_ready(timeout=30)
    assert follower.reported
    with pytest.raises(StartupFailed, match="hint: "):
        follower.check()
    assert follower.stop().outcome == "failed"


def test_follower_times_out(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup(ready=False))
    follower = LogFollower(log, poll_interval=0.02).start()
    started = time.monotonic()
    with pytest.raises(StartupFailed, match=r"not ready after 0.3 s: STARTING: in warmup for 1.0 s \(33 s since launch\)"):
        follower.wait_ready(timeout=0.3)
    assert time.monotonic() - started < 60  # the 0.3 s ended the wait (a loose bound: the machine may be loaded)
    follower.assert_startup(outcome="starting", max_durations={"weight_loading": 20})
    follower.stop()


def test_follower_stops_waiting_when_the_server_exits(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    source = tmp_path / "source.log"
    source.write_text(tp2_startup(ready=False))
    script = "import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2]); sys.exit(9)"
    server = subprocess.Popen([sys.executable, "-c", script, str(source), str(log)])
    follower = LogFollower(log, poll_interval=0.02, settle=0.1, process=server)
    started = time.monotonic()
    with pytest.raises(
        StartupFailed,
        match=r"the server exited with code 9 before it was ready: STARTING: in warmup for 1.0 s \(33 s since launch\)",
    ):
        follower.wait_ready(timeout=60)
    assert time.monotonic() - started < 30
    follower.stop()


def test_follower_restarts_on_a_replaced_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(kv_failure())
    follower = LogFollower(log, poll_interval=0.02)
    assert follower.poll().outcome == "failed"
    replacement = tmp_path / "new.log"
    replacement.write_text(tp2_startup())
    os.replace(replacement, log)
    assert follower.poll().outcome == "ready" and follower.restarts == 1
    log.write_text(tp2_startup(ready=False)[:200])  # truncated in place
    assert follower.poll().outcome == "starting" and follower.restarts == 2
    follower.stop()


def test_the_follower_thread_is_follow_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One follower: LogFollower reads through `logphase follow`'s own follow_file (to the end of
    the input), so rotation and truncation are handled in one place."""
    import logphase.testing as testing_module
    from logphase.faces.live.follow import follow_file

    calls: list[str] = []

    def spy(path: str, options: object, **kwargs: object) -> object:
        calls.append(getattr(options, "until", ""))
        return follow_file(path, options, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(testing_module, "follow_file", spy)
    log = tmp_path / "server.log"
    log.write_text(tp2_startup())
    with LogFollower(log, poll_interval=0.02) as follower:
        assert follower.poll().outcome == "ready"
    assert calls == ["eof"]


# --- --events against the schema, deterministic --json -------------------------------------------


EVENT = TypeAdapter(Event)


def sample_logs(tmp_path: Path) -> list[Path]:
    paths = list(fixture_logs())
    for name, text in (("ready", tp2_startup()), ("failed", kv_failure()), ("starting", tp2_startup(ready=False))):
        path = tmp_path / f"{name}.log"
        path.write_text(text)
        paths.append(path)
    return paths


def test_events_validate_against_the_schema(tmp_path: Path) -> None:
    for path in sample_logs(tmp_path):
        result = run("parse", str(path), "--events")
        assert result.returncode in (0, 1, 3), result.stderr
        lines = result.stdout.splitlines()
        assert lines, path
        for raw in lines:
            event = EVENT.validate_json(raw)
            assert event.line >= 1 and event.offset >= 0 and event.raw


def another_hash_seed() -> dict[str, str]:
    """The environment of a process whose string hashes differ from this one's (set and dict order
    with them): a fixed seed other than this process's."""
    return dict(os.environ, PYTHONHASHSEED="2" if os.environ.get("PYTHONHASHSEED") == "1" else "1")


def test_json_report_is_byte_identical(tmp_path: Path) -> None:
    paths = [str(p) for p in sample_logs(tmp_path)]
    # in another process, with another hash seed than this one: nothing may depend on set or dict order
    script = "import sys\nfrom logphase.faces.cli import main\nfor p in sys.argv[1:]:\n    main(['parse', p, '--json'])"
    together = run_process("-c", script, *paths, env=another_hash_seed()).stdout
    assert together == b"".join(run("parse", p, "--json").stdout for p in paths)
    assert together.count(b'"schema_version": 2') == len(paths)


def test_check_and_compare_json_are_byte_identical(logs: dict[str, Path]) -> None:
    for args in (
        ["check", str(logs["slow"]), "--baseline", str(logs["ready"]), "--json", "--min-avail-mem", "1"],
        ["compare", str(logs["ready"]), str(logs["failed"]), "--json"],
    ):
        assert run_process("-m", "logphase", *args, env=another_hash_seed()).stdout == run(*args).stdout


def test_usage_error_from_a_real_process(tmp_path: Path) -> None:
    result = run_process("-m", "logphase", "check", str(tmp_path / "x.log"), "--max", "loading=5")
    err = result.stderr.decode()
    assert result.returncode == 2 and err.startswith("logphase: unknown phase 'loading'") and err.count("\n") == 1


def test_max_total_of_a_failure_while_serving_is_the_time_to_ready() -> None:
    """Said 'failed after 44 s': 44 s is the time to ready; the failure came 10.7 min later."""
    text = (ROOT / "fixtures" / "logs" / "collective_timeout_serving.log").read_text()
    result = result_of(text, outcome="failed", max_total=30)
    total = next(c for c in result.checks if c.check == "max_total")
    assert (total.ok, total.measured) == (False, 44.0)
    assert total.message.startswith("max-total: ready after 44 s > allowed 30 s, then failed while serving (lines 1-")


def test_max_total_says_why_it_cannot_be_measured() -> None:
    """A window without its launch has no total (it said 'after 0.0 s'): check says why."""
    text = (ROOT / "fixtures" / "logs" / "vllm_window_worker_init_failed_0_11.log").read_text()
    total = next(c for c in result_of(text, outcome="failed", max_total=100).checks if c.check == "max_total")
    assert not total.ok and total.measured is None
    assert total.message.startswith("max-total: cannot be measured, no line of the run marks its launch")
