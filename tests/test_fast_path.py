"""The bulk path (Engine(collect_events=False), used by `logphase parse` without --events) must give
the same report as classifying every line, whatever the lines and however the bytes are cut."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logphase.engine.engine import Engine
from logphase.reading.lines import LineRun, LineSplitter, LogicalLine, RunPatterns
from logphase.recognising import bulk as bulk_module
from logphase.recognising.bulk import PLAIN as _PLAIN
from tests.conftest import examples
from tests.logs import fed_in_chunks, kv_failure, tp2_startup

STARTUP = tp2_startup().encode()


@pytest.fixture(autouse=True, scope="module")
def quiet_runs_from_the_first_byte() -> Iterator[None]:
    """The engine looks for quiet runs only past its first MiB (their patterns cost start-up
    time); here the inputs are small, so from the first byte."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bulk_module, "QUIET_RUNS_AFTER", 0)
        yield


def ts(second: int) -> str:
    return f"2026-05-09 10:{second // 60 % 60:02d}:{second % 60:02d}"


# (template, is_plain_when_ready); {t} is a timestamp
LINES = [
    "[{t} TP0] Decode batch, #running-req: 12, #token: 3400, token usage: 0.01, cuda graph: True, gen throughput (token/s): 300.10, #queue-req: 0",
    "[{t} TP0] Prefill batch, #new-seq: 1, #new-token: 70, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ",
    "[{t} DP0 TP0 EP0] Decode batch [1234], #running-req: 1, #token: 10, token usage: 0.00, cuda graph: True, #queue-req: 0",
    "[{t}] Decode batch. #running-req: 1, #token: 10",
    '[{t}] INFO:     127.0.0.1:40000 - "POST /generate HTTP/1.1" 200 OK',
    '[{t}] INFO:     127.0.0.1:40001 - "GET /health HTTP/1.1" 503 Service Unavailable',
    '[{t}] INFO:     127.0.0.1:40002 - "GET /model_info HTTP/1.1" 200 OK',
    '[{t}] INFO:     127.0.0.1:40003 - "GET /x?a[0]=1 HTTP/1.1" 200 OK',
    '[{t}] INFO:     127.0.0.1:40004 - "GET /a NCCL INFO b HTTP/1.1" 200 OK',
    # uvicorn's other levels (http.lark's UVICORN_LEVEL): access lines all the same
    '[{t}] ERROR:    127.0.0.1:40006 - "POST /generate HTTP/1.1" 500 Internal Server Error',
    '[{t}] WARNING:  127.0.0.1:40007 - "GET /a NCCL INFO b HTTP/1.1" 200 OK',
    '[{t}] INFO:     127.0.0.1:40005 - "GET /p HTTP/1.1" 200 OK[{t} TP1] Capture cuda graph end. Time elapsed: 3.00 s',
    "[{t} TP0] Decode batch, #running-req: 1, tail [{t} TP1] glued",
    "[{t} TP0] Decode batch, #running-req: 1, café",
    "[{t} TP0] Decode batch, #running-req: 1, \x1c odd",
    "[{t} TP0] Decode batch, #running-req: 1, Traceback (most recent call last): in the text",
    "[{t}.123 TP0] Decode batch, #running-req: 1, milliseconds",
    "[2026-05-09T10:00:00 TP0] Decode batch, #running-req: 1, T separator",
    "[2026-05-09 10:00:0x TP0] Decode batch, #running-req: 1, bad stamp",
    "[{t} XX0] Decode batch, #running-req: 1, unknown tag",
    "[{t} TP0] Decode batch, " + "x" * 5000,
    "[{t}] The server is fired up and ready to roll!",
    "[{t} TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/x/scheduler.py", line 10, in run',
    "RuntimeError: boom",
    "",
    "/x/y.py:3: UserWarning: careful",
    "  warnings.warn(",
    "host:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P",
    "Capturing batches (bs=8 avail_mem=4.00 GB):  50%|##  | 1/2\r[{t} TP1] Decode batch, #running-req: 1",
    "[{t} TP0] Decode batch, crlf line\r",
    "[{t}] server_args=ServerArgs(model_path='m', tp_size=2)",
    # debug output: quiet lines (no event), and lines among them that hold an event after all
    "[{t}] Key 4355795610796 already exists. Skipped.",
    "[{t} TP0] Attempting to acquire lock 140 on /root/.cache/x.lock",
    "[{t} TP1] Receive: obj=GenerateReqInput(text='hi', sampling_params={'max_new_tokens': 8})",
    "[{t}] cache hit ratio 50% of requests",
    "[{t} TP0] after a prefix Load weight begin. avail mem=10.00 GB",
    "[{t} TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "[{t} TP0] Exception in thread Thread-3:",
    "[{t}]  two spaces before the message",
    "[{t} TP0] host-1:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1]",
    "[{t}] W0529 14:02:24.102000 90211 torch/x.py:1] glog inside",
    # lines with no envelope at all: kernel libraries' chatter, dumps, and among them event lines
    "[aiter] shape is M:128, N:7168, K:2048, not found tuned config",
    "                             [2495] 1733 fr=1 mr=0 fll=True mll=False mv=None",
    "Requirement already satisfied: torch in /usr/lib/python3/dist-packages",
    "ValueError: boom without a traceback header",
    '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 3, in load_model',
    "/x/y.py:3: UserWarning: careful",
    "    warnings.warn(",
]
QUIET = LINES[-17:]


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    second = draw(st.integers(0, 3000))
    out = [STARTUP] if draw(st.booleans()) else []
    if draw(st.booleans()):
        out.append(kv_failure(minute=30).encode())
    for _ in range(draw(st.integers(0, 60))):
        # mostly plain lines, as in a served log
        plain = draw(st.sampled_from([LINES[0], LINES[1], LINES[2], LINES[4], LINES[4], LINES[5], *QUIET[:3], *QUIET[10:13]]))
        template = plain if draw(st.integers(0, 9)) < 6 else draw(st.sampled_from(LINES))
        step = draw(st.sampled_from([0, 0, 1, 1, 2, -1, -200, 300]))
        second = max(0, second + step)
        out.append((template.replace("{t}", ts(second)) + "\n").encode())
        if draw(st.integers(0, 19)) == 0:
            # a debug burst: more quiet lines than the sample of unrecognized lines keeps
            burst = draw(st.lists(st.sampled_from(QUIET), min_size=1, max_size=4))
            out.extend((burst[i % len(burst)].replace("{t}", ts(second)) + "\n").encode() for i in range(230))
    if draw(st.booleans()):
        out.append(b"[2026-05-09 11:00:00 TP0] Decode batch, no newline at the end")
    return b"".join(out)


