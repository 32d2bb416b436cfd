"""Durations are part of the verdict (issue 30, point 1): the durations property (tests/durations.py)
holds on every fixture, bare, under every wrapper of the envelope tests and every kind of wrapper clock,
and on any window of it; and the property itself fails where a report says what the log contradicts.

The real logs of ../shared are checked by scripts/durations.py (and by the long tier, when they are
there): no test of the default tier reads them.
"""

from __future__ import annotations

import functools
import importlib.util
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase import parse_bytes
from logphase.reporting.report import Report, StepReport
from logphase.vocabulary.phases import Phase
from tests.conftest import ROOT, examples, fixture_logs
from tests.durations import check, printed_durations
from tests.test_envelopes import TIMED, TIMELESS, wrap
from tests.test_wrapper_clocks import constant, in_zone, server_times, wrapped, wrapped_bursty

FIXTURES = {p.name: p.read_bytes() for p in fixture_logs()}
NAMES = sorted(FIXTURES)
ENVELOPES = {**TIMELESS, **TIMED}


def violations(data: bytes, name: str) -> list[str]:
    return check(data, parse_bytes(data, source=name)).violations


@functools.cache
def plain(name: str) -> Report:
    return parse_bytes(FIXTURES[name], source=name)


@pytest.mark.parametrize("name", NAMES)
def test_every_fixture_keeps_the_durations_property(name: str) -> None:
    assert check(FIXTURES[name], plain(name)).violations == []


def test_the_fixtures_carry_the_property() -> None:
    """The fixtures hold what the property checks: totals, steps of both servers, and every duration
    the servers print, each matched."""
    found = [check(FIXTURES[name], plain(name)) for name in NAMES]
    printed = sum(f.printed for f in found)
    assert sum(f.totals for f in found) >= 40 and sum(f.steps for f in found) >= 30
    assert printed >= 100 and sum(f.matched for f in found) == printed
    kinds = {kind for name in NAMES for kind, *_ in printed_durations(FIXTURES[name].decode().split("\n"), 1, 10**9)}
    assert kinds == {
        "sglang load weight",
        "sglang capture",
        "vllm loading weights",
        "vllm model loading",
        "vllm graph capturing",
        "vllm init engine",
        "vllm torch.compile",
    }
    unknown = {plain(name).total_unknown for name in NAMES}
    assert {"partial_log", "no_launch"} <= unknown


@pytest.mark.parametrize("kind", sorted(ENVELOPES))
@settings(max_examples=examples(6))
@given(name=st.sampled_from(NAMES))
def test_every_envelope_keeps_the_durations_property(kind: str, name: str) -> None:
    """Each wrapper of the envelope tests around every line of a fixture (the timed ones in another
    zone than the server's)."""
    data = wrap(FIXTURES[name], lambda writer: ENVELOPES[kind])
    assert violations(data, name) == []


CLOCKS = {
    "kubectl in UTC, the server in UTC+8": lambda log: wrapped(log, in_zone(480)),
    "docker compose 2 h ahead": lambda log: wrapped(log, in_zone(-120)),
    "one constant stamp": lambda log: wrapped(log, constant(server_times(log)[0][1] + timedelta(seconds=5))),
    "a stamp a year off": lambda log: wrapped(log, constant(datetime(2025, 1, 1))),
    "a collector's batches": lambda log: wrapped_bursty(log, 330, 7, True),
}


@pytest.mark.parametrize("clock", sorted(CLOCKS))
@settings(max_examples=examples(6))
@given(name=st.sampled_from(NAMES))
def test_every_wrapper_clock_keeps_the_durations_property(clock: str, name: str) -> None:
    """A wrapper's clock (another zone, one constant stamp, batches) never makes a total longer than
    the server's own clock, a step outside its phase, or a printed duration disagree."""
    assert violations(CLOCKS[clock](FIXTURES[name]), name) == []


@settings(max_examples=examples(30))
@given(name=st.sampled_from([n for n in NAMES if FIXTURES[n].endswith(b"\n")]), data=st.data())
def test_every_window_keeps_the_durations_property(name: str, data: st.DataObject) -> None:
    """A window (the log from any line on): a total only when the window holds the run's launch, and
    then within the server's own clock; otherwise null, with its reason."""
    lines = FIXTURES[name].split(b"\n")
    start = data.draw(st.integers(1, max(1, len(lines) - 1)), label="window starts at line")
    assert violations(b"\n".join(lines[start - 1 :]), name) == []


