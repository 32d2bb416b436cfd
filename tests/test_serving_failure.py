"""A failure while serving reads as one (issue 18 point 8): a server that was ready and failed later
is not 'FAILED in ready after <its start-up time>'. Every face says both facts: the start-up that
succeeded, then the failure, when, and how long after ready."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from logphase import parse_bytes, parse_text
from logphase.faces.text import render_text
from logphase.faces.timeline import render_html
from logphase.faces.wording import describe_failure, headline
from logphase.reporting.report import Report
from tests.conftest import FIXTURES

# ready at 14:26:07 after 5.7 min, the decode loop dies at 15:05:27
SERVING_THEN_OOM = """\
[2026-05-09 14:20:25] server_args=ServerArgs(model_path='org/m', tp_size=1, mem_fraction_static=0.85, port=30000)
[2026-05-09 14:20:30 TP0] Init torch distributed begin.
[2026-05-09 14:20:31 TP0] Init torch distributed ends. mem usage=0.50 GB
[2026-05-09 14:20:31 TP0] Load weight begin. avail mem=77.00 GB
[2026-05-09 14:25:40 TP0] Load weight end. type=M, dtype=torch.bfloat16, avail mem=47.00 GB, mem usage=30.00 GB.
[2026-05-09 14:25:41 TP0] KV Cache is allocated. #tokens: 400000, K size: 12.00 GB, V size: 12.00 GB
[2026-05-09 14:25:41 TP0] Memory pool end. avail mem=22.00 GB
[2026-05-09 14:25:42 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=21.80 GB
[2026-05-09 14:26:01 TP0] Capture cuda graph end. Time elapsed: 19.00 s. mem usage=0.80 GB. avail mem=21.00 GB.
[2026-05-09 14:26:02] INFO:     Started server process [4242]
[2026-05-09 14:26:04] INFO:     127.0.0.1:40000 - "GET /model_info HTTP/1.1" 200 OK
[2026-05-09 14:26:06] INFO:     127.0.0.1:40002 - "POST /generate HTTP/1.1" 200 OK
[2026-05-09 14:26:07] The server is fired up and ready to roll!
[2026-05-09 15:05:20 TP0] Decode batch, #running-req: 120, #token: 380000, token usage: 0.95, cuda graph: True, gen throughput (token/s): 4000.00, #queue-req: 3
[2026-05-09 15:05:27 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2310, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 700, in event_loop_overlap
    batch_result = self.run_batch(batch)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.00 GiB is free.

[2026-05-09 15:05:28] Received sigquit from a child process. It usually means the child failed.
"""

# durations as every face writes them (wording.fmt_duration): one decimal in minutes
HEADLINE = "READY after 5.7 min, then FAILED while serving at 15:05:27 (39.3 min after ready): cuda_oom"


@pytest.fixture(scope="module")
def serving() -> Report:
    return parse_text(SERVING_THEN_OOM, source="serving.log")


def test_the_headline_says_ready_then_failed_while_serving(serving: Report) -> None:
    assert headline(serving) == HEADLINE
    assert render_text(serving).splitlines()[0] == f"serving.log (SGLang): {HEADLINE}"
    assert describe_failure(serving).startswith("cuda_oom while serving on TP0 at line 15: torch.OutOfMemoryError")


def test_the_json_keeps_both_facts(serving: Report) -> None:
    data: dict[str, Any] = json.loads(serving.model_dump_json())
    # as before: a failed run, in the serving phase, and the start-up's own time
    assert (data["outcome"], data["phase"], data["total_startup_s"]) == ("failed", "ready", 342.0)
    assert (data["ready_at"], data["ready_line"]) == ("2026-05-09T14:26:07", 13)
    failure = data["failure"]
    assert (failure["phase"], failure["ts"], failure["line"]) == ("ready", "2026-05-09T15:05:27", 15)
    assert failure["while_serving"] is True and failure["after_ready_s"] == 2360.0


def test_the_timeline_says_it_too(serving: Report) -> None:
    page = render_html(serving)
    assert HEADLINE in page
    assert "(then failed while serving at 15:05:27)" in page


def test_the_metrics_tell_a_serving_failure_from_a_failed_start_up(serving: Report) -> None:
    pytest.importorskip("prometheus_client")
    from logphase.faces.live.metrics import ReportCollector

    def gauges(report: Report) -> dict[str, float]:
        families = ReportCollector(lambda: (report, None), "test").collect()
        return {s.name: s.value for f in families for s in f.samples if not s.labels}

    assert gauges(serving)["logphase_failed_while_serving"] == 1.0
    assert gauges(serving)["logphase_startup_seconds"] == 342.0  # launch to ready
    startup_failure = parse_bytes(FIXTURES.joinpath("kv_cache_insufficient.log").read_bytes())
    assert gauges(startup_failure)["logphase_failed_while_serving"] == 0.0


def test_the_real_shaped_fixture_reads_the_same_way() -> None:
    report = parse_bytes(FIXTURES.joinpath("ray_wrapped_oom.log").read_bytes())
    assert headline(report) == "READY after 54 s, then FAILED while serving at 07:44:36 (71 s after ready): cuda_oom"
    assert report.failure is not None and report.failure.while_serving and report.ready_line == 61


def test_a_failed_start_up_keeps_its_headline() -> None:
    report = parse_bytes(FIXTURES.joinpath("kv_cache_insufficient.log").read_bytes())
    assert report.failure is not None and not report.failure.while_serving and report.failure.after_ready_s is None
    assert headline(report).startswith("FAILED in memory_pool after ")


def test_a_window_of_a_serving_log_says_failed_while_serving_without_a_ready_it_did_not_see() -> None:
    """The window starts after the ready line: no start-up to speak of, only the failure."""
    window = SERVING_THEN_OOM.split("[2026-05-09 15:05:20", 1)[1]
    report = parse_text("[2026-05-09 15:05:20" + window)
    assert report.ready_at is None and report.failure is not None and report.failure.while_serving
    assert headline(report) == "FAILED while serving at 15:05:27: cuda_oom"


def test_a_failure_on_another_day_names_its_date() -> None:
    late = SERVING_THEN_OOM.replace("2026-05-09 15:05", "2026-05-10 15:05")
    assert "FAILED while serving at 2026-05-10 15:05:27 (24.7 h after ready)" in headline(parse_text(late))


def test_a_request_s_traceback_cut_after_its_header_is_no_failure_of_the_server() -> None:
    """uvicorn logs 'Exception in ASGI application' on the line before one request's traceback: the
    traceback is that request's whatever it holds, even cut before its first frame (a property's
    example: the log ended at 'Trace' and the server read as failed while serving)."""
    from logphase import parse_bytes

    fixture = (Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "serving_request_errors.log").read_bytes()
    at = fixture.index(b"ERROR:    Exception in ASGI application")
    cut = fixture[: fixture.index(b"\n", at) + len(b"\nTrace")]
    assert cut.endswith(b"\nTrace")
    report = parse_bytes(cut)
    assert report.outcome == "ready" and report.failure is None
    # the same header in a start-up (the warmup request's, before ready) does not hide its failure
    start_up = SERVING_THEN_OOM.split("[2026-05-09 14:26:07] The server is fired up", 1)[0].encode()
    warmup_fails = b"ERROR:    Exception in ASGI application\nTraceback (most recent call last):\n  File \"/x.py\", line 1, in f\nRuntimeError: boom\n"
    assert parse_bytes(start_up + warmup_fails).outcome == "failed"
    # in a window (no start-up before it) the header alone shows a request handled: the server is up
    assert parse_bytes(warmup_fails).failure is None
