"""The table of issue 31: logphase against lnav's indexing on the same inputs, in the same run.

    python bench/table.py [--runs 3] [--follow] [--ref TREE] [INPUT ...]

Default inputs (bench/out/, made by bench/generate.py and bench/corpus.py): the 100 MB reference log,
the 21 real logs x9 and realworld 012 x34. For each input, ``--runs`` times, in turn (so that a busy
machine slows every column alike):

* ``hs``: ``logphase parse --json FILE`` as installed (Hyperscan where it is a dependency);
* ``re``: the same with ``LOGPHASE_PREFILTER=re``, as on a platform without Hyperscan's wheel;
* ``lnav``: ``lnav -n -c ';SELECT count(*) FROM all_logs' FILE`` (indexing), when lnav is on PATH;
* ``follow`` (with ``--follow``): ``logphase follow --json - < FILE`` (a pipe, read to its end);
* with ``--ref TREE``, the ``hs`` and ``re`` columns again from another source tree (``ref-hs``,
  ``ref-re``): before and after in one run.

Then a 50-line log (the reference's head): warm (a kept cache) and cold (an empty cache folder
each time). Prints medians of wall seconds (CPU seconds, user + sys, in brackets) and each
logphase column's ratio to lnav's wall time. Peak RSS is the largest of all runs of a column.
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

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
DEFAULT_INPUTS = [OUT / "ref100.log", OUT / "corpus" / "realworld-all.log", OUT / "corpus" / "realworld-012.log"]


def timed(cmd: list[str], env: dict[str, str], stdin: Path | None = None) -> tuple[float, float, int]:
    """(wall s, CPU s of the child, its peak RSS in KB)."""
    start = time.perf_counter()
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as inp:
        proc = subprocess.Popen(cmd, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
        _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def logphase(tree: Path, cache: str, prefilter: str = "") -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(tree), LOGPHASE_CACHE_DIR=cache, LOGPHASE_PREFILTER=prefilter)


def columns(args: argparse.Namespace, cache: Path) -> dict[str, tuple[list[str], dict[str, str], bool]]:
    """name -> (command without the file, environment, whether the file is stdin)."""
    py = [sys.executable, "-m", "logphase"]
    cols: dict[str, tuple[list[str], dict[str, str], bool]] = {}
    trees = [("", ROOT)] + ([("ref-", Path(args.ref).resolve())] if args.ref else [])
    for prefix, tree in trees:
        cols[prefix + "hs"] = ([*py, "parse", "--json"], logphase(tree, str(cache / (prefix + "c"))), False)
        cols[prefix + "re"] = ([*py, "parse", "--json"], logphase(tree, str(cache / (prefix + "c")), "re"), False)
    if shutil.which("lnav"):
        cols["lnav"] = (["lnav", "-n", "-c", ";SELECT count(*) FROM all_logs"], dict(os.environ), False)
    if args.follow:
        cols["follow"] = ([*py, "follow", "--json", "-"], logphase(ROOT, str(cache / "c")), True)
    return cols


def show(name: str, results: dict[str, list[tuple[float, float, int]]]) -> None:
    lnav = statistics.median(w for w, _, _ in results["lnav"]) if "lnav" in results else None
    cells = []
    for col, runs in results.items():
        wall = statistics.median(w for w, _, _ in runs)
        cpu = statistics.median(c for _, c, _ in runs)
        ratio = f" {wall / lnav:.1f}x" if lnav and col != "lnav" else ""
        cells.append(f"{col} {wall:.2f} ({cpu:.2f}){ratio} {max(r for _, _, r in runs) // 1024}MB")
    print(f"{name:28s} " + " | ".join(cells), flush=True)


def small_log(cache: Path) -> Path:
    path = cache / "fifty.log"
    with open(OUT / "ref100.log", "rb") as src:
        path.write_bytes(b"".join(src.readline() for _ in range(50)))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs", nargs="*", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--follow", action="store_true")
    ap.add_argument("--ref", help="another source tree, measured in the same run")
    ap.add_argument("--small-runs", type=int, default=9)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="logphase-table-") as tmp:
        cache = Path(tmp)
        cols = columns(args, cache)
        for path in args.inputs or DEFAULT_INPUTS:
            results: dict[str, list[tuple[float, float, int]]] = {}
            for _ in range(args.runs):
                for col, (cmd, env, piped) in cols.items():
                    run = timed(cmd if piped else [*cmd, str(path)], env, path if piped else None)
                    results.setdefault(col, []).append(run)
            show(f"{path.name} ({path.stat().st_size >> 20} MB)", results)
        small = small_log(cache)
        results = {}
        for _ in range(args.small_runs):
            for col, (cmd, env, _piped) in cols.items():
                if col.endswith("hs"):
                    results.setdefault(col + " warm", []).append(timed([*cmd, str(small)], env))
                    cold = dict(env, LOGPHASE_CACHE_DIR=tempfile.mkdtemp(dir=tmp))
                    results.setdefault(col + " cold", []).append(timed([*cmd, str(small)], cold))
        results["python -c pass"] = [timed([sys.executable, "-c", "pass"], dict(os.environ)) for _ in range(args.small_runs)]
        show("50-line log", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
