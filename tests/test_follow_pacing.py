"""One verdict whatever the speed: `follow` on a pipe gives the same phase, failure and outcome
records and the same exit code however its input is cut into reads and paced, and that exit code
is `parse`'s on the same bytes.

One pacing changes what is said on the way (never the exit code): a silence longer than the flush
timeout (1 s) inside a traceback. Follow then reports the traceback as it stands (the process may
have died in the middle of it), and, if it goes on and names another root cause, a revised
failure record: the last failure record is the summary's.

The pipe is simulated in-process (``follow_reads`` with a fake clock): a pause costs nothing, so a
pause of minutes (past the flush timeout of an open traceback, past a stall threshold) is as cheap
as none. One subprocess check keeps the real command honest.
"""

from __future__ import annotations

import functools
import itertools
import math
import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from logphase.engine.engine import Engine
from logphase.engine.whole import parse_bytes
from logphase.faces.exit_codes import OUTCOME_EXIT
from logphase.faces.live.follow import Follower, FollowOptions, follow_reads
from logphase.faces.live.follow_records import FollowRecord, SummaryRecord
from tests.conftest import fixture_logs
from tests.logs import kv_failure, tp2_startup

FIXTURES = {p.name: p.read_bytes() for p in fixture_logs()}
# pauses between reads, in seconds: none, short, past the 1 s flush timeout of an open traceback,
# past the stall thresholds of every phase
PAUSES = (0.0, 0.001, 0.3, 1.5, 200.0, 1000.0)
# a driver that asks for more reads than this without the input moving on is polling in a loop
MAX_READS = 20_000


class PacedPipe:
    """A pipe whose chunks arrive at set times on a fake clock; EOF after the last one."""

    def __init__(self, chunks: list[tuple[float, bytes]], pause_before_eof: float = 0.0) -> None:
        self.now = 0.0
        self.reads = 0
        self._arrivals: deque[tuple[float, bytes]] = deque()
        at = 0.0
        for pause, data in chunks:
            at += pause
            self._arrivals.append((at, data))
        self._eof_at = at + pause_before_eof

    def clock(self) -> float:
        return self.now

    def read(self, timeout: float) -> bytes | None:
        self.reads += 1
        assert self.reads < MAX_READS, "the driver polls without waiting"
        at, data = self._arrivals[0] if self._arrivals else (self._eof_at, b"")
        if at > self.now + timeout:
            # at least one step of the float: a deadline a rounding error away must come
            self.now = max(self.now + timeout, math.nextafter(self.now, math.inf))
            return None
        self.now = max(self.now, at)
        if self._arrivals:
            self._arrivals.popleft()
        return data


def follow_paced(chunks: list[tuple[float, bytes]], until: str = "outcome", pause_before_eof: float = 0.0) -> list[FollowRecord]:
    pipe = PacedPipe(chunks, pause_before_eof)
    return list(follow_reads(pipe.read, FollowOptions(until=until), "<pipe>", pipe.clock))


def verdicts(records: list[FollowRecord]) -> list[str]:
    """The records that carry the verdict, with what they say: phase entered, failure, outcome."""
    out = []
    for r in records:
        if r.kind == "phase":
            out.append(f"phase {r.phase.value}")
        elif r.kind == "failure":
            out.append(f"failure {r.failure.cause.value}")
        elif r.kind == "outcome":
            out.append(f"outcome {r.outcome}")
    return out


def exit_code(records: list[FollowRecord]) -> int:
    summary = records[-1]
    assert isinstance(summary, SummaryRecord)
    return summary.exit_code


@functools.cache
def quiet_offsets(name: str) -> frozenset[int]:
    """Where a server may fall silent for long: the ends of lines at which no traceback (or other
    multi-line record) is being read."""
    engine = Engine()
    offsets = {0}
    at = 0
    for line in FIXTURES[name].split(b"\n"):
        at += len(line) + 1
        engine.feed(line + b"\n")
        if not engine.has_open_records():
            offsets.add(at)
    return frozenset(offsets)


def cut(data: bytes, cuts: list[int], pauses: list[float], quiet: frozenset[int] | None = None) -> list[tuple[float, bytes]]:
    """``data`` in reads at ``cuts``, each after a pause from ``pauses``; with ``quiet``, a pause
    longer than the flush timeout only at those offsets (elsewhere a short one)."""
    bounds = [0, *sorted({c % (len(data) + 1) for c in cuts}), len(data)]
    chunks = []
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        if b > a:
            pause = pauses[i % len(pauses)] if pauses else 0.0
            chunks.append((pause if quiet is None or a in quiet or pause < 1.0 else 0.3, data[a:b]))
    return chunks


