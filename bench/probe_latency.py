"""How long `logphase probe STATE` takes, as the kubelet runs it (a new process each time): the
median wall and CPU time of N runs (default 20) of the installed `logphase` command on a state file
written as the sidecar writes it, beside the interpreter's own start (`python -c pass`) for scale.

    python bench/probe_latency.py [--runs 20] [--command logphase]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from logphase.faces.fleet.probe import STATE_FORMAT, write_state


def _timed(argv: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of each run; CPU time says less of a busy machine's load."""
    subprocess.run(argv, capture_output=True, check=False)  # warm the page cache once
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return walls, cpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--command", default=shutil.which("logphase") or "logphase")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        state = str(Path(folder) / "state.json")
        now = time.time()
        write_state(state, {
            "logphase_state": STATE_FORMAT, "written_at": now + 3600, "outcome": "starting", "phase": "weight_loading",
            "headline": "STARTING: in weight_loading for 5.0 min", "last_line_at": now + 3600, "last_line": "",
            "stall_after_s": 900.0, "stall_hint": "", "failure": None, "source": "server.log",
        })  # fmt: skip
        rows = [
            ("python -c pass", [sys.executable, "-c", "pass"]),
            ("logphase probe STATE", [args.command, "probe", state]),
            ("python -m logphase probe STATE", [sys.executable, "-m", "logphase", "probe", state]),
        ]
        for name, argv in rows:
            walls, cpus = _timed(argv, args.runs)
            print(f"{name:<32} wall median {statistics.median(walls) * 1000:6.1f} ms (min {min(walls) * 1000:5.1f}, "
                  f"max {max(walls) * 1000:6.1f})  CPU median {statistics.median(cpus) * 1000:6.1f} ms  ({args.runs} runs)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
