"""One answer per report: a prefix of a log never reports a phase beyond the whole log's, and a
report's warnings never place the log in a phase the report itself contradicts.

A prefix is what ``head -c N log | logphase parse -`` reads. Every line-boundary cut of every
fixture is checked, and a sample of cuts inside lines (all of them inside traceback frames and
their source lines, where a cut name could be mistaken for a call). The prefixes are read
incrementally: one engine per fixture, asked for its report after each line (``Engine.report``
counts the open traceback as ``finish`` would); a cut inside a line finishes a copy.
"""

from __future__ import annotations

import copy
import importlib.util
import random
import re
from collections.abc import Iterator

import orjson
import pytest

from logphase import Engine, Follower, FollowOptions, Phase, Report, parse_bytes
from logphase.faces.live.follow_records import FailureRecord, PhaseRecord
from logphase.faces.text import render_text
from logphase.faces.timeline import render_html
from logphase.faces.wording import headline
from logphase.vocabulary import events as ev
from tests.conftest import FIXTURES as FIXTURE_DIR
from tests.conftest import fixture_logs

FIXTURES = {p.stem: p.read_bytes() for p in fixture_logs()}
# a log of several runs rightly reports an earlier run's phase on a prefix: the property is over the
# others (each fixture's golden says how many runs it has; test_fixtures checks the golden)
ONE_RUN = sorted(
    name for name in FIXTURES if orjson.loads((FIXTURE_DIR / f"{name}.expected.json").read_bytes())["runs"] == 1
)

# a traceback's frame line or the source line under it: where a cut can fall inside a name
_FRAME_OR_SOURCE = re.compile(rb"^(?:\S*\s)?\s+(?:File \"|\S)")
_CARETS = re.compile(rb"^(?:\S*\s)?\s+[\^~]+\s*$")
# cuts inside lines per fixture: inside frame and source lines, and inside any other line
MID_LINE_CUTS = (8, 2)


def mid_line_cuts(lines: list[bytes], seed: str) -> dict[int, int]:
    """A sample of cuts inside lines: {line index: bytes of it kept}, most of them inside frame
    and source lines."""
    rng = random.Random(seed)
    cuttable = [i for i, line in enumerate(lines) if len(line.rstrip(b"\r\n")) > 2]
    framed = [i for i in cuttable if _FRAME_OR_SOURCE.match(lines[i])]
    other = [i for i in cuttable if not _FRAME_OR_SOURCE.match(lines[i])]
    chosen = rng.sample(framed, min(MID_LINE_CUTS[0], len(framed))) + rng.sample(other, min(MID_LINE_CUTS[1], len(other)))
    return {i: rng.randrange(1, len(lines[i].rstrip(b"\r\n"))) for i in chosen}


def prefix_reports(log: bytes, seed: str) -> Iterator[tuple[int, Report]]:
    """(cut, report of log[:cut]) for every line boundary and a sample of cuts inside lines.

    A line that completes no event while no traceback is open leaves every phase where it was (it
    only moves the clock), and so does another redraw of the bar the line before redrew: the report
    after it is the one before, and is not built again."""
    lines = log.splitlines(keepends=True)
    inside = mid_line_cuts(lines, seed)
    engine = Engine(source="prefix")
    start, bar = 0, None
    for i, line in enumerate(lines):
        if i in inside:
            cut_engine = copy.deepcopy(engine)
            cut_engine.feed(line[: inside[i]])
            cut_engine.finish()
            yield start + inside[i], cut_engine.report()
        events = engine.feed(line)
        start += len(line)
        redrawn = {e.desc if isinstance(e, ev.ProgressBar) else None for e in events}
        same_bar = redrawn == {bar} and bar is not None
        bar = redrawn.pop() if len(redrawn) == 1 else None
        # a traceback's caret line ('^^^^^') adds nothing to it
        if (events and not same_bar) or (engine.has_open_records() and not _CARETS.match(line)):
            yield start, engine.report()
    engine.finish()
    yield start, engine.report()


def _beyond(prefix: Phase | None, full: Phase | None) -> bool:
    return prefix is not None and full is not None and prefix.order > full.order


# the phase a partial_log warning says the log starts in
_STARTS_IN = re.compile(r"the log starts mid-run at line \d+, in (\w+):")


def warning_contradictions(report: Report) -> list[str]:
    """Warnings that place the log in a phase after the one the report gives: the log cannot start
    in ready and fail in launch."""
    out: list[str] = []
    for warning in report.warnings:
        named = _STARTS_IN.search(warning.message) if warning.kind == "partial_log" else None
        if named is not None and _beyond(Phase(named.group(1)), report.phase):
            out.append(f"{report.outcome} in {report.phase} but {warning.kind}: {warning.message}")
    return out


def test_the_property_covers_the_fixtures_of_one_run() -> None:
    assert len(ONE_RUN) >= len(FIXTURES) - 2


@pytest.mark.parametrize("name", ONE_RUN)
def test_no_prefix_reports_a_phase_beyond_the_whole_log(name: str) -> None:
    """Over every fixture with one run: the whole log's report is the last of the same incremental read."""
    reports = list(prefix_reports(FIXTURES[name], name))
    full = reports[-1][1]
    assert full.runs == 1
    for cut, report in reports:
        # beyond the whole log's phase means beyond the furthest its timeline reached: vLLM V1 sizes
        # the KV cache after torch.compile (cuda_graph_capture by the corpus' rule), so a KV-cache
        # failure there is memory_pool after a capture step (test_properties.furthest_index)
        furthest = max([full.phase, *(Phase(p.name) for p in full.phases)], key=lambda p: p.order if p else -1)
        assert not _beyond(report.phase, furthest), f"head -c {cut}: {report.phase}, whole log: {full.phase}"
        assert not warning_contradictions(report), f"head -c {cut}: {warning_contradictions(report)}"


