"""The performance benchmark: logphase against grep, a naive per-line Lark parse and lnav.

    python bench/run.py --sizes 10MB,100MB            # the usual run (a few minutes)
    python bench/run.py --sizes 10MB,100MB,1GB        # adds the 1 GB log (the naive baseline then takes ~10 min)
    python bench/run.py --corpus ../shared/realworld ../shared/excerpts [--target-size 100MB] [--per-file 3] [--runs 3]

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

Corpus mode (``--corpus FOLDER...``): inputs of about ``--target-size`` built from real logs
(bench/corpus.py: every ``*.log`` of a folder concatenated and repeated, each copy's timestamps moved
later; the concatenation once too, ``-all-once``; and, ``--per-file N``, default 3, each of the folder's N largest logs of at least 100 kB repeated on
its own), plus the reference log of ``--sizes`` (default 100MB there). A folder that does not exist is
skipped with a note. Tools: logphase and grep as above, and lnav indexing the file without printing it,
``lnav -n -c ';SELECT count(*) FROM all_logs' FILE``; no naive baseline. One table per input, with
logphase's time over lnav's and over grep's and whether the targets are met (logphase's time <= lnav's,
>= 300 MB/s, >= 2M lines/s, peak RSS <= 100 MB), then a summary table; results go to
bench/out/results-corpus.json.
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
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
GREP_PATTERN = "error|Traceback|Application startup complete|fired up"

sys.path.insert(0, str(BENCH))
from generate import generate, parse_size  # noqa: E402

TIME = shutil.which("time") or "/usr/bin/time"


def measure(cmd: list[str], stdout_path: Path | None = None, extra_env: dict[str, str] | None = None) -> dict[str, float | int | str]:
    """Run one process; wall time, CPU time and peak RSS of that process alone.

    Linux keeps a process's peak RSS across exec, so a child forked from this (big) Python
    process would report at least our own size: the peak RSS comes from GNU time, a small
    process in between (``-f %M``). Wall and CPU time come from os.wait4 on it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(extra_env or {}))
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


LNAV_INDEX = ";SELECT count(*) FROM all_logs"  # lnav indexes the whole file to answer it, prints one number
# the targets of issue 15, checked per input in corpus mode
TARGET_MB_S = 300
TARGET_LINES_S = 2_000_000
TARGET_RSS_MB = 100
# exit codes that are answers, not failures: logphase's verdicts (ready 0, failed 1, starting 3), grep's "no match"
EXPECTED_EXIT = {"logphase": {0, 1, 3}, "grep": {0, 1}, "lnav": {0}, "naive": {0}}


def tools(path: Path, naive: bool, lnav_index: bool = False) -> dict[str, list[str]]:
    out = {
        "logphase": [sys.executable, "-m", "logphase", "parse", str(path), "--json"],
        "grep": ["grep", "-c", "-E", GREP_PATTERN, str(path)],
    }
    if naive:
        out["naive"] = [sys.executable, str(BENCH / "naive_lark.py"), str(path)]
    if shutil.which("lnav"):
        out["lnav"] = ["lnav", "-n", "-c", LNAV_INDEX, str(path)] if lnav_index else ["lnav", "-n", str(path)]
    return out


def run_tools(
    label: str,
    commands: dict[str, list[str]],
    runs: int,
    skip: set[tuple[int, str]] = frozenset(),  # type: ignore[assignment]
) -> tuple[dict[str, list[dict[str, float | int | str]]], dict[str, Path]]:
    """Every tool ``runs`` times, in turn; the runs of each and where each one's output went."""
    results: dict[str, list[dict[str, float | int | str]]] = {name: [] for name in commands}
    outputs = {name: Path(tempfile.gettempdir()) / f"logphase-bench-{name}.out" for name in commands}
    if "lnav" in commands and "-c" not in commands["lnav"]:
        outputs.pop("lnav")  # lnav -n prints the whole file: to /dev/null
    for i in range(runs):
        for name, cmd in commands.items():
            if (i, name) in skip:
                continue
            # stdout to a real file: GNU grep stops at the first match when it sees /dev/null
            run = measure(cmd, outputs.get(name))
            if name != "logphase" and name in outputs:
                run["output"] = outputs[name].read_text().strip()[-200:]
            if run["exit"] not in EXPECTED_EXIT.get(name, {0}):
                print(f"  WARNING: {label} {name} exited with {run['exit']}", file=sys.stderr)
            results[name].append(run)
            print(f"  {label} run {i + 1} {name}: {run['wall_s']:.2f} s, {run['max_rss_mb']:.0f} MB", file=sys.stderr)
    return results, outputs


