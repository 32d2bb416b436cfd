"""Clocks that disagree never make nonsense (issue 18, point 6; issue 29, point 4: one clock for
every server).

A wrapper stamps every line with its own clock: ``kubectl logs --timestamps`` and ``docker logs -t``
in UTC while the server prints local time, a paste that gave every line the time it was collected, a
collector that stamps a batch of lines at once. Whatever that clock says, prefixed to every line
of every fixture, SGLang's and vLLM's (the first lines, SGLang's launch_server UserWarning, carry
only the wrapper's stamp; vLLM's tracebacks, prints and bars carry none of vLLM's own), the report
keeps the unwrapped fixture's outcome, phase, cause, number of runs and durations (within a second),
no duration in it is negative and its total is no longer than the server's own stamps span. Library
calls only (fast): each example reads one fixture in-process.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase import parse_bytes
from logphase.reading.envelope import Stamp, split_envelope
from logphase.reporting.report import Report
from logphase.testing import assert_startup
from tests.conftest import fixture_logs

FIXTURES = {p.name: p.read_bytes() for p in fixture_logs()}
# the day a log whose stamps print no date is taken to run on (and the year of those that print none)
_UNDATED_DAY = datetime(2026, 11, 29)

# a wrapper's stamp for a physical line, given the time the server's clock shows at that line
WrapperClock = Callable[[datetime], datetime]


def summary(r: Report) -> dict[str, object]:
    return {
        "outcome": r.outcome,
        "phase": r.phase,
        "cause": r.failure.cause if r.failure else None,
        "runs": r.runs,
    }


def durations(r: Report) -> list[tuple[str, float | None]]:
    """Each phase's duration, the unaccounted gaps between phases, and the total."""
    gaps = [(f"{u.after}..{u.before}", u.duration_s) for u in r.unaccounted]
    return [*((str(p.name), p.duration_s) for p in r.phases), *gaps, ("total", r.total_startup_s)]


@functools.cache
def plain_report(name: str) -> Report:
    return parse_bytes(FIXTURES[name], source=name)


def unwrapped(name: str) -> dict[str, object]:
    return summary(plain_report(name))


def assert_same_durations(got: list[tuple[str, float | None]], want: list[tuple[str, float | None]]) -> None:
    """The same phases and gaps, each as long within a second (a wrapper's fraction of a second may
    date a line the server's whole-second stamp does not), None where the unwrapped log has None."""
    assert [name for name, _ in got] == [name for name, _ in want]
    for (name, g), (_, w) in zip(got, want, strict=True):
        assert (g is None) == (w is None), name
        assert g is None or w is None or abs(g - w) <= 1.0, (name, g, w)


