from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase import Engine, parse_text
from logphase.engine.whole import parse_bytes
from logphase.faces.text import render_text
from tests.conftest import examples
from tests.logs import fed_in_chunks, kv_failure, tp2_startup


def report_in_chunks(data: bytes, cuts: list[int]) -> dict[str, object]:
    return fed_in_chunks(Engine(source="x"), data, cuts).model_dump(mode="json")


SAMPLE = (tp2_startup() + kv_failure(minute=40)).encode() + b"\rCapturing batches (bs=8 avail_mem=4.00 GB):  50%|##  | 1/2\r\n"


@settings(max_examples=examples(60), deadline=None)
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


def test_cut_mid_line_is_read_as_a_line_not_misread() -> None:
    """The end of the input ends its last line (issue 18): a message cut mid-word is an unknown line."""
    text = tp2_startup(ready=False)
    text = text[: text.index("max_total_num_tokens")] + "max_total_num_to"
    r = parse_text(text)
    assert r.outcome == "starting" and r.lines.truncated == 0 and r.lines.unrecognized == 1
    assert not any(w.kind == "truncated_input" for w in r.warnings)


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


# -- regressions found by the properties in tests/test_properties.py ------------------------------


def test_interleaved_ranks_far_apart_in_time_are_one_run() -> None:
    # TP1's early lines reach the file after TP0's later ones: not a clock jump of the run
    text = (
        "[2026-05-09 09:20:00] server_args=ServerArgs(model_path='m', tp_size=2)\n"
        "[2026-05-09 09:25:00 TP0] Load weight begin. avail mem=40.00 GB\n"
        "[2026-05-09 09:20:02 TP1] Init torch distributed begin.\n"
    )
    assert parse_text(text).runs == 1


def test_writer_clock_going_back_is_a_new_run() -> None:
    text = (
        "[2026-05-09 09:25:00 TP0] Load weight begin. avail mem=40.00 GB\n"
        "[2026-05-09 09:20:02 TP0] Init torch distributed begin.\n"
    )
    assert parse_text(text).runs == 2


def test_late_server_args_dump_belongs_to_the_run() -> None:
    text = (
        "[2026-05-09 09:20:02 TP0] Init torch distributed begin.\n"
        "[2026-05-09 09:20:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
    )
    r = parse_text(text)
    assert r.runs == 1 and r.phases[0].name.value == "launch" and r.config["model_path"] == "m"


def test_chained_traceback_survives_other_ranks_in_between() -> None:
    text = (
        "[2026-05-09 09:20:02 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sglang/srt/model_executor/cuda_graph_runner.py", line 1, in capture\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "\n"
        "[2026-05-09 09:20:02 TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=6.00 GB\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/sglang/srt/managers/scheduler.py", line 9, in run_scheduler_process\n'
        "Exception: Capture cuda graph failed: CUDA out of memory.\n"
    )
    r = parse_text(text)
    assert r.failure is not None and r.failure.rank == "TP0" and r.failure.cause.value == "cuda_oom"
    # the first exception of the chain is the original error; the wrapper raised while handling it is not
    assert r.failure.message.startswith("torch.OutOfMemoryError: CUDA out of memory")


def test_same_second_failures_pick_the_earliest_line() -> None:
    def failing(rank: str) -> str:
        return (
            f"[2026-05-09 09:20:21 {rank}] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sglang/srt/model_executor/model_runner.py", line 20, in init_memory_pool\n'
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n\n"
        )

    for first, second in (("TP1", "TP0"), ("TP0", "TP1")):
        r = parse_text(failing(first) + failing(second))
        assert r.failure is not None and r.failure.rank == first and r.failure.line == 1
        # the other rank's failure is an echo, on a later line, and the text says so truthfully
        assert [c.line for c in r.failure.consequences] == [5]
        assert "1 other line follow" in render_text(r)


def test_oom_killer_names_the_rank() -> None:
    text = (
        "[2026-05-09 09:20:02 TP1] Load weight begin. avail mem=40.00 GB\n"
        "Traceback (most recent call last):\n"
        '  File "/sglang/srt/entrypoints/engine.py", line 5, in _launch_subprocesses\n'
        "RuntimeError: Rank 1 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), "
        "a common cause is the OS OOM killer.\n"
    )
    r = parse_text(text)
    assert r.failure is not None and r.failure.cause.value == "killed" and r.failure.rank == "TP1"


def test_many_runs_keep_memory_flat_and_say_which_runs_are_kept() -> None:
    """A file appended to run after run: only the last KEEP_RUNS runs are kept whole, the report on
    the last one is the same, and asking for an early one is a clear error, not a wrong answer."""
    from logphase.folding.machine import KEEP_RUNS

    many = "".join(kv_failure(minute=m) for m in range(KEEP_RUNS + 8))
    engine = Engine(source="x")
    engine.feed(many)
    engine.finish()
    last = engine.report()
    assert last.runs == KEEP_RUNS + 8
    alone = parse_text(kv_failure(minute=KEEP_RUNS + 7))
    assert (last.outcome, last.phase, last.failure and last.failure.cause) == (
        alone.outcome,
        alone.phase,
        alone.failure and alone.failure.cause,
    )
    assert engine.report(run=KEEP_RUNS + 8).run == KEEP_RUNS + 8
    assert engine.report(run=9).outcome == "failed"  # the 32nd from the end: still whole
    with pytest.raises(ValueError, match="only the last 32 are kept whole"):
        engine.report(run=1)
