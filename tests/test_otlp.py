"""Start-up traces over OTLP (parse --otlp, follow --otlp): a collector on a local port receives the
export, decodes it with the official protobuf definitions (opentelemetry-proto), and the spans are
checked against the report of the same log: one trace per run, a span per phase with its times, the
server's own steps under them with its span names, the cause as an error status."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from logphase.engine.whole import parse_file
from logphase.faces.fleet.otlp import ROOT_SPAN, check_url, plan, seconds, shown_url
from logphase.faces.inputs import InputError
from tests.conftest import FIXTURES
from tests.logs import written_now


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent: str
    start: float
    end: float
    attributes: dict[str, object]
    status: int
    message: str
    events: list[tuple[str, dict[str, object]]]
    resource: dict[str, object]


def _value(v: AnyValue) -> object:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


class Collector:
    """An OTLP/HTTP collector on 127.0.0.1: every POST to /v1/traces decoded and kept."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        received = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.paths.append(self.path)
                received.bodies.append(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                received._keep(request)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _keep(self, request: ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for s in scope.spans:
                    self.spans.append(
                        Span(
                            s.name,
                            s.trace_id.hex(),
                            s.span_id.hex(),
                            s.parent_span_id.hex(),
                            s.start_time_unix_nano / 1e9,
                            s.end_time_unix_nano / 1e9,
                            {a.key: _value(a.value) for a in s.attributes},
                            s.status.code,
                            s.status.message,
                            [(e.name, {a.key: _value(a.value) for a in e.attributes}) for e in s.events],
                            resource,
                        )
                    )

    def traces(self) -> dict[str, list[Span]]:
        out: dict[str, list[Span]] = {}
        for span in self.spans:
            out.setdefault(span.trace_id, []).append(span)
        return out


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.server.shutdown()


def _logphase(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "logphase", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def _by_name(spans: list[Span]) -> dict[str, Span]:
    return {s.name: s for s in spans}


def test_a_vllm_start_up_is_one_trace_its_phases_and_vllm_s_own_steps(collector: Collector) -> None:
    log = FIXTURES / "vllm_v1_clean_compile_0_11.log"
    done = _logphase("parse", str(log), "--otlp", collector.url)
    assert done.returncode == 0 and done.stderr == b""
    assert collector.paths == ["/v1/traces"]  # a URL without a path gets OTLP/HTTP's
    [spans] = collector.traces().values()
    report = parse_file(log)
    names = _by_name(spans)
    root = names[ROOT_SPAN]
    assert root.parent == "" and root.status == Status.STATUS_CODE_UNSET
    assert root.attributes["logphase.server"] == "vllm" and root.attributes["logphase.server.version"] == report.version
    assert root.attributes["logphase.model"] == "Qwen/Qwen3-8B" and root.attributes["logphase.tp"] == 2
    assert root.attributes["logphase.outcome"] == "ready" and root.resource["service.name"] == "vllm"
    assert root.end - root.start == pytest.approx(report.total_startup_s)
    for phase in report.phases:
        span = names[phase.name.value]
        assert span.parent == root.span_id
        assert span.start == pytest.approx(seconds(phase.start)) and span.attributes["logphase.first_line"] == phase.first_line
        for step in phase.steps:
            # vLLM's own span names where it has one for the step, logphase's step name elsewhere
            native = {"loading_weights": "Load weights", "model_loading": "Loading (GPU)", "graph_capture": "Capture model",
                      "init_engine": "Prepare model"}.get(step.name, step.name)  # fmt: skip
            child = next(s for s in spans if s.name == native and s.attributes["logphase.line"] == step.line)
            assert child.parent == span.span_id and child.attributes["logphase.duration_s"] == step.duration_s
            assert child.end - child.start <= step.duration_s + 1e-6
    assert {"Load weights", "Loading (GPU)", "Capture model", "Prepare model", "torch_compile"} <= set(names)
    # the ranks stayed in weight loading differently: a span each, under the phase
    ranked = [s for s in spans if s.name.startswith("weight_loading ")]
    assert {s.attributes["logphase.rank"] for s in ranked} == {"TP0", "TP1"}
    assert all(s.parent == names["weight_loading"].span_id for s in ranked)


def test_a_failed_start_up_carries_the_cause_the_line_and_the_hint(collector: Collector) -> None:
    log = FIXTURES / "kv_cache_insufficient.log"
    done = _logphase("parse", str(log), "--otlp", collector.url + "/v1/traces")
    assert done.returncode == 1  # the verdict on the log, as without --otlp
    report = parse_file(log)
    assert report.failure is not None
    names = _by_name(collector.spans)
    root, failed = names[ROOT_SPAN], names["memory_pool"]
    for span in (root, failed):
        assert span.status == Status.STATUS_CODE_ERROR and span.message.startswith("kv_cache_insufficient_memory: RuntimeError")
    assert root.attributes["logphase.failure.line"] == report.failure.line == 20
    assert root.attributes["logphase.failure.hint"] == report.failure.hint
    [(_, attributes)] = [e for e in failed.events if e[0] == "exception"]
    assert attributes["exception.type"] == "RuntimeError" and attributes["logphase.failure.hint"] == report.failure.hint
    assert names["weight_loading"].status == Status.STATUS_CODE_UNSET


def test_every_run_of_a_log_is_a_trace_of_its_own(collector: Collector) -> None:
    log = FIXTURES / "stale_two_runs.log"
    assert _logphase("parse", str(log), "--otlp", collector.url).returncode == 0
    traces = collector.traces()
    assert len(traces) == parse_file(log).runs == 2
    assert sorted(_by_name(t)[ROOT_SPAN].attributes["logphase.run"] for t in traces.values()) == [1, 2]
    collector.spans.clear()
    assert _logphase("parse", str(log), "--run", "1", "--otlp", collector.url).returncode in (0, 1)
    [spans] = collector.traces().values()
    assert _by_name(spans)[ROOT_SPAN].attributes["logphase.run"] == 1


def test_several_logs_and_a_saved_report(collector: Collector, tmp_path: Path) -> None:
    logs = [str(FIXTURES / name) for name in ("tp1_success.log", "nccl_error.log")]
    assert _logphase("parse", *logs, "--otlp", collector.url).returncode == 1
    assert sorted(_by_name(t)[ROOT_SPAN].attributes["logphase.outcome"] for t in collector.traces().values()) == [
        "failed",
        "ready",
    ]
    saved = tmp_path / "report.json"
    saved.write_bytes(_logphase("parse", logs[0], "--json").stdout)
    collector.spans.clear()
    assert _logphase("parse", str(saved), "--otlp", collector.url).returncode == 0
    assert _by_name(collector.spans)[ROOT_SPAN].attributes["logphase.source"] == logs[0]


def test_follow_sends_a_run_at_its_verdict(collector: Collector) -> None:
    data = (FIXTURES / "cuda_oom_capture.log").read_bytes()
    done = _logphase("follow", "--otlp", collector.url, stdin=data)
    assert done.returncode == 1
    [spans] = collector.traces().values()
    assert _by_name(spans)["cuda_graph_capture"].status == Status.STATUS_CODE_ERROR


def test_follow_joins_a_failure_while_serving_to_the_trace_of_its_start_up(collector: Collector, tmp_path: Path) -> None:
    log = FIXTURES / "ray_wrapped_oom.log"
    report = parse_file(log)
    assert report.failure is not None and report.failure.while_serving
    copy = tmp_path / "server.log"
    copy.write_bytes(log.read_bytes())
    written_now(copy)  # a file being written as follow starts, not a stale one
    done = _logphase("follow", str(copy), "--until", "eof", "--timeout", "5", "--otlp", collector.url)
    assert done.returncode == 124, done.stderr
    [spans] = collector.traces().values()
    names = _by_name(spans)
    serving = names["failure while serving"]
    assert serving.parent == names[ROOT_SPAN].span_id and serving.status == Status.STATUS_CODE_ERROR
    assert names[ROOT_SPAN].status == Status.STATUS_CODE_UNSET and names[ROOT_SPAN].attributes["logphase.outcome"] == "ready"


def test_secrets_are_not_sent(collector: Collector, tmp_path: Path) -> None:
    text = (FIXTURES / "kv_cache_insufficient.log").read_text()
    text = text.replace(
        "model_path='google/gemma-2-27b-it'",
        "model_path='https://bob:hunter2@models.internal/gemma', api_key='sk-live-123456'",
        1,
    )
    assert "hunter2" in text
    log = tmp_path / "server.log"
    log.write_text(text)
    assert _logphase("parse", str(log), "--otlp", collector.url).returncode == 1
    body = b"".join(collector.bodies)
    assert b"hunter2" not in body and b"sk-live" not in body and b"***" in body


def test_a_collector_that_is_not_there_is_one_line_and_the_verdict_stands(tmp_path: Path) -> None:
    done = _logphase(
        "parse", str(FIXTURES / "tp1_success.log"), "--otlp", "http://user:pw@127.0.0.1:9/v1/traces",
        env={"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1"},
    )  # fmt: skip
    assert done.returncode == 0
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "export failed" in lines[0] and "pw" not in lines[0] and "***@127.0.0.1" in lines[0]
    bad = _logphase("parse", str(FIXTURES / "tp1_success.log"), "--otlp", "collector:4318")
    assert bad.returncode == 2 and b"not an http:// or https:// URL" in bad.stderr and b"Traceback" not in bad.stderr


def test_without_the_sdk_otlp_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(InputError, match=r"pip install 'logphase\[otel\]'"):
        check_url("http://127.0.0.1:4318")


def test_the_plan_holds_the_report_s_times() -> None:
    report = parse_file(FIXTURES / "tp2_gloo_nccl_success.log")
    root = plan(report)
    assert root is not None and root.name == ROOT_SPAN
    assert [c.name for c in root.children] == [p.name.value for p in report.phases]
    assert (
        shown_url("https://u:secret@collector.example:4318/v1/traces?token=abc")
        == "https://***@collector.example:4318/v1/traces?token=***"
    )


def test_parse_puts_a_failure_while_serving_in_the_trace_of_its_start_up(collector: Collector) -> None:
    assert _logphase("parse", str(FIXTURES / "ray_wrapped_oom.log"), "--otlp", collector.url).returncode == 1
    names = _by_name(collector.spans)
    assert names["failure while serving"].parent == names[ROOT_SPAN].span_id
    assert names["failure while serving"].attributes["logphase.failure.cause"] == "cuda_oom"
    assert names[ROOT_SPAN].status == Status.STATUS_CODE_UNSET
