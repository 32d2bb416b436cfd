"""follow --metrics-port: the report being followed, served as Prometheus metrics.

Collected at scrape time from the follower's latest report (nothing is kept twice, nothing goes
stale between scrapes). Needs the optional extra ``logphase[metrics]`` (prometheus_client).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from logphase.faces.inputs import InputError
from logphase.pipeline.phases import PHASE_ORDER

if TYPE_CHECKING:
    from logphase.pipeline.report import Report

OUTCOMES = ("starting", "ready", "failed")
GIB = 1024**3  # SGLang's "GB" are GiB (torch.cuda.mem_get_info / (1 << 30))


class ReportCollector:
    """A prometheus_client collector over ``current()``: (the latest report or None, the monotonic
    time of the last input or None)."""

    def __init__(self, current: Callable[[], tuple[Report | None, float | None]], version: str) -> None:
        self._current = current
        self._version = version

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily

        report, last_input = self._current()
        info = InfoMetricFamily("logphase", "logphase and the server it follows", labels=("version", "source", "model", "tp"))
        config = report.config if report is not None else {}
        info.add_metric(
            [],
            {
                "version": self._version,
                "source": report.source if report is not None else "",
                "model": str(config.get("model_path") or ""),
                "tp": str(config.get("tp_size") or ""),
            },
        )
        yield info
        phase = GaugeMetricFamily("logphase_phase", "1 for the phase the server is in, 0 for the others", labels=("phase",))
        current = report.phase if report is not None else None
        for p in PHASE_ORDER:
            phase.add_metric([p.value], 1.0 if p is current else 0.0)
        yield phase
        outcome = GaugeMetricFamily("logphase_outcome", "1 for the current outcome, 0 for the others", labels=("outcome",))
        for o in OUTCOMES:
            outcome.add_metric([o], 1.0 if report is not None and report.outcome == o else 0.0)
        yield outcome
        durations = GaugeMetricFamily(
            "logphase_phase_duration_seconds",
            "each phase entered, first rank in to last rank out (so far, if open)",
            labels=("phase",),
        )
        for entered in report.phases if report is not None else []:
            if entered.duration_s is not None:
                durations.add_metric([entered.name.value], entered.duration_s)
        yield durations
        since = GaugeMetricFamily("logphase_seconds_since_last_line", "seconds since the log last grew (a stall when large)")
        if last_input is not None:
            since.add_metric([], max(0.0, time.monotonic() - last_input))
        yield since
        failure = GaugeMetricFamily(
            "logphase_failure", "1 for the root cause once the start-up failed", labels=("cause", "phase")
        )
        if report is not None and report.failure is not None:
            f = report.failure
            failure.add_metric([f.cause.value, f.phase.value if f.phase else ""], 1.0)
        yield failure
        serving = GaugeMetricFamily(
            "logphase_failed_while_serving",
            "1 once the server failed while serving: its start-up succeeded (logphase_startup_seconds is launch to ready)",
        )
        serving.add_metric([], 1.0 if report is not None and report.failure is not None and report.failure.while_serving else 0.0)
        yield serving
        total = GaugeMetricFamily("logphase_startup_seconds", "launch to ready (or to the failure), once known")
        if report is not None and report.outcome != "starting" and report.total_startup_s is not None:
            total.add_metric([], report.total_startup_s)
        yield total
        free = GaugeMetricFamily(
            "logphase_gpu_free_bytes", "free GPU memory per rank at its latest phase boundary", labels=("rank", "boundary")
        )
        for rank, readings in report.memory.avail_gb.items() if report is not None else []:
            if readings:
                boundary, gb = _latest(readings)
                free.add_metric([rank, boundary], gb * GIB)
        yield free


_PHASE_INDEX = {p.value: i for i, p in enumerate(PHASE_ORDER)}


def _latest(readings: dict[str, float]) -> tuple[str, float]:
    """The reading at the latest boundary: 'weight_loading_end' is after 'weight_loading_start'."""
    order = _PHASE_INDEX

    def key(boundary: str) -> tuple[int, int]:
        phase, _, edge = boundary.rpartition("_")
        return (order.get(phase, -1), 1 if edge == "end" else 0)

    boundary = max(readings, key=key)
    return boundary, readings[boundary]


def serve(port: int, current: Callable[[], tuple[Report | None, float | None]], host: str = "") -> int:
    """Start the HTTP server on ``port`` (0: a free one) in a daemon thread; returns the port."""
    try:
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError:
        raise InputError("--metrics-port needs prometheus_client: pip install 'logphase[metrics]'") from None
    from logphase import __version__

    registry = CollectorRegistry(auto_describe=False)
    registry.register(ReportCollector(current, __version__))
    try:
        server, _thread = start_http_server(port, addr=host or "0.0.0.0", registry=registry)
    except OSError as exc:
        raise InputError(f"--metrics-port {port}: cannot listen: {exc.strerror or exc}") from None
    return int(server.server_address[1])


__all__ = ["ReportCollector", "serve"]
