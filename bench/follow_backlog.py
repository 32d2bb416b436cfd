"""How fast `logphase follow` catches up on a backlog, against `logphase parse` on the same bytes.

    python bench/follow_backlog.py FILE [FILE ...] [--runs 3]

For each file, alternating, ``--runs`` times each:

* ``parse``: ``logphase parse --json FILE``, the whole process;
* ``pipe``: ``cat FILE | logphase follow --json``, the whole process (a pipe is read to its end);
* ``file``: ``logphase follow --json FILE`` on a finished log not written for a while, up to the
  record that says the backlog was read (``stale``: follow then waits for a new run, and is stopped).

Prints the medians of wall and CPU seconds (user + sys of logphase, children included) and
follow's speed as a share of parse's (parse's seconds / follow's: 1.0 is as fast). Writes
bench/out/follow_backlog.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _cpu(before: os.times_result) -> float:
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def parse_run(path: Path) -> tuple[float, float]:
    before, start = os.times(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "logphase", "parse", "--json", str(path)], stdout=subprocess.DEVNULL, env=_env(), check=False)
    return time.perf_counter() - start, _cpu(before)


def pipe_run(path: Path) -> tuple[float, float]:
    before, start = os.times(), time.perf_counter()
    with open(path, "rb") as source:
        cat = subprocess.Popen(["cat"], stdin=source, stdout=subprocess.PIPE)
        subprocess.run([sys.executable, "-m", "logphase", "follow", "--json"], stdin=cat.stdout, stdout=subprocess.DEVNULL, env=_env(), check=False)
        assert cat.stdout is not None
        cat.stdout.close()
        cat.wait()
    return time.perf_counter() - start, _cpu(before)


def file_run(path: Path) -> tuple[float, float]:
    """Up to the record that closes the backlog of a finished log (its mtime is set an hour back)."""
    past = time.time() - 3600
    os.utime(path, (past, past))
    before, start = os.times(), time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "logphase", "follow", "--json", "--timeout", "600", str(path)], stdout=subprocess.PIPE, env=_env()
    )
    assert proc.stdout is not None
    for raw in proc.stdout:
        if json.loads(raw).get("kind") in ("stale", "outcome", "summary"):
            break
    elapsed = time.perf_counter() - start
    proc.kill()
    proc.wait()
    return elapsed, _cpu(before)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    results = []
    for path in args.files:
        runs: dict[str, list[tuple[float, float]]] = {"parse": [], "pipe": [], "file": []}
        for _ in range(args.runs):  # alternating, so that a drift of the machine hits each alike
            runs["parse"].append(parse_run(path))
            runs["pipe"].append(pipe_run(path))
            runs["file"].append(file_run(path))
        medians = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
        size = path.stat().st_size / 1e6
        row = {"file": str(path), "mb": round(size, 1), **{f"{k}_wall_s": round(v[0], 2) for k, v in medians.items()}}
        row.update({f"{k}_cpu_s": round(v[1], 2) for k, v in medians.items()})
        for way in ("pipe", "file"):
            row[f"{way}_speed_vs_parse_wall"] = round(medians["parse"][0] / medians[way][0], 2)
            row[f"{way}_speed_vs_parse_cpu"] = round(medians["parse"][1] / medians[way][1], 2)
        results.append(row)
        print(
            f"{path.name} ({size:.1f} MB): parse {medians['parse'][0]:.2f} s (CPU {medians['parse'][1]:.2f}); "
            f"pipe {medians['pipe'][0]:.2f} s (CPU {medians['pipe'][1]:.2f}) = {row['pipe_speed_vs_parse_wall']}x parse's speed; "
            f"file {medians['file'][0]:.2f} s (CPU {medians['file'][1]:.2f}) = {row['file_speed_vs_parse_wall']}x"
        )
    out = BENCH / "out" / "follow_backlog.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