def negative_durations(value: object, path: str = "") -> Iterator[str]:
    """Every number in a report whose key says it is a duration (``*_s``) and that is below zero."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.endswith("_s") and isinstance(item, int | float) and item < 0:
                yield f"{path}.{key}={item}"
            else:
                yield from negative_durations(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from negative_durations(item, f"{path}[{i}]")


def own_stamp(line: bytes) -> Stamp | None:
    """The time a physical line's server prefix prints, whichever server's (SGLang's
    '[2026-05-09 09:20:26 TP0]' or '[09:20:26]', vLLM's 'INFO 11-18 18:07:28 [x.py:1]'): what
    envelope.lark marks as a server's own, as the envelope reads it (a stamp that makes no time: None)."""
    env = split_envelope(line.decode("utf-8", "replace").rstrip("\r\n").split("\r")[0])
    return env.server_stamp


def _stamp_time(stamp: Stamp, now: datetime) -> datetime:
    """A stamp as a time, what it leaves out taken from ``now`` (the time before it): a time of day
    more than half a day before ``now`` is on the next day, a month and day more than half a year
    before it in the next year."""
    year = stamp.year or now.year
    month, day = (stamp.month, stamp.day) if stamp.month is not None and stamp.day is not None else (now.month, now.day)
    t = datetime.fromisoformat(f"{year:04d}-{month:02d}-{day:02d}T{stamp.time}")
    if stamp.month is None and (now - t).total_seconds() > 12 * 3600:
        t += timedelta(days=1)
    elif stamp.year is None and stamp.month is not None and (now - t).days > 183:
        t = t.replace(year=t.year + 1)
    return t


@functools.cache
def _server_times(log: bytes) -> tuple[tuple[bytes, datetime, bool], ...]:
    lines = re.findall(rb"[^\n]*\n|[^\n]+$", log)
    stamps = [own_stamp(line) for line in lines]
    # the log's day: its first stamp that prints one (times of day before it are on that day)
    dated = next((s for s in stamps if s is not None and s.month is not None), None)
    day = (
        _UNDATED_DAY
        if dated is None or dated.month is None or dated.day is None
        else datetime(dated.year or 2026, dated.month, dated.day)
    )
    first = next((s for s in stamps if s is not None), None)
    now = day if first is None else _stamp_time(first, day)
    out: list[tuple[bytes, datetime, bool]] = []
    for line, stamp in zip(lines, stamps, strict=True):
        if stamp is not None:
            now = _stamp_time(stamp, now)
        out.append((line, now, stamp is not None))
    return tuple(out)


def server_times(log: bytes) -> list[tuple[bytes, datetime]]:
    """Each physical line (up to its newline: a wrapper stamps what follows a newline, not a bar's
    '\\r' redraw) with the time the server's clock shows there: its own stamp, else the last one
    before it (the first lines before any stamp: the first stamp's). Stamps without a date run on
    the day of the first that prints one (else on one day), and into the next one when the clock
    goes back by more than half a day (midnight passed); a month and day without a year (vLLM's) in 2026."""
    return [(line, at) for line, at, _ in _server_times(log)]


def own_span_s(log: bytes) -> float:
    """How long the server's own stamps span: a wrapper makes no start-up in the log longer."""
    times = [at for _, at, own in _server_times(log) if own]
    return (max(times) - min(times)).total_seconds() if times else 0.0


def wrapped(log: bytes, clock: WrapperClock) -> bytes:
    """Every physical line prefixed with the wrapper's stamp, as kubectl --timestamps writes it."""
    out = []
    for line, at in server_times(log):
        stamp = clock(at).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z "
        out.append(stamp.encode() + line)
    return b"".join(out)


def in_zone(offset_minutes: int) -> WrapperClock:
    """The wrapper's clock is UTC; the server's is local time in a zone ``offset_minutes`` east of it."""
    return lambda at: at - timedelta(minutes=offset_minutes)


def constant(stamp: datetime) -> WrapperClock:
    """One stamp on every line (the time a paste was collected)."""
    return lambda at: stamp


def wrapped_bursty(log: bytes, offset_minutes: int, every: int, at_end: bool) -> bytes:
    """A collector that stamps a batch of lines at once (UTC, the server in a zone ``offset_minutes``
    east): the same stamp for ``every`` lines, then a jump; the batch's first line's time, or its
    last one's (the batch read when it was flushed: later than most of its lines)."""
    lines = server_times(log)
    zone = in_zone(offset_minutes)
    out = []
    for start in range(0, len(lines), every):
        batch = lines[start : start + every]
        stamp = zone(batch[-1][1] if at_end else batch[0][1]).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z "
        out.extend(stamp.encode() + line for line, _ in batch)
    return b"".join(out)


# the server's zone east of the wrapper's UTC, in minutes: every whole hour from -14 h to +14 h and the
# zones of half and three quarters of an hour. The first is what a derandomized run draws first:
# the issue's case (kubectl in UTC, the server in UTC+8)
ZONES = st.sampled_from(
    [480, *(h * 60 for h in range(-14, 15) if h != 8), -570, -210, 210, 270, 330, 345, 390, 525, 570, 630, 765, 825]
)
# a constant stamp this far from the log's first time (0 first: the same day and hour, so that the
# zone is learned and the clock drifts from it; days and years off: no zone at all)
CONSTANT_OFFSETS = st.integers(-400 * 86400, 400 * 86400)
# examples per fixture: the profile's budget shared by the fixtures (ci: one, so the whole file
# runs in seconds; HYPOTHESIS_PROFILE=long: many)
EXAMPLES = max(1, settings.default.max_examples // 15)


@functools.cache
def timed_by_own_stamps(name: str) -> bool:
    """Whether the lines' times here are the fixture's, so that durations can be compared: a wrapper
    that stamps each line at the server's time (in its zone) keeps every duration of the unwrapped
    log. Not so where the unwrapped log times lines by another clock (a progress bar's elapsed time
    in a silent phase, PyTorch's glog stamp), which this wrapper does not follow, or has none at all."""
    faithful = parse_bytes(wrapped(FIXTURES[name], in_zone(0)), source=name)
    try:
        assert_same_durations(durations(faithful), durations(plain_report(name)))
    except AssertionError:
        return False
    return True


def check(name: str, data: bytes) -> None:
    report = parse_bytes(data, source=name)
    assert summary(report) == unwrapped(name)
    if timed_by_own_stamps(name):
        assert_same_durations(durations(report), durations(plain_report(name)))
    assert list(negative_durations(report.model_dump(mode="json"))) == []
    # never longer than the server's own stamps span (or the unwrapped log's total: a bar's clock)
    total, plain = report.total_startup_s, plain_report(name).total_startup_s
    assert total is None or total <= max(own_span_s(FIXTURES[name]), plain or 0.0) + 1.0


@pytest.mark.parametrize("name", FIXTURES)
@settings(max_examples=EXAMPLES)
@given(zone=ZONES)
def test_a_wrapper_in_another_zone_changes_nothing(name: str, zone: int) -> None:
    check(name, wrapped(FIXTURES[name], in_zone(zone)))


@pytest.mark.parametrize("name", FIXTURES)
@settings(max_examples=EXAMPLES)
@given(offset=CONSTANT_OFFSETS)
def test_one_constant_wrapper_stamp_changes_nothing(name: str, offset: int) -> None:
    first = server_times(FIXTURES[name])[0][1]
    check(name, wrapped(FIXTURES[name], constant(first + timedelta(seconds=offset))))


@pytest.mark.parametrize("name", FIXTURES)
@settings(max_examples=EXAMPLES)
@given(zone=ZONES, every=st.integers(2, 40), at_end=st.sampled_from([True, False]))
def test_a_bursty_wrapper_changes_nothing(name: str, zone: int, every: int, at_end: bool) -> None:
    check(name, wrapped_bursty(FIXTURES[name], zone, every, at_end))


# -- a server whose own prefix is a logger's peeled with the wrappers (vLLM's) -------------------------

# vLLM's fixtures (fixtures/logs/vllm_*.log): its own prefix is its logger's, a time without a year
# ('INFO 11-18 18:07:28 [x.py:1] '); its tracebacks, prints, bars and uvicorn's lines carry none
VLLM_FIXTURES = sorted(name for name in FIXTURES if name.startswith("vllm_"))
# each of them under every kind of wrapper clock: zones east of UTC (minutes; the issue's kubectl in
# UTC around a server in UTC+8, docker compose two hours ahead of it), a constant stamp (seconds
# from the log's first time: the same hour, a day, a year off), a collector's batches (zone, lines a
# batch, stamped at its end)
VLLM_CLOCKS: dict[str, Callable[[bytes], bytes]] = {
    **{
        f"zone {m:+d} min": functools.partial(lambda log, m: wrapped(log, in_zone(m)), m=m)
        for m in (480, -120, 0, 330, -570, 840, -720)
    },
    **{
        f"constant {o:+d} s": functools.partial(
            lambda log, o: wrapped(log, constant(server_times(log)[0][1] + timedelta(seconds=o))), o=o
        )
        for o in (0, 3600, -86400, 366 * 86400)
    },
    **{
        f"bursts {m:+d} min, {n} lines, {'end' if e else 'start'}": functools.partial(
            lambda log, m, n, e: wrapped_bursty(log, m, n, e), m=m, n=n, e=e
        )
        for m, n, e in ((480, 5, True), (-300, 17, False), (0, 2, True))
    },
}


def test_every_vllm_fixture_is_compared_with_its_durations() -> None:
    """The 14 vLLM fixtures are vLLM's, and the wrapped ones' durations are compared with theirs
    (none is timed by another clock than vLLM's own)."""
    assert len(VLLM_FIXTURES) == 14 and all(plain_report(name).server == "vllm" for name in VLLM_FIXTURES)
    assert all(timed_by_own_stamps(name) for name in VLLM_FIXTURES)


@pytest.mark.parametrize("clock", VLLM_CLOCKS)
@pytest.mark.parametrize("name", VLLM_FIXTURES)
def test_every_wrapper_clock_around_a_vllm_log_changes_nothing(name: str, clock: str) -> None:
    check(name, VLLM_CLOCKS[clock](FIXTURES[name]))


def compose_timestamps(log: bytes, ahead_h: float) -> bytes:
    """``docker compose logs -t``: the service's name, then docker's stamp ``ahead_h`` hours ahead of
    the server's own (the server in a zone behind docker's UTC)."""
    return b"".join(
        b"vllm-1  | " + (at + timedelta(hours=ahead_h)).strftime("%Y-%m-%dT%H:%M:%S.%f").encode() + b"000Z " + line
        for line, at in server_times(log)
    )


def test_the_compose_case_of_the_issue() -> None:
    """A docker compose vLLM log whose wrapper stamps are 2 h ahead of vLLM's own said READY after
    2.0 h; the healthy start passes ``check --max-total 600``, as long as the unwrapped log's."""
    name = "vllm_v1_clean_compile_0_11.log"
    report, plain = parse_bytes(compose_timestamps(FIXTURES[name], 2), source=name), plain_report(name)
    assert (report.outcome, report.total_startup_s) == ("ready", plain.total_startup_s) and report.total_startup_s is not None
    assert report.total_startup_s < 600
    assert_startup(report, max_total=600)
    assert [(p.name, p.duration_s) for p in report.phases] == [(p.name, p.duration_s) for p in plain.phases]
    assert [(u.after, u.before, u.duration_s) for u in report.unaccounted] == [
        (u.after, u.before, u.duration_s) for u in plain.unaccounted
    ]


def test_the_kubectl_case_of_the_issue_for_vllm() -> None:
    """kubectl --timestamps (UTC) around vLLM in UTC+8 said READY after 0.0 s with an 8 h row between
    phases: vLLM's times are its own clock's, kubectl's are compared with them in its zone."""
    name = "vllm_v0_tp4_ray_0_6.log"
    report, plain = parse_bytes(wrapped(FIXTURES[name], in_zone(480)), source=name), plain_report(name)
    assert report.total_startup_s == plain.total_startup_s and (plain.total_startup_s or 0) > 60
    assert [(p.name, p.duration_s) for p in report.phases] == [(p.name, p.duration_s) for p in plain.phases]
    assert all((u.duration_s or 0) < 3600 for u in report.unaccounted)
    # a dated wrapper gives the year the server's stamps leave out, said in the report
    assert report.year_inferred is not None and report.year_inferred.source == "wrapper"
    assert report.phases[0].start is not None and report.phases[0].start.endswith("-01-17T08:06:41")


def test_a_constant_stamp_around_vllm_is_no_clock() -> None:
    """One stamp on every line (a paste's collection time) said READY after 7609.9 h."""
    name = "vllm_v0_clean_0_6.log"
    data = wrapped(FIXTURES[name], constant(datetime(2026, 1, 1)))
    report, plain = parse_bytes(data, source=name), plain_report(name)
    assert (report.outcome, report.total_startup_s) == ("ready", plain.total_startup_s)


def test_docker_s_json_file_around_vllm_is_a_wrapper_too() -> None:
    """docker's json-file log driver: the record's time is a dated wrapper's (UTC, vLLM in UTC+8),
    compared with vLLM's own in its zone, and the year vLLM's stamps leave out."""
    name = "vllm_v0_tp4_ray_0_6.log"
    records = (
        orjson.dumps({"log": line.decode(), "stream": "stderr", "time": (at - timedelta(hours=8)).isoformat() + ".5Z"}) + b"\n"
        for line, at in server_times(FIXTURES[name])
    )
    report = parse_bytes(b"".join(records), source=name)
    assert summary(report) == unwrapped(name)
    assert_same_durations(durations(report), durations(plain_report(name)))
    assert report.year_inferred is not None and (report.year_inferred.year, report.year_inferred.source) == (2026, "wrapper")


@pytest.mark.parametrize("damage", ["13-18 18:05:09", "02-30 18:05:09", "11-18 25:05:09", "11-18 18:75:09"])
def test_a_damaged_vllm_stamp_is_text_and_takes_the_time_before(damage: str) -> None:
    """A vLLM stamp that makes no time (month 13, Feb 30, hour 25) is text, inside a wrapper or not:
    the line is read, its time is the server's before it (a wrapper's in its zone, no later than a
    moment after it), and the report says it."""
    log = (
        "INFO 11-18 18:05:02 api_server.py:585] vLLM API server version 0.6.4.post1\n"
        "INFO 11-18 18:05:08 config.py:350] This model supports multiple tasks: {'generate', 'embedding'}.\n"
        f"INFO {damage} model_runner.py:1072] Starting to load model meta-llama/Llama-3.1-8B-Instruct...\n"
        "INFO 11-18 18:05:30 model_runner.py:1077] Loading model weights took 14.9888 GB\n"
    ).encode()
    plain = parse_bytes(log, source="x")
    for data in (log, wrapped(log, in_zone(-300))):
        report = parse_bytes(data, source="x")
        assert [w.kind for w in report.warnings if w.kind == "invalid_timestamp"] == ["invalid_timestamp"]
        loading = next(p for p in report.phases if p.name == "weight_loading")
        assert loading.first_line == 3 and loading.start is not None and loading.start.endswith("-11-18T18:05:08")
        assert [(p.name, p.duration_s) for p in report.phases] == [(p.name, p.duration_s) for p in plain.phases]


def test_the_kubectl_case_of_the_issue() -> None:
    """kubectl --timestamps (UTC) around a server in UTC+8 whose first lines carry only kubectl's
    stamp: the lines before SGLang's first stamp are re-timed into its zone, not 8 h earlier."""
    name = "kv_cache_insufficient.log"
    report = parse_bytes(wrapped(FIXTURES[name], in_zone(480)), source=name)
    plain = parse_bytes(FIXTURES[name], source=name)
    assert (report.outcome, report.phase, report.total_startup_s) == (plain.outcome, plain.phase, plain.total_startup_s)
    assert [(p.name, p.start, p.duration_s) for p in report.phases] == [(p.name, p.start, p.duration_s) for p in plain.phases]


def test_line_by_line_reads_the_same_as_bulk() -> None:
    """The re-timing of the first lines holds for readers that feed a line at a time (follow)."""
    from logphase.engine.engine import Engine

    name = "cuda_oom_capture.log"
    data = wrapped_bursty(FIXTURES[name], -300, 7, True)
    engine = Engine(source=name)
    for line in data.splitlines(keepends=True):
        engine.feed(line)
    engine.finish()
    by_line, bulk = engine.report(), parse_bytes(data, source=name)
    assert by_line.model_dump(exclude={"lines"}) == bulk.model_dump(exclude={"lines"})
    assert summary(by_line) == unwrapped(name)


@pytest.mark.parametrize("name", ["kv_cache_insufficient.log", "time_only_stamps.log", "cuda_oom_capture.log"])
def test_a_wrapper_without_a_year_keeps_the_durations(name: str) -> None:
    """journald's short-precise stamp prints no year: it takes SGLang's, also for the lines before
    SGLang's first stamp (re-timed), and the durations are the unwrapped log's."""
    out = []
    for line, at in server_times(FIXTURES[name]):
        stamp = (at - timedelta(hours=2)).strftime("%b %d %H:%M:%S.%f")
        out.append(stamp.encode() + b" gpu-host-3 sglang[4242]: " + line)
    report, plain = parse_bytes(b"".join(out), source=name), parse_bytes(FIXTURES[name], source=name)
    assert summary(report) == unwrapped(name)
    assert report.total_startup_s == plain.total_startup_s
    assert [p.duration_s for p in report.phases] == [p.duration_s for p in plain.phases]