def summary(runs: list[dict[str, float | int | str]], size: int, lines: int) -> dict[str, object]:
    wall = statistics.median(r["wall_s"] for r in runs)
    return {
        "runs": len(runs),
        "wall_s": round(wall, 3),
        "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 3),
        "max_rss_mb": max(r["max_rss_mb"] for r in runs),
        "lines_per_s": round(lines / wall),
        "mb_per_s": round(size / 1e6 / wall, 1),
        "exits": sorted({r["exit"] for r in runs}),
        "all": runs,
    }


def fmt_rate(value: float) -> str:
    return f"{value / 1e6:.2f} M" if value >= 1e6 else f"{value / 1e3:.0f} k"


def machine() -> dict[str, object]:
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "loadavg_start": os.getloadavg(),
        "lnav": subprocess.run(["lnav", "-V"], capture_output=True, text=True).stdout.strip() if shutil.which("lnav") else None,
        "grep": subprocess.run(["grep", "-V"], capture_output=True, text=True).stdout.splitlines()[0],
    }


def small_log(runs: int, source: Path) -> dict[str, object]:
    """``logphase parse`` on a 50-line log (the head of the reference log): start-up cost dominates.
    The runs read what logphase keeps derived from its grammars (packs/derived.py); one run more,
    ``cold``, starts from an empty folder of it (the first start after an install or a grammar change)."""
    small = OUT / "ref-50-lines.log"
    with open(source, "rb") as f:
        small.write_bytes(b"".join(f.readline() for _ in range(50)))
    command = [sys.executable, "-m", "logphase", "parse", str(small), "--json"]
    with tempfile.TemporaryDirectory(prefix="logphase-bench-cache-") as empty:
        cold = measure(command, extra_env={"LOGPHASE_CACHE_DIR": empty})
    measure(command)  # the user's folder holds the data from here on
    small_runs = [measure(command) for _ in range(runs)]
    return {"lines": 50, **summary(small_runs, small.stat().st_size, 50), "cold": cold}


def logphase_check(outputs: dict[str, Path], lines: int) -> tuple[str, list[str]]:
    """The outcome in logphase's report of the last run, and what is wrong with the report, if anything."""
    try:
        report = json.loads(outputs["logphase"].read_text())
    except ValueError:
        return "no report", ["logphase printed no JSON report"]
    physical = report["lines"]["physical"]
    problems = [] if physical == lines else [f"logphase counted {physical:,} physical lines, wc -l {lines:,}"]
    return report["outcome"], problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sizes", help="comma-separated sizes of the reference log (10MB, 100MB, 1GB; default 10MB,100MB, in corpus mode 100MB)"
    )
    ap.add_argument("--runs", type=int, default=3, help="runs of each tool per input (the median is shown)")
    ap.add_argument("--naive-runs-big", type=int, default=1, help="runs of the naive baseline on logs over 200 MB")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive Lark baseline")
    ap.add_argument("--small-runs", type=int, default=10, help="runs of logphase on the 50-line log")
    ap.add_argument("--corpus", nargs="+", metavar="FOLDER", help="corpus mode: inputs built from the *.log of these folders")
    ap.add_argument("--target-size", default="100MB", help="corpus mode: size of each built input (default 100MB)")
    ap.add_argument(
        "--per-file",
        type=int,
        default=3,
        metavar="N",
        help="corpus mode: inputs of each folder's N largest logs alone (default 3, 0: none)",
    )
    ap.add_argument(
        "--per-file-min", default="100KB", help="corpus mode: smallest log that gets an input of its own (default 100KB)"
    )
    ap.add_argument("--out", help="default bench/out/results.json, in corpus mode bench/out/results-corpus.json")
    args = ap.parse_args(argv)

    OUT.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "logphase")], check=True, stdout=subprocess.DEVNULL)
    if args.corpus:
        return corpus_main(args)
    started = time.time()
    results: dict[str, object] = {"machine": machine(), "sizes": {}}
    for size_text in [s.strip() for s in (args.sizes or "10MB,100MB").split(",") if s.strip()]:
        path = reference_log(size_text)
        size = path.stat().st_size
        lines = warm(path)
        commands = tools(path, not args.no_naive)
        skip = {(i, "naive") for i in range(args.naive_runs_big, args.runs)} if size > 200e6 else set()
        runs, outputs = run_tools(size_text, commands, args.runs, skip)
        report = json.loads(outputs["logphase"].read_text())
        assert report["lines"]["physical"] == lines, (report["lines"], lines)
        entry = {name: summary(r, size, lines) for name, r in runs.items()}
        entry["_file"] = {"path": str(path.relative_to(ROOT)), "bytes": size, "lines": lines, "outcome": report["outcome"]}
        results["sizes"][size_text] = entry  # type: ignore[index]

    results["small"] = small_log(args.small_runs, reference_log("10MB"))
    return finish(results, started, Path(args.out or OUT / "results.json"), table)


