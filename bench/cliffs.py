"""No cliffs, in seconds: CPU seconds per MB of ``logphase parse --json`` on the generated inputs of
tests/test_no_cliffs.py at two sizes (the second twice the first), against a served log's (the head of
the reference log, bench/generate.py). The issue's bound: each within 2x of the median input's per-MB
cost, and twice the input about twice the time.

    python bench/cliffs.py [--scale 4] [--runs 3]

``--scale`` multiplies the test's sizes (the test keeps them small; the bench can afford more).
Each input is written to a temporary file and parsed as its own process, runs alternating; medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_no_cliffs import SHAPES  # noqa: E402


def cpu(path: Path, env: dict[str, str]) -> float:
    proc = subprocess.Popen([sys.executable, "-m", "logphase", "parse", "--json", str(path)], stdout=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="logphase-cliffs-") as tmp:
        inputs: dict[str, Path] = {}
        reference = ROOT / "bench" / "out" / "ref100.log"
        if reference.exists():
            with open(reference, "rb") as src:
                served = src.read(8 << 20)
            inputs["served x1"] = Path(tmp, "served1.log")
            inputs["served x1"].write_bytes(served[: served.rindex(b"\n") + 1])
        for name, (make, size) in SHAPES.items():
            for times in (1, 2):
                path = Path(tmp, f"{name}{times}.log")
                path.write_bytes(make(size * args.scale * times))
                inputs[f"{name} x{times}"] = path
        empty = Path(tmp, "empty.log")
        empty.write_bytes(b"")
        times_of: dict[str, list[float]] = {}
        for _ in range(args.runs):
            times_of.setdefault("start", []).append(cpu(empty, env))
            for name, path in inputs.items():
                times_of.setdefault(name, []).append(cpu(path, env))
        start = statistics.median(times_of.pop("start"))
        per_mb = {}
        for name, path in inputs.items():
            mb = path.stat().st_size / 1e6
            per_mb[name] = max(statistics.median(times_of[name]) - start, 0.0) / mb
        middle = statistics.median(per_mb.values())
        print(f"start (empty input) {start:.2f} s CPU, subtracted; median input {middle:.3f} s/MB")
        for name, path in inputs.items():
            print(f"{name:22s} {path.stat().st_size / 1e6:7.1f} MB {per_mb[name]:7.3f} s/MB  {per_mb[name] / middle:5.2f}x median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