def report(data: bytes, collect: bool, cuts: list[int], since: str | None = None) -> dict[str, object]:
    return fed_in_chunks(Engine(source="x", since=since, collect_events=collect), data, cuts).model_dump(mode="json")


def lines_of(data: bytes, cuts: list[int], runs: bool, patterns: RunPatterns = _PLAIN) -> tuple[list[LogicalLine], object]:
    """The logical lines of ``data`` fed in chunks cut at ``cuts``: found in runs (``patterns``) or one by one."""
    splitter = LineSplitter()
    out: list[LogicalLine] = []
    last = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        chunk = data[last:cut]
        last = cut
        for item in splitter.feed_runs(chunk, patterns) if runs else splitter.feed(chunk):
            if isinstance(item, LineRun):
                out.extend(item.logical_lines())
            else:
                out.append(item)
    out.extend(splitter.finish())
    return out, splitter.stats


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(logs(), st.lists(st.integers(min_value=0, max_value=20000), max_size=8))
def test_bulk_report_equals_line_by_line(data: bytes, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c <= len(data)]
    assert report(data, False, cuts) == report(data, True, [])


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(logs(), st.lists(st.integers(min_value=0, max_value=20000), max_size=8))
def test_runs_split_like_lines(data: bytes, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c <= len(data)]
    assert lines_of(data, cuts, True) == lines_of(data, [], False)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(logs(), st.integers(0, 3000))
