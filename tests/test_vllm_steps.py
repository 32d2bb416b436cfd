"""vLLM's own durations in the report (issue 21 point 2): 'Loading weights took', 'Model loading took
... seconds', 'Memory profiling takes', 'torch.compile takes/took ... in total', 'Graph capturing
finished in ... secs', 'init engine ... took' are sub-steps of their phase (JSON ``steps``, text rows
under the phase), and a phase the server measures whole ('Model loading took': load_model from its
first line to this one) takes the server's measure as its duration, finer than the whole-second
stamps. SGLang prints no such lines: its reports have no ``steps`` key and their durations are the
stamps' (its own 'Load weight end. elapsed=' is not read as a step)."""

from __future__ import annotations

import orjson

from logphase import parse_bytes
from logphase.faces.text import render_text
from logphase.reporting.report import PhaseReport, Report
from tests.conftest import FIXTURES

V1 = FIXTURES / "vllm_v1_clean_compile_0_11.log"
V0_PROFILING = FIXTURES / "vllm_kv_cache_no_room_v0_0_7.log"


def _phase(report: Report, name: str) -> PhaseReport:
    return next(p for p in report.phases if p.name.value == name)


def test_model_loading_is_the_weight_loading_duration() -> None:
    report = parse_bytes(V1.read_bytes())
    weights = _phase(report, "weight_loading")
    # the stamps say 09:14:23 to 09:14:29 (6 s); each rank printed its own measure
    assert weights.duration_s == 5.012846
    assert {rank: span.duration_s for rank, span in weights.ranks.items()} == {"TP0": 4.981377, "TP1": 5.012846}
    assert [(s.name, s.duration_s, s.rank, s.whole) for s in weights.steps] == [
        ("loading_weights", 3.82, "TP1", False),
        ("model_loading", 5.012846, "TP1", True),
    ]
    # the stamps still say where the phase is; the stretch after it is the stamps' too
    assert (weights.start, weights.end) == ("0001-10-06T09:14:23", "0001-10-06T09:14:29")


def test_compile_capture_and_init_engine_are_sub_steps() -> None:
    report = parse_bytes(V1.read_bytes())
    capture = _phase(report, "cuda_graph_capture")
    assert [(s.name, s.duration_s, s.rank) for s in capture.steps] == [("torch_compile", 33.43, "TP1"), ("graph_capture", 8.0, "TP0")]
    # no one measure of the whole phase, but one of each part: compile (in the profiling run) and the
    # graphs (after the KV cache is sized), 33.43 + 8 s; its stamps span 46 s with the sizing between
    assert capture.duration_s == 41.43
    pool = _phase(report, "memory_pool")
    (init,) = pool.steps
    assert (init.name, init.duration_s, init.rank, init.through) == ("init_engine", 53.11, None, capture.name)
    # the engine's profiling run (torch.compile in it) began as the model was loaded (09:14:28.89), 45 s
    # before the KV-cache sizing printed memory_pool's first line: memory_pool starts there
    assert (pool.start, pool.duration_s) == ("0001-10-06T09:14:29", 45.0)


def test_memory_profiling_of_v0() -> None:
    report = parse_bytes(V0_PROFILING.read_bytes())
    (profiling,) = _phase(report, "memory_pool").steps
    assert (profiling.name, profiling.duration_s, profiling.line) == ("memory_profiling", 2.71, 14)
    # 0.5-0.7 print the weights' memory, not their time: no step, the stamps' duration
    assert _phase(report, "weight_loading").steps == []


def test_the_text_shows_the_steps_under_their_phase() -> None:
    text = render_text(parse_bytes(V1.read_bytes()))
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("weight_loading"))
    assert "5.01 s" in lines[at]
    assert lines[at + 1].split() == ["·", "loading_weights", "3.82", "s", "TP1,", "line", "26"]
    assert lines[at + 2].split()[:5] == ["·", "model_loading", "(whole)", "5.01", "s"]
    assert any(line.split()[:4] == ["·", "init_engine", "to", "cuda_graph_capture"] for line in lines)
    assert any(line.split()[:4] == ["·", "graph_capture", "8", "s"] for line in lines)  # whole seconds as printed


def test_a_saved_report_keeps_its_steps() -> None:
    report = parse_bytes(V1.read_bytes())
    again = Report.model_validate_json(orjson.dumps(report.model_dump(mode="json")))
    assert again == report


def test_sglang_reports_have_no_steps() -> None:
    for name in ("tp1_success.log", "cuda_oom_capture.log"):
        report = parse_bytes((FIXTURES / name).read_bytes())
        assert all(not p.steps for p in report.phases)
        assert all("steps" not in p for p in report.model_dump(mode="json")["phases"])
        assert "·" not in render_text(report)