# -- the property fails where the report says what the log contradicts ----------------------------------

GOOD = "vllm_v1_eagle_drafter_0_21.log"


def test_a_total_over_the_server_s_clock_is_a_violation() -> None:
    report = plain(GOOD)
    longer = report.model_copy(update={"total_startup_s": (report.total_startup_s or 0) + 60})
    assert any("over the span" in v for v in check(FIXTURES[GOOD], longer).violations)


def test_a_total_without_a_launch_or_a_reason_is_a_violation() -> None:
    name = "vllm_window_worker_init_failed_0_11.log"
    report = plain(name)
    assert (report.total_startup_s, report.total_unknown) == (None, "no_launch")
    guessed = report.model_copy(update={"total_startup_s": 0.0, "total_unknown": None})
    assert any("marks its launch" in v for v in check(FIXTURES[name], guessed).violations)
    silent = report.model_copy(update={"total_unknown": None})
    assert any("without a reason" in v for v in check(FIXTURES[name], silent).violations)


def test_a_step_outside_its_phase_is_a_violation() -> None:
    report = plain(GOOD)
    capture = next(p for p in report.phases if p.name is Phase.CUDA_GRAPH_CAPTURE)
    late = capture.model_copy(update={"start": "0001-09-02T10:21:11", "duration_s": 38.0})
    moved = report.model_copy(update={"phases": [late if p is capture else p for p in report.phases]})
    found = check(FIXTURES[GOOD], moved).violations
    assert any("torch_compile 30.87 s" in v and "before the phase" in v for v in found)


def test_a_printed_duration_the_report_misses_is_a_violation() -> None:
    report = plain(GOOD)
    loading = next(p for p in report.phases if p.name is Phase.WEIGHT_LOADING)
    kept = [s for s in loading.steps if s.duration_s != 2.14]
    assert len(kept) == len(loading.steps) - 1
    missing = report.model_copy(
        update={"phases": [p.model_copy(update={"steps": kept}) if p is loading else p for p in report.phases]}
    )
    assert any("vllm loading weights printed 2.14 s" in v for v in check(FIXTURES[GOOD], missing).violations)


# -- what the fixtures of the issue show ------------------------------------------------------------------


def test_a_harness_s_time_of_day_before_the_server_s_date_is_on_that_date() -> None:
    """Said 'READY after 17753232.0 h': the harness's [HH:MM:SS] lines were dated 0001-01-01."""
    report = plain("harness_time_of_day_eagle_v0523.log")
    assert report.outcome == "ready" and report.total_startup_s == 83.0
    assert report.phases[0].start == "2026-04-13T07:57:58"


@pytest.mark.parametrize(
    ("first", "dated", "day"),
    [
        ("09:20:05", "2026-05-09 09:20:26", "2026-05-09"),  # the same day
        ("23:59:50", "2026-05-10 00:00:12", "2026-05-09"),  # midnight passed between
        ("00:00:03", "2026-05-10 00:00:12", "2026-05-10"),
    ],
)
def test_a_time_of_day_before_any_date_takes_the_first_date_shown(first: str, dated: str, day: str) -> None:
    """Times of day printed before any stamp shows a date (a harness's, SGLang's time-only prefix)
    were dated 0001-01-01: they move onto the date the first dated stamp shows, or the day before."""
    log = (
        f"[{first}] Launching server (port 30000)\n"
        f"[{dated}] server_args=ServerArgs(model_path='org/m', tp_size=1, port=30000)\n"
        f"[{dated}] Init torch distributed begin.\n"
    ).encode()
    report = parse_bytes(log, source="x")
    assert report.phases[0].start == f"{day}T{first}"
    assert report.total_startup_s is not None and 0 <= report.total_startup_s < 30


def test_a_draft_model_s_set_up_is_listed_where_it_lies() -> None:
    """The target's load agrees with weight_loading and its capture with cuda_graph_capture, which ends
    at the target's capture end (11.87 s printed, 12 s of stamps): neither lists its one measure. The
    draft's set-up after it (its Init parallel, weight load, pool and captures: 16 s) is the stretch
    that follows, holds draft_model, lists its measures and ends at the draft's last capture end."""
    report = plain("harness_time_of_day_eagle_v0523.log")
    by = {p.name: p for p in report.phases}
    assert by[Phase.WEIGHT_LOADING].steps == [] and by[Phase.CUDA_GRAPH_CAPTURE].steps == []
    capture = by[Phase.CUDA_GRAPH_CAPTURE]
    assert capture.duration_s == 12.0 and capture.last_line == 22
    [draft] = [g for g in report.unaccounted if g.holds == "draft_model"]
    assert (draft.after, draft.before, draft.start, draft.first_line) == (
        Phase.CUDA_GRAPH_CAPTURE,
        Phase.WARMUP,
        capture.end,
        capture.last_line,
    )
    assert (draft.duration_s, draft.last_line) == (16.0, 35)
    assert [(s.name, s.duration_s) for s in draft.steps] == [
        ("load_weight", 4.63),
        ("capture_draft_decode_cuda_graph", 6.12),
        ("capture_draft_extend_cuda_graph", 3.95),
    ]


