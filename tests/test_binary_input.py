"""Bytes that are no log text (a binary blob in the middle of a log, random bytes, random text):
the bulk path counts junk lines a run at a time (lines.LineSplitter._between_runs, plain.junk_line)
and must give the report that reading every line gives, however the bytes are cut."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logphase.reading.lines import LineRun, LineSplitter
from logphase.recognising import bulk as bulk_module
from logphase.recognising.bulk import junk_line
from tests.conftest import examples
from tests.logs import kv_failure, tp2_startup
from tests.test_fast_path import LINES, lines_of, report, ts


@pytest.fixture(autouse=True)
def quiet_runs_from_the_first_byte() -> Iterator[None]:
    """Quiet (and junk) runs from the first byte, as on a long log."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bulk_module, "QUIET_RUNS_AFTER", 0)
        yield


# what makes a junk line no junk, or junk that looks like something: separators, a bar's meter, a
# glued prefix's bracket and digits, an escape, white space of str, U+FFFD as bytes, a literal of an event
TRICKY = [
    b"\r",
    b"\r\n",
    b"\n",
    b"%",
    b"50%|##|",
    b" Completed |",
    b"[",
    b"[12:",
    b"[2026-05-09 10:00:00] ",
    b"[0:01<00:02, 3.6it/s]",
    b"\x1b[31m",
    b"\x1b]0;t\x07",
    b"\x1b",
    b" ",
    b"\t",
    b"\xc2\xa0",
    b"\xc2\x85",
    b"\xe3\x80\x80",
    b"\xef\xbf\xbd",
    b"\xff",
    b"\xe2\x82",
    b"\x00",
    b"\x1c",
    b"Error",
    b'  File "x.py", line 3, in f',
    b"Traceback (most recent call last):",
    b"Load weight begin. avail mem=1.00 GB",
    b"INFO:     ",
    b"sglang-1  | ",
    b"2026-05-09T10:00:00.123Z ",
    b"(pid=12) ",
    b"0: ",
    b"E0130 18:11:34.707542 ",
    b"host:1:2 [0] NCCL INFO x",
    b"\xd9\xa2\xd9\xa0\xd9\xa2\xd9\xa6-05-09 10:00:00 ",  # Arabic-Indic digits: \d of str
    b"x" * 9000,
]


@st.composite
def junk(draw: st.DrawFn) -> bytes:
    parts = draw(st.lists(st.one_of(st.binary(max_size=300), st.sampled_from(TRICKY)), max_size=12))
    return b"".join(parts)


@st.composite
def logs_with_junk(draw: st.DrawFn) -> bytes:
    second = draw(st.integers(0, 3000))
    out = [tp2_startup().encode()] if draw(st.booleans()) else []
    if draw(st.booleans()):
        out.append(kv_failure(minute=30).encode())
    for _ in range(draw(st.integers(0, 40))):
        if draw(st.booleans()):
            out.append(draw(junk()) + b"\n")
        else:
            second = max(0, second + draw(st.sampled_from([0, 1, 2, -1, 300])))
            out.append((draw(st.sampled_from(LINES)).replace("{t}", ts(second)) + "\n").encode())
    if draw(st.booleans()):
        out.append(draw(junk()))  # no newline at the end
    return b"".join(out)


# 20 logs in the default tier, 200 in the long one (conftest.examples): 200 took ~3 s of a 2-core run
@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(logs_with_junk(), st.lists(st.integers(min_value=0, max_value=20000), max_size=6))
def test_bulk_report_equals_line_by_line_on_junk(data: bytes, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c <= len(data)]
    assert report(data, False, cuts) == report(data, True, [])


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(logs_with_junk(), st.lists(st.integers(min_value=0, max_value=20000), max_size=6))
def test_junk_runs_split_like_lines(data: bytes, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c <= len(data)]
    assert lines_of(data, cuts, True, bulk_module.bulk_patterns()) == lines_of(data, [], False)


def test_random_bytes_are_read_in_junk_runs_with_the_same_report() -> None:
    rng = random.Random(3)
    blob = rng.randbytes(300_000)
    data = tp2_startup().encode() + blob + b"\n" + kv_failure(minute=40).encode()
    items = LineSplitter().feed_runs(data, bulk_module.bulk_patterns())
    junk_runs = [i for i in items if isinstance(i, LineRun) and i.segmented]
    assert sum(r.size for r in junk_runs) > 0.8 * blob.count(b"\n")  # most of the blob's lines
    assert report(data, False, [len(data) // 3]) == report(data, True, [])


def test_a_text_log_with_a_few_mangled_bytes_keeps_its_plain_runs() -> None:
    """A few invalid UTF-8 bytes (a bar cut inside a character) do not make a block binary: its
    serving lines are still read in runs, not one by one."""
    serving = "".join(f"[2026-05-09 10:00:{i % 60:02d}] Decode batch, #running-req: 1, #token: 9\n" for i in range(400))
    data = tp2_startup().encode() + b"Loading \xe2\x96 cut\n" + serving.encode()
    items = LineSplitter().feed_runs(data, bulk_module.bulk_patterns())
    in_runs = sum(i.size for i in items if isinstance(i, LineRun) and not i.quiet)
    assert in_runs >= 400
    assert report(data, False, [len(data) // 2]) == report(data, True, [])


@pytest.mark.parametrize(
    ("line", "is_junk"),
    [
        ("random text ~!@#", True),
        ("a\rb\r\r", True),
        ("\ufffd\ufffd", True),
        ("", False),  # blank
        ("   \u3000", False),  # blank in str's sense
        ("a\r  ", False),  # a blank piece
        ("[2026-05-09 10:00:00] x", False),  # SGLang's prefix
        ("sglang-1  | x", False),  # a wrapper
        ("x 50%|##| 1/2", False),  # a bar's meter
        ("x [12:00:00 TP0] y", False),  # a glued prefix's start
        ("x \x1b[31m y", False),  # an escape
        ("x" * 8001, False),  # too long to be sure it is not overlong
    ],
)
def test_junk_line(line: str, is_junk: bool) -> None:
    assert (junk_line().fullmatch(line) is not None) is is_junk


def test_every_server_args_head_holds_its_literal() -> None:
    """classify() skips a line longer than MAX_PARSE_CHARS without it: only server_args is built
    from such a line."""
    from logphase.recognising.classify import _DUMP_LITERALS, DUMP_GRAMMARS, _heads
    from logphase.recognising.prefilter import literal_factors

    assert DUMP_GRAMMARS == ("server_args",)
    for grammar, literal in zip(DUMP_GRAMMARS, _DUMP_LITERALS, strict=True):
        for head in _heads(grammar):
            assert literal_factors(head) == {literal}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("abc", "a"),
        ("(?:a|b)c", "ab"),
        (r"\d{4}-", r"\d"),
        (r"[\w.-]+x", r"\-\.\w"),
        ("x?y", "xy"),
        ("(?=a)b", "b"),
        ("x*", None),  # may match nothing
        ("[^a]", None),
        (".a", None),
        ("(?i)a", None),
    ],
)
def test_first_chars(pattern: str, expected: str | None) -> None:
    from logphase.recognising.prefilter import first_chars

    assert first_chars(pattern) == expected
