"""Many logs at once: `logphase parse` on an archive of logs with --jobs 1 and --jobs N.

    python bench/many.py                      # 200 logs (the fixtures, copied round-robin), 5 runs each
    python bench/many.py --logs 1000 --runs 3 --size 2MB

Each log is a fixture, or (with --size) a fixture that reaches ready followed by serving lines up
to that size (bench/generate.py's tail), copied into a temporary folder. The runs of each --jobs value
alternate, whole-process wall time; the table gives medians, files/s, MB/s and the speed-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"


def parse_size(text: str) -> int:
    units = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
    for unit, factor in units.items():
        if text.upper().endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def build(folder: Path, count: int, size: int) -> list[Path]:
    sources = sorted(FIXTURES.glob("*.log"))
    if size:
        # serving lines follow a start-up that got there
        sources = [p for p in sources if b"fired up and ready to roll" in p.read_bytes()]
    tail = b""
    if size:
        # a served log's tail: the reference generator's serving lines, cut at a line end
        out = folder / "tail.log"
        subprocess.run([sys.executable, str(ROOT / "bench" / "generate.py"), "--size", str(size), "-o", str(out)], check=True)
        data = out.read_bytes()
        tail = data[data.index(b"fired up") :]
        tail = tail[tail.index(b"\n") + 1 : size]
        tail = tail[: tail.rindex(b"\n") + 1]
        out.unlink()
    paths = []
    for i in range(count):
        source = sources[i % len(sources)]
        path = folder / f"run-{i:04d}-{source.name}"
        data = source.read_bytes()
        path.write_bytes(data + (tail if data.endswith(b"\n") else b""))
        paths.append(path)
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logs", type=int, default=200, help="how many logs (default 200)")
    ap.add_argument("--runs", type=int, default=5, help="runs per --jobs value (default 5)")
    ap.add_argument("--size", default="0", help="grow each log to this size with serving lines (e.g. 2MB; default: as is)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="N for --jobs N (default: the CPU count)")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="logphase-many-"))
    try:
        paths = build(folder, args.logs, parse_size(args.size))
        total_mb = sum(p.stat().st_size for p in paths) / 1e6
        names = [str(p) for p in paths]
        times: dict[int, list[float]] = {1: [], args.jobs: []}
        for _ in range(args.runs):
            for jobs in times:
                start = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-m", "logphase", "parse", "--jobs", str(jobs), *names],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                times[jobs].append(time.perf_counter() - start)
                assert done.returncode in (0, 1, 3), done.returncode
        print(f"{args.logs} logs, {total_mb:.1f} MB in all, {args.runs} runs each, {os.cpu_count()} CPUs\n")
        print("| --jobs | wall s (median) | files/s | MB/s | speed-up |")
        print("|---:|---:|---:|---:|---:|")
        base = statistics.median(times[1])
        for jobs, values in times.items():
            median = statistics.median(values)
            print(f"| {jobs} | {median:.2f} | {args.logs / median:.0f} | {total_mb / median:.1f} | {base / median:.2f} |")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
