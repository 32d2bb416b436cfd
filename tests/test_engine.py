from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from logphase import Engine, parse_text
from logphase.engine import parse_bytes
from tests.logs import kv_failure, tp2_startup


def report_in_chunks(data: bytes, cuts: list[int]) -> dict[str, object]:
    engine = Engine(source="x")
    last = 0
    for cut in sorted(set(cuts)):
        engine.feed(data[last:cut])
        last = cut
    engine.feed(data[last:])
    engine.finish()
    return engine.report().model_dump(mode="json")


SAMPLE = (tp2_startup() + kv_failure(minute=40)).encode() + b"\rCapturing batches (bs=8 avail_mem=4.00 GB):  50%|##  | 1/2\r\n"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(SAMPLE)), max_size=40))
def test_chunking_does_not_change_the_report(cuts: list[int]) -> None:
    assert report_in_chunks(SAMPLE, cuts) == report_in_chunks(SAMPLE, [])


def test_byte_at_a_time_equals_whole() -> None:
    assert report_in_chunks(SAMPLE, list(range(len(SAMPLE)))) == report_in_chunks(SAMPLE, [])


def test_ready_run_phases_and_durations() -> None:
    r = parse_text(tp2_startup())
    assert r.outcome == "ready" and r.phase.value == "ready"
    names = [p.name.value for p in r.phases]
    assert names == ["launch", "distributed_init", "weight_loading", "memory_pool", "cuda_graph_capture", "warmup", "ready"]
    loading = next(p for p in r.phases if p.name.value == "weight_loading")
    assert loading.ranks["TP0"].duration_s == 17.0 and loading.ranks["TP1"].duration_s == 18.0
    assert loading.duration_s == 18.0
    assert r.total_startup_s == 34.0
    assert r.ranks == ["TP0", "TP1"]
    assert r.memory.kv_cache_gb == 12.0 and r.memory.weights_gb == 27.0
    assert r.config["mem_fraction_static"] == 0.85


def test_kv_failure_root_cause_hint_and_echo() -> None:
    r = parse_text(kv_failure())
    assert r.outcome == "failed"
    assert r.failure is not None
    assert r.failure.cause.value == "kv_cache_insufficient_memory"
    assert r.failure.phase is not None and r.failure.phase.value == "memory_pool"
    assert r.failure.line == 5
    assert "raise --mem-fraction-static" in r.failure.hint and "0.89" in r.failure.hint
    assert [c.line for c in r.failure.consequences] == [12]


def test_second_run_is_reported_and_counted() -> None:
    r = parse_text(kv_failure(minute=10) + tp2_startup(mem="0.88"))
    assert r.runs == 2 and r.outcome == "ready" and r.config["mem_fraction_static"] == 0.88
    assert "multiple_runs" in {w.kind for w in r.warnings}


def test_expect_mismatch_is_a_stale_log_warning() -> None:
    r = parse_text(kv_failure(), expect={"mem_fraction_static": "0.88"})
    stale = [w for w in r.warnings if w.kind == "stale_log"]
    assert len(stale) == 1 and "0.85" in stale[0].message and "0.88" in stale[0].message
    assert "stale log or ignored parameter" in stale[0].message
    assert not [w for w in parse_text(kv_failure(), expect={"mem_fraction_static": "0.85"}).warnings if w.kind == "stale_log"]


def test_conservation_of_lines() -> None:
    text = tp2_startup() + "garbage one\n\nmore garbage\n"
    r = parse_text(text)
    assert r.lines.total == r.lines.events + r.lines.unrecognized + r.lines.blank + r.lines.ignored + r.lines.truncated
    assert r.lines.unrecognized == 2 and r.lines.blank == 1


def test_cut_mid_line_is_truncated_not_misread() -> None:
    text = tp2_startup(ready=False)
    text = text[: text.index("max_total_num_tokens")] + "max_total_num_to"
    r = parse_text(text)
    assert r.outcome == "starting" and r.lines.truncated == 1
    assert any(w.kind == "truncated_input" for w in r.warnings)


def test_traceback_cut_before_exception_line_is_a_failure() -> None:
    text = kv_failure()
    text = text[: text.index("RuntimeError: Not enough")]
    r = parse_text(text)
    assert r.outcome == "failed" and r.failure is not None
    assert r.failure.phase is not None and r.failure.phase.value == "memory_pool"  # from the frames


def test_open_traceback_counts_before_finish() -> None:
    engine = Engine()
    text = kv_failure()
    engine.feed(text[: text.index("RuntimeError: Not enough")].encode())
    assert engine.report().outcome == "failed"


def test_since_ignores_older_output() -> None:
    text = kv_failure(minute=10) + tp2_startup()
    r = parse_bytes(text.encode(), since="2026-05-09 09:20:00")
    assert r.runs == 1 and r.outcome == "ready" and r.lines.ignored == kv_failure().count("\n")


def test_memory_pressure_when_capture_starts_low() -> None:
    text = tp2_startup().replace("avail mem=6.90 GB", "avail mem=4.80 GB")
    r = parse_text(text)
    pressure = [w for w in r.warnings if w.kind == "memory_pressure"]
    assert pressure and "4.80 GB" in pressure[0].message


def test_feed_returns_events_incrementally() -> None:
    engine = Engine()
    first = engine.feed(b"[2026-05-09 09:20:02 TP0] Init torch distributed begin.\n[2026-05-09 09:20:03 TP0] Load weight")
    assert [e.kind for e in first] == ["dist_init_begin"]
    assert engine.report().phase.value == "distributed_init"
    second = engine.feed(b" begin. avail mem=1.00 GB\n")
    assert [e.kind for e in second] == ["weight_load_begin"] and second[0].line == 2
