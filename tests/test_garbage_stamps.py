"""Issue 18, point 2: nothing in a line can crash the reader. A stamp-shaped prefix that makes no
valid time (month 84, day 00, hour 25, Feb 30, minute 61) is text: the line is still read, its time
is inherited from the line before, and the report counts it (an ``invalid_timestamp`` warning).

The property damages the stamps of every fixture (digits replaced at random by other digits) and
reads them through the line path and the bulk path; a few damaged logs go through every command.
"""

from __future__ import annotations

import functools
import math
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase import Engine
from logphase.engine.whole import parse_bytes
from logphase.reporting.report import Report
from tests.conftest import fixture_logs
from tests.logs import fed_in_chunks, tp2_startup

FIXTURES = fixture_logs()
FIXTURE_BYTES = {p.name: p.read_bytes() for p in FIXTURES}
ids = [p.stem for p in FIXTURES]

# every kind of stamp the fixtures carry: dated (SGLang, docker, kubectl, CI, host loggers), time
# of day, PyTorch's glog ("E0130 18:11:34"), journald ("Nov 30 12:00:00"), vLLM's ("04-06 14:51:04")
_STAMPS = re.compile(
    rb"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?"
    rb"|(?<=[IWEF])\d{3,4} \d\d:\d\d:\d\d"
    rb"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d"
    rb"|\d\d-\d\d \d\d:\d\d:\d\d"
    rb"|(?<=\[)\d\d:\d\d:\d\d"
)


def stamp_digits(log: bytes) -> list[int]:
    """Positions of the digits inside the log's stamps."""
    return [m.start() + i for m in _STAMPS.finditer(log) for i, c in enumerate(m.group()) if 0x30 <= c <= 0x39]


def damaged(log: bytes, rng: random.Random, count: int) -> bytes:
    """``log`` with ``count`` digits of its stamps replaced by other digits."""
    out = bytearray(log)
    digits = stamp_digits(log)
    for pos in rng.sample(digits, min(count, len(digits))):
        out[pos] = rng.choice([d for d in b"0123456789" if d != out[pos]])
    return bytes(out)


def assert_conserved(r: Report) -> None:
    lines = r.lines
    assert lines.total == lines.events + lines.unrecognized + lines.blank + lines.ignored + lines.truncated


def read_both_ways(log: bytes) -> tuple[Report, Report]:
    """The report through the line path (events collected) and through the bulk path."""
    return fed_in_chunks(Engine(source="x"), log), parse_bytes(log, source="x")


def invalid_warning(r: Report) -> str | None:
    found = [w for w in r.warnings if w.kind == "invalid_timestamp"]
    assert len(found) <= 1
    return found[0].message if found else None


# -- each kind of stamp --------------------------------------------------------------------------


GOOD = "[2026-05-09 09:20:00] Init torch distributed begin.\n"
LOAD = "[2026-05-09 09:20:10] Load weight begin. avail mem=47.00 GB\n"


@pytest.mark.parametrize(
    "bad",
    ["2026-84-18 13:17:24", "2026-05-00 09:20:05", "2026-05-09 25:20:05", "2026-02-30 09:20:05", "2026-05-09 09:61:05",
     "2026-05-09 09:20:61", "2026-05-09 25:20:05.123", "0000-05-09 09:20:05", "2025-02-29 09:20:05"],
)
def test_sglang_stamp_that_is_no_time_is_text(bad: str) -> None:
    log = (GOOD + f"[{bad}] Load weight begin. avail mem=47.00 GB\n").encode()
    line, bulk = read_both_ways(log)
    for r in (line, bulk):
        assert r.lines.total == 2 and r.lines.events == 2  # the line is still read as its message
        assert r.phase == "weight_loading"
        [phase] = [p for p in r.phases if p.name == "weight_loading"]
        assert phase.start == "2026-05-09T09:20:00"  # inherited from the line before
        message = invalid_warning(r)
        assert message is not None and bad in message and "1 line " in message
        assert [w.line for w in r.warnings if w.kind == "invalid_timestamp"] == [2]


def test_feb_29_of_a_leap_year_is_a_time() -> None:
    r = parse_bytes(b"[2028-02-29 09:20:00] Init torch distributed begin.\n")
    assert invalid_warning(r) is None
    assert r.phases[0].start == "2028-02-29T09:20:00"


@pytest.mark.parametrize(
    "line",
    [
        "2026-13-09T09:20:05.123456789Z Load weight begin. avail mem=47.00 GB",  # docker -t, kubectl --timestamps
        "2026-05-09T24:20:05+00:00 Load weight begin. avail mem=47.00 GB",
        "Feb 30 09:20:05 host sglang[42]: Load weight begin. avail mem=47.00 GB",  # journald
        "2026-05-09T09:20:05.123+0100 host sglang[42]: Load weight begin. avail mem=47.00 GB",  # fine: a control
        "[2026-05-09 09:20:05 TP0] Load weight begin. avail mem=47.00 GB",  # fine: a control
        "[09:75:05 TP0] Load weight begin. avail mem=47.00 GB",  # a time of day
    ],
)
def test_wrapper_and_clock_stamps(line: str) -> None:
    r = parse_bytes((GOOD + line + "\n").encode())
    assert r.phase == "weight_loading" and r.lines.events == 2
    bad = re.search(r"13-09T|T24:|Feb 30|09:75", line)
    assert (invalid_warning(r) is not None) == (bad is not None)
    for p in r.phases:
        assert p.start is not None and p.start >= "2026-05-09"


