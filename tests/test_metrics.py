"""follow --metrics-port: Prometheus metrics of the log being followed, scraped over HTTP while the
log grows, and read back with prometheus_client's own parser."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from logphase import Engine
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