def corpus_main(args: argparse.Namespace) -> int:
    from corpus import folder_inputs  # bench/corpus.py: only this mode needs it

    started = time.time()
    notes: list[str] = []
    inputs: list[tuple[str, Path, dict[str, object]]] = []  # name, file, what it is
    target = parse_size(args.target_size)
    for size_text in [s.strip() for s in (args.sizes or "100MB").split(",") if s.strip()]:
        path = reference_log(size_text)
        inputs.append((f"reference {size_text}", path, {"built_from": "bench/generate.py, variant ready, seed 1"}))
    for folder in map(Path, args.corpus):
        if not folder.is_dir():
            notes.append(f"{folder}: no such folder, skipped")
            print(f"note: {notes[-1]}", file=sys.stderr)
            continue
        built = folder_inputs(folder, target, args.per_file, parse_size(args.per_file_min))
        if not built:
            notes.append(f"{folder}: no *.log in it, skipped")
        for b in built:
            what = f"{len(b.sources)} logs of {folder}" if len(b.sources) > 1 else b.sources[0]
            info = {
                "built_from": f"{what} ({b.copy_bytes / 1e6:.2f} MB) x {b.repetitions}, times moved {b.shift_s:,} s a copy",
                **{k: v for k, v in b.__dict__.items() if k not in ("name", "path")},
            }
            inputs.append((b.name, Path(b.path), info))
    if not shutil.which("lnav"):
        notes.append("lnav is not on PATH: not measured (apt-get install -y lnav)")
        print(f"note: {notes[-1]}", file=sys.stderr)

    results: dict[str, object] = {"machine": machine(), "command": sys.argv, "notes": notes, "inputs": {}}
    for name, path, info in inputs:
        size = path.stat().st_size
        lines = warm(path)
        runs, outputs = run_tools(name, tools(path, naive=False, lnav_index=True), args.runs)
        outcome, problems = logphase_check(outputs, lines)
        for tool, tool_runs in runs.items():
            bad = sorted({r["exit"] for r in tool_runs} - EXPECTED_EXIT[tool])
            if bad:
                problems.append(f"{tool} exited with {bad}")
        entry: dict[str, object] = {tool: summary(r, size, lines) for tool, r in runs.items()}
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        entry["_file"] = {"path": str(rel), "bytes": size, "lines": lines, "outcome": outcome, "problems": problems, **info}
        results["inputs"][name] = entry  # type: ignore[index]

    results["small"] = small_log(
        args.small_runs, inputs[0][1] if inputs and inputs[0][0].startswith("ref") else reference_log("10MB")
    )
    return finish(results, started, Path(args.out or OUT / "results-corpus.json"), corpus_tables)


def finish(results: dict[str, object], started: float, out: Path, render: Callable[[dict[str, object]], str]) -> int:
    """The load average at the end, the time it all took; results saved, tables printed."""
    results["machine"]["loadavg_end"] = os.getloadavg()  # type: ignore[index]
    results["elapsed_s"] = round(time.time() - started, 1)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    print(f"\nwritten to {out}")
    return 0


def targets(entry: dict[str, dict[str, object]]) -> list[tuple[str, bool | None, str]]:
    """Issue 15's targets for one input: (target, met (None: not measured), what was measured)."""
    lp = entry["logphase"]
    lnav = entry.get("lnav")
    return [
        (
            "time <= lnav",
            None if lnav is None else lp["wall_s"] <= lnav["wall_s"],  # type: ignore[operator]
            "no lnav" if lnav is None else f"{lp['wall_s']:.2f} s vs {lnav['wall_s']:.2f} s",
        ),
        (f">= {TARGET_MB_S} MB/s", lp["mb_per_s"] >= TARGET_MB_S, f"{lp['mb_per_s']:.0f} MB/s"),  # type: ignore[operator]
        (f">= {TARGET_LINES_S / 1e6:g}M lines/s", lp["lines_per_s"] >= TARGET_LINES_S, f"{fmt_rate(lp['lines_per_s'])} lines/s"),  # type: ignore[operator,arg-type]
        (f"peak RSS <= {TARGET_RSS_MB} MB", lp["max_rss_mb"] <= TARGET_RSS_MB, f"{lp['max_rss_mb']:.0f} MB"),  # type: ignore[operator]
    ]


