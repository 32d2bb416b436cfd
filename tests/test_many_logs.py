"""Several independent logs at once (`parse A B ...`, `check A B ...`): one result per log in the order
given, read in parallel, an unreadable file reported and skipped, the worst verdict as exit code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from logphase import parse_file
from logphase.faces.batch import worst_exit
from tests.conftest import FIXTURES


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "logphase", *args], capture_output=True, timeout=120)


SAMPLES = ["tp1_success.log", "kv_cache_insufficient.log", "silent_weight_load.log", "tp2_gloo_nccl_success.log"]


@pytest.fixture(scope="module")
def two_hundred(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """200 logs (the samples, each renamed many times, in a shuffled-looking order) and one bad name."""
    folder = tmp_path_factory.mktemp("archive")
    paths: list[Path] = []
    for i in range(200):
        sample = SAMPLES[(i * 7) % len(SAMPLES)]
        path = folder / f"run-{199 - i:03d}-{sample}"
        path.write_bytes((FIXTURES / sample).read_bytes())
        paths.append(path)
    return paths


def test_two_hundred_logs_in_order_with_one_bad_file(two_hundred: list[Path]) -> None:
    names = [str(p) for p in two_hundred]
    missing = str(two_hundred[0].parent / "gone.log")
    names.insert(57, missing)
    done = run("parse", "--jobs", "2", *names)
    lines = done.stdout.decode().splitlines()
    # one headline per readable log, in argument order, then the count
    assert [line.split(": ", 1)[0] for line in lines[:-1]] == [n for n in names if n != missing]
    assert lines[-1] == "201 logs: 100 ready, 50 failed, 50 starting, 1 unreadable"
    assert done.stderr.decode().strip() == f"logphase: {missing}: no such file"
    assert done.returncode == 1  # the worst verdict: a failed start-up


def test_json_lines_carry_each_source_in_order(two_hundred: list[Path]) -> None:
    names = [str(p) for p in two_hundred[:40]]
    done = run("parse", "--json", "-j", "3", *names)
    reports = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [r["source"] for r in reports] == names
    # each is the same report a single parse gives
    assert reports[1] == orjson.loads(run("parse", "--json", names[1]).stdout)


def test_the_exit_code_is_the_worst_verdict(tmp_path: Path) -> None:
    ready, starting = FIXTURES / "tp1_success.log", FIXTURES / "silent_weight_load.log"
    assert run("parse", str(ready), str(ready)).returncode == 0
    assert run("parse", str(ready), str(starting)).returncode == 3
    # nothing failed or starting, but one file could not be read: the batch is not all right
    assert run("parse", str(ready), str(tmp_path)).returncode == 2
    assert worst_exit([0, 2, 3, 1, 0]) == 1 and worst_exit([0, 2]) == 2 and worst_exit([]) == 0


def test_one_job_and_several_jobs_agree(two_hundred: list[Path]) -> None:
    names = [str(p) for p in two_hundred[:24]]
    assert run("parse", "-j", "1", *names).stdout == run("parse", "-j", "4", *names).stdout


def test_check_takes_several_logs(tmp_path: Path) -> None:
    ready, failed = FIXTURES / "tp1_success.log", FIXTURES / "kv_cache_insufficient.log"
    done = run("check", str(ready), str(failed), "--outcome", "ready", "--json")
    results = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [(r["source"], r["ok"]) for r in results] == [(str(ready), True), (str(failed), False)]
    assert done.returncode == 1
    text = run("check", str(ready), str(ready), "--max-total", "600").stdout.decode()
    assert text.splitlines()[-1] == "2 logs: 2 passed, 0 failed"


def test_standard_input_cannot_join_other_files() -> None:
    done = run("parse", "-", str(FIXTURES / "tp1_success.log"))
    assert done.returncode == 2 and b"standard input" in done.stderr and b"Traceback" not in done.stderr


def test_a_single_log_still_gets_the_full_report() -> None:
    done = run("parse", str(FIXTURES / "kv_cache_insufficient.log"))
    assert b"hint" in done.stdout and done.returncode == 1
    assert parse_file(FIXTURES / "kv_cache_insufficient.log").outcome == "failed"
