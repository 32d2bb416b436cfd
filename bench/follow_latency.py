"""Latency of `logphase follow` (line written -> record printed) and its CPU use while idle.

    python bench/follow_latency.py [--lines 400] [--interval 0.01] [--idle 5]

    python bench/follow_latency.py --idle-only   # only the idle CPU figures

A writer appends lines to a file (and, separately, to a pipe) at a steady pace; each line makes
follow print one record (a distinct `ignored_parameter` warning). The record's arrival time minus
the line's write time is the latency. Then follow is left idle and we read its CPU time from
/proc: on an unchanging file while starting, and after a failure verdict whose traceback is the
last thing written (a file followed with --until eof, as the metrics sidecar does, and a pipe
kept open), the case that used to spin. Prints medians and p99, writes bench/out/follow_latency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HEAD = "[2026-05-09 09:20:00] server_args=ServerArgs(model_path='m', tp_size=1, mem_fraction_static=0.85)\n"


def line(i: int) -> bytes:
    return f"[2026-05-09 09:20:{i % 60:02d}] Max running requests is reset to {i} for speculative decoding.\n".encode()


def measure(mode: str, n: int, interval: float) -> list[float]:
    tmp = Path(tempfile.mkdtemp())
    log = tmp / "server.log"
    log.write_text(HEAD)
    if mode == "file":
        proc = subprocess.Popen([sys.executable, "-m", "logphase", "follow", str(log), "--json"], stdout=subprocess.PIPE)
        write = None
    else:
        proc = subprocess.Popen(
            [sys.executable, "-m", "logphase", "follow", "--json", "--until", "eof"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert proc.stdin is not None
        proc.stdin.write(HEAD.encode())
        proc.stdin.flush()
        write = proc.stdin
    arrivals: dict[int, float] = {}
    done = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            record = json.loads(raw)
            if record.get("kind") == "warning":
                msg = record["warning"]["message"]
                if "reset to " in msg:
                    i = int(msg.split("reset to ")[1].split(" ")[0].rstrip(")"))
                    arrivals[i] = time.perf_counter()
                    if len(arrivals) == n:
                        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(1.0)  # let the follower start and read the head
    sent: dict[int, float] = {}
    with open(log, "ab", buffering=0) as f:
        for i in range(n):
            data = line(i)
            sent[i] = time.perf_counter()
            if write is None:
                f.write(data)
            else:
                write.write(data)
                write.flush()
            time.sleep(interval)
    done.wait(timeout=30)
    proc.kill()
    proc.wait()
    return [(arrivals[i] - sent[i]) * 1000 for i in sorted(arrivals)]


FAILED_LOG = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "kv_cache_insufficient.log"


def idle_cpu(seconds: float, case: str = "starting") -> float:
    """CPU use (percent of one core) of a follow left idle: ``starting`` on a file that holds a
    server's first line; ``failed-file`` / ``failed-sidecar`` / ``failed-pipe`` after a failure
    verdict whose traceback is the last thing written (the file followed with --until eof, the
    same as a metrics sidecar with --metrics-port, the pipe kept open)."""
    tmp = Path(tempfile.mkdtemp())
    log = tmp / "server.log"
    log.write_bytes(HEAD.encode() if case == "starting" else FAILED_LOG.read_bytes())
    if case == "failed-pipe":
        proc = subprocess.Popen(
            [sys.executable, "-m", "logphase", "follow", "--json"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
        )
        assert proc.stdin is not None
        proc.stdin.write(log.read_bytes())
        proc.stdin.flush()  # and kept open: the server has not exited
    else:
        until = {"failed-file": ["--until", "eof"], "failed-sidecar": ["--metrics-port", "0"]}.get(case, [])
        proc = subprocess.Popen(
            [sys.executable, "-m", "logphase", "follow", str(log), "--json", *until], stdout=subprocess.DEVNULL
        )
    time.sleep(3.0)  # start-up, and the open traceback's flush timeout, are not idleness
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    c0, t0 = cpu(), time.perf_counter()
    time.sleep(seconds)
    c1, t1 = cpu(), time.perf_counter()
    proc.kill()
    proc.wait()
    return 100.0 * (c1 - c0) / (t1 - t0)


IDLE_CASES = ("starting", "failed-file", "failed-sidecar", "failed-pipe")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=400)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--idle", type=float, default=5.0)
    ap.add_argument("--idle-only", action="store_true", help="measure only the idle CPU")
    args = ap.parse_args()
    results: dict[str, object] = {}
    for mode in () if args.idle_only else ("pipe", "file"):
        lat = sorted(measure(mode, args.lines, args.interval))
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        results[mode] = {
            "records": len(lat),
            "median_ms": round(statistics.median(lat), 2),
            "p99_ms": round(p99, 2),
            "max_ms": round(lat[-1], 2),
        }
        print(f"{mode:5} {len(lat)} records: median {statistics.median(lat):.2f} ms, p99 {p99:.2f} ms, max {lat[-1]:.2f} ms")
    for case in IDLE_CASES:
        cpu = idle_cpu(args.idle, case)
        results["idle_cpu_percent" if case == "starting" else f"idle_cpu_percent_{case}"] = round(cpu, 3)
        print(f"idle CPU over {args.idle:g} s ({case}): {cpu:.3f} %")
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    (out / "follow_latency.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
