"""follow --metrics-port: Prometheus metrics of the log being followed, scraped over HTTP while the
log grows, and read back with prometheus_client's own parser."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from logphase import Engine
from logphase.engine.whole import parse_file
from logphase.faces.live.metrics import RANK_CAP, ReportCollector, rank_cap, start
from logphase.reporting.report import Report
from tests.conftest import FIXTURES


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def current(metrics: dict[str, list[tuple[dict[str, str], float]]], name: str, label: str) -> list[str]:
    return [labels[label] for labels, value in metrics.get(name, []) if value == 1.0]


def wait_for_port(proc: subprocess.Popen[bytes]) -> int:
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    found = re.search(r"port (\d+)", line)
    assert found, line
    return int(found.group(1))


def scrape_once_read(port: int, written: bytes) -> dict[str, list[tuple[dict[str, str], float]]]:
    """The metrics once follow has read ``written`` (all of the log so far): its phase gauge shows
    the phase the same bytes give, or the outcome is failed. Polled, so that how soon follow reads
    a write is no part of the test."""
    engine = Engine(source="server.log")
    engine.feed(written)
    phase = engine.report().phase
    wanted = [phase.value] if phase is not None else []
    deadline = time.monotonic() + 60
    while True:
        metrics = scrape(port)
        if current(metrics, "logphase_phase", "phase") == wanted or current(metrics, "logphase_outcome", "outcome") == ["failed"]:
            return metrics
        assert time.monotonic() < deadline, (wanted, current(metrics, "logphase_phase", "phase"))
        time.sleep(0.02)


def test_the_phase_gauge_moves_as_the_log_grows(tmp_path: Path) -> None:
    lines = (FIXTURES / "cuda_oom_capture.log").read_bytes().splitlines(keepends=True)
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(lines[:3]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "logphase", "follow", str(log), "--metrics-port", "0", "--metrics-host", "127.0.0.1",
         "--timeout", "600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        port = wait_for_port(proc)
        seen: list[str] = []
        written = 3
        for upto in range(3, len(lines) + 1, 4):
            with log.open("ab") as f:  # the log grows, as a server writes it
                f.write(b"".join(lines[written:upto]))
            written = upto
            metrics = scrape_once_read(port, b"".join(lines[:upto]))
            phase = current(metrics, "logphase_phase", "phase")
            assert len(phase) <= 1  # one phase at a time
            if phase and (not seen or seen[-1] != phase[0]):
                seen.append(phase[0])
            if current(metrics, "logphase_outcome", "outcome") == ["failed"]:
                break
        assert len(seen) >= 3 and seen[0] in ("launch", "distributed_init")
        assert current(metrics, "logphase_outcome", "outcome") == ["failed"]
        assert current(metrics, "logphase_failure", "cause") == ["cuda_oom"]
        assert metrics["logphase_seconds_since_last_line"][0][1] >= 0.0
        durations = {labels["phase"]: value for labels, value in metrics["logphase_phase_duration_seconds"]}
        assert "weight_loading" in durations and durations["weight_loading"] > 0
        free = metrics["logphase_gpu_free_bytes"]
        assert free and all(value > 1e9 for _, value in free) and {"rank", "boundary"} <= set(free[0][0])
        info = metrics["logphase_info"][0][0]
        assert info["source"] == str(log) and info["tp"]
        # the verdict is in, and the metrics are still served (a sidecar outlives the start-up)
        assert proc.poll() is None and current(scrape(port), "logphase_outcome", "outcome") == ["failed"]
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    import socket

    log = tmp_path / "server.log"
    log.write_bytes((FIXTURES / "tp1_success.log").read_bytes())
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "logphase", "follow", str(log), "--metrics-port", str(port), "--metrics-host", "127.0.0.1"],
            capture_output=True,
            timeout=60,
        )
    assert done.returncode == 2 and b"cannot listen" in done.stderr and b"Traceback" not in done.stderr


# -- bounded whatever the log or the clients do -----------------------------------------------------------


def _report_with_ranks(count: int, tp_size: int | None) -> Report:
    report = parse_file(FIXTURES / "tp1_success.log")
    config = {k: v for k, v in report.config.items() if k not in ("tp_size", "pp_size", "dp_size")}
    if tp_size is not None:
        config["tp_size"] = tp_size
    memory = report.memory.model_copy(update={"avail_gb": {f"TP{i}": {"weight_loading_end": 20.0} for i in range(count)}})
    return report.model_copy(update={"config": config, "memory": memory})


def _collected(report: Report) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for family in ReportCollector(lambda: (report, None), "test").collect():
        out[family.name] = [sample.value for sample in family.samples]
    return out


def test_per_rank_series_are_bounded_by_the_world_size() -> None:
    got = _collected(_report_with_ranks(10_000, tp_size=8))
    assert len(got["logphase_gpu_free_bytes"]) == 8 and got["logphase_ranks_omitted"] == [9_992.0]
    unknown = _collected(_report_with_ranks(10_000, tp_size=None))
    assert len(unknown["logphase_gpu_free_bytes"]) == RANK_CAP and unknown["logphase_ranks_omitted"] == [10_000.0 - RANK_CAP]
    series = sum(len(values) for values in unknown.values())
    assert series < RANK_CAP + 40  # 10,015 before the bound
    whole = _collected(_report_with_ranks(2, tp_size=2))
    assert len(whole["logphase_gpu_free_bytes"]) == 2 and whole["logphase_ranks_omitted"] == [0.0]


def test_rank_cap_multiplies_the_parallel_sizes() -> None:
    assert rank_cap({"tp_size": 8, "pp_size": 2, "dp_size": "2"}) == 32
    assert rank_cap({"pp_size": 4}) == RANK_CAP  # no tp_size: the world size is not known
    assert rank_cap({"tp_size": "x"}) == RANK_CAP


def test_metrics_listen_on_localhost_by_default() -> None:
    from logphase.faces.cli import _build_parser

    parser, _ = _build_parser()
    args = parser.parse_args(["follow", "x.log", "--metrics-port", "0"])
    assert args.metrics_host == "127.0.0.1"


def test_idle_connections_are_closed_and_their_threads_end() -> None:
    """Each connection holds a thread: clients that connect and say nothing are dropped after the
    idle timeout, and the thread count comes back."""
    server = start(0, lambda: (None, None), "127.0.0.1", idle_timeout=0.5)
    port = int(server.server_address[1])
    try:
        scrape(port)  # a scrape works, and its thread is gone once it is served
        before = threading.active_count()
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(5)]
        try:
            # each is closed by the server: reading gives EOF (without the idle timeout, recv
            # waits for its own 10 s timeout and raises); how fast the threads start and end under
            # load is not asserted, only that none is left once the connections are dropped
            for conn in idle:
                assert conn.recv(1) == b""
            deadline = time.monotonic() + 30
            while threading.active_count() > before and time.monotonic() < deadline:
                time.sleep(0.05)
            assert threading.active_count() <= before
        finally:
            for conn in idle:
                conn.close()
        assert "logphase_outcome" in scrape(port)
    finally:
        server.shutdown()
        server.server_close()


def test_a_log_whose_name_is_not_utf8_is_scraped() -> None:
    """Issue 30, point 5: a file name that is not UTF-8 (os.fsdecode gives lone surrogates) made every
    scrape an HTTP 500. Its label shows the bytes escaped, as every output does."""
    import os

    name = os.fsdecode(b"server-\xff\xfe.log")
    report = Engine(source=name)
    report.feed((FIXTURES / "kv_cache_insufficient.log").read_bytes())
    latest = report.report()
    server = start(0, lambda: (latest, None), "127.0.0.1")
    try:
        metrics = scrape(int(server.server_address[1]))
    finally:
        server.shutdown()
        server.server_close()
    assert [labels["source"] for labels, _ in metrics["logphase_info"]] == ["server-\\xff\\xfe.log"]