def last_failure(records: list[FollowRecord]) -> str | None:
    said = [v for v in verdicts(records) if v.startswith("failure")]
    return said[-1] if said else None


@given(
    name=st.sampled_from(sorted(FIXTURES)),
    cuts=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=10),
    pauses=st.lists(st.sampled_from(PAUSES), max_size=10),
    until=st.sampled_from(["outcome", "ready"]),
    pause_before_eof=st.sampled_from(PAUSES),
)
# vLLM's V1 engine enters capture (torch.compile) before the memory pool (the KV cache's sizing): a
# read that ends between the two gave the phases in another order than a whole read
@example(name="vllm_v1_clean_compile_0_11.log", cuts=[3726], pauses=[], until="outcome", pause_before_eof=0.0)
def test_same_records_and_exit_code_for_any_chunking_and_pacing(
    name: str, cuts: list[int], pauses: list[float], until: str, pause_before_eof: float
) -> None:
    data = FIXTURES[name]
    whole = follow_paced([(0.0, data)], until)
    paced = follow_paced(cut(data, cuts, pauses, quiet_offsets(name)), until, pause_before_eof)
    assert verdicts(paced) == verdicts(whole)
    assert exit_code(paced) == exit_code(whole)
    summary = paced[-1]
    assert isinstance(summary, SummaryRecord)
    # the summary never contradicts its exit code: it is the report's, or the message says why not
    assert summary.exit_code == OUTCOME_EXIT[summary.report.outcome] or "exit 0: ready was reached" in summary.message
    if until == "outcome":
        assert exit_code(paced) == OUTCOME_EXIT[parse_bytes(data).outcome]
    # silences anywhere, inside tracebacks too: the same exit code, and the last failure said is the summary's
    anywhere = follow_paced(cut(data, cuts, pauses), until, pause_before_eof)
    assert exit_code(anywhere) == exit_code(whole)
    assert last_failure(anywhere) == last_failure(whole)


# the ones whose verdict moves while they are read: tracebacks (one cut at EOF, one by a signal),
# a failure while serving, two runs, a window, and a success
LINE_BY_LINE = (
    "capture_wrapper_gloo.log",
    "cut_traceback_eof.log",
    "faulthandler_segfault.log",
    "kv_cache_insufficient.log",
    "ray_wrapped_oom.log",
    "stale_two_runs.log",
    "tp2_gloo_nccl_success.log",
    "window_serving.log",
)


@pytest.mark.parametrize("name", LINE_BY_LINE)
def test_line_by_line_with_long_pauses_agrees_with_parse(name: str) -> None:
    """Every fixture, one line per read, with a pause past the flush timeout wherever no traceback
    is open (and before every line, for the exit code and the last failure said): the slowest
    pacing there is, against the whole log in one read and against `parse`."""
    data = FIXTURES[name]
    lines = data.split(b"\n")
    bounds = [0]
    for line in lines:
        bounds.append(bounds[-1] + len(line) + 1)
    whole = follow_paced([(0.0, data)])
    slow = follow_paced(cut(data, bounds[1:-1], [1.5], quiet_offsets(name)))
    assert verdicts(slow) == verdicts(whole)
    assert exit_code(slow) == exit_code(whole) == OUTCOME_EXIT[parse_bytes(data).outcome]
    slowest = follow_paced(cut(data, bounds[1:-1], [1.5]))
    assert exit_code(slowest) == exit_code(whole)
    assert last_failure(slowest) == last_failure(whole)


def test_ready_then_failed_while_serving_exits_1_at_any_speed() -> None:
    """The issue's case: ready at one line, a failure while serving later. Fast or slow, the
    records say ready, then the failure, and the pipe exits 1, as `parse` does."""
    data = FIXTURES["ray_wrapped_oom.log"]
    assert parse_bytes(data).outcome == "failed"
    lines = data.splitlines(keepends=True)
    for chunks in ([(0.0, data)], [(0.5, line) for line in lines]):
        records = follow_paced(chunks)
        said = verdicts(records)
        assert said.index("outcome ready") < said.index("failure cuda_oom") < said.index("outcome failed")
        assert exit_code(records) == 1
        assert "FAILED while serving" in records[-1].message


