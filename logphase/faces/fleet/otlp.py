"""Start-up traces over OTLP (``parse --otlp URL``, ``follow --otlp URL``): each run of a log as one
trace, built from its report with the OpenTelemetry SDK and sent by its OTLP/HTTP exporter (the
optional extra ``logphase[otel]``).

The trace: a root span ``startup`` (launch to ready, or to the failure, or to the last time the log
printed), a child per phase entered (and under it one per rank where the ranks' stays differ), and
under the phases the durations the server measured itself (vLLM's ``Loading weights took``,
``Graph capturing finished in`` ...), named as the server's own spans name the same step where it
has one (its pack's ``Step.span``: vLLM's ``Load weights``, ``Capture model``). Attributes say the
server, its version, the model and the parallel sizes; a failure is an error status with the cause
on the root and on the phase it struck in, with the error line, its line number and the hint, and
an ``exception`` event. Everything the report says is already redacted (``vocabulary/redact.py``),
and the URL's credentials are never printed.

Times: a report's times are as the log printed them, without a zone; they are read in the local
zone of the machine logphase runs on (``TZ``), as ``date`` would.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from logphase.faces.inputs import InputError
from logphase.packs import step_span
from logphase.recognising.detect import summary_setting
from logphase.vocabulary.redact import redact_text

if TYPE_CHECKING:
    from logphase.faces.live.follow import Follower
    from logphase.faces.live.follow_records import FollowRecord
    from logphase.reporting.report import PhaseReport, Report, StepReport

Attribute = str | bool | int | float | Sequence[str]
ROOT_SPAN = "startup"
# the parallel sizes a root span carries, by logphase's names of them (Pack.summary_settings)
PARALLEL = ("tp", "pp", "dp", "ep")
# how long a follow waits, at its end, for the traces still being sent
FLUSH_AT_EXIT_S = 15.0


@dataclass
class SpanPlan:
    """One span to send: its name, its time (seconds of the epoch), attributes, an error status (its
    description) and events, and the spans under it."""

    name: str
    start: float
    end: float
    attributes: dict[str, Attribute] = field(default_factory=dict)
    error: str | None = None
    events: list[tuple[str, float, dict[str, Attribute]]] = field(default_factory=list)
    children: list[SpanPlan] = field(default_factory=list)

    def walk(self) -> list[SpanPlan]:
        """This span and every span under it, parents first."""
        return [self, *(span for child in self.children for span in child.walk())]


def seconds(ts: str | None) -> float | None:
    """A report's time (ISO 8601 as printed, no zone) in seconds of the epoch, in the local zone."""
    if ts is None:
        return None
    try:
        return datetime.fromisoformat(ts).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


# -- the trace of a report ---------------------------------------------------------------------------------


def plan(report: Report, line_times: Mapping[int, str] | None = None, serving: bool = True) -> SpanPlan | None:
    """The trace of one run's report (None when the run printed no time at all). ``line_times``
    gives the time of the lines that print a step's duration (a step ends at its line); without it a
    step ends with its phase. ``serving``: a failure while serving is a span under the root (follow
    sends it later, as it comes: ``FollowTraces``)."""
    phases = [span for p in report.phases if (span := _phase(report, p, line_times or {})) is not None]
    if not phases:
        return None
    start = min(p.start for p in phases)
    ends = [p.end for p in phases]
    for ts in (report.failure.ts if report.failure is not None and not report.failure.while_serving else None, report.ready_at):
        if (at := seconds(ts)) is not None:
            ends.append(at)
    root = SpanPlan(ROOT_SPAN, start, max(max(ends), start), _root_attributes(report), children=phases)
    failure = report.failure
    if failure is not None and not failure.while_serving:
        root.error = _status(report)
        root.attributes.update(_failure_attributes(report))
        failed = next(
            (p for p in phases if p.attributes.get("logphase.phase") == (failure.phase.value if failure.phase else None)), None
        )
        if failed is not None:
            failed.error = root.error
            failed.events.append(_exception_event(report, failed.end))
        else:
            root.events.append(_exception_event(report, root.end))
    if serving and (after := serving_failure(report)) is not None:
        root.children.append(after)
    for warning in report.warnings:
        root.events.append(
            ("warning", root.end, {"logphase.warning": warning.kind, "logphase.message": warning.message, **_line(warning.line)})
        )
    return root


