"""The performance benchmark: logphase against grep, a naive per-line Lark parse and lnav.

    python bench/run.py --sizes 10MB,100MB            # the usual run (a few minutes)
    python bench/run.py --sizes 10MB,100MB,1GB        # adds the 1 GB log (the naive baseline then takes ~10 min)

For each size the reference log (bench/generate.py, variant ready, seed 1) is generated into
bench/out/ if missing, read once to have it in the page cache, then each tool runs on it as its
own process, ``--runs`` times in turn (default 3); the table shows the medians:

* logphase: ``python -m logphase parse FILE --json`` (output to a file, checked to be a report)
* grep: ``grep -c -E 'error|Traceback|Application startup complete|fired up' FILE``, the floor for
  "reading the file at all" as a monitoring loop does it
* naive: ``python bench/naive_lark.py FILE``, logphase's SGLang grammar on every line
* lnav: ``lnav -n FILE`` (headless: index the file, print it to /dev/null), when lnav is on PATH

Wall time is whole-process (start to exit); CPU is user+sys; peak RSS is the child's ru_maxrss
(os.wait4). lines/s counts physical lines (``\\n``) as ``wc -l`` and grep do. Ratios are
logphase's time divided by the other tool's: below 1 logphase is faster. Also measured:
``logphase parse`` on a 50-line log (the head of the reference log), --small-runs times.
Bytecode is compiled first (python -m compileall), as pip does on install: with
PYTHONDONTWRITEBYTECODE set, every start would otherwise compile logphase from source.
Results, every single run included, go to bench/out/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
GREP_PATTERN = "error|Traceback|Application startup complete|fired up"

sys.path.insert(0, str(BENCH))
from generate import generate, parse_size  # noqa: E402

TIME = shutil.which("time") or "/usr/bin/time"


def measure(cmd: list[str], stdout_path: Path | None = None) -> dict[str, float | int | str]:
    """Run one process; wall time, CPU time and peak RSS of that process alone.

    Linux keeps a process's peak RSS across exec, so a child forked from this (big) Python
    process would report at least our own size: the peak RSS comes from GNU time, a small
    process in between (``-f %M``). Wall and CPU time come from os.wait4 on it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss, open(stdout_path or os.devnull, "wb") as out:
        wrapped = [TIME, "-f", "%M", "-o", rss.name, *cmd] if os.path.exists(TIME) else cmd
        t0 = time.perf_counter()
        p = subprocess.Popen(wrapped, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        text = rss.read().strip().splitlines()
        max_rss_kb = int(text[-1]) if wrapped is not cmd and text and text[-1].isdigit() else ru.ru_maxrss
    return {
        "wall_s": round(wall, 4),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 4),
        "max_rss_mb": round(max_rss_kb / 1024, 1),
        "exit": p.returncode,
    }


def reference_log(size_text: str, variant: str = "ready") -> Path:
    path = OUT / f"ref-{size_text}-{variant}.log"
    size = parse_size(size_text)
    if not path.exists() or abs(path.stat().st_size - size) > 10_000:
        print(f"generating {path.name} ...", file=sys.stderr)
        generate(size, variant, 1, path)
    return path


def warm(path: Path) -> int:
    """Read the file once (page cache) and count its lines."""
    lines = 0
    with open(path, "rb") as f:
        while block := f.read(8 << 20):
            lines += block.count(b"\n")
    return lines


def tools(path: Path, naive: bool) -> dict[str, list[str]]:
    out = {
        "logphase": [sys.executable, "-m", "logphase", "parse", str(path), "--json"],
        "grep": ["grep", "-c", "-E", GREP_PATTERN, str(path)],
    }
    if naive:
        out["naive"] = [sys.executable, str(BENCH / "naive_lark.py"), str(path)]
    if shutil.which("lnav"):
        out["lnav"] = ["lnav", "-n", str(path)]
    return out


def summary(runs: list[dict[str, float | int | str]], size: int, lines: int) -> dict[str, object]:
    wall = statistics.median(r["wall_s"] for r in runs)
    return {
        "runs": len(runs),
        "wall_s": round(wall, 3),
        "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 3),
        "max_rss_mb": max(r["max_rss_mb"] for r in runs),
        "lines_per_s": round(lines / wall),
        "mb_per_s": round(size / 1e6 / wall, 1),
        "all": runs,
    }