def test_a_draft_model_s_set_up_moves_no_phase_backwards() -> None:
    """The draft's second weight load after the target's capture leaves the rank in capture (a failure
    there is capture's, as the labels read it): only the durations split; without a draft, the capture
    phase lasts to its last end line as before."""
    report = plain("era_05_eagle_success.log")
    capture = next(p for p in report.phases if p.name is Phase.CUDA_GRAPH_CAPTURE)
    [draft] = [g for g in report.unaccounted if g.holds == "draft_model"]
    assert capture.end == draft.start and draft.steps
    assert all(s.line > (capture.last_line or 0) for s in draft.steps)
    no_draft = plain("era_03_success.log")
    assert Phase.CUDA_GRAPH_CAPTURE in {p.name for p in no_draft.phases}
    assert not any(g.holds or g.steps for g in no_draft.unaccounted)


def test_vllm_s_own_measures_lie_inside_their_phases() -> None:
    """torch.compile starts as the model is loaded, 7 s before its first line: capture starts there and
    lasts the server's two measures of it (compile, graphs: the KV cache is sized between them); init
    engine is listed where it starts, through capture, stretching no phase; the drafter's weights are a
    measure of their own; no rank of SGLang's in a vLLM run."""
    report = plain(GOOD)
    by = {p.name: p for p in report.phases}
    loading, capture = by[Phase.WEIGHT_LOADING], by[Phase.CUDA_GRAPH_CAPTURE]
    assert [(s.name, s.duration_s, s.through) for s in loading.steps] == [
        ("loading_weights", 41.27, None),
        ("loading_weights", 2.14, None),
        ("model_loading", 47.310211, None),
        ("init_engine", 45.02, Phase.CUDA_GRAPH_CAPTURE),
    ]
    assert loading.end == "0001-09-02T10:21:04" and report.ranks == []
    assert capture.start == "0001-09-02T10:21:04" and capture.end == "0001-09-02T10:21:49"
    assert capture.duration_s == 41.87  # 30.87 s of torch.compile + 11 s of graphs, not the 45 s span
    assert [s.name for s in capture.steps] == ["torch_compile", "graph_capture"]
    assert all(isinstance(s, StepReport) and s.duration_s <= capture.duration_s + 1 for s in capture.steps)


# -- the real logs, when they are there (the long tier) ------------------------------------------------

SHARED = ROOT.parent / "shared"


@pytest.mark.long
def test_the_real_logs_keep_the_durations_property() -> None:
    """Every real log of ../shared (scripts/durations.py prints the counts); skipped, saying so, where
    they are not."""
    logs = [log for folder in ("realworld", "vllm", "excerpts", "trtllm") for log in sorted((SHARED / folder).glob("*.log"))]
    if not logs:
        pytest.skip(f"no real logs in {SHARED}")
    failing = {str(log.relative_to(SHARED)): found for log in logs if (found := violations(log.read_bytes(), log.name))}
    assert failing == {}


def test_the_script_counts_what_it_checks(capsys: pytest.CaptureFixture[str]) -> None:
    """scripts/durations.py, on the logs it is given: the counts, and exit 0 when the property holds."""
    spec = importlib.util.spec_from_file_location("durations_script", ROOT / "scripts" / "durations.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    names = ["vllm_v1_eagle_drafter_0_21.log", "harness_time_of_day_eagle_v0523.log", "vllm_window_worker_init_failed_0_11.log"]
    assert script.main([str(ROOT / "fixtures" / "logs" / name) for name in names]) == 0
    out = capsys.readouterr().out
    # steps: vLLM's 6, the EAGLE draft's 3 (the target's capture agrees with its phase: not listed)
    assert out.startswith("logs 3 with_phases 2 totals 2 steps 9 server_printed 11/11 ") and out.rstrip().endswith(
        "violations 0"
    )