def serving_failure(report: Report) -> SpanPlan | None:
    """The span of a failure while serving, from ready to the failure, with its cause (None for none)."""
    failure = report.failure
    start = seconds(report.ready_at)
    if failure is None or not failure.while_serving or start is None:
        return None
    end = seconds(failure.ts) or start
    span = SpanPlan("failure while serving", start, max(end, start), _failure_attributes(report), _status(report))
    span.events.append(_exception_event(report, span.end))
    return span


def _root_attributes(report: Report) -> dict[str, Attribute]:
    from logphase import __version__

    out: dict[str, Attribute] = {
        "logphase.version": __version__,
        "logphase.source": report.source,
        # the start-up's outcome: a failure while serving came after it (a span of its own)
        "logphase.outcome": "ready" if report.failure is not None and report.failure.while_serving else report.outcome,
        "logphase.run": report.run,
        "logphase.runs": report.runs,
        "logphase.run_start_line": report.run_start_line,
        "logphase.ranks": list(report.ranks),
    }
    if report.server is not None:
        out["logphase.server"] = report.server
    if report.version is not None:
        out["logphase.server.version"] = report.version
    if report.phase is not None:
        out["logphase.phase"] = report.phase.value
    if report.total_startup_s is not None:
        out["logphase.total_startup_s"] = report.total_startup_s
    model = summary_setting(report.server, report.config, "model")
    if model is not None and model[1] is not None:
        out["logphase.model"] = str(model[1])
    for name in PARALLEL:
        setting = summary_setting(report.server, report.config, name)
        if setting is not None and setting[1] is not None:
            out[f"logphase.{name}"] = _number(setting[1])
    return out


def _number(value: object) -> int | str:
    try:
        return int(str(value))
    except ValueError:
        return str(value)


def _status(report: Report) -> str:
    f = report.failure
    assert f is not None
    return f"{f.cause.value}: {f.message.splitlines()[0] if f.message else ''}"


def _failure_attributes(report: Report) -> dict[str, Attribute]:
    f = report.failure
    assert f is not None
    out: dict[str, Attribute] = {
        "logphase.failure.cause": f.cause.value,
        "logphase.failure.message": f.message,
        "logphase.failure.hint": f.hint,
        "logphase.failure.line": f.line,
        "logphase.failure.while_serving": f.while_serving,
    }
    if f.phase is not None:
        out["logphase.failure.phase"] = f.phase.value
    if f.rank is not None:
        out["logphase.failure.rank"] = f.rank
    if f.check is not None:
        out["logphase.failure.check"] = f.check
    return out


def _exception_event(report: Report, end: float) -> tuple[str, float, dict[str, Attribute]]:
    """OpenTelemetry's ``exception`` event: the error line, its type when it names one."""
    f = report.failure
    assert f is not None
    message = f.message.splitlines()[0] if f.message else ""
    kind, colon, _ = message.partition(": ")
    attributes: dict[str, Attribute] = {
        "exception.type": kind if colon and kind.replace(".", "").replace("_", "").isalnum() else f.cause.value,
        "exception.message": message,
        "logphase.failure.hint": f.hint,
        "logphase.failure.line": f.line,
    }
    return ("exception", seconds(f.ts) or end, attributes)


def _line(line: int | None) -> dict[str, Attribute]:
    return {"logphase.line": line} if line is not None else {}