def fmt_rate(value: float) -> str:
    return f"{value / 1e6:.2f} M" if value >= 1e6 else f"{value / 1e3:.0f} k"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10MB,100MB", help="comma-separated sizes of the reference log (10MB, 100MB, 1GB)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each tool per size (the median is shown)")
    ap.add_argument("--naive-runs-big", type=int, default=1, help="runs of the naive baseline on logs over 200 MB")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive Lark baseline")
    ap.add_argument("--small-runs", type=int, default=10, help="runs of logphase on the 50-line log")
    ap.add_argument("--out", default=str(OUT / "results.json"))
    args = ap.parse_args(argv)

    OUT.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "logphase")], check=True, stdout=subprocess.DEVNULL)
    started = time.time()
    results: dict[str, object] = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_start": os.getloadavg(),
            "lnav": subprocess.run(["lnav", "-V"], capture_output=True, text=True).stdout.strip()
            if shutil.which("lnav")
            else None,
            "grep": subprocess.run(["grep", "-V"], capture_output=True, text=True).stdout.splitlines()[0],
        },
        "sizes": {},
    }
    for size_text in [s.strip() for s in args.sizes.split(",") if s.strip()]:
        path = reference_log(size_text)
        size = path.stat().st_size
        lines = warm(path)
        commands = tools(path, not args.no_naive)
        runs: dict[str, list[dict[str, float | int | str]]] = {name: [] for name in commands}
        outputs = {name: Path(tempfile.gettempdir()) / f"logphase-bench-{name}.out" for name in commands}
        outputs.pop("lnav", None)  # lnav -n prints the whole file: to /dev/null
        for i in range(args.runs):
            for name, cmd in commands.items():
                if name == "naive" and size > 200e6 and i >= args.naive_runs_big:
                    continue
                # stdout to a real file: GNU grep stops at the first match when it sees /dev/null
                run = measure(cmd, outputs.get(name))
                if name in ("grep", "naive"):
                    run["output"] = outputs[name].read_text().strip()
                runs[name].append(run)
                print(f"  {size_text} run {i + 1} {name}: {run['wall_s']:.2f} s, {run['max_rss_mb']:.0f} MB", file=sys.stderr)
        report = json.loads(outputs["logphase"].read_text())
        assert report["lines"]["physical"] == lines, (report["lines"], lines)
        entry = {name: summary(r, size, lines) for name, r in runs.items()}
        entry["_file"] = {"path": str(path.relative_to(ROOT)), "bytes": size, "lines": lines, "outcome": report["outcome"]}
        results["sizes"][size_text] = entry  # type: ignore[index]

    # a small log: start-up cost dominates
    small = OUT / "ref-50-lines.log"
    with open(reference_log("10MB"), "rb") as f:
        small.write_bytes(b"".join(f.readline() for _ in range(50)))
    small_runs = [measure([sys.executable, "-m", "logphase", "parse", str(small), "--json"]) for _ in range(args.small_runs)]
    results["small"] = {"lines": 50, **summary(small_runs, small.stat().st_size, 50)}
    results["machine"]["loadavg_end"] = os.getloadavg()  # type: ignore[index]
    results["elapsed_s"] = round(time.time() - started, 1)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"\nwritten to {args.out}")
    return 0


def table(results: dict[str, object]) -> str:
    rows = [
        "| log | tool | wall s (median) | CPU s | lines/s | MB/s | peak RSS MB | logphase ÷ tool |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for size_text, entry in results["sizes"].items():  # type: ignore[attr-defined]
        info = entry["_file"]
        lp = entry["logphase"]["wall_s"]
        for name, s in entry.items():
            if name.startswith("_"):
                continue
            ratio = "" if name == "logphase" else f"{lp / s['wall_s']:.3g}"
            runs = f" ({s['runs']} run{'s' if s['runs'] > 1 else ''})" if s["runs"] != entry["logphase"]["runs"] else ""
            rows.append(
                f"| {size_text} ({info['lines']:,} lines) | {name}{runs} | {s['wall_s']:.3f} | {s['cpu_s']:.2f} | "
                f"{fmt_rate(s['lines_per_s'])} | {s['mb_per_s']:.0f} | {s['max_rss_mb']:.0f} | {ratio} |"
            )
    small = results["small"]
    rows.append(
        f"| 50 lines | logphase ({small['runs']} runs) | {small['wall_s']:.3f} | {small['cpu_s']:.3f} | | | "  # type: ignore[index]
        f"{small['max_rss_mb']:.0f} | |"  # type: ignore[index]
    )
    m = results["machine"]
    rows.append("")
    rows.append(
        f"{m['cpus']} CPUs, Python {m['python']}, {m['lnav'] or 'no lnav'}; load average at start "  # type: ignore[index]
        f"{m['loadavg_start'][0]:.2f}, at end {m['loadavg_end'][0]:.2f}"  # type: ignore[index]
    )
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