def ratio(entry: dict[str, dict[str, object]], tool: str) -> str:
    other = entry.get(tool)
    return "" if other is None else f"{entry['logphase']['wall_s'] / other['wall_s']:.3g}"  # type: ignore[operator]


def corpus_tables(results: dict[str, object]) -> str:
    rows: list[str] = []
    overview = [
        "| input | MB | lines | logphase s | lnav s | grep s | logphase ÷ lnav | logphase ÷ grep | logphase MB/s | logphase lines/s | logphase peak RSS MB | targets met |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, entry in results["inputs"].items():  # type: ignore[attr-defined]
        info = entry["_file"]
        lp = entry["logphase"]
        rows.append(f"### {name}")
        rows.append("")
        rows.append(
            f"`{info['path']}`: {info['bytes'] / 1e6:.1f} MB, {info['lines']:,} lines; {info['built_from']}; "
            f"logphase's verdict: {info['outcome']}"
        )
        rows.append("")
        rows.append("| tool | wall s (median) | CPU s | MB/s | lines/s | peak RSS MB | logphase ÷ tool |")
        rows.append("|---|---:|---:|---:|---:|---:|---:|")
        for tool, s in entry.items():
            if tool.startswith("_"):
                continue
            rows.append(
                f"| {tool} | {s['wall_s']:.3f} | {s['cpu_s']:.2f} | {s['mb_per_s']:.0f} | {fmt_rate(s['lines_per_s'])} | "
                f"{s['max_rss_mb']:.0f} | {'' if tool == 'logphase' else ratio(entry, tool)} |"
            )
        checks = targets(entry)
        met = sum(1 for _, ok, _ in checks if ok)
        measured = sum(1 for _, ok, _ in checks if ok is not None)
        words = "; ".join(f"{t}: {'met' if ok else 'not measured' if ok is None else '**missed**'} ({m})" for t, ok, m in checks)
        rows.append("")
        rows.append(
            f"logphase ÷ lnav {ratio(entry, 'lnav') or '-'}, logphase ÷ grep {ratio(entry, 'grep')}. "
            f"Targets {met}/{measured} met: {words}."
        )
        for problem in info["problems"]:
            rows.append(f"**Problem**: {problem}.")
        rows.append("")
        lnav_s = "" if entry.get("lnav") is None else f"{entry['lnav']['wall_s']:.2f}"
        overview.append(
            f"| {name} | {info['bytes'] / 1e6:.1f} | {info['lines']:,} | {lp['wall_s']:.2f} | "
            f"{lnav_s} | {entry['grep']['wall_s']:.3f} | {ratio(entry, 'lnav')} | {ratio(entry, 'grep')} | "
            f"{lp['mb_per_s']:.0f} | {fmt_rate(lp['lines_per_s'])} | {lp['max_rss_mb']:.0f} | {met}/{measured} |"
        )
    small = results["small"]
    m = results["machine"]
    rows.append("### Summary (medians)")
    rows.append("")
    rows += overview
    rows.append("")
    rows.append(
        f"50-line log: logphase parse {small['wall_s']:.3f} s median of {small['runs']} runs (CPU {small['cpu_s']:.3f} s), "  # type: ignore[index]
        f"peak RSS {small['max_rss_mb']:.0f} MB; with nothing kept yet (the first start) "  # type: ignore[index]
        f"{small['cold']['wall_s']:.3f} s (CPU {small['cold']['cpu_s']:.3f} s)."  # type: ignore[index]
    )
    for note in results["notes"]:  # type: ignore[attr-defined]
        rows.append(f"Note: {note}.")
    rows.append(
        f"{m['cpus']} CPUs, Python {m['python']}, {m['lnav'] or 'no lnav'}, {m['grep']}; load average at start "  # type: ignore[index]
        f"{m['loadavg_start'][0]:.2f}, at end {m['loadavg_end'][0]:.2f}; {results['elapsed_s']:.0f} s in all."  # type: ignore[index]
    )
    return "\n".join(rows)


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
    cold = small["cold"]  # type: ignore[index]
    rows.append(
        f"| 50 lines, first start | logphase (1 run) | {cold['wall_s']:.3f} | {cold['cpu_s']:.3f} | | | "
        f"{cold['max_rss_mb']:.0f} | |"
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