def _phase(report: Report, phase: PhaseReport, line_times: Mapping[int, str]) -> SpanPlan | None:
    start = seconds(phase.start)
    if start is None:
        return None
    end = seconds(phase.end)
    if end is None:
        end = start + (phase.duration_s or 0.0)
    attributes: dict[str, Attribute] = {"logphase.phase": phase.name.value}
    if phase.duration_s is not None:
        attributes["logphase.duration_s"] = phase.duration_s
    for key, value in (("logphase.first_line", phase.first_line), ("logphase.last_line", phase.last_line)):
        if value is not None:
            attributes[key] = value
    if phase.end is None:
        attributes["logphase.open"] = True
    if phase.lower_bound:
        attributes["logphase.lower_bound"] = True
    span = SpanPlan(phase.name.value, start, max(end, start), attributes)
    span.children.extend(_rank_spans(phase))
    span.children.extend(_step(report, phase, step, span, line_times) for step in phase.steps)
    return span


def _rank_spans(phase: PhaseReport) -> list[SpanPlan]:
    """A span per rank, when the ranks' stays in the phase differ (a slow node, a straggler)."""
    stays = {(r.start, r.end, r.duration_s) for r in phase.ranks.values()}
    if len(stays) <= 1:
        return []
    out = []
    for rank, stay in phase.ranks.items():
        start = seconds(stay.start)
        if start is None:
            continue
        end = seconds(stay.end)
        end = end if end is not None else start + (stay.duration_s or 0.0)
        attributes: dict[str, Attribute] = {"logphase.phase": phase.name.value, "logphase.rank": rank}
        if stay.duration_s is not None:
            attributes["logphase.duration_s"] = stay.duration_s
        if stay.first_line is not None:
            attributes["logphase.first_line"] = stay.first_line
        out.append(SpanPlan(f"{phase.name.value} {rank}", start, max(end, start), attributes))
    return out


def _step(report: Report, phase: PhaseReport, step: StepReport, parent: SpanPlan, line_times: Mapping[int, str]) -> SpanPlan:
    """A duration the server measured: it ends at its line (the server prints it when the step is
    done), or with its phase; it starts that long before, not before its phase."""
    end = seconds(line_times.get(step.line)) or parent.end
    start = max(parent.start, end - step.duration_s)
    attributes: dict[str, Attribute] = {
        "logphase.step": step.name,
        "logphase.duration_s": step.duration_s,
        "logphase.line": step.line,
    }
    if step.rank is not None:
        attributes["logphase.rank"] = step.rank
    if step.through is not None:
        attributes["logphase.through"] = step.through.value
    name = step_span(report.server, step.name) or step.name
    return SpanPlan(name, start, max(end, start), attributes)


# -- sending -----------------------------------------------------------------------------------------------


