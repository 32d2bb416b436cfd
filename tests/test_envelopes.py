"""Envelopes and windows: a log reads the same whatever other programs put around its lines, and
from wherever it starts (issue: recognise SGLang by what it says).

* envelope invariance: wrapping every line of a fixture in any envelope, per writer or a random
  mix per line, keeps the outcome, phase, cause, cause line and ranks; envelopes without a time
  keep the durations too;
* window invariance: a suffix of a fixture that still holds the lines deciding its phase (and its
  failure) gives the same phase, outcome and cause, and says partial_log when the launch was cut.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logphase import parse_bytes
from logphase.reading.clock import LogClock
from logphase.reading.envelope import split_envelope
from logphase.reporting.report import Report
from logphase.vocabulary.phases import Phase
from tests.conftest import fixture_logs

FIXTURES = {p.name: p.read_bytes() for p in fixture_logs()}
_STAMP = re.compile(rb"\[(?:\d{4}-\d{2}-\d{2} )?(\d{2}):(\d{2}):(\d{2})(?P<tags>(?: [A-Z_]+\d+)*)\]")
_TORCH = re.compile(rb"\[(rank\d+)\]:")


def report_of(data: bytes) -> Report:
    return parse_bytes(data, source="x")


@functools.cache
def whole_report(name: str) -> Report:
    """The report on a whole fixture, read once: properties compare thousands of variants with it."""
    return report_of(FIXTURES[name])


def shape(r: Report, durations: bool) -> dict[str, object]:
    f = r.failure
    out: dict[str, object] = {
        "outcome": r.outcome,
        "phase": r.phase,
        "cause": f.cause if f else None,
        "cause_line": f.line if f else None,
        "ranks": r.ranks,
        "phases": [p.name for p in r.phases],
    }
    if durations:
        out["durations"] = [p.duration_s for p in r.phases]
        out["total"] = r.total_startup_s
    return out


# -- each envelope, as its program writes it --------------------------------------------------------

Wrap = Callable[[bytes, str, float], bytes]  # (line, writer, seconds since the start) -> wrapped line


def _hms(seconds: float) -> tuple[int, int, int]:
    """The wrapper's clock: SGLang's time of day two hours on (another zone than the server's)."""
    whole = int(seconds)
    return (whole // 3600 + 2) % 24, whole // 60 % 60, whole % 60


def _day(seconds: float) -> int:
    """The wrapper's day of November: a log that runs past midnight runs into the next day."""
    return 29 + (int(seconds) // 3600 + 2) // 24


def _iso(seconds: float) -> str:
    h, m, s = _hms(seconds)
    return f"2026-11-{_day(seconds):02d}T{h:02d}:{m:02d}:{s:02d}.{int(seconds % 1 * 1e9):09d}Z"


TIMELESS: dict[str, Wrap] = {
    "kubectl --prefix": lambda line, w, t: b"[pod/sglang-%s/server] " % w.encode() + line,
    "docker compose": lambda line, w, t: b"sglang-%s-1  | " % w.encode() + line,
    "compose v1": lambda line, w, t: b"proj_sglang_1 | " + line,
    "ray actor": lambda line, w, t: b"(SGLangEngine pid=%d, ip=10.0.0.5) " % (4000 + len(w)) + line,
    "ray pid": lambda line, w, t: b"(pid=%d) " % (4000 + len(w)) + line,
    "raylet": lambda line, w, t: b"(raylet) " + line,
    "srun --label": lambda line, w, t: b"%d: " % len(w) + line,
    "mpirun --tag-output": lambda line, w, t: b"[1,%d]<stderr>:" % len(w) + line,
    "markdown quote": lambda line, w, t: b"> " + line,
    "logging basicConfig": lambda line, w, t: b"INFO:launcher:" + line,
}
TIMED: dict[str, Wrap] = {
    "docker logs -t": lambda line, w, t: _iso(t).encode() + b" " + line,
    "kubectl --timestamps --prefix": lambda line, w, t: _iso(t).encode() + b" [pod/sglang-0/server] " + line,
    "github actions": lambda line, w, t: _iso(t)[:-4].encode() + b"Z " + line,
    "journald short-precise": lambda line, w, t: (
        b"Nov %02d %02d:%02d:%02d.%06d gpu-host-3 sglang[4242]: " % (_day(t), *_hms(t), int(t % 1 * 1e6)) + line
    ),
    "journald short-iso": lambda line, w, t: (
        b"2026-11-%02dT%02d:%02d:%02d+0000 gpu-host-3 sglang[4242]: " % (_day(t), *_hms(t)) + line
    ),
    "host python logging": lambda line, w, t: (
        b"2026-11-%02d %02d:%02d:%02d,%03d - harness - INFO - " % (_day(t), *_hms(t), int(t % 1 * 1000)) + line
    ),
    "mpirun --timestamp-output": lambda line, w, t: (
        b"Mon Nov %02d %02d:%02d:%02d 2026[1,0]<stderr>:" % (_day(t), *_hms(t)) + line
    ),
}


def writers(log: bytes) -> list[tuple[bytes, str, float]]:
    """Each physical line with its writer (rank tags, torchrun's rank, or the writer of the line
    before it: a traceback's lines are its writer's) and its time in seconds (the last stamp's)."""
    out: list[tuple[bytes, str, float]] = []
    first = _STAMP.search(log)
    writer = "main"
    seconds = int(first.group(1)) * 3600 + int(first.group(2)) * 60 + int(first.group(3)) if first else 0.0
    # physical lines end at "\n" only: a wrapper stamps what follows a newline, not a bar's "\r" redraw
    for line in re.findall(rb"[^\n]*\n|[^\n]+$", log):
        m = _STAMP.search(line, 0, 160)  # after the envelope a fixture may already have
        t = _TORCH.match(line)
        if m:
            writer = (m.group("tags").strip() or b"main").decode()
            clock = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
            day = seconds // 86400 * 86400
            seconds = day + clock if day + clock > seconds - 43200 else day + 86400 + clock  # past midnight
        elif t:
            writer = t.group(1).decode()
        out.append((line, writer.replace(" ", "-").lower(), seconds))
    return out


def wrap(log: bytes, pick: Callable[[str], Wrap]) -> bytes:
    out = []
    for line, writer, seconds in writers(log):
        body = line.rstrip(b"\r\n")
        end = line[len(body) :]
        out.append(pick(writer)(body, writer, seconds) + end)
    return b"".join(out)


@pytest.mark.parametrize("kind", [*TIMELESS, *TIMED])
def test_each_envelope_is_peeled(kind: str) -> None:
    envelope = {**TIMELESS, **TIMED}[kind]
    line = b"[2026-05-09 09:20:26 TP1] Load weight begin. avail mem=47.00 GB"
    env = split_envelope(envelope(line, "tp1", 60.5).decode())
    assert env.message == "Load weight begin. avail mem=47.00 GB" and env.rank == "TP1"
    assert LogClock().of(env) == "2026-05-09T09:20:26"  # SGLang's own stamp wins
    frame = b'  File "/sgl/srt/model_executor/model_runner.py", line 412, in load_model'
    env = split_envelope(envelope(frame, "tp1", 60.5).decode())
    assert env.message == frame.decode() and not env.stamped
    if kind in TIMED:
        assert env.outer is not None and env.outer.time.startswith("02:01:00")


@pytest.mark.parametrize("name", FIXTURES)
@given(kind=st.sampled_from(sorted(TIMELESS)), per_writer=st.booleans())
def test_envelope_invariance_timeless(name: str, kind: str, per_writer: bool) -> None:
    log = FIXTURES[name]
    kinds = sorted(TIMELESS)
    rng = random.Random(f"{name}{kind}")
    # one envelope for the whole file, or one per writer (pods, Ray workers, srun tasks)
    chosen: dict[str, Wrap] = {}

    def pick(writer: str) -> Wrap:
        if not per_writer:
            return TIMELESS[kind]
        return chosen.setdefault(writer, TIMELESS[rng.choice(kinds)])

    assert shape(report_of(wrap(log, pick)), durations=True) == shape(whole_report(name), durations=True)


@pytest.mark.parametrize("name", FIXTURES)
@given(kind=st.sampled_from(sorted(TIMED)))
def test_envelope_invariance_timed(name: str, kind: str) -> None:
    log = FIXTURES[name]
    assert shape(report_of(wrap(log, lambda w: TIMED[kind])), durations=False) == shape(whole_report(name), durations=False)


@pytest.mark.parametrize("name", FIXTURES)
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(sorted(TIMELESS)))
def test_envelope_invariance_mixed_lines(name: str, seed: int, kind: str) -> None:
    """A file that mixes wrapped and plain lines (files joined, a launcher that wraps some writes):
    the same verdict. A write (a line and the unstamped lines after it, such as a logged
    traceback) is wrapped whole or not at all, as a wrapper wraps what one process writes."""
    log = FIXTURES[name]
    rng = random.Random(seed)
    out: list[bytes] = []
    wrapped, previous = False, ""
    for line, writer, seconds in writers(log):
        # a new write: a stamped line, or the first of a run of one torchrun rank's lines
        if _STAMP.match(line) or (_TORCH.match(line) and writer != previous):
            wrapped = rng.random() < 0.5
        previous = writer
        body = line.rstrip(b"\r\n")
        out.append((TIMELESS[kind](body, writer, seconds) if wrapped else body) + line[len(body) :])
    assert shape(report_of(b"".join(out)), durations=False) == shape(whole_report(name), durations=False)


# -- windows ---------------------------------------------------------------------------------------


def deciding_lines(r: Report) -> list[int]:
    """The lines a window must keep to show what the whole log shows."""
    lines: list[int] = []
    if r.failure is not None:
        lines.append(r.failure.line)
        failing = next((p for p in r.phases if p.name == r.failure.phase), None)
        if failing is not None and failing.first_line is not None:
            lines.append(failing.first_line)
        else:
            lines.append(r.run_start_line)  # the phase comes from the failure's frames, wherever they start
    else:
        furthest = next((p for p in r.phases if p.name == r.phase), None)
        if furthest is not None and furthest.first_line is not None:
            lines.append(furthest.first_line)
    return lines


def launch_line(log: bytes) -> int | None:
    for number, line in enumerate(log.split(b"\n"), 1):
        if b"server_args=" in line:
            return number
    return None


# A vLLM log whose last lines are uvicorn's alone, without a prefix (V0: uvicorn prints bare lines;
# V1 prefixes them with '(APIServer pid=N)', which names vLLM, and a V0 log that goes on serving
# prints vLLM's own request lines after them): a window of those lines names no server, and what
# they mean depends on it (uvicorn's start-up is vLLM's ready, SGLang's warmup, which ends at its own
# 'fired up' line). Such windows are ambiguous by nature: test_a_window_of_bare_uvicorn_lines_names_no_server
# says what logphase reports for them; the property draws its windows before that tail.
def bare_uvicorn_tail(log: bytes) -> int:
    """The first line of the log's tail of bare uvicorn lines ('INFO:     ...')."""
    lines = log.rstrip(b"\n").split(b"\n")
    first = len(lines) + 1
    while first > 1 and lines[first - 2].startswith(b"INFO:     "):
        first -= 1
    return first


def test_a_window_of_bare_uvicorn_lines_names_no_server() -> None:
    """Uvicorn's start-up alone: no server is named, logphase reports what it means for the server
    it reads by default (SGLang: warmup, still starting), and --server vllm makes it vLLM's ready."""
    log = FIXTURES["vllm_v0_tp4_ray_0_6.log"]
    start = bare_uvicorn_tail(log)
    window = b"\n".join(log.split(b"\n")[start - 1 :])
    assert window.count(b"\n") == 4 and b"Application startup complete" in window
    part = report_of(window)
    assert (part.server, part.outcome, part.phase) == (None, "starting", Phase.WARMUP)
    told = parse_bytes(window, source="x", server="vllm")
    assert (told.server, told.outcome, told.phase) == ("vllm", whole_report("vllm_v0_tp4_ray_0_6.log").outcome, Phase.READY)
    # one line before the tail (vLLM's route list) names the server: the window is read as the whole log
    wider = report_of(b"\n".join(log.split(b"\n")[start - 2 :]))
    assert (wider.server, wider.outcome, wider.phase) == ("vllm", "ready", Phase.READY)


@pytest.mark.parametrize("name", [n for n, b in FIXTURES.items() if b.endswith(b"\n")])
@given(data=st.data())
def test_window_invariance(name: str, data: st.DataObject) -> None:
    log = FIXTURES[name]
    full = whole_report(name)
    keep = min(deciding_lines(full), default=None)
    if keep is None:
        return
    # the last run only: a window that starts in an earlier run is a window on a file of several runs
    first = max(full.run_start_line, 1)
    # a window of the bare uvicorn lines a log ends with names no server: it is no window of the
    # server's (test_a_window_of_bare_uvicorn_lines_names_no_server; vLLM's and TensorRT-LLM's
    # front ends are uvicorn's)
    keep = max(first, min(keep, bare_uvicorn_tail(log) - 1))
    start = data.draw(st.integers(first, keep), label="window starts at line")
    lines = log.split(b"\n")
    window = b"\n".join(lines[start - 1 :])
    part = report_of(window)
    assert (part.outcome, part.phase) == (full.outcome, full.phase)
    assert (part.failure.cause if part.failure else None) == (full.failure.cause if full.failure else None)
    launch = launch_line(b"\n".join(lines[first - 1 :]))
    # each node of a multi-node launch prints its own server_args: the launch is cut once none is left
    if launch is not None and start > first + launch - 1 and b"server_args=" not in window:
        assert "partial_log" in {w.kind for w in part.warnings}
        assert part.total_startup_s is None
    if start == first and full.runs == 1:
        assert ("partial_log" in {w.kind for w in part.warnings}) == ("partial_log" in {w.kind for w in full.warnings})


def test_a_window_of_serving_lines_is_ready_without_a_total() -> None:
    window = b"".join(
        b"[2026-05-09 10:%02d:00 TP0] Decode batch, #running-req: 12, #token: 3400, token usage: 0.01, "
        b"gen throughput (token/s): 300.10, #queue-req: 0\n" % m
        for m in range(5)
    )
    r = report_of(window)
    assert (r.outcome, r.phase, r.total_startup_s) == ("ready", Phase.READY, None)
    assert [w.kind for w in r.warnings] == ["partial_log"]