def test_until_ready_is_success_even_if_serving_fails_later_and_says_so() -> None:
    data = FIXTURES["ray_wrapped_oom.log"]
    for chunks in ([(0.0, data)], [(0.5, line) for line in data.splitlines(keepends=True)]):
        records = follow_paced(chunks, until="ready")
        assert exit_code(records) == 0
        assert "exit 0: ready was reached before the failure" in records[-1].message


def test_until_ready_fails_when_the_failure_comes_first() -> None:
    records = follow_paced([(0.0, FIXTURES["kv_cache_insufficient.log"])], until="ready")
    assert exit_code(records) == 1


# -- no polling once the verdict is in -------------------------------------------------------------


def test_next_deadline_is_never_now_once_the_open_records_are_flushed() -> None:
    """A log that ends in a traceback (the server died): after the flush timeout the failure is
    reported, and then nothing is due until new input, however long the silence."""
    died = kv_failure().split("\n\n[2026-05-09 09:20:21]")[0] + "\n"  # no line after the traceback
    follower = Follower("x", FollowOptions(flush_timeout=1.0), now=0.0)
    records = follower.feed(died.encode(), 0.0)
    assert follower.engine.has_open_records()
    assert 0.0 < follower.next_deadline(0.5) <= 0.5
    records += follower.tick(1.0)
    assert "failure" in [r.kind for r in records] and follower.report.outcome == "failed"
    for now in (1.0, 2.0, 600.0, 86_400.0):
        assert follower.next_deadline(now) > 0.0
        assert follower.tick(now) == []


def test_next_deadline_after_ready_is_only_new_input() -> None:
    follower = Follower("x", FollowOptions(), now=0.0)
    follower.feed(tp2_startup().encode(), 0.0)
    assert follower.report.outcome == "ready"
    assert follower.next_deadline(10_000.0) == float("inf")


def test_a_stall_is_due_once_per_interval_while_starting() -> None:
    follower = Follower("x", FollowOptions(stall_after=10.0), now=0.0)
    follower.feed(tp2_startup(ready=False).encode(), 0.0)
    for now in (10.0, 20.0, 40.0, 80.0):
        assert follower.next_deadline(now) == 0.0
        assert [r.kind for r in follower.tick(now)] == ["stall"]
        assert follower.next_deadline(now) > 0.0


# -- a partial last line is read only at the end of the input ------------------------------------------


def test_partial_last_line_is_waited_for_while_the_input_is_open() -> None:
    """No flush timeout, no stall, no tick reads a line that has no newline yet: its rest may come."""
    text = tp2_startup().encode()
    last = text.rstrip(b"\n").rsplit(b"\n", 1)[1]  # "... The server is fired up and ready to roll!"
    head = text[: len(text) - len(last) - 1]
    follower = Follower("x", FollowOptions(flush_timeout=1.0), now=0.0)
    follower.feed(head, 0.0)
    follower.feed(last[:10], 1.0)
    lines_before = follower.report.lines.total
    for now in (2.0, 100.0, 5000.0):
        follower.tick(now)
    waiting = follower.report
    assert waiting.outcome != "ready" and waiting.lines.total == lines_before
    # the rest of the line comes: the engine was not finished (feeding would raise)
    records = follower.feed(last[10:] + b"\n", 6000.0)
    assert "outcome" in [r.kind for r in records] and follower.report.outcome == "ready"


def test_partial_last_line_is_read_at_eof_of_a_pipe() -> None:
    """At EOF the partial last line is read as a line (it is counted, whatever it says)."""
    text = tp2_startup().encode().rstrip(b"\n")
    records = follow_paced([(0.0, text[:-20]), (5000.0, text[-20:])], pause_before_eof=5000.0)
    with_newline = follow_paced([(0.0, text + b"\n")])
    assert records[-1].report.lines.total == with_newline[-1].report.lines.total  # type: ignore[union-attr]


# -- the real command, once -----------------------------------------------------------------------------


def test_cat_into_follow_exits_as_parse_on_ready_then_failed(tmp_path: Path) -> None:
    log = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "ray_wrapped_oom.log"
    follow = subprocess.run(
        [sys.executable, "-m", "logphase", "follow", "--json"], input=log.read_bytes(), capture_output=True, timeout=120
    )
    parse = subprocess.run([sys.executable, "-m", "logphase", "parse", str(log)], capture_output=True, timeout=120)
    assert follow.returncode == parse.returncode == 1
    assert b'"exit_code":1' in follow.stdout.splitlines()[-1]
