"""follow --metrics-port: the report being followed, served as Prometheus metrics.

Collected at scrape time from the follower's latest report (nothing is kept twice, nothing goes
stale between scrapes). Needs the optional extra ``logphase[metrics]`` (prometheus_client).

Bounded whatever the log says: one series per rank up to the run's world size (tp x pp x dp from
its server args; RANK_CAP when they are not known), the rest counted in ``logphase_ranks_omitted``;
a connection idle for IDLE_TIMEOUT_S is closed (each open connection holds a thread).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from logphase.faces.inputs import InputError
from logphase.recognising.detect import summary_setting
from logphase.vocabulary.phases import PHASE_ORDER
from logphase.vocabulary.servers import Server

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from logphase.faces.fleet.sidecar import StateSource
    from logphase.reporting.report import Report

OUTCOMES = ("starting", "ready", "failed")
GIB = 1024**3  # SGLang's "GB" are GiB (torch.cuda.mem_get_info / (1 << 30))
RANK_CAP = 256  # per-rank series when the run's world size is not known
IDLE_TIMEOUT_S = 10.0  # a scrape takes milliseconds; a connection silent this long is dropped
DEFAULT_HOST = "127.0.0.1"  # this machine only: the page names the log and the model

# The metric names, said once: the collector serves them and the Grafana dashboard
# (faces/fleet/grafana.py) queries them, so a renamed metric renames the dashboard's queries too.
METRIC_INFO = "logphase"  # an info family: served with the suffix _info, logphase_info
METRIC_PHASE = "logphase_phase"
METRIC_OUTCOME = "logphase_outcome"
METRIC_PHASE_DURATION = "logphase_phase_duration_seconds"
METRIC_SINCE_LAST_LINE = "logphase_seconds_since_last_line"
METRIC_FAILURE = "logphase_failure"
METRIC_FAILED_WHILE_SERVING = "logphase_failed_while_serving"
METRIC_STARTUP = "logphase_startup_seconds"
METRIC_GPU_FREE = "logphase_gpu_free_bytes"
METRIC_RANKS_OMITTED = "logphase_ranks_omitted"


class ReportCollector:
    """A prometheus_client collector over ``current()``: (the latest report or None, the monotonic
    time of the last input or None)."""

    def __init__(self, current: Callable[[], tuple[Report | None, float | None]], version: str) -> None:
        self._current = current
        self._version = version

    def collect(self) -> Iterator[Any]:
        report, last_input = self._current()
        yield _info(report, self._version)
        for family in _REPORT_FAMILIES:
            yield family(report)
        yield _since_last_line(last_input)
        yield from _failure_families(report)
        yield _startup_seconds(report)
        yield from _per_rank_families(report)


def _gauge(name: str, documentation: str, labels: tuple[str, ...] = ()) -> Any:
    """A gauge family (prometheus_client is an optional extra: imported when scraped)."""
    from prometheus_client.core import GaugeMetricFamily

    return GaugeMetricFamily(name, documentation, labels=labels)


def _info(report: Report | None, version: str) -> Any:
    from prometheus_client.core import InfoMetricFamily

    info = InfoMetricFamily(METRIC_INFO, "logphase and the server it follows", labels=("version", "source", "model", "tp"))
    model = summary_setting(report.server, report.config, "model") if report is not None else None
    tp = summary_setting(report.server, report.config, "tp") if report is not None else None
    info.add_metric(
        [],
        {
            "version": version,
            "source": report.source if report is not None else "",
            "model": str(model[1] or "") if model is not None else "",
            "tp": str(tp[1] or "") if tp is not None else "",
        },
    )
    return info


def _phase(report: Report | None) -> Any:
    phase = _gauge(METRIC_PHASE, "1 for the phase the server is in, 0 for the others", ("phase",))
    current = report.phase if report is not None else None
    for p in PHASE_ORDER:
        phase.add_metric([p.value], 1.0 if p is current else 0.0)
    return phase


def _outcome(report: Report | None) -> Any:
    outcome = _gauge(METRIC_OUTCOME, "1 for the current outcome, 0 for the others", ("outcome",))
    for o in OUTCOMES:
        outcome.add_metric([o], 1.0 if report is not None and report.outcome == o else 0.0)
    return outcome


def _phase_durations(report: Report | None) -> Any:
    durations = _gauge(
        METRIC_PHASE_DURATION,
        "each phase entered, first rank in to last rank out (so far, if open)",
        ("phase",),
    )
    for entered in report.phases if report is not None else []:
        if entered.duration_s is not None:
            durations.add_metric([entered.name.value], entered.duration_s)
    return durations


# the families read from the report alone, in the order they are served
_REPORT_FAMILIES: tuple[Callable[[Report | None], Any], ...] = (_phase, _outcome, _phase_durations)


def _since_last_line(last_input: float | None) -> Any:
    since = _gauge(METRIC_SINCE_LAST_LINE, "seconds since the log last grew (a stall when large)")
    if last_input is not None:
        since.add_metric([], max(0.0, time.monotonic() - last_input))
    return since


def _failure_families(report: Report | None) -> Iterator[Any]:
    failure = _gauge(METRIC_FAILURE, "1 for the root cause once the start-up failed", ("cause", "phase"))
    f = report.failure if report is not None else None
    if f is not None:
        failure.add_metric([f.cause.value, f.phase.value if f.phase else ""], 1.0)
    yield failure
    serving = _gauge(
        METRIC_FAILED_WHILE_SERVING,
        "1 once the server failed while serving: its start-up succeeded (logphase_startup_seconds is launch to ready)",
    )
    serving.add_metric([], 1.0 if f is not None and f.while_serving else 0.0)
    yield serving


def _startup_seconds(report: Report | None) -> Any:
    total = _gauge(METRIC_STARTUP, "launch to ready (or to the failure), once known")
    if report is not None and report.outcome != "starting" and report.total_startup_s is not None:
        total.add_metric([], report.total_startup_s)
    return total


def _per_rank_families(report: Report | None) -> Iterator[Any]:
    """Free memory per rank, bounded by the world size; what the bound leaves out, counted."""
    free = _gauge(METRIC_GPU_FREE, "free GPU memory per rank at its latest phase boundary", ("rank", "boundary"))
    per_rank = report.memory.avail_gb.items() if report is not None else []
    ranks = [(rank, readings) for rank, readings in per_rank if readings]
    cap = rank_cap(report.config if report is not None else {}, report.server if report is not None else None)
    for rank, readings in ranks[:cap]:
        boundary, gb = _latest(readings)
        free.add_metric([rank, boundary], gb * GIB)
    yield free
    omitted = _gauge(
        METRIC_RANKS_OMITTED,
        "ranks left out of the per-rank series: beyond the run's world size (tp x pp x dp), or beyond "
        f"{RANK_CAP} when it is not known",
    )
    omitted.add_metric([], float(max(0, len(ranks) - cap)))
    yield omitted


def rank_cap(config: Mapping[str, object], server: Server | None = None) -> int:
    """How many per-rank series to serve: the world size from the server args (tp x pp x dp),
    RANK_CAP when they do not say; never more than 16 x RANK_CAP whatever they say."""
    size = 1
    known = False
    for key in ("tp", "pp", "dp"):
        setting = summary_setting(server, dict(config), key)
        value = setting[1] if setting is not None else None
        try:
            factor = int(str(value))
        except ValueError:
            continue
        if factor > 0:
            size *= factor
            known = known or key == "tp"
    return min(size, 16 * RANK_CAP) if known else RANK_CAP


_PHASE_INDEX = {p.value: i for i, p in enumerate(PHASE_ORDER)}


def _latest(readings: dict[str, float]) -> tuple[str, float]:
    """The reading at the latest boundary: 'weight_loading_end' is after 'weight_loading_start'."""
    order = _PHASE_INDEX

    def key(boundary: str) -> tuple[int, int]:
        phase, _, edge = boundary.rpartition("_")
        return (order.get(phase, -1), 1 if edge == "end" else 0)

    boundary = max(readings, key=key)
    return boundary, readings[boundary]


def serve(
    port: int,
    current: Callable[[], tuple[Report | None, float | None]],
    host: str = DEFAULT_HOST,
    idle_timeout: float = IDLE_TIMEOUT_S,
    probe_state: StateSource | None = None,
) -> int:
    """Start the HTTP server on ``host``:``port`` (0: a free port) in a daemon thread; returns the port."""
    return int(start(port, current, host, idle_timeout, probe_state).server_address[1])


def start(
    port: int,
    current: Callable[[], tuple[Report | None, float | None]],
    host: str = DEFAULT_HOST,
    idle_timeout: float = IDLE_TIMEOUT_S,
    probe_state: StateSource | None = None,
) -> WSGIServer:
    """The server behind :func:`serve` (``shutdown()`` and ``server_close()`` stop it). Like
    prometheus_client's ``start_http_server`` (a thread per connection), but each connection
    silent for ``idle_timeout`` seconds is closed, so idle clients do not pile up threads.
    ``/startup``, ``/ready`` and ``/live`` answer the probes on ``probe_state()``
    (``logphase/faces/fleet/sidecar.py``), every other path the metrics."""
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from logphase.faces.fleet.sidecar import probe_paths

    try:
        from prometheus_client import CollectorRegistry, make_wsgi_app
        from prometheus_client.exposition import ThreadingWSGIServer
    except ImportError:
        raise InputError("--metrics-port needs prometheus_client: pip install 'logphase[metrics]'") from None
    from logphase import __version__

    class Handler(WSGIRequestHandler):
        timeout = idle_timeout  # socket timeout of every read and write of the connection

        def handle(self) -> None:
            try:
                super().handle()
            except (TimeoutError, ConnectionError):
                self.close_connection = True  # idle or gone: the thread ends

        def log_message(self, format: str, *args: Any) -> None:
            """Scrapes are not logged."""

    registry = CollectorRegistry(auto_describe=False)
    registry.register(ReportCollector(current, __version__))
    try:
        family, _, _, _, sockaddr = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]

        class Server(ThreadingWSGIServer):
            address_family = family

        app = probe_paths(probe_state, make_wsgi_app(registry))
        server = make_server(str(sockaddr[0]), port, app, Server, handler_class=Handler)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise InputError(f"--metrics-port {port} on {host or 'all interfaces'}: cannot listen: {reason}") from None
    threading.Thread(target=server.serve_forever, daemon=True, name="logphase metrics").start()
    return server


__all__ = [
    "DEFAULT_HOST",
    "IDLE_TIMEOUT_S",
    "METRIC_FAILED_WHILE_SERVING",
    "METRIC_FAILURE",
    "METRIC_GPU_FREE",
    "METRIC_INFO",
    "METRIC_OUTCOME",
    "METRIC_PHASE",
    "METRIC_PHASE_DURATION",
    "METRIC_RANKS_OMITTED",
    "METRIC_SINCE_LAST_LINE",
    "METRIC_STARTUP",
    "RANK_CAP",
    "ReportCollector",
    "rank_cap",
    "serve",
    "start",
]