def test_bulk_report_with_since(data: bytes, second: int) -> None:
    since = ts(second)
    assert report(data, False, [len(data) // 2], since) == report(data, True, [], since)


def test_serving_tail_is_counted_in_bulk() -> None:
    tail = "".join(LINES[i % 2].replace("{t}", ts(100 + i // 10)) + "\n" for i in range(5000))
    access = "".join(LINES[4].replace("{t}", ts(700 + i)) + "\n" for i in range(10))
    data = STARTUP + tail.encode() + access.encode()
    engine = Engine(source="x", collect_events=False)
    items = engine._reader.splitter.feed_runs(data, _PLAIN)
    assert sum(item.size for item in items if isinstance(item, LineRun)) >= 5000
    assert report(data, False, []) == report(data, True, [])


def test_clock_jump_back_inside_a_run_starts_a_new_run() -> None:
    ready = STARTUP
    lines = [LINES[0].replace("{t}", ts(s)) for s in (600, 601, 602, 100, 101)]
    data = ready + ("\n".join(lines) + "\n").encode()
    bulk, slow = report(data, False, []), report(data, True, [])
    assert bulk == slow and bulk["runs"] == 2


def test_debug_output_is_counted_in_bulk_with_the_same_report() -> None:
    """A start-up drowned in debug lines (quiet runs): the bulk path skips them by the pre-filter's
    literals, yet takes the lines that hold an event among them the long way."""
    quiet = [QUIET[0], QUIET[1], QUIET[2], QUIET[10], QUIET[11]]
    lines = [quiet[i % 5].replace("{t}", ts(100 + i // 50)) for i in range(3000)]
    lines[1500] = "[2026-05-09 10:02:10 TP0] after a prefix Load weight begin. avail mem=10.00 GB"
    data = STARTUP + ("\n".join(lines) + "\n").encode()
    bulk = report(data, False, [len(data) // 3, len(data) // 2])
    assert bulk == report(data, True, [])
    lines_report = bulk["lines"]
    assert isinstance(lines_report, dict) and lines_report["unrecognized"] >= 2999
    lines_report_fast = report(data, False, [])["lines"]
    assert lines_report_fast == lines_report
    engine = Engine(source="x", collect_events=False)
    engine.feed(data)
    engine.finish()
    assert len(engine.unrecognized_sample) == 200  # the sample is kept whatever the path


def test_a_bar_inside_a_quiet_run_is_read_the_long_way() -> None:
    """A run may hold a line with a '%': the pre-filter's literal sends it the long way, where it is
    the progress bar it is; the report equals the line-by-line one. (Past the first 200 lines no
    grammar reads: those are read one by one for the sample of unrecognized lines.)"""
    loose = [QUIET[11], QUIET[12]] * 300
    bar = "Processing:  50%|#####     | 5/10 [00:01<00:01,  5.00it/s]"
    stamped = [QUIET[0].replace("{t}", ts(100))] * 300
    stamped[150] = f"[{ts(100)} TP0] prefix cache hit 50% of requests"  # a '%' that is no bar
    data = STARTUP + ("\n".join([*loose[:400], bar, *loose[400:], *stamped]) + "\n").encode()
    bulk = report(data, False, [len(data) // 2])
    assert bulk == report(data, True, [])
    lines = bulk["lines"]
    assert isinstance(lines, dict) and lines["unrecognized"] == 900
    engine = Engine(source="x")
    events = engine.feed(data) + engine.finish()
    assert [e.raw for e in events if e.kind == "progress_bar"][-1:] == [bar]


def test_the_prefilter_finds_the_same_lines_with_or_without_hyperscan() -> None:
    from logphase.recognising.bulk import event_literals
    from logphase.recognising.prefilter import LiteralFinder

    literals = event_literals()[0]
    data = ("\n".join(t.replace("{t}", ts(5)) for t in LINES) + "\n").encode()
    fallback = LiteralFinder(literals, use_hyperscan=False)
    assert fallback.engine == "re"
    lines_with = {data.count(b"\n", 0, hit - 1) for hit in LiteralFinder(literals).line_hits(data)}
    assert lines_with == {data.count(b"\n", 0, hit - 1) for hit in fallback.line_hits(data)}
