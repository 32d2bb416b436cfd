"""No cliffs: on generated inputs of the shapes that once cost far more per MB than a served log (many
tracebacks, lines of 64 KiB, random bytes after a real log, debug chatter), twice the input costs about
twice the work. Work is counted, not timed (no test depends on wall-clock speed): the Python function
calls of a parse (cProfile's count), after a parse of the same input has built what a start builds. A
cost that grows with the square of the input (a buffer searched again from its start at each line, a
record that keeps every line it saw) shows as a ratio near 4; a generous bound (2.6) leaves room for
what varies per block. Work inside a regular expression is not counted so: bench/cliffs.py
measures the same inputs in seconds per MB, against a served log's."""

from __future__ import annotations

import cProfile
import pstats
import random
from collections.abc import Callable

import pytest

from logphase.engine.whole import parse_bytes
from tests.conftest import FIXTURES

_TRACEBACK = (
    "[2026-01-01 10:00:{s:02d} TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/site-packages/sglang/srt/managers/scheduler.py", line 2400, in run_scheduler_process\n'
    "    scheduler.event_loop_normal()\n"
    '  File "/usr/lib/python3/site-packages/sglang/srt/managers/scheduler.py", line 700, in event_loop_normal\n'
    "    result = self.run_batch(batch)\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)


def tracebacks(n: int) -> bytes:
    return "".join(_TRACEBACK.format(s=i % 60) for i in range(n)).encode()


def long_lines(n: int) -> bytes:
    """Lines of 64 KiB of text no grammar knows, each with an SGLang prefix."""
    body = ("abcdefgh " * 7282)[:65536 - 40]
    return "".join(f"[2026-01-01 10:00:{i % 60:02d}] {body}\n" for i in range(n)).encode()


def random_after_log(n: int) -> bytes:
    """Real start-ups (a fixture, over 64 KiB of it: the command line's check for binary data reads
    that much), then ``n`` KiB of random bytes (seeded)."""
    fixture = (FIXTURES / "tp2_gloo_nccl_success.log").read_bytes()
    head = fixture * (1 + (96 << 10) // len(fixture))
    return head + random.Random(7).randbytes(n * 1024)


def chatter(n: int) -> bytes:
    """SGLang debug output, as the realworld log 012 is full of (hashes of cached keys)."""
    rng = random.Random(3)
    return "".join(
        f"[2026-01-01 10:{i // 3600 % 60:02d}:{i // 60 % 60:02d}] Key {rng.getrandbits(256):064x} already exists. Skipped.\n"
        for i in range(n)
    ).encode()


SHAPES: dict[str, tuple[Callable[[int], bytes], int]] = {
    # shape -> (generator, size of the measured input: its double is measured too)
    "tracebacks": (tracebacks, 400),
    "long_lines": (long_lines, 48),
    "random_after_log": (random_after_log, 1024),
    "chatter": (chatter, 20000),
}


def calls(data: bytes) -> int:
    profile = cProfile.Profile()
    profile.enable()
    parse_bytes(data)
    profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


@pytest.mark.parametrize("shape", SHAPES)
def test_twice_the_input_is_about_twice_the_work(shape: str) -> None:
    make, size = SHAPES[shape]
    parse_bytes(make(size))  # what a start builds, built (some of it only for an input over 1 MB)
    once, twice = calls(make(size)), calls(make(2 * size))
    # no lower bound: lines counted in bulk (chatter, long lines) cost calls per block, not per line
    assert twice <= 2.6 * once, f"{shape}: {once} calls, then {twice} for twice the input"
