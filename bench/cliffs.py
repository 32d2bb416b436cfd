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
        # the start, subtracted from every figure: a 20-line log (a start-up's head), after one run
        # that fills the caches
        small = Path(tmp, "small.log")
        small.write_bytes(b"".join(make(1)[:4096].splitlines(keepends=True)[:20]) if not reference.exists() else served[: served.index(b"\n", 4096) + 1])
        cpu(small, env)
        times_of: dict[str, list[float]] = {}
        for _ in range(args.runs):
            times_of.setdefault("start", []).append(cpu(small, env))
            for name, path in inputs.items():
                times_of.setdefault(name, []).append(cpu(path, env))
        start = statistics.median(times_of.pop("start"))
        per_mb = {}
        for name, path in inputs.items():
            mb = path.stat().st_size / 1e6
            per_mb[name] = max(statistics.median(times_of[name]) - start, 0.0) / mb
        middle = statistics.median(per_mb.values())
        print(f"start (a small log) {start:.2f} s CPU, subtracted; median input {middle:.3f} s/MB")
        for name, path in inputs.items():
            ratio = per_mb[name] / middle if middle else float("nan")
            print(f"{name:22s} {path.stat().st_size / 1e6:7.1f} MB {per_mb[name]:7.3f} s/MB  {ratio:5.2f}x median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