def test_the_known_prefix_of_kv_no_room_stays_before_memory_pool() -> None:
    """head -c 4421 ends inside a frame's statement 'self.init_': no CUDA graph call (issue 18)."""
    report = parse_bytes(FIXTURES["kv_no_room_v0523"][:4421], source="x")
    assert report.phase is not None and report.phase.order <= Phase.MEMORY_POOL.order
    assert report.phase is Phase.WEIGHT_LOADING  # the phase the ranks were in


def windows(log: bytes, seed: str) -> Iterator[tuple[int, bytes]]:
    """Windows of a log: one that starts at a random line, one inside a traceback's frames (where
    the window's root can name no phase), if the log has any."""
    lines = log.splitlines(keepends=True)
    rng = random.Random(seed)
    frames = [i for i, line in enumerate(lines) if i and _FRAME_OR_SOURCE.match(line)]
    # (a log of one line has no window that starts after its first line)
    starts = ({rng.randrange(1, len(lines))} if len(lines) > 1 else set()) | ({rng.choice(frames)} if frames else set())
    for i in sorted(starts):
        yield i + 1, b"".join(lines[i:])


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_a_window_never_contradicts_its_partial_log_warning(name: str) -> None:
    for first, window in windows(FIXTURES[name], name):
        report = parse_bytes(window, source="x")
        assert not warning_contradictions(report), f"window from line {first}: {warning_contradictions(report)}"


# A window that starts inside TP0's traceback (its header and outer frames are before the window)
# while the serving loop checked itself idle; TP1's whole traceback follows.
SERVING_WINDOW = b"""\
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 5260, in on_idle
    self.self_check_during_idle()
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1710, in self_check_during_idle
    raise ValueError(msg)
ValueError: token_to_kv_pool_allocator memory leak detected! available_size=1000, protected_size=0
[2026-07-12 15:41:20 TP1] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 7310, in run_scheduler_process
    scheduler.run_event_loop()
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2001, in run_event_loop
    dispatch_event_loop(self)
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 7011, in dispatch_event_loop
    scheduler.event_loop_overlap()
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2104, in event_loop_overlap
    self.on_idle()
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 5260, in on_idle
    self.self_check_during_idle()
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1710, in self_check_during_idle
    raise ValueError(msg)
ValueError: token_to_kv_pool_allocator memory leak detected! available_size=1000, protected_size=0
[2026-07-12 15:41:20] Received sigquit from a child process. It usually means the child failed.
"""


def test_a_window_inside_a_serving_loop_traceback_failed_while_serving() -> None:
    report = parse_bytes(SERVING_WINDOW, source="x")
    assert report.outcome == "failed" and report.phase is Phase.READY
    assert report.failure is not None and report.failure.phase is Phase.READY
    partial = [w for w in report.warnings if w.kind == "partial_log"]
    assert partial and "in ready:" in partial[0].message
    assert not warning_contradictions(report)


def test_a_window_whose_root_names_no_phase_fails_where_the_log_starts() -> None:
    """The root (TP0's error, its frames before the window) names no phase; TP1's traceback shows
    the serving loop: the log starts while serving, so that is where it failed, not 'launch'."""
    window = SERVING_WINDOW.replace(b"in on_idle\n", b"in helper\n").replace(b"in self_check_during_idle\n", b"in helper\n")
    first = window.split(b"[2026-07-12 15:41:20 TP1]")[0]
    assert b"on_idle" not in first and b"self_check_during_idle\n" not in first
    report = parse_bytes(window, source="x")
    assert report.failure is not None and report.failure.line == 5  # TP0's error is the root
    assert report.phase is Phase.READY and not warning_contradictions(report)


# -- every face shows the report's one phase --------------------------------------------------------

FACE_CASES = {
    "serving window": SERVING_WINDOW,
    "kv_no_room cut in a statement": FIXTURES["kv_no_room_v0523"][:4421],
    "ray_wrapped_oom": FIXTURES["ray_wrapped_oom"],
    "c10d window": b"".join(FIXTURES["c10d_watchdog_abort"].splitlines(keepends=True)[57:]),
}


@pytest.mark.parametrize("case", sorted(FACE_CASES))
def test_every_face_shows_the_reports_phase(case: str) -> None:
    data = FACE_CASES[case]
    report = parse_bytes(data, source="x")
    assert report.phase is not None
    words = "while serving" if report.failure is not None and report.failure.while_serving else f" in {report.phase.value}"
    assert words in render_text(report).splitlines()[0]
    assert headline(report) in render_html(report)
    follower = Follower("x", FollowOptions(until="eof"), now=0.0)
    records = [*follower.feed(data, 0.0), *follower.finish()]
    failures = [r for r in records if isinstance(r, FailureRecord)]
    if report.failure is not None:
        assert failures and failures[-1].phase is report.phase
    entered = [r.phase for r in records if isinstance(r, PhaseRecord)]
    assert not entered or max(p.order for p in entered) <= report.phase.order
    if importlib.util.find_spec("prometheus_client") is not None:
        from logphase.faces.live.metrics import ReportCollector

        shown = [
            s.labels["phase"]
            for f in ReportCollector(lambda: (report, None), "t").collect()
            for s in f.samples
            if s.name == "logphase_phase" and s.value == 1.0
        ]
        assert shown == [report.phase.value]