def test_glog_stamp_with_month_13_keeps_the_time_before() -> None:
    log = (
        b"[2026-05-09 09:20:00] Init torch distributed begin.\n"
        b"[E1330 18:11:34.707542570 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
        b"WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
    )
    line, bulk = read_both_ways(log)
    for r in (line, bulk):
        assert r.outcome == "failed" and r.failure is not None
        assert r.failure.ts == "2026-05-09T09:20:00"
        assert invalid_warning(r) is not None


def test_served_log_with_a_bad_stamp_in_the_bulk_path() -> None:
    """Thousands of batch lines (the bulk path's plain runs) with one stamp damaged in the middle,
    and quiet (unrecognised) SGLang lines likewise."""
    batch = "[2026-05-09 09:21:{:02d} TP0] Decode batch, #running-req: 1, #token: 100, token usage: 0.00, gen throughput (token/s): 50.00, #queue-req: 0,\n"
    quiet = "[2026-05-09 09:22:{:02d}] Key abc already exists. Skipped.\n"
    body = [batch.format(i % 60) for i in range(3000)] + [quiet.format(i % 60) for i in range(3000)]
    body[1500] = body[1500].replace("09:21:", "09:71:")
    body[4500] = body[4500].replace("2026-05-09", "2026-02-31")
    log = (tp2_startup() + "".join(body)).encode() * 1
    full = parse_bytes(log)
    assert full.outcome == "ready"
    assert full.lines.total == tp2_startup().count("\n") + 6000
    message = invalid_warning(full)
    assert message is not None and "2 lines" in message
    by_line = fed_in_chunks(Engine(source="x"), log)
    assert by_line.lines == full.lines and invalid_warning(by_line) == message


# -- the property ---------------------------------------------------------------------------------


@functools.cache
def whole_lines(name: str) -> tuple[int, int]:
    lines = parse_bytes(FIXTURE_BYTES[name], source="x").lines
    return lines.total, lines.physical


# a fifth of the profile's examples a fixture (at least 3): 45 fixtures, each example a whole parse
@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
@settings(max_examples=max(3, settings.default.max_examples // 5))
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 40), line_path=st.booleans())
def test_damaged_stamps_never_crash_and_lose_no_line(name: str, seed: int, count: int, line_path: bool) -> None:
    log = FIXTURE_BYTES[name]
    total, physical = whole_lines(name)
    bad = damaged(log, random.Random(seed), count)
    # the line path (events collected) or the bulk path (runs of plain and quiet lines)
    r = fed_in_chunks(Engine(source="x"), bad) if line_path else parse_bytes(bad, source="x")
    assert_conserved(r)
    assert r.lines.total == total
    assert r.lines.physical == physical
    assert r.outcome in ("ready", "failed", "starting")
    for p in r.phases:
        assert p.duration_s is None or math.isfinite(p.duration_s)


# -- every command --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def damaged_logs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A handful of damaged fixtures, made once (each command below is a process: slow)."""
    folder = tmp_path_factory.mktemp("damaged")
    rng = random.Random(18)
    names = ["tp1_success.log", "kv_cache_insufficient.log", "docker_timestamps.log", "journald_unit.log", "nccl_error.log"]
    out = []
    for name in names:
        path = folder / name
        path.write_bytes(damaged(FIXTURE_BYTES[name], rng, 60))
        out.append(path)
    return out


def run_cli(*args: str, stdin: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "logphase", *args]
    if stdin is None:
        return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)
    with open(stdin, "rb") as source:
        return subprocess.run(command, stdin=source, capture_output=True, text=True, timeout=120, check=False)


def test_every_command_reads_damaged_stamps(damaged_logs: list[Path], tmp_path: Path) -> None:
    logs = [str(p) for p in damaged_logs]
    calls = [
        ("parse", "--json", *logs),
        ("parse", "--merge", *logs[:2]),
        ("check", "--outcome", "ready", *logs),
        ("report", logs[1], "-o", str(tmp_path / "page.html")),
    ]
    for args in calls:
        done = run_cli(*args)
        assert done.returncode in (0, 1, 3), (args, done.stderr)
        assert "Traceback" not in done.stderr, (args, done.stderr)
    follow = run_cli("follow", "--until", "eof", "--timeout", "60", "-", stdin=damaged_logs[1])
    assert follow.returncode in (0, 1, 3), follow.stderr
    assert "Traceback" not in follow.stderr
    assert "invalid_timestamp" in run_cli("parse", "--json", logs[0]).stdout