def check_url(url: str) -> str:
    """The traces endpoint of ``url``: an http(s) URL; one without a path gets OTLP/HTTP's
    ``/v1/traces`` (as OTEL_EXPORTER_OTLP_ENDPOINT does). InputError for anything else, and when the
    SDK is not installed."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"--otlp {shown_url(url)}: not an http:// or https:// URL of an OTLP/HTTP collector")
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise InputError("--otlp needs the OpenTelemetry SDK and its OTLP exporter: pip install 'logphase[otel]'") from None
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return urlunsplit(parts)


def shown_url(url: str) -> str:
    """``url`` as printed: its user information and secret-like query values redacted."""
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        host = parts.hostname or ""
        netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
        parts = parts._replace(netloc=netloc)
    return redact_text(urlunsplit(parts))


@dataclass
class Sent:
    """What sending a trace did: the root span's context (trace and span ids: a later span, a
    failure while serving, joins the same trace), or why it failed."""

    trace_id: int = 0
    span_id: int = 0
    error: str | None = None


def send(root: SpanPlan, report: Report, url: str, parent: tuple[int, int] | None = None) -> Sent:
    """Build ``root``'s spans with the SDK and export them to ``url`` (OTLP/HTTP, protobuf) at once.
    ``parent`` (trace id, span id) makes ``root`` a child of a span sent before."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    collected = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create(_resource(report)))
    provider.add_span_processor(SimpleSpanProcessor(collected))
    tracer = provider.get_tracer("logphase")
    context = None
    if parent is not None:
        remote = trace.SpanContext(parent[0], parent[1], is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
        context = trace.set_span_in_context(trace.NonRecordingSpan(remote))
    first = _emit(tracer, root, context)
    spans = collected.get_finished_spans()
    provider.shutdown()
    exporter = OTLPSpanExporter(endpoint=url)
    with _caught_warnings() as said:
        result = exporter.export(spans)
    exporter.shutdown()  # type: ignore[no-untyped-call]
    ids = first.get_span_context()
    if result is not SpanExportResult.SUCCESS:
        reason = "; ".join(dict.fromkeys([*said[:1], *said[-1:]])) if said else "the collector did not take it"
        return Sent(ids.trace_id, ids.span_id, error=f"--otlp {shown_url(url)}: export failed: {redact_text(reason)}")
    return Sent(ids.trace_id, ids.span_id)


def _resource(report: Report) -> dict[str, Any]:
    """The service the trace is of: the server (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read
    by the SDK, say otherwise: a pod's name from the downward API, say)."""
    out: dict[str, Any] = {"service.name": os.environ.get("OTEL_SERVICE_NAME") or report.server or "inference-server"}
    if report.version is not None:
        out["service.version"] = report.version
    return out


def _emit(tracer: Any, plan: SpanPlan, context: Any) -> Any:
    """Start and end ``plan``'s span at its own times (nanoseconds), then its children under it."""
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    span = tracer.start_span(plan.name, context=context, start_time=_ns(plan.start), attributes=dict(plan.attributes))
    for name, at, attributes in plan.events:
        span.add_event(name, attributes=dict(attributes), timestamp=_ns(at))
    if plan.error is not None:
        span.set_status(Status(StatusCode.ERROR, plan.error))
    inside = trace.set_span_in_context(span)
    for child in plan.children:
        _emit(tracer, child, inside)
    span.end(end_time=_ns(plan.end))
    return span


def _ns(at: float) -> int:
    return round(at * 1_000_000_000)


class _caught_warnings:
    """The warnings the exporter logs while it exports (why it failed), kept instead of printed: a
    failed export is one line of logphase's own."""

    def __enter__(self) -> list[str]:
        self.said: list[str] = []
        self.logger = logging.getLogger("opentelemetry")
        self.handler = _Keep(self.said)
        self.propagate = self.logger.propagate
        self.logger.addHandler(self.handler)
        self.logger.propagate = False
        return self.said

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.propagate = self.propagate


class _Keep(logging.Handler):
    def __init__(self, said: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.said = said

    def emit(self, record: logging.LogRecord) -> None:
        self.said.append(" ".join(record.getMessage().split())[:300])


# -- what parse and follow send ----------------------------------------------------------------------------


class StepTimes:
    """The time of every line that prints a measured duration (a step ends at its line), kept while
    a log is read with its events (``on_events``): the report keeps a step's line, not its time."""

    def __init__(self) -> None:
        self.times: dict[int, str] = {}

    def on_events(self, events: Sequence[Any]) -> None:
        for event in events:
            if getattr(event, "elapsed_s", None) is not None and event.ts is not None:
                self.times[event.line] = event.ts


def runs_of(
    name: str, expect: Mapping[str, str] | None = None, since: str | None = None, server: str | None = None
) -> tuple[list[Report], dict[int, str]]:
    """Every run of the log ``name`` (a file, compressed or not), and its steps' line times: a read
    of its own, with the events."""
    from logphase.engine.engine import Engine
    from logphase.faces.inputs import feed_all, open_input
    from logphase.reading.clock import input_year_hint

    handle, source = open_input(name)
    engine = Engine(source=source, since=since, server=server, year=input_year_hint(name))
    steps = StepTimes()
    feed_all(engine, handle, source, steps.on_events)
    first = engine.report(expect)
    return [engine.report(expect, run=n) for n in range(1, first.runs)] + [first], steps.times


def send_reports(reports: Sequence[Report], url: str, line_times: Mapping[int, str] | None = None) -> list[str]:
    """Each report (a run) as one trace; the errors, one line each (a run with no time is said too)."""
    errors = []
    for report in reports:
        root = plan(report, line_times)
        if root is None:
            errors.append(f"--otlp: {report.source} run {report.run}: no time printed, so no trace")
            continue
        sent = send(root, report, url)
        if sent.error is not None:
            errors.append(sent.error)
    return errors


class FollowTraces:
    """``follow --otlp``: each run sent as one trace when its verdict comes (ready or failed), or
    when following ends while it is still starting; a failure while serving after a ready run was
    sent is a span ``failure while serving`` in that run's trace. Sent from a thread of its own, so
    that a slow collector never holds the follow loop."""

    def __init__(self, url: str, current: Callable[[], Follower | None], path: str | None, say: Callable[[str], None]) -> None:
        self.url, self._current, self._path, self._say = url, current, path, say
        self._sent: dict[int, Sent] = {}  # run -> the root span sent
        self._serving_sent: set[int] = set()
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, daemon=True, name="logphase otlp")
        self._thread.start()

    def observe(self, record: FollowRecord) -> None:
        follower = self._current()
        if follower is None:
            return
        kind = record.kind
        if kind == "outcome":
            self._run_done(follower, int(getattr(record, "run", follower.report.run)))
        elif kind == "run":
            self._run_done(follower, int(getattr(record, "runs", 2)) - 1)
        elif kind in ("summary", "timeout") and not follower.stale:
            self._run_done(follower, follower.report.run)
        elif kind == "failure":
            self._serving_failure(follower)

    def _run_done(self, follower: Follower, run: int) -> None:
        if run in self._sent or run < 1:
            return
        report = follower.engine.report(run=run) if run != follower.report.run else follower.report
        self._sent[run] = Sent()  # claimed: sent once
        self._jobs.put(lambda: self._send_run(run, report))

    def _send_run(self, run: int, report: Report) -> None:
        times = self._line_times()
        root = plan(report, times, serving=False)  # a failure while serving is sent as it comes
        if root is None:
            self._say(f"--otlp: run {run}: no time printed, so no trace")
            return
        sent = send(root, report, self.url)
        self._sent[run] = sent
        if sent.error is not None:
            self._say(sent.error)

    def _serving_failure(self, follower: Follower) -> None:
        report = follower.report
        failure = report.failure
        if failure is None or not failure.while_serving or report.run not in self._sent or report.run in self._serving_sent:
            return
        self._serving_sent.add(report.run)

        def job() -> None:
            root = self._sent.get(report.run)
            span = serving_failure(report)
            if root is None or not root.trace_id or span is None:
                return
            sent = send(span, report, self.url, parent=(root.trace_id, root.span_id))
            if sent.error is not None:
                self._say(sent.error)

        self._jobs.put(job)

    def _line_times(self) -> dict[int, str]:
        if self._path is None or not os.path.isfile(self._path):
            return {}  # a pipe (a named one too) cannot be read again
        try:
            return runs_of(self._path)[1]
        except (OSError, InputError):
            return {}

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            finally:
                self._jobs.task_done()
        self._jobs.task_done()

    def close(self, wait: float = FLUSH_AT_EXIT_S) -> None:
        """Send what is left (at most ``wait`` seconds), then stop."""
        self._jobs.put(None)
        self._thread.join(wait)


__all__ = [
    "ROOT_SPAN",
    "FollowTraces",
    "SpanPlan",
    "StepTimes",
    "check_url",
    "plan",
    "runs_of",
    "send",
    "send_reports",
    "shown_url",
]
