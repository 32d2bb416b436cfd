"""Clocks that disagree never make nonsense (issue 18, point 6).

A wrapper stamps every line with its own clock: ``kubectl logs --timestamps`` and ``docker logs -t``
in UTC while SGLang prints local time, a paste that gave every line the time it was collected, a
collector that stamps a batch of lines at once. Whatever that clock says, prefixed to every line
of every fixture (the first lines, SGLang's launch_server UserWarning, carry only the wrapper's
stamp), the report keeps the unwrapped fixture's outcome, phase, cause and number of runs, and no
duration in it is negative. Library calls only (fast): each example reads one fixture in-process.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase import parse_bytes
from logphase.reporting.report import Report
from tests.conftest import fixture_logs

FIXTURES = {p.name: p.read_bytes() for p in fixture_logs()}
# SGLang's own stamp, with or without its date ('[2026-05-09 09:20:26 TP0]', '[09:20:26 TP0]')
_STAMP = re.compile(rb"\[(?:(\d{4}-\d\d-\d\d) )?(\d\d:\d\d:\d\d)(?:[.,]\d+)?(?: [A-Z_]+\d+)*\]")
# the day a log whose stamps print no date is taken to run on
_UNDATED_DAY = datetime(2026, 11, 29)

# a wrapper's stamp for a physical line, given the time SGLang's clock shows at that line
WrapperClock = Callable[[datetime], datetime]


def summary(r: Report) -> dict[str, object]:
    return {
        "outcome": r.outcome,
        "phase": r.phase,
        "cause": r.failure.cause if r.failure else None,
        "runs": r.runs,
    }


@functools.cache
def unwrapped(name: str) -> dict[str, object]:
    return summary(parse_bytes(FIXTURES[name], source=name))


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


def server_times(log: bytes) -> list[tuple[bytes, datetime]]:
    """Each physical line (up to its newline: a wrapper stamps what follows a newline, not a bar's
    '\\r' redraw) with the time SGLang's clock shows there: its own stamp, else the last one before
    it (the first lines before any stamp: the first stamp's). Undated stamps run on one day,
    and into the next one when the clock goes back by more than half a day (midnight passed)."""
    lines = re.findall(rb"[^\n]*\n|[^\n]+$", log)
    first = next((m for m in map(_STAMP.search, lines) if m is not None), None)
    now = _UNDATED_DAY if first is None else _stamp_time(first, _UNDATED_DAY)
    out: list[tuple[bytes, datetime]] = []
    for line in lines:
        m = _STAMP.search(line, 0, 200)
        if m is not None:
            t = _stamp_time(m, now)
            if m.group(1) is None and (now - t).total_seconds() > 12 * 3600:
                t += timedelta(days=1)
            now = t
        out.append((line, now))
    return out


def _stamp_time(m: re.Match[bytes], now: datetime) -> datetime:
    day = m.group(1).decode() if m.group(1) else now.date().isoformat()
    return datetime.fromisoformat(f"{day}T{m.group(2).decode()}")


def wrapped(log: bytes, clock: WrapperClock) -> bytes:
    """Every physical line prefixed with the wrapper's stamp, as kubectl --timestamps writes it."""
    out = []
    for line, at in server_times(log):
        stamp = clock(at).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z "
        out.append(stamp.encode() + line)
    return b"".join(out)


def in_zone(offset_minutes: int) -> WrapperClock:
    """The wrapper's clock is UTC; SGLang's is local time in a zone ``offset_minutes`` east of it."""
    return lambda at: at - timedelta(minutes=offset_minutes)


def constant(stamp: datetime) -> WrapperClock:
    """One stamp on every line (the time a paste was collected)."""
    return lambda at: stamp


def wrapped_bursty(log: bytes, offset_minutes: int, every: int, at_end: bool) -> bytes:
    """A collector that stamps a batch of lines at once (UTC, SGLang in a zone ``offset_minutes``
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


# SGLang's zone east of the wrapper's UTC, in minutes: every whole hour from -14 h to +14 h and the
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


def check(name: str, data: bytes) -> None:
    report = parse_bytes(data, source=name)
    assert summary(report) == unwrapped(name)
    assert list(negative_durations(report.model_dump(mode="json"))) == []


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
